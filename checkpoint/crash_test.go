package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/internal/faultblob"
)

// checkInvariants verifies, with no fault active, that:
//   - Latest returns exactly the bytes of step want,
//   - every listed checkpoint verifies byte for byte (no partial is listed),
//   - step want (the newest acknowledged, i.e. the previous good one for
//     the next save) is present.
func checkInvariants(t *testing.T, s *checkpoint.Store, want int64, trial string) {
	t.Helper()
	ctx := context.Background()
	ck, err := s.Latest(ctx)
	if err != nil {
		t.Fatalf("%s: Latest: %v", trial, err)
	}
	if ck.Step != want || len(ck.Fallback) != 0 {
		t.Fatalf("%s: Latest = step %d (fallback %v), want %d", trial, ck.Step, ck.Fallback, want)
	}
	if diff := cmp.Diff(parts(want), readParts(t, ck)); diff != "" {
		t.Fatalf("%s: Latest bytes (-want +got):\n%s", trial, diff)
	}
	infos, err := s.List(ctx)
	if err != nil {
		t.Fatalf("%s: List: %v", trial, err)
	}
	for _, i := range infos {
		if i.Step > want {
			t.Fatalf("%s: List shows step %d newer than the newest committed %d", trial, i.Step, want)
		}
		if err := s.Verify(ctx, i.Step); err != nil {
			t.Fatalf("%s: listed step %d does not verify: %v", trial, i.Step, err)
		}
	}
	if len(infos) == 0 || infos[len(infos)-1].Step != want {
		t.Fatalf("%s: List = %v, newest must be %d", trial, steps(infos), want)
	}
}

// TestFaultInjection runs 1000 saves, each with one fault injected at a
// random operation of the save (commit, hint update and retention
// included): failed, truncated or hung writes and closes, failed reads,
// lists, deletes and attribute checks, lost acknowledgements.
func TestFaultInjection(t *testing.T) {
	const trials = 1000
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	s, _, plan := newStore(t, &checkpoint.Options{Retention: checkpoint.KeepLast(2), GracePeriod: time.Nanosecond})

	// Calibrate: how many operations does a save take in steady state?
	for i := int64(0); i < 3; i++ {
		save(t, s, i)
	}
	before := plan.Count(faultblob.OpAny)
	save(t, s, 3)
	perSave := plan.Count(faultblob.OpAny) - before
	t.Logf("a save takes %d bucket operations", perSave)

	good := int64(3)
	actions := []faultblob.Action{faultblob.Fail, faultblob.FailAfter, faultblob.Truncate, faultblob.Delay, faultblob.Hang}
	stats := map[string]int{}
	for i := 0; i < trials; i++ {
		step := int64(4 + i)
		rule := faultblob.Rule{
			Nth:      1 + rng.IntN(int(perSave)+2),
			Action:   actions[rng.IntN(len(actions))],
			Bytes:    int64(rng.IntN(400)),
			Duration: time.Millisecond,
		}
		plan.Reset()
		plan.Add(rule)
		sctx, cancel := context.WithCancel(ctx)
		if rule.Action == faultblob.Hang {
			time.AfterFunc(2*time.Millisecond, cancel)
		}
		_, err := s.Save(sctx, step, checkpoint.Meta{Epoch: step / 10, Metrics: map[string]float64{"loss": 1 / float64(step+1)}}, writers(parts(step)))
		cancel()
		fired := plan.Fired()
		plan.Clear()
		if err == nil {
			good = step
			stats["ok"]++
		} else {
			stats["failed"]++
		}
		if len(fired) > 0 {
			stats[fmt.Sprintf("%s/%s", fired[0].Op, fired[0].Action)]++
		}
		checkInvariants(t, s, good, fmt.Sprintf("trial %d (%v, fired %v, save err %v)", i, rule, fired, err))
	}
	t.Logf("outcomes: %v", stats)
	if stats["failed"] < trials/4 {
		t.Errorf("only %d of %d saves failed: the faults are not biting", stats["failed"], trials)
	}
}

// TestCorruption damages the newest checkpoint in a few hundred random
// ways (flip any byte, truncate any part or the manifest) and checks that
// the damage is detected every time and that Latest falls back to the
// previous checkpoint, saying so.
func TestCorruption(t *testing.T) {
	const trials = 300
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	s, b, _ := newStore(t, &checkpoint.Options{Retention: checkpoint.KeepAll(), Verify: checkpoint.VerifyAll})
	for i := 0; i < trials; i++ {
		prev, step := int64(2*i), int64(2*i+1)
		save(t, s, prev)
		save(t, s, step)
		ck, err := s.At(ctx, step)
		if err != nil {
			t.Fatal(err)
		}
		// Pick a victim object: one of the parts or the manifest.
		var keys []string
		it := b.List(nil)
		for {
			o, err := it.Next(ctx)
			if err != nil {
				break
			}
			if len(o.Key) > 26 && o.Key[:25] == fmt.Sprintf("steps/%019d", 9223372036854775807-step) {
				keys = append(keys, o.Key)
			}
		}
		if len(keys) != len(ck.Parts)+1 {
			t.Fatalf("step %d has objects %q", step, keys)
		}
		key := keys[rng.IntN(len(keys))]
		data, err := b.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		var how string
		if rng.IntN(2) == 0 {
			j := rng.IntN(len(data))
			data[j] ^= byte(1 + rng.IntN(255))
			how = fmt.Sprintf("flip byte %d of %d", j, len(data))
		} else {
			n := rng.IntN(len(data))
			data = data[:n]
			how = fmt.Sprintf("truncate to %d of %d", n, len(data))
		}
		if err := b.WriteAll(ctx, key, data, nil); err != nil {
			t.Fatal(err)
		}
		trial := fmt.Sprintf("trial %d: %s %s", i, how, key)
		if err := s.Verify(ctx, step); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("%s: Verify = %v, want ErrCorrupt", trial, err)
		}
		got, err := s.Latest(ctx)
		if err != nil {
			t.Fatalf("%s: Latest: %v", trial, err)
		}
		if got.Step != prev || len(got.Fallback) != 1 || got.Fallback[0].Step != step || !errors.Is(got.Fallback[0].Err, checkpoint.ErrCorrupt) {
			t.Fatalf("%s: Latest = step %d, fallback %v; want %d with fallback from %d", trial, got.Step, got.Fallback, prev, step)
		}
		if diff := cmp.Diff(parts(prev), readParts(t, got)); diff != "" {
			t.Fatalf("%s: fallback bytes (-want +got):\n%s", trial, diff)
		}
		// Reading the damaged part directly reports ErrCorrupt too.
		if ck2, err := s.At(ctx, step); err == nil {
			var perr error
			for _, p := range ck2.Parts {
				if _, err := ck2.ReadAll(ctx, p.Name); err != nil {
					perr = err
				}
			}
			if !errors.Is(perr, checkpoint.ErrCorrupt) {
				t.Fatalf("%s: reading parts = %v, want ErrCorrupt", trial, perr)
			}
		} else if !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("%s: At = %v, want ErrCorrupt", trial, err)
		}
		// Clean up to keep the store small: delete both.
		if err := s.Delete(ctx, step); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, prev); err != nil {
			t.Fatal(err)
		}
	}
}
