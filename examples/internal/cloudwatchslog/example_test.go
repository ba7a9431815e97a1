package cloudwatchslog_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spotcheck/spotcheck/examples/internal/cloudwatchslog"
)

// Ship the trainer's log records to CloudWatch Logs as well as to stderr.
// In a real program the client is cloudwatchlogs.NewFromConfig(cfg); here it
// talks to a local server that speaks the CloudWatch Logs protocol.
func Example() {
	fake, srv := startFakeLogs(func(f string, a ...any) { panic(fmt.Sprintf(f, a...)) })
	defer srv.Close()

	cw, err := cloudwatchslog.New(client(srv), &cloudwatchslog.Options{
		Group:         "/spotcheck/trainer",
		Stream:        "run-1",
		FlushInterval: 5 * time.Second,
		OnError:       func(err error) { fmt.Fprintln(os.Stderr, "cloudwatch:", err) },
	})
	if err != nil {
		panic(err)
	}
	log := slog.New(slog.NewMultiHandler(slog.NewJSONHandler(os.Stderr, nil), cw))

	log.Info("training metrics", "epoch", 3, "loss", 0.12)
	log.Warn("spot interruption", "epoch", 3, "checkpoints_saved", 4)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cw.Close(ctx); err != nil {
		fmt.Println("close:", err)
	}
	st := cw.Stats()
	fmt.Printf("sent %d, lost %d, in %d request(s); the stream holds %d events\n",
		st.Sent, st.Lost(), st.Requests, len(fake.events("/spotcheck/trainer", "run-1")))
	// Output: sent 2, lost 0, in 1 request(s); the stream holds 2 events
}
