package cloudwatchslog_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
)

// fakeLogs speaks the CloudWatch Logs JSON protocol (awsJson1_1: POST /,
// Content-Type application/x-amz-json-1.1, X-Amz-Target
// Logs_20140328.<Operation>, errors as HTTP 400 with {"__type", "message"})
// for CreateLogGroup, CreateLogStream and PutLogEvents, and enforces
// PutLogEvents' documented batch constraints.
type fakeLogs struct {
	errorf func(format string, args ...any) // t.Errorf

	mu       sync.Mutex
	groups   map[string]bool
	streams  map[string][]inputEvent // "group/stream" -> events received
	requests map[string]int          // operation -> requests seen (incl. failed)
	batches  [][]inputEvent

	throttle  int // answer this many PutLogEvents with ThrottlingException first
	throttled int
	// reject, if set, returns rejectedLogEventsInfo for a batch.
	reject func(batch []inputEvent) map[string]int
	// block, if non-nil, makes PutLogEvents wait until it is closed or the
	// client goes away.
	block chan struct{}
}

type inputEvent struct {
	Timestamp int64  `json:"timestamp"`
	Message   string `json:"message"`
}

func newFakeLogs(t *testing.T) (*fakeLogs, *httptest.Server) {
	f, srv := startFakeLogs(t.Errorf)
	t.Cleanup(srv.Close)
	return f, srv
}

func startFakeLogs(errorf func(string, ...any)) (*fakeLogs, *httptest.Server) {
	f := &fakeLogs{errorf: errorf, groups: map[string]bool{}, streams: map[string][]inputEvent{}, requests: map[string]int{}}
	return f, httptest.NewServer(f)
}

// client returns a real SDK client for srv, retrying quickly.
func client(srv *httptest.Server) *cloudwatchlogs.Client {
	return cloudwatchlogs.New(cloudwatchlogs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 5
			o.MaxBackoff = 5 * time.Millisecond
		}),
	})
}

func writeErr(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"__type":%q,"message":%q}`, typ, msg)
}

func (f *fakeLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix = "Logs_20140328."
	target := r.Header.Get("X-Amz-Target")
	if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
		len(target) <= len(prefix) || target[:len(prefix)] != prefix {
		f.errorf("bad request: %s %s Content-Type=%q X-Amz-Target=%q", r.Method, r.URL.Path, r.Header.Get("Content-Type"), target)
		writeErr(w, "UnknownOperationException", "bad request")
		return
	}
	if r.Header.Get("Authorization") == "" {
		f.errorf("%s: request not signed", target)
	}
	op := target[len(prefix):]
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var in struct {
		LogGroupName  string       `json:"logGroupName"`
		LogStreamName string       `json:"logStreamName"`
		LogEvents     []inputEvent `json:"logEvents"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeErr(w, "SerializationException", err.Error())
		return
	}

	if op == "PutLogEvents" && f.block != nil {
		select {
		case <-f.block:
		case <-r.Context().Done():
			return
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[op]++
	key := in.LogGroupName + "/" + in.LogStreamName
	switch op {
	case "CreateLogGroup":
		if f.groups[in.LogGroupName] {
			writeErr(w, "ResourceAlreadyExistsException", "The specified log group already exists")
			return
		}
		f.groups[in.LogGroupName] = true
	case "CreateLogStream":
		if !f.groups[in.LogGroupName] {
			writeErr(w, "ResourceNotFoundException", "The specified log group does not exist.")
			return
		}
		if _, ok := f.streams[key]; ok {
			writeErr(w, "ResourceAlreadyExistsException", "The specified log stream already exists")
			return
		}
		f.streams[key] = []inputEvent{}
	case "PutLogEvents":
		if f.throttled < f.throttle {
			f.throttled++
			writeErr(w, "ThrottlingException", "Rate exceeded")
			return
		}
		if _, ok := f.streams[key]; !ok {
			writeErr(w, "ResourceNotFoundException", "The specified log stream does not exist.")
			return
		}
		if msg := validateBatch(in.LogEvents); msg != "" {
			f.errorf("PutLogEvents: %s", msg)
			writeErr(w, "InvalidParameterException", msg)
			return
		}
		f.batches = append(f.batches, in.LogEvents)
		f.streams[key] = append(f.streams[key], in.LogEvents...)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		out := map[string]any{"nextSequenceToken": fmt.Sprint(len(f.batches))}
		if f.reject != nil {
			if info := f.reject(in.LogEvents); info != nil {
				out["rejectedLogEventsInfo"] = info
			}
		}
		json.NewEncoder(w).Encode(out)
		return
	default:
		writeErr(w, "UnknownOperationException", op)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	io.WriteString(w, "{}")
}

// validateBatch checks PutLogEvents' documented constraints.
func validateBatch(evs []inputEvent) string {
	if len(evs) == 0 || len(evs) > 10000 {
		return fmt.Sprintf("%d events, want 1..10000", len(evs))
	}
	size := 0
	for i, ev := range evs {
		if ev.Message == "" || !utf8.ValidString(ev.Message) {
			return fmt.Sprintf("event %d: empty or invalid UTF-8 message", i)
		}
		size += len(ev.Message) + 26
		if i > 0 && ev.Timestamp < evs[i-1].Timestamp {
			return fmt.Sprintf("event %d: timestamp %d before %d: not in chronological order", i, ev.Timestamp, evs[i-1].Timestamp)
		}
	}
	if size > 1048576 {
		return fmt.Sprintf("batch of %d bytes exceeds 1048576", size)
	}
	if span := evs[len(evs)-1].Timestamp - evs[0].Timestamp; span >= 24*3600*1000 {
		return fmt.Sprintf("batch spans %d ms, not less than 24 hours", span)
	}
	return ""
}

func (f *fakeLogs) events(group, stream string) []inputEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inputEvent(nil), f.streams[group+"/"+stream]...)
}

func (f *fakeLogs) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[op]
}
