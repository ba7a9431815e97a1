package pricing_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotcheck/spotcheck/pricing"
)

var (
	scanNow   = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	scanStart = scanNow.Add(-24 * time.Hour)
)

func at(day, hour, minute int) time.Time {
	return time.Date(2026, 11, day, hour, minute, 0, 0, time.UTC)
}

// Day 31 of November is December 1st; at(31, ...) reads as "Dec 1".

func rec(itype, zone, price string, ts time.Time) fakeRecord {
	return fakeRecord{itype: itype, zone: zone, price: price, product: "Linux/UNIX", ts: ts}
}

// scanFixture: three regions. us-east-1 answers in pages of 3 with records
// out of order, several zones per type, a Windows record (filtered by
// product description), a type that was not asked for, and zone names
// whose letters do not match their ids. eu-west-1 answers in pages of 2.
// ap-south-1 refuses every call.
func scanFixture() map[string]*fakeRegion {
	win := rec("p3.2xlarge", "us-east-1a", "0.5000", at(31, 11, 30))
	win.product = "Windows"
	return map[string]*fakeRegion{
		"us-east-1": {
			zones:    [][2]string{{"us-east-1a", "use1-az6"}, {"us-east-1b", "use1-az1"}, {"us-east-1c", "use1-az2"}},
			pageSize: 3,
			records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.9500", at(30, 20, 0)),
				rec("g5.xlarge", "us-east-1b", "0.4100", at(31, 9, 0)),
				rec("p3.2xlarge", "us-east-1b", "1.0200", at(31, 8, 0)),
				rec("p3.2xlarge", "us-east-1a", "0.9180", at(31, 10, 0)),
				rec("g5.xlarge", "us-east-1c", "0.3900", at(30, 15, 0)),
				rec("p3.2xlarge", "us-east-1a", "0.9900", at(30, 10, 0)), // before the window: the price in effect at its start
				rec("p3.2xlarge", "us-east-1b", "0.8800", at(30, 23, 0)),
				rec("m5.large", "us-east-1a", "0.0300", at(31, 11, 0)), // not asked for
				win,
				rec("g5.xlarge", "us-east-1b", "0.4500", at(30, 18, 0)),
				rec("p3.2xlarge", "us-east-1a", "0.9300", at(29, 1, 0)), // superseded before the window: not served
				rec("p3.2xlarge", "us-east-1c", "0.9700", at(31, 7, 0)), // only on the last page
			},
		},
		"eu-west-1": {
			zones:    [][2]string{{"eu-west-1a", "euw1-az3"}, {"eu-west-1b", "euw1-az1"}},
			pageSize: 2,
			records: []fakeRecord{
				rec("p3.2xlarge", "eu-west-1b", "0.8500", at(31, 6, 0)),
				rec("p3.2xlarge", "eu-west-1a", "0.9900", at(31, 11, 0)),
				rec("p3.2xlarge", "eu-west-1b", "0.8000", at(31, 11, 45)),
				rec("g5.xlarge", "eu-west-1a", "0.5000", at(31, 1, 0)),
				rec("p3.2xlarge", "eu-west-1b", "0.8300", at(31, 3, 0)),
			},
		},
		"ap-south-1": {
			zones:    [][2]string{{"ap-south-1a", "aps1-az1"}},
			failCode: "UnauthorizedOperation",
			records:  []fakeRecord{rec("p3.2xlarge", "ap-south-1a", "0.1000", at(31, 11, 0))},
		},
	}
}

func TestScanNewestPerTypeAndZone(t *testing.T) {
	f := newFakeEC2(t, scanFixture())
	s := f.scanner(t, []string{"us-east-1", "eu-west-1", "ap-south-1"}, &pricing.ScannerOptions{Now: func() time.Time { return scanNow }})
	res, err := s.Scan(context.Background(), pricing.Query{InstanceTypes: []string{"p3.2xlarge", "g5.xlarge"}})
	if err == nil {
		t.Fatal("Scan error = nil, want the failing region ap-south-1 reported")
	}
	if res == nil {
		t.Fatalf("Scan returned no result with error %v; the answering regions were lost", err)
	}

	q := func(region, itype, zone, id, price string, ts time.Time) pricing.Quote {
		p, perr := pricing.ParsePrice(price)
		if perr != nil {
			t.Fatal(perr)
		}
		return pricing.Quote{Region: region, InstanceType: itype, AvailabilityZone: zone, ZoneID: id, ProductDescription: "Linux/UNIX", Price: p, Timestamp: ts}
	}
	want := []pricing.Quote{
		q("eu-west-1", "g5.xlarge", "eu-west-1a", "euw1-az3", "0.5000", at(31, 1, 0)),
		q("eu-west-1", "p3.2xlarge", "eu-west-1a", "euw1-az3", "0.9900", at(31, 11, 0)),
		q("eu-west-1", "p3.2xlarge", "eu-west-1b", "euw1-az1", "0.8000", at(31, 11, 45)),
		q("us-east-1", "g5.xlarge", "us-east-1b", "use1-az1", "0.4100", at(31, 9, 0)),
		q("us-east-1", "g5.xlarge", "us-east-1c", "use1-az2", "0.3900", at(30, 15, 0)),
		q("us-east-1", "p3.2xlarge", "us-east-1a", "use1-az6", "0.9180", at(31, 10, 0)),
		q("us-east-1", "p3.2xlarge", "us-east-1b", "use1-az1", "1.0200", at(31, 8, 0)),
		q("us-east-1", "p3.2xlarge", "us-east-1c", "use1-az2", "0.9700", at(31, 7, 0)),
	}
	if diff := cmp.Diff(want, res.Quotes); diff != "" {
		t.Errorf("quotes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"eu-west-1", "us-east-1"}, res.Answered); diff != "" {
		t.Errorf("answered regions (-want +got):\n%s", diff)
	}

	// The failing region is named, with EC2's error code, and only it.
	var re *pricing.RegionError
	if !errors.As(err, &re) || re.Region != "ap-south-1" {
		t.Fatalf("error %v: want a *RegionError for ap-south-1", err)
	}
	if !strings.Contains(err.Error(), "ap-south-1") || !strings.Contains(err.Error(), "UnauthorizedOperation") {
		t.Errorf("error %q does not name the region and EC2's error code", err)
	}
	if len(res.Errors) != 1 {
		t.Errorf("res.Errors = %v, want exactly the ap-south-1 failure", res.Errors)
	}

	// Every page was read: each region served every matching record, in
	// ceil(records/pageSize) requests.
	for region, fx := range scanFixture() {
		if fx.failCode != "" {
			continue
		}
		matching := 0
		for _, r := range fx.records {
			if (r.itype == "p3.2xlarge" || r.itype == "g5.xlarge") && r.product == "Linux/UNIX" && !r.ts.After(scanNow) &&
				!(r.itype == "p3.2xlarge" && r.zone == "us-east-1a" && r.ts.Equal(at(29, 1, 0))) {
				matching++
			}
		}
		f.mu.Lock()
		served := f.served[region]
		f.mu.Unlock()
		if served != matching {
			t.Errorf("%s: %d records served, want all %d matching records", region, served, matching)
		}
		wantPages := (matching + fx.pageSize - 1) / fx.pageSize
		if got := f.count(region, "DescribeSpotPriceHistory"); got != wantPages || wantPages < 2 {
			t.Errorf("%s: %d DescribeSpotPriceHistory requests, want %d pages (>= 2)", region, got, wantPages)
		}
		if got := f.count(region, "DescribeAvailabilityZones"); got != 1 {
			t.Errorf("%s: %d DescribeAvailabilityZones requests, want 1", region, got)
		}
	}

	// History statistics of us-east-1 p3.2xlarge in us-east-1a over the
	// 24 h window: 0.99 in effect at the start for 8 h, 0.95 for 14 h,
	// 0.918 for the last 2 h.
	var st *pricing.Stats
	for i := range res.Stats {
		if x := res.Stats[i]; x.Region == "us-east-1" && x.InstanceType == "p3.2xlarge" && x.AvailabilityZone == "us-east-1a" {
			st = &res.Stats[i]
		}
	}
	if st == nil {
		t.Fatal("no stats for us-east-1 p3.2xlarge us-east-1a")
	}
	twm := (8*0.99 + 14*0.95 + 2*0.918) / 24
	sd := math.Sqrt((8*math.Pow(0.99-twm, 2) + 14*math.Pow(0.95-twm, 2) + 2*math.Pow(0.918-twm, 2)) / 24)
	wantStats := pricing.Stats{
		Region: "us-east-1", InstanceType: "p3.2xlarge", AvailabilityZone: "us-east-1a", ZoneID: "use1-az6",
		From: scanStart, To: scanNow, Samples: 3, Min: 0.918, Max: 0.99, Mean: (0.99 + 0.95 + 0.918) / 3,
		TimeWeightedMean: twm, Volatility: sd / twm, LastPrice: 0.918, LastChange: at(31, 10, 0),
	}
	if diff := cmp.Diff(wantStats, *st, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestScanBadInput(t *testing.T) {
	f := newFakeEC2(t, map[string]*fakeRegion{
		"us-west-2": {
			zones: [][2]string{{"us-west-2a", "usw2-az2"}, {"us-west-2b", "usw2-az1"}},
			records: []fakeRecord{
				rec("g5.xlarge", "us-west-2a", "abc", at(31, 11, 0)),
				rec("g5.xlarge", "us-west-2a", "0.4000", at(31, 9, 0)),
				rec("g5.xlarge", "us-west-2b", "-0.0100", at(31, 11, 0)),
				rec("p3.2xlarge", "us-west-2b", "", at(31, 11, 0)),
				rec("g4dn.xlarge", "us-west-2b", "0", at(31, 11, 0)),
			},
		},
	})
	s := f.scanner(t, []string{"us-west-2"}, &pricing.ScannerOptions{Now: func() time.Time { return scanNow }})
	res, err := s.Scan(context.Background(), pricing.Query{})
	if !errors.Is(err, pricing.ErrInvalidPrice) {
		t.Fatalf("Scan error = %v, want ErrInvalidPrice for the malformed records", err)
	}
	// Only the well-formed record survives: the malformed ones are not
	// zero-priced quotes that would rank first.
	want := []pricing.Quote{{Region: "us-west-2", InstanceType: "g5.xlarge", AvailabilityZone: "us-west-2a", ZoneID: "usw2-az2",
		ProductDescription: "Linux/UNIX", Price: 0.4, Timestamp: at(31, 9, 0)}}
	if diff := cmp.Diff(want, res.Quotes); diff != "" {
		t.Errorf("quotes (-want +got):\n%s", diff)
	}
	var values []string
	for _, e := range res.Errors {
		var re *pricing.RecordError
		if !errors.As(e, &re) || re.Field != "SpotPrice" {
			t.Errorf("error %v: want a *RecordError on SpotPrice", e)
			continue
		}
		values = append(values, re.Value)
	}
	if diff := cmp.Diff([]string{"abc", "-0.0100", "", "0"}, values, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("rejected values (-want +got):\n%s", diff)
	}

	// Unknown regions are refused by name.
	if _, err := s.Scan(context.Background(), pricing.Query{Regions: []string{"us-west-9"}}); !errors.Is(err, pricing.ErrUnknownRegion) || !strings.Contains(err.Error(), "us-west-9") {
		t.Errorf("Scan of a region the scanner lacks: error %v, want ErrUnknownRegion naming it", err)
	}
	for _, bad := range []string{"", "mars", "US-EAST-1", "us-east", "us_east_1"} {
		if _, err := pricing.NewScannerFromConfig(awsConfigForTest(), []string{bad}, nil); !errors.Is(err, pricing.ErrUnknownRegion) {
			t.Errorf("NewScannerFromConfig(%q) error = %v, want ErrUnknownRegion", bad, err)
		}
	}
}

func TestScanCancelled(t *testing.T) {
	f := newFakeEC2(t, scanFixture())
	f.latency = time.Minute // would block far longer than the test if cancel were ignored
	s := f.scanner(t, []string{"us-east-1", "eu-west-1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Scan(ctx, pricing.Query{InstanceTypes: []string{"p3.2xlarge"}})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan after cancel: error %v, want context.Canceled", err)
	}
}

func TestComputeStats(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }
	tests := []struct {
		name    string
		points  []pricing.PricePoint
		from    time.Time
		to      time.Time
		want    pricing.Stats
		wantErr error
	}{
		{
			name:   "constant price has no volatility",
			points: []pricing.PricePoint{{h(-5), 1.5}},
			from:   h(0), to: h(10),
			want: pricing.Stats{From: h(0), To: h(10), Samples: 1, Min: 1.5, Max: 1.5, Mean: 1.5, TimeWeightedMean: 1.5, LastPrice: 1.5, LastChange: h(-5)},
		},
		{
			name: "time weighting, unsorted input, points outside the window dropped",
			points: []pricing.PricePoint{
				{h(9), 3}, {h(-3), 1}, {h(-8), 7}, {h(12), 100}, {h(1), 2},
			},
			from: h(0), to: h(10),
			want: pricing.Stats{From: h(0), To: h(10), Samples: 3, Min: 1, Max: 3, Mean: 2,
				TimeWeightedMean: (1*1 + 8*2 + 1*3) / 10.0,
				Volatility:       math.Sqrt((1*math.Pow(1-2, 2)+8*0+1*math.Pow(3-2, 2))/10) / 2,
				LastPrice:        3, LastChange: h(9)},
		},
		{
			name:   "last change skips repeats",
			points: []pricing.PricePoint{{h(0), 1}, {h(2), 2}, {h(4), 2}},
			from:   h(0), to: h(6),
			want: pricing.Stats{From: h(0), To: h(6), Samples: 3, Min: 1, Max: 2, Mean: 5.0 / 3,
				TimeWeightedMean: (2*1 + 4*2) / 6.0, Volatility: math.Sqrt((2*math.Pow(1-10.0/6, 2)+4*math.Pow(2-10.0/6, 2))/6) / (10.0 / 6),
				LastPrice: 2, LastChange: h(2)},
		},
		{name: "nothing in effect", points: []pricing.PricePoint{{h(11), 1}}, from: h(0), to: h(10), wantErr: pricing.ErrNoData},
		{name: "no points", from: h(0), to: h(10), wantErr: pricing.ErrNoData},
		{name: "zero price", points: []pricing.PricePoint{{h(1), 0}}, from: h(0), to: h(10), wantErr: pricing.ErrInvalidPrice},
		{name: "negative price", points: []pricing.PricePoint{{h(1), -2}}, from: h(0), to: h(10), wantErr: pricing.ErrInvalidPrice},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pricing.ComputeStats(tc.points, tc.from, tc.to)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestScanZoneIDsUnavailable(t *testing.T) {
	f := newFakeEC2(t, map[string]*fakeRegion{
		"us-east-2": {
			zones:    [][2]string{{"us-east-2a", "use2-az1"}},
			failCode: "UnauthorizedOperation", failAction: "DescribeAvailabilityZones",
			records: []fakeRecord{rec("g5.xlarge", "us-east-2a", "0.3800", at(31, 10, 0))},
		},
	})
	s := f.scanner(t, []string{"us-east-2"}, &pricing.ScannerOptions{Now: func() time.Time { return scanNow }})
	res, err := s.Scan(context.Background(), pricing.Query{InstanceTypes: []string{"g5.xlarge"}})
	var re *pricing.RegionError
	if !errors.As(err, &re) || re.Region != "us-east-2" || re.Op != "DescribeAvailabilityZones" {
		t.Fatalf("error %v: want a *RegionError for us-east-2 DescribeAvailabilityZones", err)
	}
	// The prices still count; only the zone id is missing.
	want := []pricing.Quote{{Region: "us-east-2", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-2a", ProductDescription: "Linux/UNIX", Price: 0.38, Timestamp: at(31, 10, 0)}}
	if diff := cmp.Diff(want, res.Quotes); diff != "" {
		t.Errorf("quotes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"us-east-2"}, res.Answered); diff != "" {
		t.Errorf("answered (-want +got):\n%s", diff)
	}
}

func FuzzParsePrice(f *testing.F) {
	for _, s := range []string{"0.9180", "abc", "-1", "", " 1.5 ", "NaN", "Inf", "1e309", "0x1p-2", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := pricing.ParsePrice(s)
		if err != nil {
			if !errors.Is(err, pricing.ErrInvalidPrice) {
				t.Fatalf("ParsePrice(%q) error %v does not wrap ErrInvalidPrice", s, err)
			}
			return
		}
		if !(v > 0) || math.IsInf(v, 0) {
			t.Fatalf("ParsePrice(%q) = %v accepted", s, v)
		}
	})
}

func TestScanConcurrencyBound(t *testing.T) {
	regions := map[string]*fakeRegion{}
	var names []string
	for _, r := range []string{"us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2"} {
		regions[r] = &fakeRegion{zones: [][2]string{{r + "a", r + "-az1"}}, records: []fakeRecord{rec("g5.xlarge", r+"a", "0.4", at(31, 10, 0))}}
		names = append(names, r)
	}
	f := newFakeEC2(t, regions)
	f.latency = 20 * time.Millisecond
	s := f.scanner(t, names, &pricing.ScannerOptions{Concurrency: 2, Now: func() time.Time { return scanNow }})
	res, err := s.Scan(context.Background(), pricing.Query{InstanceTypes: []string{"g5.xlarge"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Quotes) != len(names) {
		t.Errorf("%d quotes, want one per region (%d)", len(res.Quotes), len(names))
	}
	f.mu.Lock()
	peak := f.maxInflight
	f.mu.Unlock()
	t.Logf("peak concurrent DescribeSpotPriceHistory calls: %d (bound 2)", peak)
	if peak > 2 || peak < 1 {
		t.Errorf("peak concurrent DescribeSpotPriceHistory calls = %d, want 1..2 (Concurrency 2)", peak)
	}
}
