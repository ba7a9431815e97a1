// Package storagetest is the conformance suite every spotcheck bucket passes.
package storagetest
