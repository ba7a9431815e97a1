package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Signals returns a source that reports an OS signal as a final notice of
// kind signal, with deadline = receipt + grace. Kubernetes delivers a spot
// reclaim (node drain) to a pod as SIGTERM and kills it
// terminationGracePeriodSeconds later: pass that period as grace. With no
// sigs, it watches SIGTERM and SIGINT.
//
// The signals are caught from the moment the source is handed to Watch or
// NotifyContext. After the first one is reported the source stops catching,
// so a second signal gets the default behaviour (a second Ctrl-C kills the
// process), as does any signal after Stop.
func Signals(grace time.Duration, sigs ...os.Signal) Source {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	return &signalSource{grace: grace, sigs: sigs}
}

type signalSource struct {
	grace time.Duration
	sigs  []os.Signal
}

func (*signalSource) Name() string { return SourceSignal }

// prepare registers the handler synchronously, before Watch (the
// package function) returns to the embedder, so that no signal sent after
// NotifyContext is lost.
func (s *signalSource) prepare() Source {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, s.sigs...)
	return &armedSignals{s: s, ch: ch}
}

func (s *signalSource) Watch(ctx context.Context, report func(*Notice)) error {
	return s.prepare().Watch(ctx, report)
}

// armedSignals is a signalSource whose handler is registered.
type armedSignals struct {
	s  *signalSource
	ch chan os.Signal
}

func (*armedSignals) Name() string { return SourceSignal }

func (a *armedSignals) Watch(ctx context.Context, report func(*Notice)) error {
	defer signal.Stop(a.ch)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case sig := <-a.ch:
		signal.Stop(a.ch)
		now := time.Now()
		report(&Notice{Kind: KindSignal, Source: SourceSignal, Deadline: now.Add(a.s.grace), Detected: now,
			ID: sig.String(), Detail: sig.String()})
		<-ctx.Done()
		return ctx.Err()
	}
}
