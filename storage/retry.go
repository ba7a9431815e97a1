package storage

import (
	"context"
	"math/rand/v2"
	"time"
)

// RetryOptions configures Retry. The zero value and nil mean the defaults.
type RetryOptions struct {
	// Attempts is the maximum number of calls, including the first.
	// Default 5.
	Attempts int
	// Initial is the upper bound of the first backoff. Default 100ms.
	Initial time.Duration
	// Max caps the backoff bound. Default 10s.
	Max time.Duration
	// Retryable decides whether an error is worth another attempt.
	// Default IsTransient.
	Retryable func(error) bool
}

func (o *RetryOptions) withDefaults() RetryOptions {
	var r RetryOptions
	if o != nil {
		r = *o
	}
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.Initial <= 0 {
		r.Initial = 100 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 10 * time.Second
	}
	if r.Max < r.Initial {
		r.Max = r.Initial
	}
	if r.Retryable == nil {
		r.Retryable = IsTransient
	}
	return r
}

// Backoff returns the bound of the backoff before attempt n+1 (n >= 1):
// min(Max, Initial * 2^(n-1)). Retry sleeps a uniformly random duration in
// [0, bound) ("full jitter").
func (o *RetryOptions) Backoff(n int) time.Duration {
	r := o.withDefaults()
	d := r.Initial
	for i := 1; i < n && d < r.Max; i++ {
		d *= 2
	}
	return min(d, r.Max)
}

// Retry calls fn until it succeeds, returns an error that is not retryable,
// the attempts are used up or ctx is done. Between attempts it sleeps a
// random duration in [0, min(Max, Initial*2^(n-1))) (exponential backoff with
// full jitter). It returns fn's last error. If ctx ends while waiting, it
// returns an error that matches both the context's cause (errors.Is(err,
// context.Canceled)) and the last failure; fn is not called again.
func Retry(ctx context.Context, opts *RetryOptions, fn func(ctx context.Context) error) error {
	r := opts.withDefaults()
	var err error
	for n := 1; ; n++ {
		if cerr := context.Cause(ctx); cerr != nil {
			if err == nil {
				return cerr
			}
			return &retryError{last: err, ctx: cerr}
		}
		err = fn(ctx)
		if err == nil || n >= r.Attempts || !r.Retryable(err) {
			return err
		}
		bound := r.Backoff(n)
		sleep := time.Duration(rand.Int64N(int64(bound)))
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// retryError is returned when the context ended while Retry was waiting.
type retryError struct{ last, ctx error }

func (e *retryError) Error() string {
	return "retry stopped (" + e.ctx.Error() + ") after: " + e.last.Error()
}

func (e *retryError) Unwrap() []error { return []error{e.ctx, e.last} }
