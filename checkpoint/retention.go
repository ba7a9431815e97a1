package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// Policy decides which committed checkpoints to keep. Keep gets the
// committed, intact checkpoints newest first and returns the steps to keep.
// Policies compose with Any; the Store always keeps the newest committed
// checkpoint whatever the policy says.
type Policy interface {
	Keep(infos []*Info) map[int64]bool
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(infos []*Info) map[int64]bool

// Keep implements Policy.
func (f PolicyFunc) Keep(infos []*Info) map[int64]bool { return f(infos) }

// KeepLast keeps the n newest checkpoints (the default is KeepLast(3)).
func KeepLast(n int) Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		keep := map[int64]bool{}
		for i := 0; i < n && i < len(infos); i++ {
			keep[infos[i].Step] = true
		}
		return keep
	})
}

// KeepAll keeps every checkpoint.
func KeepAll() Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		keep := map[int64]bool{}
		for _, i := range infos {
			keep[i.Step] = true
		}
		return keep
	})
}

// Mode says which direction of a metric is better.
type Mode int

const (
	// LowerIsBetter: e.g. a loss.
	LowerIsBetter Mode = iota
	// HigherIsBetter: e.g. an accuracy.
	HigherIsBetter
)

// KeepBest keeps the k checkpoints with the best value of metric (ties go
// to the newer). Checkpoints without the metric are not kept by it.
func KeepBest(k int, metric string, mode Mode) Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		var with []*Info
		for _, i := range infos {
			if _, ok := i.Metrics[metric]; ok {
				with = append(with, i)
			}
		}
		sort.SliceStable(with, func(a, b int) bool { // infos are newest first: stable keeps newer first on ties
			va, vb := with[a].Metrics[metric], with[b].Metrics[metric]
			if mode == HigherIsBetter {
				return va > vb
			}
			return va < vb
		})
		keep := map[int64]bool{}
		for i := 0; i < k && i < len(with); i++ {
			keep[with[i].Step] = true
		}
		return keep
	})
}

// KeepEvery keeps, for each window of n steps ([0,n), [n,2n), ...), the
// oldest checkpoint in it; so with saves every 100 steps, KeepEvery(1000)
// keeps steps 0, 1000, 2000, ... A kept checkpoint stays kept.
func KeepEvery(n int64) Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		if n <= 0 {
			return nil
		}
		return oldestPerBucket(infos, func(i *Info) int64 { return i.Step / n })
	})
}

// KeepEveryDuration keeps, for each window of d of creation time, the
// oldest checkpoint created in it.
func KeepEveryDuration(d time.Duration) Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		if d <= 0 {
			return nil
		}
		return oldestPerBucket(infos, func(i *Info) int64 { return i.Created.UnixNano() / int64(d) })
	})
}

func oldestPerBucket(infos []*Info, bucket func(*Info) int64) map[int64]bool {
	best := map[int64]*Info{}
	for _, i := range infos {
		b := bucket(i)
		if cur, ok := best[b]; !ok || i.Step < cur.Step {
			best[b] = i
		}
	}
	keep := map[int64]bool{}
	for _, i := range best {
		keep[i.Step] = true
	}
	return keep
}

// Any keeps a checkpoint if any of the policies keeps it.
func Any(policies ...Policy) Policy {
	return PolicyFunc(func(infos []*Info) map[int64]bool {
		keep := map[int64]bool{}
		for _, p := range policies {
			for s := range p.Keep(infos) {
				keep[s] = true
			}
		}
		return keep
	})
}

// dirState is what one listing of the store says about a step directory.
type dirState struct {
	step        int64
	hasManifest bool
	attempts    map[string]time.Time // attempt -> newest ModTime of its objects
}

// scan lists every object under steps/ (one request per 1000 objects).
func (s *Store) scan(ctx context.Context) ([]*dirState, error) {
	dirs := map[int64]*dirState{}
	it := s.b.List(&blob.ListOptions{Prefix: stepsPrefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list %s: %w", stepsPrefix, err)
		}
		rest := strings.TrimPrefix(o.Key, stepsPrefix)
		dir, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		step, ok := parseStepDir(stepsPrefix + dir + "/")
		if !ok {
			continue
		}
		d := dirs[step]
		if d == nil {
			d = &dirState{step: step, attempts: map[string]time.Time{}}
			dirs[step] = d
		}
		if file == manifestName {
			d.hasManifest = true
			continue
		}
		attempt, _, ok := strings.Cut(file, "/")
		if !ok {
			continue
		}
		if t := d.attempts[attempt]; o.ModTime.After(t) {
			d.attempts[attempt] = o.ModTime
		} else if _, seen := d.attempts[attempt]; !seen {
			d.attempts[attempt] = o.ModTime
		}
	}
	out := make([]*dirState, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].step > out[j].step })
	return out, nil
}

// Prune applies the retention policy and collects orphaned attempts. It
// runs after every successful commit; call it to prune on demand. It never
// deletes the newest committed checkpoint, anything younger than it, a
// checkpoint whose manifest is damaged (kept for inspection), an attempt
// of this Store still in flight, or an orphaned attempt younger than
// Options.GracePeriod. Deletion removes the manifest first.
func (s *Store) Prune(ctx context.Context) error {
	dirs, err := s.scan(ctx)
	if err != nil {
		return err
	}
	var (
		infos     []*Info
		committed = map[int64]*Manifest{}
		damaged   = map[int64]bool{}
		errs      []error
	)
	for _, d := range dirs {
		if !d.hasManifest {
			continue
		}
		m, err := s.readManifest(ctx, d.step)
		switch {
		case err == nil:
			committed[d.step] = m
			infos = append(infos, infoOf(m))
		case errors.Is(err, ErrNotFound): // deleted meanwhile
		case errors.Is(err, ErrCorrupt):
			damaged[d.step] = true
		default:
			return err
		}
	}
	keep := map[int64]bool{}
	if len(infos) > 0 {
		keep = s.opts.Retention.Keep(infos)
		if keep == nil {
			keep = map[int64]bool{}
		}
		keep[infos[0].Step] = true
	}
	for _, i := range infos {
		if keep[i.Step] {
			continue
		}
		s.opts.Logger.Debug("checkpoint: retention deletes", "step", i.Step)
		if err := s.Delete(ctx, i.Step); err != nil {
			errs = append(errs, err)
		}
		delete(committed, i.Step)
	}
	// Orphaned attempts.
	now := s.opts.Now()
	for _, d := range dirs {
		if damaged[d.step] {
			continue
		}
		m, isCommitted := committed[d.step]
		if d.hasManifest && !isCommitted {
			continue // deleted just now, or vanished: leave it
		}
		dir := stepDir(d.step)
		for attempt, mod := range d.attempts {
			if isCommitted && m.Attempt == attempt {
				continue
			}
			if s.isInflight(dir, attempt) || now.Sub(mod) < s.opts.GracePeriod {
				continue
			}
			s.opts.Logger.Debug("checkpoint: collecting orphaned attempt", "step", d.step, "attempt", attempt)
			if err := s.deletePrefix(ctx, dir+attempt+"/", func(string) bool { return true }); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
