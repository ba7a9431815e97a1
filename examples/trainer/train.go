package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spotcheck/spotcheck/interrupt"
)

type trainer struct {
	opts   *options
	log    *slog.Logger
	bar    *progressbar.ProgressBar
	stdout io.Writer
}

func (t *trainer) train(parent context.Context) error {
	o := t.opts
	// 1. Watch for interruptions first, so that a notice that arrives while
	// we load is not missed.
	var sources []interrupt.Source
	if o.Detect {
		cloud, srcs := interrupt.Detect(parent, &interrupt.DetectOptions{Grace: o.Grace, Logger: t.log})
		t.log.Info("watching for interruptions", "cloud", string(cloud), "sources", len(srcs))
		sources = srcs
	} else {
		sources = []interrupt.Source{interrupt.Signals(o.Grace)}
	}
	var sim *simulated
	if o.InterruptAt > 0 {
		sim = &simulated{grace: o.Grace, fire: make(chan int64, 1)}
		sources = append(sources, sim)
	}
	w := interrupt.Watch(parent, &interrupt.Options{
		Logger: t.log,
		OnNotice: func(n *interrupt.Notice) {
			if n.Advisory {
				t.log.Info("advisory notice; training continues", "kind", string(n.Kind), "source", n.Source, "detail", n.Detail)
				return
			}
			t.log.Warn("interruption notice", "kind", string(n.Kind), "source", n.Source, "advisory", n.Advisory,
				"deadline", n.Deadline, "detail", n.Detail)
		},
	}, sources...)
	defer w.Stop()
	ctx := w.Context()

	// 2. The checkpoint store.
	url, err := storeURL(o.Store)
	if err != nil {
		return fmt.Errorf("-store %q: %w", o.Store, err)
	}
	store, err := openStore(parent, url, o, t.log)
	if err != nil {
		return fmt.Errorf("-store %q: %w", o.Store, err)
	}
	defer store.Close()

	// 3. Data, model, optimizer; then resume if there is a checkpoint.
	all, err := loadDigits()
	if err != nil {
		return err
	}
	trainSet, testSet := split(all, o.Seed, 0.2)
	cfg := runConfig{Seed: o.Seed, Batch: o.Batch, LR: o.LR, Hidden: o.Hidden}
	model, err := newMLP(o.Batch, o.Hidden, o.Seed)
	if err != nil {
		return err
	}
	defer model.Close()
	opt := newAdam(o.LR, model.params)
	ld := newLoader(o.Seed, trainSet.Len())
	var hist history
	var step int64

	names := make([]string, len(model.params))
	for i, p := range model.params {
		names[i] = p.Name
	}
	snap, err := store.Latest(parent, names)
	if err != nil {
		return fmt.Errorf("reading the latest checkpoint: %w", err)
	}
	if snap != nil {
		if err := cfg.check(snap.Config); err != nil {
			return fmt.Errorf("checkpoint at step %d in %s: %w", snap.Step, url, err)
		}
		if err := snap.restore(model, opt, ld, &hist); err != nil {
			return fmt.Errorf("checkpoint at step %d in %s: %w", snap.Step, url, err)
		}
		step = snap.Step
		kind, reason := eventResumedLost, "no interruption recorded at this step: the last run was killed (steps after this checkpoint are redone) or stopped right after a periodic checkpoint"
		if n := len(hist.Events); n > 0 && hist.Events[n-1].Kind == eventInterrupted && hist.Events[n-1].Step == step {
			kind, reason = eventResumed, "after "+hist.Events[n-1].Reason
		}
		if step < o.Steps {
			hist.Events = append(hist.Events, event{Step: step, Kind: kind, Reason: reason, Time: time.Now().UTC()})
		}
		t.log.Info("resumed", "step", step, "store", url, "reason", reason, "epoch", ld.Epoch)
	} else {
		t.log.Info("starting from scratch", "seed", o.Seed, "store", url, "train", trainSet.Len(), "test", testSet.Len())
	}
	lastSaved := int64(-1) // step of the newest checkpoint in the store
	if snap != nil {
		lastSaved = step
	}

	// 4. Train.
	if step < o.Steps {
		t.log.Info("training", "from", step, "to", o.Steps, "batch", o.Batch, "lr", o.LR, "hidden", o.Hidden)
	}
	if t.bar != nil {
		t.bar.ChangeMax64(o.Steps)
		_ = t.bar.Set64(step)
	}
	sched := newScheduler(o)
	saves := 0                // periodic checkpoints in this run
	var blocked time.Duration // time the loop spent in them
	logEvery := o.LogEvery
	start, startStep := time.Now(), step
	for step < o.Steps && ctx.Err() == nil {
		loss, err := model.step(trainSet, ld.next(o.Batch))
		if err != nil {
			return fmt.Errorf("step %d: %w", step+1, err)
		}
		if err := opt.update(model.params); err != nil {
			return fmt.Errorf("step %d: %w", step+1, err)
		}
		step++
		hist.Loss = append(hist.Loss, loss)
		if math.IsNaN(loss) {
			return fmt.Errorf("step %d: loss is NaN (try a smaller -lr)", step)
		}
		if t.bar != nil {
			_ = t.bar.Set64(step)
		} else if step%logEvery == 0 {
			t.log.Info("progress", "step", step, "loss", loss, "epoch", ld.Epoch,
				"steps_per_s", float64(step-startStep)/time.Since(start).Seconds())
		}
		if sim != nil && step == o.InterruptAt {
			sim.fire <- step
			<-ctx.Done() // the watcher cancels promptly; stop right here, as a real notice would
			break
		}
		if step < o.Steps && sched.due(step, time.Now()) {
			snap, err := takeSnapshot(step, cfg, model, opt, ld, &hist)
			if err != nil {
				return err
			}
			// Not ctx: a notice must not cancel a save in flight; the
			// emergency save waits for it within the grace period.
			cost, err := store.Save(context.WithoutCancel(ctx), snap, o.Async)
			if err != nil {
				if ctx.Err() != nil {
					break // interrupted during a save: the emergency save follows
				}
				return fmt.Errorf("checkpoint at step %d: %w", step, err)
			}
			sched.saved(cost)
			lastSaved = step
			saves++
			blocked += cost
		}
	}

	// 5a. Interrupted: emergency save within the notice's deadline.
	if ctx.Err() != nil && step < o.Steps {
		return t.emergency(ctx, store, step, lastSaved, func() (*snapshot, error) {
			return takeSnapshot(step, cfg, model, opt, ld, &hist)
		}, &hist)
	}

	// 5b. Done: final checkpoint, metrics.
	if t.bar != nil {
		_ = t.bar.Finish()
	}
	if lastSaved < step {
		fin, err := takeSnapshot(step, cfg, model, opt, ld, &hist)
		if err != nil {
			return err
		}
		if _, err := store.Save(parent, fin, false); err != nil {
			return fmt.Errorf("final checkpoint at step %d: %w", step, err)
		}
	}
	if err := store.Wait(parent); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	acc := model.accuracy(testSet)
	digest := model.digest()
	t.log.Info("done", "step", step, "test_accuracy", acc, "weights_sha256", digest, "periodic_checkpoints", saves,
		"checkpoint_blocked", blocked.String(),
		"train_time", time.Since(start).Round(time.Millisecond).String())
	t.plot(&hist)
	fmt.Fprintf(t.stdout, "test accuracy: %.4f (%d test images)\n", acc, testSet.Len())
	fmt.Fprintf(t.stdout, "final weights sha256: %s\n", digest)
	return nil
}

func (t *trainer) emergency(ctx context.Context, store *ckptStore, step, lastSaved int64, take func() (*snapshot, error), hist *history) error {
	reason := "interruption"
	if n, ok := interrupt.FromContext(ctx); ok {
		reason = fmt.Sprintf("%s notice from %s", n.Kind, n.Source)
	}
	if t.bar != nil {
		_ = t.bar.Exit()
	}
	hist.Events = append(hist.Events, event{Step: step, Kind: eventInterrupted, Reason: reason, Time: time.Now().UTC()})
	gctx, cancel := interrupt.GraceContext(ctx, t.opts.Margin)
	defer cancel()
	dl, _ := gctx.Deadline()
	t.log.Warn("stopping at step boundary for an emergency checkpoint", "step", step, "reason", reason,
		"save_deadline", dl)
	began := time.Now()
	how := "emergency"
	var err error
	if lastSaved == step {
		// The periodic checkpoint of this very step is (being) saved: wait
		// for it. The interruption event is then not in the checkpoint, so
		// the resume is marked as one without an emergency checkpoint.
		how = "periodic checkpoint of this step"
	} else {
		var snap *snapshot
		if snap, err = take(); err == nil {
			_, err = store.Save(gctx, snap, false)
		}
	}
	if werr := store.Wait(gctx); err == nil {
		err = werr
	}
	if err != nil {
		t.log.Error("emergency checkpoint failed; a rerun resumes from an older checkpoint",
			"step", step, "last_saved", lastSaved, "err", err)
	} else {
		t.log.Warn("emergency checkpoint saved", "step", step, "by", how,
			"took", time.Since(began).Round(time.Microsecond).String(), "exit_code", exitInterrupted)
	}
	t.plot(hist)
	return fmt.Errorf("%w at step %d (%s)", errInterrupted, step, reason)
}

func (t *trainer) plot(h *history) {
	if t.opts.Plot == "" || len(h.Loss) == 0 {
		return
	}
	title := fmt.Sprintf("digits MLP (seed %d): %d steps; interruptions: %d, resumes: %d", t.opts.Seed, len(h.Loss),
		countEvents(h, eventInterrupted), countEvents(h, eventResumed)+countEvents(h, eventResumedLost))
	if err := writePlot(t.opts.Plot, h, title); err != nil {
		t.log.Error("loss curve", "path", t.opts.Plot, "err", err)
		return
	}
	t.log.Info("loss curve written", "path", t.opts.Plot)
}

func countEvents(h *history, kind string) int {
	n := 0
	for _, e := range h.Events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

var _ = errors.New
