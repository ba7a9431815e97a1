package checkpoint

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Tensor is a named dense tensor of float32 or float64 values in
// row-major order. Exactly one of F32 and F64 is set, with as many
// elements as the product of Shape (a scalar has an empty Shape and one
// element).
type Tensor struct {
	Name  string
	Shape []int
	F32   []float32
	F64   []float64
}

// MaxTensorHeader bounds the JSON header a decoder accepts.
const MaxTensorHeader = 100 << 20

func (t *Tensor) dtype() (string, int, int, error) {
	switch {
	case t.F32 != nil && t.F64 == nil:
		return "F32", 4, len(t.F32), nil
	case t.F64 != nil && t.F32 == nil:
		return "F64", 8, len(t.F64), nil
	}
	return "", 0, 0, fmt.Errorf("%w: tensor %q: set exactly one of F32 and F64", ErrInvalid, t.Name)
}

func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d", d)
		}
		if d != 0 && n > math.MaxInt32/d {
			return 0, errors.New("too many elements")
		}
		n *= d
	}
	return n, nil
}

type tensorHeader struct {
	Dtype       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// WriteTensors writes tensors in the safetensors format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length, a JSON header (padded with spaces to 8 bytes) mapping
// each name to dtype, shape and data offsets, plus an optional
// "__metadata__" string map, then the little-endian data in the order
// given. Python's safetensors.numpy.load_file reads it.
func WriteTensors(w io.Writer, tensors []Tensor, metadata map[string]string) (int64, error) {
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for i := range tensors {
		t := &tensors[i]
		if t.Name == "" || t.Name == "__metadata__" {
			return 0, fmt.Errorf("%w: tensor name %q", ErrInvalid, t.Name)
		}
		if _, dup := hdr[t.Name]; dup {
			return 0, fmt.Errorf("%w: tensor %q twice", ErrInvalid, t.Name)
		}
		dt, size, n, err := t.dtype()
		if err != nil {
			return 0, err
		}
		want, err := numel(t.Shape)
		if err != nil || want != n {
			return 0, fmt.Errorf("%w: tensor %q: shape %v does not hold %d elements", ErrInvalid, t.Name, t.Shape, n)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		end := off + int64(n*size)
		hdr[t.Name] = tensorHeader{Dtype: dt, Shape: shape, DataOffsets: [2]int64{off, end}}
		off = end
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return 0, err
	}
	if pad := (8 - len(js)%8) % 8; pad > 0 {
		js = append(js, strings.Repeat(" ", pad)...)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(js)))
	bw.Write(lenb[:])
	bw.Write(js)
	var b [8]byte
	for i := range tensors {
		t := &tensors[i]
		for _, v := range t.F32 {
			binary.LittleEndian.PutUint32(b[:4], math.Float32bits(v))
			bw.Write(b[:4])
		}
		for _, v := range t.F64 {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			bw.Write(b[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return 8 + int64(len(js)) + off, nil
}

// TensorPart returns an io.WriterTo for Store.Save that writes tensors
// with WriteTensors.
func TensorPart(tensors []Tensor, metadata map[string]string) io.WriterTo {
	return tensorPart{tensors, metadata}
}

type tensorPart struct {
	t  []Tensor
	md map[string]string
}

func (p tensorPart) WriteTo(w io.Writer) (int64, error) { return WriteTensors(w, p.t, p.md) }

// ReadTensors decodes a safetensors file of F32 and F64 tensors, returned
// in data order, and its metadata. Any malformation (bad lengths, offsets
// out of range, overlapping or with holes, shape/size mismatch, another
// dtype, trailing bytes) is an error wrapping ErrCorrupt.
func ReadTensors(r io.Reader) ([]Tensor, map[string]string, error) {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: safetensors: %s", ErrCorrupt, fmt.Sprintf(f, a...))
	}
	var lenb [8]byte
	if _, err := io.ReadFull(r, lenb[:]); err != nil {
		return nil, nil, bad("header length: %v", err)
	}
	hl := binary.LittleEndian.Uint64(lenb[:])
	if hl < 2 || hl > MaxTensorHeader {
		return nil, nil, bad("header length %d out of range", hl)
	}
	js, err := io.ReadAll(io.LimitReader(r, int64(hl)))
	if err != nil || uint64(len(js)) != hl {
		return nil, nil, bad("header: %d of %d bytes (%v)", len(js), hl, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, nil, bad("header is not a JSON object: %v", err)
	}
	var md map[string]string
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &md); err != nil {
			return nil, nil, bad("__metadata__: %v", err)
		}
		delete(raw, "__metadata__")
	}
	type ent struct {
		name string
		h    tensorHeader
	}
	ents := make([]ent, 0, len(raw))
	for name, m := range raw {
		var h tensorHeader
		dec := json.NewDecoder(strings.NewReader(string(m)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			return nil, nil, bad("tensor %q: %v", name, err)
		}
		ents = append(ents, ent{name, h})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].h.DataOffsets[0] < ents[j].h.DataOffsets[0] })
	var off int64
	out := make([]Tensor, 0, len(ents))
	for _, e := range ents {
		size := 0
		switch e.h.Dtype {
		case "F32":
			size = 4
		case "F64":
			size = 8
		default:
			return nil, nil, bad("tensor %q: unsupported dtype %q", e.name, e.h.Dtype)
		}
		n, err := numel(e.h.Shape)
		if err != nil {
			return nil, nil, bad("tensor %q: shape %v: %v", e.name, e.h.Shape, err)
		}
		b, end := e.h.DataOffsets[0], e.h.DataOffsets[1]
		if b != off || end < b || end-b != int64(n*size) {
			return nil, nil, bad("tensor %q: data offsets %v (expected start %d, %d bytes)", e.name, e.h.DataOffsets, off, n*size)
		}
		data, err := io.ReadAll(io.LimitReader(r, end-b)) // grows with the input, not the claim
		if err != nil || int64(len(data)) != end-b {
			return nil, nil, bad("tensor %q data: %d of %d bytes (%v)", e.name, len(data), end-b, err)
		}
		t := Tensor{Name: e.name, Shape: e.h.Shape}
		if size == 4 {
			t.F32 = make([]float32, n)
			for i := range t.F32 {
				t.F32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		} else {
			t.F64 = make([]float64, n)
			for i := range t.F64 {
				t.F64[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			}
		}
		out = append(out, t)
		off = end
	}
	var one [1]byte
	if n, _ := r.Read(one[:]); n != 0 {
		return nil, nil, bad("trailing data after %d bytes of tensors", off)
	}
	return out, md, nil
}
