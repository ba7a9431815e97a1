package testpeers

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Tool is a program the tests run, pinned to one version and installed with
// `go install Package@Version`.
type Tool struct {
	Package string
	Version string
}

// Tools are the pinned versions of every program a test or .ci/run starts.
// .ci/run installs the same versions through `go run ./internal/testpeers/cmd/install`.
var Tools = map[string]Tool{
	"versitygw":         {Package: "github.com/versity/versitygw/cmd/versitygw", Version: "v1.8.0"},
	"ec2-metadata-mock": {Package: "github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock", Version: "v1.13.0"},
	"staticcheck":       {Package: "honnef.co/go/tools/cmd/staticcheck", Version: "v0.8.2"},
}

var installMu sync.Mutex

// Binary returns the path of the pinned tool name, installing it on first
// use into <repo>/.cache/bin (or $SPOTCHECK_BIN). Concurrent test processes
// serialise on a file lock, so the tool is built once. The test fails, never
// skips, when the tool cannot be installed.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := Install(name)
	if err != nil {
		t.Fatalf("testpeers: %v", err)
	}
	return path
}

// Install is Binary without a testing.TB, for commands and .ci/run.
func Install(name string) (string, error) {
	tool, ok := Tools[name]
	if !ok {
		return "", fmt.Errorf("unknown tool %q (known: versitygw, ec2-metadata-mock, staticcheck)", name)
	}
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	final := filepath.Join(dir, name+"-"+tool.Version)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}

	installMu.Lock()
	defer installMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("install %s: lock: %w", name, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("install %s: lock: %w", name, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN) //nolint:errcheck
	if _, err := os.Stat(final); err == nil {
		return final, nil // another process installed it while we waited
	}

	tmp, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(goCommand(), "install", tool.Package+"@"+tool.Version)
	cmd.Env = append(cleanEnv(os.Environ()), "GOBIN="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s@%s: %v\n%s", tool.Package, tool.Version, err, out.String())
	}
	built := filepath.Join(tmp, filepath.Base(tool.Package))
	if err := os.Rename(built, final); err != nil {
		return "", fmt.Errorf("install %s: %w", name, err)
	}
	return final, nil
}

// BinDir is where pinned tools are installed: $SPOTCHECK_BIN if set, else
// <repo root>/.cache/bin.
func BinDir() (string, error) {
	if d := os.Getenv("SPOTCHECK_BIN"); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ".cache", "bin"), nil
}

// RepoRoot finds the root of the spotcheck module: the directory of this
// source file, two levels up, or failing that the nearest parent of the
// working directory whose go.mod declares the root module.
func RepoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
		if isRoot(root) {
			return root, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cannot find the spotcheck module root above the working directory")
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.Contains(b, []byte("module github.com/spotcheck/spotcheck\n"))
}

// goCommand is the go command that runs this test: $GOROOT/bin/go as the
// go command sets it for tests, else the one on PATH.
func goCommand() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// cleanEnv drops variables a surrounding `go test` may set that would change
// how a tool is built (race, coverage, a module's own flags).
func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOBIN=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
