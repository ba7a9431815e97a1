package pricing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
)

// DefaultAdvisorURL is where AWS publishes the Spot Instance Advisor data.
const DefaultAdvisorURL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"

// AdvisorOptions say how advisor buckets become interruption rates.
// nil means all defaults.
type AdvisorOptions struct {
	// Midpoint uses the middle of each bucket as the monthly interruption
	// probability instead of its upper bound (the default, pessimistic).
	Midpoint bool
	// OpenBucketProbability is the monthly probability assumed for an
	// open-ended bucket (">20%", whose "max" is 100). Default 0.30; never
	// less than the bucket's lower bound.
	OpenBucketProbability float64
	// HoursPerMonth converts monthly probabilities to hourly rates
	// (default 730).
	HoursPerMonth float64
	// HTTPClient fetches the feed in FetchAdvisor (default
	// http.DefaultClient).
	HTTPClient *http.Client
	// MaxBytes bounds the feed size read (default 64 MiB).
	MaxBytes int64
}

func (o *AdvisorOptions) withDefaults() AdvisorOptions {
	var v AdvisorOptions
	if o != nil {
		v = *o
	}
	if !(v.OpenBucketProbability > 0 && v.OpenBucketProbability < 1) {
		v.OpenBucketProbability = 0.30
	}
	if !(v.HoursPerMonth > 0) || math.IsInf(v.HoursPerMonth, 0) {
		v.HoursPerMonth = 730
	}
	if v.HTTPClient == nil {
		v.HTTPClient = http.DefaultClient
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = 64 << 20
	}
	return v
}

// Bucket is one interruption-frequency range of the advisor feed, with the
// rate this package assumes for it.
type Bucket struct {
	Index int
	Label string // "<5%", "5-10%", ..., ">20%"
	// Lower and Upper bound the monthly interruption frequency (fractions,
	// from the feed's "max" of this and the previous range).
	Lower, Upper float64
	// Probability is the monthly interruption probability assumed: Upper
	// (or the midpoint with AdvisorOptions.Midpoint); for an open bucket
	// (Upper = 1) it is AdvisorOptions.OpenBucketProbability.
	Probability float64
	// Rate is the per-node-hour interruption rate: -ln(1-Probability)/HoursPerMonth.
	Rate float64
}

// AdvisorEntry is the advisor's word on one (region, OS, instance type).
type AdvisorEntry struct {
	Region, OS, InstanceType string
	// Savings is the advisor's savings over on-demand, percent.
	Savings int
	Bucket  Bucket
}

// Advisor is a parsed Spot Instance Advisor feed.
type Advisor struct {
	buckets []Bucket
	data    map[string]map[string]map[string]AdvisorEntry // region -> OS -> type
}

type advisorRange struct {
	Index *int    `json:"index"`
	Label *string `json:"label"`
	Dots  *int    `json:"dots"`
	Max   *int    `json:"max"`
}

type advisorStat struct {
	S *int `json:"s"`
	R *int `json:"r"`
}

type advisorFeed struct {
	Ranges      []advisorRange                                `json:"ranges"`
	SpotAdvisor map[string]map[string]map[string]*advisorStat `json:"spot_advisor"`
	Types       map[string]json.RawMessage                    `json:"instance_types"`
}

// ParseAdvisor reads a spot-advisor-data.json document:
//
//	{"ranges": [{"index": 0, "label": "<5%", "dots": 0, "max": 5}, ...],
//	 "spot_advisor": {"us-east-1": {"Linux": {"p3.2xlarge": {"s": 70, "r": 2}}}},
//	 "instance_types": {...}}
//
// Every range needs index, label and max (ascending, 1..100); every entry
// needs s (0..100) and r (an existing range index). Anything else missing
// or out of range is an error wrapping ErrMalformedFeed that names the key.
func ParseAdvisor(r io.Reader, opts *AdvisorOptions) (*Advisor, error) {
	o := opts.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, o.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("pricing: reading advisor feed: %w", err)
	}
	if int64(len(data)) > o.MaxBytes {
		return nil, fmt.Errorf("%w: advisor feed larger than %d bytes", ErrMalformedFeed, o.MaxBytes)
	}
	var f advisorFeed
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: advisor feed: %v", ErrMalformedFeed, err)
	}
	if len(f.Ranges) == 0 {
		return nil, fmt.Errorf("%w: advisor feed: missing or empty key \"ranges\"", ErrMalformedFeed)
	}
	if f.SpotAdvisor == nil {
		return nil, fmt.Errorf("%w: advisor feed: missing key \"spot_advisor\"", ErrMalformedFeed)
	}
	ranges := slices.Clone(f.Ranges)
	for i, rg := range ranges {
		switch {
		case rg.Index == nil:
			return nil, fmt.Errorf("%w: advisor feed: ranges[%d]: missing key \"index\"", ErrMalformedFeed, i)
		case rg.Label == nil:
			return nil, fmt.Errorf("%w: advisor feed: ranges[%d]: missing key \"label\"", ErrMalformedFeed, i)
		case rg.Max == nil:
			return nil, fmt.Errorf("%w: advisor feed: ranges[%d]: missing key \"max\"", ErrMalformedFeed, i)
		case *rg.Max < 1 || *rg.Max > 100:
			return nil, fmt.Errorf("%w: advisor feed: ranges[%d]: \"max\" %d outside 1..100", ErrMalformedFeed, i, *rg.Max)
		}
	}
	sort.SliceStable(ranges, func(i, j int) bool { return *ranges[i].Index < *ranges[j].Index })
	a := &Advisor{data: map[string]map[string]map[string]AdvisorEntry{}}
	byIndex := map[int]Bucket{}
	prevMax := 0
	for i, rg := range ranges {
		if i > 0 && *rg.Index == *ranges[i-1].Index {
			return nil, fmt.Errorf("%w: advisor feed: ranges: index %d appears twice", ErrMalformedFeed, *rg.Index)
		}
		if *rg.Max <= prevMax {
			return nil, fmt.Errorf("%w: advisor feed: ranges: index %d: \"max\" %d does not exceed the previous range's %d", ErrMalformedFeed, *rg.Index, *rg.Max, prevMax)
		}
		b := Bucket{Index: *rg.Index, Label: *rg.Label, Lower: float64(prevMax) / 100, Upper: float64(*rg.Max) / 100}
		switch {
		case b.Upper >= 1:
			// Never below the bucket's own lower bound, so a worse bucket
			// never gets a lower rate.
			b.Probability = math.Max(o.OpenBucketProbability, b.Lower)
		case o.Midpoint:
			b.Probability = (b.Lower + b.Upper) / 2
		default:
			b.Probability = b.Upper
		}
		b.Rate = -math.Log1p(-b.Probability) / o.HoursPerMonth
		prevMax = *rg.Max
		a.buckets = append(a.buckets, b)
		byIndex[b.Index] = b
	}
	for region, oses := range f.SpotAdvisor {
		if !ValidRegion(region) {
			return nil, fmt.Errorf("%w: advisor feed: spot_advisor: %q is not a region name", ErrMalformedFeed, region)
		}
		for osName, types := range oses {
			for itype, st := range types {
				where := fmt.Sprintf("spot_advisor[%q][%q][%q]", region, osName, itype)
				switch {
				case st == nil:
					return nil, fmt.Errorf("%w: advisor feed: %s is null", ErrMalformedFeed, where)
				case st.S == nil:
					return nil, fmt.Errorf("%w: advisor feed: %s: missing key \"s\"", ErrMalformedFeed, where)
				case st.R == nil:
					return nil, fmt.Errorf("%w: advisor feed: %s: missing key \"r\"", ErrMalformedFeed, where)
				case *st.S < 0 || *st.S > 100:
					return nil, fmt.Errorf("%w: advisor feed: %s: savings \"s\" %d outside 0..100", ErrMalformedFeed, where, *st.S)
				}
				b, ok := byIndex[*st.R]
				if !ok {
					return nil, fmt.Errorf("%w: advisor feed: %s: range \"r\" %d is not one of the ranges' indexes", ErrMalformedFeed, where, *st.R)
				}
				if a.data[region] == nil {
					a.data[region] = map[string]map[string]AdvisorEntry{}
				}
				if a.data[region][osName] == nil {
					a.data[region][osName] = map[string]AdvisorEntry{}
				}
				a.data[region][osName][itype] = AdvisorEntry{Region: region, OS: osName, InstanceType: itype, Savings: *st.S, Bucket: b}
			}
		}
	}
	return a, nil
}

// LoadAdvisorFile parses the advisor feed stored at path.
func LoadAdvisorFile(path string, opts *AdvisorOptions) (*Advisor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: advisor feed: %w", err)
	}
	defer f.Close()
	a, err := ParseAdvisor(f, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// FetchAdvisor downloads and parses the advisor feed at url (""
// = DefaultAdvisorURL) with opts.HTTPClient.
func FetchAdvisor(ctx context.Context, url string, opts *AdvisorOptions) (*Advisor, error) {
	o := opts.withDefaults()
	if url == "" {
		url = DefaultAdvisorURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("pricing: advisor feed %s: %w", url, err)
	}
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("pricing: advisor feed %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("pricing: advisor feed %s: HTTP %s: %s", url, resp.Status, bytes.TrimSpace(snippet))
	}
	a, err := ParseAdvisor(resp.Body, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return a, nil
}

// Buckets returns the feed's ranges with their assumed rates, by index.
func (a *Advisor) Buckets() []Bucket { return slices.Clone(a.buckets) }

// WorstRate is the rate of the feed's worst bucket: the pessimistic default
// for instance types the feed does not list.
func (a *Advisor) WorstRate() float64 { return a.buckets[len(a.buckets)-1].Rate }

// Lookup returns the advisor entry for an instance type in a region and OS
// ("Linux" or "Windows"). A region the feed does not cover is an error
// wrapping ErrUnknownRegion; a type it does not list, ErrNoData.
func (a *Advisor) Lookup(region, osName, instanceType string) (AdvisorEntry, error) {
	oses, ok := a.data[region]
	if !ok {
		return AdvisorEntry{}, fmt.Errorf("%w: advisor feed has no region %q", ErrUnknownRegion, region)
	}
	e, ok := oses[osName][instanceType]
	if !ok {
		return AdvisorEntry{}, fmt.Errorf("%w: advisor feed has no entry for %s %s in %s", ErrNoData, osName, instanceType, region)
	}
	return e, nil
}
