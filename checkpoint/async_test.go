package checkpoint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/internal/faultblob"
)

func TestAsync(t *testing.T) {
	ctx := context.Background()
	s, _, plan := newStore(t, &checkpoint.Options{Retention: checkpoint.KeepAll()})
	a := checkpoint.NewAsync(s, nil)

	// The snapshot is taken at Save: changing the caller's slices after it
	// returns does not change what is saved.
	state := parts(1)
	if err := a.Save(ctx, 1, checkpoint.Meta{}, state); err != nil {
		t.Fatal(err)
	}
	for _, b := range state {
		for i := range b {
			b[i] = 'X'
		}
	}
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	ck, err := s.At(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(parts(1), readParts(t, ck)); diff != "" {
		t.Errorf("saved bytes (-want +got):\n%s", diff)
	}

	// Back-pressure: while a save hangs, the next Save waits (here until
	// its context expires).
	plan.Add(faultblob.Rule{Op: faultblob.OpClose, Nth: 1, Action: faultblob.Delay, Duration: time.Hour})
	hangCtx, cancelHang := context.WithCancel(ctx)
	if err := a.Save(hangCtx, 2, checkpoint.Meta{}, parts(2)); err != nil {
		t.Fatal(err)
	}
	if !a.Busy() {
		t.Error("not busy while a save hangs")
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if err := a.Save(short, 3, checkpoint.Meta{}, parts(3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Save during a save in flight = %v, want it to wait until its deadline", err)
	}
	cancel()
	// The hung save fails; its error comes back from the next call.
	cancelHang()
	plan.Clear()
	err = a.Save(ctx, 3, checkpoint.Meta{}, parts(3))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Save after a failed save = %v, want the failure (context.Canceled)", err)
	}
	// The error was reported once; the next Save works.
	if err := a.Save(ctx, 3, checkpoint.Meta{}, parts(3)); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(ctx, 4, checkpoint.Meta{}, parts(4)); !errors.Is(err, checkpoint.ErrClosed) {
		t.Errorf("Save after Close = %v, want ErrClosed", err)
	}
	infos, _ := s.List(ctx)
	if diff := cmp.Diff([]int64{1, 3}, steps(infos)); diff != "" {
		t.Errorf("committed (-want +got):\n%s", diff)
	}

	// An error surfaces on Close too.
	a2 := checkpoint.NewAsync(s, nil)
	if err := a2.Save(ctx, 3, checkpoint.Meta{}, parts(3)); err != nil {
		t.Fatal(err)
	}
	if err := a2.Close(); !errors.Is(err, checkpoint.ErrStepExists) {
		t.Errorf("Close = %v, want ErrStepExists from the background save", err)
	}
}

func TestSchedule(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name  string
		opts  checkpoint.ScheduleOptions
		costs []time.Duration
		want  time.Duration
	}{
		// sqrt(2 * 30s * 3600s) = 464.758s
		{"initial", checkpoint.ScheduleOptions{MTBF: time.Hour, InitialCost: 30 * time.Second}, nil, 464758001 * time.Microsecond},
		// mean cost 50s: sqrt(2*50*7200) = 848.528s
		{"measured", checkpoint.ScheduleOptions{MTBF: 2 * time.Hour}, []time.Duration{40 * time.Second, 60 * time.Second}, 848528137 * time.Microsecond},
		{"clamped-min", checkpoint.ScheduleOptions{MTBF: time.Minute, Min: 5 * time.Minute}, []time.Duration{time.Second}, 5 * time.Minute},
		{"clamped-max", checkpoint.ScheduleOptions{MTBF: 1000 * time.Hour, Max: 30 * time.Minute}, []time.Duration{time.Minute}, 30 * time.Minute},
		{"window", checkpoint.ScheduleOptions{MTBF: time.Hour, Window: 1}, []time.Duration{time.Hour, 8 * time.Second}, 240 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Now = clock
			s := checkpoint.NewSchedule(&tc.opts)
			for _, c := range tc.costs {
				s.Record(c)
			}
			got := s.Interval()
			if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("Interval = %v, want %v", got, tc.want)
			}
			if s.Due(now.Add(got - time.Second)) {
				t.Error("due before the interval")
			}
			if !s.Due(now.Add(got)) {
				t.Error("not due after the interval")
			}
		})
	}
}
