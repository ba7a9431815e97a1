package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"
)

// BenchmarkCheckpointOverhead measures the wall time of a whole training
// run (the default 12000 steps) with checkpoints against the same run
// without periodic checkpoints (only the final save, which both have).
// Each iteration runs the baseline and the variant back to back on fresh
// local stores, so machine load affects both alike; the reported
// overhead-% is (variant - baseline) / baseline over all iterations.
//
//	go test -run='^$' -bench=CheckpointOverhead -benchtime=3x ./trainer
//
// The variants: the default schedule (Young/Daly with -mtbf 10m) async and
// sync; every 100 steps (about 10 checkpoints a second) async and sync, to
// show what async buys when checkpoints are far too frequent.
func BenchmarkCheckpointOverhead(b *testing.B) {
	const steps = 12000
	variants := []struct {
		name string
		args []string
	}{
		{"default-schedule-async", nil}, // Young/Daly, MTBF 1h, async (the defaults)
		{"default-schedule-sync", []string{"-async=false"}},
		{"every-100-async", []string{"-every", "100"}},
		{"every-100-sync", []string{"-every", "100", "-async=false"}},
	}
	runOnce := func(b *testing.B, extra []string) (time.Duration, int, time.Duration) {
		args := append([]string{"-store", b.TempDir(), "-steps", strconv.Itoa(steps), "-plot", "",
			"-progress", "json", "-log-every", strconv.Itoa(steps), "-detect=false"}, extra...)
		var stderr bytes.Buffer
		began := time.Now()
		if code := run(context.Background(), args, io.Discard, &stderr); code != exitOK {
			b.Fatalf("trainer %q: exit status %d\n%s", args, code, stderr.String())
		}
		took := time.Since(began)
		for _, line := range bytes.Split(stderr.Bytes(), []byte("\n")) {
			var r logRecord
			if json.Unmarshal(line, &r) == nil && r.msg() == "done" {
				blocked, err := time.ParseDuration(r["checkpoint_blocked"].(string))
				if err != nil {
					b.Fatal(err)
				}
				return took, int(r.int("periodic_checkpoints")), blocked
			}
		}
		b.Fatalf("no done record:\n%s", stderr.String())
		return 0, 0, 0
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var base, with, blocked time.Duration
			saves := 0
			for b.Loop() {
				d, _, _ := runOnce(b, []string{"-every", strconv.Itoa(10 * steps)})
				base += d
				d, n, bl := runOnce(b, v.args)
				with += d
				saves += n
				blocked += bl
			}
			// blocked-% is the share of the run the training loop spent
			// in checkpoint calls (CheckFreq's stall); it is much less
			// sensitive to machine load than the wall-time difference.
			b.ReportMetric(100*blocked.Seconds()/with.Seconds(), "blocked-%")
			b.ReportMetric(float64(saves)/float64(b.N), "ckpts/run")
			b.ReportMetric(100*(with.Seconds()-base.Seconds())/base.Seconds(), "overhead-%")
			b.ReportMetric(base.Seconds()/float64(b.N), "baseline-s/run")
			b.ReportMetric(with.Seconds()/float64(b.N), "with-ckpt-s/run")
		})
	}
}
