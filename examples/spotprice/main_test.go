package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	labels = []string{"<5%", "5-10%", "10-15%", "15-20%", ">20%"}
	// advisorRanges is the "ranges" array of the real feed.
	advisorRanges = `[{"index":0,"label":"<5%","dots":0,"max":5},{"index":1,"label":"5-10%","dots":1,"max":11},
	{"index":2,"label":"10-15%","dots":2,"max":16},{"index":3,"label":"15-20%","dots":3,"max":22},{"index":4,"label":">20%","dots":4,"max":100}]`
)

type key struct{ region, zone, typ string }

// world is the test's AWS: spot history, zones, on-demand prices, advisor
// buckets, and a region that fails.
type world struct {
	fake    *fakeAWS
	url     string
	advisor string // path of the advisor file
	bucket  map[[2]string]int
	newest  map[key]float64
}

func newWorld(t *testing.T) *world {
	t.Helper()
	f, srv := newFakeAWS(t)
	now := time.Now().UTC().Truncate(time.Second)
	ago := func(h float64) time.Time { return now.Add(-time.Duration(h * float64(time.Hour))) }
	f.zones["us-east-1"] = [][2]string{{"us-east-1a", "use1-az6"}, {"us-east-1b", "use1-az1"}, {"us-east-1c", "use1-az2"}}
	f.zones["us-west-2"] = [][2]string{{"us-west-2a", "usw2-az2"}, {"us-west-2b", "usw2-az1"}}
	f.zones["eu-west-1"] = [][2]string{{"eu-west-1a", "euw1-az1"}}
	// Entries out of order; the newest per (type, zone) is not the last
	// one served, nor the cheapest one.
	f.spot["us-east-1"] = []spotRecord{
		{"g5.xlarge", "us-east-1a", "0.3120", ago(1)},
		{"p3.2xlarge", "us-east-1b", "0.9180", ago(2)},
		{"g5.xlarge", "us-east-1a", "0.2500", ago(20)}, // older, cheaper
		{"g5.xlarge", "us-east-1b", "0.4410", ago(3)},
		{"p3.2xlarge", "us-east-1b", "0.8000", ago(10)},
		{"g5.xlarge", "us-east-1c", "0.3600", ago(0.5)},
		{"p3.2xlarge", "us-east-1c", "1.1020", ago(5)},
		{"g5.xlarge", "us-east-1b", "0.3900", ago(12)},
	}
	f.spot["us-west-2"] = []spotRecord{
		{"p3.2xlarge", "us-west-2a", "0.9900", ago(6)},
		{"g5.xlarge", "us-west-2b", "0.3300", ago(2)},
		{"g5.xlarge", "us-west-2a", "0.2950", ago(4)},
		{"g5.xlarge", "us-west-2b", "0.2100", ago(23)}, // older, cheaper
		{"p3.2xlarge", "us-west-2a", "0.9300", ago(1)},
	}
	f.spot["eu-west-1"] = []spotRecord{{"g5.xlarge", "eu-west-1a", "0.1000", ago(1)}}
	f.fail["eu-west-1"] = true
	for _, r := range []string{"us-east-1", "us-west-2", "eu-west-1"} {
		f.onDemand[[2]string{r, "g5.xlarge"}] = 1.006
		f.onDemand[[2]string{r, "p3.2xlarge"}] = 3.06
	}

	w := &world{fake: f, url: srv.URL, newest: map[key]float64{}}
	// Advisor buckets per (region, type); us-west-2 p3.2xlarge is missing.
	w.bucket = map[[2]string]int{
		{"us-east-1", "g5.xlarge"}: 0, {"us-east-1", "p3.2xlarge"}: 3,
		{"us-west-2", "g5.xlarge"}: 1,
	}
	adv := map[string]map[string]map[string]map[string]int{}
	for k, b := range w.bucket {
		if adv[k[0]] == nil {
			adv[k[0]] = map[string]map[string]map[string]int{"Linux": {}}
		}
		adv[k[0]]["Linux"][k[1]] = map[string]int{"s": 70, "r": b}
	}
	advJSON, _ := json.Marshal(adv)
	w.advisor = filepath.Join(t.TempDir(), "spot-advisor-data.json")
	doc := fmt.Sprintf(`{"ranges":%s,"spot_advisor":%s,"instance_types":{}}`, advisorRanges, advJSON)
	if err := os.WriteFile(w.advisor, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f.advisorDoc = doc

	// The answer the test expects, from the data above: newest by time.
	newestAt := map[key]time.Time{}
	for region, recs := range f.spot {
		if f.fail[region] {
			continue
		}
		for _, rec := range recs {
			k := key{region, rec.Zone, rec.Type}
			if rec.Time.After(newestAt[k]) {
				newestAt[k] = rec.Time
				var p float64
				fmt.Sscan(rec.Price, &p)
				w.newest[k] = p
			}
		}
	}

	// Credentials for the SDK's default chain; no shared config, no IMDS.
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("NO_COLOR", "")
	return w
}

// exec runs the command with args and returns its exit code and output.
func (w *world) exec(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"-endpoint", w.url, "-regions", "us-east-1,us-west-2,eu-west-1", "-types", "g5.xlarge,p3.2xlarge", "-advisor", w.advisor}, args...)
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func (w *world) execJSON(t *testing.T, args ...string) *Report {
	t.Helper()
	code, out, errOut := w.exec(t, append([]string{"-json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var rep Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode -json output: %v\n%s", err, out)
	}
	return &rep
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestRankJSON(t *testing.T) {
	w := newWorld(t)
	rep := w.execJSON(t, "-work", "20h", "-ckpt-cost", "90s", "-restart", "5m")

	// Every (region, zone, type) of the answering regions, once, at its
	// newest price, with its zone id.
	got := map[key]float64{}
	for _, r := range rep.Offers {
		k := key{r.Region, r.Zone, r.InstanceType}
		if _, dup := got[k]; dup {
			t.Errorf("offer %v listed twice", k)
		}
		got[k] = r.SpotPrice
	}
	if diff := cmp.Diff(w.newest, got, cmp.AllowUnexported(key{})); diff != "" {
		t.Errorf("offers and their spot prices (-want +got):\n%s", diff)
	}
	zoneIDs := map[string]string{}
	for _, zs := range w.fake.zones {
		for _, z := range zs {
			zoneIDs[z[0]] = z[1]
		}
	}
	for i, r := range rep.Offers {
		if r.Rank != i+1 {
			t.Errorf("row %d has rank %d", i, r.Rank)
		}
		if i > 0 && r.ExpectedCost < rep.Offers[i-1].ExpectedCost {
			t.Errorf("row %d (%s %s) costs %v, less than row %d's %v: not ranked by expected cost",
				i, r.Zone, r.InstanceType, r.ExpectedCost, i-1, rep.Offers[i-1].ExpectedCost)
		}
		if r.ZoneID != zoneIDs[r.Zone] {
			t.Errorf("%s: zone id %q, want %q", r.Zone, r.ZoneID, zoneIDs[r.Zone])
		}
		od := w.fake.onDemand[[2]string{r.Region, r.InstanceType}]
		if r.OnDemandPrice == nil || *r.OnDemandPrice != od {
			t.Errorf("%s %s: on-demand %v, want %v", r.Zone, r.InstanceType, r.OnDemandPrice, od)
		} else if r.SavingsPercent == nil || !near(*r.SavingsPercent, 100*(1-r.SpotPrice/od)) {
			t.Errorf("%s %s: savings %v, want %v%%", r.Zone, r.InstanceType, r.SavingsPercent, 100*(1-r.SpotPrice/od))
		}
		if r.OnDemandCost == nil || !near(*r.OnDemandCost, od*20) || r.JobSavingsPercent == nil ||
			!near(*r.JobSavingsPercent, 100*(1-r.ExpectedCost/(od*20))) || *r.JobSavingsPercent >= *r.SavingsPercent {
			t.Errorf("%s %s: on-demand job cost %v, job savings %v: want $%v and less than the hourly savings",
				r.Zone, r.InstanceType, r.OnDemandCost, r.JobSavingsPercent, od*20)
		}
		wantLabel := "assumed worst"
		if b, ok := w.bucket[[2]string{r.Region, r.InstanceType}]; ok {
			wantLabel = labels[b]
		}
		if r.Interruption != wantLabel {
			t.Errorf("%s %s %s: interruption %q, want %q", r.Region, r.Zone, r.InstanceType, r.Interruption, wantLabel)
		}
		if !near(r.ExpectedCost, r.ExpectedHours*r.SpotPrice*float64(r.Nodes)) || !near(r.HourlyCost, r.SpotPrice) {
			t.Errorf("%s %s: cost %v != %v hours x $%v", r.Zone, r.InstanceType, r.ExpectedCost, r.ExpectedHours, r.SpotPrice)
		}
		if r.ExpectedHours <= 20 || r.Interruptions <= 0 || r.IntervalSeconds <= 0 {
			t.Errorf("%s %s: %v hours, %v interruptions, interval %vs: checkpoints and interruptions must cost time",
				r.Zone, r.InstanceType, r.ExpectedHours, r.Interruptions, r.IntervalSeconds)
		}
	}
	// Riskier buckets cost more time for the same work.
	hours := map[string]float64{}
	for _, r := range rep.Offers {
		hours[r.Interruption] = r.ExpectedHours
	}
	if !(hours["<5%"] < hours["5-10%"] && hours["5-10%"] < hours["15-20%"] && hours["15-20%"] < hours["assumed worst"]) {
		t.Errorf("expected hours by bucket %v: not increasing with the interruption rate", hours)
	}
	// The failing region is named; every page of the others was read.
	if !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.Contains(s, "eu-west-1") }) {
		t.Errorf("warnings %q do not name the failing region eu-west-1", rep.Warnings)
	}
	for _, region := range []string{"us-east-1", "us-west-2"} {
		n := len(w.fake.spot[region])
		if want := (n + w.fake.pageSize - 1) / w.fake.pageSize; w.fake.pages[region] < want {
			t.Errorf("%s: %d pages read, want %d", region, w.fake.pages[region], want)
		}
	}
	if rep.Job.WorkHours != 20 || rep.Job.CheckpointCostSeconds != 90 || rep.Job.RestartCostSeconds != 300 || rep.Job.Nodes != 1 {
		t.Errorf("job echoed as %+v", rep.Job)
	}
}

func TestFilters(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name string
		args []string
		keep func(k key, price float64) bool
	}{
		{"max price", []string{"-max-price", "0.35"}, func(_ key, p float64) bool { return p <= 0.35 }},
		{"min savings", []string{"-min-savings", "68"}, func(k key, p float64) bool {
			return 1-p/w.fake.onDemand[[2]string{k.region, k.typ}] >= 0.68
		}},
		{"both", []string{"-max-price", "1", "-min-savings", "65"}, func(k key, p float64) bool {
			return p <= 1 && 1-p/w.fake.onDemand[[2]string{k.region, k.typ}] >= 0.65
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[key]bool{}
			for k, p := range w.newest {
				if tt.keep(k, p) {
					want[k] = true
				}
			}
			if len(want) == 0 || len(want) == len(w.newest) {
				t.Fatalf("filter keeps %d of %d offers: the test data does not exercise it", len(want), len(w.newest))
			}
			got := map[key]bool{}
			for _, r := range w.execJSON(t, tt.args...).Offers {
				got[key{r.Region, r.Zone, r.InstanceType}] = true
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(key{})); diff != "" {
				t.Errorf("offers kept (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHybridPlans(t *testing.T) {
	w := newWorld(t)
	rep := w.execJSON(t, "-nodes", "4", "-on-demand-nodes", "0,2", "-max-price", "0.35")
	plans := map[int]int{}
	for _, r := range rep.Offers {
		plans[r.OnDemandNodes]++
		if r.Nodes != 4 {
			t.Errorf("plan with %d nodes, want 4", r.Nodes)
		}
		od := *r.OnDemandPrice
		if want := float64(4-r.OnDemandNodes)*r.SpotPrice + float64(r.OnDemandNodes)*od; !near(r.HourlyCost, want) {
			t.Errorf("%s %s with %d on-demand: hourly %v, want %v", r.Zone, r.InstanceType, r.OnDemandNodes, r.HourlyCost, want)
		}
	}
	if plans[0] == 0 || plans[0] != plans[2] {
		t.Errorf("plans by on-demand nodes: %v, want as many with 0 as with 2", plans)
	}
}

func TestAdvisorURL(t *testing.T) {
	w := newWorld(t)
	fromFile := w.execJSON(t)
	fromURL := w.execJSON(t, "-advisor", w.url+"/spot-advisor-data.json")
	if diff := cmp.Diff(fromFile.Offers, fromURL.Offers); diff != "" {
		t.Errorf("ranking with the advisor from a URL differs from the file's (-file +url):\n%s", diff)
	}
}

// TestTable checks the table against the -json ranking: same rows in the
// same order, every column aligned under its header.
func TestTable(t *testing.T) {
	w := newWorld(t)
	rep := w.execJSON(t)
	code, out, errOut := w.exec(t, "-color", "never")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "eu-west-1") {
		t.Errorf("stderr does not warn about eu-west-1:\n%s", errOut)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour codes in a table that is not on a terminal")
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(rep.Offers)+1 {
		t.Fatalf("%d lines, want a header and %d rows:\n%s", len(lines), len(rep.Offers), out)
	}
	// Column starts from the header.
	var starts []int
	from := 0
	for _, h := range header {
		i := strings.Index(lines[0][from:], h)
		if i < 0 {
			t.Fatalf("header lacks %q after byte %d: %q", h, from, lines[0])
		}
		starts = append(starts, from+i)
		from += i + len(h)
	}
	if !slices.IsSorted(starts) {
		t.Fatalf("header columns out of order: %q", lines[0])
	}
	for i, line := range lines[1:] {
		r := rep.Offers[i]
		var cells []string
		for c, s := range starts {
			if s > len(line) || (s > 0 && line[s-1] != ' ') || (s < len(line) && line[s] == ' ') {
				t.Fatalf("row %d, column %s is not aligned at byte %d:\n%s\n%s", i, header[c], s, lines[0], line)
			}
			end := len(line)
			if c+1 < len(starts) {
				end = starts[c+1]
			}
			cells = append(cells, strings.TrimSpace(line[s:end]))
		}
		want := []string{fmt.Sprint(r.Rank), r.Region, r.Zone, r.InstanceType, fmt.Sprintf("%.4f", r.SpotPrice)}
		if diff := cmp.Diff(want, cells[:5]); diff != "" {
			t.Errorf("row %d does not match -json rank %d (-want +got):\n%s", i, r.Rank, diff)
		}
		if cells[7] != r.Interruption || !strings.HasPrefix(cells[10], "#") {
			t.Errorf("row %d: interruption %q (want %q), bar %q", i, cells[7], r.Interruption, cells[10])
		}
	}
}

func TestColorAlways(t *testing.T) {
	w := newWorld(t)
	code, out, _ := w.exec(t, "-color", "always")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "\x1b[1m") || !strings.HasPrefix(lines[1], "\x1b[32m") || strings.Contains(lines[2], "\x1b[") {
		t.Errorf("want a bold header, a green first row and plain others:\n%q", lines[:3])
	}
	plain := func(s string) string {
		s = strings.ReplaceAll(s, "\x1b[1m", "")
		s = strings.ReplaceAll(s, "\x1b[32m", "")
		return strings.ReplaceAll(s, "\x1b[0m", "")
	}
	if strings.Index(plain(lines[0]), "TYPE") != strings.Index(plain(lines[1]), strings.Fields(plain(lines[1]))[3]) {
		t.Errorf("colour shifted the columns:\n%s\n%s", plain(lines[0]), plain(lines[1]))
	}
}

func TestExitCodes(t *testing.T) {
	w := newWorld(t)
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"bad region", []string{"-regions", "mars-1"}, exitUsage, `"mars-1" is not an AWS region`},
		{"zero work", []string{"-work", "0s"}, exitUsage, "-work"},
		{"savings over 100", []string{"-min-savings", "150"}, exitUsage, "-min-savings"},
		{"hybrid above nodes", []string{"-nodes", "1", "-on-demand-nodes", "2"}, exitUsage, "-on-demand-nodes"},
		{"unknown flag", []string{"-frobnicate"}, exitUsage, "frobnicate"},
		{"every region fails", []string{"-regions", "eu-west-1"}, exitFailure, "eu-west-1"},
		{"nothing passes", []string{"-max-price", "0.01"}, exitFailure, "no offer passes"},
		{"missing advisor", []string{"-advisor", "/nonexistent/advisor.json"}, exitFailure, "-advisor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := w.exec(t, tt.args...)
			if code != tt.want || !strings.Contains(errOut, tt.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tt.want, tt.msg)
			}
		})
	}
}

// FuzzParseFlags: any argument list either fails with an error or yields
// flags that satisfy the checks rank relies on.
func FuzzParseFlags(f *testing.F) {
	f.Add("-types g5.xlarge,p3.2xlarge -regions us-east-1,us-west-2 -work 20h -ckpt-cost 90s -restart 5m -nodes 1")
	f.Add("-nodes 4 -on-demand-nodes 0,2,4 -max-price 1.5 -min-savings 60 -json")
	f.Add("-types , -regions us-east-1")
	f.Add("-work -1h -min-savings NaN -max-price Inf")
	f.Fuzz(func(t *testing.T, line string) {
		fl, err := parseFlags(strings.Fields(line), io.Discard)
		if err != nil {
			return
		}
		if len(fl.types) == 0 || len(fl.regions) == 0 || fl.work <= 0 || fl.nodes < 1 ||
			!(fl.minSavings >= 0 && fl.minSavings <= 100) || !(fl.maxPrice >= 0) || math.IsInf(fl.maxPrice, 0) {
			t.Fatalf("accepted %q as %+v", line, fl)
		}
		for _, n := range fl.onDemandNodes {
			if n < 0 || n > fl.nodes {
				t.Fatalf("accepted hybrid plan %d of %d nodes", n, fl.nodes)
			}
		}
		for _, s := range append(slices.Clone(fl.types), fl.regions...) {
			if s == "" || strings.Contains(s, ",") {
				t.Fatalf("list item %q from %q", s, line)
			}
		}
	})
}

func ExampleRow_table() {
	od := 1.006
	sav := 100 * (1 - 0.2950/od)
	rows := []Row{
		{Rank: 1, Region: "us-west-2", Zone: "us-west-2a", InstanceType: "g5.xlarge", SpotPrice: 0.2950, OnDemandPrice: &od,
			SavingsPercent: &sav, Interruption: "5-10%", ExpectedHours: 20.1, ExpectedCost: 5.92},
		{Rank: 2, Region: "us-east-1", Zone: "us-east-1c", InstanceType: "p3.2xlarge", SpotPrice: 1.1020,
			Interruption: "assumed worst", ExpectedHours: 20.13, ExpectedCost: 22.14},
	}
	writeTable(os.Stdout, rows, false)
	// Output:
	// #  REGION     ZONE        TYPE        SPOT $/H  ON-DEMAND  SAVINGS  INTERRUPT      EXP HOURS  EXP COST  COST
	// 1  us-west-2  us-west-2a  g5.xlarge   0.2950    1.0060     71%      5-10%          20.1       $5.92     #####
	// 2  us-east-1  us-east-1c  p3.2xlarge  1.1020    -          -        assumed worst  20.1       $22.14    ####################
}
