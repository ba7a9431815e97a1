package storagetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/internal/heapwatch"
	"github.com/spotcheck/spotcheck/storage"
)

// Options tunes Run for a backend. nil means the defaults.
type Options struct {
	// LargeSize is the size of the streamed object. Default 256 MiB.
	LargeSize int64
	// MemoryBound is the largest growth of the live heap allowed while the
	// large object is written or read. Default 64 MiB.
	MemoryBound int64
	// ObjectsInMemory says the backend keeps object bytes on the Go heap
	// (memblob, which grows its buffer by doubling): three times the
	// object's size is added to MemoryBound for the write.
	ObjectsInMemory bool
	// LargeWrite are the writer options of the large streamed write, for
	// backends whose default buffering exceeds MemoryBound (for S3, a
	// smaller BufferSize and MaxConcurrency). nil means the defaults.
	LargeWrite *blob.WriterOptions
	// Racers is the number of goroutines racing to create one object, and
	// RaceRounds how many times they race. Defaults 8 and 10.
	Racers, RaceRounds int
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.LargeSize <= 0 {
		r.LargeSize = 256 << 20
	}
	if r.MemoryBound <= 0 {
		r.MemoryBound = 64 << 20
	}
	if r.Racers <= 1 {
		r.Racers = 8
	}
	if r.RaceRounds <= 0 {
		r.RaceRounds = 10
	}
	return r
}

// Run runs the conformance suite with the default Options. open is called
// once per subtest and must return a usable bucket (it may be the same
// bucket each time; the subtests use distinct keys); Run does not close it.
func Run(t *testing.T, open func(t *testing.T) *blob.Bucket) {
	RunWithOptions(t, open, nil)
}

// RunWithOptions is Run with Options.
func RunWithOptions(t *testing.T, open func(t *testing.T) *blob.Bucket, opts *Options) {
	o := opts.withDefaults()
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, open(t)) })
	t.Run("Large", func(t *testing.T) { testLarge(t, open(t), o) })
	t.Run("List", func(t *testing.T) { testList(t, open(t)) })
	t.Run("CreateIfAbsent", func(t *testing.T) { testCreateIfAbsent(t, open(t)) })
	t.Run("CreateIfAbsentRace", func(t *testing.T) { testCreateRace(t, open(t), o) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, open(t)) })
	t.Run("Attributes", func(t *testing.T) { testAttributes(t, open(t)) })
	t.Run("CancelWrite", func(t *testing.T) { testCancelWrite(t, open(t)) })
}

func keyFor(t *testing.T, name string) string {
	return fmt.Sprintf("storagetest/%s/%d/%s", t.Name(), time.Now().UnixNano(), name)
}

func testRoundTrip(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	for _, size := range []int{0, 1, 4096, 5<<20 + 3, 17 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			data := randomBytes(uint64(size), size)
			key := keyFor(t, "obj")
			w, err := b.NewWriter(ctx, key, nil)
			if err != nil {
				t.Fatalf("NewWriter(%q): %v", key, err)
			}
			// Uneven chunks exercise buffering in the driver.
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1000003)
				if _, err := w.Write(rest[:n]); err != nil {
					t.Fatalf("Write(%q): %v", key, err)
				}
				rest = rest[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close(%q): %v", key, err)
			}
			got, err := b.ReadAll(ctx, key)
			if err != nil {
				t.Fatalf("ReadAll(%q): %v", key, err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("ReadAll(%q): got %d bytes (sha256 %x), want %d bytes (sha256 %x)",
					key, len(got), sha256.Sum256(got), len(data), sha256.Sum256(data))
			}
			if size > 10 {
				r, err := b.NewRangeReader(ctx, key, 3, 7, nil)
				if err != nil {
					t.Fatalf("NewRangeReader(%q): %v", key, err)
				}
				part, err := io.ReadAll(r)
				_ = r.Close()
				if err != nil {
					t.Fatalf("read range of %q: %v", key, err)
				}
				if diff := cmp.Diff(data[3:10], part); diff != "" {
					t.Errorf("range [3,10) of %q (-want +got):\n%s", key, diff)
				}
			}
		})
	}
}

// stream is a deterministic, seeded byte stream of a given size, cheap to
// generate: a random 1 MiB block from the seed, each copy stamped with its
// block number so that reordered or repeated blocks are detected.
type stream struct {
	block []byte
	size  int64
	off   int64
}

func newStream(seed uint64, size int64) *stream {
	return &stream{block: randomBytes(seed, 1<<20), size: size}
}

func (s *stream) Read(p []byte) (int, error) {
	if s.off >= s.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && s.off < s.size {
		bi := s.off / int64(len(s.block))
		in := int(s.off % int64(len(s.block)))
		m := copy(p[n:], s.block[in:])
		m = int(min(int64(m), s.size-s.off))
		// Stamp the block number over the first 8 bytes of each block.
		if in < 8 {
			var stamp [8]byte
			binary.LittleEndian.PutUint64(stamp[:], uint64(bi))
			for i := in; i < 8 && i-in < m; i++ {
				p[n+i-in] = stamp[i]
			}
		}
		n += m
		s.off += int64(m)
	}
	return n, nil
}

func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	r := rand.NewChaCha8(key)
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

func testLarge(t *testing.T, b *blob.Bucket, o Options) {
	ctx := context.Background()
	key := keyFor(t, "large")
	bound := o.MemoryBound
	if o.ObjectsInMemory {
		bound += 3 * o.LargeSize
	}
	wopts := blob.WriterOptions{}
	if o.LargeWrite != nil {
		wopts = *o.LargeWrite
	}
	wopts.ContentType = "application/octet-stream"

	want := sha256.New()
	stopW := heapwatch.Start()
	w, err := b.NewWriter(ctx, key, &wopts)
	if err != nil {
		t.Fatalf("NewWriter(%q): %v", key, err)
	}
	n, err := io.CopyBuffer(io.MultiWriter(w, want), newStream(42, o.LargeSize), make([]byte, 1<<20))
	if err != nil {
		_ = w.Close()
		t.Fatalf("write %q: %v", key, err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close(%q): %v", key, err)
	}
	grewW, allocW := stopW()
	if n != o.LargeSize {
		t.Fatalf("wrote %d bytes, want %d", n, o.LargeSize)
	}
	t.Logf("write of %d MiB: peak live heap growth %.1f MiB (bound %d MiB), peak HeapAlloc growth incl. garbage %.1f MiB",
		o.LargeSize>>20, float64(grewW)/(1<<20), bound>>20, float64(allocW)/(1<<20))
	if grewW > bound {
		t.Errorf("write of %d bytes grew the live heap by %d bytes, more than the bound %d", o.LargeSize, grewW, bound)
	}

	attrs, err := b.Attributes(ctx, key)
	if err != nil {
		t.Fatalf("Attributes(%q): %v", key, err)
	}
	if attrs.Size != o.LargeSize {
		t.Errorf("Attributes(%q).Size = %d, want %d", key, attrs.Size, o.LargeSize)
	}

	got := sha256.New()
	stopR := heapwatch.Start()
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		t.Fatalf("NewReader(%q): %v", key, err)
	}
	n, err = io.CopyBuffer(got, r, make([]byte, 1<<20))
	_ = r.Close()
	grewR, allocR := stopR()
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	if n != o.LargeSize || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Errorf("read back %d bytes with sha256 %x, want %d bytes with sha256 %x", n, got.Sum(nil), o.LargeSize, want.Sum(nil))
	}
	t.Logf("read: peak live heap growth %.1f MiB, peak HeapAlloc growth %.1f MiB", float64(grewR)/(1<<20), float64(allocR)/(1<<20))
	if grewR > o.MemoryBound {
		t.Errorf("read of %d bytes grew the live heap by %d bytes, more than the bound %d", o.LargeSize, grewR, o.MemoryBound)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Errorf("Delete(%q): %v", key, err)
	}
}

func listAll(t *testing.T, b *blob.Bucket, opts *blob.ListOptions) []string {
	t.Helper()
	var keys []string
	it := b.List(opts)
	for {
		obj, err := it.Next(context.Background())
		if err == io.EOF {
			return keys
		}
		if err != nil {
			t.Fatalf("List(prefix %q, delimiter %q): %v", opts.Prefix, opts.Delimiter, err)
		}
		k := obj.Key[len(opts.Prefix):]
		if obj.IsDir != (len(k) > 0 && opts.Delimiter != "" && k[len(k)-len(opts.Delimiter):] == opts.Delimiter) {
			t.Errorf("List: %q has IsDir=%v", obj.Key, obj.IsDir)
		}
		keys = append(keys, k)
	}
}

func testList(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	base := keyFor(t, "")
	for _, k := range []string{"a", "b/1", "b/2", "c/d/e", "cc", "c-x"} {
		if err := b.WriteAll(ctx, base+k, []byte(k), nil); err != nil {
			t.Fatalf("WriteAll(%q): %v", base+k, err)
		}
	}
	tests := []struct {
		prefix, delim string
		want          []string
	}{
		{"", "", []string{"a", "b/1", "b/2", "c-x", "c/d/e", "cc"}},
		{"", "/", []string{"a", "b/", "c-x", "c/", "cc"}},
		{"b/", "/", []string{"1", "2"}},
		{"c", "/", []string{"-x", "/", "c"}},
		{"c/", "/", []string{"d/"}},
		{"c/", "", []string{"d/e"}},
		{"nothing/", "/", nil},
	}
	for _, tc := range tests {
		got := listAll(t, b, &blob.ListOptions{Prefix: base + tc.prefix, Delimiter: tc.delim})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("List(prefix %q, delimiter %q) (-want +got):\n%s", tc.prefix, tc.delim, diff)
		}
	}
	// Paging gives the same keys as a single listing.
	var paged []string
	tok := blob.FirstPageToken
	for {
		objs, next, err := b.ListPage(ctx, tok, 2, &blob.ListOptions{Prefix: base})
		if err != nil {
			t.Fatalf("ListPage: %v", err)
		}
		for _, o := range objs {
			paged = append(paged, o.Key[len(base):])
		}
		if len(next) == 0 {
			break
		}
		tok = next
	}
	if diff := cmp.Diff(tests[0].want, paged); diff != "" {
		t.Errorf("ListPage with 2 per page (-want +got):\n%s", diff)
	}
}

func testCreateIfAbsent(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	key := keyFor(t, "manifest")
	if err := b.WriteAll(ctx, key, []byte("first"), &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Fatalf("first create of %q: %v", key, err)
	}
	err := b.WriteAll(ctx, key, []byte("second"), &blob.WriterOptions{IfNotExist: true})
	if err == nil {
		t.Fatalf("second create of %q succeeded, want an exists error", key)
	}
	if !storage.IsExists(err) || !errors.Is(storage.Wrap("create", key, err), storage.ErrExists) {
		t.Errorf("second create of %q: %v (code %v), want IsExists", key, err, storage.Code(err))
	}
	if storage.IsTransient(err) {
		t.Errorf("IsTransient(%v) = true, want false", err)
	}
	got, err := b.ReadAll(ctx, key)
	if err != nil || string(got) != "first" {
		t.Errorf("after lost create, %q = %q, %v; want \"first\"", key, got, err)
	}
	// A plain write still replaces.
	if err := b.WriteAll(ctx, key, []byte("third"), nil); err != nil {
		t.Fatalf("overwrite %q: %v", key, err)
	}
	if got, _ := b.ReadAll(ctx, key); string(got) != "third" {
		t.Errorf("after overwrite, %q = %q, want \"third\"", key, got)
	}
}

func testCreateRace(t *testing.T, b *blob.Bucket, o Options) {
	ctx := context.Background()
	for round := range o.RaceRounds {
		key := keyFor(t, fmt.Sprint(round))
		payload := func(i int) []byte {
			return bytes.Repeat([]byte(fmt.Sprintf("racer %d round %d;", i, round)), 1000)
		}
		errs := make([]error, o.Racers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range o.Racers {
			wg.Go(func() {
				<-start
				errs[i] = storage.Retry(ctx, &storage.RetryOptions{Initial: time.Millisecond}, func(ctx context.Context) error {
					return b.WriteAll(ctx, key, payload(i), &blob.WriterOptions{IfNotExist: true})
				})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: racers %d and %d both created %q", round, winner, i, key)
			case err == nil:
				winner = i
			case !storage.IsExists(err):
				t.Errorf("round %d: racer %d lost with %v (code %v), want an exists error", round, i, err, storage.Code(err))
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no racer created %q: %v", round, key, errs)
		}
		got, err := b.ReadAll(ctx, key)
		if err != nil {
			t.Fatalf("round %d: read %q: %v", round, key, err)
		}
		if !bytes.Equal(got, payload(winner)) {
			t.Fatalf("round %d: %q holds %.40q..., want the winner's (racer %d) bytes", round, key, got, winner)
		}
	}
}

func testDelete(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	key := keyFor(t, "gone")
	if err := b.WriteAll(ctx, key, []byte("x"), nil); err != nil {
		t.Fatalf("WriteAll(%q): %v", key, err)
	}
	if err := b.Delete(ctx, key); err != nil {
		t.Fatalf("Delete(%q): %v", key, err)
	}
	if _, err := b.ReadAll(ctx, key); !storage.IsNotFound(err) || !errors.Is(storage.Wrap("read", key, err), storage.ErrNotFound) {
		t.Errorf("ReadAll after Delete(%q) = %v, want not found", key, err)
	}
	if ok, err := b.Exists(ctx, key); ok || err != nil {
		t.Errorf("Exists after Delete(%q) = %v, %v; want false, nil", key, ok, err)
	}
	if _, err := b.Attributes(ctx, key); !storage.IsNotFound(err) {
		t.Errorf("Attributes after Delete(%q) = %v, want not found", key, err)
	}
	if err := b.Delete(ctx, key); !storage.IsNotFound(err) {
		t.Errorf("second Delete(%q) = %v, want not found", key, err)
	}
	if keys := listAll(t, b, &blob.ListOptions{Prefix: key}); len(keys) != 0 {
		t.Errorf("List after Delete(%q) = %q, want nothing", key, keys)
	}
}

func testAttributes(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	key := keyFor(t, "attrs")
	data := []byte(`{"step": 1200}`)
	before := time.Now().Add(-time.Minute)
	opts := &blob.WriterOptions{
		ContentType: "application/json",
		Metadata:    map[string]string{"step": "1200", "writer": "host-a/1234"},
	}
	if err := b.WriteAll(ctx, key, data, opts); err != nil {
		t.Fatalf("WriteAll(%q): %v", key, err)
	}
	a, err := b.Attributes(ctx, key)
	if err != nil {
		t.Fatalf("Attributes(%q): %v", key, err)
	}
	if a.Size != int64(len(data)) {
		t.Errorf("Size = %d, want %d", a.Size, len(data))
	}
	if a.ContentType != opts.ContentType {
		t.Errorf("ContentType = %q, want %q", a.ContentType, opts.ContentType)
	}
	if diff := cmp.Diff(opts.Metadata, a.Metadata); diff != "" {
		t.Errorf("Metadata (-want +got):\n%s", diff)
	}
	sum := md5.Sum(data)
	if a.MD5 != nil && !bytes.Equal(a.MD5, sum[:]) {
		t.Errorf("MD5 = %x, want %x or nil", a.MD5, sum)
	}
	if a.ModTime.Before(before) || a.ModTime.After(time.Now().Add(time.Minute)) {
		t.Errorf("ModTime = %v, want about now (%v)", a.ModTime, time.Now())
	}
	if a.ETag == "" {
		t.Errorf("ETag is empty")
	}
	// A new version has a new ETag and new attributes.
	if err := b.WriteAll(ctx, key, []byte(`{"step": 1300}`), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		t.Fatalf("rewrite %q: %v", key, err)
	}
	a2, err := b.Attributes(ctx, key)
	if err != nil {
		t.Fatalf("Attributes(%q): %v", key, err)
	}
	if a2.ETag == a.ETag {
		t.Errorf("ETag unchanged (%s) after rewriting %q with new content", a.ETag, key)
	}
	if a2.ContentType != "text/plain" || len(a2.Metadata) != 0 {
		t.Errorf("after rewrite: ContentType %q, Metadata %v; want text/plain and none", a2.ContentType, a2.Metadata)
	}
	// The reader reports the same size and type.
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		t.Fatalf("NewReader(%q): %v", key, err)
	}
	defer func() { _ = r.Close() }()
	if r.Size() != a2.Size || r.ContentType() != "text/plain" {
		t.Errorf("Reader: size %d type %q; want %d and text/plain", r.Size(), r.ContentType(), a2.Size)
	}
}

func testCancelWrite(t *testing.T, b *blob.Bucket) {
	for _, size := range []int{1 << 20, 24 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := keyFor(t, "")
			key := dir + "cancelled"
			ctx, cancel := context.WithCancel(context.Background())
			w, err := b.NewWriter(ctx, key, nil)
			if err != nil {
				t.Fatalf("NewWriter(%q): %v", key, err)
			}
			chunk := randomBytes(7, 1<<20)
			for range size >> 20 {
				if _, err := w.Write(chunk); err != nil {
					t.Fatalf("Write(%q) before cancel: %v", key, err)
				}
			}
			cancel()
			_, _ = w.Write(chunk) // may or may not fail
			if err := w.Close(); err == nil {
				t.Fatalf("Close(%q) after cancel succeeded, want an error", key)
			}
			ok, err := b.Exists(context.Background(), key)
			if err != nil || ok {
				t.Errorf("Exists(%q) after a cancelled write = %v, %v; want false, nil", key, ok, err)
			}
			if keys := listAll(t, b, &blob.ListOptions{Prefix: dir}); len(keys) != 0 {
				t.Errorf("List(%q) after a cancelled write = %q, want nothing", dir, keys)
			}
		})
	}
}
