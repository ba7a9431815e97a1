package checkpoint

import (
	"sync"
	"time"
)

// estimator keeps an exponentially weighted estimate of save throughput.
type estimator struct {
	mu      sync.Mutex
	rate    float64 // bytes per second
	samples int
}

const estAlpha = 0.3

func (e *estimator) record(bytes int64, d time.Duration) {
	if bytes <= 0 || d <= 0 {
		return
	}
	r := float64(bytes) / d.Seconds()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.samples == 0 {
		e.rate = r
	} else {
		e.rate = estAlpha*r + (1-estAlpha)*e.rate
	}
	e.samples++
}

// Throughput returns the measured save throughput in bytes per second
// (an exponentially weighted average over committed saves) and whether any
// save was measured; without one it returns Options.AssumedThroughput.
func (s *Store) Throughput() (bytesPerSecond float64, measured bool) {
	s.est.mu.Lock()
	defer s.est.mu.Unlock()
	if s.est.samples == 0 {
		return s.opts.AssumedThroughput, false
	}
	return s.est.rate, true
}

// RecordSave feeds the estimator with a save measured elsewhere (e.g. a
// previous run's duration kept in your own state).
func (s *Store) RecordSave(bytes int64, d time.Duration) { s.est.record(bytes, d) }

// EstimateSave returns how long a save of n bytes is expected to take.
func (s *Store) EstimateSave(n int64) time.Duration {
	r, _ := s.Throughput()
	return time.Duration(float64(n) / r * float64(time.Second))
}

// Fits reports whether a save of n bytes started at now is expected to
// finish before deadline.
func (s *Store) Fits(n int64, now, deadline time.Time) bool {
	return !now.Add(s.EstimateSave(n)).After(deadline)
}
