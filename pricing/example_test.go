package pricing_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/spotcheck/spotcheck/pricing"
)

func ExampleEstimate() {
	offer := pricing.Offer{
		Region:           "us-east-1",
		InstanceType:     "p3.2xlarge",
		AvailabilityZone: "us-east-1a",
		SpotPrice:        0.918,
		OnDemandPrice:    3.06,
		InterruptionRate: 0.01, // one interruption per 100 node-hours
	}
	job := pricing.Job{
		Work:           100 * time.Hour,
		CheckpointCost: 3 * time.Minute,
		RestartCost:    10 * time.Minute,
		Nodes:          4,
	}
	e, err := pricing.Estimate(offer, job)
	if err != nil {
		panic(err)
	}
	fmt.Printf("interval %v, job rate %.2f/h\n", e.Interval.Round(time.Minute), e.Rate)
	fmt.Printf("wall %.1f h, %.1f interruptions, cost $%.2f\n", e.WallTime.Hours(), e.Interruptions, e.Cost)
	// Output:
	// interval 1h35m0s, job rate 0.04/h
	// wall 107.3 h, 4.3 interruptions, cost $394.16
}

func ExampleRank() {
	offers := []pricing.Offer{
		// Cheapest per hour, but interrupted often.
		{Region: "us-east-1", InstanceType: "p3.2xlarge", AvailabilityZone: "us-east-1a", SpotPrice: 0.90, OnDemandPrice: 3.06, InterruptionRate: 0.05},
		// A little dearer, rarely interrupted.
		{Region: "eu-west-1", InstanceType: "p3.2xlarge", AvailabilityZone: "eu-west-1b", SpotPrice: 0.95, OnDemandPrice: 3.31, InterruptionRate: 0.001},
		// Too expensive for the price cap.
		{Region: "ap-northeast-1", InstanceType: "p3.2xlarge", AvailabilityZone: "ap-northeast-1c", SpotPrice: 1.50, OnDemandPrice: 4.19, InterruptionRate: 0.001},
	}
	job := pricing.Job{Work: 200 * time.Hour, CheckpointCost: 5 * time.Minute, RestartCost: 15 * time.Minute, Nodes: 8}
	ranked, err := pricing.Rank(offers, job, &pricing.RankOptions{MaxPrice: 1.20, OnDemandNodes: []int{0, 2}})
	if err != nil {
		panic(err)
	}
	for _, e := range ranked {
		fmt.Printf("%-32s spot=%d od=%d wall=%5.1fh cost=$%7.2f\n", e.Offer, e.SpotNodes, e.OnDemandNodes, e.WallTime.Hours(), e.Cost)
	}
	// Output:
	// eu-west-1/p3.2xlarge/eu-west-1b  spot=8 od=0 wall=207.9h cost=$1580.06
	// us-east-1/p3.2xlarge/us-east-1a  spot=8 od=0 wall=288.4h cost=$2076.49
	// eu-west-1/p3.2xlarge/eu-west-1b  spot=6 od=2 wall=206.8h cost=$2547.41
	// us-east-1/p3.2xlarge/us-east-1a  spot=6 od=2 wall=271.4h cost=$3126.68
}

func ExampleParseAdvisor() {
	feed := `{
	  "ranges": [
	    {"index": 0, "label": "<5%", "dots": 0, "max": 5},
	    {"index": 1, "label": "5-10%", "dots": 1, "max": 11},
	    {"index": 2, "label": "10-15%", "dots": 2, "max": 16},
	    {"index": 3, "label": "15-20%", "dots": 3, "max": 22},
	    {"index": 4, "label": ">20%", "dots": 4, "max": 100}
	  ],
	  "spot_advisor": {"us-east-1": {"Linux": {"p3.2xlarge": {"s": 70, "r": 3}}}}
	}`
	a, err := pricing.ParseAdvisor(strings.NewReader(feed), nil)
	if err != nil {
		panic(err)
	}
	for _, b := range a.Buckets() {
		fmt.Printf("%-7s p=%.2f/month  rate=%.2e/h  MTBF=%5.0f days\n", b.Label, b.Probability, b.Rate, 1/b.Rate/24)
	}
	e, err := a.Lookup("us-east-1", "Linux", "p3.2xlarge")
	if err != nil {
		panic(err)
	}
	fmt.Printf("p3.2xlarge in us-east-1: %s, saves %d%%\n", e.Bucket.Label, e.Savings)
	// Output:
	// <5%     p=0.05/month  rate=7.03e-05/h  MTBF=  593 days
	// 5-10%   p=0.11/month  rate=1.60e-04/h  MTBF=  261 days
	// 10-15%  p=0.16/month  rate=2.39e-04/h  MTBF=  174 days
	// 15-20%  p=0.22/month  rate=3.40e-04/h  MTBF=  122 days
	// >20%    p=0.30/month  rate=4.89e-04/h  MTBF=   85 days
	// p3.2xlarge in us-east-1: 15-20%, saves 70%
}

// A Scanner over real AWS (this example needs credentials and network, so
// it is compiled but not run).
func ExampleScanner() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		panic(err)
	}
	s, err := pricing.NewScannerFromConfig(cfg, []string{"us-east-1", "us-west-2", "eu-west-1"}, nil)
	if err != nil {
		panic(err)
	}
	res, err := s.Scan(ctx, pricing.Query{InstanceTypes: []string{"p3.2xlarge", "g5.xlarge"}})
	if res == nil {
		panic(err)
	}
	// err, if not nil, names the regions that failed; res holds the rest.
	offers, _ := pricing.Offers(ctx, res.Quotes, &pricing.OfferSources{OnDemand: pricing.NewOnDemandFromConfig(cfg, nil)})
	job := pricing.Job{Work: 48 * time.Hour, CheckpointCost: 2 * time.Minute, RestartCost: 10 * time.Minute, Nodes: 4}
	ranked, _ := pricing.Rank(offers, job, &pricing.RankOptions{MaxPrice: 2})
	for _, e := range ranked {
		fmt.Println(e.Offer, e.Cost, e.WallTime, e.Interval)
	}
}
