package storage_test

import (
	"context"
	"net/url"
	"testing"

	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/internal/testpeers"
	"github.com/spotcheck/spotcheck/storage"
	"github.com/spotcheck/spotcheck/storage/storagetest"
)

func mustOpen(t *testing.T, u string) *blob.Bucket {
	t.Helper()
	b, err := storage.Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open(%q): %v", u, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func fileURL(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

func TestConformanceMem(t *testing.T) {
	storagetest.RunWithOptions(t, func(t *testing.T) *blob.Bucket {
		return mustOpen(t, "mem://?prefix=run-7/")
	}, &storagetest.Options{ObjectsInMemory: true, LargeSize: 64 << 20})
}

func TestConformanceLocal(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) *blob.Bucket {
		return mustOpen(t, fileURL(t.TempDir())+"?prefix=run-7/")
	})
}

func TestConformanceS3(t *testing.T) {
	srv := testpeers.S3(t)
	srv.SetEnv(t)
	bucket := srv.NewBucket(t)
	storagetest.RunWithOptions(t, func(t *testing.T) *blob.Bucket {
		return mustOpen(t, srv.URL(bucket, "run-7/"))
	}, &storagetest.Options{LargeWrite: &storage.S3StreamingWriterOptions})
}
