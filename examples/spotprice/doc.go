// Command spotprice ranks AWS spot offers by the expected cost of a whole
// job, not by the hourly price.
//
// For every instance type in every region it reads the newest spot price
// per availability zone (DescribeSpotPriceHistory, every page, all regions
// at once), the on-demand price (Price List API) and the interruption
// frequency (Spot Instance Advisor data, -advisor), and estimates what the
// job costs to completion: work plus checkpoints (Young/Daly interval) plus
// the work redone and the restart time after each expected interruption.
//
//	spotprice -types g5.xlarge,p3.2xlarge -regions us-east-1,us-west-2 \
//	    -work 20h -ckpt-cost 90s -restart 5m -advisor spot-advisor-data.json
//
// It uses the standard AWS configuration (environment, shared config, IMDS
// role) and needs ec2:DescribeSpotPriceHistory,
// ec2:DescribeAvailabilityZones and pricing:GetProducts. Without -advisor
// every offer gets the pessimistic interruption rate of the worst bucket,
// labelled "assumed".
//
// Exit status: 0 when offers were ranked (regions or offers that failed are
// reported as warnings on stderr, or in the -json "warnings"), 1 when
// nothing could be ranked, 2 for bad flags.
package main
