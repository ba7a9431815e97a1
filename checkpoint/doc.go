// Package checkpoint is part of spotcheck; see the module documentation.
package checkpoint
