package storage_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/internal/testpeers"
	"github.com/spotcheck/spotcheck/storage"
)

// The two-process race: the test re-executes its own binary twice as
// children (TestRaceChild with SPOTCHECK_RACE_URL set). For every round the
// parent releases both children at once through their command pipes; each
// tries to create the same key with IfNotExist and reports "won" or "lost"
// (lost only if the error is recognised by IsExists and errors.Is); the
// parent checks that exactly one won and that the object holds the
// winner's bytes.

const raceRounds = 200

func racePayload(child, round int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("child %d round %d|", child, round)), 256)
}

func raceKey(round int) string { return fmt.Sprintf("race/%03d/MANIFEST.json", round) }

// TestRaceChild is the child side; it does nothing in a normal test run.
func TestRaceChild(t *testing.T) {
	u := os.Getenv("SPOTCHECK_RACE_URL")
	if u == "" {
		return
	}
	id, _ := strconv.Atoi(os.Getenv("SPOTCHECK_RACE_ID"))
	cmds := bufio.NewScanner(os.NewFile(3, "commands"))
	out := os.NewFile(4, "results")
	ctx := context.Background()
	b, err := storage.Open(ctx, u)
	if err != nil {
		fmt.Fprintf(out, "err %v\n", err)
		return
	}
	defer func() { _ = b.Close() }()
	for cmds.Scan() {
		round, _ := strconv.Atoi(cmds.Text())
		key := raceKey(round)
		err := storage.Retry(ctx, nil, func(ctx context.Context) error {
			return b.WriteAll(ctx, key, racePayload(id, round), &blob.WriterOptions{IfNotExist: true})
		})
		err = storage.Wrap("create", key, err)
		switch {
		case err == nil:
			fmt.Fprintln(out, "won")
		case storage.IsExists(err) && errors.Is(err, storage.ErrExists):
			fmt.Fprintln(out, "lost")
		default:
			fmt.Fprintf(out, "err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
}

type raceChild struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	wins int
}

func startRaceChild(t *testing.T, id int, u string, env []string) *raceChild {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRaceChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "SPOTCHECK_RACE_URL="+u, "SPOTCHECK_RACE_ID="+strconv.Itoa(id))
	cmd.ExtraFiles = []*os.File{cmdR, resW}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %d: %v", id, err)
	}
	_ = cmdR.Close()
	_ = resW.Close()
	c := &raceChild{cmd: cmd, in: cmdW, out: bufio.NewScanner(resR)}
	t.Cleanup(func() {
		_ = c.in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", id, err, stderr.String())
		}
		_ = resR.Close()
	})
	return c
}

func runProcessRace(t *testing.T, u string, env []string) {
	children := []*raceChild{startRaceChild(t, 0, u, env), startRaceChild(t, 1, u, env)}
	b := mustOpen(t, u)
	ctx := context.Background()
	for round := range raceRounds {
		for _, c := range children {
			if _, err := fmt.Fprintln(c.in, round); err != nil {
				t.Fatalf("round %d: release child: %v", round, err)
			}
		}
		winner := -1
		for id, c := range children {
			if !c.out.Scan() {
				t.Fatalf("round %d: child %d exited: %v", round, id, c.out.Err())
			}
			switch res := c.out.Text(); res {
			case "won":
				if winner >= 0 {
					t.Fatalf("round %d: both children created %s", round, raceKey(round))
				}
				winner = id
				c.wins++
			case "lost":
			default:
				t.Fatalf("round %d: child %d: %s", round, id, res)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: neither child created %s", round, raceKey(round))
		}
		got, err := b.ReadAll(ctx, raceKey(round))
		if err != nil {
			t.Fatalf("round %d: read %s: %v", round, raceKey(round), err)
		}
		if !bytes.Equal(got, racePayload(winner, round)) {
			t.Fatalf("round %d: %s holds %.40q..., want child %d's bytes", round, raceKey(round), got, winner)
		}
	}
	t.Logf("%d rounds: child 0 won %d, child 1 won %d", raceRounds, children[0].wins, children[1].wins)
}

func TestProcessRaceLocal(t *testing.T) {
	runProcessRace(t, fileURL(t.TempDir()), nil)
}

func TestProcessRaceS3(t *testing.T) {
	srv := testpeers.S3(t)
	srv.SetEnv(t)
	runProcessRace(t, srv.URL(srv.NewBucket(t), "run-7/"), srv.Environ())
}
