package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAWS answers, on one endpoint, the two APIs spotprice uses:
//   - EC2's Query protocol (form-encoded POST, Action=..., XML answers):
//     DescribeSpotPriceHistory with NextToken paging and
//     DescribeAvailabilityZones; the region is the one the request is
//     signed for (Authorization credential scope).
//   - the Price List API's JSON protocol (awsJson1_1,
//     X-Amz-Target: AWSPriceListService.GetProducts) with on-demand prices.
type fakeAWS struct {
	errorf func(string, ...any)

	spot     map[string][]spotRecord // region -> records, in the order served
	zones    map[string][][2]string  // region -> (zone name, zone id)
	onDemand map[[2]string]float64   // (region, type) -> USD per hour
	fail     map[string]bool         // regions whose EC2 calls fail
	// advisorDoc is served at GET /spot-advisor-data.json.
	advisorDoc string
	pageSize   int

	mu    sync.Mutex
	pages map[string]int // region -> DescribeSpotPriceHistory pages served
}

type spotRecord struct {
	Type, Zone, Price string
	Time              time.Time
}

func newFakeAWS(t *testing.T) (*fakeAWS, *httptest.Server) {
	f := &fakeAWS{
		errorf: t.Errorf, spot: map[string][]spotRecord{}, zones: map[string][][2]string{},
		onDemand: map[[2]string]float64{}, fail: map[string]bool{}, pageSize: 2, pages: map[string]int{},
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

var scopeRE = regexp.MustCompile(`Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request`)

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/spot-advisor-data.json" {
		// The advisor feed is a public S3 object: plain GET, no signature.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, f.advisorDoc)
		return
	}
	m := scopeRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		f.errorf("unsigned request %s %s", r.Method, r.URL)
		http.Error(w, "unsigned", http.StatusForbidden)
		return
	}
	region, service := m[1], m[2]
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		f.serveJSON(w, r, target)
		return
	}
	if service != "ec2" || r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		f.errorf("unexpected request: service %s, %s, Content-Type %q", service, r.Method, r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.fail[region] {
		ec2Error(w, http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials")
		return
	}
	switch action := r.PostForm.Get("Action"); action {
	case "DescribeSpotPriceHistory":
		f.spotPriceHistory(w, region, r.PostForm)
	case "DescribeAvailabilityZones":
		f.availabilityZones(w, region)
	default:
		f.errorf("unexpected EC2 action %q", action)
		ec2Error(w, http.StatusBadRequest, "InvalidAction", action)
	}
}

func ec2Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>req-1</RequestID></Response>`, code, xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// list collects Name.1, Name.2, ... of an EC2 query.
func list(form url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}

func (f *fakeAWS) spotPriceHistory(w http.ResponseWriter, region string, form url.Values) {
	types := list(form, "InstanceType")
	products := list(form, "ProductDescription")
	if len(products) > 0 && !slices.Contains(products, "Linux/UNIX") {
		f.errorf("ProductDescription %v does not ask for Linux/UNIX", products)
	}
	var recs []spotRecord
	for _, rec := range f.spot[region] {
		if len(types) == 0 || slices.Contains(types, rec.Type) {
			recs = append(recs, rec)
		}
	}
	size := f.pageSize
	if mr, err := strconv.Atoi(form.Get("MaxResults")); err == nil && mr > 0 && mr < size {
		size = mr
	}
	start := 0
	if tok := form.Get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if err != nil || n < 0 || n > len(recs) {
			ec2Error(w, http.StatusBadRequest, "InvalidNextToken.Malformed", "bad token "+tok)
			return
		}
		start = n
	}
	end := min(start+size, len(recs))
	f.mu.Lock()
	f.pages[region]++
	f.mu.Unlock()

	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req-2</requestId><spotPriceHistorySet>`)
	for _, rec := range recs[start:end] {
		fmt.Fprintf(&b, `<item><availabilityZone>%s</availabilityZone><instanceType>%s</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>%s</spotPrice><timestamp>%s</timestamp></item>`,
			rec.Zone, rec.Type, xmlEscape(rec.Price), rec.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	b.WriteString(`</spotPriceHistorySet>`)
	if end < len(recs) {
		fmt.Fprintf(&b, `<nextToken>page-%d</nextToken>`, end)
	} else {
		b.WriteString(`<nextToken></nextToken>`)
	}
	b.WriteString(`</DescribeSpotPriceHistoryResponse>`)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	io.WriteString(w, b.String())
}

func (f *fakeAWS) availabilityZones(w http.ResponseWriter, region string) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<DescribeAvailabilityZonesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>req-3</requestId><availabilityZoneInfo>`)
	for _, z := range f.zones[region] {
		fmt.Fprintf(&b, `<item><zoneState>available</zoneState><optInStatus>opt-in-not-required</optInStatus><regionName>%s</regionName><zoneName>%s</zoneName><zoneId>%s</zoneId><zoneType>availability-zone</zoneType></item>`,
			region, z[0], z[1])
	}
	b.WriteString(`</availabilityZoneInfo></DescribeAvailabilityZonesResponse>`)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	io.WriteString(w, b.String())
}

// serveJSON answers AWSPriceListService.GetProducts with one product per
// page, filtered by the TERM_MATCH filters on instanceType and
// regionCode/location it understands.
func (f *fakeAWS) serveJSON(w http.ResponseWriter, r *http.Request, target string) {
	if target != "AWSPriceListService.GetProducts" || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		f.errorf("unexpected JSON request %q, Content-Type %q", target, r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"InvalidParameterException","message":"bad request"}`)
		return
	}
	var in struct {
		ServiceCode string
		Filters     []struct{ Type, Field, Value string }
		NextToken   string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		f.errorf("GetProducts body: %v", err)
		return
	}
	if in.ServiceCode != "AmazonEC2" {
		f.errorf("GetProducts ServiceCode %q, want AmazonEC2", in.ServiceCode)
	}
	var typ, region string
	for _, flt := range in.Filters {
		switch flt.Field {
		case "instanceType":
			typ = flt.Value
		case "regionCode":
			region = flt.Value
		}
	}
	var list []string
	if p, ok := f.onDemand[[2]string{region, typ}]; ok {
		list = append(list, productJSON(region, typ, p))
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	json.NewEncoder(w).Encode(map[string]any{"FormatVersion": "aws_v1", "PriceList": list})
}

// productJSON is one Price List product document with an on-demand term.
func productJSON(region, typ string, usd float64) string {
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"sku":           "SKU" + typ,
			"attributes": map[string]string{
				"instanceType": typ, "regionCode": region, "operatingSystem": "Linux",
				"tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
			},
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				"SKU" + typ + ".JRTCKXETXF": map[string]any{
					"offerTermCode": "JRTCKXETXF",
					"sku":           "SKU" + typ,
					"priceDimensions": map[string]any{
						"SKU" + typ + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
							"unit":         "Hrs",
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(usd, 'f', 10, 64)},
							"description":  fmt.Sprintf("$%.3f per On Demand Linux %s Instance Hour", usd, typ),
						},
					},
				},
			},
		},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}
