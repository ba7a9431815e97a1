package interrupt

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/spotcheck/spotcheck/internal/testpeers"
)

var (
	latencyTrials = flag.Int("interrupt.trials", 50, "detection-latency trials per benchmark iteration")
	cpuWatch      = flag.Duration("interrupt.cpuwatch", 30*time.Second, "how long BenchmarkWatchCPU watches")
)

// spotMock starts the real mock with a terminate notice served at once,
// behind a proxy whose gate hides it until the trial opens the gate, so
// that the moment the notice appears is known to the nanosecond.
func spotMock(b *testing.B) *metaProxy {
	deadline := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	mock := testpeers.EC2Metadata(b, "spot", "-a", "terminate", "-t", deadline.Format(time.RFC3339), "--rebalance-delay-sec", "36000")
	p := newMetaProxy(b, mock.Endpoint, nil)
	p.gated.Store(true)
	return p
}

// naiveWatch is the baseline: the seed tutorial's loop (GET
// spot/instance-action every interval, a 200 means "interrupted"), given
// an IMDSv2 token so that it works at all against an IMDSv2-only service
// (the seed's tokenless IMDSv1 request gets 401 there and never fires).
func naiveWatch(ctx context.Context, endpoint string, interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		client := &http.Client{Timeout: 2 * time.Second}
		defer client.CloseIdleConnections()
		token := ""
		for ctx.Err() == nil {
			if token == "" {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPut, endpoint+"/latest/api/token", nil)
				req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600")
				if resp, err := client.Do(req); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					token = string(b)
				}
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/latest/meta-data/spot/instance-action", nil)
			req.Header.Set("X-aws-ec2-metadata-token", token)
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
			}
			sleep(ctx, interval)
		}
	}()
	return done
}

// BenchmarkDetectionLatency measures the time from the moment the spot
// notice appears (the gate in front of the real mock opens) to ctx.Done,
// over -interrupt.trials trials per iteration, each opening the gate at a
// random phase of the poll cycle. Run with -benchtime=1x.
func BenchmarkDetectionLatency(b *testing.B) {
	for _, bc := range []struct {
		name     string
		interval time.Duration
		naive    bool
	}{
		{"interrupt/interval=1s", time.Second, false},
		{"interrupt/interval=100ms", 100 * time.Millisecond, false},
		{"baseline-naive/interval=1s", time.Second, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := spotMock(b)
			var lat []time.Duration
			for b.Loop() {
				for range *latencyTrials {
					p.gated.Store(true)
					ctx, cancel := context.WithCancel(context.Background())
					var done <-chan struct{}
					var stop func()
					if bc.naive {
						done, stop = naiveWatch(ctx, p.URL, bc.interval), cancel
					} else {
						w := Watch(ctx, nil, AWS(&AWSOptions{Endpoint: p.URL, Interval: bc.interval}))
						done, stop = w.Context().Done(), func() { _ = w.Stop(); cancel() }
					}
					// Open the gate at a random phase, after the first poll.
					time.Sleep(bc.interval + rand.N(bc.interval))
					opened := p.openGate()
					select {
					case <-done:
					case <-time.After(10 * bc.interval):
						b.Fatal("notice not detected")
					}
					lat = append(lat, time.Since(opened))
					stop()
				}
			}
			slices.Sort(lat)
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e6 }
			b.ReportMetric(q(0.50), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
			b.ReportMetric(q(0.99)/float64(bc.interval/time.Millisecond), "p99/interval")
			b.ReportMetric(float64(len(lat)), "trials")
		})
	}
}

// TestCPUChild is not a test: it is the body of the child process that
// BenchmarkWatchCPU starts (os/exec's helper-process pattern), so that the
// CPU time measured is the watcher's alone, not the test harness's (which
// also reads the mock's log). It does nothing unless the benchmark set
// INTERRUPT_CPU_CHILD.
func TestCPUChild(t *testing.T) {
	mode := os.Getenv("INTERRUPT_CPU_CHILD")
	if mode == "" {
		return
	}
	endpoint := os.Getenv("INTERRUPT_CPU_ENDPOINT")
	d, err := time.ParseDuration(os.Getenv("INTERRUPT_CPU_DURATION"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	switch mode {
	case "interrupt":
		w := Watch(ctx, nil, AWS(&AWSOptions{Endpoint: endpoint}))
		<-ctx.Done()
		_ = w.Stop()
	case "interrupt-events=1s":
		w := Watch(ctx, nil, AWS(&AWSOptions{Endpoint: endpoint, EventsInterval: time.Second}))
		<-ctx.Done()
		_ = w.Stop()
	case "naive":
		<-naiveWatch(ctx, endpoint, time.Second)
	case "idle":
		<-ctx.Done()
	default:
		t.Fatalf("unknown mode %q", mode)
	}
}

// childCPU runs TestCPUChild in a fresh process and returns its CPU time.
func childCPU(b *testing.B, mode, endpoint string, d time.Duration) time.Duration {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "INTERRUPT_CPU_CHILD="+mode, "INTERRUPT_CPU_ENDPOINT="+endpoint, "INTERRUPT_CPU_DURATION="+d.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// BenchmarkWatchCPU measures the CPU time of a process that does nothing
// but watch the real mock (no notice: every path answers 404) for
// -interrupt.cpuwatch, minus that of an idle process living as long,
// extrapolated to an hour: at the default settings (spot/instance-action
// every second, the two event paths every 10 s), with all three paths every
// second (as aws-node-termination-handler polls, at 2 s), and for the naive
// baseline (one path every second, plain net/http).
func BenchmarkWatchCPU(b *testing.B) {
	mock := testpeers.EC2Metadata(b, "spot", "-d", "36000", "--rebalance-delay-sec", "36000")
	idle := childCPU(b, "idle", mock.Endpoint, *cpuWatch)
	b.Logf("idle process: %v CPU over %v", idle, *cpuWatch)
	for _, mode := range []string{"interrupt", "interrupt-events=1s", "naive"} {
		b.Run(mode, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				cpu = childCPU(b, mode, mock.Endpoint, *cpuWatch) - idle
			}
			b.ReportMetric(cpu.Seconds()/cpuWatch.Hours(), "cpu-s/hour")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPoll is the cost of one poll of spot/instance-action (a 404)
// back to back, through the SDK as the AWS source does it, beside the same
// request with plain net/http (baseline). cpu-us/op includes the harness
// reading the mock's request log, equally for both.
func BenchmarkPoll(b *testing.B) {
	mock := testpeers.EC2Metadata(b, "spot", "-d", "36000", "--rebalance-delay-sec", "36000")
	ctx := context.Background()
	b.Run("imds-sdk", func(b *testing.B) {
		tr, closeAll := metadataTransport(time.Second)
		defer closeAll()
		c := imds.New(imds.Options{Endpoint: mock.Endpoint, HTTPClient: &http.Client{Transport: tr}, Retryer: aws.NopRetryer{}})
		s := &awsSource{opts: (&AWSOptions{Endpoint: mock.Endpoint}).withDefaults()}
		c0 := cpuTime()
		for b.Loop() {
			if _, found, err := s.get(ctx, c, awsPathInstanceAction); err != nil || found {
				b.Fatal(err, found)
			}
		}
		b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(b.N), "cpu-us/op")
	})
	b.Run("baseline-net-http", func(b *testing.B) {
		tr, closeAll := metadataTransport(time.Second)
		defer closeAll()
		client := &http.Client{Transport: tr}
		req, _ := http.NewRequest(http.MethodPut, mock.Endpoint+"/latest/api/token", nil)
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "21600")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		token, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c0 := cpuTime()
		for b.Loop() {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			req, _ := http.NewRequestWithContext(rctx, http.MethodGet, mock.Endpoint+"/latest/meta-data/spot/instance-action", nil)
			req.Header.Set("X-aws-ec2-metadata-token", string(token))
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			cancel()
			if resp.StatusCode != http.StatusNotFound {
				b.Fatal(resp.Status)
			}
		}
		b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(b.N), "cpu-us/op")
	})
}
