// Package pricing finds where a training job is cheapest to finish on spot
// capacity: it reads spot prices from many AWS regions, joins on-demand
// prices and interruption rates, and ranks offers by the expected cost of
// the whole job rather than by the hourly price.
//
// # Spot quotes
//
// A Scanner holds one EC2 client per region (NewScannerFromConfig makes
// them from an aws.Config; anything with the three methods of EC2API will
// do). Scan reads DescribeSpotPriceHistory for every region at once
// (bounded by ScannerOptions.Concurrency), follows every NextToken page,
// filters on a product description (default "Linux/UNIX") and keeps, per
// (region, instance type, availability zone), the price with the newest
// timestamp. The zone id (use1-az4, the same physical zone in every account,
// unlike the zone name) comes from DescribeAvailabilityZones. A region that
// fails is reported as a *RegionError naming it, while the other regions'
// quotes are still returned; malformed records ("abc", "-1", "" as a price)
// are dropped and reported as *RecordError, never read as 0. The scan also
// keeps every price point and summarises each series over the window in
// Stats (min, mean, time-weighted mean, max, volatility as a time-weighted
// coefficient of variation, last change).
//
// # On-demand prices and interruption rates
//
// OnDemand reads on-demand prices from the AWS Price List API (GetProducts
// with instanceType, regionCode, operatingSystem=Linux, tenancy=Shared,
// preInstalledSw=NA, capacitystatus=Used) and caches them for a TTL, so an
// offer's savings are real numbers.
//
// The Spot Instance Advisor feed (spot-advisor-data.json) gives, per region,
// OS and instance type, a bucket of the fraction of spot instances
// interrupted over the last month: <5%, 5-10%, 10-15%, 15-20%, >20% (the
// feed's "max" of each range is 5, 11, 16, 22, 100). This package reads the
// bucket as the monthly probability p that one instance is interrupted,
// takes p at the bucket's upper bound (pessimistic; AdvisorOptions.Midpoint
// takes the middle), caps the open ">20%" bucket at 30%
// (AdvisorOptions.OpenBucketProbability), and assumes interruptions arrive
// as a Poisson process, so the per-node-hour rate is λ = -ln(1-p)/730.
// "<5%" is then λ ≈ 7.0e-5/h (MTBF ≈ 1.6 years); ">20%" λ ≈ 4.9e-4/h
// (MTBF ≈ 85 days). An instance type the feed does not list gets the
// feed's worst rate, never 0.
//
// # Expected cost of the whole job
//
// Estimate models a job of W hours of work on N nodes working in lock step
// (synchronous data parallel): an interruption of any one spot node stops
// the whole job, which restarts from its last checkpoint after R hours. With
// N-k spot nodes (k on-demand nodes never interrupted, a hybrid plan) the
// job is interrupted at rate Λ = (N-k)·λ. The job checkpoints every τ hours
// of work, each checkpoint taking C hours; by default τ is Young's interval
// sqrt(2·C·M) with M = 1/Λ (the first-order Young/Daly optimum). Each
// segment of T = τ+C hours then takes, in expectation,
//
//	E[T] = (1/Λ + R)·(e^{ΛT} − 1)
//
// (the standard result for exponential failures with failure-free
// restarts), the job is floor(W/τ) such segments plus one remainder
// segment, and every node is billed for the whole wall time:
// cost = E[wall] × ((N-k)·spot + k·on-demand). The tests check this
// closed form against a Monte-Carlo simulation of the same job.
//
// Rank estimates a job on every offer and orders the plans by expected cost
// to completion, with filters on the maximum spot price, the minimum
// savings against on-demand and the placement score, and optional hybrid
// plans. Offers that cannot be estimated (no positive price, a negative
// rate) are left out and reported, so bad data never ranks first.
//
// pricing does not import the checkpoint or interrupt packages; the
// interval it computes (Expected.Interval) is a plain time.Duration the
// embedder can hand to checkpoint.
package pricing
