package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cwLogs is the part of CloudWatch Logs' JSON protocol (awsJson1_1) the
// trainer's handler speaks: it records the events PutLogEvents receives.
type cwLogs struct {
	mu      sync.Mutex
	targets []string
	events  []string
	group   string
}

func (s *cwLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	target := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "Logs_20140328.")
	var in struct {
		LogGroupName string
		LogEvents    []struct {
			Timestamp int64
			Message   string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.targets = append(s.targets, target)
	s.group = in.LogGroupName
	for _, e := range in.LogEvents {
		s.events = append(s.events, e.Message)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch target {
	case "CreateLogGroup", "CreateLogStream":
		io.WriteString(w, `{}`)
	case "PutLogEvents":
		io.WriteString(w, `{"nextSequenceToken":"1"}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"UnknownOperationException","message":"unknown operation"}`)
	}
}

// TestCloudWatchLogs runs the trainer with -cloudwatch-group against a
// CloudWatch Logs server and checks that the run's log, including the
// interruption notice and the final digest, arrived there.
func TestCloudWatchLogs(t *testing.T) {
	srv := &cwLogs{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))

	store := t.TempDir()
	base := []string{"-store", store, "-steps", "200", "-seed", "5", "-every", "50", "-progress", "json", "-detect=false",
		"-plot", "", "-cloudwatch-group", "/spotcheck/test", "-cloudwatch-stream", "run-1", "-cloudwatch-endpoint", ts.URL}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(base, "-interrupt-at", "120"), &stdout, &stderr); code != exitInterrupted {
		t.Fatalf("interrupted run exited %d, want %d; log:\n%s", code, exitInterrupted, stderr.String())
	}
	stdout.Reset()
	if code := run(context.Background(), base, &stdout, &stderr); code != exitOK {
		t.Fatalf("resumed run exited %d; log:\n%s", code, stderr.String())
	}
	digest := digestRE.FindStringSubmatch(stdout.String())
	if digest == nil {
		t.Fatalf("no digest in the output:\n%s", stdout.String())
	}

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.group != "/spotcheck/test" {
		t.Errorf("log group = %q, want /spotcheck/test", srv.group)
	}
	var sawNotice, sawDone bool
	for _, m := range srv.events {
		var rec map[string]any
		if err := json.Unmarshal([]byte(m), &rec); err != nil {
			t.Fatalf("event is not a JSON record: %q", m)
		}
		msg, _ := rec["msg"].(string)
		if strings.Contains(msg, "emergency checkpoint saved") {
			sawNotice = true
		}
		if msg == "done" && rec["weights_sha256"] == digest[1] {
			sawDone = true
		}
	}
	if !sawNotice || !sawDone {
		t.Fatalf("CloudWatch got %d events (requests %v): emergency save logged %v, final digest logged %v",
			len(srv.events), srv.targets, sawNotice, sawDone)
	}
}
