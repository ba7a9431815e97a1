package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/spotcheck/spotcheck/pricing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

type flags struct {
	types, regions      []string
	work, ckpt, restart time.Duration
	nodes               int
	onDemandNodes       []int
	maxPrice            float64
	minSavings          float64 // percent
	advisor             string
	json                bool
	endpoint            string
	limit               int
	color               string
	window              time.Duration
	timeout             time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	var f flags
	fs := flag.NewFlagSet("spotprice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: spotprice [flags]\n\nRanks spot offers by the expected cost of the whole job.\n\nFlags:")
		fs.PrintDefaults()
	}
	types := fs.String("types", "g5.xlarge,p3.2xlarge", "comma-separated instance `types`")
	regions := fs.String("regions", "us-east-1,us-west-2", "comma-separated `regions`")
	fs.DurationVar(&f.work, "work", 20*time.Hour, "compute time the job needs without interruptions or checkpoints")
	fs.DurationVar(&f.ckpt, "ckpt-cost", 90*time.Second, "time one checkpoint takes")
	fs.DurationVar(&f.restart, "restart", 5*time.Minute, "time from an interruption to work resuming (new node, boot, restore)")
	fs.IntVar(&f.nodes, "nodes", 1, "nodes working in lock step")
	hybrid := fs.String("on-demand-nodes", "", "comma-separated hybrid plans to compare: how many of -nodes run on-demand (e.g. 0,1)")
	fs.Float64Var(&f.maxPrice, "max-price", 0, "drop offers whose spot price is above this, USD per node-hour (0 = no limit)")
	fs.Float64Var(&f.minSavings, "min-savings", 0, "drop offers saving less than this `percent` against on-demand (0 = no limit)")
	fs.StringVar(&f.advisor, "advisor", "", "Spot Instance Advisor data: a spot-advisor-data.json `file` or an https URL (empty = assume the worst bucket)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	fs.StringVar(&f.endpoint, "endpoint", "", "send EC2 and Price List requests to this `URL` (tests, local emulators)")
	fs.IntVar(&f.limit, "limit", 0, "print only the first `n` plans (0 = all)")
	fs.StringVar(&f.color, "color", "auto", "colour the table: auto (on a terminal, unless NO_COLOR is set), always, never")
	fs.DurationVar(&f.window, "window", 0, "spot price history window (0 = the pricing package's default)")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if f.types, err = splitList("-types", *types); err != nil {
		return nil, err
	}
	if f.regions, err = splitList("-regions", *regions); err != nil {
		return nil, err
	}
	for _, r := range f.regions {
		if !pricing.ValidRegion(r) {
			return nil, fmt.Errorf("-regions: %q is not an AWS region name", r)
		}
	}
	if *hybrid != "" {
		items, err := splitList("-on-demand-nodes", *hybrid)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			n, err := strconv.Atoi(it)
			if err != nil || n < 0 || n > f.nodes {
				return nil, fmt.Errorf("-on-demand-nodes: %q is not a count in 0..%d (-nodes)", it, f.nodes)
			}
			f.onDemandNodes = append(f.onDemandNodes, n)
		}
	}
	switch {
	case f.work <= 0:
		return nil, fmt.Errorf("-work %v: must be positive", f.work)
	case f.ckpt < 0:
		return nil, fmt.Errorf("-ckpt-cost %v: must not be negative", f.ckpt)
	case f.restart < 0:
		return nil, fmt.Errorf("-restart %v: must not be negative", f.restart)
	case f.nodes < 1:
		return nil, fmt.Errorf("-nodes %d: must be at least 1", f.nodes)
	case !(f.maxPrice >= 0) || math.IsInf(f.maxPrice, 0):
		return nil, fmt.Errorf("-max-price %v: must be a non-negative number", f.maxPrice)
	case !(f.minSavings >= 0 && f.minSavings <= 100):
		return nil, fmt.Errorf("-min-savings %v: must be a percentage in 0..100", f.minSavings)
	case f.limit < 0:
		return nil, fmt.Errorf("-limit %d: must not be negative", f.limit)
	case f.color != "auto" && f.color != "always" && f.color != "never":
		return nil, fmt.Errorf("-color %q: want auto, always or never", f.color)
	}
	return &f, nil
}

func splitList(name, s string) ([]string, error) {
	var out []string
	for _, it := range strings.Split(s, ",") {
		if it = strings.TrimSpace(it); it != "" && !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", name)
	}
	return out, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// run is the command; main only wires it to the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "spotprice:", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rep, err := rank(ctx, f)
	for _, w := range rep.Warnings {
		fmt.Fprintln(stderr, "spotprice: warning:", w)
	}
	if err != nil {
		fmt.Fprintln(stderr, "spotprice:", err)
		if f.json {
			writeJSON(stdout, rep)
		}
		return exitFailure
	}
	if f.json {
		err = writeJSON(stdout, rep)
	} else {
		color := f.color == "always" || (f.color == "auto" && isTerminal(stdout) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb")
		err = writeTable(stdout, rep.Offers, color)
	}
	if err != nil {
		fmt.Fprintln(stderr, "spotprice:", err)
		return exitFailure
	}
	return exitOK
}

// warnings flattens a joined error into one line per error.
func warnings(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, warnings(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

// rank does the work: scan, join, estimate, rank. The report is never nil;
// err is set only when nothing could be ranked.
func rank(ctx context.Context, f *flags) (*Report, error) {
	rep := &Report{Regions: f.regions, InstanceTypes: f.types}
	rep.Job.WorkHours = f.work.Hours()
	rep.Job.CheckpointCostSeconds = f.ckpt.Seconds()
	rep.Job.RestartCostSeconds = f.restart.Seconds()
	rep.Job.Nodes = f.nodes

	var advisor *pricing.Advisor
	var err error
	switch {
	case strings.HasPrefix(f.advisor, "https://") || strings.HasPrefix(f.advisor, "http://"):
		advisor, err = pricing.FetchAdvisor(ctx, f.advisor, nil)
	case f.advisor != "":
		advisor, err = pricing.LoadAdvisorFile(f.advisor, nil)
	}
	if err != nil {
		return rep, fmt.Errorf("-advisor: %w", err)
	}

	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(f.regions[0]))
	if err != nil {
		return rep, fmt.Errorf("AWS configuration: %w", err)
	}
	var ec2Opts []func(*ec2.Options)
	var plOpts []func(*awspricing.Options)
	if f.endpoint != "" {
		ec2Opts = append(ec2Opts, func(o *ec2.Options) { o.BaseEndpoint = aws.String(f.endpoint) })
		plOpts = append(plOpts, func(o *awspricing.Options) { o.BaseEndpoint = aws.String(f.endpoint) })
	}
	scanner, err := pricing.NewScannerFromConfig(cfg, f.regions, &pricing.ScannerOptions{Window: f.window}, ec2Opts...)
	if err != nil {
		return rep, err
	}
	res, err := scanner.Scan(ctx, pricing.Query{InstanceTypes: f.types, Regions: f.regions})
	if res == nil {
		return rep, err
	}
	// Failed regions and malformed records: the others still rank.
	rep.Warnings = append(rep.Warnings, warnings(res.Err())...)
	if len(res.Quotes) == 0 {
		return rep, fmt.Errorf("no spot prices for %s in %s", strings.Join(f.types, ","), strings.Join(f.regions, ","))
	}

	offers, err := pricing.Offers(ctx, res.Quotes, &pricing.OfferSources{
		OnDemand: pricing.NewOnDemandFromConfig(cfg, nil, plOpts...),
		Advisor:  advisor,
	})
	if offers == nil && err != nil {
		return rep, err
	}
	rep.Warnings = append(rep.Warnings, warnings(err)...)

	job := pricing.Job{Work: f.work, CheckpointCost: f.ckpt, RestartCost: f.restart, Nodes: f.nodes}
	plans, err := pricing.Rank(offers, job, &pricing.RankOptions{
		MaxPrice: f.maxPrice, MinSavings: f.minSavings / 100, OnDemandNodes: f.onDemandNodes, Limit: f.limit,
	})
	if plans == nil && err != nil {
		return rep, err
	}
	rep.Warnings = append(rep.Warnings, warnings(err)...)
	for i, p := range plans {
		rep.Offers = append(rep.Offers, toRow(i+1, p, f.work))
	}
	if len(rep.Offers) == 0 {
		return rep, errors.New("no offer passes the filters")
	}
	return rep, nil
}

func toRow(rank int, p pricing.Expected, work time.Duration) Row {
	o := p.Offer
	r := Row{
		Rank: rank, Region: o.Region, Zone: o.AvailabilityZone, ZoneID: o.ZoneID, InstanceType: o.InstanceType,
		SpotPrice: o.SpotPrice, Interruption: o.InterruptionLabel, InterruptionRate: o.InterruptionRate,
		Nodes: p.Nodes, OnDemandNodes: p.OnDemandNodes, IntervalSeconds: p.Interval.Seconds(),
		Interruptions: p.Interruptions, ExpectedHours: p.WallTime.Hours(), HourlyCost: p.HourlyCost, ExpectedCost: p.Cost,
	}
	if s, ok := o.Savings(); ok {
		od := o.OnDemandPrice
		pct := 100 * s
		odCost := od * float64(p.Nodes) * work.Hours()
		jobPct := 100 * (1 - p.Cost/odCost)
		r.OnDemandPrice, r.SavingsPercent, r.OnDemandCost, r.JobSavingsPercent = &od, &pct, &odCost, &jobPct
	}
	return r
}
