package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spotcheck/spotcheck/interrupt"
	"golang.org/x/term"
)

// Exit codes. A supervisor (a Kubernetes Job, a systemd unit with
// Restart=on-failure, a shell loop) should run the trainer again after
// exitInterrupted: it resumes from the checkpoint it just saved.
const (
	exitOK          = 0
	exitError       = 1  // something is wrong; running again will not help
	exitUsage       = 2  // bad flags
	exitInterrupted = 75 // EX_TEMPFAIL: interrupted, state saved, reschedule me
)

// errInterrupted is returned by train when a notice stopped the run.
var errInterrupted = errors.New("training interrupted")

type options struct {
	Store       string
	Steps       int64
	Seed        uint64
	Batch       int
	LR          float64
	Hidden      []int
	Every       int64
	MTBF        time.Duration
	Keep        int
	InterruptAt int64
	Async       bool
	Plot        string
	Detect      bool
	Grace       time.Duration
	Margin      time.Duration
	Progress    string // "auto", "bar", "json"
	LogEvery    int64
	// CloudWatch Logs (off unless CWGroup is set): every log record is also
	// shipped, in batches, through examples/internal/cloudwatchslog.
	CWGroup    string
	CWStream   string
	CWEndpoint string
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so that tests can call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	useBar := o.Progress == "bar"
	if o.Progress == "auto" {
		f, ok := stderr.(*os.File)
		useBar = ok && term.IsTerminal(int(f.Fd()))
	}
	t := &trainer{opts: o, stdout: stdout}
	if useBar {
		t.bar = progressbar.NewOptions64(o.Steps,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("training"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("steps"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		t.log = slog.New(slog.NewTextHandler(&barWriter{bar: t.bar, w: stderr}, nil))
	} else {
		t.log = slog.New(slog.NewJSONHandler(stderr, nil))
	}
	if o.CWGroup != "" {
		cw, err := openCloudWatch(ctx, o)
		if err != nil {
			t.log.Error("cloudwatch logs", "err", err)
			return exitError
		}
		t.log = slog.New(slog.NewMultiHandler(t.log.Handler(), cw))
		defer func() {
			// Ship what is queued; a failure is reported, not fatal: the
			// checkpoint, not the log, is what must survive.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := cw.Close(cctx); err != nil {
				fmt.Fprintf(stderr, "cloudwatch logs: %v\n", err)
			}
		}()
	}
	err = t.train(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	default:
		t.log.Error("training failed", "err", err)
		return exitError
	}
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{Hidden: []int{64, 32}}
	fs := flag.NewFlagSet("trainer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: trainer [flags]

Trains a multilayer perceptron on the 8x8 handwritten digits and survives
interruptions: it checkpoints to -store, stops at a step boundary on a spot
interruption notice or SIGTERM/SIGINT, saves, and exits with status 75
(EX_TEMPFAIL). Run it again with the same flags and it resumes bit-exactly.

Exit status: 0 done, 1 error, 2 bad flags, 75 interrupted (state saved; run again).

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Store, "store", "checkpoints", "checkpoint store: a bucket URL (file:///abs/dir, s3://bucket?region=..., gs://..., mem://) or a local directory")
	fs.Int64Var(&o.Steps, "steps", 12000, "train until this optimizer step")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed for the train/test split, the initial weights and the data order")
	fs.IntVar(&o.Batch, "batch", 32, "mini-batch size")
	fs.Float64Var(&o.LR, "lr", 1e-3, "Adam learning rate")
	fs.Int64Var(&o.Every, "every", 0, "checkpoint every this many steps (0: Young/Daly schedule from the measured save cost and -mtbf)")
	fs.DurationVar(&o.MTBF, "mtbf", 10*time.Minute, "expected time between interruptions, for the Young/Daly schedule (e.g. from the pricing package's interruption data)")
	fs.IntVar(&o.Keep, "keep", 3, "keep this many newest checkpoints")
	fs.Int64Var(&o.InterruptAt, "interrupt-at", 0, "simulate an interruption notice after this step (0: never)")
	fs.BoolVar(&o.Async, "async", true, "save periodic checkpoints in the background while training continues")
	fs.StringVar(&o.Plot, "plot", "loss.png", "write the loss curve to this PNG file (empty: none)")
	fs.BoolVar(&o.Detect, "detect", true, "detect the cloud (AWS, GCP, Azure metadata) and watch its interruption notices; SIGTERM/SIGINT are always watched")
	fs.DurationVar(&o.Grace, "grace", 30*time.Second, "time a signal leaves before the process is killed (Kubernetes terminationGracePeriodSeconds)")
	fs.DurationVar(&o.Margin, "margin", 2*time.Second, "finish the emergency checkpoint this long before the notice's deadline")
	fs.StringVar(&o.Progress, "progress", "auto", "progress output: bar (terminal), json (log/slog JSON lines on stderr), auto")
	fs.Int64Var(&o.LogEvery, "log-every", 0, "in JSON mode, log progress every this many steps (0: -steps/10)")
	fs.StringVar(&o.CWGroup, "cloudwatch-group", "", "also send every log record to this CloudWatch Logs group, in batches (off when empty; AWS credentials from the standard chain)")
	fs.StringVar(&o.CWStream, "cloudwatch-stream", "", "CloudWatch Logs stream (default: trainer-<host>-<start time>)")
	fs.StringVar(&o.CWEndpoint, "cloudwatch-endpoint", "", "CloudWatch Logs endpoint URL (tests, emulators; default: the region's)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.LogEvery <= 0 {
		o.LogEvery = max(o.Steps/10, 1)
	}
	var bad []string
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Sprintf("unexpected arguments %q", fs.Args()))
	}
	if o.Steps <= 0 {
		bad = append(bad, fmt.Sprintf("-steps %d must be positive", o.Steps))
	}
	if o.Batch <= 0 || o.Batch > 512 {
		bad = append(bad, fmt.Sprintf("-batch %d must be in 1..512", o.Batch))
	}
	if !(o.LR > 0) {
		bad = append(bad, fmt.Sprintf("-lr %g must be positive", o.LR))
	}
	if o.Every < 0 {
		bad = append(bad, fmt.Sprintf("-every %d must not be negative", o.Every))
	}
	if o.Keep < 1 {
		bad = append(bad, fmt.Sprintf("-keep %d must be at least 1", o.Keep))
	}
	if o.MTBF <= 0 {
		bad = append(bad, fmt.Sprintf("-mtbf %v must be positive", o.MTBF))
	}
	switch o.Progress {
	case "auto", "bar", "json":
	default:
		bad = append(bad, fmt.Sprintf("-progress %q must be auto, bar or json", o.Progress))
	}
	if len(bad) > 0 {
		err := errors.New(strings.Join(bad, "; "))
		fmt.Fprintln(stderr, "trainer:", err)
		return nil, err
	}
	return o, nil
}

// storeURL turns a plain directory into a file:// URL; URLs pass unchanged.
func storeURL(s string) (string, error) {
	if strings.Contains(s, "://") {
		return s, nil
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return "file://" + filepath.ToSlash(abs), nil
}

// barWriter clears the progress bar before a log line so they do not mix.
type barWriter struct {
	bar *progressbar.ProgressBar
	w   io.Writer
}

func (b *barWriter) Write(p []byte) (int, error) {
	_ = b.bar.Clear()
	return b.w.Write(p)
}

// simulated is an interrupt.Source that reports a notice when the training
// loop reaches -interrupt-at: the demo and test stand-in for a cloud notice.
type simulated struct {
	grace time.Duration
	fire  chan int64
}

func (*simulated) Name() string { return "simulated" }

func (s *simulated) Watch(ctx context.Context, report func(*interrupt.Notice)) error {
	select {
	case step := <-s.fire:
		now := time.Now()
		report(&interrupt.Notice{
			Kind: interrupt.KindTerminate, Source: "simulated", ID: fmt.Sprintf("interrupt-at-%d", step),
			Detected: now, Deadline: now.Add(s.grace), Detail: fmt.Sprintf("-interrupt-at %d", step),
		})
		<-ctx.Done()
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}
