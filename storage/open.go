package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/logging"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	"github.com/spotcheck/spotcheck/storage/internal/localblob"
)

// Schemes lists the URL schemes Open understands.
var Schemes = []string{"file", "mem", "s3", "gs", "azblob"}

// mux is this package's own URL mux, so that the "file" scheme opens the
// durable local backend even if a program also imports gocloud's fileblob
// (which registers "file" on blob.DefaultURLMux).
var mux = func() *blob.URLMux {
	m := new(blob.URLMux)
	m.RegisterBucket("file", fileOpener{})
	m.RegisterBucket(memblob.Scheme, &memblob.URLOpener{})
	m.RegisterBucket(s3blob.Scheme, s3Opener{})
	m.RegisterBucket(gcsblob.Scheme, new(gcsblob.URLOpener))
	m.RegisterBucket(azureblob.Scheme, new(azureblob.URLOpener))
	return m
}()

// Open opens the bucket named by rawURL and checks that it is reachable with
// the credentials at hand (one List request of one object).
//
//	file:///abs/dir[?create_dir=true]      durable local backend (fsync, atomic create-if-absent)
//	mem://                                 in-memory (tests)
//	s3://bucket?region=R[&endpoint=URL&use_path_style=true&disable_https=true]
//	gs://bucket                            Google Cloud Storage (gcsblob)
//	azblob://container                     Azure Blob Storage (azureblob)
//
// Every scheme accepts prefix=P (all keys are relative to P, typically
// "run-7/"). s3:// uses the standard AWS configuration chain: environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE),
// shared config files, then the instance or task role; it also accepts the
// other parameters of gocloud's s3blob URLOpener (profile, anonymous,
// ssetype, kmskeyid, accelerate, dualstack, fips, hostname_immutable,
// request_checksum_calculation, response_checksum_validation, ...).
//
// Errors are *Error values with Op "open" and the URL with any secrets
// redacted; they name the problem: a malformed URL, an unknown scheme, an
// unknown parameter, a missing bucket or directory (ErrNotFound), rejected
// credentials (ErrPermission).
func Open(ctx context.Context, rawURL string) (*blob.Bucket, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return nil, &Error{Op: "open", Key: Redact(rawURL), Err: err}
	}
	red := Redact(rawURL)
	b, err := mux.OpenBucketURL(ctx, u)
	if err != nil {
		return nil, &Error{Op: "open", Key: red, Err: err}
	}
	if _, _, err := b.ListPage(ctx, blob.FirstPageToken, 1, nil); err != nil {
		_ = b.Close()
		return nil, &Error{Op: "open", Key: red, Err: describeOpenError(u, err)}
	}
	return b, nil
}

// openError adds a plain-words diagnosis in front of the cause.
type openError struct {
	msg string
	err error
}

func (e *openError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

func describeOpenError(u *url.URL, err error) error {
	switch Code(err) {
	case gcerrors.NotFound:
		return &openError{fmt.Sprintf("bucket %q does not exist", u.Host), err}
	case gcerrors.PermissionDenied:
		return &openError{fmt.Sprintf("access to bucket %q denied (check the credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, profile or role)", u.Host), err}
	}
	return &openError{fmt.Sprintf("bucket %q is not reachable", u.Host), err}
}

// parseURL checks the shape of a bucket URL before any driver sees it.
func parseURL(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		return nil, errors.New("empty bucket URL")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the unredacted URL
		}
		return nil, fmt.Errorf("malformed bucket URL: %w", err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("bucket URL has no scheme (want one of %s)", strings.Join(Schemes, ", "))
	}
	if !slices.Contains(Schemes, u.Scheme) {
		return nil, fmt.Errorf("unknown scheme %q (want one of %s)", u.Scheme, strings.Join(Schemes, ", "))
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("malformed bucket URL: want %s://..., got %s:%s", u.Scheme, u.Scheme, "...")
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return nil, fmt.Errorf("malformed query: %w", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("file URL must name an absolute directory, as in file:///abs/dir (host %q is not allowed)", u.Host)
		}
		if u.Path == "" || !filepath.IsAbs(u.Path) {
			return nil, errors.New("file URL must name an absolute directory, as in file:///abs/dir")
		}
	case "mem":
	default:
		if u.Host == "" {
			return nil, fmt.Errorf("%s URL names no bucket: want %s://BUCKET", u.Scheme, u.Scheme)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("%s URL has a path %q; use ?prefix=%s for a prefix", u.Scheme, u.Path, strings.TrimPrefix(u.Path, "/"))
		}
	}
	if u.User != nil {
		return nil, errors.New("bucket URL must not carry user information; use the environment or config files for credentials")
	}
	return u, nil
}

// secretParams are query parameter names whose values Redact hides.
var secretParams = []string{"secret", "token", "sig", "password", "credential", "key_id", "access_key", "sas", "signature"}

// Redact returns rawURL with passwords and secret-looking query values
// (secret, token, sig, password, credential, access_key, ...) replaced by
// "REDACTED", for error messages and logs. A URL that does not parse is
// reduced to its scheme.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i > 0 && i < 16 {
			return rawURL[:i] + "://REDACTED"
		}
		return "REDACTED"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		u.RawQuery = "REDACTED"
		return u.String()
	}
	changed := false
	for k := range q {
		if isSecretParam(k) {
			q[k] = []string{"REDACTED"}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func isSecretParam(name string) bool {
	ln := strings.ToLower(name)
	for _, s := range secretParams {
		if strings.Contains(ln, s) {
			return true
		}
	}
	return false
}

// fileOpener opens file:// URLs with the durable local backend.
type fileOpener struct{}

func (fileOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	opts := &localblob.Options{}
	for k, v := range u.Query() {
		switch k {
		case "create_dir":
			b, err := strconv.ParseBool(v[0])
			if err != nil {
				return nil, fmt.Errorf("invalid value %q for create_dir: want true or false", v[0])
			}
			opts.CreateDir = b
		default:
			return nil, fmt.Errorf("unknown query parameter %q for file URLs (known: create_dir, prefix)", k)
		}
	}
	b, err := localblob.OpenBucket(filepath.FromSlash(u.Path), opts)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &openError{fmt.Sprintf("directory %s does not exist (create it or add ?create_dir=true)", u.Path), err}
		}
		return nil, err
	}
	return b, nil
}

// s3Opener opens s3:// URLs like gocloud's s3blob.URLOpener (same query
// parameters, same standard AWS configuration chain through
// gocloud.dev/aws.V2ConfigFromURLParams) but silences the SDK's logger, which
// would otherwise print checksum notices to stderr.
type s3Opener struct{}

func (s3Opener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	q := u.Query()
	var bopts s3blob.Options
	var cliOpts []func(*s3.Options)
	boolParam := func(key string, set func(bool)) error {
		v := q.Get(key)
		if v == "" {
			return nil
		}
		q.Del(key)
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid value %q for %s: want true or false", v, key)
		}
		set(b)
		return nil
	}
	for _, p := range []struct {
		key string
		set func(bool)
	}{
		{"use_path_style", func(b bool) { cliOpts = append(cliOpts, func(o *s3.Options) { o.UsePathStyle = b }) }},
		{"s3ForcePathStyle", func(b bool) { cliOpts = append(cliOpts, func(o *s3.Options) { o.UsePathStyle = b }) }},
		{"disable_https", func(b bool) {
			cliOpts = append(cliOpts, func(o *s3.Options) { o.EndpointOptions.DisableHTTPS = b })
		}},
		{"accelerate", func(b bool) { cliOpts = append(cliOpts, func(o *s3.Options) { o.UseAccelerate = b }) }},
	} {
		if err := boolParam(p.key, p.set); err != nil {
			return nil, err
		}
	}
	if v := q.Get("ssetype"); v != "" {
		q.Del("ssetype")
		ok := false
		for _, t := range s3types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(t), v) {
				bopts.EncryptionType, ok = t, true
			}
		}
		if !ok {
			return nil, fmt.Errorf("invalid value %q for ssetype", v)
		}
	}
	if v := q.Get("kmskeyid"); v != "" {
		q.Del("kmskeyid")
		bopts.KMSEncryptionID = v
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, err
	}
	cfg.Logger = logging.Nop{}
	cliOpts = append(cliOpts, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	bopts.RequestChecksumCalculation = cfg.RequestChecksumCalculation
	return s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, cliOpts...), u.Host, &bopts)
}

// S3StreamingWriterOptions bound the memory of a large streamed write to S3.
// s3blob's transfer manager keeps a pool of MaxConcurrency+1 part buffers of
// BufferSize bytes and reads the first part with io.ReadAll (up to its
// 16 MiB multipart threshold). Measured peak growth of the live heap for a
// streamed 1 GiB write against versitygw: 42 MiB with these options (5 MiB
// parts, 4 concurrent), 66 MiB with s3blob's defaults (8 MiB, 5). Copy it and
// set the other fields. Other backends ignore these fields.
var S3StreamingWriterOptions = blob.WriterOptions{BufferSize: 5 << 20, MaxConcurrency: 4}

// SchemeRegistered reports whether Open has a driver for scheme.
func SchemeRegistered(scheme string) bool { return mux.ValidBucketScheme(scheme) }
