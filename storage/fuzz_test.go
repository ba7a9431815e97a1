package storage

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"file:///tmp/x?prefix=run-7/&create_dir=true", "mem://", "s3://b?region=us-east-1&endpoint=http://127.0.0.1:9000&use_path_style=true",
		"gs://b", "azblob://c?sig=abc", "s3://u:pw@b", "ftp://x", "", "::", "file://relative", "s3://b/path", "%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseURL(raw)
		if err == nil {
			if !slices.Contains(Schemes, u.Scheme) {
				t.Fatalf("parseURL(%q) accepted scheme %q", raw, u.Scheme)
			}
			if u.User != nil {
				t.Fatalf("parseURL(%q) accepted user info", raw)
			}
		}
		red := Redact(raw)
		if pu, err := url.Parse(raw); err == nil {
			if pw, ok := pu.User.Password(); ok && len(pw) > 3 && strings.Contains(red, pw) && !strings.Contains(strings.ReplaceAll(red, pw, ""), "REDACTED") {
				t.Fatalf("Redact(%q) = %q reveals the password", raw, red)
			}
			if q, err := url.ParseQuery(pu.RawQuery); err == nil {
				for k, vs := range q {
					if !isSecretParam(k) {
						continue
					}
					rq, err := url.Parse(red)
					if err != nil {
						t.Fatalf("Redact(%q) = %q does not parse: %v", raw, red, err)
					}
					if got := rq.Query()[k]; len(vs) > 0 && (len(got) != 1 || got[0] != "REDACTED") {
						t.Fatalf("Redact(%q) = %q: secret parameter %q = %q", raw, red, k, got)
					}
				}
			}
		}
	})
}
