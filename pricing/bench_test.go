package pricing_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spotcheck/spotcheck/pricing"
)

var benchRegions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
	"eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1",
	"ap-south-1", "ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2",
}

// benchFake serves every bench region with two zones and a few records, each
// request delayed by latency.
func benchFake(b *testing.B, latency time.Duration) *fakeEC2 {
	regions := map[string]*fakeRegion{}
	ts := scanNow.Add(-time.Hour)
	for _, r := range benchRegions {
		regions[r] = &fakeRegion{
			zones: [][2]string{{r + "a", r + "-az1"}, {r + "b", r + "-az2"}},
			records: []fakeRecord{
				rec("p3.2xlarge", r+"a", "0.9180", ts),
				rec("p3.2xlarge", r+"b", "0.9300", ts.Add(-time.Hour)),
				rec("g5.xlarge", r+"a", "0.4100", ts),
			},
		}
	}
	f := newFakeEC2(b, regions)
	f.latency = latency
	return f
}

func benchScan(b *testing.B, s *pricing.Scanner, regions []string) {
	q := pricing.Query{InstanceTypes: []string{"p3.2xlarge", "g5.xlarge"}, Regions: regions}
	for b.Loop() {
		res, err := s.Scan(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Answered) != len(regions) {
			b.Fatalf("%d regions answered, want %d", len(res.Answered), len(regions))
		}
	}
}

// BenchmarkScan compares scanning 16 regions with 200 ms injected latency
// per request against scanning one region (the baseline), and against a
// sequential scan (Concurrency 1). Report the ns/op ratios: concurrent 16
// regions / 1 region should be <= 1.5; sequential would be about 16.
func BenchmarkScan(b *testing.B) {
	const latency = 200 * time.Millisecond
	opts := &pricing.ScannerOptions{Now: func() time.Time { return scanNow }}
	for _, bc := range []struct {
		name        string
		regions     []string
		concurrency int
	}{
		{"regions=1", benchRegions[:1], 0},
		{"regions=16", benchRegions, 0},
		{"regions=16/sequential", benchRegions, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := benchFake(b, latency)
			o := *opts
			o.Concurrency = bc.concurrency
			s := f.scanner(b, benchRegions, &o)
			benchScan(b, s, bc.regions)
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scan")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(latency.Nanoseconds()), "latencies/scan")
		})
	}
}

// BenchmarkRank ranks 1,000 offers (no I/O): the cost of Estimate itself.
func BenchmarkRank(b *testing.B) {
	offers := make([]pricing.Offer, 1000)
	for i := range offers {
		offers[i] = pricing.Offer{Region: "us-east-1", InstanceType: fmt.Sprintf("t%d", i), SpotPrice: 0.5 + float64(i%97)/100,
			OnDemandPrice: 3, InterruptionRate: float64(i%13) / 1000}
	}
	job := pricing.Job{Work: 100 * time.Hour, CheckpointCost: 5 * time.Minute, RestartCost: 10 * time.Minute, Nodes: 8}
	for b.Loop() {
		if _, err := pricing.Rank(offers, job, &pricing.RankOptions{OnDemandNodes: []int{0, 2}}); err != nil {
			b.Fatal(err)
		}
	}
}
