package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/internal/faultblob"
	"github.com/spotcheck/spotcheck/storage"
)

const (
	benchParts    = 4
	benchPartSize = 256 << 20 // 4 x 256 MiB = 1 GiB
)

var benchData []byte

func benchBuf() []byte {
	if benchData == nil {
		benchData = make([]byte, benchPartSize)
		rand.NewChaCha8([32]byte{1}).Read(benchData)
	}
	return benchData
}

func benchPartsMap() map[string]io.WriterTo {
	m := map[string]io.WriterTo{}
	for i := 0; i < benchParts; i++ {
		m[fmt.Sprintf("part%d", i)] = bytes.NewReader(benchBuf())
	}
	return m
}

func openLocal(b *testing.B) (*blob.Bucket, string) {
	dir := b.TempDir()
	bk, err := storage.Open(context.Background(), "file://"+dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bk.Close() })
	return bk, dir
}

// BenchmarkSave1GiB: Save+commit of a 1 GiB checkpoint (4 parts) on the
// durable local backend, digests included. Compare with BenchmarkRawWrite1GiB.
func BenchmarkSave1GiB(b *testing.B) {
	for _, par := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("parallel=%d", par), func(b *testing.B) {
			bk, _ := openLocal(b)
			s, err := checkpoint.New(bk, &checkpoint.Options{Retention: checkpoint.KeepLast(1), Parallelism: par})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			benchBuf() // generate the data outside the timed loop
			b.SetBytes(benchParts * benchPartSize)
			step := int64(0)
			for b.Loop() {
				if _, err := s.Save(ctx, step, checkpoint.Meta{}, benchPartsMap()); err != nil {
					b.Fatal(err)
				}
				step++
			}
		})
	}
}

// BenchmarkRawWrite1GiB: the same bytes written with os.File, each file
// fsynced and the directory fsynced, the previous set removed.
func BenchmarkRawWrite1GiB(b *testing.B) {
	dir := b.TempDir()
	b.SetBytes(benchParts * benchPartSize)
	data := benchBuf()
	step := 0
	for b.Loop() {
		d := filepath.Join(dir, fmt.Sprint(step))
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < benchParts; i++ {
			f, err := os.Create(filepath.Join(d, fmt.Sprintf("part%d", i)))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(data); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		df, _ := os.Open(d)
		df.Sync()
		df.Close()
		if step > 0 {
			os.RemoveAll(filepath.Join(dir, fmt.Sprint(step-1)))
		}
		step++
	}
}

// dropCaches empties the page cache (as root) so that the next read comes
// from disk, as a restore after a preemption does.
func dropCaches(b *testing.B) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0o644); err != nil {
		b.Fatalf("cold-cache benchmark needs root to drop the page cache: %v", err)
	}
}

// BenchmarkRestore1GiB: Latest + Open and read every part (sha256
// verified) on the local backend. Compare with BenchmarkRawRead1GiB.
// The cold variant empties the page cache before every iteration (root).
func BenchmarkRestore1GiB(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(cacheName(cold), func(b *testing.B) { benchRestore(b, cold) })
	}
}

func cacheName(cold bool) string {
	if cold {
		return "cache=cold"
	}
	return "cache=warm"
}

func benchRestore(b *testing.B, cold bool) {
	bk, _ := openLocal(b)
	s, _ := checkpoint.New(bk, nil)
	ctx := context.Background()
	if _, err := s.Save(ctx, 1, checkpoint.Meta{}, benchPartsMap()); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(benchParts * benchPartSize)
	for b.Loop() {
		if cold {
			dropCaches(b)
		}
		ck, err := s.Latest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range ck.Parts {
			r, err := ck.Open(ctx, p.Name)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf); err != nil {
				b.Fatal(err)
			}
			if err := r.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkRawRead1GiB reads the same 1 GiB of part files with os.File
// (cold: page cache emptied before every iteration).
func BenchmarkRawRead1GiB(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(cacheName(cold), func(b *testing.B) { benchRawRead(b, cold) })
	}
}

func benchRawRead(b *testing.B, cold bool) {
	bk, dir := openLocal(b)
	s, _ := checkpoint.New(bk, nil)
	if _, err := s.Save(context.Background(), 1, checkpoint.Meta{}, benchPartsMap()); err != nil {
		b.Fatal(err)
	}
	var files []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(path)[:4] == "part" {
			files = append(files, path)
		}
		return nil
	})
	if len(files) != benchParts {
		b.Fatalf("found part files %q", files)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(benchParts * benchPartSize)
	for b.Loop() {
		if cold {
			dropCaches(b)
		}
		for _, name := range files {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
}

func populate(b *testing.B, n int) (*checkpoint.Store, *faultblob.Plan, *blob.Bucket) {
	plan := faultblob.NewPlan()
	bk := faultblob.Wrap(memblob.OpenBucket(nil), plan)
	b.Cleanup(func() { bk.Close() })
	// KeepLast(n+1) keeps everything; every commit's Prune still scans.
	s, _ := checkpoint.New(bk, &checkpoint.Options{Retention: checkpoint.KeepLast(n + 1)})
	ctx := context.Background()
	for i := 0; i < n; i++ {
		if _, err := s.Save(ctx, int64(i), checkpoint.Meta{}, map[string]io.WriterTo{"model": bytes.NewReader([]byte{byte(i)})}); err != nil {
			b.Fatal(err)
		}
	}
	return s, plan, bk
}

// BenchmarkLatest1000 counts the bucket requests of Latest on a store of
// 1000 checkpoints (requests/op).
func BenchmarkLatest1000(b *testing.B) {
	s, plan, _ := populate(b, 1000)
	ctx := context.Background()
	before := plan.Count(faultblob.OpAny)
	for b.Loop() {
		ck, err := s.Latest(ctx)
		if err != nil || ck.Step != 999 {
			b.Fatal(ck, err)
		}
	}
	b.ReportMetric(float64(plan.Count(faultblob.OpAny)-before)/float64(b.N), "requests/op")
}

// BenchmarkLatest1000ListAll is the list-everything approach: list every
// object under steps/, take the newest step that has a manifest, read it.
func BenchmarkLatest1000ListAll(b *testing.B) {
	_, plan, bk := populate(b, 1000)
	ctx := context.Background()
	before := plan.Count(faultblob.OpAny)
	for b.Loop() {
		it := bk.List(&blob.ListOptions{Prefix: "steps/"})
		var newest string
		for {
			o, err := it.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if filepath.Base(o.Key) == "MANIFEST.json" && (newest == "" || o.Key < newest) { // keys sort newest first
				newest = o.Key
			}
		}
		data, err := bk.ReadAll(ctx, newest)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := checkpoint.DecodeManifest(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(plan.Count(faultblob.OpAny)-before)/float64(b.N), "requests/op")
}

const asyncState = 64 << 20 // 4 x 16 MiB of training state

func asyncParts() map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i < 4; i++ {
		m[fmt.Sprintf("part%d", i)] = bytes.Clone(benchBuf()[:asyncState/4])
	}
	return m
}

// BenchmarkAsyncBlocked is the time the training goroutine is blocked by
// Async.Save (the save itself runs in the background and is waited for
// outside the timer). Compare with BenchmarkMemCopy.
func BenchmarkAsyncBlocked(b *testing.B) {
	bk := memblob.OpenBucket(nil)
	defer bk.Close()
	s, _ := checkpoint.New(bk, nil)
	a := checkpoint.NewAsync(s, nil)
	ctx := context.Background()
	state := asyncParts()
	// Warm up: the first Save allocates Async's buffers; measure the
	// steady state of a training loop.
	if err := a.Save(ctx, 0, checkpoint.Meta{}, state); err != nil {
		b.Fatal(err)
	}
	if err := a.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(asyncState)
	step := int64(1)
	for b.Loop() {
		if err := a.Save(ctx, step, checkpoint.Meta{}, state); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := a.Wait(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		step++
	}
	a.Close()
}

// BenchmarkMemCopy is a plain copy of the same state into buffers.
func BenchmarkMemCopy(b *testing.B) {
	state := asyncParts()
	dst := map[string][]byte{}
	for k, v := range state {
		dst[k] = make([]byte, len(v))
		copy(dst[k], v) // warm up, as BenchmarkAsyncBlocked does
	}
	b.SetBytes(asyncState)
	for b.Loop() {
		for k, v := range state {
			copy(dst[k], v)
		}
	}
}
