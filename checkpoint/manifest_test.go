package checkpoint_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spotcheck/spotcheck/checkpoint"
)

// goodManifest returns the stored bytes of a real manifest.
func goodManifest(t testing.TB) []byte {
	t.Helper()
	s, b, _ := newStore(t, nil)
	save(t, s, 12)
	ck, err := s.At(context.Background(), 12)
	if err != nil {
		t.Fatal(err)
	}
	_ = ck
	data, err := b.ReadAll(context.Background(), "steps/9223372036854775795/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reseal re-encodes a manifest edited as a generic map with a correct
// digest, as a buggy or malicious writer would, so that only validation
// can reject it.
func reseal(t *testing.T, good []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	m["digest"] = ""
	// The digest is over the canonical struct encoding: decode into the
	// struct, which is what DecodeManifest does, when it can.
	raw, _ := json.Marshal(m)
	var mf checkpoint.Manifest
	if json.Unmarshal(raw, &mf) == nil {
		if d, err := checkpoint.ManifestDigest(&mf); err == nil {
			mf.Digest = d
			out, _ := json.Marshal(&mf)
			return out
		}
	}
	return raw
}

func TestDecodeManifestBadInput(t *testing.T) {
	good := goodManifest(t)
	if _, err := checkpoint.DecodeManifest(good); err != nil {
		t.Fatalf("good manifest rejected: %v", err)
	}
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name string
		data []byte
		want string // substring of the error
	}{
		{"garbage", []byte("not json at all"), "not valid JSON"},
		{"empty", nil, "not valid JSON"},
		{"truncated", good[:len(good)/2], "not valid JSON"},
		{"trailing", append(append([]byte{}, good...), []byte(`{}`)...), "trailing"},
		{"unknown-field", []byte(strings.Replace(string(good), `{"format"`, `{"extra":1,"format"`, 1)), "unknown field"},
		{"negative-step", reseal(t, good, func(m map[string]any) { m["step"] = -5 }), "negative step"},
		{"unknown-format", reseal(t, good, func(m map[string]any) { m["format"] = "spotcheck.checkpoint/v9" }), "unknown format"},
		{"no-format", reseal(t, good, func(m map[string]any) { delete(m, "format") }), "unknown format"},
		{"part-slash", reseal(t, good, func(m map[string]any) { m["parts"].([]any)[0].(map[string]any)["name"] = "../etc/passwd" }), "part name"},
		{"part-dotdot", reseal(t, good, func(m map[string]any) { m["parts"].([]any)[0].(map[string]any)["name"] = ".." }), "part name"},
		{"part-negative-size", reseal(t, good, func(m map[string]any) { m["parts"].([]any)[0].(map[string]any)["size"] = -1 }), "negative size"},
		{"part-bad-digest", reseal(t, good, func(m map[string]any) { m["parts"].([]any)[0].(map[string]any)["sha256"] = "abc" }), "invalid sha256"},
		{"no-parts", reseal(t, good, func(m map[string]any) { m["parts"] = []any{} }), "no parts"},
		{"oversized-label", reseal(t, good, func(m map[string]any) { m["labels"] = map[string]any{"k": long} }), "longer than"},
		{"oversized-metric-name", reseal(t, good, func(m map[string]any) { m["metrics"] = map[string]any{long: 1} }), "longer than"},
		{"oversized-manifest", append([]byte(`{"format":"`), append([]byte(strings.Repeat("a", checkpoint.MaxManifestSize)), '"', '}')...), "max"},
		{"bad-attempt", reseal(t, good, func(m map[string]any) { m["attempt"] = "../x" }), "attempt"},
		{"digest-mismatch", []byte(strings.Replace(string(good), `"epoch":1`, `"epoch":2`, 1)), "digest"},
		{"not-canonical", []byte(strings.Replace(string(good), `{"format"`, `{ "format"`, 1)), "canonical"},
		{"case-folded-key", []byte(strings.Replace(string(good), `"epoch"`, `"EPOCH"`, 1)), "canonical"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := checkpoint.DecodeManifest(tc.data)
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !errors.Is(err, checkpoint.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v; want ErrCorrupt mentioning %q", err, tc.want)
			}
		})
	}
}

// TestBadManifestNeverLatest stores each bad manifest as the newest step
// and checks that Latest passes over it to the good one.
func TestBadManifestNeverLatest(t *testing.T) {
	ctx := context.Background()
	good := goodManifest(t)
	bad := map[string][]byte{
		"garbage":       []byte("{{{"),
		"negative-step": reseal(t, good, func(m map[string]any) { m["step"] = -1 }),
		"other-step":    good, // a valid manifest of step 12 stored under step 99
		"format":        reseal(t, good, func(m map[string]any) { m["format"] = "v0" }),
	}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			s, b, _ := newStore(t, nil)
			save(t, s, 1)
			if err := b.WriteAll(ctx, "steps/9223372036854775708/MANIFEST.json", data, nil); err != nil { // step 99
				t.Fatal(err)
			}
			ck, err := s.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ck.Step != 1 || len(ck.Fallback) != 1 || ck.Fallback[0].Step != 99 {
				t.Errorf("Latest = %d, fallback %v; want 1 after skipping 99", ck.Step, ck.Fallback)
			}
			if _, err := s.At(ctx, 99); !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Errorf("At(99) = %v, want ErrCorrupt", err)
			}
		})
	}
}

func FuzzDecodeManifest(f *testing.F) {
	good := goodManifest(f)
	f.Add(good)
	f.Add([]byte(`{"format":"spotcheck.checkpoint/v1","step":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := checkpoint.DecodeManifest(data)
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		// Anything accepted is canonical, so it re-encodes to itself.
		again, err := json.Marshal(m)
		if err != nil || string(again) != string(data) {
			t.Fatalf("accepted non-canonical manifest")
		}
		if m.Step < 0 || len(m.Parts) == 0 {
			t.Fatalf("accepted invalid manifest %+v", m)
		}
	})
}
