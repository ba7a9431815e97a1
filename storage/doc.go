// Package storage opens the buckets spotcheck writes checkpoints to, by URL,
// and classifies their errors.
//
// A bucket is a gocloud.dev/blob *blob.Bucket; storage defines no blob
// interface of its own. Open is the one place that knows drivers:
//
//	file:///abs/dir[?create_dir=true]   durable local backend (below)
//	mem://                              in-memory, for tests
//	s3://bucket?region=..&endpoint=..&use_path_style=true
//	gs://bucket                         Google Cloud Storage
//	azblob://container                  Azure Blob Storage
//
// Every URL accepts ?prefix=run-7/ to root all keys below a prefix. S3
// credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY for S3-compatible servers, shared config, the
// instance or task role); they never appear in the URL. Open lists one
// object to check the bucket exists and the credentials work, and its
// errors say which of these failed, with secrets redacted from the URL.
//
// The local backend (file://) is made for checkpoints that must survive a
// machine crash and a second process racing on the same directory. A write
// goes to a temporary file in the object's directory, which is fsynced and
// then published atomically: rename(2) for plain writes, and
// renameat2(RENAME_NOREPLACE) (or link(2)) for create-if-absent writes
// (blob.WriterOptions.IfNotExist), so exactly one of several processes
// creates an object. The directory is fsynced before Close returns. A
// cancelled or failed write leaves no object and no visible temporary file.
// Object attributes (content type, metadata, MD5 when the writer supplied
// ContentMD5, creation time) live in an extended attribute of the file, so
// they are published together with the bytes; the file system must support
// user extended attributes (ext4, xfs, btrfs, tmpfs on Linux >= 6.6).
// The backend passes gocloud's drivertest conformance suite and
// storagetest.
//
// Errors: Code extends gcerrors.Code with S3 error codes, HTTP statuses and
// errno values gocloud leaves as Unknown; IsNotFound, IsExists,
// IsPermission, IsNoSpace and IsTransient answer the questions callers
// ask. Wrap annotates an error once with the operation and the key
//
//	storage: write "steps/00000000000000001200/a1/model": ...
//
// and the result matches the sentinels ErrNotFound, ErrExists,
// ErrPermission, ErrNoSpace and ErrTransient with errors.Is. Retry repeats
// an operation on transient errors with exponential backoff and full
// jitter, honouring the context.
package storage
