package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spotcheck/spotcheck/checkpoint"
)

// The checkpoint of a training run has four parts:
//
//	model      safetensors: the weights w1, b1, w2, ... (F64)
//	optimizer  safetensors: Adam's moments m.w1, v.w1, ... (F64); metadata adam.t, lr, betas, eps
//	data       JSON: run configuration and the data loader (generator state, permutation, position)
//	history    JSON: the loss of every step so far and the interruption/resume events
//
// model and optimizer open in Python with safetensors.numpy.load_file.
const (
	partModel     = "model"
	partOptimizer = "optimizer"
	partData      = "data"
	partHistory   = "history"
	stateFormat   = "spotcheck-trainer/1"
)

// runConfig is what must not change across a resume: the data split, the
// graph's shapes and the optimizer's hyper-parameters.
type runConfig struct {
	Seed   uint64  `json:"seed"`
	Batch  int     `json:"batch"`
	LR     float64 `json:"lr"`
	Hidden []int   `json:"hidden"`
}

func (c runConfig) check(saved runConfig) error {
	if c.Seed != saved.Seed || c.Batch != saved.Batch || c.LR != saved.LR || !slices.Equal(c.Hidden, saved.Hidden) {
		return fmt.Errorf("the checkpoint was made with -seed %d -batch %d -lr %g (hidden %v), this run has -seed %d -batch %d -lr %g (hidden %v): use matching flags or another -store",
			saved.Seed, saved.Batch, saved.LR, saved.Hidden, c.Seed, c.Batch, c.LR, c.Hidden)
	}
	return nil
}

// event marks an interruption or a resume in the history (and on the plot).
type event struct {
	Step   int64     `json:"step"`
	Kind   string    `json:"kind"` // eventInterrupted or eventResumed
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
}

const (
	eventInterrupted = "interrupted"
	eventResumed     = "resumed"      // from the emergency checkpoint of an interruption
	eventResumedLost = "resumed-lost" // after a crash: from an older checkpoint, steps redone
)

// history is the run's metrics so far: Loss[i] is the mini-batch loss of step i+1.
type history struct {
	Loss   []float64 `json:"loss"`
	Events []event   `json:"events"`
}

// snapshot is an immutable copy of everything a resumed run needs. It is
// taken at a step boundary and may be encoded while training continues.
type snapshot struct {
	Step    int64
	Config  runConfig
	Model   []checkpoint.Tensor
	AdamT   int64
	AdamM   []checkpoint.Tensor
	AdamV   []checkpoint.Tensor
	Adam    adam // hyper-parameters only (M and V nil)
	Loader  loaderState
	History history
}

func takeSnapshot(step int64, cfg runConfig, m *mlp, opt *adam, l *loader, h *history) (*snapshot, error) {
	ls, err := l.state()
	if err != nil {
		return nil, err
	}
	s := &snapshot{Step: step, Config: cfg, AdamT: opt.T, Loader: ls,
		Adam:    adam{LR: opt.LR, Beta1: opt.Beta1, Beta2: opt.Beta2, Eps: opt.Eps},
		History: history{Loss: slices.Clone(h.Loss), Events: slices.Clone(h.Events)}}
	s.Config.Hidden = slices.Clone(cfg.Hidden)
	for i, p := range m.params {
		s.Model = append(s.Model, checkpoint.Tensor{Name: p.Name, Shape: slices.Clone(p.Shape), F64: slices.Clone(p.data())})
		s.AdamM = append(s.AdamM, checkpoint.Tensor{Name: "m." + p.Name, Shape: slices.Clone(p.Shape), F64: slices.Clone(opt.M[i])})
		s.AdamV = append(s.AdamV, checkpoint.Tensor{Name: "v." + p.Name, Shape: slices.Clone(p.Shape), F64: slices.Clone(opt.V[i])})
	}
	return s, nil
}

// restore copies the snapshot into the live model, optimizer, loader and history.
func (s *snapshot) restore(m *mlp, opt *adam, l *loader, h *history) error {
	if len(s.Model) != len(m.params) || len(s.AdamM) != len(m.params) || len(s.AdamV) != len(m.params) {
		return fmt.Errorf("checkpoint has %d/%d/%d model/m/v tensors, the model has %d parameters",
			len(s.Model), len(s.AdamM), len(s.AdamV), len(m.params))
	}
	for i, p := range m.params {
		for _, t := range []checkpoint.Tensor{s.Model[i], s.AdamM[i], s.AdamV[i]} {
			if !slices.Equal(t.Shape, p.Shape) || len(t.F64) != len(p.data()) {
				return fmt.Errorf("checkpoint tensor %s has shape %v, the model's %s has %v", t.Name, t.Shape, p.Name, p.Shape)
			}
		}
		copy(p.data(), s.Model[i].F64)
		copy(opt.M[i], s.AdamM[i].F64)
		copy(opt.V[i], s.AdamV[i].F64)
	}
	opt.T = s.AdamT
	if err := l.restore(s.Loader); err != nil {
		return err
	}
	if int64(len(s.History.Loss)) != s.Step {
		return fmt.Errorf("checkpoint at step %d has a loss history of %d steps", s.Step, len(s.History.Loss))
	}
	*h = history{Loss: slices.Clone(s.History.Loss), Events: slices.Clone(s.History.Events)}
	return nil
}

type dataPart struct {
	Format string      `json:"format"`
	Step   int64       `json:"step"`
	Config runConfig   `json:"config"`
	Loader loaderState `json:"loader"`
}

// encodeParts returns the snapshot's parts, each as an io.WriterTo that
// the checkpoint store streams.
func (s *snapshot) encodeParts() map[string]io.WriterTo {
	return map[string]io.WriterTo{
		partModel: checkpoint.TensorPart(s.Model, map[string]string{"format": stateFormat, "step": strconv.FormatInt(s.Step, 10)}),
		partOptimizer: checkpoint.TensorPart(slices.Concat(s.AdamM, s.AdamV), map[string]string{
			"format": stateFormat, "optimizer": "adam", "adam.t": strconv.FormatInt(s.AdamT, 10),
			"lr": fmtFloat(s.Adam.LR), "beta1": fmtFloat(s.Adam.Beta1), "beta2": fmtFloat(s.Adam.Beta2), "eps": fmtFloat(s.Adam.Eps),
		}),
		partData: writerFunc(func(w io.Writer) error {
			return json.NewEncoder(w).Encode(dataPart{Format: stateFormat, Step: s.Step, Config: s.Config, Loader: s.Loader})
		}),
		partHistory: writerFunc(func(w io.Writer) error { return json.NewEncoder(w).Encode(s.History) }),
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// decodeSnapshot reads a checkpoint's parts back; open returns a part's
// reader (the checkpoint verifies its digest when it is read to the end).
func decodeSnapshot(step int64, paramNames []string, open func(name string) (io.ReadCloser, error)) (*snapshot, error) {
	s := &snapshot{Step: step}
	read := func(name string, f func(io.Reader) error) error {
		r, err := open(name)
		if err != nil {
			return fmt.Errorf("part %s: %w", name, err)
		}
		err = f(r)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("part %s: %w", name, err)
		}
		return nil
	}
	err := read(partModel, func(r io.Reader) (err error) {
		s.Model, _, err = readTensors(r, paramNames)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = read(partOptimizer, func(r io.Reader) error {
		names := make([]string, 0, 2*len(paramNames))
		for _, p := range paramNames {
			names = append(names, "m."+p)
		}
		for _, p := range paramNames {
			names = append(names, "v."+p)
		}
		ts, md, err := readTensors(r, names)
		if err != nil {
			return err
		}
		s.AdamM, s.AdamV = ts[:len(paramNames)], ts[len(paramNames):]
		if s.AdamT, err = strconv.ParseInt(md["adam.t"], 10, 64); err != nil {
			return fmt.Errorf("metadata adam.t: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = read(partData, func(r io.Reader) error {
		var d dataPart
		if err := json.NewDecoder(r).Decode(&d); err != nil {
			return err
		}
		if d.Format != stateFormat {
			return fmt.Errorf("format %q, want %q", d.Format, stateFormat)
		}
		if d.Step != step {
			return fmt.Errorf("records step %d in the checkpoint of step %d", d.Step, step)
		}
		s.Config, s.Loader = d.Config, d.Loader
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = read(partHistory, func(r io.Reader) error { return json.NewDecoder(r).Decode(&s.History) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

type writerFunc func(io.Writer) error

// WriteTo implements io.WriterTo.
func (f writerFunc) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	err := f(cw)
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// readTensors reads a safetensors part and returns the tensors names, in
// that order, each checked to be F64.
func readTensors(r io.Reader, names []string) ([]checkpoint.Tensor, map[string]string, error) {
	ts, md, err := checkpoint.ReadTensors(r)
	if err != nil {
		return nil, nil, err
	}
	byName := make(map[string]checkpoint.Tensor, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	out := make([]checkpoint.Tensor, len(names))
	for i, name := range names {
		t, ok := byName[name]
		if !ok {
			return nil, nil, fmt.Errorf("tensor %s missing", name)
		}
		if t.F64 == nil {
			return nil, nil, fmt.Errorf("tensor %s is not F64", name)
		}
		out[i] = t
	}
	return out, md, nil
}
