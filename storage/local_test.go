package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"golang.org/x/sys/unix"

	"github.com/spotcheck/spotcheck/storage"
)

// TestLocalDiskFull writes to a 1 MiB tmpfs: the write fails with an error
// that names the problem and leaves neither the object nor a temporary file.
// Mounting needs root (CI runs as root).
func TestLocalDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root; CI runs this test as root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatalf("mount a 1 MiB tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	ctx := context.Background()
	b := mustOpen(t, fileURL(dir))
	const key = "steps/00000000000000001200/a1/model"
	for _, ifNotExist := range []bool{false, true} {
		w, err := b.NewWriter(ctx, key, &blob.WriterOptions{IfNotExist: ifNotExist})
		if err != nil {
			t.Fatalf("NewWriter(%q): %v", key, err)
		}
		_, werr := io.Copy(w, io.LimitReader(neverEnding('x'), 4<<20))
		cerr := w.Close()
		if werr == nil {
			werr = cerr
		}
		err = storage.Wrap("write", key, werr)
		if err == nil {
			t.Fatalf("writing 4 MiB to a 1 MiB file system succeeded (ifNotExist=%v)", ifNotExist)
		}
		t.Logf("ifNotExist=%v: %v", ifNotExist, err)
		if !storage.IsNoSpace(err) || !errors.Is(err, storage.ErrNoSpace) || storage.IsTransient(err) {
			t.Errorf("error %v: IsNoSpace=%v, want true and not transient", err, storage.IsNoSpace(err))
		}
		if msg := err.Error(); !strings.Contains(msg, "no space left on device") || !strings.Contains(msg, key) {
			t.Errorf("error %q does not name the problem and the key", msg)
		}
		if ok, err := b.Exists(ctx, key); ok || err != nil {
			t.Errorf("after a failed write, Exists(%q) = %v, %v", key, ok, err)
		}
		var leftovers []string
		_ = walkFiles(dir, func(p string) { leftovers = append(leftovers, p) })
		if len(leftovers) != 0 {
			t.Errorf("files left after a failed write: %q", leftovers)
		}
	}
	// Once there is room again, writes work.
	if err := b.WriteAll(ctx, key, bytes.Repeat([]byte("y"), 1000), nil); err != nil {
		t.Errorf("small write after the failure: %v", err)
	}
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func walkFiles(dir string, fn func(string)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			_ = walkFiles(p, fn)
		} else {
			fn(p)
		}
	}
	return nil
}
