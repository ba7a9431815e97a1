package faultblob

import (
	"context"
	"net/http"
	"testing"

	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
	"gocloud.dev/blob/fileblob"
)

// harness wraps a fresh fileblob bucket over one shared directory per
// MakeDriver call, so that blobs written by one driver are visible to the
// next, as drivertest requires.
type harness struct{ dir string }

func (h *harness) MakeDriver(ctx context.Context) (driver.Bucket, error) {
	in, err := fileblob.OpenBucket(h.dir, nil)
	if err != nil {
		return nil, err
	}
	return &bucket{b: in, plan: NewPlan()}, nil
}

func (h *harness) MakeDriverForNonexistentBucket(ctx context.Context) (driver.Bucket, error) {
	return nil, nil
}

func (h *harness) HTTPClient() *http.Client         { return nil }
func (h *harness) SupportsCopy() bool               { return true }
func (h *harness) SupportsNonSlashDelimiters() bool { return true }
func (h *harness) Close()                           {}

func TestConformance(t *testing.T) {
	drivertest.RunConformanceTests(t, func(ctx context.Context, t *testing.T) (drivertest.Harness, error) {
		return &harness{dir: t.TempDir()}, nil
	}, nil)
}
