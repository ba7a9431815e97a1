package pricing_test

import (
	"fmt"
	"time"

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
