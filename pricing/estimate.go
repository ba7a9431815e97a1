package pricing

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sentinel errors. Every error this package returns that is caused by bad
// input wraps one of them, so callers can use errors.Is.
var (
	// ErrInvalidJob reports a Job that cannot be estimated (negative or zero
	// work, negative costs, more on-demand nodes than nodes, ...).
	ErrInvalidJob = errors.New("pricing: invalid job")
	// ErrInvalidOffer reports an Offer that cannot be ranked (missing or
	// non-positive spot price, negative or non-finite interruption rate, ...).
	ErrInvalidOffer = errors.New("pricing: invalid offer")
	// ErrInvalidPrice reports a price string that is not a positive, finite
	// decimal number ("abc", "-1", "", "NaN").
	ErrInvalidPrice = errors.New("pricing: invalid price")
	// ErrUnknownRegion reports a region name that is malformed or that the
	// Scanner (or a data feed) does not know.
	ErrUnknownRegion = errors.New("pricing: unknown region")
	// ErrNoData reports a lookup (on-demand price, advisor entry, price
	// history) that found nothing for the key asked.
	ErrNoData = errors.New("pricing: no data")
	// ErrMalformedFeed reports a Spot Instance Advisor feed or a Price List
	// document that does not have the documented shape.
	ErrMalformedFeed = errors.New("pricing: malformed feed")
)

// Offer is one place a job could run: an instance type in a region (and,
// for spot quotes, an availability zone) with its prices and interruption
// rate. Prices are USD per node-hour.
type Offer struct {
	Region           string
	InstanceType     string
	AvailabilityZone string // e.g. "us-east-1a"; empty for a region-wide offer
	ZoneID           string // e.g. "use1-az4"; the same physical zone in every account

	// SpotPrice is the newest spot price, USD per node-hour. It must be
	// positive and finite.
	SpotPrice float64
	// OnDemandPrice is the on-demand price, USD per node-hour; 0 means
	// unknown (savings are then unknown, and hybrid plans are impossible).
	OnDemandPrice float64
	// InterruptionRate is the expected number of interruptions per
	// node-hour (λ). 0 means the offer is never interrupted; an offer built
	// by Offers without advisor data gets a pessimistic rate instead of 0.
	InterruptionRate float64
	// InterruptionLabel is the advisor bucket the rate came from ("<5%",
	// ...), or a note on how the rate was assumed. Informational.
	InterruptionLabel string
	// PlacementScore is the EC2 spot placement score (1..10); 0 = unknown.
	PlacementScore int
	// Timestamp is when the spot price took effect.
	Timestamp time.Time
}

// Savings returns the fraction saved against on-demand (1 - spot/on-demand)
// and whether it is known (OnDemandPrice > 0).
func (o Offer) Savings() (float64, bool) {
	if !(o.OnDemandPrice > 0) || math.IsInf(o.OnDemandPrice, 0) {
		return 0, false
	}
	return 1 - o.SpotPrice/o.OnDemandPrice, true
}

// String names the offer: region/type/zone.
func (o Offer) String() string {
	s := o.Region + "/" + o.InstanceType
	if o.AvailabilityZone != "" {
		s += "/" + o.AvailabilityZone
	}
	return s
}

// Validate reports why the offer cannot be estimated, wrapping
// ErrInvalidOffer, or nil.
func (o Offer) Validate() error {
	switch {
	case o.InstanceType == "":
		return fmt.Errorf("%w %s: empty instance type", ErrInvalidOffer, o)
	case !(o.SpotPrice > 0) || math.IsInf(o.SpotPrice, 0):
		return fmt.Errorf("%w %s: spot price %v is not a positive finite number", ErrInvalidOffer, o, o.SpotPrice)
	case !(o.OnDemandPrice >= 0) || math.IsInf(o.OnDemandPrice, 0):
		return fmt.Errorf("%w %s: on-demand price %v is negative or not finite", ErrInvalidOffer, o, o.OnDemandPrice)
	case !(o.InterruptionRate >= 0) || math.IsInf(o.InterruptionRate, 0):
		return fmt.Errorf("%w %s: interruption rate %v per hour is negative or not finite", ErrInvalidOffer, o, o.InterruptionRate)
	case o.PlacementScore < 0 || o.PlacementScore > 10:
		return fmt.Errorf("%w %s: placement score %d outside 0..10", ErrInvalidOffer, o, o.PlacementScore)
	}
	return nil
}

// Job describes the work to place.
type Job struct {
	// Work is the compute time the job needs on machines that are never
	// interrupted, checkpoints excluded (W). Must be positive.
	Work time.Duration
	// CheckpointCost is the time one checkpoint takes (C). It must be
	// positive unless Interval is set or the plan is never interrupted.
	CheckpointCost time.Duration
	// RestartCost is the time from an interruption to work resuming from the
	// last checkpoint: replacement node, boot, restore (R).
	RestartCost time.Duration
	// Nodes is the number of nodes working in lock step (synchronous data
	// parallel). 0 means 1.
	Nodes int
	// OnDemandNodes is how many of Nodes run on-demand (a hybrid plan); they
	// are never interrupted but cost the on-demand price. 0 = all spot.
	OnDemandNodes int
	// Interval is the checkpoint interval (τ, work between checkpoints).
	// 0 means the Young/Daly interval sqrt(2·C·M), M = 1/(job rate).
	Interval time.Duration
}

// Expected is the closed-form expectation of running a Job on an Offer.
type Expected struct {
	Offer         Offer
	Nodes         int // total nodes
	SpotNodes     int
	OnDemandNodes int
	// Interval is the checkpoint interval used (τ), capped at Work.
	Interval time.Duration
	// Rate is the job-level interruption rate per hour: SpotNodes × λ.
	Rate float64
	// Interruptions is the expected number of interruptions to completion.
	Interruptions float64
	// WallTime is the expected wall-clock time to completion.
	WallTime time.Duration
	// HourlyCost is what the whole plan costs per hour (USD).
	HourlyCost float64
	// Cost is the expected cost to completion: WallTime × HourlyCost (USD).
	Cost float64
}

// Overhead is WallTime/Work - 1: the fraction of time lost to checkpoints,
// restarts and re-done work.
func (e Expected) Overhead(job Job) float64 {
	return e.WallTime.Hours()/job.Work.Hours() - 1
}

// YoungInterval returns Young's first-order optimal checkpoint interval
// sqrt(2·C·M) for checkpoint cost C and mean time between failures M. It
// returns 0 if either is not positive.
func YoungInterval(checkpointCost, mtbf time.Duration) time.Duration {
	if checkpointCost <= 0 || mtbf <= 0 {
		return 0
	}
	return hoursToDuration(math.Sqrt(2 * checkpointCost.Hours() * mtbf.Hours()))
}

// maxHours is the largest number of hours a time.Duration holds.
var maxHours = time.Duration(math.MaxInt64).Hours()

func hoursToDuration(h float64) time.Duration {
	if h >= maxHours {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(h * float64(time.Hour))
}

func (j Job) normalized() (Job, error) {
	if j.Nodes == 0 {
		j.Nodes = 1
	}
	switch {
	case j.Work <= 0:
		return j, fmt.Errorf("%w: Work %v must be positive", ErrInvalidJob, j.Work)
	case j.CheckpointCost < 0:
		return j, fmt.Errorf("%w: CheckpointCost %v is negative", ErrInvalidJob, j.CheckpointCost)
	case j.RestartCost < 0:
		return j, fmt.Errorf("%w: RestartCost %v is negative", ErrInvalidJob, j.RestartCost)
	case j.Nodes < 0:
		return j, fmt.Errorf("%w: Nodes %d is negative", ErrInvalidJob, j.Nodes)
	case j.OnDemandNodes < 0 || j.OnDemandNodes > j.Nodes:
		return j, fmt.Errorf("%w: OnDemandNodes %d outside 0..Nodes (%d)", ErrInvalidJob, j.OnDemandNodes, j.Nodes)
	case j.Interval < 0:
		return j, fmt.Errorf("%w: Interval %v is negative", ErrInvalidJob, j.Interval)
	}
	return j, nil
}

// segmentTime is the expected time to get through one segment of length t
// hours (work plus its checkpoint) when interruptions arrive at rate lambda
// per hour and each costs r hours of restart (restarts themselves are not
// interrupted): (1/λ + R)(e^{λt} - 1). It is t when λ = 0. It also returns
// the expected number of interruptions, e^{λt} - 1.
func segmentTime(t, lambda, r float64) (hours, interruptions float64) {
	if lambda == 0 {
		return t, 0
	}
	k := math.Expm1(lambda * t)
	return (1/lambda + r) * k, k
}

// Estimate returns the expected wall time and cost of running job on offer.
//
// The model (see the package documentation): the job's N nodes work in lock
// step, so an interruption of any spot node stops the whole job; with
// N-k spot nodes each interrupted at rate λ the job is interrupted at rate
// Λ = (N-k)·λ (independent Poisson processes). The job alternates work
// segments of τ hours and checkpoints of C hours; an interruption loses the
// segment in progress and costs R hours of restart. One segment of length
// T = τ+C then takes (1/Λ + R)(e^{ΛT} - 1) hours in expectation, and the job
// is floor(W/τ) full segments plus one shorter remainder segment. All N
// nodes are billed for the whole wall time.
func Estimate(offer Offer, job Job) (Expected, error) {
	if err := offer.Validate(); err != nil {
		return Expected{}, err
	}
	job, err := job.normalized()
	if err != nil {
		return Expected{}, err
	}
	spot := job.Nodes - job.OnDemandNodes
	if job.OnDemandNodes > 0 && !(offer.OnDemandPrice > 0) {
		return Expected{}, fmt.Errorf("%w %s: hybrid plan with %d on-demand nodes needs the on-demand price", ErrInvalidOffer, offer, job.OnDemandNodes)
	}
	w := job.Work.Hours()
	c := job.CheckpointCost.Hours()
	r := job.RestartCost.Hours()
	rate := float64(spot) * offer.InterruptionRate

	tau := job.Interval.Hours()
	if tau == 0 {
		switch {
		case rate == 0:
			tau = w // never interrupted: one checkpoint, at the end
		case c == 0:
			return Expected{}, fmt.Errorf("%w: CheckpointCost is 0 and Interval is unset, so the Young/Daly interval is 0 (set one of them)", ErrInvalidJob)
		default:
			tau = math.Sqrt(2 * c / rate)
		}
	}
	tau = math.Min(tau, w)

	n := math.Floor(w / tau)
	rem := w - n*tau
	if rem <= 1e-12*w {
		rem = 0
	}
	segHours, segInt := segmentTime(tau+c, rate, r)
	wall, intr := n*segHours, n*segInt
	if rem > 0 {
		h, k := segmentTime(rem+c, rate, r)
		wall += h
		intr += k
	}
	if math.IsInf(wall, 0) || math.IsNaN(wall) || wall >= maxHours {
		return Expected{}, fmt.Errorf("%w: on %s the job never finishes in expectation (rate %.3g/h, segment %.3g h)", ErrInvalidJob, offer, rate, tau+c)
	}
	hourly := float64(spot)*offer.SpotPrice + float64(job.OnDemandNodes)*offer.OnDemandPrice
	return Expected{
		Offer:         offer,
		Nodes:         job.Nodes,
		SpotNodes:     spot,
		OnDemandNodes: job.OnDemandNodes,
		Interval:      hoursToDuration(tau),
		Rate:          rate,
		Interruptions: intr,
		WallTime:      hoursToDuration(wall),
		HourlyCost:    hourly,
		Cost:          wall * hourly,
	}, nil
}
