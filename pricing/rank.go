package pricing

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// RankOptions filter and shape a ranking. The zero value (or nil) ranks
// every valid offer with the job as given.
type RankOptions struct {
	// MaxPrice drops offers whose spot price per node-hour is above it.
	// 0 = no limit.
	MaxPrice float64
	// MinSavings drops offers that save less than this fraction (0..1)
	// against on-demand. When it is set, offers whose on-demand price is
	// unknown are dropped too: their savings cannot be shown.
	MinSavings float64
	// MinPlacementScore drops offers whose placement score is known and
	// below it. Offers with an unknown score (0) are kept.
	MinPlacementScore int
	// OnDemandNodes lists hybrid plans to evaluate: each offer is estimated
	// once per entry, with that many of the job's nodes on-demand. Empty
	// means one plan, job.OnDemandNodes. Plans that need an on-demand price
	// the offer lacks are skipped silently.
	OnDemandNodes []int
	// Limit keeps only the first Limit plans. 0 = all.
	Limit int
}

// OfferError is an offer Rank skipped, with why.
type OfferError struct {
	Offer Offer
	Err   error
}

func (e *OfferError) Error() string {
	return "pricing: offer " + e.Offer.String() + ": " + e.Err.Error()
}
func (e *OfferError) Unwrap() error { return e.Err }

// Rank estimates job on every offer (and every hybrid plan asked for) and
// returns the plans ordered by expected cost to completion, cheapest first;
// ties go to the shorter wall time, then to region, type and zone names.
//
// An invalid job returns (nil, err). Invalid offers (for example a zero or
// negative spot price) are left out of the ranking and reported: the
// ranking of the valid offers is returned together with a non-nil error
// joining one *OfferError per skipped offer. A bad offer therefore never
// ranks first.
func Rank(offers []Offer, job Job, opts *RankOptions) ([]Expected, error) {
	var o RankOptions
	if opts != nil {
		o = *opts
	}
	if o.MinSavings < 0 || o.MinSavings > 1 {
		return nil, fmt.Errorf("%w: MinSavings %v outside 0..1", ErrInvalidJob, o.MinSavings)
	}
	if o.MaxPrice < 0 {
		return nil, fmt.Errorf("%w: MaxPrice %v is negative", ErrInvalidJob, o.MaxPrice)
	}
	nj, err := job.normalized()
	if err != nil {
		return nil, err
	}
	plans := o.OnDemandNodes
	if len(plans) == 0 {
		plans = []int{nj.OnDemandNodes}
	}
	for _, k := range plans {
		if k < 0 || k > nj.Nodes {
			return nil, fmt.Errorf("%w: RankOptions.OnDemandNodes entry %d outside 0..Nodes (%d)", ErrInvalidJob, k, nj.Nodes)
		}
	}

	var out []Expected
	var errs []error
	for _, of := range offers {
		if err := of.Validate(); err != nil {
			errs = append(errs, &OfferError{Offer: of, Err: err})
			continue
		}
		if o.MaxPrice > 0 && of.SpotPrice > o.MaxPrice {
			continue
		}
		if o.MinSavings > 0 {
			if s, ok := of.Savings(); !ok || s < o.MinSavings {
				continue
			}
		}
		if o.MinPlacementScore > 0 && of.PlacementScore > 0 && of.PlacementScore < o.MinPlacementScore {
			continue
		}
		for _, k := range plans {
			if k > 0 && !(of.OnDemandPrice > 0) {
				continue
			}
			j := nj
			j.OnDemandNodes = k
			e, err := Estimate(of, j)
			if err != nil {
				errs = append(errs, &OfferError{Offer: of, Err: err})
				continue
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Expected) int {
		return cmp.Or(
			cmp.Compare(a.Cost, b.Cost),
			cmp.Compare(a.WallTime, b.WallTime),
			cmp.Compare(a.Offer.Region, b.Offer.Region),
			cmp.Compare(a.Offer.InstanceType, b.Offer.InstanceType),
			cmp.Compare(a.Offer.AvailabilityZone, b.Offer.AvailabilityZone),
			cmp.Compare(a.OnDemandNodes, b.OnDemandNodes),
		)
	})
	if o.Limit > 0 && len(out) > o.Limit {
		out = out[:o.Limit]
	}
	return out, errors.Join(errs...)
}
