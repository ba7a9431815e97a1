package testpeers

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer after it starts.
const startTimeout = 60 * time.Second

// syncBuffer collects a child's output for error messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 1<<20 { // keep the head; a server that logs every request must not grow without bound
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testpeers: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a server child started for one test.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // exit status, valid after done is closed
}

// startServer starts a server on a free port with args(port) and waits until
// ready(addr) succeeds. A server that lost its port to another process is
// retried on a new one. It is killed in t.Cleanup.
func startServer(t testing.TB, name string, env []string, args func(port int) []string, ready func(ctx context.Context, addr string) error) (addr string) {
	t.Helper()
	bin := Binary(t, name)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		addr = "127.0.0.1:" + strconv.Itoa(port)
		p, err := launch(bin, env, args(port))
		if err != nil {
			t.Fatalf("testpeers: start %s: %v", name, err)
		}
		err = p.waitReady(addr, ready)
		if err == nil {
			t.Cleanup(p.stop)
			return addr
		}
		p.stop()
		lastErr = fmt.Errorf("%v\n--- %s output ---\n%s", err, name, p.out.String())
	}
	t.Fatalf("testpeers: %s did not start on 127.0.0.1: %v", name, lastErr)
	return ""
}

func launch(bin string, env []string, args []string) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	// The server dies with the test process even if the test is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) waitReady(addr string, ready func(ctx context.Context, addr string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var err error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("exited before answering: %v", p.err)
		default:
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		err = ready(rctx, addr)
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not answering on %s after %v: %v", addr, startTimeout, err)
		case <-p.done:
			return fmt.Errorf("exited before answering: %v", p.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// httpAnswers is a ready check: any HTTP response at all means the server is up.
func httpAnswers(method, path string) func(ctx context.Context, addr string) error {
	return func(ctx context.Context, addr string) error {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
		if err != nil {
			return err
		}
		if method == http.MethodPut {
			req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
}
