package faultblob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/gcerrors"

	"github.com/spotcheck/spotcheck/internal/faultblob"
)

var payload = []byte("0123456789abcdefghij")

func setup(t *testing.T, rules ...faultblob.Rule) (*blob.Bucket, *blob.Bucket, *faultblob.Plan) {
	t.Helper()
	inner := memblob.OpenBucket(nil)
	plan := faultblob.NewPlan()
	b := faultblob.Wrap(inner, plan)
	t.Cleanup(func() { b.Close() })
	if err := inner.WriteAll(context.Background(), "existing", payload, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		plan.Add(r)
	}
	return b, inner, plan
}

func TestWriteFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		rule      faultblob.Rule
		wantErr   bool
		wantStore []byte // nil = object must not exist
	}{
		{"none", faultblob.Rule{Op: faultblob.OpRead}, false, payload},
		{"fail-at-start", faultblob.Rule{Op: faultblob.OpWrite, Nth: 1, Action: faultblob.Fail}, true, nil},
		{"fail-mid", faultblob.Rule{Op: faultblob.OpWrite, Nth: 1, Action: faultblob.Fail, Bytes: 7}, true, nil},
		{"fail-beyond-size-fails-at-close", faultblob.Rule{Op: faultblob.OpWrite, Nth: 1, Action: faultblob.Fail, Bytes: 1000}, true, nil},
		{"truncate", faultblob.Rule{Op: faultblob.OpWrite, Nth: 1, Action: faultblob.Truncate, Bytes: 5}, false, payload[:5]},
		{"corrupt", faultblob.Rule{Op: faultblob.OpWrite, Action: faultblob.Corrupt, Offset: 3}, false, flip(payload, 3)},
		{"close-fail", faultblob.Rule{Op: faultblob.OpClose, Nth: 1, Action: faultblob.Fail}, true, nil},
		{"close-fail-after", faultblob.Rule{Op: faultblob.OpClose, Nth: 1, Action: faultblob.FailAfter}, true, payload},
		{"close-delay", faultblob.Rule{Op: faultblob.OpClose, Nth: 1, Action: faultblob.Delay, Duration: time.Millisecond}, false, payload},
		{"other-key", faultblob.Rule{Op: faultblob.OpWrite, Key: "nope/*", Action: faultblob.Fail}, false, payload},
		{"matching-key", faultblob.Rule{Op: faultblob.OpWrite, Key: "dir/*", Action: faultblob.Fail}, true, nil},
		{"second-write-only", faultblob.Rule{Op: faultblob.OpWrite, Nth: 2, Action: faultblob.Fail}, false, payload},
		{"any-op-first", faultblob.Rule{Nth: 1, Action: faultblob.Fail}, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, inner, plan := setup(t, tc.rule)
			w, err := b.NewWriter(ctx, "dir/obj", &blob.WriterOptions{ContentType: "application/octet-stream"})
			if err == nil {
				// write in small pieces to exercise the byte accounting
				for i := 0; i < len(payload) && err == nil; i += 3 {
					_, err = w.Write(payload[i:min(i+3, len(payload))])
				}
				if cerr := w.Close(); err == nil {
					err = cerr
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, faultblob.ErrInjected) {
				t.Errorf("err = %v, want ErrInjected in chain", err)
			}
			got, rerr := inner.ReadAll(ctx, "dir/obj")
			if tc.wantStore == nil {
				if gcerrors.Code(rerr) != gcerrors.NotFound {
					t.Fatalf("object exists (%q, %v), want none", got, rerr)
				}
			} else if diff := cmp.Diff(tc.wantStore, got); diff != "" {
				t.Errorf("stored bytes (-want +got):\n%s", diff)
			}
			if n := plan.Count(faultblob.OpWrite); n != 1 {
				t.Errorf("Count(write) = %d, want 1", n)
			}
		})
	}
}

func flip(p []byte, i int) []byte {
	q := bytes.Clone(p)
	q[i] ^= 0xff
	return q
}

func TestReadFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		rule    faultblob.Rule
		want    []byte
		wantErr bool
	}{
		{"none", faultblob.Rule{Op: faultblob.OpWrite, Action: faultblob.Fail}, payload, false},
		{"fail", faultblob.Rule{Op: faultblob.OpRead, Action: faultblob.Fail}, nil, true},
		{"truncate", faultblob.Rule{Op: faultblob.OpRead, Action: faultblob.Truncate, Bytes: 4}, payload[:4], false},
		{"corrupt", faultblob.Rule{Op: faultblob.OpRead, Action: faultblob.Corrupt, Offset: 19}, flip(payload, 19), false},
		{"delay", faultblob.Rule{Op: faultblob.OpRead, Action: faultblob.Delay, Duration: time.Millisecond}, payload, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _ := setup(t, tc.rule)
			got, err := b.ReadAll(ctx, "existing")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("corrupt-range", func(t *testing.T) {
		b, _, _ := setup(t, faultblob.Rule{Op: faultblob.OpRead, Action: faultblob.Corrupt, Offset: 12})
		r, err := b.NewRangeReader(ctx, "existing", 10, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if diff := cmp.Diff(flip(payload, 12)[10:15], got); diff != "" {
			t.Errorf("range read (-want +got):\n%s", diff)
		}
	})
}

func TestOtherOps(t *testing.T) {
	ctx := context.Background()
	t.Run("delete-fail", func(t *testing.T) {
		b, inner, _ := setup(t, faultblob.Rule{Op: faultblob.OpDelete, Action: faultblob.Fail})
		if err := b.Delete(ctx, "existing"); !errors.Is(err, faultblob.ErrInjected) {
			t.Fatalf("Delete err = %v", err)
		}
		if ok, _ := inner.Exists(ctx, "existing"); !ok {
			t.Error("object deleted despite Fail")
		}
	})
	t.Run("delete-fail-after", func(t *testing.T) {
		b, inner, _ := setup(t, faultblob.Rule{Op: faultblob.OpDelete, Action: faultblob.FailAfter})
		if err := b.Delete(ctx, "existing"); !errors.Is(err, faultblob.ErrInjected) {
			t.Fatalf("Delete err = %v", err)
		}
		if ok, _ := inner.Exists(ctx, "existing"); ok {
			t.Error("object still there after FailAfter")
		}
	})
	t.Run("attributes-fail", func(t *testing.T) {
		myErr := errors.New("boom")
		b, _, _ := setup(t, faultblob.Rule{Op: faultblob.OpAttributes, Action: faultblob.Fail, Err: myErr})
		if _, err := b.Attributes(ctx, "existing"); !errors.Is(err, myErr) {
			t.Fatalf("Attributes err = %v", err)
		}
		if _, err := b.Attributes(ctx, "existing"); !errors.Is(err, myErr) {
			t.Fatalf("Nth=0 rule must fire every time; err = %v", err)
		}
	})
	t.Run("list-fail-second-page", func(t *testing.T) {
		b, _, _ := setup(t, faultblob.Rule{Op: faultblob.OpList, Nth: 2, Action: faultblob.Fail})
		for _, k := range []string{"a", "b", "c"} {
			if err := b.WriteAll(ctx, k, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		objs, next, err := b.ListPage(ctx, blob.FirstPageToken, 2, nil)
		if err != nil || len(objs) != 2 {
			t.Fatalf("first page: %d objs, %v", len(objs), err)
		}
		if _, _, err := b.ListPage(ctx, next, 2, nil); !errors.Is(err, faultblob.ErrInjected) {
			t.Fatalf("second page err = %v", err)
		}
	})
	t.Run("hang-until-cancel", func(t *testing.T) {
		for _, op := range []faultblob.Op{faultblob.OpRead, faultblob.OpWrite, faultblob.OpClose, faultblob.OpList, faultblob.OpDelete, faultblob.OpAttributes} {
			b, _, _ := setup(t, faultblob.Rule{Op: op, Action: faultblob.Hang})
			cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			var err error
			switch op {
			case faultblob.OpRead:
				_, err = b.ReadAll(cctx, "existing")
			case faultblob.OpWrite, faultblob.OpClose:
				err = b.WriteAll(cctx, "x", payload, nil)
			case faultblob.OpList:
				_, _, err = b.ListPage(cctx, blob.FirstPageToken, 10, nil)
			case faultblob.OpDelete:
				err = b.Delete(cctx, "existing")
			case faultblob.OpAttributes:
				_, err = b.Attributes(cctx, "existing")
			}
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: err = %v, want DeadlineExceeded", op, err)
			}
		}
	})
}

func TestCountersConcurrent(t *testing.T) {
	ctx := context.Background()
	b, _, plan := setup(t, faultblob.Rule{Op: faultblob.OpWrite, Nth: 57, Action: faultblob.Fail})
	var wg sync.WaitGroup
	var mu sync.Mutex
	fails := 0
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.WriteAll(ctx, string(rune('a'+i%26))+"/k", payload, nil); err != nil {
				mu.Lock()
				fails++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fails != 1 {
		t.Errorf("%d writes failed, want exactly 1", fails)
	}
	if got := plan.Count(faultblob.OpWrite); got != 100 {
		t.Errorf("Count(write) = %d, want 100", got)
	}
	if got := plan.Count(faultblob.OpClose); got != 99 {
		t.Errorf("Count(close) = %d, want 99", got)
	}
	if ev := plan.Fired(); len(ev) != 1 || ev[0].Op != faultblob.OpWrite {
		t.Errorf("Fired = %+v", ev)
	}
}

func ExampleWrap() {
	ctx := context.Background()
	plan := faultblob.NewPlan(faultblob.Rule{Op: faultblob.OpClose, Nth: 2, Action: faultblob.Fail})
	b := faultblob.Wrap(memblob.OpenBucket(nil), plan)
	defer b.Close()
	fmt.Println(b.WriteAll(ctx, "a", []byte("x"), nil) == nil)
	err := b.WriteAll(ctx, "b", []byte("y"), nil)
	fmt.Println(errors.Is(err, faultblob.ErrInjected))
	ok, _ := b.Exists(ctx, "b")
	fmt.Println(ok, plan.Count(faultblob.OpClose))
	// Output:
	// true
	// true
	// false 2
}
