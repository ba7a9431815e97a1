package storage_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/spotcheck/spotcheck/internal/testpeers"
	"github.com/spotcheck/spotcheck/storage"
)

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url string
		want      []string // substrings of the message
		is        error    // sentinel, or nil
		hidden    string   // must not appear in the message
	}{
		{"empty", "", []string{"empty bucket URL"}, nil, ""},
		{"malformed", "s3://bucket/%zz", []string{"malformed bucket URL", "invalid URL escape"}, nil, ""},
		{"no scheme", "/tmp/dir", []string{"no scheme"}, nil, ""},
		{"unknown scheme", "ftp://host/dir", []string{`unknown scheme "ftp"`, "file, mem, s3, gs, azblob"}, nil, ""},
		{"relative file", "file://relative/dir", []string{"absolute directory", `host "relative"`}, nil, ""},
		{"missing dir", fileURL(filepath.Join(dir, "missing")), []string{"does not exist", "create_dir=true"}, storage.ErrNotFound, ""},
		{"file not dir", fileURL(file), []string{"not a directory"}, nil, ""},
		{"bad create_dir", fileURL(dir) + "?create_dir=maybe", []string{`invalid value "maybe" for create_dir`}, nil, ""},
		{"unknown file param", fileURL(dir) + "?colour=red", []string{`unknown query parameter "colour"`}, nil, ""},
		{"s3 no bucket", "s3://?region=us-east-1", []string{"names no bucket"}, nil, ""},
		{"s3 path", "s3://bucket/run-7?region=us-east-1", []string{"?prefix=run-7"}, nil, ""},
		{"s3 bad bool", "s3://bucket?use_path_style=yes-please", []string{`invalid value "yes-please" for use_path_style`}, nil, ""},
		{"s3 unknown param", "s3://bucket?region=us-east-1&secret_token=hunter2", []string{`unknown query parameter "secret_token"`, "REDACTED"}, nil, "hunter2"},
		{"user info", "s3://me:hunter2@bucket", []string{"must not carry user information"}, nil, "hunter2"},
		{"mem param", "mem://?colour=red", []string{"colour"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := storage.Open(context.Background(), tc.url)
			if err == nil {
				_ = b.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.url)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Open(%q) = %q, want it to mention %q", tc.url, msg, w)
				}
			}
			if tc.hidden != "" && strings.Contains(msg, tc.hidden) {
				t.Errorf("Open(%q) = %q reveals %q", tc.url, msg, tc.hidden)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Open(%q) = %v, want errors.Is %v", tc.url, err, tc.is)
			}
			var se *storage.Error
			if !errors.As(err, &se) || se.Op != "open" {
				t.Errorf("Open(%q) = %T, want *storage.Error with Op open", tc.url, err)
			}
		})
	}
}

func TestOpenS3Errors(t *testing.T) {
	srv := testpeers.S3(t)
	srv.SetEnv(t)
	t.Run("missing bucket", func(t *testing.T) {
		_, err := storage.Open(context.Background(), srv.URL("no-such-bucket", ""))
		if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
			t.Errorf("Open(missing bucket) = %v, want a not-found error naming the bucket", err)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
		_, err := storage.Open(context.Background(), srv.URL(srv.NewBucket(t), ""))
		if !errors.Is(err, storage.ErrPermission) || !strings.Contains(err.Error(), "denied (check the credentials") {
			t.Errorf("Open(wrong secret) = %v, want a permission error naming the credentials", err)
		}
		if storage.IsTransient(err) {
			t.Errorf("IsTransient(%v) = true", err)
		}
	})
	t.Run("wrong key id", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
		_, err := storage.Open(context.Background(), srv.URL(srv.NewBucket(t), ""))
		if !errors.Is(err, storage.ErrPermission) {
			t.Errorf("Open(wrong key id) = %v, want a permission error", err)
		}
	})
}

func TestOpenSchemes(t *testing.T) {
	// gs and azblob are registered but not tested against a live cloud.
	for _, s := range storage.Schemes {
		if !storage.SchemeRegistered(s) {
			t.Errorf("scheme %q is not registered", s)
		}
	}
	if storage.SchemeRegistered("ftp") {
		t.Errorf("scheme ftp is registered")
	}
}

func TestOpenPrefix(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := mustOpen(t, fileURL(dir)+"?prefix=run-7/")
	if err := b.WriteAll(ctx, "LATEST", []byte("1200"), nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "run-7", "LATEST"))
	if err != nil || string(got) != "1200" {
		t.Fatalf("run-7/LATEST on disk = %q, %v; want 1200", got, err)
	}
	root := mustOpen(t, fileURL(dir))
	if ok, _ := root.Exists(ctx, "run-7/LATEST"); !ok {
		t.Errorf("unprefixed bucket does not see run-7/LATEST")
	}
	created := mustOpen(t, fileURL(filepath.Join(dir, "new", "sub"))+"?create_dir=true")
	if err := created.WriteAll(ctx, "k", nil, &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Errorf("write to created dir: %v", err)
	}
}
