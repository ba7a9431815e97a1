package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"syscall"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"gocloud.dev/gcerrors"
)

// Sentinel errors. An *Error returned by this package (see Wrap) matches them
// with errors.Is according to the class of its cause, so callers can write
// errors.Is(err, storage.ErrNotFound) as well as storage.IsNotFound(err).
var (
	// ErrNotFound: the object (or bucket) does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrExists: a create-if-absent write (blob.WriterOptions.IfNotExist)
	// lost because the object already exists.
	ErrExists = errors.New("storage: object already exists")
	// ErrPermission: the credentials were rejected or lack permission.
	ErrPermission = errors.New("storage: permission denied")
	// ErrNoSpace: the backend is out of space or quota (ENOSPC, EDQUOT).
	ErrNoSpace = errors.New("storage: no space left")
	// ErrTransient: a failure that may succeed when retried (throttling,
	// 5xx, timeouts, connection resets).
	ErrTransient = errors.New("storage: transient failure")
)

// Error is an error from a storage operation on one key. It is created by
// Wrap, which never wraps an *Error twice.
type Error struct {
	Op  string // "read", "write", "create", "delete", "list", "open", ...
	Key string // object key, or the redacted URL for "open"
	Err error  // the cause, usually from gocloud.dev/blob
}

func (e *Error) Error() string {
	return fmt.Sprintf("storage: %s %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether the cause belongs to the class of a sentinel error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return IsNotFound(e.Err)
	case ErrExists:
		return IsExists(e.Err)
	case ErrPermission:
		return IsPermission(e.Err)
	case ErrNoSpace:
		return IsNoSpace(e.Err)
	case ErrTransient:
		return IsTransient(e.Err)
	}
	return false
}

// Wrap annotates err with the operation and the key, once: if err already
// contains an *Error it is returned unchanged, and a nil err gives nil.
//
//	storage: write "steps/00000000000000001200/a1/model": ...
func Wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	return &Error{Op: op, Key: key, Err: err}
}

// Code classifies err as a gcerrors code. It extends gcerrors.Code, which
// knows only what each driver maps, with S3 error codes and HTTP statuses
// that gocloud leaves as Unknown, operating-system errors and context errors.
func Code(err error) gcerrors.ErrorCode {
	if err == nil {
		return gcerrors.OK
	}
	if errors.Is(err, context.Canceled) {
		return gcerrors.Canceled
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return gcerrors.DeadlineExceeded
	}
	c := gcerrors.Code(err)
	if c != gcerrors.Unknown && c != gcerrors.Internal {
		return c
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket", "NoSuchKey", "NotFound":
			return gcerrors.NotFound
		case "PreconditionFailed":
			return gcerrors.FailedPrecondition
		case "AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch",
			"InvalidToken", "ExpiredToken", "TokenRefreshRequired", "InvalidSecurity",
			"AccountProblem", "AllAccessDisabled", "UnrecognizedClientException",
			"XAdminUserNotFound": // versitygw: unknown access key id, with HTTP 404
			return gcerrors.PermissionDenied
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
			"TooManyRequestsException", "RequestThrottled":
			return gcerrors.ResourceExhausted
		case "InternalError", "ServiceUnavailable", "RequestTimeout",
			"ConditionalRequestConflict", "OperationAborted":
			return gcerrors.Internal
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch s := re.HTTPStatusCode(); {
		case s == http.StatusNotFound:
			return gcerrors.NotFound
		case s == http.StatusUnauthorized || s == http.StatusForbidden:
			return gcerrors.PermissionDenied
		case s == http.StatusPreconditionFailed:
			return gcerrors.FailedPrecondition
		case s == http.StatusTooManyRequests:
			return gcerrors.ResourceExhausted
		case s >= 500:
			return gcerrors.Internal
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gcerrors.NotFound
	case errors.Is(err, fs.ErrExist):
		return gcerrors.FailedPrecondition
	case errors.Is(err, fs.ErrPermission):
		return gcerrors.PermissionDenied
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return gcerrors.NotFound
		case syscall.EEXIST:
			return gcerrors.FailedPrecondition
		case syscall.EACCES, syscall.EPERM, syscall.EROFS:
			return gcerrors.PermissionDenied
		case syscall.ENOSPC, syscall.EDQUOT:
			return gcerrors.ResourceExhausted
		case syscall.ENAMETOOLONG, syscall.EINVAL:
			return gcerrors.InvalidArgument
		}
	}
	return c
}

// IsNotFound reports whether err says the object or bucket does not exist.
func IsNotFound(err error) bool { return Code(err) == gcerrors.NotFound }

// IsExists reports whether err is the failed precondition of a
// create-if-absent write: another writer created the object first.
func IsExists(err error) bool {
	c := Code(err)
	return c == gcerrors.FailedPrecondition || c == gcerrors.AlreadyExists
}

// IsPermission reports whether err is an authentication or authorization
// failure (wrong or expired credentials, missing permission).
func IsPermission(err error) bool { return Code(err) == gcerrors.PermissionDenied }

// IsNoSpace reports whether err says the backend is out of space (ENOSPC,
// EDQUOT) or quota.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// IsTransient reports whether retrying the operation may succeed:
// throttling, internal server errors, 5xx, timeouts of a single request,
// connection resets and truncated responses. Context cancellation and
// deadlines of the caller's context are not transient, and neither is a
// full disk.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if IsNoSpace(err) {
		return false
	}
	switch Code(err) {
	case gcerrors.Internal, gcerrors.ResourceExhausted:
		return true
	case gcerrors.Unknown:
	default:
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return false
}
