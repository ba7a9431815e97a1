package pricing

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats summarises the spot price of one (region, type, zone) over a
// window [From, To].
//
// A price point holds from its timestamp until the next point; the price
// in effect at From is the newest point at or before From. Min, Max and
// Mean are over the prices in effect at some time in the window (each price
// point once); TimeWeightedMean weights each price by how long it held
// within the window. Volatility is the time-weighted coefficient of
// variation: the time-weighted standard deviation of the price divided by
// TimeWeightedMean (0 for a constant price, 0.1 for a price that typically
// strays 10% from its mean). LastChange is the time of the newest point
// whose price differs from the one before it (the first point's time if
// the price never changed).
type Stats struct {
	Region, InstanceType, AvailabilityZone, ZoneID string

	From, To         time.Time
	Samples          int
	Min, Max         float64
	Mean             float64
	TimeWeightedMean float64
	Volatility       float64
	LastPrice        float64
	LastChange       time.Time
}

// ComputeStats computes Stats (without the key fields) over [from, to] from
// price points in any order. Points after to are ignored. It returns an
// error wrapping ErrNoData when no point is in effect during the window, and
// ErrInvalidPrice when a price is not positive and finite.
func ComputeStats(points []PricePoint, from, to time.Time) (Stats, error) {
	st := Stats{From: from, To: to}
	if to.Before(from) {
		return st, fmt.Errorf("pricing: stats window ends (%v) before it starts (%v)", to, from)
	}
	ps := make([]PricePoint, 0, len(points))
	for _, p := range points {
		if !(p.Price > 0) || math.IsInf(p.Price, 0) {
			return st, fmt.Errorf("%w: price %v at %v", ErrInvalidPrice, p.Price, p.Time)
		}
		if !p.Time.After(to) {
			ps = append(ps, p)
		}
	}
	slices.SortStableFunc(ps, func(a, b PricePoint) int { return a.Time.Compare(b.Time) })
	// Drop the points superseded before from: keep the newest at or before.
	first := 0
	for i, p := range ps {
		if !p.Time.After(from) {
			first = i
		}
	}
	ps = ps[first:]
	if len(ps) == 0 {
		return st, fmt.Errorf("%w: no price in effect between %v and %v", ErrNoData, from, to)
	}

	st.Samples = len(ps)
	st.Min, st.Max = math.Inf(1), math.Inf(-1)
	var sum, wsum, dsum float64
	durs := make([]float64, len(ps))
	for i, p := range ps {
		st.Min = math.Min(st.Min, p.Price)
		st.Max = math.Max(st.Max, p.Price)
		sum += p.Price
		begin := p.Time
		if begin.Before(from) {
			begin = from
		}
		stop := to
		if i+1 < len(ps) {
			stop = ps[i+1].Time
		}
		if d := stop.Sub(begin).Hours(); d > 0 {
			durs[i] = d
			wsum += d * p.Price
			dsum += d
		}
	}
	st.Mean = sum / float64(len(ps))
	if dsum > 0 {
		st.TimeWeightedMean = wsum / dsum
		var v float64
		for i, p := range ps {
			dev := p.Price - st.TimeWeightedMean
			v += durs[i] * dev * dev
		}
		st.Volatility = math.Sqrt(v/dsum) / st.TimeWeightedMean
	} else {
		// A zero-length window: every point is an instant.
		st.TimeWeightedMean = st.Mean
	}
	last := ps[len(ps)-1]
	st.LastPrice = last.Price
	st.LastChange = ps[0].Time
	for i := len(ps) - 1; i > 0; i-- {
		if ps[i].Price != ps[i-1].Price {
			st.LastChange = ps[i].Time
			break
		}
	}
	return st, nil
}
