package interrupt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// AWS metadata paths (relative to /latest/meta-data/).
const (
	awsPathInstanceAction = "spot/instance-action"
	awsPathRebalance      = "events/recommendations/rebalance"
	awsPathScheduled      = "events/maintenance/scheduled"
)

// AWSOptions configure the AWS source. The zero value (or nil) is valid.
type AWSOptions struct {
	// Endpoint of the instance metadata service, e.g. "http://127.0.0.1:1338".
	// Empty means the SDK's default (AWS_EC2_METADATA_SERVICE_ENDPOINT, else
	// http://169.254.169.254).
	Endpoint string
	// Interval between polls of spot/instance-action (default 1 s). AWS gives
	// two minutes of notice; the detection latency is at most about one
	// interval.
	Interval time.Duration
	// EventsInterval between polls of the rebalance recommendation and the
	// scheduled events (default 10 s, and never shorter than Interval).
	// Both are advisory and announced minutes (rebalance) to days
	// (maintenance) ahead; polling them less often than the spot notice
	// keeps the watcher close to one request per Interval.
	EventsInterval time.Duration
	// RequestTimeout bounds one request, including the IMDSv2 token request
	// the SDK makes when its token is missing or expired (default 1 s). In a
	// container, the instance's metadata hop limit must be at least 2 for the
	// token's PUT response to arrive.
	RequestTimeout time.Duration
	// MaxBackoff caps the delay between retries after failures (timeouts,
	// refused connections, 5xx, 429, 401, malformed documents). Retries start
	// at Interval and double with jitter up to MaxBackoff (default 5 s).
	MaxBackoff time.Duration
	// Client, if set, is used instead of a client built from the fields
	// above (Endpoint and the transport settings are then ignored). Its own
	// retryer applies in addition to the source's.
	Client *imds.Client
	// Logger for retries; nil means the Watcher's logger.
	Logger *slog.Logger
}

func (o *AWSOptions) withDefaults() AWSOptions {
	var r AWSOptions
	if o != nil {
		r = *o
	}
	if r.Interval <= 0 {
		r.Interval = time.Second
	}
	if r.EventsInterval <= 0 {
		r.EventsInterval = 10 * time.Second
	}
	r.EventsInterval = max(r.EventsInterval, r.Interval)
	if r.RequestTimeout <= 0 {
		r.RequestTimeout = time.Second
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 5 * time.Second
	}
	r.MaxBackoff = max(r.MaxBackoff, r.Interval)
	return r
}

// AWS returns a source that polls the EC2 instance metadata service (IMDSv2,
// through github.com/aws/aws-sdk-go-v2/feature/ec2/imds, which handles the
// session token) for:
//
//   - spot/instance-action: a final notice of kind terminate, stop or
//     hibernate with the deadline from its "time";
//   - events/recommendations/rebalance: an advisory rebalance notice;
//   - events/maintenance/scheduled: an advisory maintenance notice per
//     active event (canceled and completed ones are ignored), deadline
//     NotBefore.
//
// A 404 means "nothing announced". Every other failure is retried with
// backoff and logged, never reported.
func AWS(opts *AWSOptions) Source { return &awsSource{opts: opts.withDefaults()} }

type awsSource struct{ opts AWSOptions }

func (*awsSource) Name() string { return SourceAWS }

// metadataTransport returns the HTTP transport for link-local metadata
// services (no proxy, short dial timeout, keep-alive for the polls) and a
// function that closes every connection it ever opened and refuses new
// ones. CloseIdleConnections alone is not enough after a stop: a dial the
// transport finishes in the background after its request was cancelled
// still lands in the idle pool, with two goroutines.
func metadataTransport(timeout time.Duration) (*http.Transport, func()) {
	ct := &connTracker{conns: map[net.Conn]struct{}{}}
	d := &net.Dialer{Timeout: min(timeout, 500*time.Millisecond)}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return ct.add(c)
		},
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          4,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
	}
	return tr, func() {
		ct.closeAll()
		tr.CloseIdleConnections()
	}
}

type connTracker struct {
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

var errTransportClosed = errors.New("interrupt: metadata transport closed")

func (t *connTracker) add(c net.Conn) (net.Conn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, errTransportClosed
	}
	t.conns[c] = struct{}{}
	return &trackedConn{Conn: c, t: t}, nil
}

func (t *connTracker) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.conns {
		c.Close()
	}
	clear(t.conns)
}

// trackedConn forgets itself when closed, so the tracker does not grow.
type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c.Conn)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}

type poller struct {
	path     string
	interval time.Duration
	bo       backoff
	next     time.Time
	parse    func(body []byte, now time.Time) ([]*Notice, error)
}

func (s *awsSource) Watch(ctx context.Context, report func(*Notice)) error {
	o := s.opts
	log := logger(ctx, o.Logger).With("source", SourceAWS)
	client := o.Client
	if client == nil {
		tr, closeAll := metadataTransport(o.RequestTimeout)
		defer closeAll()
		client = imds.New(imds.Options{
			Endpoint:   o.Endpoint,
			HTTPClient: &http.Client{Transport: tr},
			Retryer:    aws.NopRetryer{},
		})
	}
	now := time.Now()
	pollers := []*poller{
		{path: awsPathInstanceAction, interval: o.Interval, parse: instanceActionNotices},
		{path: awsPathRebalance, interval: o.EventsInterval, parse: rebalanceNotices},
		{path: awsPathScheduled, interval: o.EventsInterval, parse: scheduledNotices},
	}
	for _, p := range pollers {
		p.bo = backoff{base: o.Interval, max: o.MaxBackoff}
		p.next = now
	}
	for {
		// The poller due first; ties go to instance-action (first in list).
		p := pollers[0]
		for _, q := range pollers[1:] {
			if q.next.Before(p.next) {
				p = q
			}
		}
		if !sleep(ctx, time.Until(p.next)) {
			return ctx.Err()
		}
		body, found, err := s.get(ctx, client, p.path)
		var notices []*Notice
		if err == nil && found {
			notices, err = p.parse(body, time.Now())
			if err != nil {
				err = fmt.Errorf("%s: %w", p.path, err)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			d := p.bo.failure()
			log.Warn("metadata poll failed, retrying", "path", p.path, "err", err, "retry_in", d, "failures", p.bo.fails)
			p.next = time.Now().Add(d)
			continue
		}
		p.bo.success()
		for _, n := range notices {
			report(n)
		}
		p.next = p.next.Add(p.interval)
		if now := time.Now(); p.next.Before(now) {
			p.next = now // fell behind (slow request): poll again now, do not burst
		}
	}
}

// get fetches one metadata path. found is false on 404 (nothing announced).
func (s *awsSource) get(ctx context.Context, c *imds.Client, path string) (body []byte, found bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	out, err := c.GetMetadata(rctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
			return nil, false, nil
		}
		return nil, false, err
	}
	defer out.Content.Close()
	body, err = io.ReadAll(io.LimitReader(out.Content, 1<<20))
	if err != nil {
		return nil, false, fmt.Errorf("%s: reading body: %w", path, err)
	}
	return body, true, nil
}

// InstanceAction is the document at spot/instance-action.
type instanceAction struct {
	Action string `json:"action"`
	Time   string `json:"time"`
}

// parseInstanceAction parses spot/instance-action:
// {"action": "terminate"|"stop"|"hibernate", "time": "2017-09-18T08:22:00Z"}.
func parseInstanceAction(body []byte) (Kind, time.Time, error) {
	var ia instanceAction
	if err := strictUnmarshal(body, &ia); err != nil {
		return "", time.Time{}, fmt.Errorf("instance-action: %w", err)
	}
	var k Kind
	switch ia.Action {
	case "terminate":
		k = KindTerminate
	case "stop":
		k = KindStop
	case "hibernate":
		k = KindHibernate
	default:
		return "", time.Time{}, fmt.Errorf("instance-action: unknown action %q", ia.Action)
	}
	t, err := time.Parse(time.RFC3339, ia.Time)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("instance-action: time %q: %w", ia.Time, err)
	}
	return k, t, nil
}

func instanceActionNotices(body []byte, now time.Time) ([]*Notice, error) {
	k, t, err := parseInstanceAction(body)
	if err != nil {
		return nil, err
	}
	// ID is the action alone: the mock (and in principle AWS) may restate
	// the time on each poll; the same action is the same notice.
	return []*Notice{{Kind: k, Source: SourceAWS, Deadline: t, Detected: now, ID: string(k), Detail: string(body)}}, nil
}

// parseRebalance parses events/recommendations/rebalance:
// {"noticeTime": "2020-10-27T08:22:00Z"}.
func parseRebalance(body []byte) (time.Time, error) {
	var r struct {
		NoticeTime string `json:"noticeTime"`
	}
	if err := strictUnmarshal(body, &r); err != nil {
		return time.Time{}, fmt.Errorf("rebalance: %w", err)
	}
	t, err := time.Parse(time.RFC3339, r.NoticeTime)
	if err != nil {
		return time.Time{}, fmt.Errorf("rebalance: noticeTime %q: %w", r.NoticeTime, err)
	}
	return t, nil
}

func rebalanceNotices(body []byte, now time.Time) ([]*Notice, error) {
	if _, err := parseRebalance(body); err != nil {
		return nil, err
	}
	// One recommendation per instance lifetime: ID is constant.
	return []*Notice{{Kind: KindRebalance, Source: SourceAWS, Detected: now, Advisory: true, ID: "rebalance", Detail: string(body)}}, nil
}

// scheduledEvent is one element of events/maintenance/scheduled.
type scheduledEvent struct {
	Code        string
	Description string
	State       string
	EventID     string
	NotBefore   time.Time
	NotAfter    time.Time // zero if absent
	Raw         string
}

// awsEventTime parses the scheduled-event time format "21 Jan 2019 09:00:43 GMT".
func awsEventTime(field, s string) (time.Time, error) {
	for _, layout := range []string{"2 Jan 2006 15:04:05 MST", time.RFC1123, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: not a time like \"21 Jan 2019 09:00:43 GMT\"", field, s)
}

// parseScheduled parses events/maintenance/scheduled, a JSON array of
// {"Code","Description","State","EventId","NotBefore","NotAfter","NotBeforeDeadline"}.
func parseScheduled(body []byte) ([]scheduledEvent, error) {
	var raws []json.RawMessage
	if err := strictUnmarshal(body, &raws); err != nil {
		return nil, fmt.Errorf("scheduled events: %w", err)
	}
	evs := make([]scheduledEvent, 0, len(raws))
	for i, raw := range raws {
		var e struct {
			Code, Description, State, EventId, NotBefore, NotAfter, NotBeforeDeadline string
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("scheduled events[%d]: %w", i, err)
		}
		if e.EventId == "" {
			return nil, fmt.Errorf("scheduled events[%d]: missing EventId", i)
		}
		if e.Code == "" {
			return nil, fmt.Errorf("scheduled events[%d] %s: missing Code", i, e.EventId)
		}
		nb, err := awsEventTime("NotBefore", e.NotBefore)
		if err != nil {
			return nil, fmt.Errorf("scheduled events[%d] %s: %w", i, e.EventId, err)
		}
		ev := scheduledEvent{Code: e.Code, Description: e.Description, State: e.State, EventID: e.EventId, NotBefore: nb, Raw: string(raw)}
		if e.NotAfter != "" {
			if ev.NotAfter, err = awsEventTime("NotAfter", e.NotAfter); err != nil {
				return nil, fmt.Errorf("scheduled events[%d] %s: %w", i, e.EventId, err)
			}
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// active reports whether the event is still to come (not canceled or completed).
func (e scheduledEvent) active() bool {
	st := strings.ToLower(e.State)
	if st == "canceled" || st == "cancelled" || st == "completed" {
		return false
	}
	d := strings.ToLower(e.Description)
	return !strings.HasPrefix(d, "[canceled]") && !strings.HasPrefix(d, "[completed]")
}

func scheduledNotices(body []byte, now time.Time) ([]*Notice, error) {
	evs, err := parseScheduled(body)
	if err != nil {
		return nil, err
	}
	var ns []*Notice
	for _, e := range evs {
		if !e.active() {
			continue
		}
		ns = append(ns, &Notice{Kind: KindMaintenance, Source: SourceAWS, Deadline: e.NotBefore, Detected: now,
			Advisory: true, ID: e.EventID, Detail: e.Raw})
	}
	return ns, nil
}

// strictUnmarshal decodes exactly one JSON value (no trailing data).
func strictUnmarshal(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON: %w", err)
	}
	if dec.More() {
		return errors.New("malformed JSON: trailing data")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("malformed JSON: trailing data")
	}
	return nil
}
