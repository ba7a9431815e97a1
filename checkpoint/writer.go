package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"sync"
	"time"

	"gocloud.dev/blob"
)

// Writer stages one checkpoint. Nothing is visible to readers until Commit
// succeeds. A Writer is safe for concurrent use; parts may be written
// concurrently.
type Writer struct {
	s       *Store
	step    int64
	attempt string
	start   time.Time

	mu      sync.Mutex
	parts   map[string]*PartInfo // nil value: part still open
	open    int
	keys    []string // objects created (or being created)
	done    bool     // committed or aborted
	tried   bool     // manifest write attempted: parts may be referenced
	written int64
}

// Begin starts staging the checkpoint of step. It fails with ErrStepExists
// if the step is already committed. Call Commit or Abort on the result.
func (s *Store) Begin(ctx context.Context, step int64) (*Writer, error) {
	if step < 0 {
		return nil, fmt.Errorf("%w: negative step %d", ErrInvalid, step)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ok, err := s.b.Exists(ctx, manifestKey(step))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: begin step %d: %w", step, err)
	}
	if ok {
		return nil, fmt.Errorf("%w: step %d", ErrStepExists, step)
	}
	w := &Writer{s: s, step: step, attempt: randomHex(8), start: s.opts.Now(), parts: map[string]*PartInfo{}}
	s.track(step, w.attempt, 1)
	return w, nil
}

// Step is the step being written.
func (w *Writer) Step() int64 { return w.step }

// Create starts the part called name (1-128 bytes of [A-Za-z0-9._-], no
// "..") and returns a writer that streams it to the bucket, hashing as it
// goes. The part is stored once its Close returns nil; ctx governs the
// whole upload (cancel it to abandon the part).
func (w *Writer) Create(ctx context.Context, name string) (io.WriteCloser, error) {
	if err := validPartName(name); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, fmt.Errorf("%w: step %d already committed or aborted", ErrClosed, w.step)
	}
	if _, dup := w.parts[name]; dup {
		return nil, fmt.Errorf("%w: part %q created twice", ErrInvalid, name)
	}
	if len(w.parts) >= MaxParts {
		return nil, fmt.Errorf("%w: more than %d parts", ErrInvalid, MaxParts)
	}
	key := partKey(w.step, w.attempt, name)
	ctx, cancel := context.WithCancel(ctx)
	bw, err := w.s.b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("checkpoint: create %s: %w", key, err)
	}
	w.parts[name] = nil
	w.open++
	w.keys = append(w.keys, key)
	return &partWriter{w: w, name: name, key: key, bw: bw, cancel: cancel, h: sha256.New()}, nil
}

// partWriter hashes what it writes. Large writes are hashed on a helper
// goroutine while the bucket writer consumes the same buffer, so hashing
// overlaps I/O.
type partWriter struct {
	w      *Writer
	name   string
	key    string
	bw     *blob.Writer
	cancel context.CancelFunc
	h      hash.Hash
	n      int64
	err    error
	closed bool
	req    chan []byte
	ack    chan struct{}
}

const (
	overlapMin = 64 << 10
	writeChunk = 8 << 20
)

func (p *partWriter) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.closed {
		return 0, fmt.Errorf("%w: part %q", ErrClosed, p.name)
	}
	if len(b) < overlapMin {
		n, err := p.bw.Write(b)
		p.h.Write(b[:n])
		p.n += int64(n)
		if err != nil {
			p.err = fmt.Errorf("checkpoint: write %s: %w", p.key, err)
		}
		return n, p.err
	}
	if p.req == nil {
		p.req = make(chan []byte)
		p.ack = make(chan struct{})
		go func() {
			for b := range p.req {
				p.h.Write(b)
				p.ack <- struct{}{}
			}
		}()
	}
	// Hash and write in chunks so that a huge Write (bytes.Reader.WriteTo
	// hands over a whole part) reaches the bucket progressively: the
	// local backend starts writeback per chunk, overlapping the disk with
	// hashing and copying.
	total := 0
	for len(b) > 0 {
		c := b[:min(len(b), writeChunk)]
		b = b[len(c):]
		p.req <- c
		n, err := p.bw.Write(c)
		<-p.ack
		if n != len(c) {
			// The hash saw all of c; the part is failed anyway.
			if err == nil {
				err = io.ErrShortWrite
			}
		}
		p.n += int64(n)
		total += n
		if err != nil {
			p.err = fmt.Errorf("checkpoint: write %s: %w", p.key, err)
			return total, p.err
		}
	}
	return total, nil
}

// ReadFrom lets io.Copy stream with large buffers.
func (p *partWriter) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var total int64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			m, werr := p.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (p *partWriter) Close() error {
	if p.closed {
		return fmt.Errorf("%w: part %q closed twice", ErrClosed, p.name)
	}
	p.closed = true
	if p.req != nil {
		close(p.req)
	}
	err := p.err
	if err != nil {
		// Abandon the object: blob writers discard on a cancelled context.
		p.cancel()
		_ = p.bw.Close()
	} else if cerr := p.bw.Close(); cerr != nil {
		err = fmt.Errorf("checkpoint: store %s: %w", p.key, cerr)
	}
	p.cancel()
	w := p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open--
	if err != nil {
		delete(w.parts, p.name)
		return err
	}
	w.parts[p.name] = &PartInfo{Name: p.name, Size: p.n, SHA256: hex.EncodeToString(p.h.Sum(nil))}
	w.written += p.n
	return nil
}

// Commit makes the checkpoint visible: it writes the manifest (part sizes
// and digests, meta, writer identity) with create-if-absent, the single
// commit point. If another writer committed the step first, it returns
// ErrStepExists and removes this attempt's parts. After a commit it
// updates the LATEST hint and applies the retention policy (their failures
// are logged, not returned: the checkpoint is committed).
func (w *Writer) Commit(ctx context.Context, meta Meta) (*Info, error) {
	if err := validateMeta(meta.Metrics, meta.Labels); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if meta.Epoch < 0 {
		return nil, fmt.Errorf("%w: negative epoch %d", ErrInvalid, meta.Epoch)
	}
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: step %d already committed or aborted", ErrClosed, w.step)
	}
	if w.open > 0 {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: step %d: %d parts still open", ErrInvalid, w.step, w.open)
	}
	if len(w.parts) == 0 {
		w.mu.Unlock()
		return nil, fmt.Errorf("%w: step %d: no parts", ErrInvalid, w.step)
	}
	m := &Manifest{
		Format: Format, Step: w.step, Attempt: w.attempt, Epoch: meta.Epoch,
		Created: w.s.opts.Now().UTC(),
		Writer:  WriterID{Host: w.s.host, PID: w.s.pid, ID: w.s.opts.WriterID},
		Metrics: meta.Metrics, Labels: meta.Labels,
	}
	for _, p := range w.parts {
		m.Parts = append(m.Parts, *p)
	}
	sort.Slice(m.Parts, func(i, j int) bool { return m.Parts[i].Name < m.Parts[j].Name })
	w.mu.Unlock()

	data, err := m.encode()
	if err != nil {
		return nil, err
	}
	// Confirm that the bucket holds every part whole before committing to it.
	for _, p := range m.Parts {
		key := partKey(w.step, w.attempt, p.Name)
		a, err := w.s.b.Attributes(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: commit step %d: check %s: %w", w.step, key, err)
		}
		if a.Size != p.Size {
			return nil, fmt.Errorf("%w: step %d part %q: bucket holds %d bytes, %d were written", ErrCorrupt, w.step, p.Name, a.Size, p.Size)
		}
	}
	w.mu.Lock()
	w.tried = true
	w.mu.Unlock()
	if err := w.commitManifest(ctx, m, data); err != nil {
		if errors.Is(err, ErrStepExists) {
			w.Abort(ctx)
		}
		return nil, err
	}
	w.mu.Lock()
	w.done = true
	written := w.written
	w.mu.Unlock()
	w.s.track(w.step, w.attempt, -1)
	w.s.est.record(written, w.s.opts.Now().Sub(w.start))

	if err := w.s.writeHint(ctx, w.step); err != nil {
		w.s.opts.Logger.Warn("checkpoint: LATEST hint not updated", "step", w.step, "err", err)
	}
	if err := w.s.Prune(ctx); err != nil {
		w.s.opts.Logger.Warn("checkpoint: retention failed", "step", w.step, "err", err)
	}
	return infoOf(m), nil
}

func (w *Writer) commitManifest(ctx context.Context, m *Manifest, data []byte) error {
	key := manifestKey(w.step)
	err := w.s.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json", IfNotExist: true})
	if err == nil {
		// Read it back: a bucket that acknowledged a damaged write must not
		// leave a commit that Latest would skip.
		cur, rerr := w.s.readManifest(ctx, w.step)
		switch {
		case rerr == nil && cur.Digest == m.Digest:
			return nil
		case rerr == nil:
			return fmt.Errorf("%w: step %d (committed by writer %s pid %d on %s; the bucket ignored create-if-absent)", ErrStepExists, w.step, cur.Writer.ID, cur.Writer.PID, cur.Writer.Host)
		case errors.Is(rerr, ErrCorrupt):
			// Ours, stored damaged: remove it so the step stays free.
			if derr := w.s.b.Delete(ctx, key); derr != nil {
				return fmt.Errorf("checkpoint: commit step %d: manifest stored damaged (%v) and not removed: %w", w.step, rerr, derr)
			}
			return fmt.Errorf("checkpoint: commit step %d: manifest stored damaged: %w", w.step, rerr)
		case errors.Is(rerr, ErrNotFound):
			return fmt.Errorf("checkpoint: commit step %d: manifest vanished after it was written: %w", w.step, rerr)
		}
		// The read back failed for another reason: trust the acknowledged write.
		w.s.opts.Logger.Warn("checkpoint: could not read back manifest", "step", w.step, "err", rerr)
		return nil
	}
	// The manifest may exist: someone else's (we lost the race) or ours
	// (the acknowledgement was lost). Read it back to tell which.
	cur, rerr := w.s.readManifest(ctx, w.step)
	switch {
	case rerr == nil && cur.Digest == m.Digest:
		w.s.opts.Logger.Warn("checkpoint: manifest write reported an error but is committed", "step", w.step, "err", err)
		return nil
	case rerr == nil:
		return fmt.Errorf("%w: step %d (committed by writer %s pid %d on %s)", ErrStepExists, w.step, cur.Writer.ID, cur.Writer.PID, cur.Writer.Host)
	case errors.Is(rerr, ErrCorrupt):
		return fmt.Errorf("%w: step %d (its manifest is damaged: %v)", ErrStepExists, w.step, rerr)
	}
	return fmt.Errorf("checkpoint: commit step %d: %w", w.step, err)
}

// Abort abandons the checkpoint and deletes the parts written so far
// (unless a commit was attempted and might have succeeded: then the parts
// are left to garbage collection, which keeps what a manifest references).
// Abort after a successful Commit does nothing. It is safe to defer. With
// a cancelled ctx the deletions fail at once and the parts are left to
// garbage collection.
func (w *Writer) Abort(ctx context.Context) {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	w.done = true
	keys := append([]string(nil), w.keys...)
	tried := w.tried
	w.mu.Unlock()
	defer w.s.track(w.step, w.attempt, -1)
	if tried {
		// Delete only if the step is provably not committed by us.
		m, err := w.s.readManifest(ctx, w.step)
		if err == nil && m.Attempt == w.attempt || err != nil && !errors.Is(err, ErrNotFound) {
			return
		}
	}
	for _, k := range keys {
		_ = w.s.b.Delete(ctx, k)
	}
}

// Save writes a whole checkpoint in one call: each part's WriteTo streams
// it, up to Options.Parallelism parts at once, then Commit(meta). On any
// error the attempt is aborted. The context's deadline bounds the save
// (see EstimateSave / Fits to ask beforehand whether it can fit).
func (s *Store) Save(ctx context.Context, step int64, meta Meta, parts map[string]io.WriterTo) (*Info, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: step %d: no parts", ErrInvalid, step)
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		if err := validPartName(n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	sort.Strings(names)
	w, err := s.Begin(ctx, step)
	if err != nil {
		return nil, err
	}
	defer w.Abort(ctx)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, s.opts.Parallelism)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	for _, name := range names {
		select {
		case sem <- struct{}{}:
		case <-pctx.Done():
		}
		if pctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pw, err := w.Create(pctx, name)
			if err != nil {
				fail(err)
				return
			}
			_, err = parts[name].WriteTo(pw)
			if err != nil {
				err = fmt.Errorf("checkpoint: step %d part %q: %w", step, name, err)
				_ = pw.Close()
				fail(err)
				return
			}
			if err := pw.Close(); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: save step %d: %w", step, err)
	}
	return w.Commit(ctx, meta)
}
