package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/spotcheck/spotcheck/checkpoint"
)

func sampleTensors() []checkpoint.Tensor {
	return []checkpoint.Tensor{
		{Name: "layer1.weight", Shape: []int{2, 3}, F32: []float32{1, -2.5, 3.25, float32(math.Pi), 1e-30, -0}},
		{Name: "layer1.bias", Shape: []int{3}, F64: []float64{0.1, math.MaxFloat64, -math.SmallestNonzeroFloat64}},
		{Name: "step", Shape: []int{}, F64: []float64{42}},
		{Name: "empty", Shape: []int{0, 4}, F32: []float32{}},
	}
}

func TestTensorsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	md := map[string]string{"format": "pt", "step": "42"}
	n, err := checkpoint.WriteTensors(&buf, sampleTensors(), md)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTensors returned %d, wrote %d", n, buf.Len())
	}
	got, gotMD, err := checkpoint.ReadTensors(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleTensors(), got); diff != "" {
		t.Errorf("tensors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(md, gotMD); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
}

func TestTensorsInvalid(t *testing.T) {
	tests := []struct {
		name string
		t    checkpoint.Tensor
	}{
		{"shape-mismatch", checkpoint.Tensor{Name: "a", Shape: []int{2, 2}, F32: []float32{1}}},
		{"both-dtypes", checkpoint.Tensor{Name: "a", Shape: []int{1}, F32: []float32{1}, F64: []float64{1}}},
		{"no-data", checkpoint.Tensor{Name: "a", Shape: []int{1}}},
		{"reserved-name", checkpoint.Tensor{Name: "__metadata__", Shape: []int{1}, F32: []float32{1}}},
		{"negative-dim", checkpoint.Tensor{Name: "a", Shape: []int{-1}, F32: []float32{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := checkpoint.WriteTensors(&bytes.Buffer{}, []checkpoint.Tensor{tc.t}, nil); !errors.Is(err, checkpoint.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestTensorsPython has an independent reader (python3 with json and
// struct only) decode what we wrote, through a real checkpoint part.
func TestTensorsPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is required for this test (the independent safetensors reader): %v", err)
	}
	ctx := context.Background()
	s, _, _ := newStore(t, nil)
	if _, err := s.Save(ctx, 1, checkpoint.Meta{}, map[string]io.WriterTo{"model": checkpoint.TensorPart(sampleTensors(), map[string]string{"k": "v"})}); err != nil {
		t.Fatal(err)
	}
	ck, err := s.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ck.ReadAll(ctx, "model")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "testdata/read_safetensors.py", file).Output()
	if err != nil {
		t.Fatalf("python reader: %v", err)
	}
	var res struct {
		Metadata map[string]string
		Tensors  map[string]struct {
			Dtype string
			Shape []int
			Data  []string
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	var got []checkpoint.Tensor
	for _, want := range sampleTensors() {
		pt, ok := res.Tensors[want.Name]
		if !ok {
			t.Fatalf("python did not see tensor %q", want.Name)
		}
		g := checkpoint.Tensor{Name: want.Name, Shape: pt.Shape}
		for _, v := range pt.Data {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("python value %q: %v", v, err)
			}
			switch pt.Dtype {
			case "F32":
				g.F32 = append(g.F32, float32(f))
			case "F64":
				g.F64 = append(g.F64, f)
			}
		}
		if want.F32 != nil && g.F32 == nil {
			g.F32 = []float32{}
		}
		got = append(got, g)
	}
	if diff := cmp.Diff(sampleTensors(), got); diff != "" {
		t.Errorf("python read (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"k": "v"}, res.Metadata); diff != "" {
		t.Errorf("python metadata (-want +got):\n%s", diff)
	}
}

func FuzzReadTensors(f *testing.F) {
	var buf bytes.Buffer
	checkpoint.WriteTensors(&buf, sampleTensors(), map[string]string{"a": "b"})
	f.Add(buf.Bytes())
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, md, err := checkpoint.ReadTensors(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		// What decodes must re-encode and decode to the same tensors.
		var out bytes.Buffer
		if _, err := checkpoint.WriteTensors(&out, ts, md); err != nil {
			return // e.g. duplicate-free but invalid names are the writer's call
		}
		again, _, err := checkpoint.ReadTensors(&out)
		if err != nil {
			t.Fatalf("re-encoded tensors do not decode: %v", err)
		}
		if len(again) != len(ts) {
			t.Fatalf("%d tensors became %d", len(ts), len(again))
		}
	})
}
