package cloudwatchslog_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spotcheck/spotcheck/examples/internal/cloudwatchslog"
)

// BenchmarkHandle measures what a log call costs the training loop: the
// baseline is slog's JSON handler writing to io.Discard; the handler under
// test formats the same JSON and queues it, while its sender ships batches
// to the fake CloudWatch server. dropped/op must stay 0 at this rate.
func BenchmarkHandle(b *testing.B) {
	run := func(b *testing.B, h slog.Handler) {
		log := slog.New(h).With("job", "mnist")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			log.Info("training metrics", "epoch", i/100, "step", i, "loss", 0.125)
			i++
		}
	}
	b.Run("baseline=JSONHandler-discard", func(b *testing.B) {
		run(b, slog.NewJSONHandler(io.Discard, nil))
	})
	b.Run("cloudwatchslog", func(b *testing.B) {
		f, srv := startFakeLogs(b.Errorf)
		defer srv.Close()
		h, err := cloudwatchslog.New(client(srv), &cloudwatchslog.Options{Group: "g", Stream: "s", FlushInterval: time.Second, QueueSize: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		run(b, h)
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			b.Logf("Close: %v", err)
		}
		st := h.Stats()
		b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
		b.ReportMetric(float64(st.Sent)/float64(max(st.Requests, 1)), "events/request")
		_ = f
	})
}
