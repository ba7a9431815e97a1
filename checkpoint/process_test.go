package checkpoint_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/spotcheck/spotcheck/checkpoint"
	"github.com/spotcheck/spotcheck/internal/testpeers"
	"github.com/spotcheck/spotcheck/storage"
)

// Child processes: the test binary re-executed with CHECKPOINT_CHILD set.
const childEnv = "CHECKPOINT_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bigParts is the deterministic content of step as written by writer.
func bigParts(writer string, step int64) map[string][]byte {
	rng := rand.NewChaCha8([32]byte([]byte(fmt.Sprintf("%-32s", fmt.Sprintf("%s/%d", writer, step)))))
	gen := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	return map[string][]byte{
		"model":     gen(128<<10 + int(step%7)),
		"optimizer": gen(64 << 10),
		"rng":       []byte(fmt.Sprintf("%s/%d", writer, step)),
	}
}

func runChild(mode string) error {
	ctx := context.Background()
	b, err := storage.Open(ctx, os.Getenv("CHECKPOINT_URL"))
	if err != nil {
		return err
	}
	defer b.Close()
	writer := os.Getenv("CHECKPOINT_WRITER")
	start, _ := strconv.ParseInt(os.Getenv("CHECKPOINT_START"), 10, 64)
	count, _ := strconv.ParseInt(os.Getenv("CHECKPOINT_COUNT"), 10, 64)
	opts := &checkpoint.Options{WriterID: writer, Retention: checkpoint.KeepLast(2), GracePeriod: time.Nanosecond}
	if mode == "race" {
		opts.Retention, opts.GracePeriod = checkpoint.KeepAll(), time.Hour
	}
	s, err := checkpoint.New(b, opts)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	if at, _ := strconv.ParseInt(os.Getenv("CHECKPOINT_START_AT"), 10, 64); at > 0 {
		time.Sleep(time.Until(time.Unix(0, at)))
	}
	for step := start; count == 0 || step < start+count; step++ {
		t0 := time.Now()
		_, err := s.Save(ctx, step, checkpoint.Meta{Labels: map[string]string{"writer": writer}}, writers(bigParts(writer, step)))
		switch {
		case err == nil:
			fmt.Fprintln(out, "committed", step, time.Since(t0).Nanoseconds())
		case errors.Is(err, checkpoint.ErrStepExists):
			fmt.Fprintln(out, "lost", step)
		default:
			return fmt.Errorf("save %d: %w", step, err)
		}
		out.Flush()
	}
	return nil
}

func child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = &bytes.Buffer{}
	return cmd
}

// backend gives a storage.Open URL and environment for child processes,
// and a bucket for the parent (opened without touching the parent's
// environment, so that the subtests can run in parallel).
type backend struct {
	name string
	url  func(t *testing.T) (url string, env []string, open func() *blob.Bucket)
}

func backends() []backend {
	return []backend{
		{"local", func(t *testing.T) (string, []string, func() *blob.Bucket) {
			url := "file://" + filepath.ToSlash(t.TempDir())
			return url, nil, func() *blob.Bucket {
				b, err := storage.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}},
		{"s3", func(t *testing.T) (string, []string, func() *blob.Bucket) {
			srv := testpeers.S3(t)
			name := srv.NewBucket(t)
			return srv.URL(name, "run-1/"), srv.Environ(), func() *blob.Bucket {
				b, err := s3blob.OpenBucket(context.Background(), srv.Client(t), name, nil)
				if err != nil {
					t.Fatal(err)
				}
				return blob.PrefixedBucket(b, "run-1/")
			}
		}},
	}
}

// TestSIGKILL kills a child process that saves checkpoints back to back at
// a random moment, 50 times per backend, and checks after each kill that
// Latest returns exactly the newest fully committed step (the last one the
// child acknowledged, or the one it was committing if its manifest made
// it), that this previous good checkpoint survived, and that nothing
// partial is listed.
func TestSIGKILL(t *testing.T) {
	const kills = 50
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			url, env, open := be.url(t)
			ctx := context.Background()
			b := open()
			defer b.Close()
			s, err := checkpoint.New(b, nil)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, uint64(time.Now().UnixNano())))
			next, good := int64(0), int64(-1)
			ambiguous := 0
			saveDur := 50 * time.Millisecond
			for i := 0; i < kills; i++ {
				cmd := child(t, "kill", append(env, "CHECKPOINT_URL="+url, "CHECKPOINT_WRITER=k", "CHECKPOINT_START="+strconv.FormatInt(next, 10))...)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				lines := make(chan string, 1000)
				go func() {
					sc := bufio.NewScanner(stdout)
					for sc.Scan() {
						lines <- sc.Text()
					}
					close(lines)
				}()
				if l := <-lines; l != "ready" {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("kill %d: child said %q: %s", i, l, cmd.Stderr)
				}
				// Let the child commit 0-1 saves, then kill it at a random
				// moment of the next one (saves take saveDur on average).
				acked := good
				wait := rng.IntN(2)
				for wait > 0 {
					l, ok := <-lines
					if !ok {
						break
					}
					f := strings.Fields(l)
					if len(f) == 3 && f[0] == "committed" {
						acked, _ = strconv.ParseInt(f[1], 10, 64)
						d, _ := strconv.ParseInt(f[2], 10, 64)
						saveDur = (saveDur*3 + time.Duration(d)) / 4
						wait--
					}
				}
				time.Sleep(time.Duration(rng.Int64N(int64(saveDur) * 5 / 4)))
				cmd.Process.Signal(syscall.SIGKILL)
				err := cmd.Wait()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("kill %d: child ended with %v before the kill: %s", i, err, cmd.Stderr)
				}
				for l := range lines {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "committed" {
						acked, _ = strconv.ParseInt(f[1], 10, 64)
					}
				}
				ck, err := s.Latest(ctx)
				if err != nil {
					if acked < 0 && errors.Is(err, checkpoint.ErrNotFound) {
						continue // killed before the first commit
					}
					t.Fatalf("kill %d: Latest: %v", i, err)
				}
				// The step in flight at the kill may have committed (its
				// manifest made it) without being acknowledged.
				if ck.Step != acked && ck.Step != acked+1 || len(ck.Fallback) > 0 {
					t.Fatalf("kill %d: Latest = %d (fallback %v), acknowledged %d", i, ck.Step, ck.Fallback, acked)
				}
				if ck.Step != acked {
					ambiguous++
				}
				if !equalParts(bigParts("k", ck.Step), readParts(t, ck)) {
					t.Fatalf("kill %d: bytes of step %d differ", i, ck.Step)
				}
				if acked >= 0 && acked != ck.Step {
					if err := s.Verify(ctx, acked); err != nil {
						t.Fatalf("kill %d: acknowledged step %d: %v", i, acked, err)
					}
				}
				infos, err := s.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range infos {
					if in.Step > ck.Step {
						t.Fatalf("kill %d: listed %d newer than Latest %d", i, in.Step, ck.Step)
					}
					if in.Step == ck.Step || in.Step == acked {
						continue // verified above
					}
					if err := s.Verify(ctx, in.Step); err != nil {
						t.Fatalf("kill %d: listed step %d: %v", i, in.Step, err)
					}
				}
				good = ck.Step
				next = ck.Step + 1
			}
			t.Logf("%d kills; newest step %d; %d kills landed between manifest and acknowledgement; mean save %v", kills, good, ambiguous, saveDur)
			if good < kills/2 {
				t.Errorf("only %d steps committed in %d runs: kills land too early to test saves", good+1, kills)
			}
		})
	}
}

// TestTwoWriterProcesses runs two processes that save the same steps under
// the same prefix at the same moment. Each step must be committed by
// exactly one of them, with exactly that writer's bytes.
func TestTwoWriterProcesses(t *testing.T) {
	const n = 20
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			url, env, open := be.url(t)
			ctx := context.Background()
			startAt := time.Now().Add(1500 * time.Millisecond).UnixNano()
			var cmds []*exec.Cmd
			var outs []*bytes.Buffer
			for _, w := range []string{"A", "B"} {
				cmd := child(t, "race", append(env, "CHECKPOINT_URL="+url, "CHECKPOINT_WRITER="+w, "CHECKPOINT_START=0",
					"CHECKPOINT_COUNT="+strconv.Itoa(n), "CHECKPOINT_START_AT="+strconv.FormatInt(startAt, 10))...)
				out := &bytes.Buffer{}
				cmd.Stdout = out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				cmds = append(cmds, cmd)
				outs = append(outs, out)
			}
			for i, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("writer %d: %v: %s", i, err, cmd.Stderr)
				}
			}
			winner := map[int64]string{}
			for i, w := range []string{"A", "B"} {
				for _, l := range strings.Split(strings.TrimSpace(outs[i].String()), "\n")[1:] {
					f := strings.Fields(l)
					step, _ := strconv.ParseInt(f[1], 10, 64)
					if f[0] == "committed" {
						if prev, dup := winner[step]; dup {
							t.Fatalf("step %d committed by both %s and %s", step, prev, w)
						}
						winner[step] = w
					}
				}
			}
			b := open()
			defer b.Close()
			s, _ := checkpoint.New(b, &checkpoint.Options{Retention: checkpoint.KeepAll()})
			wins := map[string]int{}
			for step := int64(0); step < n; step++ {
				w, ok := winner[step]
				if !ok {
					t.Fatalf("step %d committed by neither writer", step)
				}
				wins[w]++
				ck, err := s.At(ctx, step)
				if err != nil {
					t.Fatal(err)
				}
				if ck.Writer.ID != w || ck.Labels["writer"] != w {
					t.Fatalf("step %d: manifest by %q, winner %q", step, ck.Writer.ID, w)
				}
				if !equalParts(bigParts(w, step), readParts(t, ck)) {
					t.Fatalf("step %d: bytes are not exactly writer %s's", step, w)
				}
			}
			// The losers' attempts were removed: one attempt per step.
			attempts := map[string]bool{}
			it := b.List(&blob.ListOptions{Prefix: "steps/"})
			for {
				o, err := it.Next(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if p := strings.Split(o.Key, "/"); len(p) == 4 {
					attempts[p[1]+"/"+p[2]] = true
				}
			}
			if len(attempts) != n {
				t.Errorf("%d attempts stored for %d steps", len(attempts), n)
			}
			t.Logf("wins: %v", wins)
		})
	}
}

func equalParts(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
