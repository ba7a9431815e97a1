package cloudwatchslog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/google/go-cmp/cmp"

	"github.com/spotcheck/spotcheck/examples/internal/cloudwatchslog"
)

func mustNew(t *testing.T, api cloudwatchslog.API, opts *cloudwatchslog.Options) *cloudwatchslog.Handler {
	t.Helper()
	h, err := cloudwatchslog.New(api, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func TestRecordsArriveAsJSON(t *testing.T) {
	for _, pre := range []struct {
		name           string
		group, stream  bool
		wantGroupCalls int
	}{
		{"creates group and stream", false, false, 1},
		{"group exists", true, false, 1},
		{"group and stream exist", true, true, 1},
	} {
		t.Run(pre.name, func(t *testing.T) {
			f, srv := newFakeLogs(t)
			if pre.group {
				f.groups["train"] = true
			}
			if pre.stream {
				f.streams["train/run-1"] = nil
			}
			h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "train", Stream: "run-1", FlushInterval: time.Hour})
			log := slog.New(h).With("job", "mnist").WithGroup("m")
			base := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
			var want []map[string]any
			for i := range 5 {
				r := slog.NewRecord(base.Add(time.Duration(i)*time.Second), slog.LevelInfo, "training metrics", 0)
				r.AddAttrs(slog.Int("epoch", i), slog.Float64("loss", 1/float64(i+1)))
				if err := log.Handler().Handle(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				want = append(want, map[string]any{
					"time": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339), "level": "INFO", "msg": "training metrics",
					"job": "mnist", "m": map[string]any{"epoch": float64(i), "loss": 1 / float64(i+1)},
				})
			}
			log.Debug("below the level")
			if err := h.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			evs := f.events("train", "run-1")
			var got []map[string]any
			for i, ev := range evs {
				var m map[string]any
				if err := json.Unmarshal([]byte(ev.Message), &m); err != nil {
					t.Fatalf("event %d: %v: %q", i, err, ev.Message)
				}
				if wantTS := base.Add(time.Duration(i) * time.Second).UnixMilli(); ev.Timestamp != wantTS {
					t.Errorf("event %d timestamp %d, want %d", i, ev.Timestamp, wantTS)
				}
				got = append(got, m)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if n := f.count("CreateLogGroup"); n != pre.wantGroupCalls {
				t.Errorf("CreateLogGroup called %d times, want %d", n, pre.wantGroupCalls)
			}
			if diff := cmp.Diff(cloudwatchslog.Stats{Handled: 5, Sent: 5, Requests: 1}, h.Stats()); diff != "" {
				t.Errorf("Stats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestThrottlingIsRetried(t *testing.T) {
	f, srv := newFakeLogs(t)
	f.throttle = 2
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour})
	log := slog.New(h)
	for i := range 10 {
		log.Info("step", "i", i)
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := len(f.events("g", "s")); got != 10 {
		t.Errorf("received %d events, want 10", got)
	}
	if f.throttled != 2 || f.count("PutLogEvents") != 3 {
		t.Errorf("throttled %d, PutLogEvents requests %d; want 2 and 3", f.throttled, f.count("PutLogEvents"))
	}
	if st := h.Stats(); st.Sent != 10 || st.Lost() != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestStreamDeletedIsRecreated(t *testing.T) {
	f, srv := newFakeLogs(t)
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour})
	log := slog.New(h)
	log.Info("one")
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	delete(f.streams, "g/s")
	f.mu.Unlock()
	log.Info("two")
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if evs := f.events("g", "s"); len(evs) != 1 || !strings.Contains(evs[0].Message, `"two"`) {
		t.Errorf("after re-creation the stream holds %v, want only \"two\"", evs)
	}
	if n := f.count("CreateLogStream"); n != 2 {
		t.Errorf("CreateLogStream called %d times, want 2", n)
	}
}

// TestBatchLimits sends workloads that must be split by each limit; the fake
// server fails the test if any request breaks a PutLogEvents constraint.
func TestBatchLimits(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	type rec struct {
		at  time.Time
		msg string
	}
	tests := []struct {
		name        string
		recs        func() []rec
		minRequests int
	}{
		{"count", func() []rec {
			var rs []rec
			for i := range 25_000 {
				rs = append(rs, rec{base.Add(time.Duration(i) * time.Millisecond), "m"})
			}
			return rs
		}, 3},
		{"bytes", func() []rec {
			var rs []rec
			for i := range 30 {
				rs = append(rs, rec{base.Add(time.Duration(i) * time.Second), strings.Repeat("x", 100_000)})
			}
			return rs
		}, 3},
		{"out of order over three days", func() []rec {
			var rs []rec
			for i := range 300 {
				// 0, 299, 1, 298, ... minutes*15: spans 74 h, unsorted
				j := i / 2
				if i%2 == 1 {
					j = 299 - j
				}
				rs = append(rs, rec{base.Add(time.Duration(j) * 15 * time.Minute), fmt.Sprint(j)})
			}
			return rs
		}, 4},
		{"oversized record", func() []rec {
			return []rec{{base, strings.Repeat("é", 600_000)}, {base, "small"}}
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFakeLogs(t)
			h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour, QueueSize: 30_000})
			recs := tt.recs()
			for _, r := range recs {
				if err := h.Handle(context.Background(), slog.NewRecord(r.at, slog.LevelInfo, r.msg, 0)); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Close(context.Background()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			evs := f.events("g", "s")
			if len(evs) != len(recs) {
				t.Fatalf("received %d events, want %d", len(evs), len(recs))
			}
			if n := f.count("PutLogEvents"); n < tt.minRequests {
				t.Errorf("%d PutLogEvents requests, want at least %d", n, tt.minRequests)
			}
			// Every record arrived exactly once, with its own timestamp.
			want := map[string]int{}
			for _, r := range recs {
				want[fmt.Sprint(r.at.UnixMilli())+" "+r.msg[:min(len(r.msg), 20)]]++
			}
			for _, ev := range evs {
				var m struct{ Msg string }
				if err := json.Unmarshal([]byte(ev.Message), &m); err != nil && !strings.HasPrefix(ev.Message, `{"time"`) {
					t.Fatalf("message %.40q: %v", ev.Message, err)
				}
				if m.Msg == "" { // truncated record: not valid JSON any more
					m.Msg = strings.Repeat("é", 10)
				}
				want[fmt.Sprint(ev.Timestamp)+" "+m.Msg[:min(len(m.Msg), 20)]]--
			}
			for k, n := range want {
				if n != 0 {
					t.Errorf("record %q: %d more sent than received", k, n)
				}
			}
		})
	}
}

func TestTruncatedCounted(t *testing.T) {
	f, srv := newFakeLogs(t)
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour})
	slog.New(h).Info(strings.Repeat("é", 600_000)) // 1.2 MB of 2-byte runes
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := f.events("g", "s")
	if len(evs) != 1 || len(evs[0].Message) > cloudwatchslog.MaxMessageBytes || len(evs[0].Message) < cloudwatchslog.MaxMessageBytes-1 {
		t.Fatalf("got %d events of %d bytes, want 1 of about %d", len(evs), len(evs[0].Message), cloudwatchslog.MaxMessageBytes)
	}
	if st := h.Stats(); st.Truncated != 1 || st.Sent != 1 {
		t.Errorf("Stats = %+v, want 1 truncated and sent", st)
	}
}

func TestRejectedCounted(t *testing.T) {
	f, srv := newFakeLogs(t)
	f.reject = func(batch []inputEvent) map[string]int {
		// the first 2 too old, the last 3 too new
		return map[string]int{"tooOldLogEventEndIndex": 1, "tooNewLogEventStartIndex": len(batch) - 3}
	}
	var mu sync.Mutex
	var reported []error
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour,
		OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }})
	for i := range 10 {
		slog.New(h).Info("r", "i", i)
	}
	err := h.Close(context.Background())
	if !errors.Is(err, cloudwatchslog.ErrDropped) || !strings.Contains(err.Error(), "5 rejected") {
		t.Errorf("Close = %v, want ErrDropped naming 5 rejected", err)
	}
	if st := h.Stats(); st.Sent != 5 || st.Rejected != 5 {
		t.Errorf("Stats = %+v, want 5 sent, 5 rejected", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !errors.Is(reported[0], cloudwatchslog.ErrDropped) {
		t.Errorf("OnError got %v, want one ErrDropped", reported)
	}
}

// TestFullQueueDropsAndNeverBlocks: with the server stuck, Handle must keep
// returning, count what it cannot queue, and Close must return by its
// deadline with the totals.
func TestFullQueueDropsAndNeverBlocks(t *testing.T) {
	f, srv := newFakeLogs(t)
	f.block = make(chan struct{})
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour,
		MaxBatchEvents: 5, QueueSize: 10})
	log := slog.New(h)
	const n = 200
	for i := range n {
		log.Info("r", "i", i) // never blocks: the test would hang here
	}
	st := h.Stats()
	if st.Dropped == 0 || st.Handled+st.Dropped != n {
		t.Fatalf("Stats = %+v: want some dropped, handled+dropped = %d", st, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := h.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, cloudwatchslog.ErrDropped) {
		t.Errorf("Close = %v, want deadline exceeded and ErrDropped", err)
	}
	close(f.block)
	// After Close returns, every record is accounted for once the sender
	// has seen the cancellation.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = h.Stats()
		if st.Sent+st.Dropped == n || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Sent+st.Dropped != n {
		t.Errorf("Stats = %+v: sent+dropped = %d, want %d", st, st.Sent+st.Dropped, n)
	}
	if err := log.Handler().Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelInfo, "late", 0)); !errors.Is(err, cloudwatchslog.ErrClosed) {
		t.Errorf("Handle after Close = %v, want ErrClosed", err)
	}
	if got := h.Stats().Dropped; got != st.Dropped+1 {
		t.Errorf("record after Close not counted: dropped %d, want %d", got, st.Dropped+1)
	}
}

func TestFlushHonoursContext(t *testing.T) {
	f, srv := newFakeLogs(t)
	f.block = make(chan struct{})
	defer close(f.block)
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour})
	slog.New(h).Info("x")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.Flush(ctx) }()
	cause := errors.New("interrupted")
	cancel(cause)
	if err := <-errc; !errors.Is(err, cause) {
		t.Errorf("Flush = %v, want the context's cause", err)
	}
}

func TestIntervalFlush(t *testing.T) {
	f, srv := newFakeLogs(t)
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: 10 * time.Millisecond})
	slog.New(h).Info("tick")
	deadline := time.Now().Add(10 * time.Second)
	for len(f.events("g", "s")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(f.events("g", "s")) != 1 {
		t.Fatal("record not sent by the interval flush")
	}
}

func TestSendFailureReported(t *testing.T) {
	f, srv := newFakeLogs(t)
	f.throttle = 1000 // always throttled: the SDK gives up after 5 attempts
	h := mustNew(t, client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Hour})
	slog.New(h).Info("lost")
	err := h.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Errorf("Flush = %v, want the ThrottlingException", err)
	}
	err = h.Close(context.Background())
	if !errors.Is(err, cloudwatchslog.ErrDropped) || !strings.Contains(err.Error(), "1 dropped") {
		t.Errorf("Close = %v, want ErrDropped with 1 dropped", err)
	}
}

func TestNewFromConfig(t *testing.T) {
	f, srv := newFakeLogs(t)
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	h, err := cloudwatchslog.NewFromConfig(cfg, &cloudwatchslog.Options{Group: "g", Stream: "s"},
		func(o *cloudwatchlogs.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	if err != nil {
		t.Fatal(err)
	}
	slog.New(h).Info("hello")
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.events("g", "s")); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func TestOptionsValidated(t *testing.T) {
	_, srv := newFakeLogs(t)
	for _, o := range []*cloudwatchslog.Options{nil, {Group: "g"}, {Stream: "s"}} {
		if _, err := cloudwatchslog.New(client(srv), o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		}
	}
	if _, err := cloudwatchslog.New(nil, &cloudwatchslog.Options{Group: "g", Stream: "s"}); err == nil {
		t.Error("New(nil client) succeeded")
	}
}
