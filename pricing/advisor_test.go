package pricing_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/spotcheck/spotcheck/pricing"
)

// advisorFeed has the shape of spot-advisor-data.json (trimmed).
const advisorFeed = `{
  "global_rate": "<10%",
  "instance_types": {
    "p3.2xlarge": {"emr": true, "cores": 8, "ram_gb": 61.0},
    "g5.xlarge": {"emr": true, "cores": 4, "ram_gb": 16.0}
  },
  "ranges": [
    {"index": 0, "label": "<5%", "dots": 0, "max": 5},
    {"index": 1, "label": "5-10%", "dots": 1, "max": 11},
    {"index": 2, "label": "10-15%", "dots": 2, "max": 16},
    {"index": 3, "label": "15-20%", "dots": 3, "max": 22},
    {"index": 4, "label": ">20%", "dots": 4, "max": 100}
  ],
  "spot_advisor": {
    "us-east-1": {
      "Linux": {"p3.2xlarge": {"s": 70, "r": 3}, "g5.xlarge": {"s": 62, "r": 0}},
      "Windows": {"p3.2xlarge": {"s": 55, "r": 4}}
    },
    "eu-west-1": {
      "Linux": {"p3.2xlarge": {"s": 72, "r": 1}}
    }
  }
}`

func rateOf(p float64) float64 { return -math.Log(1-p) / 730 }

func TestParseAdvisor(t *testing.T) {
	a, err := pricing.ParseAdvisor(strings.NewReader(advisorFeed), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []pricing.Bucket{
		{Index: 0, Label: "<5%", Lower: 0, Upper: 0.05, Probability: 0.05, Rate: rateOf(0.05)},
		{Index: 1, Label: "5-10%", Lower: 0.05, Upper: 0.11, Probability: 0.11, Rate: rateOf(0.11)},
		{Index: 2, Label: "10-15%", Lower: 0.11, Upper: 0.16, Probability: 0.16, Rate: rateOf(0.16)},
		{Index: 3, Label: "15-20%", Lower: 0.16, Upper: 0.22, Probability: 0.22, Rate: rateOf(0.22)},
		{Index: 4, Label: ">20%", Lower: 0.22, Upper: 1, Probability: 0.30, Rate: rateOf(0.30)},
	}
	approx := cmpopts.EquateApprox(1e-12, 0)
	if diff := cmp.Diff(want, a.Buckets(), approx); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	if got := a.WorstRate(); math.Abs(got-rateOf(0.30)) > 1e-15 {
		t.Errorf("WorstRate = %v, want %v", got, rateOf(0.30))
	}

	e, err := a.Lookup("us-east-1", "Linux", "p3.2xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(pricing.AdvisorEntry{Region: "us-east-1", OS: "Linux", InstanceType: "p3.2xlarge", Savings: 70, Bucket: want[3]}, e, approx); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	if _, err := a.Lookup("us-west-9", "Linux", "p3.2xlarge"); !errors.Is(err, pricing.ErrUnknownRegion) || !strings.Contains(err.Error(), "us-west-9") {
		t.Errorf("Lookup of an unknown region: %v, want ErrUnknownRegion naming it", err)
	}
	if _, err := a.Lookup("eu-west-1", "Linux", "g5.xlarge"); !errors.Is(err, pricing.ErrNoData) || !strings.Contains(err.Error(), "g5.xlarge") {
		t.Errorf("Lookup of an unlisted type: %v, want ErrNoData naming it", err)
	}

	mid, err := pricing.ParseAdvisor(strings.NewReader(advisorFeed), &pricing.AdvisorOptions{Midpoint: true, OpenBucketProbability: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	bs := mid.Buckets()
	if got, want := bs[1].Probability, (0.05+0.11)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("midpoint bucket 1 probability = %v, want %v", got, want)
	}
	if got := bs[4].Probability; got != 0.4 {
		t.Errorf("open bucket probability = %v, want the option's 0.4", got)
	}
}

func TestParseAdvisorMalformed(t *testing.T) {
	tests := []struct {
		name, feed, mention string
	}{
		{"not JSON", `{"ranges": [`, "advisor feed"},
		{"no ranges", `{"spot_advisor": {}}`, `"ranges"`},
		{"no spot_advisor", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}]}`, `"spot_advisor"`},
		{"range without max", `{"ranges": [{"index": 0, "label": "<5%"}], "spot_advisor": {}}`, `ranges[0]: missing key "max"`},
		{"range without index", `{"ranges": [{"label": "<5%", "max": 5}], "spot_advisor": {}}`, `missing key "index"`},
		{"range without label", `{"ranges": [{"index": 0, "max": 5}], "spot_advisor": {}}`, `missing key "label"`},
		{"max out of range", `{"ranges": [{"index": 0, "label": "x", "max": 500}], "spot_advisor": {}}`, `"max" 500`},
		{"max not ascending", `{"ranges": [{"index": 0, "label": "a", "max": 10}, {"index": 1, "label": "b", "max": 5}], "spot_advisor": {}}`, "does not exceed"},
		{"duplicate index", `{"ranges": [{"index": 0, "label": "a", "max": 5}, {"index": 0, "label": "b", "max": 10}], "spot_advisor": {}}`, "appears twice"},
		{"entry without s", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": {"r": 0}}}}}`, `["m5.large"]: missing key "s"`},
		{"entry without r", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": {"s": 50}}}}}`, `missing key "r"`},
		{"entry with unknown range", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": {"s": 50, "r": 7}}}}}`, `range "r" 7`},
		{"null entry", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": null}}}}`, "is null"},
		{"bad region key", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"Mars": {}}}`, `"Mars"`},
		{"string savings", `{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": {"s": "50", "r": 0}}}}}`, "advisor feed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := pricing.ParseAdvisor(strings.NewReader(tc.feed), nil)
			if !errors.Is(err, pricing.ErrMalformedFeed) {
				t.Fatalf("ParseAdvisor = %v, %v; want ErrMalformedFeed", a, err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestAdvisorFileAndURL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spot-advisor-data.json")
	if err := os.WriteFile(path, []byte(advisorFeed), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := pricing.LoadAdvisorFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pricing.LoadAdvisorFile(filepath.Join(t.TempDir(), "missing.json"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadAdvisorFile of a missing file: %v, want os.ErrNotExist", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/spot-advisor-data.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(advisorFeed))
	}))
	defer srv.Close()
	opts := &pricing.AdvisorOptions{HTTPClient: srv.Client()}
	fromURL, err := pricing.FetchAdvisor(context.Background(), srv.URL+"/spot-advisor-data.json", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromFile.Buckets(), fromURL.Buckets()); diff != "" {
		t.Errorf("file and URL feeds differ (-file +url):\n%s", diff)
	}
	if _, err := pricing.FetchAdvisor(context.Background(), srv.URL+"/nope", opts); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("FetchAdvisor of a 404: %v, want an error naming the status", err)
	}
}

func FuzzParseAdvisor(f *testing.F) {
	f.Add([]byte(advisorFeed))
	f.Add([]byte(`{"ranges": [{"index": 0, "label": "<5%", "max": 5}], "spot_advisor": {"us-east-1": {"Linux": {"m5.large": {"s": 50, "r": 0}}}}}`))
	f.Add([]byte(`{"ranges": [{"index": 3, "label": "a", "max": 100}, {"index": -1, "label": "b", "max": 1}], "spot_advisor": {}}`))
	f.Add([]byte(`{"ranges": null, "spot_advisor": null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := pricing.ParseAdvisor(bytes.NewReader(data), nil)
		if err != nil {
			if !errors.Is(err, pricing.ErrMalformedFeed) {
				t.Fatalf("error %v does not wrap ErrMalformedFeed", err)
			}
			return
		}
		bs := a.Buckets()
		if len(bs) == 0 {
			t.Fatal("feed accepted without buckets")
		}
		for i, b := range bs {
			if i > 0 && b.Rate < bs[i-1].Rate {
				t.Fatalf("bucket %+v has a lower rate than the better bucket %+v", b, bs[i-1])
			}
			if !(b.Probability > 0 && b.Probability < 1) || !(b.Rate > 0) || math.IsInf(b.Rate, 0) || b.Upper <= b.Lower {
				t.Fatalf("bucket %+v: probability must be in (0,1), rate positive and finite, bounds ascending", b)
			}
		}
		if r := a.WorstRate(); !(r > 0) || math.IsInf(r, 0) {
			t.Fatalf("WorstRate %v", r)
		}
	})
}

func TestDefaultMissingRateIsTheOpenBucket(t *testing.T) {
	if want := rateOf(0.30); math.Abs(pricing.DefaultMissingRate-want) > 1e-18 {
		t.Errorf("DefaultMissingRate = %v, want -ln(0.7)/730 = %v", pricing.DefaultMissingRate, want)
	}
}
