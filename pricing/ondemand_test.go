package pricing_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/spotcheck/spotcheck/pricing"
)

// priceListDoc builds one Price List product document the way GetProducts
// returns it (a JSON string per product).
func priceListDoc(sku string, attrs map[string]string, usd string) string {
	doc := map[string]any{
		"product":     map[string]any{"productFamily": "Compute Instance", "attributes": attrs, "sku": sku},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + ".JRTCKXETXF": map[string]any{
					"priceDimensions": map[string]any{
						sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
							"unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": []string{},
							"description":  "$" + usd + " per On Demand Linux " + attrs["instanceType"] + " Instance Hour",
							"rateCode":     sku + ".JRTCKXETXF.6YS6EN2CT7",
							"pricePerUnit": map[string]string{"USD": usd},
						},
					},
					"sku": sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": "JRTCKXETXF", "termAttributes": map[string]any{},
				},
			},
			"Reserved": map[string]any{},
		},
		"version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z",
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func ec2Attrs(itype, region, capacity, preinstalled string) map[string]string {
	return map[string]string{
		"instanceType": itype, "regionCode": region, "operatingSystem": "Linux", "tenancy": "Shared",
		"preInstalledSw": preinstalled, "capacitystatus": capacity, "licenseModel": "No License required",
		"servicecode": "AmazonEC2", "location": "somewhere", "operation": "RunInstances",
	}
}

// fakePriceList speaks the awsJson1_1 protocol of the AWS Price List API
// (POST /, X-Amz-Target: AWSPriceListService.GetProducts) and applies the
// TERM_MATCH filters to its catalogue, one product per page.
type fakePriceList struct {
	srv      *httptest.Server
	docs     []string
	mu       sync.Mutex
	requests int
}

func newFakePriceList(t testing.TB, docs []string) *fakePriceList {
	f := &fakePriceList{docs: docs}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail := func(status int, typ, msg string) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"__type": typ, "Message": msg})
		}
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSPriceListService.GetProducts" {
			fail(http.StatusBadRequest, "InvalidParameterException", "unexpected "+r.Method+" "+r.Header.Get("X-Amz-Target"))
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
			fail(http.StatusBadRequest, "InvalidParameterException", "content type "+ct)
			return
		}
		var in struct {
			ServiceCode, FormatVersion, NextToken string
			Filters                               []struct{ Field, Type, Value string }
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			fail(http.StatusBadRequest, "InvalidParameterException", err.Error())
			return
		}
		f.mu.Lock()
		f.requests++
		f.mu.Unlock()
		if in.ServiceCode != "AmazonEC2" {
			fail(http.StatusBadRequest, "InvalidParameterException", "service "+in.ServiceCode)
			return
		}
		var match []string
		for _, d := range f.docs {
			var doc struct {
				Product struct{ Attributes map[string]string } `json:"product"`
			}
			if err := json.Unmarshal([]byte(d), &doc); err != nil {
				match = append(match, d) // a malformed document is served as is
				continue
			}
			ok := true
			for _, flt := range in.Filters {
				if flt.Type != "TERM_MATCH" {
					fail(http.StatusBadRequest, "InvalidParameterException", "filter type "+flt.Type)
					return
				}
				ok = ok && strings.EqualFold(doc.Product.Attributes[flt.Field], flt.Value)
			}
			if ok {
				match = append(match, d)
			}
		}
		off := 0
		if in.NextToken != "" {
			off, _ = strconv.Atoi(in.NextToken)
		}
		out := map[string]any{"FormatVersion": "aws_v1", "PriceList": []string{}}
		if off < len(match) {
			out["PriceList"] = match[off : off+1]
			if off+1 < len(match) {
				out["NextToken"] = strconv.Itoa(off + 1)
			}
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePriceList) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

func TestOnDemandPrice(t *testing.T) {
	f := newFakePriceList(t, []string{
		priceListDoc("SKU1", ec2Attrs("p3.2xlarge", "us-east-1", "Used", "NA"), "3.0600000000"),
		priceListDoc("SKU2", ec2Attrs("p3.2xlarge", "us-east-1", "UnusedCapacityReservation", "NA"), "3.0600000000"),
		priceListDoc("SKU3", ec2Attrs("p3.2xlarge", "us-east-1", "Used", "SQL Web"), "3.1400000000"),
		priceListDoc("SKU4", ec2Attrs("p3.2xlarge", "eu-west-1", "Used", "NA"), "3.3050000000"),
		priceListDoc("SKU5", ec2Attrs("g5.xlarge", "us-east-1", "Used", "NA"), "1.0060000000"),
		priceListDoc("SKU6", ec2Attrs("g5.xlarge", "us-east-1", "Used", "NA"), "1.0060000000"), // a duplicate product: second page
		priceListDoc("SKU7", ec2Attrs("m5.large", "us-east-1", "Used", "NA"), "abc"),
		priceListDoc("SKU8", ec2Attrs("m5.xlarge", "us-east-1", "Used", "NA"), "-0.192"),
	})
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	cfg := awsConfigForTest()
	cfg.Region = "eu-west-3" // not a Price List region: replaced by us-east-1
	od := pricing.NewOnDemandFromConfig(cfg, &pricing.OnDemandOptions{TTL: time.Hour, Now: clock},
		func(o *awspricing.Options) { o.BaseEndpoint = aws.String(f.srv.URL) })
	ctx := context.Background()

	tests := []struct {
		region, itype string
		want          float64
		wantErr       error
	}{
		{"us-east-1", "p3.2xlarge", 3.06, nil},
		{"eu-west-1", "p3.2xlarge", 3.305, nil},
		{"us-east-1", "g5.xlarge", 1.006, nil},
		{"us-east-1", "m5.large", 0, pricing.ErrInvalidPrice},
		{"us-east-1", "m5.xlarge", 0, pricing.ErrInvalidPrice},
		{"us-east-1", "x9.huge", 0, pricing.ErrNoData},
		{"us-east-99x", "p3.2xlarge", 0, pricing.ErrUnknownRegion},
	}
	for _, tc := range tests {
		t.Run(tc.region+"/"+tc.itype, func(t *testing.T) {
			got, err := od.OnDemandPrice(ctx, tc.region, tc.itype)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("OnDemandPrice = %v, %v; want error %v", got, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.itype) && !strings.Contains(err.Error(), tc.region) {
				t.Errorf("error %q names neither the type nor the region", err)
			}
			if got != tc.want {
				t.Errorf("OnDemandPrice = %v, want %v", got, tc.want)
			}
		})
	}

	// Cached within the TTL, fetched again after it.
	before := f.count()
	if _, err := od.OnDemandPrice(ctx, "us-east-1", "p3.2xlarge"); err != nil {
		t.Fatal(err)
	}
	if got := f.count() - before; got != 0 {
		t.Errorf("%d requests for a cached price, want 0", got)
	}
	now = now.Add(61 * time.Minute)
	if _, err := od.OnDemandPrice(ctx, "us-east-1", "g5.xlarge"); err != nil {
		t.Fatal(err)
	}
	if got := f.count() - before; got != 2 {
		t.Errorf("%d requests after the TTL for a two-page product, want 2 (every page)", got)
	}
}

func TestParsePriceListDocument(t *testing.T) {
	good := priceListDoc("SKU1", ec2Attrs("p3.2xlarge", "us-east-1", "Used", "NA"), "3.0600000000")
	p, err := pricing.ParsePriceListDocument([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if want := (pricing.PriceListProduct{SKU: "SKU1", InstanceType: "p3.2xlarge", RegionCode: "us-east-1", OperatingSystem: "Linux", Tenancy: "Shared", USDPerHour: 3.06}); p != want {
		t.Errorf("parsed %+v, want %+v", p, want)
	}
	for _, tc := range []struct{ name, doc, mention string }{
		{"not JSON", `{`, "price list document"},
		{"no product", `{"terms": {}}`, `"product"`},
		{"no instance type", `{"product": {"sku": "X", "attributes": {}}, "terms": {"OnDemand": {}}}`, "instanceType"},
		{"no OnDemand terms", `{"product": {"sku": "X", "attributes": {"instanceType": "m5.large"}}, "terms": {"Reserved": {}}}`, "terms.OnDemand"},
		{"no hourly dimension", `{"product": {"sku": "X", "attributes": {"instanceType": "m5.large"}}, "terms": {"OnDemand": {"X.A": {"priceDimensions": {"X.A.B": {"unit": "Quantity", "pricePerUnit": {"USD": "1"}}}}}}}`, `"Hrs"`},
		{"no USD", `{"product": {"sku": "X", "attributes": {"instanceType": "m5.large"}}, "terms": {"OnDemand": {"X.A": {"priceDimensions": {"X.A.B": {"unit": "Hrs", "pricePerUnit": {"CNY": "1"}}}}}}}`, "pricePerUnit.USD"},
		{"empty price", `{"product": {"sku": "X", "attributes": {"instanceType": "m5.large"}}, "terms": {"OnDemand": {"X.A": {"priceDimensions": {"X.A.B": {"unit": "Hrs", "pricePerUnit": {"USD": ""}}}}}}}`, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pricing.ParsePriceListDocument([]byte(tc.doc))
			if !errors.Is(err, pricing.ErrMalformedFeed) && !errors.Is(err, pricing.ErrInvalidPrice) {
				t.Fatalf("error %v, want ErrMalformedFeed or ErrInvalidPrice", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func FuzzParsePriceListDocument(f *testing.F) {
	f.Add([]byte(priceListDoc("SKU1", ec2Attrs("p3.2xlarge", "us-east-1", "Used", "NA"), "3.0600000000")))
	f.Add([]byte(priceListDoc("SKU1", ec2Attrs("p3.2xlarge", "us-east-1", "Used", "NA"), "NaN")))
	f.Add([]byte(`{"product": {"sku": "X", "attributes": {"instanceType": "m5.large"}}, "terms": {"OnDemand": {"X.A": {"priceDimensions": {"X.A.B": {"unit": "Hrs", "pricePerUnit": {"USD": "1e308"}}}}}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := pricing.ParsePriceListDocument(doc)
		if err != nil {
			if !errors.Is(err, pricing.ErrMalformedFeed) && !errors.Is(err, pricing.ErrInvalidPrice) {
				t.Fatalf("error %v wraps neither ErrMalformedFeed nor ErrInvalidPrice", err)
			}
			return
		}
		if !(p.USDPerHour > 0) || p.InstanceType == "" || math.IsInf(p.USDPerHour, 0) {
			t.Fatalf("accepted %+v", p)
		}
	})
}

func TestOnDemandTable(t *testing.T) {
	tbl := pricing.OnDemandTable{"us-east-1": {"p3.2xlarge": 3.06, "bad": -1}}
	if p, err := tbl.OnDemandPrice(context.Background(), "us-east-1", "p3.2xlarge"); err != nil || p != 3.06 {
		t.Errorf("table lookup = %v, %v", p, err)
	}
	if _, err := tbl.OnDemandPrice(context.Background(), "us-east-1", "bad"); !errors.Is(err, pricing.ErrInvalidPrice) {
		t.Errorf("negative table price: %v, want ErrInvalidPrice", err)
	}
	if _, err := tbl.OnDemandPrice(context.Background(), "eu-west-1", "p3.2xlarge"); !errors.Is(err, pricing.ErrNoData) {
		t.Errorf("missing table price: %v, want ErrNoData", err)
	}
}
