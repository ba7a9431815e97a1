package cloudwatchslog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// Service limits of PutLogEvents.
const (
	// MaxBatchEvents is the most events one PutLogEvents request may carry.
	MaxBatchEvents = 10_000
	// MaxBatchBytes is the most bytes one request may carry, counted as the
	// sum of the messages' UTF-8 lengths plus EventOverhead per event.
	MaxBatchBytes = 1_048_576
	// EventOverhead is the per-event size CloudWatch adds to a message.
	EventOverhead = 26
	// MaxMessageBytes is the longest message one event may carry.
	MaxMessageBytes = MaxBatchBytes - EventOverhead
	// MaxBatchSpan bounds the time between the first and last event of a
	// request (the service rejects a span of 24 hours or more).
	MaxBatchSpan = 24*time.Hour - time.Millisecond
)

var (
	// ErrDropped is wrapped by the error Close returns when records were
	// lost; the message holds the counts.
	ErrDropped = errors.New("cloudwatchslog: records dropped")
	// ErrClosed is returned by Handle and Flush after Close.
	ErrClosed = errors.New("cloudwatchslog: handler closed")
)

// API is the part of *cloudwatchlogs.Client the handler uses.
type API interface {
	PutLogEvents(context.Context, *cloudwatchlogs.PutLogEventsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.PutLogEventsOutput, error)
	CreateLogGroup(context.Context, *cloudwatchlogs.CreateLogGroupInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogGroupOutput, error)
	CreateLogStream(context.Context, *cloudwatchlogs.CreateLogStreamInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.CreateLogStreamOutput, error)
}

// Options configure a Handler. Group and Stream are required; the zero value
// of every other field means its default.
type Options struct {
	// Group and Stream name the log group and log stream.
	Group, Stream string
	// NoCreate skips CreateLogGroup/CreateLogStream (for roles without
	// logs:CreateLogGroup when the group is managed elsewhere).
	NoCreate bool
	// Level is the minimum level handled (default slog.LevelInfo).
	Level slog.Leveler
	// ReplaceAttr is passed to the JSON formatter (see slog.HandlerOptions).
	ReplaceAttr func(groups []string, a slog.Attr) slog.Attr
	// AddSource adds the caller's file:line to each record.
	AddSource bool
	// FlushInterval is the longest a record waits in the queue before its
	// batch is sent (default 5 s).
	FlushInterval time.Duration
	// MaxBatchEvents and MaxBatchBytes make batches smaller than the
	// service limits (defaults and upper bounds: the limits).
	MaxBatchEvents, MaxBatchBytes int
	// QueueSize is how many records may wait for the background sender
	// (default 4 * MaxBatchEvents); a record arriving at a full queue is
	// dropped and counted, never waited for.
	QueueSize int
	// RequestTimeout bounds each API call, including the SDK's retries
	// (default 30 s). Calls made for Flush and Close are also bounded by
	// their context.
	RequestTimeout time.Duration
	// OnError, if set, is called from the background goroutine with every
	// send failure and every batch of dropped or rejected records. It must
	// not log through this handler.
	OnError func(error)
}

func (o *Options) withDefaults() (Options, error) {
	var d Options
	if o != nil {
		d = *o
	}
	if d.Group == "" || d.Stream == "" {
		return d, fmt.Errorf("cloudwatchslog: log group %q and stream %q must both be set", d.Group, d.Stream)
	}
	if d.Level == nil {
		d.Level = slog.LevelInfo
	}
	if d.FlushInterval <= 0 {
		d.FlushInterval = 5 * time.Second
	}
	if d.MaxBatchEvents <= 0 || d.MaxBatchEvents > MaxBatchEvents {
		d.MaxBatchEvents = MaxBatchEvents
	}
	if d.MaxBatchBytes <= 0 || d.MaxBatchBytes > MaxBatchBytes {
		d.MaxBatchBytes = MaxBatchBytes
	}
	if d.QueueSize <= 0 {
		d.QueueSize = 4 * d.MaxBatchEvents
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = 30 * time.Second
	}
	if d.OnError == nil {
		d.OnError = func(error) {}
	}
	return d, nil
}

// Stats counts what happened to the records given to a Handler.
type Stats struct {
	Handled   int64 // records accepted onto the queue
	Sent      int64 // records CloudWatch accepted
	Dropped   int64 // records lost: queue full, after Close, or their batch failed
	Rejected  int64 // records CloudWatch refused (too old, too new, expired)
	Truncated int64 // records whose message was cut to MaxMessageBytes
	Requests  int64 // successful PutLogEvents requests
	LastError error // the last send failure, if any
}

// Lost is the number of records that will never reach CloudWatch.
func (s Stats) Lost() int64 { return s.Dropped + s.Rejected }

// Handler is a slog.Handler that batches records to CloudWatch Logs.
// Handlers derived with WithAttrs and WithGroup share the queue, the
// background sender and the Stats of the Handler they came from.
type Handler struct {
	s     *sink
	inner slog.Handler // a slog.JSONHandler writing into s.fmtBuf
}

type event struct {
	ts  int64 // Unix milliseconds
	msg string
}

type flushReq struct {
	ctx  context.Context
	done chan error
}

type sink struct {
	api  API
	opts Options

	fmtMu  sync.Mutex
	fmtBuf bytes.Buffer

	queue   chan event
	flushes chan flushReq
	quit    chan struct{} // closed by Close
	exited  chan struct{} // closed when the sender returns

	closeMu   sync.RWMutex // held for reading while enqueuing, for writing by Close
	closed    bool
	closeOnce sync.Once

	handled, sent, dropped, rejected, truncated, requests atomic.Int64
	lastErr                                               atomic.Pointer[error]

	// Owned by the sender goroutine.
	pending      []event
	pendingBytes int
	ensured      bool
}

// New returns a Handler sending to api (usually a *cloudwatchlogs.Client)
// and starts its background sender; Close stops it.
func New(api API, opts *Options) (*Handler, error) {
	if api == nil {
		return nil, errors.New("cloudwatchslog: nil API client")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &sink{
		api:     api,
		opts:    o,
		queue:   make(chan event, o.QueueSize),
		flushes: make(chan flushReq),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	inner := slog.NewJSONHandler((*fmtWriter)(s), &slog.HandlerOptions{
		AddSource: o.AddSource, Level: o.Level, ReplaceAttr: o.ReplaceAttr,
	})
	go s.run()
	return &Handler{s: s, inner: inner}, nil
}

// NewFromConfig is New with a CloudWatch Logs client made from cfg (the
// standard AWS configuration: config.LoadDefaultConfig). optFns apply to the
// client, e.g. to set BaseEndpoint or the retryer.
func NewFromConfig(cfg aws.Config, opts *Options, optFns ...func(*cloudwatchlogs.Options)) (*Handler, error) {
	return New(cloudwatchlogs.NewFromConfig(cfg, optFns...), opts)
}

// fmtWriter receives the JSON text of one record, under s.fmtMu.
type fmtWriter sink

func (w *fmtWriter) Write(p []byte) (int, error) { return w.fmtBuf.Write(p) }

// Enabled reports whether level is at or above Options.Level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// WithAttrs returns a Handler whose records carry attrs.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{s: h.s, inner: h.inner.WithAttrs(attrs)}
}

// WithGroup returns a Handler that qualifies later attributes with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{s: h.s, inner: h.inner.WithGroup(name)}
}

// Handle formats r as JSON and queues it. It never waits for the network:
// if the queue is full the record is dropped and counted.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.s
	ts := r.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	s.fmtMu.Lock()
	s.fmtBuf.Reset()
	err := h.inner.Handle(ctx, r)
	msg := string(bytes.TrimRight(s.fmtBuf.Bytes(), "\n"))
	s.fmtMu.Unlock()
	if err != nil {
		s.dropped.Add(1)
		return fmt.Errorf("cloudwatchslog: format record: %w", err)
	}
	if len(msg) > MaxMessageBytes {
		msg = truncate(msg, MaxMessageBytes)
		s.truncated.Add(1)
	}
	ev := event{ts: ts.UnixMilli(), msg: msg}

	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		s.dropped.Add(1)
		return ErrClosed
	}
	select {
	case s.queue <- ev:
		s.handled.Add(1)
		return nil
	default:
		s.dropped.Add(1)
		return fmt.Errorf("%w: queue of %d records is full", ErrDropped, cap(s.queue))
	}
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Stats returns the counters so far.
func (h *Handler) Stats() Stats {
	s := h.s
	st := Stats{
		Handled:   s.handled.Load(),
		Sent:      s.sent.Load(),
		Dropped:   s.dropped.Load(),
		Rejected:  s.rejected.Load(),
		Truncated: s.truncated.Load(),
		Requests:  s.requests.Load(),
	}
	if p := s.lastErr.Load(); p != nil {
		st.LastError = *p
	}
	return st
}

// Flush sends every record queued before the call and returns when
// CloudWatch has answered or ctx is done. Records of a batch that failed are
// dropped and counted; the error says why.
func (h *Handler) Flush(ctx context.Context) error {
	s := h.s
	req := flushReq{ctx: ctx, done: make(chan error, 1)}
	select {
	case s.flushes <- req:
	case <-s.exited:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("cloudwatchslog: flush: %w", context.Cause(ctx))
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		// The sender sees the same ctx and abandons its request promptly.
		return fmt.Errorf("cloudwatchslog: flush: %w", context.Cause(ctx))
	}
}

// Close flushes what is queued within ctx, stops the background sender and
// reports what was lost over the handler's life: the error wraps ErrDropped
// if any record was dropped or rejected. Records handled after Close are
// dropped and counted. Close is idempotent; later calls return the totals.
func (h *Handler) Close(ctx context.Context) error {
	s := h.s
	var flushErr error
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed = true
		s.closeMu.Unlock()
		flushErr = h.Flush(ctx)
		close(s.quit)
		select {
		case <-s.exited:
		case <-ctx.Done():
			// The sender's in-flight call uses ctx and returns soon; it then
			// counts the rest as dropped and exits.
		}
	})
	st := h.Stats()
	if st.Lost() > 0 {
		return errors.Join(flushErr, fmt.Errorf("%w: %d dropped, %d rejected by CloudWatch, %d sent (last error: %v)",
			ErrDropped, st.Dropped, st.Rejected, st.Sent, st.LastError))
	}
	return flushErr
}

// run is the background sender.
func (s *sink) run() {
	defer close(s.exited)
	tick := time.NewTicker(s.opts.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case ev := <-s.queue:
			s.add(ev)
			if len(s.pending) >= s.opts.MaxBatchEvents || s.pendingBytes >= s.opts.MaxBatchBytes {
				s.background()
			}
		case <-tick.C:
			if len(s.pending) > 0 {
				s.background()
			}
		case req := <-s.flushes:
			s.drainQueue()
			req.done <- s.sendAll(req.ctx)
		case <-s.quit:
			// Close has flushed (or given up); whatever is left is lost.
			s.drainQueue()
			if n := len(s.pending); n > 0 {
				s.drop(n, errors.New("cloudwatchslog: closed before these records could be sent"))
				s.pending = nil
			}
			return
		}
	}
}

func (s *sink) add(ev event) {
	s.pending = append(s.pending, ev)
	s.pendingBytes += len(ev.msg) + EventOverhead
}

func (s *sink) drainQueue() {
	for {
		select {
		case ev := <-s.queue:
			s.add(ev)
		default:
			return
		}
	}
}

func (s *sink) background() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // Close must not wait for a background send's full timeout.
		select {
		case <-s.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	_ = s.sendAll(ctx) // failures are counted and reported in sendAll
}

// sendAll sends everything pending, in batches within the service limits.
func (s *sink) sendAll(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	events := s.pending
	s.pending, s.pendingBytes = nil, 0
	var errs []error
	for _, batch := range splitBatches(events, s.opts.MaxBatchEvents, s.opts.MaxBatchBytes) {
		if err := s.put(ctx, batch); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// splitBatches sorts events by time (stable) and cuts them into requests
// within the limits: at most maxEvents events, at most maxBytes bytes
// (messages plus EventOverhead each), a span under MaxBatchSpan.
func splitBatches(events []event, maxEvents, maxBytes int) [][]event {
	slices.SortStableFunc(events, func(a, b event) int { return compareInt64(a.ts, b.ts) })
	var out [][]event
	for len(events) > 0 {
		n := batchLen(events, maxEvents, maxBytes)
		out = append(out, events[:n:n])
		events = events[n:]
	}
	return out
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// batchLen returns how many of the sorted events fit in one request (at
// least one).
func batchLen(events []event, maxEvents, maxBytes int) int {
	size := 0
	first := events[0].ts
	for i, ev := range events {
		sz := len(ev.msg) + EventOverhead
		if i == maxEvents || (i > 0 && size+sz > maxBytes) ||
			ev.ts-first > MaxBatchSpan.Milliseconds() {
			return i
		}
		size += sz
	}
	return len(events)
}

func (s *sink) drop(n int, err error) {
	s.dropped.Add(int64(n))
	s.setErr(err)
	s.opts.OnError(fmt.Errorf("%w: %d records: %w", ErrDropped, n, err))
}

func (s *sink) setErr(err error) { s.lastErr.Store(&err) }

// put sends one batch, creating the group and stream first if needed.
func (s *sink) put(ctx context.Context, batch []event) error {
	in := &cloudwatchlogs.PutLogEventsInput{
		LogGroupName:  aws.String(s.opts.Group),
		LogStreamName: aws.String(s.opts.Stream),
		LogEvents:     make([]types.InputLogEvent, len(batch)),
	}
	for i, ev := range batch {
		in.LogEvents[i] = types.InputLogEvent{Timestamp: aws.Int64(ev.ts), Message: aws.String(ev.msg)}
	}
	var out *cloudwatchlogs.PutLogEventsOutput
	err := s.ensure(ctx)
	if err == nil {
		out, err = s.call(ctx, in)
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) && !s.opts.NoCreate {
			s.ensured = false // deleted under us: create again, once
			if err = s.ensure(ctx); err == nil {
				out, err = s.call(ctx, in)
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("cloudwatchslog: PutLogEvents to %s/%s (%d events): %w", s.opts.Group, s.opts.Stream, len(batch), err)
		s.drop(len(batch), err)
		return err
	}
	s.requests.Add(1)
	rejected := rejectedCount(out.RejectedLogEventsInfo, len(batch))
	s.sent.Add(int64(len(batch) - rejected))
	if rejected > 0 {
		s.rejected.Add(int64(rejected))
		err := fmt.Errorf("cloudwatchslog: CloudWatch rejected %d of %d events (too old, too new or expired)", rejected, len(batch))
		s.setErr(err)
		s.opts.OnError(fmt.Errorf("%w: %w", ErrDropped, err))
	}
	return nil
}

func (s *sink) call(ctx context.Context, in *cloudwatchlogs.PutLogEventsInput) (*cloudwatchlogs.PutLogEventsOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	return s.api.PutLogEvents(ctx, in)
}

// rejectedCount counts the events RejectedLogEventsInfo refers to: indexes
// from TooNewLogEventStartIndex on, and up to TooOldLogEventEndIndex and
// ExpiredLogEventEndIndex inclusive.
func rejectedCount(info *types.RejectedLogEventsInfo, n int) int {
	if info == nil {
		return 0
	}
	reject := make([]bool, n)
	if i := info.TooNewLogEventStartIndex; i != nil {
		for j := max(int(*i), 0); j < n; j++ {
			reject[j] = true
		}
	}
	for _, end := range []*int32{info.TooOldLogEventEndIndex, info.ExpiredLogEventEndIndex} {
		if end != nil {
			for j := 0; j <= int(*end) && j < n; j++ {
				reject[j] = true
			}
		}
	}
	c := 0
	for _, r := range reject {
		if r {
			c++
		}
	}
	return c
}

// ensure creates the log group and stream unless they are known to exist.
func (s *sink) ensure(ctx context.Context) error {
	if s.ensured || s.opts.NoCreate {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	var exists *types.ResourceAlreadyExistsException
	_, groupErr := s.api.CreateLogGroup(ctx, &cloudwatchlogs.CreateLogGroupInput{LogGroupName: aws.String(s.opts.Group)})
	if errors.As(groupErr, &exists) {
		groupErr = nil
	}
	// Try the stream even if the group failed: a role without
	// logs:CreateLogGroup may still write to a group made elsewhere.
	_, streamErr := s.api.CreateLogStream(ctx, &cloudwatchlogs.CreateLogStreamInput{
		LogGroupName: aws.String(s.opts.Group), LogStreamName: aws.String(s.opts.Stream),
	})
	if errors.As(streamErr, &exists) {
		streamErr = nil
	}
	if streamErr != nil {
		return fmt.Errorf("create log stream %s/%s: %w", s.opts.Group, s.opts.Stream, errors.Join(groupErr, streamErr))
	}
	s.ensured = true
	return nil
}
