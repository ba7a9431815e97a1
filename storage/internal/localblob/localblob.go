// Package localblob is a durable gocloud.dev/blob driver over a local
// directory, safe for several processes sharing that directory.
//
// Unlike gocloud's fileblob, a write is reported done only when the data,
// its attributes and the directory entry are on stable storage, and a
// create-if-absent write (WriterOptions.IfNotExist) is atomic across
// processes:
//
//   - Writer streams into a temporary file in the object's directory
//     (named "%tmp-...", a name no escaped key can have, hidden from
//     listings). The MD5 attribute is the WriterOptions.ContentMD5 that
//     blob.Writer verified (WriteAll always sets it); streamed writes
//     without it have no MD5, since hashing costs more CPU time than the
//     write itself (MD5 runs at about 230 MB/s on a 2-core cloud VM).
//   - Close stores the attributes in the extended attribute
//     "user.spotcheck.blob" of that file, fsyncs it, publishes it with
//     rename(2) (plain writes) or renameat2(RENAME_NOREPLACE), falling back
//     to link(2), (IfNotExist), and fsyncs the directory before returning.
//   - A cancelled context, a failed write or a lost race removes the
//     temporary file; nothing becomes visible.
//
// Keys map to paths below the root: "/" separates directories, and the
// bytes that cannot appear in a file name (control characters, "%", empty,
// "." and ".." segments) are %XX-escaped. As with fileblob, a key cannot be
// both an object and a "directory" prefix of another object ("a" and "a/b").
package localblob

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/gcerrors"
	"golang.org/x/sys/unix"
)

// xattrName is the extended attribute holding an object's attributes.
const xattrName = "user.spotcheck.blob"

// tmpPrefix starts the names of temporary files. "%t" is never produced by
// escaping a key segment, so listings can skip these names safely.
const tmpPrefix = "%tmp-"

const defaultPageSize = 1000

// Options configures a bucket.
type Options struct {
	// CreateDir creates the root directory (and parents) if missing.
	CreateDir bool
	// NoSync skips fsync of files and directories. Only for tests and
	// benchmarks that measure the cost of durability; never in production.
	NoSync bool
}

type bucket struct {
	dir  string
	opts Options
}

// ErrExists is the cause of a lost create-if-absent write.
var ErrExists = errors.New("object already exists")

// Open returns a driver for the directory dir (absolute or relative to the
// working directory), which must exist unless opts.CreateDir is set.
func Open(dir string, opts *Options) (driver.Bucket, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if o.CreateDir {
		if err := mkdirAll(abs, o.NoSync); err != nil {
			return nil, err
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: abs, Err: syscall.ENOTDIR}
	}
	b := &bucket{dir: abs, opts: o}
	if err := b.probeXattr(); err != nil {
		return nil, err
	}
	return b, nil
}

// OpenBucket is Open wrapped in a *blob.Bucket.
func OpenBucket(dir string, opts *Options) (*blob.Bucket, error) {
	d, err := Open(dir, opts)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(d), nil
}

// probeXattr fails if the file system cannot store user extended
// attributes. A read-only directory is not probed.
func (b *bucket) probeXattr() error {
	f, err := b.createTemp(b.dir)
	if err != nil {
		return nil // read-only or similar: writes will report their own errors
	}
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
	if err := unix.Fsetxattr(int(f.Fd()), xattrName, []byte("{}"), 0); err != nil {
		if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("local file system at %s does not support user extended attributes (needed to store object attributes): %w", b.dir, err)
		}
	}
	return nil
}

func (b *bucket) Close() error { return nil }

// --- keys and paths ---

func escapeSegment(s string) string {
	switch s {
	case "":
		return "%-"
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	need := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '%' || c == 0x7f {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '%' || c == 0x7f {
			fmt.Fprintf(&sb, "%%%02X", c)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func unescapeSegment(s string) (string, bool) {
	if s == "%-" {
		return "", true
	}
	if !strings.Contains(s, "%") {
		return s, true
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			sb.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			return "", false
		}
		sb.WriteByte(v[0])
		i += 2
	}
	return sb.String(), true
}

// EscapeKey returns the relative path for key.
func EscapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = escapeSegment(s)
	}
	return filepath.Join(segs...)
}

// UnescapeKey reverses EscapeKey; ok is false for paths EscapeKey cannot
// produce (internal or foreign files).
func UnescapeKey(rel string) (string, bool) {
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, s := range segs {
		if strings.HasPrefix(s, tmpPrefix) {
			return "", false
		}
		u, ok := unescapeSegment(s)
		if !ok {
			return "", false
		}
		segs[i] = u
	}
	return strings.Join(segs, "/"), true
}

func (b *bucket) path(key string) (string, error) {
	if key == "" {
		return "", &keyError{key: key, msg: "empty key"}
	}
	return filepath.Join(b.dir, EscapeKey(key)), nil
}

type keyError struct{ key, msg string }

func (e *keyError) Error() string { return fmt.Sprintf("invalid key %q: %s", e.key, e.msg) }

// --- attributes ---

type attrs struct {
	CacheControl       string            `json:"cc,omitempty"`
	ContentDisposition string            `json:"cd,omitempty"`
	ContentEncoding    string            `json:"ce,omitempty"`
	ContentLanguage    string            `json:"cl,omitempty"`
	ContentType        string            `json:"ct,omitempty"`
	Metadata           map[string]string `json:"md,omitempty"`
	MD5                []byte            `json:"md5,omitempty"`
	CreateTime         time.Time         `json:"created,omitzero"`
}

// readAttrs reads the attributes of an open file. A file without them (put
// there by hand) gets empty attributes.
func readAttrs(f *os.File) (attrs, error) {
	var a attrs
	buf := make([]byte, 1024)
	for {
		n, err := unix.Fgetxattr(int(f.Fd()), xattrName, buf)
		if errors.Is(err, unix.ERANGE) {
			buf = make([]byte, len(buf)*4)
			continue
		}
		if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
			return a, nil
		}
		if err != nil {
			return a, &fs.PathError{Op: "getxattr", Path: f.Name(), Err: err}
		}
		if err := json.Unmarshal(buf[:n], &a); err != nil {
			return a, fmt.Errorf("corrupt attributes of %s: %w", f.Name(), err)
		}
		return a, nil
	}
}

// open opens the object file for key; a directory or a path through a file
// is reported as not existing.
func (b *bucket) open(key string) (*os.File, os.FileInfo, attrs, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, nil, attrs{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			err = &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		}
		return nil, nil, attrs{}, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	var a attrs
	if err == nil {
		a, err = readAttrs(f)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, attrs{}, err
	}
	return f, fi, a, nil
}

func etag(fi os.FileInfo) string {
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("\"%x-%x-%x\"", ino, fi.ModTime().UnixNano(), fi.Size())
}

// --- driver.Bucket ---

func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode {
	var ke *keyError
	switch {
	case errors.Is(err, ErrExists):
		return gcerrors.FailedPrecondition
	case errors.Is(err, errors.ErrUnsupported):
		return gcerrors.Unimplemented
	case errors.As(err, &ke):
		return gcerrors.InvalidArgument
	case errors.Is(err, fs.ErrNotExist):
		return gcerrors.NotFound
	case errors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return gcerrors.ResourceExhausted
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return gcerrors.PermissionDenied
	case errors.Is(err, syscall.ENAMETOOLONG), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR):
		return gcerrors.InvalidArgument
	}
	return gcerrors.Unknown
}

func (b *bucket) As(i any) bool {
	p, ok := i.(*string)
	if !ok {
		return false
	}
	*p = b.dir
	return true
}

func (b *bucket) ErrorAs(err error, i any) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		if p, ok := i.(**fs.PathError); ok {
			*p = pe
			return true
		}
	}
	return false
}

func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	f, fi, a, err := b.open(key)
	if err != nil {
		return nil, err
	}
	_ = f.Close()
	return &driver.Attributes{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		ContentType:        a.ContentType,
		Metadata:           a.Metadata,
		CreateTime:         a.CreateTime,
		ModTime:            fi.ModTime(),
		Size:               fi.Size(),
		MD5:                a.MD5,
		ETag:               etag(fi),
		AsFunc: func(i any) bool {
			p, ok := i.(*os.FileInfo)
			if ok {
				*p = fi
			}
			return ok
		},
	}, nil
}

func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	pageSize := opts.PageSize
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	if opts.BeforeList != nil {
		if err := opts.BeforeList(func(any) bool { return false }); err != nil {
			return nil, err
		}
	}
	// Only the directory of the prefix's last complete segment can hold
	// matches.
	root := b.dir
	if i := strings.LastIndex(opts.Prefix, "/"); i >= 0 {
		root = filepath.Join(b.dir, EscapeKey(opts.Prefix[:i]))
	}
	type entry struct {
		key string
		fi  fs.DirEntry
		abs string
	}
	var entries []entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if p == b.dir {
			return nil
		}
		rel, err := filepath.Rel(b.dir, p)
		if err != nil {
			return err
		}
		key, ok := UnescapeKey(rel)
		if !ok {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			k := key + "/"
			if !strings.HasPrefix(k, opts.Prefix) && !strings.HasPrefix(opts.Prefix, k) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, opts.Prefix) {
			return nil
		}
		entries = append(entries, entry{key: key, fi: d, abs: p})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })

	token := string(opts.PageToken)
	var page driver.ListPage
	var lastDir string
	for _, e := range entries {
		obj := &driver.ListObject{Key: e.key}
		if opts.Delimiter != "" {
			rest := e.key[len(opts.Prefix):]
			if i := strings.Index(rest, opts.Delimiter); i >= 0 {
				dir := opts.Prefix + rest[:i+len(opts.Delimiter)]
				if dir == lastDir {
					continue
				}
				lastDir = dir
				obj = &driver.ListObject{Key: dir, IsDir: true, AsFunc: func(any) bool { return false }}
			}
		}
		if token != "" && obj.Key <= token {
			continue
		}
		if len(page.Objects) == pageSize {
			page.NextPageToken = []byte(page.Objects[pageSize-1].Key)
			break
		}
		if !obj.IsDir {
			fi, err := e.fi.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			obj.ModTime = fi.ModTime()
			obj.Size = fi.Size()
			if f, err := os.Open(e.abs); err == nil {
				if a, err := readAttrs(f); err == nil {
					obj.MD5 = a.MD5
				}
				_ = f.Close()
			}
			obj.AsFunc = func(i any) bool {
				p, ok := i.(*os.FileInfo)
				if ok {
					*p = fi
				}
				return ok
			}
		}
		page.Objects = append(page.Objects, obj)
	}
	return &page, nil
}

func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	f, fi, a, err := b.open(key)
	if err != nil {
		return nil, err
	}
	if opts != nil && opts.BeforeRead != nil {
		if err := opts.BeforeRead(func(i any) bool {
			p, ok := i.(**os.File)
			if ok {
				*p = f
			}
			return ok
		}); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	size := fi.Size()
	if offset > size {
		offset = size
	}
	n := size - offset
	if length >= 0 && length < n {
		n = length
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, err
		}
	}
	return &reader{
		ctx: ctx,
		f:   f,
		r:   &io.LimitedReader{R: f, N: n},
		attrs: driver.ReaderAttributes{
			ContentType: a.ContentType,
			ModTime:     fi.ModTime(),
			Size:        size,
		},
	}, nil
}

type reader struct {
	ctx   context.Context
	f     *os.File
	r     *io.LimitedReader
	attrs driver.ReaderAttributes
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (r *reader) Close() error                         { return r.f.Close() }
func (r *reader) Attributes() *driver.ReaderAttributes { return &r.attrs }
func (r *reader) As(i any) bool {
	p, ok := i.(**os.File)
	if ok {
		*p = r.f
	}
	return ok
}

// createTemp creates a fresh temporary file in dir.
func (b *bucket) createTemp(dir string) (*os.File, error) {
	var rnd [12]byte
	for range 100 {
		_, _ = rand.Read(rnd[:])
		name := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s", dir)
}

// mkdirAll creates dir and missing parents, fsyncing the parent of every
// directory it creates so the new entries survive a crash.
func mkdirAll(dir string, noSync bool) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAll(parent, noSync); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o777); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
				return nil // a concurrent writer made it
			}
		}
		return err
	}
	if noSync {
		return nil
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	if err := mkdirAll(dir, b.opts.NoSync); err != nil {
		return nil, err
	}
	f, err := b.createTemp(dir)
	if err != nil {
		return nil, err
	}
	if opts.BeforeWrite != nil {
		if err := opts.BeforeWrite(func(i any) bool {
			q, ok := i.(**os.File)
			if ok {
				*q = f
			}
			return ok
		}); err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			return nil, err
		}
	}
	// The file system's (coarse) clock, so that CreateTime <= ModTime.
	created := time.Now().UTC()
	if fi, err := f.Stat(); err == nil {
		created = fi.ModTime().UTC()
	}
	var md map[string]string
	if len(opts.Metadata) > 0 {
		md = opts.Metadata
	}
	return &writer{
		ctx:  ctx,
		b:    b,
		f:    f,
		path: p,
		dir:  dir,
		a: attrs{
			CacheControl:       opts.CacheControl,
			ContentDisposition: opts.ContentDisposition,
			ContentEncoding:    opts.ContentEncoding,
			ContentLanguage:    opts.ContentLanguage,
			ContentType:        contentType,
			Metadata:           md,
			CreateTime:         created,
			// blob.Writer checks ContentMD5 against the bytes written
			// (WriteAll always sets it) and cancels the write on a
			// mismatch, so it can be stored as the object's MD5.
			MD5: opts.ContentMD5,
		},
		ifNotExist: opts.IfNotExist,
	}, nil
}

type writer struct {
	ctx        context.Context
	b          *bucket
	f          *os.File
	path, dir  string
	a          attrs
	ifNotExist bool
	err        error
	written    int64 // bytes written so far
	started    int64 // bytes whose writeback was started
}

// writebackChunk is how many written bytes accumulate before the writer
// asks the kernel to start writing them back (sync_file_range
// SYNC_FILE_RANGE_WRITE, which does not wait). The disk then works while
// the caller produces the rest, and the fsync in Close has less left to
// do. Durability still rests on that fsync alone.
const writebackChunk = 8 << 20

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := w.ctx.Err(); err != nil {
		w.err = err
		return 0, err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	w.written += int64(n)
	if !w.b.opts.NoSync && w.written-w.started >= writebackChunk {
		// Advisory: an error here changes nothing, Close's fsync decides.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.started, w.written-w.started, unix.SYNC_FILE_RANGE_WRITE)
		w.started = w.written
	}
	return n, err
}

// Close publishes the object, or removes the temporary file on any error.
func (w *writer) Close() (err error) {
	tmp := w.f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if w.err != nil {
		_ = w.f.Close()
		return w.err
	}
	if err := w.ctx.Err(); err != nil {
		_ = w.f.Close()
		return err
	}
	js, err := json.Marshal(&w.a)
	if err != nil {
		_ = w.f.Close()
		return err
	}
	if err := unix.Fsetxattr(int(w.f.Fd()), xattrName, js, 0); err != nil {
		_ = w.f.Close()
		if errors.Is(err, unix.E2BIG) || errors.Is(err, unix.ENOSPC) && len(js) > 1024 {
			return fmt.Errorf("object attributes of %d bytes exceed what the file system can store as an extended attribute: %w", len(js), err)
		}
		return &fs.PathError{Op: "setxattr", Path: tmp, Err: err}
	}
	if !w.b.opts.NoSync {
		if err := w.f.Sync(); err != nil {
			_ = w.f.Close()
			return err
		}
	}
	if err := w.f.Close(); err != nil {
		return err
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.ifNotExist {
		if err := renameNoReplace(tmp, w.path); err != nil {
			return err
		}
	} else if err := os.Rename(tmp, w.path); err != nil {
		return err
	}
	if w.b.opts.NoSync {
		return nil
	}
	return syncDir(w.dir)
}

// renameNoReplace moves tmp to path unless path exists, atomically across
// processes: renameat2(RENAME_NOREPLACE), or link(2)+unlink where the file
// system does not support it.
func renameNoReplace(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("%w: %s", ErrExists, path)
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.ENOTSUP) {
		return &os.LinkError{Op: "renameat2", Old: tmp, New: path, Err: err}
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		return err
	}
	return os.Remove(tmp)
}

func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	f, _, a, err := b.open(srcKey)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewTypedWriter(wctx, dstKey, a.ContentType, &driver.WriterOptions{
		CacheControl:       a.CacheControl,
		ContentDisposition: a.ContentDisposition,
		ContentEncoding:    a.ContentEncoding,
		ContentLanguage:    a.ContentLanguage,
		Metadata:           a.Metadata,
		ContentMD5:         a.MD5, // same bytes
		BeforeWrite:        opts.BeforeCopy,
	})
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		cancel()
		_ = w.Close()
		return err
	}
	return w.Close()
}

func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if opts != nil && opts.BeforeDelete != nil {
		if err := opts.BeforeDelete(func(any) bool { return false }); err != nil {
			return err
		}
	}
	p, err := b.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err == nil && fi.IsDir() {
		return &fs.PathError{Op: "delete", Path: p, Err: fs.ErrNotExist}
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return &fs.PathError{Op: "delete", Path: p, Err: fs.ErrNotExist}
		}
		return err
	}
	if b.opts.NoSync {
		return nil
	}
	return syncDir(filepath.Dir(p))
}

func (b *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	return "", errors.ErrUnsupported
}
