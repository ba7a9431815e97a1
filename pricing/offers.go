package pricing

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// PlacementScore is one EC2 spot placement score: how likely a spot request
// of the asked capacity succeeds (1..10) in a region, or in one zone when
// ZoneID is set.
type PlacementScore struct {
	Region string
	ZoneID string // empty for a region-level score
	Score  int
}

// PlacementQuery asks for spot placement scores.
type PlacementQuery struct {
	InstanceTypes  []string
	TargetCapacity int      // instances; must be positive
	Regions        []string // regions to score; empty = the scanner's regions
	// PerZone asks for one score per availability zone (SingleAvailabilityZone).
	PerZone bool
}

// PlacementScores calls GetSpotPlacementScores (every page) through the
// client of the first of the scanner's regions (us-east-1 if it has it;
// the API scores any region from any endpoint).
func (s *Scanner) PlacementScores(ctx context.Context, q PlacementQuery) ([]PlacementScore, error) {
	if q.TargetCapacity <= 0 {
		return nil, fmt.Errorf("pricing: placement scores: TargetCapacity %d must be positive", q.TargetCapacity)
	}
	if len(q.InstanceTypes) == 0 {
		return nil, fmt.Errorf("pricing: placement scores: no instance types")
	}
	regions := q.Regions
	if len(regions) == 0 {
		regions = s.regions
	}
	for _, r := range regions {
		if !ValidRegion(r) {
			return nil, fmt.Errorf("%w: %q is not an AWS region name", ErrUnknownRegion, r)
		}
	}
	via := s.regions[0]
	if _, ok := s.clients["us-east-1"]; ok {
		via = "us-east-1"
	}
	in := &ec2.GetSpotPlacementScoresInput{
		InstanceTypes:          q.InstanceTypes,
		TargetCapacity:         aws.Int32(int32(min(q.TargetCapacity, math.MaxInt32))),
		RegionNames:            regions,
		SingleAvailabilityZone: aws.Bool(q.PerZone),
	}
	var out []PlacementScore
	p := ec2.NewGetSpotPlacementScoresPaginator(s.clients[via], in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, &RegionError{Region: via, Op: "GetSpotPlacementScores", Err: err}
		}
		for _, sc := range page.SpotPlacementScores {
			out = append(out, PlacementScore{
				Region: aws.ToString(sc.Region),
				ZoneID: aws.ToString(sc.AvailabilityZoneId),
				Score:  int(aws.ToInt32(sc.Score)),
			})
		}
	}
	return out, nil
}

// OfferSources are the data Offers joins to spot quotes. Every field is
// optional.
type OfferSources struct {
	// OnDemand gives on-demand prices (nil = unknown: no savings shown).
	OnDemand OnDemandPricer
	// Advisor gives interruption rates.
	Advisor *Advisor
	// OS is the advisor's OS key (default "Linux").
	OS string
	// MissingRate is the interruption rate per node-hour assumed for a quote
	// the advisor does not cover (or when Advisor is nil). 0 means the
	// advisor's worst bucket (Advisor.WorstRate), or, without an advisor,
	// DefaultMissingRate: an unknown rate is never taken as 0.
	MissingRate float64
	// Placement scores to attach (zone-level scores match ZoneID,
	// region-level ones the region).
	Placement []PlacementScore
}

// DefaultMissingRate is the interruption rate per node-hour assumed
// without advisor data: the open ">20%" bucket at 30% a month,
// -ln(1-0.30)/730 ≈ 4.89e-4 (MTBF ≈ 85 days).
const DefaultMissingRate = 0.35667494393873245 / 730

// Offers turns quotes into offers: on-demand price, interruption rate and
// placement score joined by (region, type[, zone id]). Lookups that fail
// (no on-demand price, type missing from the advisor) do not drop the
// offer: its on-demand price stays 0 (unknown) or its rate becomes the
// pessimistic MissingRate, and the failures are returned joined in err
// alongside the offers. Only a cancelled ctx returns (nil, err).
func Offers(ctx context.Context, quotes []Quote, src *OfferSources) ([]Offer, error) {
	var s OfferSources
	if src != nil {
		s = *src
	}
	if s.OS == "" {
		s.OS = "Linux"
	}
	missing, missingLabel := s.MissingRate, "assumed"
	if !(missing > 0) || math.IsInf(missing, 0) {
		missing = DefaultMissingRate
		if s.Advisor != nil {
			missing = s.Advisor.WorstRate()
		}
		missingLabel = "assumed worst"
	}
	type rk struct{ region, itype string }
	odCache := map[rk]float64{}
	var errs []error
	out := make([]Offer, 0, len(quotes))
	for _, q := range quotes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := Offer{
			Region: q.Region, InstanceType: q.InstanceType,
			AvailabilityZone: q.AvailabilityZone, ZoneID: q.ZoneID,
			SpotPrice: q.Price, Timestamp: q.Timestamp,
			InterruptionRate: missing, InterruptionLabel: missingLabel,
		}
		if s.OnDemand != nil {
			k := rk{q.Region, q.InstanceType}
			p, ok := odCache[k]
			if !ok {
				v, err := s.OnDemand.OnDemandPrice(ctx, q.Region, q.InstanceType)
				if err != nil {
					if ctx.Err() != nil {
						return nil, errors.Join(ctx.Err(), err)
					}
					errs = append(errs, err)
				}
				p = v
				odCache[k] = p
			}
			o.OnDemandPrice = p
		}
		if s.Advisor != nil {
			e, err := s.Advisor.Lookup(q.Region, s.OS, q.InstanceType)
			if err != nil {
				errs = append(errs, err)
			} else {
				o.InterruptionRate, o.InterruptionLabel = e.Bucket.Rate, e.Bucket.Label
			}
		}
		for _, ps := range s.Placement {
			if ps.Region == q.Region && (ps.ZoneID == "" || ps.ZoneID == q.ZoneID) {
				// A zone-level score beats a region-level one.
				if ps.ZoneID != "" || o.PlacementScore == 0 {
					o.PlacementScore = ps.Score
				}
			}
		}
		out = append(out, o)
	}
	return out, errors.Join(errs...)
}
