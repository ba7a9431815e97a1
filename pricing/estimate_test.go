package pricing

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simulate runs the job of Estimate's model once, drawing every spot node's
// interruption time separately (the job stops at the first of them), and
// returns the wall time in hours and the number of interruptions.
func simulate(rng *rand.Rand, w, tau, c, r, lambda float64, spotNodes int) (wall float64, interruptions int) {
	left := w
	for left > 1e-12 {
		work := math.Min(tau, left)
		seg := work + c
		for {
			first := math.Inf(1)
			if lambda > 0 {
				for range spotNodes {
					first = math.Min(first, rng.ExpFloat64()/lambda)
				}
			}
			if first >= seg {
				wall += seg
				break
			}
			wall += first + r
			interruptions++
		}
		left -= work
	}
	return wall, interruptions
}

func TestEstimateMatchesMonteCarlo(t *testing.T) {
	const runs = 10000
	tests := []struct {
		name  string
		offer Offer
		job   Job
	}{
		{"one node, Young interval", Offer{InstanceType: "p3.2xlarge", SpotPrice: 0.9, InterruptionRate: 0.05},
			Job{Work: 40 * time.Hour, CheckpointCost: 6 * time.Minute, RestartCost: 15 * time.Minute}},
		{"eight nodes, data parallel", Offer{InstanceType: "p4d.24xlarge", SpotPrice: 9.8, InterruptionRate: 0.01},
			Job{Work: 30 * time.Hour, CheckpointCost: 5 * time.Minute, RestartCost: 20 * time.Minute, Nodes: 8}},
		{"hybrid 3 of 8 on-demand", Offer{InstanceType: "g5.12xlarge", SpotPrice: 2.1, OnDemandPrice: 5.67, InterruptionRate: 0.02},
			Job{Work: 30 * time.Hour, CheckpointCost: 5 * time.Minute, RestartCost: 20 * time.Minute, Nodes: 8, OnDemandNodes: 3}},
		{"fixed interval with remainder, heavy interruptions", Offer{InstanceType: "g4dn.xlarge", SpotPrice: 0.2, InterruptionRate: 0.3},
			Job{Work: 10 * time.Hour, CheckpointCost: 3 * time.Minute, RestartCost: 5 * time.Minute, Nodes: 2, Interval: 47 * time.Minute}},
		{"never interrupted", Offer{InstanceType: "m5.large", SpotPrice: 0.04},
			Job{Work: 5 * time.Hour, CheckpointCost: time.Minute, RestartCost: time.Minute, Nodes: 3}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Estimate(tc.offer, tc.job)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			var sumWall, sumInt float64
			for range runs {
				w, k := simulate(rng, tc.job.Work.Hours(), e.Interval.Hours(), tc.job.CheckpointCost.Hours(),
					tc.job.RestartCost.Hours(), tc.offer.InterruptionRate, e.SpotNodes)
				sumWall += w
				sumInt += float64(k)
			}
			mcWall := sumWall / runs
			mcCost := mcWall * e.HourlyCost
			mcInt := sumInt / runs
			t.Logf("closed form: wall %.3fh cost %.2f interruptions %.3f; Monte-Carlo (%d runs): wall %.3fh cost %.2f interruptions %.3f",
				e.WallTime.Hours(), e.Cost, e.Interruptions, runs, mcWall, mcCost, mcInt)
			if rel := math.Abs(e.WallTime.Hours()-mcWall) / mcWall; rel > 0.05 {
				t.Errorf("wall time: closed form %.4fh vs Monte-Carlo %.4fh: off by %.1f%% (> 5%%)", e.WallTime.Hours(), mcWall, 100*rel)
			}
			if rel := math.Abs(e.Cost-mcCost) / mcCost; rel > 0.05 {
				t.Errorf("cost: closed form %.4f vs Monte-Carlo %.4f: off by %.1f%% (> 5%%)", e.Cost, mcCost, 100*rel)
			}
			if mcInt > 1 {
				if rel := math.Abs(e.Interruptions-mcInt) / mcInt; rel > 0.05 {
					t.Errorf("interruptions: closed form %.4f vs Monte-Carlo %.4f: off by %.1f%% (> 5%%)", e.Interruptions, mcInt, 100*rel)
				}
			} else if math.Abs(e.Interruptions-mcInt) > 0.05 {
				t.Errorf("interruptions: closed form %.4f vs Monte-Carlo %.4f", e.Interruptions, mcInt)
			}
		})
	}
}

func TestEstimateModel(t *testing.T) {
	offer := Offer{InstanceType: "p3.2xlarge", SpotPrice: 1, OnDemandPrice: 3, InterruptionRate: 0.02}
	job := Job{Work: 100 * time.Hour, CheckpointCost: 6 * time.Minute, RestartCost: 10 * time.Minute, Nodes: 4}

	e, err := Estimate(offer, job)
	if err != nil {
		t.Fatal(err)
	}
	// Young: tau = sqrt(2 C M), M = 1/(N lambda).
	wantTau := math.Sqrt(2 * 0.1 / (4 * 0.02))
	if got := e.Interval.Hours(); math.Abs(got-wantTau) > 1e-6 {
		t.Errorf("interval = %vh, want Young's %vh", got, wantTau)
	}
	if got, want := YoungInterval(job.CheckpointCost, hoursToDuration(1/(4*0.02))).Hours(), wantTau; math.Abs(got-want) > 1e-6 {
		t.Errorf("YoungInterval = %vh, want %vh", got, want)
	}
	if e.Rate != 4*0.02 {
		t.Errorf("job rate = %v, want N*lambda = %v", e.Rate, 4*0.02)
	}
	if e.WallTime <= job.Work {
		t.Errorf("wall time %v not above the work %v", e.WallTime, job.Work)
	}

	// Never interrupted: exactly the work plus one checkpoint.
	calm := offer
	calm.InterruptionRate = 0
	e0, err := Estimate(calm, job)
	if err != nil {
		t.Fatal(err)
	}
	if want := job.Work + job.CheckpointCost; e0.WallTime != want {
		t.Errorf("rate 0: wall = %v, want %v", e0.WallTime, want)
	}

	// More nodes interrupt more often: longer wall time per node.
	job8 := job
	job8.Nodes = 8
	e8, err := Estimate(offer, job8)
	if err != nil {
		t.Fatal(err)
	}
	if e8.WallTime <= e.WallTime {
		t.Errorf("8 nodes wall %v not above 4 nodes wall %v", e8.WallTime, e.WallTime)
	}

	// All nodes on demand: no interruptions, on-demand price.
	allOD := job
	allOD.OnDemandNodes = 4
	eod, err := Estimate(offer, allOD)
	if err != nil {
		t.Fatal(err)
	}
	if eod.Rate != 0 || eod.HourlyCost != 4*3 {
		t.Errorf("all on-demand: rate %v hourly %v, want 0 and 12", eod.Rate, eod.HourlyCost)
	}
}

func TestEstimateRejectsBadInput(t *testing.T) {
	good := Offer{Region: "us-east-1", InstanceType: "p3.2xlarge", SpotPrice: 1, InterruptionRate: 0.01}
	job := Job{Work: time.Hour, CheckpointCost: time.Minute, RestartCost: time.Minute}
	tests := []struct {
		name  string
		offer func(*Offer)
		job   func(*Job)
		want  error
	}{
		{"zero spot price", func(o *Offer) { o.SpotPrice = 0 }, nil, ErrInvalidOffer},
		{"negative spot price", func(o *Offer) { o.SpotPrice = -0.5 }, nil, ErrInvalidOffer},
		{"NaN spot price", func(o *Offer) { o.SpotPrice = math.NaN() }, nil, ErrInvalidOffer},
		{"negative rate", func(o *Offer) { o.InterruptionRate = -1 }, nil, ErrInvalidOffer},
		{"infinite rate", func(o *Offer) { o.InterruptionRate = math.Inf(1) }, nil, ErrInvalidOffer},
		{"no type", func(o *Offer) { o.InstanceType = "" }, nil, ErrInvalidOffer},
		{"hybrid without on-demand price", nil, func(j *Job) { j.Nodes, j.OnDemandNodes = 2, 1 }, ErrInvalidOffer},
		{"zero work", nil, func(j *Job) { j.Work = 0 }, ErrInvalidJob},
		{"negative checkpoint", nil, func(j *Job) { j.CheckpointCost = -time.Second }, ErrInvalidJob},
		{"zero checkpoint, no interval", nil, func(j *Job) { j.CheckpointCost = 0 }, ErrInvalidJob},
		{"more on-demand than nodes", nil, func(j *Job) { j.OnDemandNodes = 2 }, ErrInvalidJob},
		{"never finishes", func(o *Offer) { o.InterruptionRate = 1e6 }, func(j *Job) { j.Interval = time.Hour }, ErrInvalidJob},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, j := good, job
			if tc.offer != nil {
				tc.offer(&o)
			}
			if tc.job != nil {
				tc.job(&j)
			}
			_, err := Estimate(o, j)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Estimate error = %v, want %v", err, tc.want)
			}
			t.Log(err)
		})
	}
}
