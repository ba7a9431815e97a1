package interrupt

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// gceMetadata is an httptest server that speaks the Compute Engine
// metadata server's documented wire format for the values we watch:
// header Metadata-Flavor: Google required on requests and sent on
// responses, an ETag per value, and wait_for_change=true long polls that
// return as soon as the value's ETag differs from last_etag (or, without
// last_etag, on the next change), or after timeout_sec with the same value.
type gceMetadata struct {
	srv *httptest.Server
	mu  sync.Mutex
	val map[string]string
	gen map[string]int
	chg chan struct{} // closed and replaced on every change
	// requests per path, and the last_etag values seen
	reqs     map[string]int
	etags    map[string][]string
	waiting  map[string]int // long polls currently held, per path
	served   map[string][]string
	failNext int // answer the next failNext requests with 503
	noFlavor int // answer the next noFlavor requests without Metadata-Flavor
	hangNext int // hold the next hangNext requests until the client gives up
}

func newGCEMetadata(t *testing.T) *gceMetadata {
	g := &gceMetadata{
		val:     map[string]string{gcpPathPreempted: "FALSE", gcpPathMaintenance: "NONE", "instance/id": "4520031799277581759"},
		gen:     map[string]int{},
		chg:     make(chan struct{}),
		reqs:    map[string]int{},
		etags:   map[string][]string{},
		waiting: map[string]int{},
		served:  map[string][]string{},
	}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *gceMetadata) host() string { return strings.TrimPrefix(g.srv.URL, "http://") }

func (g *gceMetadata) etag(path string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", path, g.val[path], g.gen[path])
	return fmt.Sprintf("%016x", h.Sum64())
}

func (g *gceMetadata) set(path, v string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.val[path] = v
	g.gen[path]++
	close(g.chg)
	g.chg = make(chan struct{})
}

// waitHeld waits until a long poll on path is being held by the server.
func (g *gceMetadata) waitHeld(t *testing.T, path string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; {
		g.mu.Lock()
		n := g.waiting[path]
		g.mu.Unlock()
		if n > 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no long poll held on %s", path)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitServed waits until the server has answered v on path, and a new
// long poll is held after that answer.
func (g *gceMetadata) waitServed(t *testing.T, path, v string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; {
		g.mu.Lock()
		s := g.served[path]
		ok := len(s) > 0 && s[len(s)-1] == v && g.waiting[path] > 0
		g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("server never answered %s=%s followed by a held poll", path, v)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (g *gceMetadata) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")
	q := r.URL.Query()
	g.mu.Lock()
	g.reqs[path]++
	if _, ok := g.val[path]; !ok {
		g.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	if g.failNext > 0 {
		g.failNext--
		g.mu.Unlock()
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if g.hangNext > 0 {
		g.hangNext--
		g.mu.Unlock()
		<-r.Context().Done()
		return
	}
	flavor := true
	if g.noFlavor > 0 {
		g.noFlavor--
		flavor = false
	}
	if q.Get("wait_for_change") == "true" {
		last := q.Get("last_etag")
		g.etags[path] = append(g.etags[path], last)
		timeout := 3600 * time.Second
		if s := q.Get("timeout_sec"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				g.mu.Unlock()
				http.Error(w, "bad timeout_sec", http.StatusBadRequest)
				return
			}
			timeout = time.Duration(n) * time.Second
		}
		start := g.etag(path)
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		for (last == "" && g.etag(path) == start) || (last != "" && g.etag(path) == last) {
			ch := g.chg
			g.waiting[path]++
			g.mu.Unlock()
			var done bool
			select {
			case <-ch:
			case <-timer.C:
				done = true
			case <-r.Context().Done():
				g.mu.Lock()
				g.waiting[path]--
				g.mu.Unlock()
				return
			}
			g.mu.Lock()
			g.waiting[path]--
			if done {
				break
			}
		}
	}
	v, tag := g.val[path], g.etag(path)
	g.served[path] = append(g.served[path], v)
	g.mu.Unlock()
	if flavor {
		w.Header().Set("Metadata-Flavor", "Google")
	}
	w.Header().Set("ETag", tag)
	w.Header().Set("Content-Type", "application/text")
	_, _ = io.WriteString(w, v)
}

func fastGCP(g *gceMetadata) *GCPOptions {
	return &GCPOptions{Host: g.host(), WaitTimeout: time.Second, RequestTimeout: 500 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
}

// TestGCPPreempted: the value flips while a long poll is held; the poll
// returns at once and the notice's deadline is detection + 30 s.
func TestGCPPreempted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := newGCEMetadata(t)
	defer g.srv.Close()
	w := Watch(context.Background(), nil, GCP(fastGCP(g)))
	defer w.Stop()
	g.waitHeld(t, gcpPathPreempted)
	g.set(gcpPathPreempted, "TRUE")
	n := waitCause(t, w.Context(), 10*time.Second)
	want := &Notice{Kind: KindTerminate, Source: SourceGCP, Deadline: n.Detected.Add(30 * time.Second), Detected: n.Detected,
		ID: "TRUE#0", Detail: "instance/preempted=TRUE"}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("notice (-want +got):\n%s", diff)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	// One plain read, then long polls carrying the ETag of what was read.
	// A poller that spins would have made many more requests.
	if got := g.reqs[gcpPathPreempted]; got > 4 {
		t.Errorf("%d requests to instance/preempted: not long-polling", got)
	}
	tags := g.etags[gcpPathPreempted]
	if len(tags) == 0 || tags[0] == "" {
		t.Errorf("long polls carried last_etag %q, want the ETag of the first read", tags)
	}
}

func TestGCPMaintenance(t *testing.T) {
	g := newGCEMetadata(t)
	var c collector
	w := Watch(context.Background(), &Options{OnNotice: c.add}, GCP(fastGCP(g)))
	defer w.Stop()
	next := func(want int) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); len(c.all()) < want; {
			if time.Now().After(end) {
				t.Fatalf("got %d notices, want %d", len(c.all()), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	g.waitHeld(t, gcpPathMaintenance)
	g.set(gcpPathMaintenance, "MIGRATE_ON_HOST_MAINTENANCE")
	next(1)
	g.set(gcpPathMaintenance, "NONE")
	g.waitServed(t, gcpPathMaintenance, "NONE")
	g.set(gcpPathMaintenance, "MIGRATE_ON_HOST_MAINTENANCE") // a second, later migration
	next(2)
	if _, ok := FromContext(w.Context()); ok {
		t.Fatal("a live migration cancelled the context")
	}
	g.set(gcpPathMaintenance, "TERMINATE_ON_HOST_MAINTENANCE")
	n := waitCause(t, w.Context(), 10*time.Second)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	want := []*Notice{
		{Kind: KindMaintenance, Source: SourceGCP, Advisory: true, ID: "MIGRATE_ON_HOST_MAINTENANCE#0"},
		{Kind: KindMaintenance, Source: SourceGCP, Advisory: true, ID: "MIGRATE_ON_HOST_MAINTENANCE#1"},
		{Kind: KindMaintenance, Source: SourceGCP, Deadline: n.Detected.Add(time.Minute), ID: "TERMINATE_ON_HOST_MAINTENANCE#1"},
	}
	if diff := cmp.Diff(want, c.all(), ignoreVolatile); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
}

// TestGCPFaults: 503s, a response without Metadata-Flavor, unexpected
// values and a hanging request are retried and never become a notice;
// the real preemption afterwards is detected.
func TestGCPFaults(t *testing.T) {
	g := newGCEMetadata(t)
	g.failNext, g.noFlavor, g.hangNext = 5, 3, 2
	g.val[gcpPathPreempted] = "MAYBE"
	g.val[gcpPathMaintenance] = "SOMETHING_NEW"
	var c collector
	w := Watch(context.Background(), &Options{OnNotice: c.add}, GCP(fastGCP(g)))
	defer w.Stop()
	// Wait until every injected fault has been served (hung requests end
	// when the client gives up), and then for a few more answers.
	for end := time.Now().Add(30 * time.Second); ; {
		g.mu.Lock()
		left := g.failNext + g.noFlavor + g.hangNext
		g.mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d injected faults not consumed", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.mu.Lock()
	served := len(g.served[gcpPathPreempted])
	g.mu.Unlock()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		g.mu.Lock()
		n := len(g.served[gcpPathPreempted])
		g.mu.Unlock()
		if n >= served+3 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("no answers after the faults")
		}
	}
	if got := c.all(); len(got) != 0 {
		t.Fatalf("false notices: %v", got)
	}
	g.set(gcpPathMaintenance, "NONE")
	g.set(gcpPathPreempted, "TRUE")
	n := waitCause(t, w.Context(), 10*time.Second)
	if n.Kind != KindTerminate || n.Source != SourceGCP {
		t.Errorf("notice = %v, want a GCP terminate", n)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := len(c.all()); got != 1 {
		t.Errorf("%d notices, want 1: %v", got, c.all())
	}
}

func TestGCPHostFromEnv(t *testing.T) {
	g := newGCEMetadata(t)
	g.val[gcpPathPreempted] = "TRUE"
	t.Setenv("GCE_METADATA_HOST", g.host())
	o := fastGCP(g)
	o.Host = ""
	ctx, stop := NotifyContext(context.Background(), GCP(o))
	defer stop()
	n := waitCause(t, ctx, 10*time.Second)
	if n.Source != SourceGCP {
		t.Errorf("notice = %v", n)
	}
	if u, _ := url.Parse(g.srv.URL); u.Host != g.host() {
		t.Fatal("host mismatch")
	}
}
