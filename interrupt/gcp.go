package interrupt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GCP metadata paths (relative to /computeMetadata/v1/).
const (
	gcpPathPreempted   = "instance/preempted"
	gcpPathMaintenance = "instance/maintenance-event"
)

// GCPOptions configure the GCP source. The zero value (or nil) is valid.
type GCPOptions struct {
	// Host (host[:port]) of the metadata server. Empty means the
	// GCE_METADATA_HOST environment variable (the Google client libraries'
	// convention), else "metadata.google.internal".
	Host string
	// WaitTimeout is the long-poll's timeout_sec (default 60 s): how long the
	// server may hold a wait_for_change request open.
	WaitTimeout time.Duration
	// RequestTimeout is added to WaitTimeout to bound one request, so that a
	// hanging server is noticed (default 5 s).
	RequestTimeout time.Duration
	// RetryDelay is the first delay after a failure (default 1 s); it doubles
	// with jitter up to MaxBackoff (default 5 s).
	RetryDelay, MaxBackoff time.Duration
	// PreemptionNotice is the time between preempted=TRUE and the machine's
	// end (default 30 s, GCP's documented notice for preemptible and Spot VMs).
	PreemptionNotice time.Duration
	// MaintenanceNotice is the time between maintenance-event =
	// TERMINATE_ON_HOST_MAINTENANCE and the termination (default 60 s).
	MaintenanceNotice time.Duration
	// HTTPClient, if set, replaces the source's own client.
	HTTPClient *http.Client
	// Logger for retries; nil means the Watcher's logger.
	Logger *slog.Logger
}

func (o *GCPOptions) withDefaults() GCPOptions {
	var r GCPOptions
	if o != nil {
		r = *o
	}
	if r.Host == "" {
		r.Host = os.Getenv("GCE_METADATA_HOST")
	}
	if r.Host == "" {
		r.Host = "metadata.google.internal"
	}
	if r.WaitTimeout <= 0 {
		r.WaitTimeout = 60 * time.Second
	}
	if r.RequestTimeout <= 0 {
		r.RequestTimeout = 5 * time.Second
	}
	if r.RetryDelay <= 0 {
		r.RetryDelay = time.Second
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 5 * time.Second
	}
	r.MaxBackoff = max(r.MaxBackoff, r.RetryDelay)
	if r.PreemptionNotice <= 0 {
		r.PreemptionNotice = 30 * time.Second
	}
	if r.MaintenanceNotice <= 0 {
		r.MaintenanceNotice = 60 * time.Second
	}
	return r
}

// GCP returns a source that long-polls the Compute Engine metadata server
// (header Metadata-Flavor: Google, wait_for_change=true with last_etag) for:
//
//   - instance/preempted = TRUE: a final terminate notice, deadline =
//     detection + PreemptionNotice;
//   - instance/maintenance-event = TERMINATE_ON_HOST_MAINTENANCE: a final
//     maintenance notice, deadline = detection + MaintenanceNotice;
//     MIGRATE_ON_HOST_MAINTENANCE: an advisory maintenance notice.
//
// A long poll returns as soon as the value changes, so detection takes a
// round trip, not a poll interval. Failures are retried with backoff.
func GCP(opts *GCPOptions) Source { return &gcpSource{opts: opts.withDefaults()} }

type gcpSource struct{ opts GCPOptions }

func (*gcpSource) Name() string { return SourceGCP }

func (s *gcpSource) Watch(ctx context.Context, report func(*Notice)) error {
	o := s.opts
	client := o.HTTPClient
	if client == nil {
		tr, closeAll := metadataTransport(o.WaitTimeout + o.RequestTimeout)
		defer closeAll()
		client = &http.Client{Transport: tr}
	}
	log := logger(ctx, o.Logger).With("source", SourceGCP)
	var wg sync.WaitGroup
	for _, path := range []string{gcpPathPreempted, gcpPathMaintenance} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watchPath(ctx, client, log, path, report)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func (s *gcpSource) watchPath(ctx context.Context, client *http.Client, log *slog.Logger, path string, report func(*Notice)) {
	o := s.opts
	bo := backoff{base: o.RetryDelay, max: o.MaxBackoff}
	etag := ""
	prev := ""
	epoch := 0 // counts returns to "no event", so a later event is a new notice
	for ctx.Err() == nil {
		start := time.Now()
		val, newTag, err := s.get(ctx, client, path, etag)
		if err == nil {
			err = s.handle(path, val, &prev, &epoch, report)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d := bo.failure()
			log.Warn("metadata poll failed, retrying", "path", path, "err", err, "retry_in", d, "failures", bo.fails)
			sleep(ctx, d)
			continue
		}
		bo.success()
		switch {
		case newTag == "":
			// No ETag: the server cannot long-poll; fall back to polling.
			sleep(ctx, o.RetryDelay)
		case newTag == etag && time.Since(start) < o.RetryDelay:
			// A server that answers an unchanged value at once would make us
			// spin; pace it.
			sleep(ctx, o.RetryDelay)
		}
		etag = newTag
	}
}

// handle turns one value into a notice, if it announces one.
func (s *gcpSource) handle(path, val string, prev *string, epoch *int, report func(*Notice)) error {
	kind, final, active, err := parseGCPValue(path, val)
	if err != nil {
		return err
	}
	if !active {
		if *prev != "" {
			*epoch++
		}
		*prev = ""
		return nil
	}
	*prev = val
	now := time.Now()
	notice := s.opts.PreemptionNotice
	if kind == KindMaintenance {
		notice = s.opts.MaintenanceNotice
	}
	n := &Notice{Kind: kind, Source: SourceGCP, Detected: now, Advisory: !final,
		ID: strings.TrimSpace(val) + "#" + strconv.Itoa(*epoch), Detail: path + "=" + val}
	if final {
		n.Deadline = now.Add(notice)
	}
	report(n)
	return nil
}

func (s *gcpSource) get(ctx context.Context, client *http.Client, path, etag string) (string, string, error) {
	o := s.opts
	u := "http://" + o.Host + "/computeMetadata/v1/" + path
	timeout := o.RequestTimeout
	if etag != "" {
		q := url.Values{}
		q.Set("wait_for_change", "true")
		q.Set("last_etag", etag)
		q.Set("timeout_sec", strconv.Itoa(max(1, int(o.WaitTimeout/time.Second))))
		u += "?" + q.Encode()
		timeout += o.WaitTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	resp, err := client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", "", fmt.Errorf("%s: reading body: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("%s: HTTP %d: %.100q", path, resp.StatusCode, body)
	}
	if resp.Header.Get("Metadata-Flavor") != "Google" {
		return "", "", fmt.Errorf("%s: response without Metadata-Flavor: Google (not a GCE metadata server?)", path)
	}
	return string(body), resp.Header.Get("ETag"), nil
}

// parseGCPValue interprets the value of instance/preempted ("TRUE",
// "FALSE") or instance/maintenance-event ("NONE",
// "MIGRATE_ON_HOST_MAINTENANCE", "TERMINATE_ON_HOST_MAINTENANCE").
// active is false when nothing is announced.
func parseGCPValue(path, val string) (kind Kind, final, active bool, err error) {
	v := strings.TrimSpace(val)
	switch path {
	case gcpPathPreempted:
		switch strings.ToUpper(v) {
		case "TRUE":
			return KindTerminate, true, true, nil
		case "FALSE":
			return "", false, false, nil
		}
	case gcpPathMaintenance:
		switch v {
		case "NONE":
			return "", false, false, nil
		case "MIGRATE_ON_HOST_MAINTENANCE":
			return KindMaintenance, false, true, nil
		case "TERMINATE_ON_HOST_MAINTENANCE":
			return KindMaintenance, true, true, nil
		}
	default:
		return "", false, false, fmt.Errorf("unknown GCP metadata path %q", path)
	}
	return "", false, false, fmt.Errorf("%s: unexpected value %.100q", path, v)
}
