package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/storage"
	"gocloud.dev/blob"
)

// ckptStore is the trainer's view of its checkpoints: a checkpoint.Store
// on the bucket storage.Open returns for -store, with an Async saver for
// periodic checkpoints.
type ckptStore struct {
	bucket *blob.Bucket
	store  *checkpoint.Store
	async  *checkpoint.Async
	log    *slog.Logger
}

func openStore(ctx context.Context, url string, o *options, log *slog.Logger) (*ckptStore, error) {
	b, err := storage.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s, err := checkpoint.New(b, &checkpoint.Options{Retention: checkpoint.KeepLast(o.Keep), Logger: log})
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	return &ckptStore{bucket: b, store: s, async: checkpoint.NewAsync(s, nil), log: log}, nil
}

// Close waits for a background save and closes the bucket.
func (c *ckptStore) Close() error {
	return errors.Join(c.async.Close(), c.bucket.Close())
}

// Latest returns the newest intact checkpoint decoded, or nil if there is none.
func (c *ckptStore) Latest(ctx context.Context, paramNames []string) (*snapshot, error) {
	ck, err := c.store.Latest(ctx)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, s := range ck.Fallback {
		c.log.Warn("skipped a damaged checkpoint", "step", s.Step, "err", s.Err)
	}
	return decodeSnapshot(ck.Step, paramNames, func(name string) (io.ReadCloser, error) { return ck.Open(ctx, name) })
}

func (c *ckptStore) meta(s *snapshot) checkpoint.Meta {
	m := checkpoint.Meta{
		Epoch:  s.Loader.Epoch,
		Labels: map[string]string{"format": stateFormat, "seed": strconv.FormatUint(s.Config.Seed, 10)},
	}
	if n := len(s.History.Loss); n > 0 {
		k := min(n, 50)
		sum := 0.0
		for _, v := range s.History.Loss[n-k:] {
			sum += v
		}
		m.Metrics = map[string]float64{"loss": sum / float64(k)}
	}
	return m
}

// Save checkpoints the snapshot: in the background if async (returning once
// the parts are encoded and handed over), else before returning. It
// returns how long the caller was blocked, the cost the Young/Daly schedule
// needs.
func (c *ckptStore) Save(ctx context.Context, s *snapshot, async bool) (time.Duration, error) {
	began := time.Now()
	if async {
		parts := map[string][]byte{}
		for name, p := range s.encodeParts() {
			var buf bytes.Buffer
			if _, err := p.WriteTo(&buf); err != nil {
				return 0, fmt.Errorf("encoding part %s: %w", name, err)
			}
			parts[name] = buf.Bytes()
		}
		if err := c.async.Save(ctx, s.Step, c.meta(s), parts); err != nil {
			return 0, err
		}
		c.log.Info("checkpoint handed over, saving in the background", "step", s.Step, "blocked", time.Since(began).String())
		return time.Since(began), nil
	}
	if err := c.async.Wait(ctx); err != nil {
		return 0, err
	}
	info, err := c.store.Save(ctx, s.Step, c.meta(s), s.encodeParts())
	if err != nil {
		return 0, err
	}
	took := time.Since(began)
	c.log.Info("checkpoint saved", "step", s.Step, "bytes", info.Size(), "took", took.String())
	return took, nil
}

// Wait waits for a background save and returns its error.
func (c *ckptStore) Wait(ctx context.Context) error { return c.async.Wait(ctx) }

// scheduler decides when to checkpoint: every -every steps, or when the
// Young/Daly schedule (interval sqrt(2 * save cost * MTBF)) says so.
type scheduler struct {
	every int64
	yd    *checkpoint.Schedule
}

func newScheduler(o *options) *scheduler {
	return &scheduler{every: o.Every, yd: checkpoint.NewSchedule(&checkpoint.ScheduleOptions{
		MTBF:        o.MTBF,
		Min:         time.Second, // this demo trains for seconds, not hours
		Max:         10 * time.Minute,
		InitialCost: 2 * time.Millisecond, // until the first save is measured
	})}
}

func (s *scheduler) due(step int64, now time.Time) bool {
	if s.every > 0 {
		return step%s.every == 0
	}
	return s.yd.Due(now)
}

// saved records the cost of a checkpoint (the time training was blocked).
func (s *scheduler) saved(cost time.Duration) { s.yd.Record(cost) }
