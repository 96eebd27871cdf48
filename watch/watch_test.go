package watch

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/ftrace"
)

// follow runs a whole recording through a Watcher, one period per period
// of trace time (0: one period), and returns the periods.
func follow(t *testing.T, path string, period time.Duration) ([]Period, *Watcher) {
	t.Helper()
	rd, c, err := ftrace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var periods []Period
	f := &Follow{Reader: rd, Period: period,
		OnPeriod: func(p Period) bool { periods = append(periods, p); return true }}
	if err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return periods, f.Watcher
}

// TestForeignAsExplain: on every recording of testdata, the foreign timers
// the stream counts per CPU are those package explain finds reading the
// whole recording, and the periods add up to the totals.
func TestForeignAsExplain(t *testing.T) {
	files, _ := filepath.Glob("../testdata/traces/*.txt")
	checked := 0
	for _, f := range files {
		rep, err := explain.ExplainFile(f, explain.Options{})
		if err != nil || rep.Machine == "" {
			continue // explain needs the machine line, as the Watcher does
		}
		periods, w := follow(t, f, 500*time.Millisecond)
		totals, _, _ := w.Totals()
		want := make([]uint64, len(totals))
		for _, x := range rep.Events {
			if x.Kind == explain.Foreign {
				want[x.Handler]++
			}
		}
		sum := make([]uint64, len(totals))
		for _, p := range periods {
			for _, c := range p.CPUs {
				sum[c.CPU] += c.Foreign
			}
		}
		for c := range totals {
			// explain lists the foreign expiries of every CPU; the
			// Watcher also counts a remote expiry of a pinned timer
			// armed before the recording, which explain takes from its
			// next start (the stream has no look-ahead).
			if totals[c].Foreign < want[c] || sum[c] != totals[c].Foreign {
				t.Errorf("%s: CPU %d: %d foreign (periods %d), explain %d", filepath.Base(f), c, totals[c].Foreign, sum[c], want[c])
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d recordings checked", checked)
	}
}

// TestIsolatedPuller: on 6.12 the busy isolated CPU 8 is GRP0:1's migrator
// and runs CPU 10's timers, with an explanation naming its role; on 7.3
// the same machine keeps its isolated CPUs out of the hierarchy and none
// runs a foreign timer.
func TestIsolatedPuller(t *testing.T) {
	periods, w := follow(t, "../testdata/traces/vm40-1node-isol-busy.txt", 0)
	if len(periods) != 1 {
		t.Fatalf("%d periods, want 1", len(periods))
	}
	p := periods[0]
	c8 := p.CPUs[8]
	if c8.Class != Isolated || !c8.InHierarchy || !slices.Contains(c8.MigratorOf, "GRP0:1") || c8.Foreign == 0 {
		t.Errorf("6.12 CPU 8: %+v", c8)
	}
	if len(c8.Owners) == 0 || c8.Owners[0].Owner != 10 {
		t.Errorf("6.12 CPU 8 owners %v, want CPU 10 first", c8.Owners)
	}
	if c8.Why == "" || !containsAll(c8.Why, "CPU 8 ran CPU 10's", "migrator", "isolated") {
		t.Errorf("6.12 CPU 8 why: %q", c8.Why)
	}
	if p.ForeignOnIsolated == 0 {
		t.Errorf("6.12: no foreign timer on an isolated CPU")
	}
	if got := w.Roles(8); !slices.Contains(got, "GRP0:1") {
		t.Errorf("6.12 Roles(8) = %v", got)
	}

	periods, _ = follow(t, "../testdata/traces/vm40-1node-isol-busy-7.3.txt", 0)
	p = periods[0]
	for _, c := range p.CPUs {
		if c.Class == Isolated && (c.InHierarchy || c.Foreign != 0 || len(c.MigratorOf) != 0) {
			t.Errorf("7.3 CPU %d: %+v", c.CPU, c)
		}
	}
	if p.ForeignOnIsolated != 0 {
		t.Errorf("7.3: %d foreign timers on isolated CPUs", p.ForeignOnIsolated)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// TestPeriodsCPUs: periods cut the trace time without gaps, and a CPU
// list selects the rows.
func TestPeriodsCPUs(t *testing.T) {
	rd, c, err := ftrace.Open("../testdata/traces/vm4-1node-isol-busy-sleeper-6.12.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var periods []Period
	f := &Follow{Reader: rd, Period: 200 * time.Millisecond, CPUs: cpumask.MustParse("1,3"),
		OnPeriod: func(p Period) bool { periods = append(periods, p); return true }}
	if err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(periods) < 3 {
		t.Fatalf("%d periods", len(periods))
	}
	for i, p := range periods {
		if len(p.CPUs) != 2 || p.CPUs[0].CPU != 1 || p.CPUs[1].CPU != 3 {
			t.Fatalf("period %d rows %v", i, p.CPUs)
		}
		if i > 0 && p.Start != periods[i-1].End {
			t.Errorf("period %d starts at %d, the last ended at %d", i, p.Start, periods[i-1].End)
		}
		if i < len(periods)-1 && p.End-p.Start != 200e6 {
			t.Errorf("period %d lasts %d ns", i, p.End-p.Start)
		}
	}
}
