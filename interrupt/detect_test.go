package interrupt

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spotcheck/spotcheck/internal/testpeers"
)

func sourceNames(ss []Source) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.Name())
	}
	return names
}

func TestDetect(t *testing.T) {
	deadline := time.Now().Add(2 * time.Minute).UTC().Truncate(time.Second)
	aws := testpeers.EC2Metadata(t, "spot", "-a", "terminate", "-t", deadline.Format(time.RFC3339), "--rebalance-delay-sec", "3600")
	gcp := newGCEMetadata(t)
	az := newAzureIMDS(t)
	// A server that accepts connections and never answers: a metadata
	// address that swallows packets.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	// A port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name     string
		endpoint string
		want     Cloud
		sources  []string
	}{
		{"aws mock", aws.Endpoint, CloudAWS, []string{SourceAWS, SourceSignal}},
		{"gcp", gcp.srv.URL, CloudGCP, []string{SourceGCP, SourceSignal}},
		{"azure", az.srv.URL, CloudAzure, []string{SourceAzure, SourceSignal}},
		{"hanging", hang.URL, CloudNone, []string{SourceSignal}},
		{"refused", refused, CloudNone, []string{SourceSignal}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud, sources := Detect(context.Background(), &DetectOptions{Endpoint: tc.endpoint, Timeout: 300 * time.Millisecond})
			if cloud != tc.want {
				t.Errorf("cloud = %q, want %q", cloud, tc.want)
			}
			if diff := cmp.Diff(tc.sources, sourceNames(sources)); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
		})
	}

	// The AWS source Detect returns watches the endpoint it detected.
	_, sources := Detect(context.Background(), &DetectOptions{Endpoint: aws.Endpoint, Timeout: 2 * time.Second})
	ctx, stop := NotifyContext(context.Background(), sources...)
	defer stop()
	n := waitCause(t, ctx, 10*time.Second)
	if diff := cmp.Diff(&Notice{Kind: KindTerminate, Source: SourceAWS, Deadline: deadline, ID: "terminate"}, n, ignoreVolatile); diff != "" {
		t.Errorf("notice through detected sources (-want +got):\n%s", diff)
	}
}
