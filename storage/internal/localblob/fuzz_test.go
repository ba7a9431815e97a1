package localblob

import (
	"path/filepath"
	"strings"
	"testing"
)

func FuzzEscapeKey(f *testing.F) {
	for _, k := range []string{"a/b/c", "../../etc/passwd", "a//b/", "/lead", ".", "..", "%tmp-x", "%-", "%2E", "sp ace\x00\x1f\x7f", "☺/..\\x"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return
		}
		rel := EscapeKey(key)
		got, ok := UnescapeKey(rel)
		if !ok || got != key {
			t.Fatalf("UnescapeKey(EscapeKey(%q) = %q) = %q, %v", key, rel, got, ok)
		}
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || rel == "." {
			t.Fatalf("EscapeKey(%q) = %q escapes the root", key, rel)
		}
		for _, seg := range strings.Split(rel, "/") {
			if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, tmpPrefix) {
				t.Fatalf("EscapeKey(%q) = %q has segment %q", key, rel, seg)
			}
		}
	})
}
