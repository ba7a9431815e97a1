package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writePlot draws the loss of every step (faint), its moving average, and a
// vertical line at every interruption (red, dashed) and resume (green),
// and saves it as a PNG at path.
func writePlot(path string, h *history, title string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "training loss (cross-entropy)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: 1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = false

	n := len(h.Loss)
	if n == 0 {
		return fmt.Errorf("no steps to plot")
	}
	raw := make(plotter.XYs, n)
	avg := make(plotter.XYs, n)
	window := max(1, n/50)
	sum := 0.0
	lo, hi := h.Loss[0], h.Loss[0]
	for i, v := range h.Loss {
		raw[i] = plotter.XY{X: float64(i + 1), Y: max(v, 1e-6)}
		sum += v
		if i >= window {
			sum -= h.Loss[i-window]
		}
		avg[i] = plotter.XY{X: float64(i + 1), Y: max(sum/float64(min(i+1, window)), 1e-6)}
		lo, hi = min(lo, max(v, 1e-6)), max(hi, v)
	}
	rawLine, err := plotter.NewLine(raw)
	if err != nil {
		return err
	}
	rawLine.Color = color.RGBA{R: 120, G: 150, B: 210, A: 255}
	rawLine.Width = vg.Points(0.5)
	avgLine, err := plotter.NewLine(avg)
	if err != nil {
		return err
	}
	avgLine.Color = color.RGBA{B: 140, A: 255}
	avgLine.Width = vg.Points(2)
	p.Add(rawLine, avgLine)
	p.Legend.Add("loss per step", rawLine)
	p.Legend.Add(fmt.Sprintf("moving average (%d steps)", window), avgLine)

	// Resumes first (wide, pale), interruptions on top (thin, dashed), so
	// that a resume at the step of the interruption shows both.
	styles := map[string]struct {
		legend string
		color  color.Color
		width  vg.Length
		dashes []vg.Length
	}{
		eventResumed:     {"resume from checkpoint", color.RGBA{R: 90, G: 190, B: 90, A: 255}, 4, nil},
		eventResumedLost: {"resume without an emergency checkpoint (killed: later steps redone)", color.RGBA{R: 240, G: 150, B: 0, A: 255}, 4, nil},
		eventInterrupted: {"interruption notice (emergency checkpoint)", color.RGBA{R: 210, A: 255}, 1.5, []vg.Length{vg.Points(4), vg.Points(3)}},
	}
	for _, kind := range []string{eventResumed, eventResumedLost, eventInterrupted} {
		st := styles[kind]
		first := true
		for _, e := range h.Events {
			if e.Kind != kind {
				continue
			}
			line, err := plotter.NewLine(plotter.XYs{{X: float64(e.Step), Y: lo}, {X: float64(e.Step), Y: hi}})
			if err != nil {
				return err
			}
			line.Color, line.Width, line.Dashes = st.color, vg.Points(float64(st.width)), st.dashes
			p.Add(line)
			if first {
				p.Legend.Add(st.legend, line)
				first = false
			}
		}
	}
	p.Legend.ThumbnailWidth = vg.Points(20)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Padding = vg.Points(2)
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
