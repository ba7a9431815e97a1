package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Async saves checkpoints in the background. Save copies the state into
// buffers owned by Async (the only time the training goroutine is
// blocked, apart from back-pressure) and returns; one save is in flight at
// a time. An error of a background save is returned by the next Save, by
// Wait and by Close.
type Async struct {
	s *Store

	mu     sync.Mutex
	idle   *sync.Cond
	busy   bool
	err    error
	closed bool
	bufs   map[string][]byte // reused between saves
	last   time.Duration     // duration of the last background save
}

// AsyncOptions configure an Async. None yet; nil is fine.
type AsyncOptions struct{}

// NewAsync returns an Async that saves into s.
func NewAsync(s *Store, _ *AsyncOptions) *Async {
	a := &Async{s: s, bufs: map[string][]byte{}}
	a.idle = sync.NewCond(&a.mu)
	return a
}

// waitIdle blocks until no save is in flight or ctx is done. a.mu held.
func (a *Async) waitIdle(ctx context.Context) error {
	if !a.busy {
		return nil
	}
	stop := context.AfterFunc(ctx, func() {
		a.mu.Lock()
		a.idle.Broadcast()
		a.mu.Unlock()
	})
	defer stop()
	for a.busy {
		if err := ctx.Err(); err != nil {
			return err
		}
		a.idle.Wait()
	}
	return nil
}

// Save snapshots parts (copies them; the caller may modify its slices as
// soon as Save returns) and saves them as step in the background with ctx.
// If the previous save is still running, Save waits for it first
// (back-pressure) or until ctx is done. If the previous save failed, Save
// returns that error (wrapped) and does not start a new one; call it again
// to retry.
func (a *Async) Save(ctx context.Context, step int64, meta Meta, parts map[string][]byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return fmt.Errorf("%w: Async", ErrClosed)
	}
	if err := a.waitIdle(ctx); err != nil {
		return err
	}
	if err := a.err; err != nil {
		a.err = nil
		return fmt.Errorf("checkpoint: previous async save failed: %w", err)
	}
	if len(parts) == 0 {
		return fmt.Errorf("%w: step %d: no parts", ErrInvalid, step)
	}
	for name := range a.bufs {
		if _, ok := parts[name]; !ok {
			delete(a.bufs, name)
		}
	}
	snap := make(map[string]io.WriterTo, len(parts))
	for name, p := range parts {
		b := a.bufs[name]
		if cap(b) < len(p) {
			b = make([]byte, len(p))
		}
		b = b[:len(p)]
		copy(b, p)
		a.bufs[name] = b
		snap[name] = bytes.NewReader(b)
	}
	meta = cloneMeta(meta)
	a.busy = true
	go func() {
		start := time.Now()
		_, err := a.s.Save(ctx, step, meta, snap)
		a.mu.Lock()
		a.busy = false
		a.last = time.Since(start)
		if err != nil {
			a.err = errors.Join(a.err, err)
		}
		a.idle.Broadcast()
		a.mu.Unlock()
	}()
	return nil
}

// Busy reports whether a save is in flight.
func (a *Async) Busy() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.busy
}

// LastDuration is how long the last completed background save took.
func (a *Async) LastDuration() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// Wait waits for the save in flight (or until ctx is done) and returns
// (and clears) the error of the last failed save.
func (a *Async) Wait(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.waitIdle(ctx); err != nil {
		return err
	}
	err := a.err
	a.err = nil
	return err
}

// Close waits for the save in flight and returns its error. Later Saves
// fail with ErrClosed.
func (a *Async) Close() error {
	err := a.Wait(context.Background())
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	return err
}

func cloneMeta(m Meta) Meta {
	out := Meta{Epoch: m.Epoch}
	if m.Metrics != nil {
		out.Metrics = make(map[string]float64, len(m.Metrics))
		for k, v := range m.Metrics {
			out.Metrics[k] = v
		}
	}
	if m.Labels != nil {
		out.Labels = make(map[string]string, len(m.Labels))
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
	}
	return out
}
