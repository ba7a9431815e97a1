package main

// End-to-end tests of bit-exact resume. The trainer runs as a child process
// (built once in TestMain, without the race detector so that each run takes
// a second or two) and is stopped by SIGTERM at a random step, by SIGKILL at
// random moments, and by the EC2 metadata mock's spot interruption notice.
// Every scenario must end with the same final weights digest as an
// uninterrupted run of the same flags.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spotcheck/spotcheck/internal/testpeers"
)

var (
	buildOnce  sync.Once
	buildDir   string
	trainerBin string
	buildErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// trainerBinary builds the trainer once per test process (without the race
// detector: a run takes a second or two instead of ten) and returns its path.
func trainerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "trainer-test-"); buildErr != nil {
			return
		}
		trainerBin = filepath.Join(buildDir, "trainer")
		out, err := exec.Command("go", "build", "-o", trainerBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building the trainer for the resume tests: %v", buildErr)
	}
	return trainerBin
}

// testRand returns a generator for the random steps and moments of a test,
// seeded from TRAINER_TEST_SEED if set (to replay a failure), else the clock.
func testRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRAINER_TEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("TRAINER_TEST_SEED=%q: %v", s, err)
		}
	}
	t.Logf("random choices from TRAINER_TEST_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// child is one trainer process.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout bytes.Buffer
	recs   chan logRecord
	mu     sync.Mutex
	log    []string
	done   chan struct{}
	code   int
}

type logRecord map[string]any

func (r logRecord) msg() string { s, _ := r["msg"].(string); return s }

func (r logRecord) int(key string) int64 {
	f, _ := r[key].(float64)
	return int64(f)
}

// startChild runs the trainer with args and extra environment.
func startChild(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	c := &child{t: t, recs: make(chan logRecord, 4096), done: make(chan struct{})}
	c.cmd = exec.Command(trainerBinary(t), args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout = &c.stdout
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		defer close(c.recs)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.log = append(c.log, line)
			c.mu.Unlock()
			var r logRecord
			if json.Unmarshal([]byte(line), &r) == nil {
				select {
				case c.recs <- r:
				default:
				}
			}
		}
		err := c.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			c.code = 0
		case errors.As(err, &ee):
			c.code = ee.ExitCode() // -1 when killed by a signal
		default:
			c.code = -2
		}
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitFor reads the child's log until pred matches a record; it fails the
// test if the child exits first.
func (c *child) waitFor(what string, pred func(logRecord) bool) logRecord {
	c.t.Helper()
	for r := range c.recs {
		if pred(r) {
			return r
		}
	}
	<-c.done
	c.t.Fatalf("trainer exited (status %d) before logging %s; its log:\n%s", c.code, what, c.logText())
	return nil
}

func (c *child) wait() int {
	go func() {
		for range c.recs {
		}
	}()
	<-c.done
	return c.code
}

func (c *child) logText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.log, "\n")
}

// find returns the records with message msg.
func (c *child) find(msg string) []logRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []logRecord
	for _, l := range c.log {
		var r logRecord
		if json.Unmarshal([]byte(l), &r) == nil && r.msg() == msg {
			out = append(out, r)
		}
	}
	return out
}

var digestRE = regexp.MustCompile(`(?m)^final weights sha256: ([0-9a-f]{64})$`)

// finish waits for a run that must complete and returns its digest.
func (c *child) finish() string {
	c.t.Helper()
	if code := c.wait(); code != exitOK {
		c.t.Fatalf("trainer exited with status %d, want %d; log:\n%s", code, exitOK, c.logText())
	}
	m := digestRE.FindStringSubmatch(c.stdout.String())
	if m == nil {
		c.t.Fatalf("no final weights digest in the output:\n%s", c.stdout.String())
	}
	return m[1]
}

// The scenario the end-to-end tests share: small enough for a second or two.
const testSteps = 2000

func baseArgs(store string, steps int64) []string {
	return []string{"-store", store, "-steps", strconv.FormatInt(steps, 10), "-seed", "7", "-every", "50",
		"-plot", "", "-progress", "json", "-detect=false", "-log-every", "10"}
}

var refs sync.Map // steps -> *refResult

type refResult struct {
	once   sync.Once
	digest string
	took   time.Duration
}

// reference returns the digest of an uninterrupted run of steps steps, and
// how long that run took (to pick random kill moments inside a run).
func reference(t *testing.T, steps int64) (string, time.Duration) {
	t.Helper()
	v, _ := refs.LoadOrStore(steps, &refResult{})
	r := v.(*refResult)
	r.once.Do(func() {
		trainerBinary(t) // build first: the run's time must not include the build
		began := time.Now()
		c := startChild(t, nil, baseArgs(t.TempDir(), steps)...)
		r.digest = c.finish()
		r.took = time.Since(began)
		t.Logf("reference run of %d steps: digest %s in %v", steps, r.digest, r.took)
	})
	if r.digest == "" {
		t.Fatal("the reference run failed")
	}
	return r.digest, r.took
}

// sigtermAtRandomStep runs the trainer on store until a random step, sends
// SIGTERM, checks the emergency checkpoint and the exit status, and returns
// the step it stopped at.
func sigtermAtRandomStep(t *testing.T, rng *rand.Rand, env []string, store string) int64 {
	t.Helper()
	target := 1 + rng.Int64N(testSteps*8/10)
	c := startChild(t, env, baseArgs(store, testSteps)...)
	c.waitFor(fmt.Sprintf("progress at step >= %d", target), func(r logRecord) bool {
		return r.msg() == "progress" && r.int("step") >= target
	})
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(); code != exitInterrupted {
		t.Fatalf("after SIGTERM the trainer exited with status %d, want %d; log:\n%s", code, exitInterrupted, c.logText())
	}
	saved := c.find("emergency checkpoint saved")
	if len(saved) != 1 {
		t.Fatalf("want one emergency checkpoint, log has %d:\n%s", len(saved), c.logText())
	}
	step := saved[0].int("step")
	if step < target || step >= testSteps {
		t.Fatalf("emergency checkpoint at step %d, want in [%d, %d)", step, target, testSteps)
	}
	t.Logf("SIGTERM after step %d: stopped and saved at step %d", target, step)
	return step
}

// sigkillAtRandomMoment starts the trainer and, once it trains, kills it
// with SIGKILL after a random delay within the time its remaining steps
// take (so the kill may land in a step, between steps or inside a save).
// It reports whether the run was killed before it finished.
func sigkillAtRandomMoment(t *testing.T, rng *rand.Rand, env []string, store string, runTime time.Duration) bool {
	t.Helper()
	c := startChild(t, env, baseArgs(store, testSteps)...)
	from := c.waitFor("training start", func(r logRecord) bool { return r.msg() == "training" }).int("from")
	remaining := runTime * time.Duration(testSteps-from) / testSteps
	delay := time.Duration(rng.Int64N(int64(remaining)*6/10 + 1))
	time.Sleep(delay)
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	code := c.wait()
	last := from
	if p := c.find("progress"); len(p) > 0 {
		last = p[len(p)-1].int("step")
	}
	t.Logf("started at step %d, SIGKILL after %v: exit status %d, last progress step %d", from, delay.Round(time.Millisecond), code, last)
	return code != exitOK
}

// resumeToEnd runs the trainer to completion on store and checks that it
// resumed (from step at least minStep) and reached want.
func resumeToEnd(t *testing.T, env []string, store string, minStep int64, want string) {
	t.Helper()
	c := startChild(t, env, baseArgs(store, testSteps)...)
	got := c.finish()
	if minStep > 0 {
		res := c.find("resumed")
		if len(res) != 1 || res[0].int("step") < minStep {
			t.Fatalf("want a resume from step >= %d, log:\n%s", minStep, c.logText())
		}
	}
	if got != want {
		t.Fatalf("final weights sha256 after resume = %s, uninterrupted run = %s", got, want)
	}
}

func TestResumeAfterSIGTERMIsBitExact(t *testing.T) {
	want, _ := reference(t, testSteps)
	rng := testRand(t)
	for trial := range 3 {
		t.Run(fmt.Sprintf("trial%d", trial), func(t *testing.T) {
			store := t.TempDir()
			step := sigtermAtRandomStep(t, rng, nil, store)
			resumeToEnd(t, nil, store, step, want)
		})
	}
}

func TestResumeAfterSIGKILLIsBitExact(t *testing.T) {
	want, took := reference(t, testSteps)
	rng := testRand(t)
	store := t.TempDir()
	kills := 0
	for range 4 {
		if !sigkillAtRandomMoment(t, rng, nil, store, took) {
			break // it finished before the kill: nothing left to interrupt
		}
		kills++
	}
	if kills == 0 {
		t.Fatal("no run was killed before it finished")
	}
	resumeToEnd(t, nil, store, 0, want)
}

// TestInterruptAtInProcess runs the trainer in the test process (so the race
// detector watches the training loop and the background saves) with a
// simulated notice at a random step, then resumes it.
func TestInterruptAtInProcess(t *testing.T) {
	rng := testRand(t)
	const steps = 300
	args := func(store string, extra ...string) []string {
		return append([]string{"-store", store, "-steps", strconv.Itoa(steps), "-seed", "3", "-every", "20",
			"-plot", filepath.Join(t.TempDir(), "loss.png"), "-progress", "json", "-detect=false"}, extra...)
	}
	runIn := func(args []string, wantCode int) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != wantCode {
			t.Fatalf("trainer %q exited with status %d, want %d; log:\n%s", args, code, wantCode, stderr.String())
		}
		m := digestRE.FindStringSubmatch(stdout.String())
		if wantCode == exitOK && m == nil {
			t.Fatalf("no digest in the output:\n%s", stdout.String())
		}
		if m == nil {
			return ""
		}
		return m[1]
	}
	want := runIn(args(t.TempDir()), exitOK)
	store := t.TempDir()
	at := 1 + rng.IntN(steps-1)
	runIn(args(store, "-interrupt-at", strconv.Itoa(at)), exitInterrupted)
	if got := runIn(args(store), exitOK); got != want {
		t.Fatalf("interrupted at step %d and resumed: digest %s, uninterrupted %s", at, got, want)
	}
}

// TestEC2SpotNoticeStopsTheRun watches the real EC2 metadata mock through
// interrupt.Detect (the AWS source over IMDSv2): the mock's spot
// interruption notice, published two seconds after it starts, is what stops
// the run; the resumed run (on a "new machine": no metadata service) ends
// bit-exactly where an uninterrupted run ends.
func TestEC2SpotNoticeStopsTheRun(t *testing.T) {
	const steps = 4000 // long enough to still be training when the notice comes
	want, _ := reference(t, steps)
	imds := testpeers.EC2Metadata(t, "spot", "-a", "terminate", "-d", "2")
	store := t.TempDir()
	env := []string{"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.Endpoint}
	c := startChild(t, env, append(baseArgs(store, steps), "-detect=true")...)
	if code := c.wait(); code != exitInterrupted {
		t.Fatalf("exit status %d, want %d (interrupted by the spot notice); log:\n%s", code, exitInterrupted, c.logText())
	}
	notices := c.find("interruption notice")
	if len(notices) != 1 || notices[0]["source"] != "aws" || notices[0]["kind"] != "terminate" {
		t.Fatalf("want one terminate notice from aws, got %v; log:\n%s", notices, c.logText())
	}
	saved := c.find("emergency checkpoint saved")
	if len(saved) != 1 {
		t.Fatalf("no emergency checkpoint; log:\n%s", c.logText())
	}
	step := saved[0].int("step")
	t.Logf("spot notice: stopped and saved at step %d of %d", step, steps)

	r := startChild(t, nil, baseArgs(store, steps)...)
	if got := r.finish(); got != want {
		t.Fatalf("final weights sha256 after the spot notice and resume = %s, uninterrupted = %s", got, want)
	}
	if res := r.find("resumed"); len(res) != 1 || res[0].int("step") != step {
		t.Fatalf("want a resume from step %d; log:\n%s", step, r.logText())
	}
}

// TestResumeOnS3IsBitExact keeps the checkpoints on a real S3 server
// (versitygw): a SIGTERM at a random step, then SIGKILLs at random moments,
// then a run to the end.
func TestResumeOnS3IsBitExact(t *testing.T) {
	want, took := reference(t, testSteps)
	rng := testRand(t)
	srv := testpeers.S3(t)
	store := srv.URL(srv.NewBucket(t), "run-1/")
	env := srv.Environ()
	step := sigtermAtRandomStep(t, rng, env, store)
	for range 2 {
		if !sigkillAtRandomMoment(t, rng, env, store, took) {
			break
		}
	}
	resumeToEnd(t, env, store, step, want)
}
