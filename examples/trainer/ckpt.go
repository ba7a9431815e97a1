package main

// TEMPORARY: a stand-in for the checkpoint and storage packages until they
// land; replaced by checkpoint.Store over storage.Open at integration.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

type ckptStore struct {
	dir  string
	keep int
	log  *slog.Logger

	mu       sync.Mutex
	inflight chan struct{}
	err      error
	cost     time.Duration // last measured save cost
}

func openStore(_ context.Context, url string, o *options, log *slog.Logger) (*ckptStore, error) {
	dir, ok := strings.CutPrefix(url, "file://")
	if !ok {
		return nil, fmt.Errorf("only file:// until the storage package lands")
	}
	return &ckptStore{dir: dir, keep: o.Keep, log: log}, nil
}

func (s *ckptStore) Close() error { return s.Wait(context.Background()) }

func (s *ckptStore) Latest(ctx context.Context, names []string) (*snapshot, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	best := int64(-1)
	for _, e := range ents {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && n > best {
			best = n
		}
	}
	if best < 0 {
		return nil, nil
	}
	d := filepath.Join(s.dir, strconv.FormatInt(best, 10))
	return decodeSnapshot(best, names, func(name string) (io.ReadCloser, error) { return os.Open(filepath.Join(d, name)) })
}

func (s *ckptStore) Save(ctx context.Context, snap *snapshot, async bool) error {
	if err := s.Wait(ctx); err != nil {
		return err
	}
	if !async {
		return s.save(snap)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.inflight = done
	s.mu.Unlock()
	go func() {
		defer close(done)
		if err := s.save(snap); err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}()
	return nil
}

func (s *ckptStore) Wait(ctx context.Context) error {
	s.mu.Lock()
	ch := s.inflight
	s.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight = nil
	err := s.err
	s.err = nil
	return err
}

func (s *ckptStore) save(snap *snapshot) error {
	began := time.Now()
	tmp, err := os.MkdirTemp(s.dir, "tmp-")
	if err != nil {
		return err
	}
	for name, p := range snap.encodeParts() {
		f, err := os.Create(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		if _, err := p.WriteTo(f); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, strconv.FormatInt(snap.Step, 10))); err != nil {
		return err
	}
	s.mu.Lock()
	s.cost = time.Since(began)
	s.mu.Unlock()
	s.log.Info("checkpoint saved", "step", snap.Step, "took", time.Since(began).String())
	return nil
}

// scheduler decides when to checkpoint: every -every steps, or by Young/Daly.
type scheduler struct {
	every int64
	mtbf  time.Duration
	last  time.Time
}

func newScheduler(o *options) *scheduler {
	return &scheduler{every: o.Every, mtbf: o.MTBF, last: time.Now()}
}

func (s *scheduler) due(step int64, now time.Time) bool {
	if s.every > 0 {
		return step%s.every == 0
	}
	c := 10 * time.Millisecond
	iv := time.Duration(math.Sqrt(2*c.Seconds()*s.mtbf.Seconds()) * float64(time.Second))
	if now.Sub(s.last) >= iv {
		s.last = now
		return true
	}
	return false
}
