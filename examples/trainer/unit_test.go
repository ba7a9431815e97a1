package main

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDigitsDataset(t *testing.T) {
	d, err := loadDigits()
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 1797 || len(d.X) != 1797*numPixels {
		t.Fatalf("got %d samples (%d values), want 1797", d.Len(), len(d.X))
	}
	counts := make([]int, numClasses)
	for _, y := range d.Y {
		counts[y]++
	}
	for c, n := range counts {
		if n < 170 || n > 190 { // the dataset has 174..183 images per digit
			t.Errorf("digit %d has %d images", c, n)
		}
	}
	train, test := split(d, 1, 0.2)
	train2, test2 := split(d, 1, 0.2)
	if diff := cmp.Diff(train, train2, cmp.AllowUnexported(dataset{})); diff != "" {
		t.Errorf("split is not deterministic: %s", diff)
	}
	if test.Len() != 359 || train.Len()+test.Len() != d.Len() || !cmp.Equal(test, test2, cmp.AllowUnexported(dataset{})) {
		t.Errorf("split sizes %d + %d", train.Len(), test.Len())
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"-steps", "10", "-every", "5", "-keep", "1"}, ""},
		{[]string{"-steps", "0"}, "-steps 0 must be positive"},
		{[]string{"-batch", "0"}, "-batch 0 must be in 1..512"},
		{[]string{"-lr", "-1"}, "-lr -1 must be positive"},
		{[]string{"-every", "-3"}, "-every -3 must not be negative"},
		{[]string{"-keep", "0"}, "-keep 0 must be at least 1"},
		{[]string{"-progress", "fancy"}, `-progress "fancy" must be auto, bar or json`},
		{[]string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseFlags(tt.args, &stderr)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestSnapshotRoundTrip encodes a snapshot as the checkpoint parts and
// decodes it back.
func TestSnapshotRoundTrip(t *testing.T) {
	d, err := loadDigits()
	if err != nil {
		t.Fatal(err)
	}
	train, _ := split(d, 5, 0.2)
	m, err := newMLP(8, []int{16}, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	opt := newAdam(0.01, m.params)
	ld := newLoader(5, train.Len())
	var h history
	for range 30 {
		loss, err := m.step(train, ld.next(8))
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.update(m.params); err != nil {
			t.Fatal(err)
		}
		h.Loss = append(h.Loss, loss)
	}
	h.Events = []event{{Step: 30, Kind: eventInterrupted, Reason: "test"}}
	cfg := runConfig{Seed: 5, Batch: 8, LR: 0.01, Hidden: []int{16}}
	snap, err := takeSnapshot(30, cfg, m, opt, ld, &h)
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]byte{}
	for name, p := range snap.encodeParts() {
		var b bytes.Buffer
		if _, err := p.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		parts[name] = b.Bytes()
	}
	names := []string{"w1", "b1", "w2", "b2"}
	got, err := decodeSnapshot(30, names, func(name string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(parts[name])), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snap, got, cmpopts.IgnoreFields(snapshot{}, "Adam"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("decoded snapshot differs (-saved +decoded):\n%s", diff)
	}

	// A resumed model continues exactly like the original.
	m2, err := newMLP(8, []int{16}, 99) // other initial weights: restore overwrites them
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	opt2, ld2, h2 := newAdam(0.01, m2.params), newLoader(99, train.Len()), history{}
	if err := got.restore(m2, opt2, ld2, &h2); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		for _, mm := range []struct {
			m *mlp
			o *adam
			l *loader
		}{{m, opt, ld}, {m2, opt2, ld2}} {
			if _, err := mm.m.step(train, mm.l.next(8)); err != nil {
				t.Fatal(err)
			}
			if err := mm.o.update(mm.m.params); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a, b := m.digest(), m2.digest(); a != b {
		t.Errorf("after restore and 5 more steps: digest %s, original %s", b, a)
	}

	// Wrong configuration is refused with both sides named.
	err = cfg.check(runConfig{Seed: 6, Batch: 8, LR: 0.01, Hidden: []int{16}})
	if err == nil || !strings.Contains(err.Error(), "-seed 6") || !strings.Contains(err.Error(), "-seed 5") {
		t.Errorf("config check: %v", err)
	}
}

// FuzzDecodeSnapshot feeds arbitrary bytes as each part of a checkpoint:
// decoding must fail with an error, never panic.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"format":"spotcheck-trainer/1","step":3,"config":{},"loader":{"rng":null,"perm":[1,0],"pos":1}}`), []byte(`{"loss":[1,2,3]}`), []byte{})
	f.Add([]byte(`{}`), []byte(`null`), []byte{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '})
	f.Fuzz(func(t *testing.T, data, hist, tensors []byte) {
		parts := map[string][]byte{partModel: tensors, partOptimizer: tensors, partData: data, partHistory: hist}
		s, err := decodeSnapshot(3, []string{"w1"}, func(name string) (io.ReadCloser, error) {
			p, ok := parts[name]
			if !ok {
				return nil, errors.New("no part")
			}
			return io.NopCloser(bytes.NewReader(p)), nil
		})
		if err == nil && s == nil {
			t.Fatal("nil snapshot without error")
		}
		if err == nil {
			m, merr := newMLP(2, nil, 1)
			if merr != nil {
				t.Fatal(merr)
			}
			defer m.Close()
			var h history
			_ = s.restore(m, newAdam(0.1, m.params), newLoader(1, 10), &h) // must not panic
		}
	})
}
