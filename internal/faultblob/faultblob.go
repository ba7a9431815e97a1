package faultblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
)

// ErrInjected is the default error returned by a fault.
var ErrInjected = errors.New("faultblob: injected fault")

// Op is a kind of bucket operation.
type Op string

// Operation kinds. OpAny matches every kind in a Rule.
const (
	OpAny        Op = ""
	OpWrite      Op = "write"
	OpClose      Op = "close"
	OpRead       Op = "read"
	OpList       Op = "list"
	OpDelete     Op = "delete"
	OpAttributes Op = "attributes"
	OpCopy       Op = "copy"
)

// Action is what a rule does when it fires.
type Action int

// Actions. Not every action makes sense for every Op; see each constant.
const (
	// Fail makes the operation return Rule.Err without taking effect. For
	// OpWrite, the first Rule.Bytes bytes are accepted, then Write fails and
	// the object is never created.
	Fail Action = iota + 1
	// FailAfter lets the operation take effect and then returns Rule.Err
	// (a lost acknowledgement). Meaningful for OpClose, OpDelete, OpCopy;
	// other ops treat it as Fail.
	FailAfter
	// Truncate keeps only the first Rule.Bytes bytes: for OpWrite the
	// object is silently stored short and Close succeeds; for OpRead the
	// reader returns io.EOF after Rule.Bytes bytes.
	Truncate
	// Corrupt flips the bits of the byte at Rule.Offset (relative to the
	// object's start) as it is read (OpRead) or written (OpWrite).
	Corrupt
	// Delay sleeps Rule.Duration (or until the context is done) before the
	// operation proceeds.
	Delay
	// Hang blocks until the operation's context is done and returns its
	// error. For OpWrite it hangs after Rule.Bytes bytes.
	Hang
)

func (a Action) String() string {
	switch a {
	case Fail:
		return "fail"
	case FailAfter:
		return "fail-after"
	case Truncate:
		return "truncate"
	case Corrupt:
		return "corrupt"
	case Delay:
		return "delay"
	case Hang:
		return "hang"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Rule describes one fault.
type Rule struct {
	Op       Op            // operation kind; OpAny matches all
	Key      string        // path.Match pattern on the key ("" matches all; for OpList, the list prefix)
	Nth      int           // fire on the Nth matching operation (1-based); 0 = every matching operation
	Action   Action        // what to do
	Err      error         // error to return; nil = ErrInjected
	Bytes    int64         // byte count for Fail/Truncate/Hang on writes and Truncate on reads
	Offset   int64         // byte offset for Corrupt
	Duration time.Duration // for Delay
}

// Event records a rule that fired.
type Event struct {
	Op     Op
	Key    string
	Action Action
	Seq    int64 // global sequence number of the operation (1-based, over all ops)
}

// Plan is a thread-safe set of rules and operation counters. The zero
// value is not usable; use NewPlan.
type Plan struct {
	mu     sync.Mutex
	rules  []*ruleState
	counts map[Op]int64
	total  int64
	fired  []Event
}

type ruleState struct {
	Rule
	seen int
}

// NewPlan returns a plan with the given rules.
func NewPlan(rules ...Rule) *Plan {
	p := &Plan{counts: map[Op]int64{}}
	for _, r := range rules {
		p.Add(r)
	}
	return p
}

// Add appends a rule. Its Nth counts matching operations from now on.
func (p *Plan) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &ruleState{Rule: r})
}

// Clear removes all rules (counters are kept).
func (p *Plan) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Reset removes all rules, counters and recorded events.
func (p *Plan) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
	p.counts = map[Op]int64{}
	p.total = 0
	p.fired = nil
}

// Count returns how many operations of kind op were seen; OpAny = all.
func (p *Plan) Count(op Op) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op == OpAny {
		return p.total
	}
	return p.counts[op]
}

// Fired returns the faults that fired, in order.
func (p *Plan) Fired() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.fired...)
}

// match counts one operation and returns the first rule that fires, if any.
func (p *Plan) match(op Op, key string) *Rule {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[op]++
	p.total++
	var hit *Rule
	for _, r := range p.rules {
		if r.Op != OpAny && r.Op != op {
			continue
		}
		if r.Key != "" {
			if ok, _ := path.Match(r.Key, key); !ok {
				continue
			}
		}
		r.seen++
		if hit == nil && (r.Nth == 0 || r.seen == r.Nth) {
			rr := r.Rule
			hit = &rr
		}
	}
	if hit != nil {
		p.fired = append(p.fired, Event{Op: op, Key: key, Action: hit.Action, Seq: p.total})
	}
	return hit
}

func (r *Rule) err() error {
	if r.Err != nil {
		return r.Err
	}
	return ErrInjected
}

// wait sleeps d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pre applies the actions that happen before an operation: Fail, Delay,
// Hang. It reports whether the operation should proceed and, if so,
// whether to fail after it (FailAfter).
func pre(ctx context.Context, r *Rule) (failAfter bool, err error) {
	if r == nil {
		return false, nil
	}
	switch r.Action {
	case Fail, Truncate, Corrupt:
		return false, r.err()
	case FailAfter:
		return true, nil
	case Delay:
		return false, wait(ctx, r.Duration)
	case Hang:
		<-ctx.Done()
		return false, ctx.Err()
	}
	return false, nil
}

// Wrap returns a bucket that forwards every operation to b, injecting the
// faults of plan (nil = none). Closing the returned bucket closes b.
func Wrap(b *blob.Bucket, plan *Plan) *blob.Bucket {
	if plan == nil {
		plan = NewPlan()
	}
	return blob.NewBucket(&bucket{b: b, plan: plan})
}

type bucket struct {
	b    *blob.Bucket
	plan *Plan
}

var _ driver.Bucket = (*bucket)(nil)

func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode {
	if errors.Is(err, context.Canceled) {
		return gcerrors.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return gcerrors.DeadlineExceeded
	}
	return gcerrors.Code(err)
}

func (b *bucket) As(i any) bool { return b.b.As(i) }

func (b *bucket) ErrorAs(err error, i any) bool { return b.b.ErrorAs(err, i) }

func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	r := b.plan.match(OpAttributes, key)
	if _, err := pre(ctx, r); err != nil {
		return nil, err
	}
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	if r != nil && r.Action == FailAfter {
		return nil, r.err()
	}
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            a.ModTime,
		Size:               a.Size,
		MD5:                a.MD5,
		ETag:               a.ETag,
		AsFunc:             a.As,
	}, nil
}

func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	var o driver.ListOptions
	if opts != nil {
		o = *opts
	}
	r := b.plan.match(OpList, o.Prefix)
	if _, err := pre(ctx, r); err != nil {
		return nil, err
	}
	tok := o.PageToken
	if len(tok) == 0 {
		tok = blob.FirstPageToken
	}
	size := o.PageSize
	if size <= 0 {
		size = 1000
	}
	objs, next, err := b.b.ListPage(ctx, tok, size, &blob.ListOptions{
		Prefix:     o.Prefix,
		Delimiter:  o.Delimiter,
		BeforeList: o.BeforeList,
	})
	if err != nil {
		return nil, err
	}
	if r != nil && r.Action == FailAfter {
		return nil, r.err()
	}
	page := &driver.ListPage{NextPageToken: next}
	for _, lo := range objs {
		page.Objects = append(page.Objects, &driver.ListObject{
			Key:     lo.Key,
			ModTime: lo.ModTime,
			Size:    lo.Size,
			MD5:     lo.MD5,
			IsDir:   lo.IsDir,
			AsFunc:  lo.As,
		})
	}
	return page, nil
}

func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	r := b.plan.match(OpRead, key)
	if r != nil {
		switch r.Action {
		case Truncate, Corrupt:
		default:
			if _, err := pre(ctx, r); err != nil {
				return nil, err
			}
		}
	}
	var ro blob.ReaderOptions
	if opts != nil {
		ro.BeforeRead = opts.BeforeRead
	}
	in, err := b.b.NewRangeReader(ctx, key, offset, length, &ro)
	if err != nil {
		return nil, err
	}
	if r != nil && r.Action == FailAfter {
		_ = in.Close()
		return nil, r.err()
	}
	rd := &reader{in: in, pos: offset, rule: r}
	return rd, nil
}

type reader struct {
	in   *blob.Reader
	pos  int64 // offset in the object of the next byte
	rule *Rule
}

func (r *reader) Read(p []byte) (int, error) {
	if r.rule != nil && r.rule.Action == Truncate {
		left := r.rule.Bytes - r.pos
		if left <= 0 {
			return 0, io.EOF
		}
		if int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := r.in.Read(p)
	if r.rule != nil && r.rule.Action == Corrupt {
		if off := r.rule.Offset - r.pos; off >= 0 && off < int64(n) {
			p[off] ^= 0xff
		}
	}
	r.pos += int64(n)
	return n, err
}

func (r *reader) Close() error { return r.in.Close() }

func (r *reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{
		ContentType: r.in.ContentType(),
		ModTime:     r.in.ModTime(),
		Size:        r.in.Size(),
	}
}

func (r *reader) As(i any) bool { return r.in.As(i) }

func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if opts == nil {
		opts = &driver.WriterOptions{}
	}
	r := b.plan.match(OpWrite, key)
	if r != nil {
		switch r.Action {
		case Delay:
			if err := wait(ctx, r.Duration); err != nil {
				return nil, err
			}
			r = nil
		case FailAfter:
			r.Action = Fail // a write cannot take effect before Close
		}
	}
	ictx, cancel := context.WithCancel(ctx)
	in, err := b.b.NewWriter(ictx, key, &blob.WriterOptions{
		BufferSize:                  opts.BufferSize,
		MaxConcurrency:              opts.MaxConcurrency,
		CacheControl:                opts.CacheControl,
		ContentDisposition:          opts.ContentDisposition,
		ContentEncoding:             opts.ContentEncoding,
		ContentLanguage:             opts.ContentLanguage,
		ContentType:                 contentType,
		ContentMD5:                  opts.ContentMD5,
		Metadata:                    opts.Metadata,
		DisableContentTypeDetection: true,
		BeforeWrite:                 opts.BeforeWrite,
		IfNotExist:                  opts.IfNotExist,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return &writer{ctx: ctx, cancel: cancel, in: in, key: key, rule: r, plan: b.plan}, nil
}

type writer struct {
	ctx    context.Context
	cancel context.CancelFunc
	in     *blob.Writer
	key    string
	rule   *Rule
	plan   *Plan
	n      int64 // bytes accepted so far
	err    error // sticky write error
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	total := len(p)
	if r := w.rule; r != nil {
		switch r.Action {
		case Fail, Hang:
			if w.n+int64(len(p)) > r.Bytes {
				keep := max(r.Bytes-w.n, 0)
				if keep > 0 {
					if _, err := w.in.Write(p[:keep]); err != nil {
						w.err = err
						return 0, err
					}
					w.n += keep
				}
				if r.Action == Hang {
					<-w.ctx.Done()
					w.err = w.ctx.Err()
				} else {
					w.err = r.err()
				}
				return int(keep), w.err
			}
		case Truncate:
			keep := min(max(r.Bytes-w.n, 0), int64(len(p)))
			if keep > 0 {
				if _, err := w.in.Write(p[:keep]); err != nil {
					w.err = err
					return 0, err
				}
			}
			w.n += int64(len(p))
			return total, nil
		case Corrupt:
			if off := r.Offset - w.n; off >= 0 && off < int64(len(p)) {
				q := append([]byte(nil), p...)
				q[off] ^= 0xff
				p = q
			}
		}
	}
	n, err := w.in.Write(p)
	w.n += int64(n)
	if err != nil {
		w.err = err
	}
	return n, err
}

func (w *writer) abort(err error) error {
	w.cancel()
	_ = w.in.Close()
	return err
}

func (w *writer) Close() error {
	defer w.cancel()
	if w.err != nil {
		return w.abort(w.err)
	}
	if r := w.rule; r != nil && r.Action == Fail {
		// Fewer than Bytes bytes were written: fail at close.
		return w.abort(r.err())
	}
	if r := w.rule; r != nil && r.Action == Hang {
		<-w.ctx.Done()
		return w.abort(w.ctx.Err())
	}
	c := w.plan.match(OpClose, w.key)
	if c != nil {
		switch c.Action {
		case Fail, Truncate, Corrupt:
			return w.abort(c.err())
		case Delay:
			if err := wait(w.ctx, c.Duration); err != nil {
				return w.abort(err)
			}
		case Hang:
			<-w.ctx.Done()
			return w.abort(w.ctx.Err())
		}
	}
	if err := w.in.Close(); err != nil {
		return err
	}
	if c != nil && c.Action == FailAfter {
		return c.err()
	}
	return nil
}

func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	r := b.plan.match(OpCopy, dstKey)
	failAfter, err := pre(ctx, r)
	if err != nil {
		return err
	}
	var co blob.CopyOptions
	if opts != nil {
		co.BeforeCopy = opts.BeforeCopy
	}
	if err := b.b.Copy(ctx, dstKey, srcKey, &co); err != nil {
		return err
	}
	if failAfter {
		return r.err()
	}
	return nil
}

func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	r := b.plan.match(OpDelete, key)
	failAfter, err := pre(ctx, r)
	if err != nil {
		return err
	}
	var do blob.DeleteOptions
	if opts != nil {
		do.BeforeDelete = opts.BeforeDelete
	}
	if err := b.b.DeleteWithOptions(ctx, key, &do); err != nil {
		return err
	}
	if failAfter {
		return r.err()
	}
	return nil
}

func (b *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	var so blob.SignedURLOptions
	if opts != nil {
		so = blob.SignedURLOptions{
			Expiry:                   opts.Expiry,
			Method:                   opts.Method,
			ContentType:              opts.ContentType,
			EnforceAbsentContentType: opts.EnforceAbsentContentType,
			BeforeSign:               opts.BeforeSign,
		}
	}
	return b.b.SignedURL(ctx, key, &so)
}

func (b *bucket) Close() error { return b.b.Close() }

// String describes a rule, for test failure messages.
func (r Rule) String() string {
	var sb strings.Builder
	op := string(r.Op)
	if op == "" {
		op = "any"
	}
	fmt.Fprintf(&sb, "%s #%d %s", op, r.Nth, r.Action)
	if r.Key != "" {
		fmt.Fprintf(&sb, " key=%s", r.Key)
	}
	switch r.Action {
	case Fail, Truncate, Hang:
		fmt.Fprintf(&sb, " bytes=%d", r.Bytes)
	case Corrupt:
		fmt.Fprintf(&sb, " offset=%d", r.Offset)
	case Delay:
		fmt.Fprintf(&sb, " %s", r.Duration)
	}
	return sb.String()
}
