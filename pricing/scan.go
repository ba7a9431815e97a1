package pricing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2API is the part of *ec2.Client the Scanner uses.
type EC2API interface {
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
	GetSpotPlacementScores(ctx context.Context, in *ec2.GetSpotPlacementScoresInput, optFns ...func(*ec2.Options)) (*ec2.GetSpotPlacementScoresOutput, error)
}

var _ EC2API = (*ec2.Client)(nil)

// DefaultProductDescription is the spot product description scanned when
// ScannerOptions.ProductDescription is empty.
const DefaultProductDescription = "Linux/UNIX"

// ScannerOptions configure a Scanner. nil means all defaults.
type ScannerOptions struct {
	// ProductDescription filters the spot price history
	// (default "Linux/UNIX"; others: "Linux/UNIX (Amazon VPC)", "Windows", ...).
	ProductDescription string
	// Concurrency bounds how many regions are scanned at once (default 16).
	Concurrency int
	// Window is the history window when a Query gives no Start (default 24h).
	Window time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Logger receives debug records (nil = silent).
	Logger *slog.Logger
}

func (o *ScannerOptions) withDefaults() ScannerOptions {
	var v ScannerOptions
	if o != nil {
		v = *o
	}
	if v.ProductDescription == "" {
		v.ProductDescription = DefaultProductDescription
	}
	if v.Concurrency <= 0 {
		v.Concurrency = 16
	}
	if v.Window <= 0 {
		v.Window = 24 * time.Hour
	}
	if v.Now == nil {
		v.Now = time.Now
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// Scanner reads spot prices from many regions, one EC2 client per region.
// It is safe for concurrent use.
type Scanner struct {
	clients map[string]EC2API
	regions []string // sorted
	opts    ScannerOptions
}

// regionRE matches AWS region names such as us-east-1, eu-central-2,
// us-gov-west-1, cn-north-1, ap-southeast-7.
var regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)

// ValidRegion reports whether name has the shape of an AWS region name.
func ValidRegion(name string) bool { return regionRE.MatchString(name) }

// NewScanner returns a Scanner over the given per-region clients (region
// name -> client). Region names must look like AWS regions (us-east-1).
func NewScanner(clients map[string]EC2API, opts *ScannerOptions) (*Scanner, error) {
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: no regions given", ErrUnknownRegion)
	}
	s := &Scanner{clients: make(map[string]EC2API, len(clients)), opts: opts.withDefaults()}
	for r, c := range clients {
		if !ValidRegion(r) {
			return nil, fmt.Errorf("%w: %q is not an AWS region name", ErrUnknownRegion, r)
		}
		if c == nil {
			return nil, fmt.Errorf("pricing: nil EC2 client for region %q", r)
		}
		s.clients[r] = c
		s.regions = append(s.regions, r)
	}
	slices.Sort(s.regions)
	return s, nil
}

// NewScannerFromConfig makes one *ec2.Client per region from cfg (its
// Region is overridden per client) and returns a Scanner over them.
// optFns apply to every client (e.g. to set BaseEndpoint in tests).
func NewScannerFromConfig(cfg aws.Config, regions []string, opts *ScannerOptions, optFns ...func(*ec2.Options)) (*Scanner, error) {
	clients := make(map[string]EC2API, len(regions))
	for _, r := range regions {
		if !ValidRegion(r) {
			return nil, fmt.Errorf("%w: %q is not an AWS region name", ErrUnknownRegion, r)
		}
		if _, dup := clients[r]; dup {
			continue
		}
		region := r
		fns := append([]func(*ec2.Options){func(o *ec2.Options) { o.Region = region }}, optFns...)
		clients[r] = ec2.NewFromConfig(cfg, fns...)
	}
	return NewScanner(clients, opts)
}

// Regions returns the scanner's regions, sorted.
func (s *Scanner) Regions() []string { return slices.Clone(s.regions) }

// Query selects what to scan.
type Query struct {
	// InstanceTypes to read (e.g. "p3.2xlarge"). Empty = every type, which
	// is many pages.
	InstanceTypes []string
	// Regions to scan, a subset of the Scanner's. Empty = all of them.
	Regions []string
	// Start and End bound the history window. Zero End = now; zero Start =
	// End - ScannerOptions.Window. EC2 also returns the price in effect at
	// Start, so every (type, zone) with a price has at least one point.
	Start, End time.Time
}

// Quote is the newest spot price of one instance type in one availability
// zone.
type Quote struct {
	Region             string
	InstanceType       string
	AvailabilityZone   string // zone name, e.g. "us-east-1a" (differs per account)
	ZoneID             string // zone id, e.g. "use1-az4" (the same in every account)
	ProductDescription string
	Price              float64 // USD per hour
	Timestamp          time.Time
}

// PricePoint is one spot price change.
type PricePoint struct {
	Time  time.Time
	Price float64
}

// Series is the price history of one (region, type, zone), oldest first.
type Series struct {
	Region, InstanceType, AvailabilityZone, ZoneID string
	Points                                         []PricePoint
}

// RegionError is a region that could not be scanned (or, for Op
// "DescribeAvailabilityZones", whose zone ids could not be read: its quotes
// are still returned, with the zone ids EC2 put in the price records).
type RegionError struct {
	Region string
	Op     string // the EC2 operation that failed
	Err    error
}

func (e *RegionError) Error() string {
	return fmt.Sprintf("pricing: region %s: %s: %v", e.Region, e.Op, e.Err)
}
func (e *RegionError) Unwrap() error { return e.Err }

// RecordError is a price record that was dropped because it was malformed.
type RecordError struct {
	Region, InstanceType, AvailabilityZone string
	Field                                  string // "SpotPrice", "Timestamp", ...
	Value                                  string
	Err                                    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("pricing: region %s: record %s/%s: field %s %q: %v", e.Region, e.InstanceType, e.AvailabilityZone, e.Field, e.Value, e.Err)
}
func (e *RecordError) Unwrap() error { return e.Err }

// ScanResult is what a scan found.
type ScanResult struct {
	// Quotes holds the newest price per (region, instance type, zone),
	// ordered by region, type, zone.
	Quotes []Quote
	// History holds every price point read, per (region, type, zone), in
	// the same order as Quotes.
	History []Series
	// Stats summarises each series over [Start, End], same order.
	Stats []Stats
	// Start and End are the window that was scanned.
	Start, End time.Time
	// Answered lists the regions whose spot price history was read, sorted.
	Answered []string
	// Errors holds one *RegionError per failed region (sorted by region)
	// and one *RecordError per malformed record.
	Errors []error
}

// Err joins Errors (nil if there are none).
func (r *ScanResult) Err() error { return errors.Join(r.Errors...) }

// ParsePrice parses a spot price string ("0.9180") into USD per hour. It
// rejects empty, non-numeric, non-finite, zero and negative values with an
// error wrapping ErrInvalidPrice.
func ParsePrice(s string) (float64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("%w: empty", ErrInvalidPrice)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not a number", ErrInvalidPrice, s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("%w: %q is not a positive finite number", ErrInvalidPrice, s)
	}
	return v, nil
}

type seriesKey struct{ region, itype, zone string }

type regionScan struct {
	region  string
	series  map[seriesKey]*Series
	zoneIDs map[string]string
	errs    []error
	fatal   bool
}

// Scan reads the spot price history of q.InstanceTypes in every region of
// q (at most Concurrency regions at a time), reading every page, and keeps
// the newest price per (region, instance type, availability zone) by
// timestamp, with the zone's id from DescribeAvailabilityZones.
//
// A region that fails does not stop the others: Scan returns the quotes of
// every region that answered together with a non-nil error that joins one
// *RegionError per failed region (also in res.Errors). Malformed records are
// dropped and reported as *RecordError. An unknown region in q.Regions, or a
// cancelled ctx before anything was read, returns (nil, err).
func (s *Scanner) Scan(ctx context.Context, q Query) (*ScanResult, error) {
	regions := q.Regions
	if len(regions) == 0 {
		regions = s.regions
	}
	seen := map[string]bool{}
	var list []string
	for _, r := range regions {
		if _, ok := s.clients[r]; !ok {
			return nil, fmt.Errorf("%w: %q is not one of the scanner's regions %v", ErrUnknownRegion, r, s.regions)
		}
		if !seen[r] {
			seen[r] = true
			list = append(list, r)
		}
	}
	slices.Sort(list)
	end := q.End
	if end.IsZero() {
		end = s.opts.Now()
	}
	start := q.Start
	if start.IsZero() {
		start = end.Add(-s.opts.Window)
	}
	if start.After(end) {
		return nil, fmt.Errorf("pricing: query Start %v is after End %v", start, end)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	scans := make([]*regionScan, len(list))
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for i, r := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				scans[i] = &regionScan{region: r, fatal: true, errs: []error{&RegionError{Region: r, Op: "DescribeSpotPriceHistory", Err: context.Cause(ctx)}}}
				return
			}
			defer func() { <-sem }()
			scans[i] = s.scanRegion(ctx, r, q.InstanceTypes, start, end)
		}()
	}
	wg.Wait()

	res := &ScanResult{Start: start, End: end}
	for _, sc := range scans {
		res.Errors = append(res.Errors, sc.errs...)
		if sc.fatal {
			continue
		}
		res.Answered = append(res.Answered, sc.region)
		keys := make([]seriesKey, 0, len(sc.series))
		for k := range sc.series {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b seriesKey) int {
			return cmp.Or(cmp.Compare(a.itype, b.itype), cmp.Compare(a.zone, b.zone))
		})
		for _, k := range keys {
			se := sc.series[k]
			if id, ok := sc.zoneIDs[se.AvailabilityZone]; ok {
				se.ZoneID = id
			}
			slices.SortStableFunc(se.Points, func(a, b PricePoint) int { return a.Time.Compare(b.Time) })
			newest := se.Points[len(se.Points)-1]
			// Equal timestamps with different prices: keep the higher price
			// (the pessimistic reading), independent of page order.
			for i := len(se.Points) - 2; i >= 0 && se.Points[i].Time.Equal(newest.Time); i-- {
				newest.Price = math.Max(newest.Price, se.Points[i].Price)
			}
			res.Quotes = append(res.Quotes, Quote{
				Region:             se.Region,
				InstanceType:       se.InstanceType,
				AvailabilityZone:   se.AvailabilityZone,
				ZoneID:             se.ZoneID,
				ProductDescription: s.opts.ProductDescription,
				Price:              newest.Price,
				Timestamp:          newest.Time,
			})
			res.History = append(res.History, *se)
			st, err := ComputeStats(se.Points, start, end)
			if err != nil {
				// Only points after End: cannot happen with EC2's answers,
				// but keep the series and report nothing for it.
				st = Stats{}
			}
			st.Region, st.InstanceType, st.AvailabilityZone, st.ZoneID = se.Region, se.InstanceType, se.AvailabilityZone, se.ZoneID
			res.Stats = append(res.Stats, st)
		}
	}
	if err := ctx.Err(); err != nil && len(res.Answered) == 0 {
		return nil, errors.Join(append([]error{context.Cause(ctx)}, res.Errors...)...)
	}
	return res, res.Err()
}

func (s *Scanner) scanRegion(ctx context.Context, region string, types []string, start, end time.Time) *regionScan {
	client := s.clients[region]
	sc := &regionScan{region: region, series: map[seriesKey]*Series{}}
	log := s.opts.Logger.With("region", region)

	// Zone ids, concurrently with the price pages.
	var (
		zoneIDs map[string]string
		zoneErr error
		zoneWG  sync.WaitGroup
	)
	zoneWG.Go(func() {
		out, err := client.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
		if err != nil {
			zoneErr = err
			return
		}
		zoneIDs = make(map[string]string, len(out.AvailabilityZones))
		for _, z := range out.AvailabilityZones {
			if z.ZoneName != nil && z.ZoneId != nil {
				zoneIDs[*z.ZoneName] = *z.ZoneId
			}
		}
	})

	in := &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       make([]ec2types.InstanceType, len(types)),
		ProductDescriptions: []string{s.opts.ProductDescription},
		StartTime:           aws.Time(start),
		EndTime:             aws.Time(end),
	}
	for i, t := range types {
		in.InstanceTypes[i] = ec2types.InstanceType(t)
	}
	pages := 0
	p := ec2.NewDescribeSpotPriceHistoryPaginator(client, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			sc.fatal = true
			sc.errs = append(sc.errs, &RegionError{Region: region, Op: "DescribeSpotPriceHistory", Err: err})
			break
		}
		pages++
		for _, rec := range out.SpotPriceHistory {
			s.addRecord(sc, rec)
		}
	}
	zoneWG.Wait()
	if sc.fatal {
		log.Debug("spot price scan failed", "pages", pages, "err", sc.errs[len(sc.errs)-1])
		return sc
	}
	sc.zoneIDs = map[string]string{}
	// Zone ids from the records themselves, overridden by
	// DescribeAvailabilityZones when it answered.
	for _, se := range sc.series {
		if se.ZoneID != "" {
			sc.zoneIDs[se.AvailabilityZone] = se.ZoneID
		}
	}
	if zoneErr != nil {
		sc.errs = append(sc.errs, &RegionError{Region: region, Op: "DescribeAvailabilityZones", Err: zoneErr})
	}
	for n, id := range zoneIDs {
		sc.zoneIDs[n] = id
	}
	log.Debug("spot price scan done", "pages", pages, "series", len(sc.series))
	return sc
}

func (s *Scanner) addRecord(sc *regionScan, rec ec2types.SpotPrice) {
	itype := string(rec.InstanceType)
	zone := aws.ToString(rec.AvailabilityZone)
	bad := func(field, value string, err error) {
		sc.errs = append(sc.errs, &RecordError{Region: sc.region, InstanceType: itype, AvailabilityZone: zone, Field: field, Value: value, Err: err})
	}
	if itype == "" {
		bad("InstanceType", "", fmt.Errorf("%w: empty instance type", ErrInvalidOffer))
		return
	}
	if zone == "" {
		bad("AvailabilityZone", "", fmt.Errorf("%w: empty availability zone", ErrInvalidOffer))
		return
	}
	price, err := ParsePrice(aws.ToString(rec.SpotPrice))
	if err != nil {
		bad("SpotPrice", aws.ToString(rec.SpotPrice), err)
		return
	}
	if rec.Timestamp == nil || rec.Timestamp.IsZero() {
		bad("Timestamp", "", fmt.Errorf("%w: missing timestamp", ErrInvalidOffer))
		return
	}
	k := seriesKey{sc.region, itype, zone}
	se := sc.series[k]
	if se == nil {
		se = &Series{Region: sc.region, InstanceType: itype, AvailabilityZone: zone}
		sc.series[k] = se
	}
	if id := aws.ToString(rec.AvailabilityZoneId); id != "" {
		se.ZoneID = id
	}
	se.Points = append(se.Points, PricePoint{Time: rec.Timestamp.UTC(), Price: price})
}
