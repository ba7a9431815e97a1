package localblob

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
)

type harness struct{ dir string }

func (h *harness) MakeDriver(ctx context.Context) (driver.Bucket, error) {
	return Open(h.dir, nil)
}

func (h *harness) MakeDriverForNonexistentBucket(ctx context.Context) (driver.Bucket, error) {
	return nil, nil // Open fails for a missing directory; tested in TestOpenMissingDir.
}

func (h *harness) HTTPClient() *http.Client         { return nil }
func (h *harness) SupportsCopy() bool               { return true }
func (h *harness) SupportsNonSlashDelimiters() bool { return true }
func (h *harness) Close()                           {}

type verifyAs struct{}

func (verifyAs) Name() string { return "verify As types for localblob" }
func (verifyAs) BucketCheck(b *blob.Bucket) error {
	var dir string
	if !b.As(&dir) {
		return errors.New("Bucket.As(*string) failed")
	}
	return nil
}
func (verifyAs) ErrorCheck(b *blob.Bucket, err error) error {
	var pe *os.PathError
	if !b.ErrorAs(err, &pe) {
		return errors.New("ErrorAs(*os.PathError) failed")
	}
	return nil
}
func (verifyAs) BeforeRead(as func(any) bool) error {
	var f *os.File
	if !as(&f) {
		return errors.New("BeforeRead As(**os.File) failed")
	}
	return nil
}
func (verifyAs) BeforeWrite(as func(any) bool) error {
	var f *os.File
	if !as(&f) {
		return errors.New("BeforeWrite As(**os.File) failed")
	}
	return nil
}
func (verifyAs) BeforeCopy(as func(any) bool) error {
	var f *os.File
	if !as(&f) {
		return errors.New("BeforeCopy As(**os.File) failed")
	}
	return nil
}
func (verifyAs) BeforeDelete(as func(any) bool) error { return nil }
func (verifyAs) BeforeList(as func(any) bool) error   { return nil }
func (verifyAs) BeforeSign(as func(any) bool) error   { return nil }
func (verifyAs) AttributesCheck(attrs *blob.Attributes) error {
	var fi os.FileInfo
	if !attrs.As(&fi) {
		return errors.New("Attributes.As(*os.FileInfo) failed")
	}
	return nil
}
func (verifyAs) ReaderCheck(r *blob.Reader) error {
	var f *os.File
	if !r.As(&f) {
		return errors.New("Reader.As(**os.File) failed")
	}
	return nil
}
func (verifyAs) ListObjectCheck(o *blob.ListObject) error {
	if o.IsDir {
		return nil
	}
	var fi os.FileInfo
	if !o.As(&fi) {
		return errors.New("ListObject.As(*os.FileInfo) failed")
	}
	return nil
}

func TestConformance(t *testing.T) {
	drivertest.RunConformanceTests(t, func(ctx context.Context, t *testing.T) (drivertest.Harness, error) {
		return &harness{dir: t.TempDir()}, nil
	}, []drivertest.AsTest{verifyAs{}})
}

func TestOpenMissingDir(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open(missing dir) = %v, want ErrNotExist", err)
	}
}

// TestNoTempFilesLeft checks the disk itself, not only listings: a cancelled
// write, a lost create-if-absent and a successful write leave exactly the
// published objects.
func TestNoTempFilesLeft(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBucket(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	ctx := context.Background()
	if err := b.WriteAll(ctx, "a/MANIFEST", []byte("one"), &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "a/MANIFEST", []byte("two"), &blob.WriterOptions{IfNotExist: true}); err == nil {
		t.Fatal("second create succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	w, err := b.NewWriter(cctx, "a/model", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Close(); err == nil {
		t.Fatal("Close after cancel succeeded")
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/MANIFEST"}, files); diff != "" {
		t.Errorf("files on disk (-want +got):\n%s", diff)
	}
}
