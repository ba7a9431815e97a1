package interrupt

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spotcheck/spotcheck/internal/testpeers"
	"go.uber.org/goleak"
)

// chaosFaults picks a fault for a request: about 40% of requests fail in
// one of the ways a metadata service (or the path to it) fails.
func chaosFaults(r *http.Request) fault {
	x := rand.IntN(100)
	switch {
	case x < 60:
		return pass
	case x < 68:
		return delay
	case x < 70:
		return hang
	case x < 75:
		return reset
	case x < 80:
		return status500
	case x < 83:
		return status503
	case x < 88:
		return status429
	case x < 93:
		return token401
	case x < 97:
		return garbage
	default:
		return truncated
	}
}

// TestAWSChaos puts a fault-injecting proxy in front of the real metadata
// mock and polls through it every 5 ms, so that a few seconds are the
// equivalent of many minutes of polling at the default 1 s: no failure
// may become a notice, and the mock's real notice, which appears after
// its delay, must still be detected, exactly once, with its content.
func TestAWSChaos(t *testing.T) {
	const delaySec = 12
	deadline := time.Now().Add(3 * time.Minute).UTC().Truncate(time.Second)
	started := time.Now()
	mock := testpeers.EC2Metadata(t, "spot", "-a", "terminate", "-d", "12", "-t", deadline.Format(time.RFC3339),
		"--rebalance-delay-sec", "3600")
	proxy := newMetaProxy(t, mock.Endpoint, chaosFaults)
	leaks := goleak.IgnoreCurrent()

	var c collector
	w := Watch(context.Background(), &Options{OnNotice: c.add}, AWS(&AWSOptions{
		Endpoint:       proxy.URL,
		Interval:       5 * time.Millisecond,
		EventsInterval: 5 * time.Millisecond,
		RequestTimeout: 50 * time.Millisecond,
		MaxBackoff:     40 * time.Millisecond,
	}))
	n := waitCause(t, w.Context(), (delaySec+30)*time.Second)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	proxy.Close() // waits for its handlers; then only the watcher could leave goroutines
	goleak.VerifyNone(t, leaks)

	want := &Notice{Kind: KindTerminate, Source: SourceAWS, Deadline: deadline, ID: "terminate"}
	if diff := cmp.Diff([]*Notice{want}, c.all(), ignoreVolatile); diff != "" {
		t.Errorf("notices (-want +got), any extra one is a false notice:\n%s", diff)
	}
	if diff := cmp.Diff(want, n, ignoreVolatile); diff != "" {
		t.Errorf("cause (-want +got):\n%s", diff)
	}
	if appear := started.Truncate(time.Second).Add(delaySec * time.Second); n.Detected.Before(appear) {
		t.Errorf("notice detected at %v, before the mock served it (%v): a false notice", n.Detected, appear)
	}

	polls := proxy.count("/latest/meta-data/" + awsPathInstanceAction)
	tokens := proxy.count("/latest/api/token")
	faults := proxy.faultCounts()
	t.Logf("%d polls of instance-action (= %.0f minutes at the default 1 s interval), %d token requests, faults injected: %v",
		polls, float64(polls)/60, tokens, faults)
	if polls < 300 {
		t.Errorf("only %d polls of instance-action: the chaos did not run long enough", polls)
	}
	if tokens < 2 {
		t.Errorf("%d token requests: the SDK never refreshed its token after a 401", tokens)
	}
	for f := delay; f < numFaults; f++ {
		if faults[f] == 0 {
			t.Errorf("fault %v never injected", f)
		}
	}
}
