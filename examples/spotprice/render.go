package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Row is one ranked plan as printed (table) and encoded (-json).
type Row struct {
	Rank             int      `json:"rank"`
	Region           string   `json:"region"`
	Zone             string   `json:"zone"`
	ZoneID           string   `json:"zone_id,omitempty"`
	InstanceType     string   `json:"instance_type"`
	SpotPrice        float64  `json:"spot_price"`                // USD per node-hour
	OnDemandPrice    *float64 `json:"on_demand_price,omitempty"` // USD per node-hour; absent if unknown
	SavingsPercent   *float64 `json:"savings_percent,omitempty"` // vs on-demand; absent if unknown
	Interruption     string   `json:"interruption"`              // advisor bucket, e.g. "<5%"
	InterruptionRate float64  `json:"interruption_rate"`         // per node-hour
	Nodes            int      `json:"nodes"`
	OnDemandNodes    int      `json:"on_demand_nodes"`
	IntervalSeconds  float64  `json:"checkpoint_interval_seconds"`
	Interruptions    float64  `json:"expected_interruptions"`
	ExpectedHours    float64  `json:"expected_hours"`
	HourlyCost       float64  `json:"hourly_cost"`   // USD per hour for all nodes
	ExpectedCost     float64  `json:"expected_cost"` // USD to completion
	// OnDemandCost is what the job would cost on on-demand nodes of the
	// same type (never interrupted, no checkpoints); absent if unknown.
	OnDemandCost *float64 `json:"on_demand_cost,omitempty"`
	// JobSavingsPercent is 1 - ExpectedCost/OnDemandCost: what spot saves
	// on the whole job, interruptions included; absent if unknown.
	JobSavingsPercent *float64 `json:"job_savings_percent,omitempty"`
}

// Report is the -json output.
type Report struct {
	Job struct {
		WorkHours             float64 `json:"work_hours"`
		CheckpointCostSeconds float64 `json:"checkpoint_cost_seconds"`
		RestartCostSeconds    float64 `json:"restart_cost_seconds"`
		Nodes                 int     `json:"nodes"`
	} `json:"job"`
	Regions       []string `json:"regions"`
	InstanceTypes []string `json:"instance_types"`
	Offers        []Row    `json:"offers"`
	// Warnings are regions that failed, records that were dropped, offers
	// that could not be estimated; the ranking holds everything else.
	Warnings []string `json:"warnings"`
}

func writeJSON(w io.Writer, rep *Report) error {
	if rep.Offers == nil {
		rep.Offers = []Row{}
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// Column headers of the table, in order.
var header = []string{"#", "REGION", "ZONE", "TYPE", "SPOT $/H", "ON-DEMAND", "SAVINGS", "INTERRUPT", "EXP HOURS", "EXP COST", "COST"}

const barWidth = 20

// bar draws v/max as a bar of up to width cells (eighths of a block on a
// terminal, '#' otherwise).
func bar(v, max float64, width int, unicode bool) string {
	if !(max > 0) || !(v > 0) || math.IsInf(v, 0) {
		return ""
	}
	frac := min(v/max, 1)
	if !unicode {
		return strings.Repeat("#", max1(int(math.Round(frac*float64(width)))))
	}
	eighths := max1(int(math.Round(frac * float64(width) * 8)))
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}

func max1(n int) int { return max(n, 1) }

func money(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("$%.0f", v)
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// writeTable prints rows as an aligned table; the last column draws each
// plan's expected cost against the dearest one listed. With color, the cheapest plan
// is green and the header bold; colour codes are added after alignment, to
// whole lines, so they never shift a column.
func writeTable(w io.Writer, rows []Row, color bool) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	maxCost := 0.0
	for _, r := range rows {
		maxCost = max(maxCost, r.ExpectedCost)
	}
	for _, r := range rows {
		od, sav := "-", "-"
		if r.OnDemandPrice != nil {
			od = fmt.Sprintf("%.4f", *r.OnDemandPrice)
		}
		if r.SavingsPercent != nil {
			sav = fmt.Sprintf("%.0f%%", *r.SavingsPercent)
		}
		zone := r.Zone
		if zone == "" {
			zone = "-"
		}
		typ := r.InstanceType
		if r.OnDemandNodes > 0 {
			typ = fmt.Sprintf("%s (%d od)", typ, r.OnDemandNodes)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.4f\t%s\t%s\t%s\t%.1f\t%s\t%s\n",
			r.Rank, r.Region, zone, typ, r.SpotPrice, od, sav, orDash(r.Interruption),
			r.ExpectedHours, money(r.ExpectedCost), bar(r.ExpectedCost, maxCost, barWidth, color))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, line := range lines {
		if line == "" {
			continue
		}
		if color {
			body := strings.TrimRight(line, " \n")
			switch i {
			case 0:
				line = "\x1b[1m" + body + "\x1b[0m\n"
			case 1:
				line = "\x1b[32m" + body + "\x1b[0m\n"
			default:
				line = body + "\n"
			}
		} else {
			line = strings.TrimRight(line, " \n") + "\n"
		}
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
