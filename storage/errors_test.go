package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"gocloud.dev/gcerrors"

	"github.com/spotcheck/spotcheck/storage"
)

func apiErr(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }

func httpErr(status int) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      errors.New("x"),
	}}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		code      gcerrors.ErrorCode
		transient bool
	}{
		{"nil", nil, gcerrors.OK, false},
		{"NoSuchKey", apiErr("NoSuchKey"), gcerrors.NotFound, false},
		{"NoSuchBucket", apiErr("NoSuchBucket"), gcerrors.NotFound, false},
		{"PreconditionFailed", apiErr("PreconditionFailed"), gcerrors.FailedPrecondition, false},
		{"InvalidAccessKeyId", apiErr("InvalidAccessKeyId"), gcerrors.PermissionDenied, false},
		{"SignatureDoesNotMatch", apiErr("SignatureDoesNotMatch"), gcerrors.PermissionDenied, false},
		{"SlowDown", apiErr("SlowDown"), gcerrors.ResourceExhausted, true},
		{"InternalError", apiErr("InternalError"), gcerrors.Internal, true},
		{"ConditionalRequestConflict", apiErr("ConditionalRequestConflict"), gcerrors.Internal, true},
		{"HTTP 503", httpErr(503), gcerrors.Internal, true},
		{"HTTP 429", httpErr(429), gcerrors.ResourceExhausted, true},
		{"HTTP 404", httpErr(404), gcerrors.NotFound, false},
		{"HTTP 403", httpErr(403), gcerrors.PermissionDenied, false},
		{"HTTP 412", httpErr(412), gcerrors.FailedPrecondition, false},
		{"ENOSPC", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, gcerrors.ResourceExhausted, false},
		{"ENOENT", &os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, gcerrors.NotFound, false},
		{"EACCES", &os.PathError{Op: "open", Path: "/x", Err: syscall.EACCES}, gcerrors.PermissionDenied, false},
		{"ECONNRESET", fmt.Errorf("read: %w", syscall.ECONNRESET), gcerrors.Unknown, true},
		{"unexpected EOF", fmt.Errorf("body: %w", io.ErrUnexpectedEOF), gcerrors.Unknown, true},
		{"net timeout", fmt.Errorf("dial: %w", timeoutErr{}), gcerrors.Unknown, true},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), gcerrors.Canceled, false},
		{"deadline", context.DeadlineExceeded, gcerrors.DeadlineExceeded, false},
		{"plain", errors.New("boom"), gcerrors.Unknown, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := storage.Code(tc.err); got != tc.code {
				t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.code)
			}
			if got := storage.IsTransient(tc.err); got != tc.transient {
				t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.transient)
			}
			w := storage.Wrap("write", "k", tc.err)
			if tc.err == nil {
				if w != nil {
					t.Errorf("Wrap(nil) = %v", w)
				}
				return
			}
			if !errors.Is(w, tc.err) {
				t.Errorf("Wrap lost the cause %v", tc.err)
			}
			for _, s := range []struct {
				sentinel error
				want     bool
			}{
				{storage.ErrNotFound, tc.code == gcerrors.NotFound},
				{storage.ErrExists, tc.code == gcerrors.FailedPrecondition},
				{storage.ErrPermission, tc.code == gcerrors.PermissionDenied},
				{storage.ErrTransient, tc.transient},
			} {
				if got := errors.Is(w, s.sentinel); got != s.want {
					t.Errorf("errors.Is(Wrap(%v), %v) = %v, want %v", tc.err, s.sentinel, got, s.want)
				}
			}
		})
	}
}

func TestWrapOnce(t *testing.T) {
	inner := storage.Wrap("write", "a", os.ErrNotExist)
	outer := storage.Wrap("commit", "b", fmt.Errorf("ctx: %w", inner))
	want := `ctx: storage: write "a": file does not exist`
	if diff := cmp.Diff(want, outer.Error()); diff != "" {
		t.Errorf("double Wrap (-want +got):\n%s", diff)
	}
}

func TestRetry(t *testing.T) {
	fast := &storage.RetryOptions{Initial: time.Microsecond, Max: time.Millisecond, Attempts: 4}
	tests := []struct {
		name      string
		errs      []error // returned by successive calls; nil after the end
		wantCalls int
		wantErr   error
	}{
		{"success", nil, 1, nil},
		{"transient then success", []error{apiErr("SlowDown"), httpErr(503)}, 3, nil},
		{"permanent", []error{apiErr("NoSuchKey"), nil}, 1, os.ErrNotExist},
		{"attempts used up", []error{httpErr(500), httpErr(500), httpErr(500), httpErr(500), httpErr(500)}, 4, storage.ErrTransient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := storage.Retry(context.Background(), fast, func(ctx context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tc.wantCalls)
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr == os.ErrNotExist && !storage.IsNotFound(err):
				t.Errorf("err = %v, want not found", err)
			case tc.wantErr == storage.ErrTransient && !storage.IsTransient(err):
				t.Errorf("err = %v, want transient", err)
			}
		})
	}
}

func TestRetryCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := storage.Retry(ctx, &storage.RetryOptions{Initial: time.Hour, Max: time.Hour, Attempts: 100}, func(ctx context.Context) error {
		calls++
		cancel() // the backoff would wait up to an hour; cancel must end it
		return apiErr("SlowDown")
	})
	if calls != 1 || !errors.Is(err, context.Canceled) || !storage.IsTransient(errors.Unwrap(err)) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry after cancel: calls %d, err %v; want 1 call and context.Canceled", calls, err)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "SlowDown" {
		t.Errorf("Retry after cancel lost the last failure: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	o := &storage.RetryOptions{Initial: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, o.Backoff(n))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Backoff (-want +got):\n%s", diff)
	}
}
