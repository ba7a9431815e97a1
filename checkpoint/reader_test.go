package checkpoint_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/storage"
)

// readChunks reads r with reads of at most size bytes, failing the test
// if io.EOF comes with an error other than the final verdict.
func readChunks(r io.Reader, size int) ([]byte, error) {
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// TestPartReaderDamage flips one byte of a stored part (same size, so
// Open succeeds) and reads it back with various read sizes: the damage
// must be reported as ErrCorrupt by the final Read and by Close, never as
// io.EOF. Undamaged parts must read back whole with io.EOF. The sizes
// cover parts hashed on the reading goroutine and pipelined parts, ends
// on and off the 1 MiB hash buffer boundary.
func TestPartReaderDamage(t *testing.T) {
	ctx := context.Background()
	sizes := []int{1<<20 - 1, 1 << 20, 2 << 20, 2<<20 + 12345, 3<<20 + 1}
	readSizes := []int{1000, 4096, 1 << 20, 3 << 20}
	for _, size := range sizes {
		data := make([]byte, size)
		rand.NewChaCha8([32]byte{byte(size)}).Read(data)
		bk := memblob.OpenBucket(nil)
		s, err := checkpoint.New(bk, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Save(ctx, 1, checkpoint.Meta{}, map[string]io.WriterTo{"p": bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		var key string
		it := bk.List(&blob.ListOptions{Prefix: "steps/"})
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(o.Key, "/p") {
				key = o.Key
			}
		}
		if key == "" {
			t.Fatalf("size %d: part key not found", size)
		}
		for _, pos := range []int{-1, 0, size / 2, size - 1} {
			stored := bytes.Clone(data)
			if pos >= 0 {
				stored[pos] ^= 0x40
			}
			if err := bk.WriteAll(ctx, key, stored, nil); err != nil {
				t.Fatal(err)
			}
			ck, err := s.At(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, rs := range readSizes {
				name := fmt.Sprintf("size=%d/flip=%d/read=%d", size, pos, rs)
				r, err := ck.Open(ctx, "p")
				if err != nil {
					t.Fatalf("%s: Open: %v", name, err)
				}
				got, rerr := readChunks(r, rs)
				cerr := r.Close()
				if !bytes.Equal(got, stored) {
					t.Errorf("%s: read %d bytes, not the %d stored", name, len(got), len(stored))
				}
				if pos < 0 {
					if rerr != io.EOF || cerr != nil {
						t.Errorf("%s: final Read = %v, Close = %v; want io.EOF, nil", name, rerr, cerr)
					}
					continue
				}
				if !errors.Is(rerr, checkpoint.ErrCorrupt) || !errors.Is(cerr, checkpoint.ErrCorrupt) {
					t.Errorf("%s: final Read = %v, Close = %v; want ErrCorrupt from both", name, rerr, cerr)
				}
			}
			if _, err := ck.ReadAll(ctx, "p"); (pos >= 0) != errors.Is(err, checkpoint.ErrCorrupt) || pos < 0 && err != nil {
				t.Errorf("size=%d/flip=%d: ReadAll = %v", size, pos, err)
			}
		}
		bk.Close()
	}
}

// TestPartReaderCloseEarly closes pipelined readers part-way (with a hash
// in flight); run with -race.
func TestPartReaderCloseEarly(t *testing.T) {
	ctx := context.Background()
	data := make([]byte, 5<<20)
	rand.NewChaCha8([32]byte{7}).Read(data)
	bk := memblob.OpenBucket(nil)
	defer bk.Close()
	s, _ := checkpoint.New(bk, nil)
	if _, err := s.Save(ctx, 1, checkpoint.Meta{}, map[string]io.WriterTo{"p": bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	ck, err := s.At(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, 1, 1 << 20, 1<<20 + 1, 3 << 20} {
		r, err := ck.Open(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.LimitReader(r, n))
		if err != nil || !bytes.Equal(got, data[:n]) {
			t.Errorf("first %d bytes: err %v, equal %v", n, err, bytes.Equal(got, data[:n]))
		}
		if err := r.Close(); err != nil {
			t.Errorf("Close after %d bytes: %v", n, err)
		}
	}
}

// TestLargeWriteDigest writes parts in one big Write (split internally
// into hashed chunks) and checks the committed digest and size against
// an independent sha256, on the durable local backend.
func TestLargeWriteDigest(t *testing.T) {
	ctx := context.Background()
	bk, err := storage.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	s, err := checkpoint.New(bk, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{64<<10 - 1, 64 << 10, 8 << 20, 8<<20 + 1, 17<<20 + 5}
	data := make([]byte, sizes[len(sizes)-1])
	rand.NewChaCha8([32]byte{9}).Read(data)
	w, err := s.Begin(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		pw, err := w.Create(ctx, fmt.Sprint("p", n))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := pw.Write(data[:n]); m != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Commit(ctx, checkpoint.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	ck, err := s.At(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		name := fmt.Sprint("p", n)
		p, ok := info.Part(name)
		sum := sha256.Sum256(data[:n])
		if !ok || p.Size != int64(n) || p.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("part %s = %+v, want size %d sha256 %x", name, p, n, sum)
		}
		got, err := ck.ReadAll(ctx, name)
		if err != nil || !bytes.Equal(got, data[:n]) {
			t.Errorf("ReadAll(%s): %d bytes, %v", name, len(got), err)
		}
	}
}
