package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"gocloud.dev/gcerrors"
)

// Open returns a reader of the named part. The reader hashes what it
// returns: when the part ends early, runs long, or its digest does not
// match the manifest, the final Read returns an error wrapping ErrCorrupt
// instead of io.EOF, and so does Close. A part whose stored size differs
// from the manifest fails at Open.
func (c *Checkpoint) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	p, ok := c.Part(name)
	if !ok {
		return nil, fmt.Errorf("%w: step %d has no part %q", ErrNotFound, c.Step, name)
	}
	key := partKey(c.Step, c.Attempt, name)
	r, err := c.s.b.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("%w: step %d part %q is missing (%s)", ErrCorrupt, c.Step, name, key)
		}
		return nil, fmt.Errorf("checkpoint: open %s: %w", key, err)
	}
	if r.Size() != p.Size {
		r.Close()
		return nil, fmt.Errorf("%w: step %d part %q is %d bytes, committed %d", ErrCorrupt, c.Step, name, r.Size(), p.Size)
	}
	pr := &partReader{r: r, p: p, step: c.Step, h: sha256.New()}
	if p.Size >= pipelineMin {
		pr.bufs[0] = make([]byte, hashChunk)
		pr.bufs[1] = make([]byte, hashChunk)
	}
	return pr, nil
}

// Parts of at least pipelineMin bytes are hashed on a helper goroutine,
// overlapping the hash with the next reads: what Read returns is copied
// into one of two hashChunk buffers, and each full buffer is hashed while
// the other fills. Smaller parts are hashed on the reading goroutine.
const (
	hashChunk   = 1 << 20
	pipelineMin = 1 << 20
)

type partReader struct {
	r    io.ReadCloser
	p    PartInfo
	step int64
	h    hash.Hash // owned by the helper goroutine while hashing != nil
	n    int64
	err  error // sticky verdict once the end was reached

	bufs    [2][]byte     // nil unless pipelined
	cur     int           // index of the buffer being filled
	fill    int           // bytes of bufs[cur] filled
	hashing chan struct{} // closed when the hash of bufs[1-cur] is done
}

func (r *partReader) Read(b []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.r.Read(b)
	r.n += int64(n)
	if r.n > r.p.Size {
		r.wait()
		r.err = fmt.Errorf("%w: step %d part %q is longer than its committed %d bytes", ErrCorrupt, r.step, r.p.Name, r.p.Size)
		return n, r.err
	}
	r.absorb(b[:n])
	if err == io.EOF {
		r.err = r.verdict()
		return n, r.err
	}
	if err != nil {
		return n, err
	}
	return n, nil
}

// absorb feeds b to the hash: directly, or through the buffers.
func (r *partReader) absorb(b []byte) {
	if r.bufs[0] == nil {
		r.h.Write(b)
		return
	}
	for len(b) > 0 {
		c := copy(r.bufs[r.cur][r.fill:], b)
		r.fill += c
		b = b[c:]
		if r.fill == len(r.bufs[r.cur]) {
			r.wait()
			full, done, h := r.bufs[r.cur], make(chan struct{}), r.h
			go func() {
				h.Write(full)
				close(done)
			}()
			r.hashing = done
			r.cur, r.fill = 1-r.cur, 0
		}
	}
}

// wait waits for the hash in flight, if any.
func (r *partReader) wait() {
	if r.hashing != nil {
		<-r.hashing
		r.hashing = nil
	}
}

func (r *partReader) verdict() error {
	r.wait()
	if r.bufs[0] != nil {
		r.h.Write(r.bufs[r.cur][:r.fill])
		r.fill = 0
	}
	if r.n != r.p.Size {
		return fmt.Errorf("%w: step %d part %q ended after %d of %d bytes", ErrCorrupt, r.step, r.p.Name, r.n, r.p.Size)
	}
	if got := hex.EncodeToString(r.h.Sum(nil)); got != r.p.SHA256 {
		return fmt.Errorf("%w: step %d part %q has sha256 %s, committed %s", ErrCorrupt, r.step, r.p.Name, got, r.p.SHA256)
	}
	return io.EOF
}

// Close closes the reader. It returns the ErrCorrupt verdict if the end
// of the part was reached and it did not verify.
func (r *partReader) Close() error {
	r.wait()
	cerr := r.r.Close()
	if r.err != nil && r.err != io.EOF {
		return r.err
	}
	return cerr
}

// ReadAll reads and verifies a whole part.
func (c *Checkpoint) ReadAll(ctx context.Context, name string) ([]byte, error) {
	r, err := c.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	p, _ := c.Part(name)
	buf := make([]byte, 0, p.Size)
	buf, err = readAllInto(r, buf)
	cerr := r.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return buf, nil
}

func readAllInto(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
