// Package interrupt is part of spotcheck; see the module documentation.
package interrupt
