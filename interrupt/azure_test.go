package interrupt

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

// azureEventJSON is one event in the wire format of Scheduled Events
// api-version 2020-07-01.
type azureEventJSON struct {
	EventId           string
	EventType         string
	ResourceType      string
	Resources         []string
	EventStatus       string
	NotBefore         string
	Description       string
	EventSource       string
	DurationInSeconds int
}

// azureIMDS is an httptest server for Azure Scheduled Events: header
// Metadata: true required, api-version required, a DocumentIncarnation
// that increments on every change, and StartRequests acknowledgements that
// start (then remove) the acknowledged events.
type azureIMDS struct {
	srv         *httptest.Server
	mu          sync.Mutex
	incarnation int64
	events      []azureEventJSON
	acked       []string
	gets        int
	failNext    int      // answer 500
	rawNext     []string // answer these bodies next (malformed documents)
}

func newAzureIMDS(t *testing.T) *azureIMDS {
	a := &azureIMDS{incarnation: 1}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *azureIMDS) setEvents(evs ...azureEventJSON) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = evs
	a.incarnation++
}

func (a *azureIMDS) getCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gets
}

func (a *azureIMDS) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Metadata") != "true" {
		http.Error(w, `{"error":"Bad request. Required metadata header not specified"}`, http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		http.Error(w, `{"error":"Bad request. api-version was not specified in the request."}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case r.URL.Path == "/metadata/instance/compute/name" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, "vm1")
	case r.URL.Path == "/metadata/instance/compute/vmId" && r.Method == http.MethodGet:
		_, _ = io.WriteString(w, "02aab8a4-74ef-476e-8182-f6d2ba4166a6")
	case r.URL.Path == "/metadata/scheduledevents" && r.Method == http.MethodGet:
		a.gets++
		if a.failNext > 0 {
			a.failNext--
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		if len(a.rawNext) > 0 {
			body := a.rawNext[0]
			a.rawNext = a.rawNext[1:]
			_, _ = io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		evs := a.events
		if evs == nil {
			evs = []azureEventJSON{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"DocumentIncarnation": a.incarnation, "Events": evs})
	case r.URL.Path == "/metadata/scheduledevents" && r.Method == http.MethodPost:
		var body struct{ StartRequests []struct{ EventId string } }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.StartRequests) == 0 {
			http.Error(w, "bad StartRequests", http.StatusBadRequest)
			return
		}
		for _, s := range body.StartRequests {
			i := slices.IndexFunc(a.events, func(e azureEventJSON) bool { return e.EventId == s.EventId })
			if i < 0 {
				http.Error(w, "unknown EventId "+s.EventId, http.StatusBadRequest)
				return
			}
			a.acked = append(a.acked, s.EventId)
			a.events = slices.Delete(slices.Clone(a.events), i, i+1) // the event starts, then leaves the document
		}
		a.incarnation++
	default:
		http.NotFound(w, r)
	}
}

func fastAzure(a *azureIMDS) *AzureOptions {
	return &AzureOptions{Endpoint: a.srv.URL, Interval: 5 * time.Millisecond, RequestTimeout: time.Second, MaxBackoff: 20 * time.Millisecond}
}

// waitGets waits until the server has answered n more polls.
func (a *azureIMDS) waitGets(t *testing.T, n int) {
	t.Helper()
	target := a.getCount() + n
	for end := time.Now().Add(10 * time.Second); a.getCount() < target; {
		if time.Now().After(end) {
			t.Fatalf("server saw %d polls, want %d", a.getCount(), target)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAzurePreemptAndAck(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	a := newAzureIMDS(t)
	defer a.srv.Close()
	notBefore := time.Date(2026, 12, 2, 11, 0, 30, 0, time.UTC)
	src := Azure(fastAzure(a))
	var c collector
	w := Watch(context.Background(), &Options{OnNotice: c.add}, src)
	defer w.Stop()
	a.waitGets(t, 3)
	a.setEvents(
		azureEventJSON{EventId: "A123-other", EventType: "Preempt", ResourceType: "VirtualMachine", Resources: []string{"vm2"},
			EventStatus: "Scheduled", NotBefore: "Wed, 02 Dec 2026 11:00:30 GMT", EventSource: "Platform", DurationInSeconds: -1},
		azureEventJSON{EventId: "B456-mine", EventType: "Preempt", ResourceType: "VirtualMachine", Resources: []string{"vm1"},
			EventStatus: "Scheduled", NotBefore: "Wed, 02 Dec 2026 11:00:30 GMT", EventSource: "Platform", DurationInSeconds: -1},
	)
	n := waitCause(t, w.Context(), 10*time.Second)
	want := &Notice{Kind: KindTerminate, Source: SourceAzure, Deadline: notBefore, ID: "B456-mine"}
	if diff := cmp.Diff(want, n, ignoreVolatile); diff != "" {
		t.Errorf("notice (-want +got):\n%s", diff)
	}
	if err := src.Ack(context.Background(), n.ID); err != nil {
		t.Fatal(err)
	}
	a.waitGets(t, 5)
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*Notice{want}, c.all(), ignoreVolatile); diff != "" {
		t.Errorf("notices (-want +got); the other VM's event must not appear:\n%s", diff)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if diff := cmp.Diff([]string{"B456-mine"}, a.acked); diff != "" {
		t.Errorf("acknowledged (-want +got):\n%s", diff)
	}
	if err := src.Ack(context.Background(), "no-such-event"); err == nil {
		t.Error("Ack of an unknown event succeeded")
	}
}

// TestAzureLifecycle: an event moves Scheduled -> Started and leaves the
// document; each event is delivered once, with the kind and finality its
// type and the options give it.
func TestAzureLifecycle(t *testing.T) {
	notBefore := "Wed, 02 Dec 2026 11:10:00 GMT"
	nb := time.Date(2026, 12, 2, 11, 10, 0, 0, time.UTC)
	ev := func(id, typ, status, notBefore string) azureEventJSON {
		return azureEventJSON{EventId: id, EventType: typ, ResourceType: "VirtualMachine", Resources: []string{"vm1"},
			EventStatus: status, NotBefore: notBefore, EventSource: "Platform", DurationInSeconds: 15}
	}
	for _, tc := range []struct {
		name   string
		opts   func(*AzureOptions)
		steps  [][]azureEventJSON
		want   []*Notice
		cancel bool
	}{
		{"reboot advisory through its lifecycle", nil,
			[][]azureEventJSON{{ev("r1", "Reboot", "Scheduled", notBefore)}, {ev("r1", "Reboot", "Started", "")}, {}},
			[]*Notice{{Kind: KindMaintenance, Source: SourceAzure, Deadline: nb, Advisory: true, ID: "r1"}}, false},
		{"freeze made final by option", func(o *AzureOptions) { o.Final = []string{"Freeze", "Preempt"} },
			[][]azureEventJSON{{ev("f1", "Freeze", "Scheduled", notBefore)}},
			[]*Notice{{Kind: KindMaintenance, Source: SourceAzure, Deadline: nb, ID: "f1"}}, true},
		{"terminate final", nil,
			[][]azureEventJSON{{ev("t1", "Terminate", "Scheduled", notBefore)}, {ev("t1", "Terminate", "Started", "")}},
			[]*Notice{{Kind: KindTerminate, Source: SourceAzure, Deadline: nb, ID: "t1"}}, true},
		{"started without NotBefore: deadline is now", nil,
			[][]azureEventJSON{{ev("p1", "Preempt", "Started", "")}},
			[]*Notice{{Kind: KindTerminate, Source: SourceAzure, ID: "p1"}}, true},
		{"events of another VM ignored, unless AllResources", func(o *AzureOptions) { o.AllResources = true },
			[][]azureEventJSON{{{EventId: "x1", EventType: "Redeploy", Resources: []string{"vm9"}, EventStatus: "Scheduled", NotBefore: notBefore}}},
			[]*Notice{{Kind: KindMaintenance, Source: SourceAzure, Deadline: nb, Advisory: true, ID: "x1"}}, false},
		{"events of another VM ignored with VMName", func(o *AzureOptions) { o.VMName = "vm1" },
			[][]azureEventJSON{{{EventId: "x1", EventType: "Preempt", Resources: []string{"vm9"}, EventStatus: "Scheduled", NotBefore: notBefore}}},
			nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAzureIMDS(t)
			o := fastAzure(a)
			if tc.opts != nil {
				tc.opts(o)
			}
			var c collector
			w := Watch(context.Background(), &Options{OnNotice: c.add}, Azure(o))
			defer w.Stop()
			for _, evs := range tc.steps {
				a.setEvents(evs...)
				a.waitGets(t, 3)
			}
			if err := w.Stop(); err != nil {
				t.Fatal(err)
			}
			got := c.all()
			for _, n := range got {
				if n.ID == "p1" { // deadline = detection time
					if !n.Deadline.Equal(n.Detected) {
						t.Errorf("Started event: deadline %v, want detection time %v", n.Deadline, n.Detected)
					}
					n.Deadline = time.Time{}
				}
			}
			if diff := cmp.Diff(tc.want, got, ignoreVolatile); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
			if _, ok := FromContext(w.Context()); ok != tc.cancel {
				t.Errorf("context cancelled by a notice = %v, want %v", ok, tc.cancel)
			}
		})
	}
}

// TestAzureFaults: 500s and malformed documents are retried, never a notice.
func TestAzureFaults(t *testing.T) {
	a := newAzureIMDS(t)
	a.failNext = 4
	a.rawNext = []string{`{"DocumentIncarnation": 2, "Events": [{"EventId": "e", "EventType": "Preempt", "NotBefore": "tomorrow"}]}`,
		`{"Events": [{"EventId": "e", "EventType": "Preempt"}]}`, `{"DocumentIncarnation": 3, "Events": [{"EventType": "Preempt"}]}`,
		`<html>`, `{"DocumentIncarnation": 4, "Events": [`}
	var c collector
	var logs syncBuf
	log := slog.New(slog.NewTextHandler(&logs, nil))
	w := Watch(context.Background(), &Options{OnNotice: c.add, Logger: log}, Azure(fastAzure(a)))
	defer w.Stop()
	a.waitGets(t, 15)
	if got := c.all(); len(got) != 0 {
		t.Fatalf("false notices: %v", got)
	}
	a.setEvents(azureEventJSON{EventId: "real", EventType: "Preempt", Resources: []string{"vm1"}, EventStatus: "Scheduled",
		NotBefore: "Wed, 02 Dec 2026 11:00:30 GMT"})
	n := waitCause(t, w.Context(), 10*time.Second)
	if n.ID != "real" {
		t.Errorf("notice %v, want the real event", n)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	// The failures went to the Watcher's logger, through the source.
	for _, want := range []string{"source=azure", "HTTP 500", "missing DocumentIncarnation", "NotBefore", "malformed JSON", "retry_in="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// syncBuf is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
