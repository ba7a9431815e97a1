package interrupt

import (
	"context"
	"flag"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

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

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchCPU measures the CPU time this process spends watching the
// real mock (no notice, every path answering 404) at the default interval,
// over -interrupt.cpuwatch, extrapolated to an hour; beside the naive
// baseline (one path, same interval).
func BenchmarkWatchCPU(b *testing.B) {
	for _, bc := range []struct {
		name  string
		naive bool
	}{
		{"interrupt/default", false},
		{"baseline-naive/interval=1s", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mock := testpeers.EC2Metadata(b, "spot", "-d", "36000", "--rebalance-delay-sec", "36000")
			var cpu, wall time.Duration
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				var stop func()
				c0, t0 := cpuTime(), time.Now()
				if bc.naive {
					done := naiveWatch(ctx, mock.Endpoint, time.Second)
					stop = func() { cancel(); <-done }
				} else {
					w := Watch(ctx, nil, AWS(&AWSOptions{Endpoint: mock.Endpoint}))
					stop = func() { _ = w.Stop(); cancel() }
				}
				time.Sleep(*cpuWatch)
				stop()
				cpu += cpuTime() - c0
				wall += time.Since(t0)
			}
			b.ReportMetric(cpu.Seconds()/wall.Hours(), "cpu-s/hour")
		})
	}
}
