package interrupt

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spotcheck/spotcheck/internal/testpeers"
)

// ignoreVolatile drops the fields that depend on when the test ran.
var ignoreVolatile = cmpopts.IgnoreFields(Notice{}, "Detected", "Detail")

// fastAWS polls a test endpoint quickly.
func fastAWS(endpoint string) *AWSOptions {
	return &AWSOptions{Endpoint: endpoint, Interval: 20 * time.Millisecond, EventsInterval: 20 * time.Millisecond,
		RequestTimeout: 2 * time.Second, MaxBackoff: 100 * time.Millisecond}
}

// collector records every notice a Watcher delivers through OnNotice.
type collector struct {
	mu sync.Mutex
	ns []*Notice
}

func (c *collector) add(n *Notice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ns = append(c.ns, n)
}

func (c *collector) all() []*Notice {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Notice(nil), c.ns...)
}

// waitCause waits for ctx to end and returns its notice; it fails the test
// if ctx ends for another reason or not within limit.
func waitCause(t *testing.T, ctx context.Context, limit time.Duration) *Notice {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(limit):
		t.Fatalf("no notice within %v", limit)
	}
	n, ok := FromContext(ctx)
	if !ok {
		t.Fatalf("context ended without a notice: cause %v", context.Cause(ctx))
	}
	return n
}

// TestAWSMockSpot runs the real amazon-ec2-metadata-mock (IMDSv2 only) with
// a spot interruption that appears after a delay, and checks that the
// context's cause carries the mock's action and time.
func TestAWSMockSpot(t *testing.T) {
	deadline := time.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	for _, tc := range []struct {
		action string
		want   Kind
	}{
		{"terminate", KindTerminate},
		{"stop", KindStop},
		{"hibernate", KindHibernate},
	} {
		t.Run(tc.action, func(t *testing.T) {
			t.Parallel()
			started := time.Now()
			mock := testpeers.EC2Metadata(t, "spot", "-a", tc.action, "-d", "1", "-t", deadline.Format(time.RFC3339),
				"--rebalance-delay-sec", "3600")
			var c collector
			w := Watch(context.Background(), &Options{OnNotice: c.add}, AWS(fastAWS(mock.Endpoint)))
			defer w.Stop()
			n := waitCause(t, w.Context(), 30*time.Second)
			want := &Notice{Kind: tc.want, Source: SourceAWS, Deadline: deadline, ID: tc.action}
			if diff := cmp.Diff(want, n, ignoreVolatile); diff != "" {
				t.Errorf("cause (-want +got):\n%s", diff)
			}
			if !strings.Contains(n.Detail, `"action": "`+tc.action+`"`) {
				t.Errorf("Detail %q does not carry the mock's document", n.Detail)
			}
			// The mock serves the notice only after its 1 s delay, counted in
			// whole Unix seconds from its start (which is after started).
			if appear := started.Truncate(time.Second).Add(time.Second); n.Detected.Before(appear) {
				t.Errorf("detected at %v, before the mock's notice appeared (>= %v)", n.Detected, appear)
			}
			if err := w.Stop(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]*Notice{want}, c.all(), ignoreVolatile); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAWSMockRebalance: the rebalance recommendation is advisory: it
// reaches OnNotice and the channel once, and cancels nothing unless asked.
func TestAWSMockRebalance(t *testing.T) {
	mock := testpeers.EC2Metadata(t, "spot", "-d", "3600", "--rebalance-delay-sec", "1")
	want := &Notice{Kind: KindRebalance, Source: SourceAWS, Advisory: true, ID: "rebalance"}
	for _, tc := range []struct {
		name    string
		cancel  func(*Notice) bool
		cancels bool
	}{
		{"default", nil, false},
		{"cancel-on-advisory", func(*Notice) bool { return true }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c collector
			w := Watch(context.Background(), &Options{OnNotice: c.add, Cancel: tc.cancel}, AWS(fastAWS(mock.Endpoint)))
			defer w.Stop()
			var got *Notice
			select {
			case got = <-w.Notices():
			case <-time.After(30 * time.Second):
				t.Fatal("no rebalance notice")
			}
			if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
				t.Errorf("notice (-want +got):\n%s", diff)
			}
			// Let the source poll the recommendation many more times: it
			// must still be delivered once.
			time.Sleep(300 * time.Millisecond)
			if err := w.Stop(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]*Notice{want}, c.all(), ignoreVolatile); diff != "" {
				t.Errorf("OnNotice (-want +got):\n%s", diff)
			}
			n, ok := FromContext(w.Context())
			if ok != tc.cancels {
				t.Errorf("context cancelled by notice = %v (%v), want %v", ok, n, tc.cancels)
			}
		})
	}
}

// TestAWSMockScheduled: active scheduled events become advisory maintenance
// notices with NotBefore as deadline; canceled and completed ones none.
func TestAWSMockScheduled(t *testing.T) {
	notBefore := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	for _, tc := range []struct {
		code, state string
		want        []*Notice
	}{
		{"instance-stop", "active", []*Notice{{Kind: KindMaintenance, Source: SourceAWS, Deadline: notBefore, Advisory: true, ID: "instance-event-1234567890abcdef0"}}},
		{"system-reboot", "active", []*Notice{{Kind: KindMaintenance, Source: SourceAWS, Deadline: notBefore, Advisory: true, ID: "instance-event-1234567890abcdef0"}}},
		{"instance-retirement", "canceled", nil},
		{"instance-stop", "completed", nil},
	} {
		t.Run(tc.code+"-"+tc.state, func(t *testing.T) {
			t.Parallel()
			mock := testpeers.EC2Metadata(t, "events", "-o", tc.code, "-t", tc.state, "-b", notBefore.Format(time.RFC3339))
			p := newMetaProxy(t, mock.Endpoint, nil)
			var c collector
			w := Watch(context.Background(), &Options{OnNotice: c.add}, AWS(fastAWS(p.URL)))
			defer w.Stop()
			// Wait for at least 20 polls of the scheduled events.
			path := "/latest/meta-data/" + awsPathScheduled
			for end := time.Now().Add(30 * time.Second); p.count(path) < 20; {
				if time.Now().After(end) {
					t.Fatalf("only %d polls of %s", p.count(path), path)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := w.Stop(); err != nil {
				t.Fatal(err)
			}
			got := c.all()
			if diff := cmp.Diff(tc.want, got, ignoreVolatile, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
			for _, n := range got {
				if !strings.Contains(n.Detail, tc.code) {
					t.Errorf("Detail %q lacks the event code %q", n.Detail, tc.code)
				}
			}
			if _, ok := FromContext(w.Context()); ok {
				t.Error("a maintenance event cancelled the context")
			}
		})
	}
}

// TestAWSCustomClient: AWSOptions.Client replaces the built-in client.
func TestAWSCustomClient(t *testing.T) {
	deadline := time.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	mock := testpeers.EC2Metadata(t, "spot", "-a", "hibernate", "-t", deadline.Format(time.RFC3339), "--rebalance-delay-sec", "3600")
	client := imds.New(imds.Options{Endpoint: mock.Endpoint})
	ctx, stop := NotifyContext(context.Background(), AWS(&AWSOptions{Client: client, Interval: 20 * time.Millisecond}))
	defer stop()
	n := waitCause(t, ctx, 30*time.Second)
	if diff := cmp.Diff(&Notice{Kind: KindHibernate, Source: SourceAWS, Deadline: deadline, ID: "hibernate"}, n, ignoreVolatile); diff != "" {
		t.Errorf("cause (-want +got):\n%s", diff)
	}
}
