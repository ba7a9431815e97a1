package testpeers

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Server is a real S3 gateway (versitygw with its posix backend) running
// for one test on 127.0.0.1.
type S3Server struct {
	Endpoint  string // "http://127.0.0.1:PORT"
	Region    string
	AccessKey string
	SecretKey string
	Dir       string // the posix backend's root: one directory per bucket
}

var bucketSeq atomic.Int64

// S3 starts versitygw (the version pinned in Tools) with a posix backend in a
// temporary directory, waits until it answers and stops it when the test
// ends. It fails the test, never skips it, when the server cannot start.
func S3(t testing.TB) *S3Server {
	t.Helper()
	s := &S3Server{
		Region:    "us-east-1",
		AccessKey: "spotcheck-test-key",
		SecretKey: "spotcheck-test-secret-0123456789",
		Dir:       t.TempDir(),
	}
	env := append(cleanAWSEnv(os.Environ()), "HOME="+t.TempDir())
	addr := startServer(t, "versitygw", env, func(port int) []string {
		return []string{
			"--port", "127.0.0.1:" + strconv.Itoa(port),
			"--access", s.AccessKey, "--secret", s.SecretKey,
			"--region", s.Region, "--quiet",
			"posix", s.Dir,
		}
	}, httpAnswers("GET", "/"))
	s.Endpoint = "http://" + addr
	return s
}

// Client returns a plain aws-sdk-go-v2 S3 client for the server, for test
// set-up and for baselines in benchmarks.
func (s *S3Server) Client(t testing.TB) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// NewBucket creates a fresh, empty bucket and returns its name.
func (s *S3Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("spotcheck-%d-%d", os.Getpid(), bucketSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("testpeers: create bucket %q on %s: %v", name, s.Endpoint, err)
	}
	return name
}

// URL is the storage.Open URL of bucket on this server, with an optional
// key prefix. Credentials are not in the URL: use SetEnv or Environ.
func (s *S3Server) URL(bucket, prefix string) string {
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", s.Region)
	q.Set("use_path_style", "true")
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	return "s3://" + bucket + "?" + q.Encode()
}

// Environ is the environment that lets the standard AWS configuration chain
// reach this server's credentials (and nothing else: no shared config, no
// instance metadata lookups), as KEY=VALUE strings for a child process.
func (s *S3Server) Environ() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// SetEnv sets Environ for the rest of the test (so the test cannot be parallel).
func (s *S3Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Environ() {
		for i := range kv {
			if kv[i] == '=' {
				t.Setenv(kv[:i], kv[i+1:])
				break
			}
		}
	}
}

// cleanAWSEnv drops AWS_ variables so a developer's own credentials never
// reach a test server.
func cleanAWSEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if len(kv) >= 4 && kv[:4] == "AWS_" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
