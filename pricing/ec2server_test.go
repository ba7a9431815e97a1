package pricing_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/spotcheck/spotcheck/pricing"
)

// fakeEC2 is an httptest server speaking the EC2 Query protocol (form
// encoded POST with Action=..., XML responses) for DescribeSpotPriceHistory,
// DescribeAvailabilityZones and GetSpotPlacementScores. It serves several
// regions at once, telling them apart by the SigV4 credential scope of each
// request, so real *ec2.Client values parse its answers.
type fakeEC2 struct {
	t       testing.TB
	srv     *httptest.Server
	latency time.Duration

	mu       sync.Mutex
	regions  map[string]*fakeRegion
	requests map[string]map[string]int // region -> action -> count
	served   map[string]int            // region -> price records served
	scores   []fakeScore

	inflight, maxInflight int // concurrent DescribeSpotPriceHistory calls
}

type fakeRegion struct {
	zones    [][2]string // name, id
	records  []fakeRecord
	pageSize int    // records per DescribeSpotPriceHistory page (default 1000)
	failCode string // if set, every call answers this EC2 error
	// failAction, if set, limits failCode to that action.
	failAction string
}

type fakeRecord struct {
	itype, zone, price, product string
	ts                          time.Time
}

type fakeScore struct {
	region, zoneID string
	score          int
}

func newFakeEC2(t testing.TB, regions map[string]*fakeRegion) *fakeEC2 {
	f := &fakeEC2{t: t, regions: regions, requests: map[string]map[string]int{}, served: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// scanner returns a Scanner over real EC2 clients pointed at the fake.
func (f *fakeEC2) scanner(t testing.TB, regions []string, opts *pricing.ScannerOptions) *pricing.Scanner {
	t.Helper()
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, nil
		}),
		RetryMaxAttempts: 1,
	}
	s, err := pricing.NewScannerFromConfig(cfg, regions, opts, func(o *ec2.Options) { o.BaseEndpoint = aws.String(f.srv.URL) })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fakeEC2) count(region, action string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[region][action]
}

var scopeRE = regexp.MustCompile(`Credential=[^/]+/[0-9]{8}/([^/]+)/ec2/aws4_request`)

const ec2NS = "http://ec2.amazonaws.com/doc/2016-11-15/"

func (f *fakeEC2) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "EC2 Query requests are POSTs", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m := scopeRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		f.fail(w, http.StatusUnauthorized, "AuthFailure", "no SigV4 credential scope in Authorization header")
		return
	}
	region, action := m[1], r.PostForm.Get("Action")
	if r.PostForm.Get("Version") != "2016-11-15" {
		f.fail(w, http.StatusBadRequest, "InvalidParameterValue", "unexpected Version "+r.PostForm.Get("Version"))
		return
	}
	if action == "DescribeSpotPriceHistory" {
		f.mu.Lock()
		f.inflight++
		f.maxInflight = max(f.maxInflight, f.inflight)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
		}()
	}
	if f.latency > 0 {
		select {
		case <-time.After(f.latency):
		case <-r.Context().Done():
			return
		}
	}
	f.mu.Lock()
	if f.requests[region] == nil {
		f.requests[region] = map[string]int{}
	}
	f.requests[region][action]++
	reg := f.regions[region]
	f.mu.Unlock()
	if reg == nil {
		f.fail(w, http.StatusBadRequest, "InvalidRegion", "region "+region+" is not served")
		return
	}
	if reg.failCode != "" && (reg.failAction == "" || reg.failAction == action) {
		f.fail(w, http.StatusForbidden, reg.failCode, "You are not authorized to perform this operation.")
		return
	}
	switch action {
	case "DescribeSpotPriceHistory":
		f.spotPriceHistory(w, r, region, reg)
	case "DescribeAvailabilityZones":
		type item struct {
			ZoneName   string `xml:"zoneName"`
			ZoneID     string `xml:"zoneId"`
			ZoneState  string `xml:"zoneState"`
			RegionName string `xml:"regionName"`
		}
		resp := struct {
			XMLName   xml.Name `xml:"DescribeAvailabilityZonesResponse"`
			NS        string   `xml:"xmlns,attr"`
			RequestID string   `xml:"requestId"`
			Items     []item   `xml:"availabilityZoneInfo>item"`
		}{NS: ec2NS, RequestID: "req-az"}
		for _, z := range reg.zones {
			resp.Items = append(resp.Items, item{z[0], z[1], "available", region})
		}
		f.write(w, resp)
	case "GetSpotPlacementScores":
		type item struct {
			Region string `xml:"region"`
			ZoneID string `xml:"availabilityZoneId,omitempty"`
			Score  int    `xml:"score"`
		}
		resp := struct {
			XMLName   xml.Name `xml:"GetSpotPlacementScoresResponse"`
			NS        string   `xml:"xmlns,attr"`
			RequestID string   `xml:"requestId"`
			Items     []item   `xml:"spotPlacementScoreSet>item"`
		}{NS: ec2NS, RequestID: "req-sps"}
		single := r.PostForm.Get("SingleAvailabilityZone") == "true"
		f.mu.Lock()
		for _, s := range f.scores {
			if (s.zoneID != "") == single {
				resp.Items = append(resp.Items, item{s.region, s.zoneID, s.score})
			}
		}
		f.mu.Unlock()
		f.write(w, resp)
	default:
		f.fail(w, http.StatusBadRequest, "InvalidAction", "unknown action "+action)
	}
}

// formList reads an EC2 Query list parameter (Name.1, Name.2, ...).
func formList(r *http.Request, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := r.PostForm[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

func (f *fakeEC2) spotPriceHistory(w http.ResponseWriter, r *http.Request, region string, reg *fakeRegion) {
	types := formList(r, "InstanceType")
	products := formList(r, "ProductDescription")
	var start, end time.Time
	var err error
	if v := r.PostForm.Get("StartTime"); v != "" {
		if start, err = time.Parse(time.RFC3339Nano, v); err != nil {
			f.fail(w, http.StatusBadRequest, "InvalidParameterValue", "StartTime: "+err.Error())
			return
		}
	}
	if v := r.PostForm.Get("EndTime"); v != "" {
		if end, err = time.Parse(time.RFC3339Nano, v); err != nil {
			f.fail(w, http.StatusBadRequest, "InvalidParameterValue", "EndTime: "+err.Error())
			return
		}
	}
	// EC2 semantics: the records in [start, end] plus, per (type, zone),
	// the newest one before start (the price in effect at start). The
	// records keep the fixture's order, which is deliberately not sorted.
	type key struct{ t, z string }
	before := map[key]int{}
	var match []int
	for i, rec := range reg.records {
		if len(types) > 0 && !slices.Contains(types, rec.itype) ||
			len(products) > 0 && !slices.Contains(products, rec.product) ||
			!end.IsZero() && rec.ts.After(end) {
			continue
		}
		if !start.IsZero() && rec.ts.Before(start) {
			k := key{rec.itype, rec.zone}
			if j, ok := before[k]; !ok || reg.records[j].ts.Before(rec.ts) {
				before[k] = i
			}
			continue
		}
		match = append(match, i)
	}
	for _, i := range before {
		match = append(match, i)
	}
	slices.Sort(match) // fixture order
	off := 0
	if tok := r.PostForm.Get("NextToken"); tok != "" {
		if off, err = strconv.Atoi(strings.TrimPrefix(tok, "page-")); err != nil || off > len(match) {
			f.fail(w, http.StatusBadRequest, "InvalidNextToken", "bad token "+tok)
			return
		}
	}
	size := reg.pageSize
	if size <= 0 {
		size = 1000
	}
	hi := min(off+size, len(match))
	type item struct {
		InstanceType       string `xml:"instanceType"`
		ProductDescription string `xml:"productDescription"`
		SpotPrice          string `xml:"spotPrice"`
		Timestamp          string `xml:"timestamp"`
		AvailabilityZone   string `xml:"availabilityZone"`
	}
	resp := struct {
		XMLName   xml.Name `xml:"DescribeSpotPriceHistoryResponse"`
		NS        string   `xml:"xmlns,attr"`
		RequestID string   `xml:"requestId"`
		Items     []item   `xml:"spotPriceHistorySet>item"`
		NextToken string   `xml:"nextToken"`
	}{NS: ec2NS, RequestID: "req-sph"}
	for _, i := range match[off:hi] {
		rec := reg.records[i]
		resp.Items = append(resp.Items, item{rec.itype, rec.product, rec.price, rec.ts.UTC().Format("2006-01-02T15:04:05.000Z"), rec.zone})
	}
	if hi < len(match) {
		resp.NextToken = "page-" + strconv.Itoa(hi)
	}
	f.mu.Lock()
	f.served[region] += hi - off
	f.mu.Unlock()
	f.write(w, resp)
}

func (f *fakeEC2) write(w http.ResponseWriter, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		f.t.Errorf("fake EC2: marshal: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	fmt.Fprintf(w, "%s%s", xml.Header, b)
}

func (f *fakeEC2) fail(w http.ResponseWriter, status int, code, msg string) {
	type errXML struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	resp := struct {
		XMLName   xml.Name `xml:"Response"`
		Errors    []errXML `xml:"Errors>Error"`
		RequestID string   `xml:"RequestID"`
	}{Errors: []errXML{{code, msg}}, RequestID: "req-err"}
	b, _ := xml.Marshal(resp)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s%s", xml.Header, b)
}

func awsConfigForTest() aws.Config {
	return aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}, nil
		}),
		RetryMaxAttempts: 1,
	}
}
