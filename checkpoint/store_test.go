package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/internal/faultblob"
)

func newStore(t testing.TB, opts *checkpoint.Options) (*checkpoint.Store, *blob.Bucket, *faultblob.Plan) {
	t.Helper()
	plan := faultblob.NewPlan()
	b := faultblob.Wrap(memblob.OpenBucket(nil), plan)
	t.Cleanup(func() { b.Close() })
	s, err := checkpoint.New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, b, plan
}

func parts(step int64) map[string][]byte {
	return map[string][]byte{
		"model":     bytes.Repeat([]byte(fmt.Sprintf("m%d,", step)), 100),
		"optimizer": bytes.Repeat([]byte(fmt.Sprintf("o%d;", step)), 37),
		"rng":       []byte(fmt.Sprint(step)),
	}
}

func writers(p map[string][]byte) map[string]io.WriterTo {
	out := map[string]io.WriterTo{}
	for k, v := range p {
		out[k] = bytes.NewReader(v)
	}
	return out
}

func save(t testing.TB, s *checkpoint.Store, step int64) *checkpoint.Info {
	t.Helper()
	info, err := s.Save(context.Background(), step, checkpoint.Meta{Epoch: step / 10, Metrics: map[string]float64{"loss": 1 / float64(step+1)}}, writers(parts(step)))
	if err != nil {
		t.Fatalf("Save(%d): %v", step, err)
	}
	return info
}

func readParts(t testing.TB, ck *checkpoint.Checkpoint) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range ck.Parts {
		b, err := ck.ReadAll(context.Background(), p.Name)
		if err != nil {
			t.Fatalf("step %d part %s: %v", ck.Step, p.Name, err)
		}
		out[p.Name] = b
	}
	return out
}

func steps(infos []*checkpoint.Info) []int64 {
	var out []int64
	for _, i := range infos {
		out = append(out, i.Step)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t, &checkpoint.Options{WriterID: "w1"})
	if _, err := s.Latest(ctx); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest on empty store: %v, want ErrNotFound", err)
	}
	w, err := s.Begin(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range parts(7) {
		pw, err := w.Create(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Commit(ctx, checkpoint.Meta{Epoch: 2, Metrics: map[string]float64{"loss": 0.5}, Labels: map[string]string{"run": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.Step != 7 || info.Epoch != 2 || info.Writer.ID != "w1" || len(info.Parts) != 3 || info.Size() != 300+111+1 {
		t.Errorf("info = %+v", info)
	}
	ck, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*info, ck.Info); diff != "" {
		t.Errorf("Latest info (-commit +latest):\n%s", diff)
	}
	if diff := cmp.Diff(parts(7), readParts(t, ck)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if err := s.Verify(ctx, 7); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if _, err := s.At(ctx, 8); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("At(8) = %v, want ErrNotFound", err)
	}
	if _, err := s.Begin(ctx, 7); !errors.Is(err, checkpoint.ErrStepExists) {
		t.Errorf("Begin(7) again = %v, want ErrStepExists", err)
	}
	if _, err := ck.Open(ctx, "nope"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("Open(nope) = %v, want ErrNotFound", err)
	}
}

func TestWriterMisuse(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	if _, err := s.Begin(ctx, -1); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Begin(-1) = %v", err)
	}
	w, err := s.Begin(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a/b", "..", "a..b", ".hidden", strings.Repeat("x", 200), "sp ace"} {
		if _, err := w.Create(ctx, bad); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("Create(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := w.Commit(ctx, checkpoint.Meta{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Commit without parts = %v", err)
	}
	pw, _ := w.Create(ctx, "model")
	if _, err := w.Create(ctx, "model"); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Create twice = %v", err)
	}
	if _, err := w.Commit(ctx, checkpoint.Meta{}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Commit with open part = %v", err)
	}
	pw.Write([]byte("x"))
	pw.Close()
	if _, err := w.Commit(ctx, checkpoint.Meta{Metrics: map[string]float64{"nan": nanValue()}}); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("Commit with NaN metric = %v", err)
	}
	w.Abort(ctx)
	if _, err := w.Commit(ctx, checkpoint.Meta{}); !errors.Is(err, checkpoint.ErrClosed) {
		t.Errorf("Commit after Abort = %v", err)
	}
	if infos, err := s.List(ctx); err != nil || len(infos) != 0 {
		t.Errorf("List after abort = %v, %v", steps(infos), err)
	}
}

func nanValue() float64 { z := 0.0; return z / z }

func TestTwoWritersSameStepInProcess(t *testing.T) {
	ctx := context.Background()
	s, b, _ := newStore(t, nil)
	s2, _ := checkpoint.New(b, &checkpoint.Options{WriterID: "other"})
	w1, err := s.Begin(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := s2.Begin(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []*checkpoint.Writer{w1, w2} {
		pw, _ := w.Create(ctx, "model")
		pw.Write([]byte(fmt.Sprintf("%p", w)))
		pw.Close()
	}
	if _, err := w2.Commit(ctx, checkpoint.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Commit(ctx, checkpoint.Meta{}); !errors.Is(err, checkpoint.ErrStepExists) {
		t.Fatalf("loser Commit = %v, want ErrStepExists", err)
	}
	ck, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(readParts(t, ck)["model"]); got != fmt.Sprintf("%p", w2) || ck.Writer.ID != "other" {
		t.Errorf("committed %q by %q, want w2's", got, ck.Writer.ID)
	}
	// The loser's parts were removed.
	var keys []string
	it := b.List(nil)
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != 3 { // LATEST, manifest, one part
		t.Errorf("objects after race: %q", keys)
	}
}

func TestLatestRequests(t *testing.T) {
	ctx := context.Background()
	s, _, plan := newStore(t, &checkpoint.Options{Retention: checkpoint.KeepAll()})
	for i := int64(0); i < 30; i++ {
		save(t, s, i*10)
	}
	before := plan.Count(faultblob.OpAny)
	ck, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := plan.Count(faultblob.OpAny) - before; n > 3 || ck.Step != 290 {
		t.Errorf("Latest = step %d in %d requests, want 290 in <= 3", ck.Step, n)
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Minute); return now }
	loss := map[int64]float64{0: 9, 10: 1, 20: 5, 30: 0.5, 40: 7, 50: 8, 60: 6, 70: 9, 80: 9, 90: 9}
	tests := []struct {
		name   string
		policy checkpoint.Policy
		want   []int64
	}{
		{"default-last-3", nil, []int64{70, 80, 90}},
		{"last-1", checkpoint.KeepLast(1), []int64{90}},
		{"last-0-keeps-newest", checkpoint.KeepLast(0), []int64{90}},
		{"best-2", checkpoint.KeepBest(2, "loss", checkpoint.LowerIsBetter), []int64{10, 30, 90}},
		{"best-2-higher", checkpoint.KeepBest(2, "loss", checkpoint.HigherIsBetter), []int64{80, 90}},
		{"every-40", checkpoint.KeepEvery(40), []int64{0, 40, 80, 90}},
		{"every-3min", checkpoint.KeepEveryDuration(3 * time.Minute), nil}, // filled below
		{"any", checkpoint.Any(checkpoint.KeepLast(2), checkpoint.KeepBest(1, "loss", checkpoint.LowerIsBetter), checkpoint.KeepEvery(50)), []int64{0, 30, 50, 80, 90}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newStore(t, &checkpoint.Options{Retention: tc.policy, Now: clock})
			var created = map[int64]time.Time{}
			for i := int64(0); i < 10; i++ {
				info, err := s.Save(ctx, i*10, checkpoint.Meta{Metrics: map[string]float64{"loss": loss[i*10]}}, writers(parts(i*10)))
				if err != nil {
					t.Fatal(err)
				}
				created[i*10] = info.Created
			}
			want := tc.want
			if want == nil { // oldest per 3-minute window of creation time
				seen := map[int64]bool{}
				for i := int64(0); i < 10; i++ {
					w := created[i*10].UnixNano() / int64(3*time.Minute)
					if !seen[w] || i == 9 {
						seen[w] = true
						want = append(want, i*10)
					}
				}
			}
			infos, err := s.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, steps(infos)); diff != "" {
				t.Errorf("kept steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOrphanGC(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, b, _ := newStore(t, &checkpoint.Options{GracePeriod: time.Hour, Now: clock})
	save(t, s, 1)
	// A crashed writer: parts of step 2 without a manifest.
	w, _ := s.Begin(ctx, 2)
	pw, _ := w.Create(ctx, "model")
	pw.Write([]byte("orphan"))
	pw.Close()
	// Simulate a crash: the writer is never committed nor aborted, and the
	// process is gone; use a second store (different process) to prune.
	s2, _ := checkpoint.New(b, &checkpoint.Options{GracePeriod: time.Hour, Now: clock})
	count := func() int {
		n := 0
		it := b.List(&blob.ListOptions{Prefix: "steps/"})
		for {
			if _, err := it.Next(ctx); err != nil {
				return n
			}
			n++
		}
	}
	before := count()
	if err := s2.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != before {
		t.Errorf("young orphan collected: %d -> %d objects", before, got)
	}
	// The in-flight store never collects its own attempt, even when old.
	mu.Lock()
	now = time.Now().Add(2 * time.Hour)
	mu.Unlock()
	if err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != before {
		t.Errorf("in-flight attempt collected by its own store: %d -> %d", before, got)
	}
	if err := s2.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != before-1 {
		t.Errorf("old orphan not collected: %d -> %d objects", before, got)
	}
	if ck, err := s2.Latest(ctx); err != nil || ck.Step != 1 {
		t.Fatalf("Latest after GC: %v, %v", ck, err)
	}
}

func TestAbortDeletesParts(t *testing.T) {
	ctx := context.Background()
	s, b, _ := newStore(t, nil)
	w, _ := s.Begin(ctx, 3)
	pw, _ := w.Create(ctx, "model")
	pw.Write([]byte("data"))
	pw.Close()
	w.Abort(ctx)
	it := b.List(nil)
	if o, err := it.Next(ctx); err != io.EOF {
		t.Errorf("object left after Abort: %v %v", o, err)
	}
}

func TestEstimateAndDeadline(t *testing.T) {
	ctx := context.Background()
	s, _, plan := newStore(t, &checkpoint.Options{AssumedThroughput: 1e6})
	if d := s.EstimateSave(2e6); d != 2*time.Second {
		t.Errorf("EstimateSave before any save = %v, want 2s (assumed 1 MB/s)", d)
	}
	now := time.Now()
	if s.Fits(2e6, now, now.Add(time.Second)) || !s.Fits(2e6, now, now.Add(3*time.Second)) {
		t.Error("Fits disagrees with EstimateSave")
	}
	s.RecordSave(100e6, time.Second)
	if r, ok := s.Throughput(); !ok || r != 100e6 {
		t.Errorf("Throughput = %v, %v", r, ok)
	}
	save(t, s, 1)
	if _, ok := s.Throughput(); !ok {
		t.Error("no measurement after a save")
	}
	// A save that cannot finish before its deadline fails with the
	// context's error and leaves nothing visible.
	plan.Add(faultblob.Rule{Op: faultblob.OpClose, Action: faultblob.Hang})
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := s.Save(dctx, 2, checkpoint.Meta{}, writers(parts(2)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Save past deadline = %v, want DeadlineExceeded", err)
	}
	plan.Clear()
	if ck, err := s.Latest(ctx); err != nil || ck.Step != 1 {
		t.Errorf("Latest = %v, %v; want step 1", ck, err)
	}
}
