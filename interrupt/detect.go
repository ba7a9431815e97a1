package interrupt

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Cloud names a cloud found by Detect.
type Cloud string

// The clouds Detect knows. CloudNone means no metadata service answered.
const (
	CloudNone  Cloud = ""
	CloudAWS   Cloud = "aws"
	CloudGCP   Cloud = "gcp"
	CloudAzure Cloud = "azure"
)

// DetectOptions configure Detect. The zero value (or nil) is valid.
type DetectOptions struct {
	// Timeout bounds the whole detection (default 500 ms): off any cloud the
	// link-local address does not answer, and a laptop must not wait long.
	Timeout time.Duration
	// Grace is passed to the Signals source Detect always includes
	// (default 30 s, Kubernetes' default terminationGracePeriodSeconds).
	Grace time.Duration
	// Endpoint of the metadata service for all three probes (default
	// "http://169.254.169.254"; the SDK conventions AWS_EC2_METADATA_SERVICE_ENDPOINT
	// and GCE_METADATA_HOST apply to their own probe when Endpoint is empty).
	// The returned source uses it too.
	Endpoint string
	// Logger for the probes' outcome; also set on the returned source.
	Logger *slog.Logger
}

// Detect finds out which cloud the process runs on by probing the metadata
// services concurrently (AWS IMDSv2 token, GCP Metadata-Flavor, Azure IMDS),
// and returns the sources to watch: that cloud's source, if any, and
// Signals(grace) (SIGTERM, SIGINT) in every case. It returns within
// opts.Timeout, or sooner if ctx ends.
func Detect(ctx context.Context, opts *DetectOptions) (Cloud, []Source) {
	var o DetectOptions
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = 500 * time.Millisecond
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	log := o.Logger
	if log == nil {
		log = discard
	}
	ep := strings.TrimRight(o.Endpoint, "/")
	awsEP, gcpEP, azEP := ep, ep, ep
	if ep == "" {
		awsEP, gcpEP, azEP = os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT"), "", "http://169.254.169.254"
		if awsEP == "" {
			awsEP = "http://169.254.169.254"
		}
		if h := os.Getenv("GCE_METADATA_HOST"); h != "" {
			gcpEP = "http://" + h
		} else {
			gcpEP = "http://169.254.169.254"
		}
	}
	awsEP = strings.TrimRight(awsEP, "/")

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	tr, closeAll := metadataTransport(o.Timeout)
	defer closeAll()
	client := &http.Client{Transport: tr}

	probes := []struct {
		cloud Cloud
		req   func() (*http.Request, error)
		ok    func(*http.Response) bool
	}{
		{CloudAWS, func() (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodPut, awsEP+"/latest/api/token", nil)
			if err == nil {
				r.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
			}
			return r, err
		}, func(r *http.Response) bool { return r.StatusCode == http.StatusOK }},
		{CloudGCP, func() (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, gcpEP+"/computeMetadata/v1/instance/id", nil)
			if err == nil {
				r.Header.Set("Metadata-Flavor", "Google")
			}
			return r, err
		}, func(r *http.Response) bool {
			return r.StatusCode == http.StatusOK && r.Header.Get("Metadata-Flavor") == "Google"
		}},
		{CloudAzure, func() (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, http.MethodGet, azEP+"/metadata/instance/compute/vmId?api-version=2021-02-01&format=text", nil)
			if err == nil {
				r.Header.Set("Metadata", "true")
			}
			return r, err
		}, func(r *http.Response) bool { return r.StatusCode == http.StatusOK }},
	}
	found := make(chan Cloud, len(probes))
	for _, p := range probes {
		go func() {
			req, err := p.req()
			if err != nil {
				found <- CloudNone
				return
			}
			req.Close = true
			resp, err := client.Do(req)
			if err != nil {
				log.Debug("metadata probe failed", "cloud", string(p.cloud), "err", err)
				found <- CloudNone
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
			resp.Body.Close()
			if p.ok(resp) {
				found <- p.cloud
				return
			}
			log.Debug("metadata probe answered but not recognized", "cloud", string(p.cloud), "status", resp.StatusCode)
			found <- CloudNone
		}()
	}
	cloud := CloudNone
	for range probes {
		if c := <-found; c != CloudNone && cloud == CloudNone {
			cloud = c
			cancel()
		}
	}
	log.Info("cloud detection", "cloud", string(cloud))
	sources := []Source{}
	switch cloud {
	case CloudAWS:
		a := &AWSOptions{Logger: o.Logger}
		if ep != "" || os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT") == "" {
			a.Endpoint = awsEP
		}
		sources = append(sources, AWS(a))
	case CloudGCP:
		u, _ := url.Parse(gcpEP)
		sources = append(sources, GCP(&GCPOptions{Host: u.Host, Logger: o.Logger}))
	case CloudAzure:
		sources = append(sources, Azure(&AzureOptions{Endpoint: azEP, Logger: o.Logger}))
	}
	return cloud, append(sources, Signals(o.Grace))
}
