package interrupt_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"time"

	"github.com/spotcheck/spotcheck/interrupt"
)

// A training loop that stops on SIGTERM (how Kubernetes passes a spot
// reclaim on to a pod) and saves within the grace period.
func ExampleNotifyContext() {
	ctx, stop := interrupt.NotifyContext(context.Background(), interrupt.Signals(30*time.Second, syscall.SIGTERM))
	defer stop()

	_ = syscall.Kill(syscall.Getpid(), syscall.SIGTERM) // what the kubelet does

	<-ctx.Done() // the training loop would check ctx between steps
	n, _ := interrupt.FromContext(ctx)
	saveCtx, cancel := interrupt.GraceContext(ctx, 5*time.Second)
	defer cancel()
	dl, _ := saveCtx.Deadline()
	fmt.Println(n.Kind, n.Source, n.ID)
	fmt.Println("time to save:", dl.Sub(n.Detected))
	// Output:
	// signal signal terminated
	// time to save: 25s
}

// The AWS source against a stand-in for the EC2 instance metadata service
// (IMDSv2: a session token first, then the spot notice).
func ExampleAWS() {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = io.WriteString(w, "token-1")
		case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "token-1":
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case r.URL.Path == "/latest/meta-data/spot/instance-action":
			_, _ = io.WriteString(w, `{"action": "terminate", "time": "2026-12-02T11:00:00Z"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer imds.Close()

	ctx, stop := interrupt.NotifyContext(context.Background(),
		interrupt.AWS(&interrupt.AWSOptions{Endpoint: imds.URL, Interval: 10 * time.Millisecond}))
	defer stop()
	<-ctx.Done()
	fmt.Println(context.Cause(ctx))
	// Output: interrupt: terminate notice from aws, deadline 2026-12-02T11:00:00Z
}

// A Watcher reports advisory notices too; by default they cancel nothing.
func ExampleWatch() {
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = io.WriteString(w, "token")
		case "/latest/meta-data/events/recommendations/rebalance":
			_, _ = io.WriteString(w, `{"noticeTime": "2026-12-02T10:58:00Z"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer imds.Close()

	w := interrupt.Watch(context.Background(), &interrupt.Options{
		OnNotice: func(n *interrupt.Notice) { fmt.Println("advisory:", n.Advisory, n.Kind) },
	}, interrupt.AWS(&interrupt.AWSOptions{Endpoint: imds.URL, Interval: 10 * time.Millisecond, EventsInterval: 10 * time.Millisecond}))
	n := <-w.Notices()
	_, cancelled := interrupt.FromContext(w.Context())
	_ = w.Stop()
	fmt.Println(n.Source, "cancelled:", cancelled)
	// Output:
	// advisory: true rebalance
	// aws cancelled: false
}
