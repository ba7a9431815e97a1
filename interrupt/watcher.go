package interrupt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// A Source watches one channel through which a machine can be told that
// it goes away (a cloud metadata service, OS signals).
//
// Watch runs until ctx is done, calling report for every notice it sees,
// and then returns ctx's error; it returns another error only if it can
// never work (a malformed endpoint). Transient failures are the source's
// business: it retries them and never reports them. report is safe for
// concurrent use; a source may report the same event more than once, the
// Watcher delivers it once.
type Source interface {
	Name() string
	Watch(ctx context.Context, report func(*Notice)) error
}

// preparer is implemented by sources that must set something up before
// Watch returns to its caller (signal.Notify, so that a signal sent right
// after NotifyContext is not lost).
type preparer interface {
	prepare() Source
}

// Options configure a Watcher. The zero value (or nil) is valid.
type Options struct {
	// OnNotice, if set, is called once for every distinct notice, advisory
	// ones included, after the context has been cancelled for a notice that
	// cancels. Calls are serialized. It must return quickly and must not
	// call Stop.
	OnNotice func(*Notice)
	// Cancel decides whether a notice cancels the watcher's context. Nil
	// means: every notice that is not Advisory. Return true for
	// n.Advisory to act on rebalance recommendations or maintenance too.
	Cancel func(n *Notice) bool
	// Buffer is the capacity of the Notices channel (default 16). When the
	// channel is full a notice is dropped from the channel (and logged);
	// OnNotice and the context still see it.
	Buffer int
	// Logger receives retries and dropped notices; sources without a logger
	// of their own use it too. Nil means silent.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Cancel == nil {
		r.Cancel = func(n *Notice) bool { return !n.Advisory }
	}
	if r.Buffer <= 0 {
		r.Buffer = 16
	}
	if r.Logger == nil {
		r.Logger = discard
	}
	return r
}

var discard = slog.New(slog.DiscardHandler)

type loggerKey struct{}

// logger returns own if set, else the watcher's logger carried by ctx.
func logger(ctx context.Context, own *slog.Logger) *slog.Logger {
	if own != nil {
		return own
	}
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return discard
}

// A Watcher runs sources and turns their notices into a context
// cancellation, a channel and a callback. Create one with Watch.
type Watcher struct {
	opts    Options
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopSrc context.CancelFunc
	notices chan *Notice
	done    chan struct{}

	mu     sync.Mutex // guards seen, closed, first
	seen   map[string]bool
	closed bool
	first  *Notice

	cbMu sync.Mutex // serializes OnNotice

	stopOnce sync.Once
	errs     []error // written by source goroutines before done closes
	errMu    sync.Mutex
}

// Watch starts watching sources until parent is done or Stop is called.
// The watcher's Context is cancelled, with the Notice as its cause, on the
// first notice that opts.Cancel accepts (by default the first final one).
// Sources keep running after that, so that later notices still reach
// Notices and OnNotice, until Stop.
func Watch(parent context.Context, opts *Options, sources ...Source) *Watcher {
	o := opts.withDefaults()
	w := &Watcher{
		opts:    o,
		notices: make(chan *Notice, o.Buffer),
		done:    make(chan struct{}),
		seen:    make(map[string]bool),
	}
	w.ctx, w.cancel = context.WithCancelCause(parent)
	srcCtx, stopSrc := context.WithCancel(context.WithValue(parent, loggerKey{}, o.Logger))
	w.stopSrc = stopSrc

	var wg sync.WaitGroup
	for _, s := range sources {
		if s == nil {
			continue
		}
		if p, ok := s.(preparer); ok {
			s = p.prepare()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Watch(srcCtx, w.report)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("interrupt: source %s: %w", s.Name(), err)
				o.Logger.Error("interrupt source stopped", "source", s.Name(), "err", err)
				w.errMu.Lock()
				w.errs = append(w.errs, err)
				w.errMu.Unlock()
			}
		}()
	}
	go func() {
		wg.Wait()
		w.mu.Lock()
		w.closed = true
		close(w.notices)
		w.mu.Unlock()
		close(w.done)
	}()
	return w
}

// NotifyContext returns a copy of parent that is cancelled, with the
// *Notice as its cause (see FromContext), when one of the sources reports
// a final notice, when parent is done, or when stop is called, whichever
// happens first. Like os/signal.NotifyContext, stop releases the
// resources (goroutines, signal handlers, connections) and should be
// called as soon as the work under ctx is done; it waits for the sources
// to end.
func NotifyContext(parent context.Context, sources ...Source) (ctx context.Context, stop context.CancelFunc) {
	w := Watch(parent, nil, sources...)
	return w.Context(), func() { _ = w.Stop() }
}

func (w *Watcher) report(n *Notice) {
	if n == nil {
		return
	}
	if n.Detected.IsZero() {
		n.Detected = time.Now()
	}
	w.mu.Lock()
	if w.closed || w.seen[n.key()] {
		w.mu.Unlock()
		return
	}
	w.seen[n.key()] = true
	cancels := w.opts.Cancel(n)
	if cancels && w.first == nil {
		w.first = n
		w.cancel(n)
	}
	select {
	case w.notices <- n:
	default:
		w.opts.Logger.Warn("interrupt notice channel full, dropped from channel", "notice", n.Error())
	}
	w.mu.Unlock()

	w.opts.Logger.Info("interrupt notice", "source", n.Source, "kind", string(n.Kind), "id", n.ID,
		"advisory", n.Advisory, "deadline", n.Deadline, "cancels", cancels)
	if w.opts.OnNotice != nil {
		w.cbMu.Lock()
		defer w.cbMu.Unlock()
		w.opts.OnNotice(n)
	}
}

// Context returns the context cancelled on the first notice that cancels
// (cause: the *Notice), when the parent is done, or on Stop.
func (w *Watcher) Context() context.Context { return w.ctx }

// Notices returns a channel of every distinct notice, advisory ones
// included. It is closed after Stop, or after the parent is done and all
// sources have returned.
func (w *Watcher) Notices() <-chan *Notice { return w.notices }

// Done is closed when all sources have returned.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Stop stops all sources, cancels Context (if no notice did already) and
// waits until every goroutine the watcher started has returned. It
// returns the errors of sources that could not work at all. It is safe to
// call more than once.
func (w *Watcher) Stop() error {
	w.stopOnce.Do(func() {
		w.stopSrc()
		w.cancel(context.Canceled)
	})
	<-w.done
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return errors.Join(w.errs...)
}
