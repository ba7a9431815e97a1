package pricing_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/spotcheck/spotcheck/pricing"
)

// This file ports the seed tutorial's SpotPriceOptimizer (Python, boto3)
// line by line, runs it and our Scanner on the same EC2 data, and shows
// where the seed goes wrong. The Python under port:
//
//	def get_spot_prices(self, regions, hours_back=24):
//	    end_time = datetime.utcnow()
//	    start_time = end_time - timedelta(hours=hours_back)
//	    price_data = {}
//	    for region in regions:
//	        ec2_regional = boto3.client('ec2', region_name=region)
//	        try:
//	            response = ec2_regional.describe_spot_price_history(
//	                InstanceTypes=self.instance_types, ProductDescriptions=['Linux/UNIX'],
//	                StartTime=start_time, EndTime=end_time)
//	            price_data[region] = response['SpotPriceHistory']        # first page only
//	        except Exception as e:
//	            print(f"Error fetching prices for {region}: {e}")
//	    return price_data
//
//	def find_best_option(self, regions, max_price=None):
//	    price_data = self.get_spot_prices(regions)
//	    best_options = []
//	    for region, prices in price_data.items():
//	        if not prices: continue
//	        latest_prices = {}
//	        for price_entry in prices:
//	            instance_type = price_entry['InstanceType']            # keyed by type alone
//	            spot_price = float(price_entry['SpotPrice'])
//	            if instance_type not in latest_prices:
//	                latest_prices[instance_type] = spot_price
//	            elif price_entry['Timestamp'] > latest_prices[instance_type]:   # timestamp vs price
//	                latest_prices[instance_type] = spot_price
//	        for instance_type, price in latest_prices.items():
//	            if max_price is None or price <= max_price:
//	                best_options.append({'region': region, 'instance_type': instance_type, 'price': price,
//	                    'availability_zone': price_entry['AvailabilityZone']})   # last record's zone
//	    return sorted(best_options, key=lambda x: x['price'])

type seedOption struct {
	Region, InstanceType, AvailabilityZone string
	Price                                  float64
}

// seedGreater is the seed's `price_entry['Timestamp'] > latest_prices[t]`.
type seedGreater func(ts time.Time, price float64) (bool, error)

// python3Greater is what CPython 3 does: datetime > float raises.
func python3Greater(time.Time, float64) (bool, error) {
	return false, errors.New("TypeError: '>' not supported between instances of 'datetime.datetime' and 'float'")
}

// numericGreater is the line's logic where it does not raise (a language
// that compares the timestamp as a number, epoch seconds ~1.7e9): it is
// always true, so the last record read wins whatever its time.
func numericGreater(ts time.Time, price float64) (bool, error) {
	return float64(ts.Unix()) > price, nil
}

type seedRegionPrices struct {
	region string
	prices []ec2types.SpotPrice
}

func seedGetSpotPrices(ctx context.Context, clients map[string]*ec2.Client, regions, instanceTypes []string, now time.Time) []seedRegionPrices {
	end := now
	start := end.Add(-24 * time.Hour)
	var out []seedRegionPrices
	for _, region := range regions {
		its := make([]ec2types.InstanceType, len(instanceTypes))
		for i, t := range instanceTypes {
			its[i] = ec2types.InstanceType(t)
		}
		resp, err := clients[region].DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
			InstanceTypes: its, ProductDescriptions: []string{"Linux/UNIX"},
			StartTime: aws.Time(start), EndTime: aws.Time(end),
		})
		if err != nil {
			continue // print(f"Error fetching prices for {region}: {e}")
		}
		out = append(out, seedRegionPrices{region, resp.SpotPriceHistory})
	}
	return out
}

func seedFindBestOption(priceData []seedRegionPrices, maxPrice *float64, greater seedGreater) ([]seedOption, error) {
	var best []seedOption
	for _, rp := range priceData {
		if len(rp.prices) == 0 {
			continue
		}
		type kv struct {
			k string
			v float64
		}
		var latest []kv // a Python dict: insertion ordered
		find := func(k string) int {
			return slices.IndexFunc(latest, func(e kv) bool { return e.k == k })
		}
		var priceEntry ec2types.SpotPrice
		for _, priceEntry = range rp.prices {
			instanceType := string(priceEntry.InstanceType)
			spotPrice, err := strconv.ParseFloat(aws.ToString(priceEntry.SpotPrice), 64)
			if err != nil {
				return nil, fmt.Errorf("ValueError: could not convert string to float: %q", aws.ToString(priceEntry.SpotPrice))
			}
			if i := find(instanceType); i < 0 {
				latest = append(latest, kv{instanceType, spotPrice})
			} else {
				gt, err := greater(aws.ToTime(priceEntry.Timestamp), latest[i].v)
				if err != nil {
					return nil, err
				}
				if gt {
					latest[i].v = spotPrice
				}
			}
		}
		for _, e := range latest {
			if maxPrice == nil || e.v <= *maxPrice {
				best = append(best, seedOption{Region: rp.region, InstanceType: e.k, Price: e.v, AvailabilityZone: aws.ToString(priceEntry.AvailabilityZone)})
			}
		}
	}
	slices.SortStableFunc(best, func(a, b seedOption) int { return cmp.Compare(a.Price, b.Price) })
	return best, nil
}

func ourBestOptions(t *testing.T, s *pricing.Scanner, types []string) []seedOption {
	t.Helper()
	res, err := s.Scan(context.Background(), pricing.Query{InstanceTypes: types})
	if err != nil {
		t.Fatalf("our scan: %v", err)
	}
	var out []seedOption
	for _, q := range res.Quotes {
		out = append(out, seedOption{Region: q.Region, InstanceType: q.InstanceType, AvailabilityZone: q.AvailabilityZone, Price: q.Price})
	}
	slices.SortStableFunc(out, func(a, b seedOption) int { return cmp.Compare(a.Price, b.Price) })
	return out
}

func TestSeedOptimizerBugs(t *testing.T) {
	now := scanNow
	h := func(hoursAgo float64) time.Time { return now.Add(-time.Duration(hoursAgo * float64(time.Hour))) }
	zones := [][2]string{{"us-east-1a", "use1-az6"}, {"us-east-1b", "use1-az1"}}
	tests := []struct {
		name     string
		bug      string
		region   *fakeRegion
		types    []string
		greater  seedGreater
		wantSeed []seedOption // what the seed port answers (nil with seedErr)
		seedErr  bool
		want     []seedOption // the right answer, from the data
	}{
		{
			name: "1 timestamp compared with a price (Python 3)", bug: "elif price_entry['Timestamp'] > latest_prices[...] raises",
			region: &fakeRegion{zones: zones, records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.9180", h(1)),
				rec("p3.2xlarge", "us-east-1a", "1.4000", h(20)),
			}},
			types: []string{"p3.2xlarge"}, greater: python3Greater, seedErr: true,
			want: []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1a", 0.918}},
		},
		{
			name: "1 timestamp compared with a price (as numbers)", bug: "timestamp > price is always true: the last record wins, not the newest",
			region: &fakeRegion{zones: zones, records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.9180", h(1)),
				rec("p3.2xlarge", "us-east-1a", "1.4000", h(20)),
			}},
			types: []string{"p3.2xlarge"}, greater: numericGreater,
			wantSeed: []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1a", 1.4}},
			want:     []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1a", 0.918}},
		},
		{
			name: "2 zone of whatever record came last", bug: "availability_zone=price_entry[...] after the loop",
			region: &fakeRegion{zones: zones, records: []fakeRecord{
				rec("g5.xlarge", "us-east-1a", "0.4100", h(2)),
				rec("p3.2xlarge", "us-east-1b", "0.9500", h(3)),
			}},
			types: []string{"g5.xlarge", "p3.2xlarge"}, greater: python3Greater, // no repeated type: Python 3 runs it
			wantSeed: []seedOption{{"us-east-1", "g5.xlarge", "us-east-1b", 0.41}, {"us-east-1", "p3.2xlarge", "us-east-1b", 0.95}},
			want:     []seedOption{{"us-east-1", "g5.xlarge", "us-east-1a", 0.41}, {"us-east-1", "p3.2xlarge", "us-east-1b", 0.95}},
		},
		{
			name: "3 prices keyed by type alone across zones", bug: "latest_prices[instance_type]: one price per type per region",
			region: &fakeRegion{zones: zones, records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.7000", h(2)),
				rec("p3.2xlarge", "us-east-1b", "1.1000", h(1)),
			}},
			types: []string{"p3.2xlarge"}, greater: numericGreater, // Python 3 raises here (bug 1)
			wantSeed: []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1b", 1.1}},
			want:     []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1a", 0.7}, {"us-east-1", "p3.2xlarge", "us-east-1b", 1.1}},
		},
		{
			name: "3 prices keyed by type alone across zones (Python 3)", bug: "a type seen in a second zone reaches the comparison and raises",
			region: &fakeRegion{zones: zones, records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.7000", h(2)),
				rec("p3.2xlarge", "us-east-1b", "1.1000", h(1)),
			}},
			types: []string{"p3.2xlarge"}, greater: python3Greater, seedErr: true,
			want: []seedOption{{"us-east-1", "p3.2xlarge", "us-east-1a", 0.7}, {"us-east-1", "p3.2xlarge", "us-east-1b", 1.1}},
		},
		{
			name: "4 pagination ignored", bug: "response['SpotPriceHistory'] is the first page only",
			region: &fakeRegion{zones: zones, pageSize: 2, records: []fakeRecord{
				rec("p3.2xlarge", "us-east-1a", "0.9500", h(2)),
				rec("g5.xlarge", "us-east-1a", "0.4500", h(2)),
				rec("g4dn.xlarge", "us-east-1a", "0.2000", h(2)), // page 2: the cheapest
			}},
			types: []string{"p3.2xlarge", "g5.xlarge", "g4dn.xlarge"}, greater: python3Greater,
			wantSeed: []seedOption{{"us-east-1", "g5.xlarge", "us-east-1a", 0.45}, {"us-east-1", "p3.2xlarge", "us-east-1a", 0.95}},
			want: []seedOption{{"us-east-1", "g4dn.xlarge", "us-east-1a", 0.2}, {"us-east-1", "g5.xlarge", "us-east-1a", 0.45},
				{"us-east-1", "p3.2xlarge", "us-east-1a", 0.95}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEC2(t, map[string]*fakeRegion{"us-east-1": tc.region})
			client := ec2.NewFromConfig(awsConfigForTest(), func(o *ec2.Options) { o.BaseEndpoint = aws.String(f.srv.URL) })
			data := seedGetSpotPrices(context.Background(), map[string]*ec2.Client{"us-east-1": client}, []string{"us-east-1"}, tc.types, now)
			seed, seedErr := seedFindBestOption(data, nil, tc.greater)
			ours := ourBestOptions(t, f.scanner(t, []string{"us-east-1"}, &pricing.ScannerOptions{Now: func() time.Time { return now }}), tc.types)

			if diff := gocmp.Diff(tc.want, ours); diff != "" {
				t.Errorf("our answer (-right +ours):\n%s", diff)
			}
			if tc.seedErr {
				if seedErr == nil {
					t.Fatalf("seed answered %v, want it to raise", seed)
				}
				t.Logf("%s: seed raises %v; we answer %v", tc.bug, seedErr, ours)
				return
			}
			if seedErr != nil {
				t.Fatalf("seed port: %v", seedErr)
			}
			if diff := gocmp.Diff(tc.wantSeed, seed); diff != "" {
				t.Errorf("seed port's answer (-expected +got):\n%s", diff)
			}
			if gocmp.Equal(seed, ours) {
				t.Errorf("%s: seed and ours agree (%v); the bug is not shown", tc.bug, ours)
			}
			t.Logf("%s:\n  seed: %v\n  ours: %v", tc.bug, seed, ours)
		})
	}
}
