package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNotFound: no committed checkpoint (at that step).
	ErrNotFound = errors.New("checkpoint: not found")
	// ErrCorrupt: a manifest or part does not match what was committed.
	ErrCorrupt = errors.New("checkpoint: corrupt")
	// ErrStepExists: another writer already committed this step.
	ErrStepExists = errors.New("checkpoint: step already committed")
	// ErrInvalid: an invalid argument (step, part name, metadata).
	ErrInvalid = errors.New("checkpoint: invalid argument")
	// ErrClosed: the writer or Async was already committed, aborted or closed.
	ErrClosed = errors.New("checkpoint: closed")
)

// VerifyLevel says how much Latest checks before it returns a checkpoint.
type VerifyLevel int

const (
	// VerifyManifest checks that the manifest is intact (1 request).
	VerifyManifest VerifyLevel = iota
	// VerifySizes also checks that every part exists with its committed
	// size (one Attributes request per part); catches truncation.
	VerifySizes
	// VerifyAll reads and hashes every byte of every part.
	VerifyAll
)

// Options configure a Store. The zero value (or nil) gives the defaults.
type Options struct {
	// Retention decides which committed checkpoints survive a commit.
	// nil = KeepLast(3). The newest committed checkpoint is always kept.
	Retention Policy
	// GracePeriod: an attempt that is not referenced by a manifest is
	// garbage collected once its newest object is older than this.
	// Default 1h. Attempts of this Store still in flight are never collected.
	GracePeriod time.Duration
	// Verify is what Latest checks. Default VerifyManifest.
	Verify VerifyLevel
	// Parallelism is how many parts Save writes at once. Default 4.
	Parallelism int
	// WriterID names this writer in manifests. Default: a random id.
	WriterID string
	// AssumedThroughput (bytes/s) is used by EstimateSave before any save
	// was measured. Default 50 MB/s.
	AssumedThroughput float64
	// Logger receives warnings (fallbacks, failed hint updates, failed
	// retention). nil = silent.
	Logger *slog.Logger
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Retention == nil {
		r.Retention = KeepLast(3)
	}
	if r.GracePeriod <= 0 {
		r.GracePeriod = time.Hour
	}
	if r.Parallelism <= 0 {
		r.Parallelism = 4
	}
	if r.WriterID == "" {
		r.WriterID = randomHex(8)
	}
	if r.AssumedThroughput <= 0 {
		r.AssumedThroughput = 50e6
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// Store is a checkpoint store over a bucket. It is safe for concurrent use.
type Store struct {
	b    *blob.Bucket
	opts Options
	host string
	pid  int

	mu       sync.Mutex
	inflight map[string]int // step dir + attempt -> count
	est      estimator
}

// New returns a store that keeps checkpoints in b (use blob.PrefixedBucket
// or a ?prefix= URL to share a bucket). The caller keeps ownership of b.
func New(b *blob.Bucket, opts *Options) (*Store, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil bucket", ErrInvalid)
	}
	o := opts.withDefaults()
	if o.Verify < VerifyManifest || o.Verify > VerifyAll {
		return nil, fmt.Errorf("%w: Options.Verify %d", ErrInvalid, o.Verify)
	}
	if len(o.WriterID) > MaxValueLen {
		return nil, fmt.Errorf("%w: Options.WriterID %.40q", ErrInvalid, o.WriterID)
	}
	host, _ := os.Hostname()
	if len(host) > MaxValueLen {
		host = host[:MaxValueLen]
	}
	return &Store{b: b, opts: o, host: host, pid: os.Getpid(), inflight: map[string]int{}}, nil
}

// Layout. Step directories sort newest first: the key is the distance of
// the step from math.MaxInt64, so a single listing page of "steps/" with
// delimiter "/" starts at the newest step whatever the size of the store.
const (
	stepsPrefix  = "steps/"
	manifestName = "MANIFEST.json"
	latestKey    = "LATEST"
)

func stepDir(step int64) string {
	return fmt.Sprintf("%s%019d/", stepsPrefix, math.MaxInt64-step)
}

func manifestKey(step int64) string { return stepDir(step) + manifestName }

func partKey(step int64, attempt, name string) string {
	return stepDir(step) + attempt + "/" + name
}

// parseStepDir parses "steps/<key>/" into a step.
func parseStepDir(dir string) (int64, bool) {
	s, ok := strings.CutPrefix(dir, stepsPrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "/")
	if !ok || len(s) != 19 {
		return 0, false
	}
	inv, err := strconv.ParseInt(s, 10, 64)
	if err != nil || inv < 0 {
		return 0, false
	}
	return math.MaxInt64 - inv, true
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Store) track(step int64, attempt string, delta int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stepDir(step) + attempt
	s.inflight[k] += delta
	if s.inflight[k] <= 0 {
		delete(s.inflight, k)
	}
}

func (s *Store) isInflight(dir, attempt string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[dir+attempt] > 0
}

// Meta is the metadata given at commit.
type Meta struct {
	Epoch   int64
	Metrics map[string]float64
	Labels  map[string]string
}

// Info describes a committed checkpoint.
type Info struct {
	Step    int64
	Epoch   int64
	Created time.Time
	Metrics map[string]float64
	Labels  map[string]string
	Writer  WriterID
	Attempt string
	Parts   []PartInfo // sorted by name
	Digest  string     // sha256 of the manifest (hex)
}

// Size is the total size of the parts.
func (i *Info) Size() int64 {
	var n int64
	for _, p := range i.Parts {
		n += p.Size
	}
	return n
}

// Part returns the named part.
func (i *Info) Part(name string) (PartInfo, bool) {
	for _, p := range i.Parts {
		if p.Name == name {
			return p, true
		}
	}
	return PartInfo{}, false
}

func infoOf(m *Manifest) *Info {
	return &Info{
		Step: m.Step, Epoch: m.Epoch, Created: m.Created, Metrics: m.Metrics, Labels: m.Labels,
		Writer: m.Writer, Attempt: m.Attempt, Parts: m.Parts, Digest: m.Digest,
	}
}

// Skipped is a checkpoint that Latest passed over because it failed
// verification.
type Skipped struct {
	Step int64
	Err  error
}

// Checkpoint is a committed checkpoint opened for reading.
type Checkpoint struct {
	Info
	// Fallback is non-empty when newer committed checkpoints were found
	// corrupt and Latest fell back to this one; each entry says why.
	Fallback []Skipped
	s        *Store
}

// readManifest reads and verifies the manifest of step. A missing manifest
// gives ErrNotFound; a damaged one ErrCorrupt.
func (s *Store) readManifest(ctx context.Context, step int64) (*Manifest, error) {
	key := manifestKey(step)
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil, fmt.Errorf("%w: step %d", ErrNotFound, step)
		}
		return nil, fmt.Errorf("checkpoint: read %s: %w", key, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", key, err)
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("step %d (%s): %w", step, key, err)
	}
	if m.Step != step {
		return nil, fmt.Errorf("%w: %s holds step %d", ErrCorrupt, key, m.Step)
	}
	return m, nil
}

// At returns the committed checkpoint of step, with its manifest verified.
func (s *Store) At(ctx context.Context, step int64) (*Checkpoint, error) {
	if step < 0 {
		return nil, fmt.Errorf("%w: negative step %d", ErrInvalid, step)
	}
	m, err := s.readManifest(ctx, step)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Info: *infoOf(m), s: s}, nil
}

// listDirs calls fn for each step directory, newest first, one page at a
// time, until fn returns false.
func (s *Store) listDirs(ctx context.Context, pageSize int, fn func(step int64) bool) error {
	tok := blob.FirstPageToken
	for {
		objs, next, err := s.b.ListPage(ctx, tok, pageSize, &blob.ListOptions{Prefix: stepsPrefix, Delimiter: "/"})
		if err != nil {
			return fmt.Errorf("checkpoint: list %s: %w", stepsPrefix, err)
		}
		for _, o := range objs {
			if !o.IsDir {
				continue
			}
			step, ok := parseStepDir(o.Key)
			if !ok {
				continue
			}
			if !fn(step) {
				return nil
			}
		}
		if len(next) == 0 {
			return nil
		}
		tok = next
	}
}

// Latest returns the newest committed checkpoint that verifies (see
// Options.Verify). On the fast path it costs two requests: one listing page
// (step directories sort newest first) and the manifest. Directories
// without a manifest (saves in flight or crashed) are passed over; a
// checkpoint that fails verification is passed over too, logged, and
// recorded in the result's Fallback. With no intact checkpoint the error
// wraps ErrNotFound. If listing fails, Latest falls back to the LATEST
// hint.
func (s *Store) Latest(ctx context.Context) (*Checkpoint, error) {
	var (
		found    *Checkpoint
		fallback []Skipped
		ferr     error
	)
	err := s.listDirs(ctx, 8, func(step int64) bool {
		ck, err := s.verified(ctx, step)
		switch {
		case err == nil:
			found = ck
			return false
		case errors.Is(err, ErrNotFound):
			return true
		case errors.Is(err, ErrCorrupt):
			s.opts.Logger.Warn("checkpoint: skipping corrupt checkpoint", "step", step, "err", err)
			fallback = append(fallback, Skipped{Step: step, Err: err})
			return true
		default:
			ferr = err
			return false
		}
	})
	if ferr != nil {
		return nil, ferr
	}
	if err != nil {
		ck, herr := s.fromHint(ctx)
		if herr != nil {
			return nil, errors.Join(err, herr)
		}
		s.opts.Logger.Warn("checkpoint: listing failed, used LATEST hint", "step", ck.Step, "err", err)
		return ck, nil
	}
	if found == nil {
		if len(fallback) > 0 {
			return nil, fmt.Errorf("%w: no intact checkpoint (%d corrupt, newest step %d: %v)", ErrNotFound, len(fallback), fallback[0].Step, fallback[0].Err)
		}
		return nil, fmt.Errorf("%w: no committed checkpoint", ErrNotFound)
	}
	if len(fallback) > 0 {
		s.opts.Logger.Warn("checkpoint: fell back to an older checkpoint", "step", found.Step, "skipped", len(fallback))
	}
	found.Fallback = fallback
	return found, nil
}

func (s *Store) fromHint(ctx context.Context) (*Checkpoint, error) {
	data, err := s.b.ReadAll(ctx, latestKey)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", latestKey, err)
	}
	step, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || step < 0 {
		return nil, fmt.Errorf("%w: %s holds %.40q", ErrCorrupt, latestKey, data)
	}
	return s.verified(ctx, step)
}

// verified returns the checkpoint of step checked to Options.Verify.
func (s *Store) verified(ctx context.Context, step int64) (*Checkpoint, error) {
	m, err := s.readManifest(ctx, step)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Info: *infoOf(m), s: s}
	switch s.opts.Verify {
	case VerifySizes:
		for _, p := range ck.Parts {
			key := partKey(step, ck.Attempt, p.Name)
			a, err := s.b.Attributes(ctx, key)
			if err != nil {
				if gcerrors.Code(err) == gcerrors.NotFound {
					return nil, fmt.Errorf("%w: step %d: part %q missing", ErrCorrupt, step, p.Name)
				}
				return nil, fmt.Errorf("checkpoint: %s: %w", key, err)
			}
			if a.Size != p.Size {
				return nil, fmt.Errorf("%w: step %d: part %q is %d bytes, committed %d", ErrCorrupt, step, p.Name, a.Size, p.Size)
			}
		}
	case VerifyAll:
		if err := ck.verify(ctx); err != nil {
			return nil, err
		}
	}
	return ck, nil
}

// List returns the committed checkpoints whose manifests verify, oldest
// first. Corrupt ones are logged and left out.
func (s *Store) List(ctx context.Context) ([]*Info, error) {
	var steps []int64
	if err := s.listDirs(ctx, 1000, func(step int64) bool { steps = append(steps, step); return true }); err != nil {
		return nil, err
	}
	var out []*Info
	for i := len(steps) - 1; i >= 0; i-- {
		m, err := s.readManifest(ctx, steps[i])
		switch {
		case err == nil:
			out = append(out, infoOf(m))
		case errors.Is(err, ErrNotFound):
		case errors.Is(err, ErrCorrupt):
			s.opts.Logger.Warn("checkpoint: corrupt checkpoint not listed", "step", steps[i], "err", err)
		default:
			return nil, err
		}
	}
	return out, nil
}

// Verify reads every part of the checkpoint of step and checks sizes and
// digests. A mismatch gives an error wrapping ErrCorrupt.
func (s *Store) Verify(ctx context.Context, step int64) error {
	ck, err := s.At(ctx, step)
	if err != nil {
		return err
	}
	return ck.verify(ctx)
}

func (c *Checkpoint) verify(ctx context.Context) error {
	buf := make([]byte, 1<<20)
	for _, p := range c.Parts {
		r, err := c.Open(ctx, p.Name)
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(io.Discard, onlyReader{r}, buf)
		cerr := r.Close()
		if err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type onlyReader struct{ io.Reader }

// Delete removes the checkpoint of step: the manifest first (so a partly
// deleted checkpoint is invisible, never corrupt), then every object under
// the step. Deleting a step that does not exist is not an error.
func (s *Store) Delete(ctx context.Context, step int64) error {
	if step < 0 {
		return fmt.Errorf("%w: negative step %d", ErrInvalid, step)
	}
	if err := s.b.Delete(ctx, manifestKey(step)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("checkpoint: delete step %d: %w", step, err)
	}
	return s.deletePrefix(ctx, stepDir(step), func(string) bool { return true })
}

// deletePrefix deletes every object under prefix for which match is true,
// manifests first.
func (s *Store) deletePrefix(ctx context.Context, prefix string, match func(key string) bool) error {
	it := s.b.List(&blob.ListOptions{Prefix: prefix})
	var keys []string
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("checkpoint: list %s: %w", prefix, err)
		}
		if match(o.Key) {
			keys = append(keys, o.Key)
		}
	}
	// Delete the manifest (if matched) first.
	sort.SliceStable(keys, func(i, j int) bool {
		return strings.HasSuffix(keys[i], "/"+manifestName) && !strings.HasSuffix(keys[j], "/"+manifestName)
	})
	for _, k := range keys {
		if err := s.b.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("checkpoint: delete %s: %w", k, err)
		}
	}
	return nil
}

// writeHint updates LATEST to step unless it already names a newer step.
func (s *Store) writeHint(ctx context.Context, step int64) error {
	if data, err := s.b.ReadAll(ctx, latestKey); err == nil {
		if cur, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && cur > step {
			return nil
		}
	}
	return s.b.WriteAll(ctx, latestKey, []byte(strconv.FormatInt(step, 10)+"\n"), &blob.WriterOptions{ContentType: "text/plain"})
}
