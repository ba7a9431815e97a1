package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/internal/heapwatch"
	"github.com/spotcheck/spotcheck/internal/testpeers"
	"github.com/spotcheck/spotcheck/storage"
)

// The benchmarks compare the storage path with a baseline in the same
// iteration and report both throughputs, their ratio (storage/baseline,
// target >= 0.9) and the peak heap growth of the storage write.
// They move 1 GiB per operation; run them with
//
//	go test -run '^$' -bench . -benchtime 3x ./storage/
//
// SPOTCHECK_BENCH_S3_QUERY is appended to the S3 bucket URL, e.g.
// "&request_checksum_calculation=when_required".

const benchSize = 1 << 30

// chunkSource is a cheap io.ReadSeeker of size bytes: a random 1 MiB block
// repeated.
type chunkSource struct {
	block []byte
	size  int64
	off   int64
}

func newChunkSource(size int64) *chunkSource {
	blk := make([]byte, 1<<20)
	for i := range blk {
		blk[i] = byte(i*7919 + i>>8)
	}
	return &chunkSource{block: blk, size: size}
}

func (c *chunkSource) Read(p []byte) (int, error) {
	if c.off >= c.size {
		return 0, io.EOF
	}
	in := int(c.off % int64(len(c.block)))
	n := copy(p, c.block[in:])
	n = int(min(int64(n), c.size-c.off))
	c.off += int64(n)
	return n, nil
}

func (c *chunkSource) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		c.off = off
	case io.SeekCurrent:
		c.off += off
	case io.SeekEnd:
		c.off = c.size + off
	}
	return c.off, nil
}

// WriteTo writes without an intermediate copy, like a caller streaming
// tensors from memory.
func (c *chunkSource) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for c.off < c.size {
		in := int(c.off % int64(len(c.block)))
		n := int(min(int64(len(c.block)-in), c.size-c.off))
		m, err := w.Write(c.block[in : in+n])
		total += int64(m)
		c.off += int64(m)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

type comparison struct {
	base, subj time.Duration
	peak, live int64
}

func (c *comparison) measure() func() {
	stop := heapwatch.Start()
	return func() {
		l, p := stop()
		c.peak, c.live = max(c.peak, p), max(c.live, l)
	}
}

func (c *comparison) report(b *testing.B, n int) {
	mbps := func(d time.Duration) float64 { return float64(n) * benchSize / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(c.base), "baseline-MiB/s")
	b.ReportMetric(mbps(c.subj), "storage-MiB/s")
	b.ReportMetric(c.base.Seconds()/c.subj.Seconds(), "ratio")
	if c.peak > 0 {
		b.ReportMetric(float64(c.peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(c.live)/(1<<20), "peak-live-MiB")
	}
}

// streamTo writes benchSize bytes of the benchmark's data to key as one
// stream of unknown length, as a checkpoint part is written.
func streamTo(ctx context.Context, bkt *blob.Bucket, key string, opts *blob.WriterOptions) error {
	w, err := bkt.NewWriter(ctx, key, opts)
	if err != nil {
		return err
	}
	if _, err := newChunkSource(benchSize).WriteTo(w); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// compareEach times base, then subj (with its memory measured), once per
// iteration, and reports the sums.
func compareEach(b *testing.B, base, subj func() error) {
	var c comparison
	n := 0
	for b.Loop() {
		d1, err := timeIt(base)
		if err != nil {
			b.Fatal(err)
		}
		d2, err := timeIt(func() error {
			defer c.measure()()
			return subj()
		})
		if err != nil {
			b.Fatal(err)
		}
		c.base += d1
		c.subj += d2
		n++
	}
	c.report(b, n)
}

func timeIt(f func() error) (time.Duration, error) {
	t0 := time.Now()
	err := f()
	return time.Since(t0), err
}

func BenchmarkLocal(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	bkt, err := storage.Open(ctx, fileURL(dir))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = bkt.Close() }()
	plain := filepath.Join(dir, "plain.bin")
	const key = "steps/00000000000000001200/a1/model"
	writePlain := func() error {
		f, err := os.Create(plain)
		if err != nil {
			return err
		}
		if _, err := newChunkSource(benchSize).WriteTo(f); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		return f.Close()
	}
	writeStorage := func(c *comparison) error {
		defer c.measure()()
		return streamTo(ctx, bkt, key, nil)
	}
	b.Run("Write1GiB", func(b *testing.B) {
		var c comparison
		n := 0
		for b.Loop() {
			_ = os.Remove(plain)
			_ = bkt.Delete(ctx, key)
			// Alternate the order: the second writer of a pair may be
			// throttled by the first one's writeback.
			var d1, d2 time.Duration
			var err1, err2 error
			if n%2 == 0 {
				d1, err1 = timeIt(writePlain)
				d2, err2 = timeIt(func() error { return writeStorage(&c) })
			} else {
				d2, err2 = timeIt(func() error { return writeStorage(&c) })
				d1, err1 = timeIt(writePlain)
			}
			if err1 != nil || err2 != nil {
				b.Fatal(err1, err2)
			}
			b.Logf("iteration %d: plain %v, storage %v", n, d1, d2)
			c.base += d1
			c.subj += d2
			n++
		}
		c.report(b, n)
	})
	b.Run("Read1GiB", func(b *testing.B) {
		if _, err := os.Stat(plain); err != nil {
			if err := errors.Join(writePlain(), writeStorage(new(comparison))); err != nil {
				b.Fatal(err)
			}
		}
		buf := make([]byte, 1<<20)
		var c comparison
		n := 0
		for b.Loop() {
			readPlain := func() error {
				f, err := os.Open(plain)
				if err != nil {
					return err
				}
				defer func() { _ = f.Close() }()
				_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
				return err
			}
			readStorage := func() error {
				r, err := bkt.NewReader(ctx, key, nil)
				if err != nil {
					return err
				}
				defer func() { _ = r.Close() }()
				_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
				return err
			}
			var d1, d2 time.Duration
			var err1, err2 error
			if n%2 == 0 {
				d1, err1 = timeIt(readPlain)
				d2, err2 = timeIt(readStorage)
			} else {
				d2, err2 = timeIt(readStorage)
				d1, err1 = timeIt(readPlain)
			}
			if err1 != nil || err2 != nil {
				b.Fatal(err1, err2)
			}
			c.base += d1
			c.subj += d2
			n++
		}
		c.report(b, n)
	})
}

func BenchmarkS3(b *testing.B) {
	srv := testpeers.S3(b)
	srv.SetEnv(b)
	name := srv.NewBucket(b)
	ctx := context.Background()
	bkt, err := storage.Open(ctx, srv.URL(name, "")+os.Getenv("SPOTCHECK_BENCH_S3_QUERY"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = bkt.Close() }()
	cli := srv.Client(b)
	putBare := func() error {
		_, err := cli.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(name),
			Key:           aws.String("bare.bin"),
			Body:          newChunkSource(benchSize),
			ContentLength: aws.Int64(benchSize),
		})
		return err
	}
	variants := []struct {
		name string
		opts blob.WriterOptions
	}{
		{"Default", blob.WriterOptions{}},
		{"S3StreamingWriterOptions", storage.S3StreamingWriterOptions},
		{"Parts16MiBx4", blob.WriterOptions{BufferSize: 16 << 20, MaxConcurrency: 4}},
		{"Parts5MiBx2", blob.WriterOptions{BufferSize: 5 << 20, MaxConcurrency: 2}},
	}
	for _, v := range variants {
		b.Run("Write1GiB/"+v.name, func(b *testing.B) {
			opts := v.opts
			compareEach(b, putBare, func() error { return streamTo(ctx, bkt, "model", &opts) })
		})
	}
	// The same protocol as a streamed write (multipart upload of a stream
	// of unknown length, 5 MiB parts, 4 at a time) through the bare SDK's
	// transfer manager: isolates what gocloud and storage add.
	b.Run("Write1GiB/VsBareMultipart", func(b *testing.B) {
		tm := transfermanager.New(cli, func(o *transfermanager.Options) {
			o.PartSizeBytes = int64(storage.S3StreamingWriterOptions.BufferSize)
			o.Concurrency = storage.S3StreamingWriterOptions.MaxConcurrency
		})
		bare := func() error {
			_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
				Bucket: aws.String(name),
				Key:    aws.String("bare-multipart.bin"),
				Body:   struct{ io.Reader }{newChunkSource(benchSize)},
			})
			return err
		}
		opts := storage.S3StreamingWriterOptions
		compareEach(b, bare, func() error { return streamTo(ctx, bkt, "model", &opts) })
	})
	b.Run("Read1GiB", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		var c comparison
		n := 0
		for b.Loop() {
			d1, err := timeIt(func() error {
				out, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(name), Key: aws.String("bare.bin")})
				if err != nil {
					return err
				}
				defer func() { _ = out.Body.Close() }()
				_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{out.Body}, buf)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			d2, err := timeIt(func() error {
				r, err := bkt.NewReader(ctx, "model", nil)
				if err != nil {
					return err
				}
				defer func() { _ = r.Close() }()
				got, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{r}, buf)
				if err == nil && got != benchSize {
					err = fmt.Errorf("read %d bytes, want %d", got, benchSize)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			c.base += d1
			c.subj += d2
			n++
		}
		c.report(b, n)
	})
}
