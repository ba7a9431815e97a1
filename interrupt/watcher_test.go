package interrupt

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// scripted is a Source that reports a fixed list of notices, then waits.
type scripted struct {
	name    string
	notices []*Notice
	err     error // returned at once instead of watching, if set
}

func (s *scripted) Name() string { return s.name }

func (s *scripted) Watch(ctx context.Context, report func(*Notice)) error {
	if s.err != nil {
		return s.err
	}
	for _, n := range s.notices {
		c := *n
		report(&c)
	}
	<-ctx.Done()
	return ctx.Err()
}

var t0 = time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)

func TestWatcherDelivery(t *testing.T) {
	rebalance := &Notice{Kind: KindRebalance, Source: "fake", Advisory: true, ID: "r", Detected: t0}
	term := &Notice{Kind: KindTerminate, Source: "fake", Deadline: t0.Add(2 * time.Minute), ID: "terminate", Detected: t0}
	stop := &Notice{Kind: KindStop, Source: "fake", Deadline: t0.Add(3 * time.Minute), ID: "stop", Detected: t0}
	for _, tc := range []struct {
		name      string
		sources   []Source
		opts      *Options
		wantAll   []*Notice // in order of delivery
		wantCause *Notice   // nil: context not cancelled by a notice
	}{
		{"advisory only", []Source{&scripted{name: "fake", notices: []*Notice{rebalance}}}, nil,
			[]*Notice{rebalance}, nil},
		{"advisory then final", []Source{&scripted{name: "fake", notices: []*Notice{rebalance, term}}}, nil,
			[]*Notice{rebalance, term}, term},
		{"duplicates delivered once", []Source{&scripted{name: "fake", notices: []*Notice{term, term, rebalance, term, rebalance}}}, nil,
			[]*Notice{term, rebalance}, term},
		{"first final is the cause", []Source{&scripted{name: "fake", notices: []*Notice{term, stop}}}, nil,
			[]*Notice{term, stop}, term},
		{"cancel on advisory when asked", []Source{&scripted{name: "fake", notices: []*Notice{rebalance, term}}},
			&Options{Cancel: func(*Notice) bool { return true }}, []*Notice{rebalance, term}, rebalance},
		{"cancel never", []Source{&scripted{name: "fake", notices: []*Notice{term}}},
			&Options{Cancel: func(*Notice) bool { return false }}, []*Notice{term}, nil},
		{"nil source ignored", []Source{nil, &scripted{name: "fake", notices: []*Notice{term}}}, nil,
			[]*Notice{term}, term},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c collector
			opts := Options{}
			if tc.opts != nil {
				opts = *tc.opts
			}
			opts.OnNotice = c.add
			w := Watch(context.Background(), &opts, tc.sources...)
			if tc.wantCause != nil {
				n := waitCause(t, w.Context(), 10*time.Second)
				if diff := cmp.Diff(tc.wantCause, n); diff != "" {
					t.Errorf("cause (-want +got):\n%s", diff)
				}
			}
			// Drain the channel until it holds every expected notice.
			var fromChan []*Notice
			for len(fromChan) < len(tc.wantAll) {
				select {
				case n := <-w.Notices():
					fromChan = append(fromChan, n)
				case <-time.After(10 * time.Second):
					t.Fatalf("channel gave %d notices, want %d", len(fromChan), len(tc.wantAll))
				}
			}
			if err := w.Stop(); err != nil {
				t.Fatal(err)
			}
			for n := range w.Notices() { // closed after Stop
				fromChan = append(fromChan, n)
			}
			if diff := cmp.Diff(tc.wantAll, fromChan); diff != "" {
				t.Errorf("channel (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAll, c.all()); diff != "" {
				t.Errorf("OnNotice (-want +got):\n%s", diff)
			}
			n, ok := FromContext(w.Context())
			if tc.wantCause == nil && ok {
				t.Errorf("context cancelled by %v, want no notice", n)
			}
			if !errors.Is(context.Cause(w.Context()), context.Canceled) && tc.wantCause == nil {
				t.Errorf("after Stop, cause = %v, want context.Canceled", context.Cause(w.Context()))
			}
		})
	}
}

func TestWatcherParentCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	parent, cancel := context.WithCancelCause(context.Background())
	ctx, stop := NotifyContext(parent, &scripted{name: "a"}, &scripted{name: "b"})
	defer stop()
	boom := errors.New("parent gone")
	cancel(boom)
	<-ctx.Done()
	if got := context.Cause(ctx); !errors.Is(got, boom) {
		t.Errorf("cause = %v, want %v", got, boom)
	}
	if n, ok := FromContext(ctx); ok {
		t.Errorf("FromContext = %v, want none", n)
	}
	stop()
	stop() // idempotent
}

func TestWatcherSourceError(t *testing.T) {
	bad := errors.New("endpoint is not a URL")
	w := Watch(context.Background(), nil, &scripted{name: "bad", err: bad}, &scripted{name: "good"})
	<-time.After(10 * time.Millisecond)
	err := w.Stop()
	if !errors.Is(err, bad) {
		t.Errorf("Stop() = %v, want it to wrap %v", err, bad)
	}
}

func TestWatcherChannelFull(t *testing.T) {
	var ns []*Notice
	for i := range 5 {
		ns = append(ns, &Notice{Kind: KindMaintenance, Source: "fake", Advisory: true, ID: string(rune('a' + i))})
	}
	var c collector
	w := Watch(context.Background(), &Options{Buffer: 2, OnNotice: c.add}, &scripted{name: "fake", notices: ns})
	for end := time.Now().Add(10 * time.Second); len(c.all()) < len(ns) && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for range w.Notices() {
		got++
	}
	if got != 2 || len(c.all()) != 5 {
		t.Errorf("channel held %d (want 2, its capacity), OnNotice saw %d (want 5)", got, len(c.all()))
	}
}

func TestNoticeError(t *testing.T) {
	for _, tc := range []struct {
		n    Notice
		want string
	}{
		{Notice{Kind: KindTerminate, Source: SourceAWS, Deadline: t0, ID: "terminate"}, "interrupt: terminate notice from aws, deadline 2026-12-02T11:00:00Z"},
		{Notice{Kind: KindRebalance, Source: SourceAWS, Advisory: true, ID: "rebalance"}, "interrupt: advisory rebalance notice from aws, deadline unknown"},
		{Notice{Kind: KindTerminate, Source: SourceAzure, Deadline: t0, ID: "602d9444-d2cd-49c7-8624-8643e7171297"}, "interrupt: terminate notice from azure (602d9444-d2cd-49c7-8624-8643e7171297), deadline 2026-12-02T11:00:00Z"},
	} {
		if got := tc.n.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.n, ErrInterrupted) {
			t.Errorf("errors.Is(%v, ErrInterrupted) = false", &tc.n)
		}
		left, ok := tc.n.Remaining(t0.Add(-90 * time.Second))
		if ok != !tc.n.Deadline.IsZero() || ok && left != 90*time.Second {
			t.Errorf("Remaining = %v, %v; want 90s for a deadline, none without", left, ok)
		}
	}
}

func TestGraceContext(t *testing.T) {
	term := &Notice{Kind: KindTerminate, Source: "fake", Deadline: time.Now().Add(time.Hour), ID: "t"}
	reb := &Notice{Kind: KindRebalance, Source: "fake", Advisory: true, ID: "r"}
	type key struct{}
	for _, tc := range []struct {
		name         string
		cause        error
		wantDeadline time.Time // zero: none
	}{
		{"final notice", term, term.Deadline.Add(-10 * time.Second)},
		{"notice without deadline", reb, time.Time{}},
		{"plain cancel", context.Canceled, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), key{}, "v"))
			cancel(tc.cause)
			g, gcancel := GraceContext(parent, 10*time.Second)
			defer gcancel()
			if g.Err() != nil {
				t.Fatalf("grace context already done: %v", g.Err())
			}
			if g.Value(key{}) != "v" {
				t.Error("grace context lost the parent's values")
			}
			dl, ok := g.Deadline()
			if !ok {
				dl = time.Time{}
			}
			if !dl.Equal(tc.wantDeadline) {
				t.Errorf("deadline = %v, want %v", dl, tc.wantDeadline)
			}
		})
	}
	// A deadline already past: the grace context is done at once.
	parent, cancel := context.WithCancelCause(context.Background())
	cancel(&Notice{Kind: KindTerminate, Source: "fake", Deadline: time.Now().Add(time.Second)})
	g, gcancel := GraceContext(parent, time.Minute)
	defer gcancel()
	if !errors.Is(g.Err(), context.DeadlineExceeded) {
		t.Errorf("grace context with margin beyond the deadline: Err = %v, want DeadlineExceeded", g.Err())
	}
}

func TestSignals(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, stop := NotifyContext(context.Background(), Signals(5*time.Second, syscall.SIGUSR1))
	defer stop()
	// The handler is registered when NotifyContext returns: sending at once
	// must not kill the process.
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	n := waitCause(t, ctx, 10*time.Second)
	want := &Notice{Kind: KindSignal, Source: SourceSignal, Deadline: n.Detected.Add(5 * time.Second), Detected: n.Detected,
		ID: syscall.SIGUSR1.String(), Detail: syscall.SIGUSR1.String()}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("notice (-want +got):\n%s", diff)
	}
	stop()
}
