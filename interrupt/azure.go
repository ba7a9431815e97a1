package interrupt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"
)

const (
	azureEventsPath = "/metadata/scheduledevents?api-version=2020-07-01"
	azureNamePath   = "/metadata/instance/compute/name?api-version=2020-09-01&format=text"
)

// AzureOptions configure the Azure source. The zero value (or nil) is valid.
type AzureOptions struct {
	// Endpoint of the instance metadata service (default
	// "http://169.254.169.254").
	Endpoint string
	// Interval between polls of Scheduled Events (default 1 s, as Azure
	// recommends).
	Interval time.Duration
	// RequestTimeout bounds one request (default 5 s). The first request
	// after boot may be slow while the platform enables Scheduled Events for
	// the VM; it is retried like any failure.
	RequestTimeout time.Duration
	// MaxBackoff caps the delay between retries after failures; retries start
	// at Interval (default 5 s).
	MaxBackoff time.Duration
	// Final lists the EventTypes that are final notices (default Preempt and
	// Terminate). Other types (Reboot, Redeploy, Freeze) are advisory
	// maintenance notices.
	Final []string
	// VMName restricts notices to events whose Resources name this VM (events
	// with no Resources apply to all). Empty means: ask the metadata service
	// (compute/name) before the first poll.
	VMName string
	// AllResources reports events for every VM in the document, ignoring
	// Resources (and VMName).
	AllResources bool
	// HTTPClient, if set, replaces the source's own client.
	HTTPClient *http.Client
	// Logger for retries; nil means the Watcher's logger.
	Logger *slog.Logger
}

func (o *AzureOptions) withDefaults() AzureOptions {
	var r AzureOptions
	if o != nil {
		r = *o
	}
	if r.Endpoint == "" {
		r.Endpoint = "http://169.254.169.254"
	}
	r.Endpoint = strings.TrimRight(r.Endpoint, "/")
	if r.Interval <= 0 {
		r.Interval = time.Second
	}
	if r.RequestTimeout <= 0 {
		r.RequestTimeout = 5 * time.Second
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 5 * time.Second
	}
	r.MaxBackoff = max(r.MaxBackoff, r.Interval)
	if r.Final == nil {
		r.Final = []string{"Preempt", "Terminate"}
	}
	return r
}

// AzureSource polls Azure Scheduled Events. Create it with Azure; keep it
// to acknowledge events with Ack.
type AzureSource struct {
	opts   AzureOptions
	client *http.Client // for Ack; each Watch has its own
}

// Azure returns a source that polls Azure Scheduled Events
// (/metadata/scheduledevents?api-version=2020-07-01, header Metadata: true).
// Each event is reported once (the document's DocumentIncarnation changes
// when its events do): Preempt and Terminate (or opts.Final) as final
// notices of kind terminate, the others as advisory maintenance notices;
// the deadline is NotBefore, or the detection time for an event already
// Started. Notice.ID is the EventId, for Ack.
func Azure(opts *AzureOptions) *AzureSource {
	o := opts.withDefaults()
	s := &AzureSource{opts: o, client: o.HTTPClient}
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true,
			ResponseHeaderTimeout: o.RequestTimeout}}
	}
	return s
}

// Name returns "azure".
func (*AzureSource) Name() string { return SourceAzure }

// Ack tells Azure that this VM is ready for the events (POST StartRequests),
// so that the platform may start them before NotBefore. Call it after the
// emergency checkpoint, with the notices' IDs.
func (s *AzureSource) Ack(ctx context.Context, eventIDs ...string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	type start struct {
		EventID string `json:"EventId"`
	}
	var body struct {
		StartRequests []start `json:"StartRequests"`
	}
	for _, id := range eventIDs {
		body.StartRequests = append(body.StartRequests, start{id})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.opts.Endpoint+azureEventsPath, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Metadata", "true")
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("interrupt: azure ack %v: %w", eventIDs, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("interrupt: azure ack %v: HTTP %d: %.200q", eventIDs, resp.StatusCode, msg)
	}
	return nil
}

// Watch polls until ctx is done.
func (s *AzureSource) Watch(ctx context.Context, report func(*Notice)) error {
	o := s.opts
	client := o.HTTPClient
	if client == nil {
		tr, closeAll := metadataTransport(o.RequestTimeout)
		defer closeAll()
		client = &http.Client{Transport: tr}
	}
	log := logger(ctx, o.Logger).With("source", SourceAzure)
	bo := backoff{base: o.Interval, max: o.MaxBackoff}
	name := o.VMName
	lastInc := int64(-1)
	for {
		var err error
		if name == "" && !o.AllResources {
			var b []byte
			if b, err = s.get(ctx, client, azureNamePath); err == nil {
				name = strings.TrimSpace(string(b))
				if name == "" {
					err = errors.New("compute/name: empty")
				}
			}
		}
		if err == nil {
			var body []byte
			if body, err = s.get(ctx, client, azureEventsPath); err == nil {
				var doc azureDocument
				if doc, err = parseAzureDocument(body); err == nil && doc.Incarnation != lastInc {
					lastInc = doc.Incarnation
					for _, n := range s.notices(doc, name, time.Now()) {
						report(n)
					}
				}
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := o.Interval
		if err != nil {
			d = bo.failure()
			log.Warn("scheduled events poll failed, retrying", "err", err, "retry_in", d, "failures", bo.fails)
		} else {
			bo.success()
		}
		if !sleep(ctx, d) {
			return ctx.Err()
		}
	}
}

func (s *AzureSource) notices(doc azureDocument, name string, now time.Time) []*Notice {
	var ns []*Notice
	for _, e := range doc.Events {
		if !s.opts.AllResources && len(e.Resources) > 0 && !slices.ContainsFunc(e.Resources, func(r string) bool { return strings.EqualFold(r, name) }) {
			continue
		}
		if strings.EqualFold(e.EventStatus, "Completed") || strings.EqualFold(e.EventStatus, "Canceled") {
			continue
		}
		final := slices.ContainsFunc(s.opts.Final, func(t string) bool { return strings.EqualFold(t, e.EventType) })
		kind := KindMaintenance
		if strings.EqualFold(e.EventType, "Preempt") || strings.EqualFold(e.EventType, "Terminate") {
			kind = KindTerminate
		}
		dl := e.NotBefore
		if dl.IsZero() {
			dl = now // Started (or no time given): it is happening now
		}
		ns = append(ns, &Notice{Kind: kind, Source: SourceAzure, Deadline: dl, Detected: now, Advisory: !final,
			ID: e.EventID, Detail: e.Raw})
	}
	return ns
}

func (s *AzureSource) get(ctx context.Context, client *http.Client, path string) ([]byte, error) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, s.opts.Endpoint+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Metadata", "true")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200q", resp.StatusCode, body)
	}
	return body, nil
}

// azureDocument is a Scheduled Events document.
type azureDocument struct {
	Incarnation int64
	Events      []azureEvent
}

type azureEvent struct {
	EventID     string
	EventType   string
	Resources   []string
	EventStatus string
	NotBefore   time.Time // zero if empty
	Raw         string
}

// parseAzureDocument parses
//
//	{"DocumentIncarnation": 1, "Events": [{"EventId": "...", "EventType": "Preempt",
//	  "ResourceType": "VirtualMachine", "Resources": ["vm1"], "EventStatus": "Scheduled",
//	  "NotBefore": "Mon, 19 Sep 2016 18:29:47 GMT", "Description": "...",
//	  "EventSource": "Platform", "DurationInSeconds": -1}]}
func parseAzureDocument(body []byte) (azureDocument, error) {
	var d struct {
		DocumentIncarnation *int64
		Events              []json.RawMessage
	}
	if err := strictUnmarshal(body, &d); err != nil {
		return azureDocument{}, fmt.Errorf("scheduled events document: %w", err)
	}
	if d.DocumentIncarnation == nil {
		return azureDocument{}, errors.New("scheduled events document: missing DocumentIncarnation")
	}
	doc := azureDocument{Incarnation: *d.DocumentIncarnation}
	for i, raw := range d.Events {
		var e struct {
			EventId, EventType, EventStatus, NotBefore string
			Resources                                  []string
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return azureDocument{}, fmt.Errorf("scheduled events Events[%d]: %w", i, err)
		}
		if e.EventId == "" {
			return azureDocument{}, fmt.Errorf("scheduled events Events[%d]: missing EventId", i)
		}
		if e.EventType == "" {
			return azureDocument{}, fmt.Errorf("scheduled events Events[%d] %s: missing EventType", i, e.EventId)
		}
		ev := azureEvent{EventID: e.EventId, EventType: e.EventType, Resources: e.Resources, EventStatus: e.EventStatus, Raw: string(raw)}
		if e.NotBefore != "" {
			t, err := http.ParseTime(e.NotBefore)
			if err != nil {
				return azureDocument{}, fmt.Errorf("scheduled events Events[%d] %s: NotBefore %q: %w", i, e.EventId, e.NotBefore, err)
			}
			ev.NotBefore = t
		}
		doc.Events = append(doc.Events, ev)
	}
	return doc, nil
}
