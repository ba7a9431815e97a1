package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	_ "go4.org/unsafe/assume-no-moving-gc" // gorgonia's dependency panics on new Go releases without it
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// param is one learnable tensor: a gorgonia node whose value is a *tensor.Dense
// the optimizer updates in place, and the gradient node computed for it.
type param struct {
	Name  string
	Shape []int
	node  *G.Node
	grad  *G.Node
	value *tensor.Dense
}

func (p *param) data() []float64 { return p.value.Data().([]float64) }

func (p *param) gradData() ([]float64, error) {
	v := p.grad.Value()
	if v == nil {
		return nil, fmt.Errorf("gradient of %s was not computed", p.Name)
	}
	g, ok := v.Data().([]float64)
	if !ok || len(g) != len(p.data()) {
		return nil, fmt.Errorf("gradient of %s: unexpected value %T of shape %v", p.Name, v.Data(), v.Shape())
	}
	return g, nil
}

// mlp is a multilayer perceptron 64 -> hidden... -> 10 with ReLU activations
// and a softmax cross-entropy loss, as a gorgonia graph over float64 (float64
// keeps every step bit-for-bit reproducible on the same machine and binary).
type mlp struct {
	batch  int
	params []*param
	g      *G.ExprGraph
	x, y   *tensor.Dense // input and one-hot batch, filled in place each step
	cost   *G.Node
	vm     G.VM
}

// newMLP builds the training graph for mini-batches of size batch and
// initialises the weights from seed (He-normal weights, zero biases) with its
// own generator: gorgonia's built-in initialisers seed from the clock.
func newMLP(batch int, hidden []int, seed uint64) (*mlp, error) {
	m := &mlp{batch: batch, g: G.NewGraph()}
	m.x = tensor.New(tensor.WithShape(batch, numPixels), tensor.Of(tensor.Float64))
	m.y = tensor.New(tensor.WithShape(batch, numClasses), tensor.Of(tensor.Float64))
	x := G.NewMatrix(m.g, tensor.Float64, G.WithShape(batch, numPixels), G.WithName("x"), G.WithValue(m.x))
	y := G.NewMatrix(m.g, tensor.Float64, G.WithShape(batch, numClasses), G.WithName("y"), G.WithValue(m.y))

	rng := rand.New(rand.NewPCG(seed, initStream))
	sizes := append(append([]int{numPixels}, hidden...), numClasses)
	h := x
	for i := 0; i+1 < len(sizes); i++ {
		in, out := sizes[i], sizes[i+1]
		wv := tensor.New(tensor.WithShape(in, out), tensor.WithBacking(heNormal(rng, in, in*out)))
		bv := tensor.New(tensor.WithShape(1, out), tensor.WithBacking(make([]float64, out)))
		w := G.NewMatrix(m.g, tensor.Float64, G.WithShape(in, out), G.WithName(fmt.Sprintf("w%d", i+1)), G.WithValue(wv))
		b := G.NewMatrix(m.g, tensor.Float64, G.WithShape(1, out), G.WithName(fmt.Sprintf("b%d", i+1)), G.WithValue(bv))
		m.params = append(m.params,
			&param{Name: w.Name(), Shape: []int{in, out}, node: w, value: wv},
			&param{Name: b.Name(), Shape: []int{1, out}, node: b, value: bv})
		xw, err := G.Mul(h, w)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i+1, err)
		}
		if h, err = G.BroadcastAdd(xw, b, nil, []byte{0}); err != nil {
			return nil, fmt.Errorf("layer %d bias: %w", i+1, err)
		}
		if i+2 < len(sizes) {
			if h, err = G.Rectify(h); err != nil {
				return nil, fmt.Errorf("layer %d relu: %w", i+1, err)
			}
		}
	}
	logp, err := G.LogSoftMax(h)
	if err != nil {
		return nil, fmt.Errorf("log-softmax: %w", err)
	}
	nll, err := G.HadamardProd(y, logp)
	if err != nil {
		return nil, err
	}
	perSample, err := G.Sum(nll, 1)
	if err != nil {
		return nil, err
	}
	mean, err := G.Mean(perSample)
	if err != nil {
		return nil, err
	}
	if m.cost, err = G.Neg(mean); err != nil {
		return nil, err
	}
	nodes := make(G.Nodes, len(m.params))
	for i, p := range m.params {
		nodes[i] = p.node
	}
	grads, err := G.Grad(m.cost, nodes...)
	if err != nil {
		return nil, fmt.Errorf("gradients: %w", err)
	}
	for i, p := range m.params {
		p.grad = grads[i]
	}
	m.vm = G.NewTapeMachine(m.g)
	return m, nil
}

func heNormal(rng *rand.Rand, fanIn, n int) []float64 {
	std := math.Sqrt(2 / float64(fanIn))
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.NormFloat64() * std
	}
	return w
}

// step runs forward and backward passes on the samples idx of d and returns
// the mini-batch loss; gradients are then readable through param.gradData.
func (m *mlp) step(d *dataset, idx []int) (float64, error) {
	xs, ys := m.x.Data().([]float64), m.y.Data().([]float64)
	clear(ys)
	for r, i := range idx {
		copy(xs[r*numPixels:(r+1)*numPixels], d.row(i))
		ys[r*numClasses+d.Y[i]] = 1
	}
	defer m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return 0, fmt.Errorf("forward/backward: %w", err)
	}
	loss, ok := m.cost.Value().Data().(float64)
	if !ok {
		return 0, fmt.Errorf("loss has type %T", m.cost.Value().Data())
	}
	return loss, nil
}

func (m *mlp) Close() error { return m.vm.Close() }

// accuracy evaluates the network on d with gonum (the same weights the graph
// uses, shared without copying) and returns the fraction classified right.
func (m *mlp) accuracy(d *dataset) float64 {
	if d.Len() == 0 {
		return 0
	}
	h := mat.NewDense(d.Len(), numPixels, d.X)
	for i := 0; i < len(m.params); i += 2 {
		w, b := m.params[i], m.params[i+1]
		var z mat.Dense
		z.Mul(h, mat.NewDense(w.Shape[0], w.Shape[1], w.data()))
		bias := b.data()
		last := i+2 == len(m.params)
		z.Apply(func(_, c int, v float64) float64 {
			v += bias[c]
			if !last && v < 0 {
				return 0
			}
			return v
		}, &z)
		h = &z
	}
	right := 0
	for r := range d.Len() {
		row := h.RawRowView(r)
		best := 0
		for c := range row {
			if row[c] > row[best] {
				best = c
			}
		}
		if best == d.Y[r] {
			right++
		}
	}
	return float64(right) / float64(d.Len())
}

// digest is the sha256 of all weights, in parameter order, as little-endian
// IEEE 754 float64: equal digests mean bit-identical models.
func (m *mlp) digest() string {
	h := sha256.New()
	var buf [8]byte
	for _, p := range m.params {
		for _, v := range p.data() {
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
			h.Write(buf[:])
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// adam is the Adam optimizer (Kingma & Ba, 2015) over the parameters' values
// and gradients. It is written here, not taken from gorgonia's solvers, so
// that its moments and step count are plain slices we can checkpoint.
type adam struct {
	LR, Beta1, Beta2, Eps float64
	T                     int64       // number of updates applied
	M, V                  [][]float64 // first and second moments, one per parameter
}

func newAdam(lr float64, params []*param) *adam {
	a := &adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for _, p := range params {
		a.M = append(a.M, make([]float64, len(p.data())))
		a.V = append(a.V, make([]float64, len(p.data())))
	}
	return a
}

// update applies one Adam step to every parameter from its current gradient.
func (a *adam) update(params []*param) error {
	a.T++
	c1 := 1 - math.Pow(a.Beta1, float64(a.T))
	c2 := 1 - math.Pow(a.Beta2, float64(a.T))
	for i, p := range params {
		g, err := p.gradData()
		if err != nil {
			return err
		}
		w, m, v := p.data(), a.M[i], a.V[i]
		for j := range w {
			m[j] = a.Beta1*m[j] + (1-a.Beta1)*g[j]
			v[j] = a.Beta2*v[j] + (1-a.Beta2)*g[j]*g[j]
			w[j] -= a.LR * (m[j] / c1) / (math.Sqrt(v[j]/c2) + a.Eps)
		}
	}
	return nil
}
