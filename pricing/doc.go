// Package pricing is part of spotcheck; see the module documentation.
package pricing
