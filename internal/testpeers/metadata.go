package testpeers

import (
	"os"
	"strconv"
	"testing"
)

// MetadataServer is the real amazon-ec2-metadata-mock running for one test
// on 127.0.0.1 with IMDSv2 only (every request needs a session token).
type MetadataServer struct {
	Endpoint string // "http://127.0.0.1:PORT"
}

// EC2Metadata starts amazon-ec2-metadata-mock (the version pinned in Tools)
// with IMDSv2 only (-I) and the given arguments, for example
// "spot", "-a", "terminate", "-d", "2" or "events", "--code", "system-reboot".
// It waits until the mock answers and stops it when the test ends. It fails
// the test, never skips it, when the mock cannot start. The mock reads no
// configuration file of the developer's: HOME is a temporary directory.
func EC2Metadata(t testing.TB, args ...string) *MetadataServer {
	t.Helper()
	env := append(cleanAWSEnv(os.Environ()), "HOME="+t.TempDir())
	addr := startServer(t, "ec2-metadata-mock", env, func(port int) []string {
		a := append([]string{}, args...)
		return append(a, "-n", "127.0.0.1", "-p", strconv.Itoa(port), "-I")
	}, httpAnswers("PUT", "/latest/api/token"))
	return &MetadataServer{Endpoint: "http://" + addr}
}
