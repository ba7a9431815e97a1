package pricing_test

import (
	stdcmp "cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotcheck/spotcheck/pricing"
)

func names(es []pricing.Expected) []string {
	var out []string
	for _, e := range es {
		s := e.Offer.String()
		if e.OnDemandNodes > 0 {
			s += "+od" + strconv.Itoa(e.OnDemandNodes)
		}
		out = append(out, s)
	}
	return out
}

func TestRank(t *testing.T) {
	flaky := pricing.Offer{Region: "us-east-1", InstanceType: "p3.2xlarge", AvailabilityZone: "us-east-1a", SpotPrice: 0.80, OnDemandPrice: 3.06, InterruptionRate: 0.08, PlacementScore: 3}
	steady := pricing.Offer{Region: "eu-west-1", InstanceType: "p3.2xlarge", AvailabilityZone: "eu-west-1b", SpotPrice: 0.95, OnDemandPrice: 3.31, InterruptionRate: 0.001, PlacementScore: 9}
	pricey := pricing.Offer{Region: "ap-northeast-1", InstanceType: "p3.2xlarge", AvailabilityZone: "ap-northeast-1c", SpotPrice: 2.90, OnDemandPrice: 3.00, InterruptionRate: 0.0001}
	noOD := pricing.Offer{Region: "us-west-2", InstanceType: "p3.2xlarge", AvailabilityZone: "us-west-2a", SpotPrice: 1.00, InterruptionRate: 0.002}
	offers := []pricing.Offer{flaky, steady, pricey, noOD}
	job := pricing.Job{Work: 200 * time.Hour, CheckpointCost: 10 * time.Minute, RestartCost: 30 * time.Minute, Nodes: 8}

	tests := []struct {
		name string
		opts *pricing.RankOptions
		want []string
	}{
		{"by expected cost, not hourly price", nil,
			[]string{steady.String(), noOD.String(), flaky.String(), pricey.String()}},
		{"max price", &pricing.RankOptions{MaxPrice: 0.96},
			[]string{steady.String(), flaky.String()}},
		{"min savings drops unknown on-demand", &pricing.RankOptions{MinSavings: 0.5},
			[]string{steady.String(), flaky.String()}},
		{"min placement score keeps unknown", &pricing.RankOptions{MinPlacementScore: 5},
			[]string{steady.String(), noOD.String(), pricey.String()}},
		{"hybrid plans, limit", &pricing.RankOptions{OnDemandNodes: []int{0, 4}, Limit: 3},
			[]string{steady.String(), noOD.String(), flaky.String()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pricing.Rank(offers, job, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("ranking (-want +got):\n%s", diff)
			}
			if !slices.IsSortedFunc(got, func(a, b pricing.Expected) int { return stdcmp.Compare(a.Cost, b.Cost) }) {
				t.Errorf("not sorted by expected cost: %v", got)
			}
			for _, e := range got {
				want, err := pricing.Estimate(e.Offer, pricing.Job{Work: job.Work, CheckpointCost: job.CheckpointCost, RestartCost: job.RestartCost, Nodes: job.Nodes, OnDemandNodes: e.OnDemandNodes})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, e); diff != "" {
					t.Errorf("ranked plan differs from Estimate (-estimate +ranked):\n%s", diff)
				}
			}
		})
	}

	// The cheapest hourly price is not the cheapest job: that is the point.
	got, _ := pricing.Rank(offers, job, nil)
	if got[0].Offer.SpotPrice <= flaky.SpotPrice {
		t.Errorf("the first plan has the lowest hourly price; the test data should show expected cost winning")
	}

	// Hybrid plans appear for offers with an on-demand price only.
	all, err := pricing.Rank(offers, job, &pricing.RankOptions{OnDemandNodes: []int{0, 4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 {
		t.Errorf("%d plans, want 4 all-spot + 3 hybrid (noOD has no on-demand price): %v", len(all), names(all))
	}
	for _, e := range all {
		if e.OnDemandNodes == 4 && e.Offer.OnDemandPrice == 0 {
			t.Errorf("hybrid plan without an on-demand price: %v", e.Offer)
		}
	}
}

func TestRankBadOffersNeverRankFirst(t *testing.T) {
	good := pricing.Offer{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1b", SpotPrice: 0.41, OnDemandPrice: 1.006, InterruptionRate: 0.001}
	bad := []pricing.Offer{
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1a", SpotPrice: 0, InterruptionRate: 0.001},
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1c", SpotPrice: -0.1, InterruptionRate: 0.001},
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1d", SpotPrice: math.NaN(), InterruptionRate: 0.001},
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1e", SpotPrice: 0.1, InterruptionRate: -1},
	}
	job := pricing.Job{Work: 10 * time.Hour, CheckpointCost: time.Minute, RestartCost: time.Minute}
	got, err := pricing.Rank(append(slices.Clone(bad), good), job, nil)
	if diff := cmp.Diff([]string{good.String()}, names(got)); diff != "" {
		t.Errorf("ranking (-want +got):\n%s", diff)
	}
	if !errors.Is(err, pricing.ErrInvalidOffer) {
		t.Fatalf("error = %v, want ErrInvalidOffer", err)
	}
	for _, b := range bad {
		if !strings.Contains(err.Error(), b.AvailabilityZone) {
			t.Errorf("error %q does not name the bad offer in %s", err, b.AvailabilityZone)
		}
	}

	for _, tc := range []struct {
		name string
		job  pricing.Job
		opts *pricing.RankOptions
	}{
		{"no work", pricing.Job{}, nil},
		{"savings above 1", job, &pricing.RankOptions{MinSavings: 2}},
		{"negative max price", job, &pricing.RankOptions{MaxPrice: -1}},
		{"hybrid plan beyond nodes", job, &pricing.RankOptions{OnDemandNodes: []int{3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := pricing.Rank([]pricing.Offer{good}, tc.job, tc.opts); !errors.Is(err, pricing.ErrInvalidJob) || got != nil {
				t.Errorf("Rank = %v, %v; want nil, ErrInvalidJob", got, err)
			}
		})
	}
}

func TestOffersJoin(t *testing.T) {
	adv, err := pricing.ParseAdvisor(strings.NewReader(advisorFeed), nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := scanNow.Add(-time.Hour)
	quotes := []pricing.Quote{
		{Region: "us-east-1", InstanceType: "p3.2xlarge", AvailabilityZone: "us-east-1a", ZoneID: "use1-az6", Price: 0.918, Timestamp: ts},
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1b", ZoneID: "use1-az1", Price: 0.41, Timestamp: ts},
		{Region: "eu-west-1", InstanceType: "g5.xlarge", AvailabilityZone: "eu-west-1a", ZoneID: "euw1-az3", Price: 0.5, Timestamp: ts},
	}
	src := &pricing.OfferSources{
		OnDemand: pricing.OnDemandTable{"us-east-1": {"p3.2xlarge": 3.06, "g5.xlarge": 1.006}},
		Advisor:  adv,
		Placement: []pricing.PlacementScore{
			{Region: "us-east-1", Score: 5},
			{Region: "us-east-1", ZoneID: "use1-az6", Score: 8},
		},
	}
	got, err := pricing.Offers(context.Background(), quotes, src)
	bs := adv.Buckets()
	want := []pricing.Offer{
		{Region: "us-east-1", InstanceType: "p3.2xlarge", AvailabilityZone: "us-east-1a", ZoneID: "use1-az6", SpotPrice: 0.918, OnDemandPrice: 3.06,
			InterruptionRate: bs[3].Rate, InterruptionLabel: "15-20%", PlacementScore: 8, Timestamp: ts},
		{Region: "us-east-1", InstanceType: "g5.xlarge", AvailabilityZone: "us-east-1b", ZoneID: "use1-az1", SpotPrice: 0.41, OnDemandPrice: 1.006,
			InterruptionRate: bs[0].Rate, InterruptionLabel: "<5%", PlacementScore: 5, Timestamp: ts},
		// Neither an on-demand price nor an advisor entry: savings unknown,
		// and the worst bucket's rate, never 0.
		{Region: "eu-west-1", InstanceType: "g5.xlarge", AvailabilityZone: "eu-west-1a", ZoneID: "euw1-az3", SpotPrice: 0.5,
			InterruptionRate: adv.WorstRate(), InterruptionLabel: "assumed worst", Timestamp: ts},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("offers (-want +got):\n%s", diff)
	}
	if !errors.Is(err, pricing.ErrNoData) || !strings.Contains(err.Error(), "eu-west-1") {
		t.Errorf("error = %v, want ErrNoData naming eu-west-1", err)
	}
	if s, ok := got[0].Savings(); !ok || math.Abs(s-(1-0.918/3.06)) > 1e-12 {
		t.Errorf("savings = %v, %v", s, ok)
	}
	if _, ok := got[2].Savings(); ok {
		t.Errorf("savings known without an on-demand price")
	}

	bare, err := pricing.Offers(context.Background(), quotes[:1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if bare[0].InterruptionRate != pricing.DefaultMissingRate || bare[0].InterruptionRate == 0 {
		t.Errorf("rate without advisor = %v, want DefaultMissingRate %v", bare[0].InterruptionRate, pricing.DefaultMissingRate)
	}
}

func TestPlacementScores(t *testing.T) {
	f := newFakeEC2(t, scanFixture())
	f.scores = []fakeScore{{"us-east-1", "", 7}, {"eu-west-1", "", 9}, {"us-east-1", "use1-az6", 8}, {"us-east-1", "use1-az1", 3}}
	s := f.scanner(t, []string{"us-east-1", "eu-west-1"}, nil)
	got, err := s.PlacementScores(context.Background(), pricing.PlacementQuery{InstanceTypes: []string{"p3.2xlarge"}, TargetCapacity: 8, PerZone: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []pricing.PlacementScore{{Region: "us-east-1", ZoneID: "use1-az6", Score: 8}, {Region: "us-east-1", ZoneID: "use1-az1", Score: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-zone scores (-want +got):\n%s", diff)
	}
	got, err = s.PlacementScores(context.Background(), pricing.PlacementQuery{InstanceTypes: []string{"p3.2xlarge"}, TargetCapacity: 8})
	if err != nil {
		t.Fatal(err)
	}
	want = []pricing.PlacementScore{{Region: "us-east-1", Score: 7}, {Region: "eu-west-1", Score: 9}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("regional scores (-want +got):\n%s", diff)
	}
	if n := f.count("us-east-1", "GetSpotPlacementScores"); n != 2 {
		t.Errorf("%d GetSpotPlacementScores calls through us-east-1, want 2", n)
	}
	if _, err := s.PlacementScores(context.Background(), pricing.PlacementQuery{InstanceTypes: []string{"p3.2xlarge"}}); err == nil {
		t.Error("PlacementScores without a target capacity: no error")
	}
}
