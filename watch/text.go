package watch

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tmigr/tmigr/ftrace"
)

// WriteText prints a period as `tmigr top` does: a header line, then a
// table with one row per CPU, CPU first (rtla's shape), then one line per
// isolated or nohz_full CPU that ran a foreign timer, saying why.
//
//	CPU  CLASS         HIER  MIGRATOR       OWN  HRT  FOREIGN  /s    TIME    OWNERS     FUNCTIONS
//	  0  housekeeping  yes   GRP0:0,GRP1:0  120  300        4  4.0  35 µs   1:3 2:1    process_timeout:3 ...
func (p Period) WriteText(w io.Writer, title string) error {
	secs := float64(p.End-p.Start) / 1e9
	lost := ""
	if p.Lost > 0 {
		lost = fmt.Sprintf(", %d lost", p.Lost)
	}
	if _, err := fmt.Fprintf(w, "%s  %s-%s s (%.3f s)  %d events%s  foreign on isolated: %d\n",
		title, ftrace.FormatTS(p.Start), ftrace.FormatTS(p.End), secs, p.Events, lost, p.ForeignOnIsolated); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CPU\tCLASS\tHIER\tMIGRATOR\tOWN\tHRT\tFOREIGN\t/s\tTIME\tOWNERS\tFUNCTIONS\t")
	for _, c := range p.CPUs {
		fmt.Fprintf(tw, "%3d\t%s\t%s\t%s\t%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t\n", c.CPU, c.Class, yesNo(c.InHierarchy),
			dashIfEmpty(strings.Join(c.MigratorOf, ",")), c.Own, c.HRTimers, c.Foreign, c.ForeignRate,
			duration(c.ForeignNS), owners(c.Owners), functions(c.Functions))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range p.CPUs {
		if c.Why != "" {
			if _, err := fmt.Fprintf(w, "why CPU %d: %s\n", c.CPU, c.Why); err != nil {
				return err
			}
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// duration prints ns as "35 µs", "1.2 ms", "-" for none.
func duration(ns int64) string {
	switch {
	case ns <= 0:
		return "-"
	case ns < 1e6:
		return strconv.FormatInt((ns+500)/1e3, 10) + " µs"
	default:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', 1, 64) + " ms"
	}
}

func owners(cs []OwnerCount) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%d:%d", c.Owner, c.Count))
	}
	return dashIfEmpty(strings.Join(parts, " "))
}

func functions(cs []FuncCount) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Function, c.Count))
	}
	return dashIfEmpty(strings.Join(parts, " "))
}
