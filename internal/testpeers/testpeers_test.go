package testpeers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestS3RoundTrip(t *testing.T) {
	srv := S3(t)
	c := srv.Client(t)
	bucket := srv.NewBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := []byte("hello from spotcheck")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b"), Body: bytes.NewReader(want)}); err != nil {
		t.Fatalf("put: %v", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b")})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("get = %q, %v; want %q", got, err, want)
	}
	if u := srv.URL(bucket, "run-7/"); !strings.HasPrefix(u, "s3://"+bucket+"?") || !strings.Contains(u, "prefix=run-7%2F") {
		t.Errorf("URL = %q", u)
	}
}

func TestEC2MetadataSpotIMDSv2Only(t *testing.T) {
	srv := EC2Metadata(t, "spot", "-a", "stop", "-t", "2026-12-02T10:00:00Z")
	get := func(token string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", srv.Endpoint+"/latest/meta-data/spot/instance-action", nil)
		if token != "" {
			req.Header.Set("X-aws-ec2-metadata-token", token)
		}
		return http.DefaultClient.Do(req)
	}
	// IMDSv1 (no token) is refused: the mock runs IMDSv2-only.
	resp, err := get("")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("IMDSv1 request: status %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("PUT", srv.Endpoint+"/latest/api/token", nil)
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	token, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp, err = get(string(token))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ia struct{ Action, Time string }
	if err := json.NewDecoder(resp.Body).Decode(&ia); err != nil {
		t.Fatalf("decode instance-action (status %d): %v", resp.StatusCode, err)
	}
	if ia.Action != "stop" || ia.Time != "2026-12-02T10:00:00Z" {
		t.Fatalf("instance-action = %+v, want stop at 2026-12-02T10:00:00Z", ia)
	}
}

func TestInstallUnknownTool(t *testing.T) {
	_, err := Install("no-such-tool")
	if err == nil || !strings.Contains(err.Error(), `"no-such-tool"`) {
		t.Fatalf("Install(unknown) = %v, want an error naming the tool", err)
	}
}
