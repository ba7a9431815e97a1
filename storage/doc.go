// Package storage is part of spotcheck; see the module documentation.
package storage
