package interrupt

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff computes the delay before the next attempt after consecutive
// failures: base*2^(n-1), capped at max, with "equal jitter" (half fixed,
// half random) so that many machines do not retry in lockstep.
type backoff struct {
	base, max time.Duration
	fails     int
}

func (b *backoff) success() { b.fails = 0 }

// failure records a failure and returns the delay before the next try.
func (b *backoff) failure() time.Duration {
	b.fails++
	d := b.base
	for i := 1; i < b.fails && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half)
}

// sleep waits d or until ctx is done; it reports whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
