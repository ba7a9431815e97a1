package main

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
)

// digitsCSV is scikit-learn's copy of the UCI 8x8 handwritten digits
// (see data/README.md for its origin and licence).
//
//go:embed data/digits.csv.gz
var digitsCSV []byte

const (
	numPixels  = 64
	numClasses = 10
)

// dataset holds images as rows of numPixels values scaled to [0, 1].
type dataset struct {
	X []float64 // len(Y)*numPixels, row-major
	Y []int
}

func (d *dataset) Len() int { return len(d.Y) }

func (d *dataset) row(i int) []float64 { return d.X[i*numPixels : (i+1)*numPixels] }

// loadDigits parses the embedded CSV: 64 pixel values then the label.
func loadDigits() (*dataset, error) {
	zr, err := gzip.NewReader(bytes.NewReader(digitsCSV))
	if err != nil {
		return nil, fmt.Errorf("digits.csv.gz: %w", err)
	}
	r := csv.NewReader(zr)
	r.FieldsPerRecord = numPixels + 1
	r.ReuseRecord = true
	d := &dataset{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("digits.csv.gz: %w", err)
		}
		for j, f := range rec[:numPixels] {
			v, err := strconv.Atoi(f)
			if err != nil || v < 0 || v > 16 {
				return nil, fmt.Errorf("digits.csv.gz line %d column %d: pixel %q is not an integer in 0..16", line, j+1, f)
			}
			d.X = append(d.X, float64(v)/16)
		}
		y, err := strconv.Atoi(rec[numPixels])
		if err != nil || y < 0 || y >= numClasses {
			return nil, fmt.Errorf("digits.csv.gz line %d: label %q is not a digit", line, rec[numPixels])
		}
		d.Y = append(d.Y, y)
	}
	return d, nil
}

// split shuffles d with a generator seeded by seed and returns the first
// len-nTest samples as the training set and the rest as the test set.
func split(d *dataset, seed uint64, testFrac float64) (train, test *dataset) {
	perm := rand.New(rand.NewPCG(seed, splitStream)).Perm(d.Len())
	nTest := int(float64(d.Len())*testFrac + 0.5)
	pick := func(idx []int) *dataset {
		out := &dataset{X: make([]float64, 0, len(idx)*numPixels), Y: make([]int, 0, len(idx))}
		for _, i := range idx {
			out.X = append(out.X, d.row(i)...)
			out.Y = append(out.Y, d.Y[i])
		}
		return out
	}
	return pick(perm[nTest:]), pick(perm[:nTest])
}

// Independent random streams derived from -seed.
const (
	splitStream = 0x5eed0001
	initStream  = 0x5eed0002
	orderStream = 0x5eed0003
)

// loader hands out mini-batches in a random order, reshuffling each epoch.
// Its whole state (generator, permutation, position) is checkpointed so that
// a resumed run sees exactly the batches the uninterrupted run would have.
type loader struct {
	src   *rand.PCG
	n     int
	Epoch int64
	Pos   int
	Perm  []int
}

func newLoader(seed uint64, n int) *loader {
	return &loader{src: rand.NewPCG(seed, orderStream), n: n}
}

// next returns the sample indices of the next batch of size b. A tail shorter
// than b is dropped so that every batch has the graph's fixed shape.
func (l *loader) next(b int) []int {
	if l.Perm == nil || l.Pos+b > len(l.Perm) {
		l.Perm = rand.New(l.src).Perm(l.n)
		l.Pos = 0
		l.Epoch++
	}
	idx := l.Perm[l.Pos : l.Pos+b]
	l.Pos += b
	return idx
}

// loaderState is the serialisable form of a loader.
type loaderState struct {
	RNG   []byte `json:"rng"` // rand.PCG.MarshalBinary
	Epoch int64  `json:"epoch"`
	Pos   int    `json:"pos"`
	Perm  []int  `json:"perm"`
}

func (l *loader) state() (loaderState, error) {
	rng, err := l.src.MarshalBinary()
	if err != nil {
		return loaderState{}, err
	}
	return loaderState{RNG: rng, Epoch: l.Epoch, Pos: l.Pos, Perm: append([]int(nil), l.Perm...)}, nil
}

func (l *loader) restore(s loaderState) error {
	if err := l.src.UnmarshalBinary(s.RNG); err != nil {
		return fmt.Errorf("data order generator: %w", err)
	}
	if s.Perm != nil && len(s.Perm) != l.n {
		return fmt.Errorf("data order: permutation of %d samples, the training set has %d", len(s.Perm), l.n)
	}
	if s.Pos < 0 || s.Pos > len(s.Perm) {
		return fmt.Errorf("data order: position %d outside permutation of %d", s.Pos, len(s.Perm))
	}
	l.Epoch, l.Pos, l.Perm = s.Epoch, s.Pos, append([]int(nil), s.Perm...)
	return nil
}
