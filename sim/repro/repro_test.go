package repro

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/sim/workload"
)

func text(t *testing.T, o *Outcome) string {
	t.Helper()
	var b bytes.Buffer
	if err := o.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The shape the post reports: under pull the busy isolated CPUs that are
// migrators of the housekeeping CPUs' groups run those CPUs' timers, the
// heavy driver work included, and show its spike; under pull-isolated no
// isolated CPU runs a remote timer and every maximum is at the noise
// floor. (Every driver expiry is made heavy, and 4 a second, so that a
// short run shows it.)
func TestIsolationShape(t *testing.T) {
	e, _ := Lookup("isolation")
	out, err := e.Run(Options{Seed: 1, Short: true, Check: true, Set: []string{"hk.driver.heavy_prob=1", "hk.driver.period=250ms"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 2 {
		t.Fatalf("%d runs", len(out.Runs))
	}
	_, _, iso := IsolationMachine(64)
	migrators := map[int]int{1: 0, 33: 32} // migrator: the housekeeping CPU whose timers it pulls
	for i, res := range out.Runs {
		ol := res.Workload("oslat").(*workload.OslatResult)
		for _, th := range ol.Report.Threads {
			_, isMigrator := migrators[th.CPU]
			spike := th.MaxLat >= 1000
			if i == 0 && isMigrator != spike {
				t.Errorf("pull: CPU %d maximum %d µs; migrator %v", th.CPU, th.MaxLat, isMigrator)
			}
			if i == 1 && th.MaxLat > 50 {
				t.Errorf("pull-isolated: CPU %d maximum %d µs, want the noise floor", th.CPU, th.MaxLat)
			}
		}
		for _, cr := range res.CPUs {
			if !iso.Test(cr.CPU) {
				continue
			}
			owner, isMigrator := migrators[cr.CPU]
			switch {
			case i == 1 && cr.RemoteExpired != 0:
				t.Errorf("pull-isolated: isolated CPU %d ran %d remote timers", cr.CPU, cr.RemoteExpired)
			case i == 0 && isMigrator && (len(cr.RemoteFrom) != 1 || cr.RemoteFrom[0].CPU != owner):
				t.Errorf("pull: CPU %d pulled from %v, want CPU %d", cr.CPU, cr.RemoteFrom, owner)
			case i == 0 && !isMigrator && cr.RemoteExpired != 0:
				t.Errorf("pull: CPU %d (no migrator) ran %d remote timers", cr.CPU, cr.RemoteExpired)
			}
		}
	}
	s := text(t, out)
	for _, want := range []string{postBefore, postAfter, "GRP0:0: CPU 1", "CPU 1 ran", "of CPU 0: ", "driver", "0 isolated CPU(s) expired a remote timer"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
}

func TestHrtimerSoftShort(t *testing.T) {
	e, _ := Lookup("hrtimer-soft")
	out, err := e.Run(Options{Seed: 1, Short: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 4 {
		t.Fatalf("%d runs", len(out.Runs))
	}
	for i, res := range out.Runs {
		ct := res.Workload("cyclictest").(*workload.CyclictestResult)
		hard := i%2 == 0
		m := 0
		for _, n := range ct.HardirqRT {
			m = max(m, n)
		}
		// Soft sleepers leave cyclictest's own sleeper alone in its
		// interrupt; hard ones pile up in front of it.
		if hard && m < 3 || !hard && m != 1 {
			t.Errorf("run %d (hard %v): up to %d hrtimers in the interrupt that woke cyclictest", i, hard, m)
		}
		if ct.Report.Threads[0].Cycles < 490 {
			t.Errorf("run %d: %d cycles in 0.5 s", i, ct.Report.Threads[0].Cycles)
		}
	}
	if s := text(t, out); !strings.Contains(s, "# Max Latencies:") || !strings.Contains(s, "Atom E3825") {
		t.Errorf("report:\n%s", s)
	}
}

func TestKernbenchShort(t *testing.T) {
	e, _ := Lookup("kernbench")
	out, err := e.Run(Options{Seed: 1, Short: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 6 {
		t.Fatalf("%d runs", len(out.Runs))
	}
	// Runs are rows (32 then 2 jobs) by policies none, push, pull.
	for row := 0; row < 2; row++ {
		var el [3]float64
		var wk [3]uint64
		for p := 0; p < 3; p++ {
			kr := out.Runs[row*3+p].Workload("kernbench").(*workload.KernbenchResult)
			el[p], wk[p] = kr.ElapsedS, kr.TimerWakeups
		}
		for p := 1; p < 3; p++ {
			if math.Abs(el[p]-el[0])/el[0] > 0.01 {
				t.Errorf("row %d: elapsed %v differ by more than 1%%", row, el)
			}
		}
		if wk[2] >= wk[0] {
			t.Errorf("row %d: timer wakeups none %d, pull %d: pull should wake idle CPUs less", row, wk[0], wk[2])
		}
	}
}

func TestPanicShort(t *testing.T) {
	e, _ := Lookup("panic")
	out, err := e.Run(Options{Seed: 1, Short: true, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	busy := out.Runs[0].Workload("panic").(*workload.PanicResult)
	halt := out.Runs[1].Workload("panic").(*workload.PanicResult)
	if busy.BusyS < 1.99 || halt.BusyS*100 > busy.BusyS {
		t.Errorf("busy-wait %.6f s, halt %.6f s of CPU time in 2 s", busy.BusyS, halt.BusyS)
	}
	if !strings.Contains(text(t, out), "1964x") {
		t.Errorf("the post's ratio is missing:\n%s", text(t, out))
	}
}

// The same seed gives the same report; the JSON has the shape.
func TestReproDeterministicAndJSON(t *testing.T) {
	e, _ := Lookup("isolation")
	a, err := e.Run(Options{Seed: 3, Short: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Run(Options{Seed: 3, Short: true})
	if err != nil {
		t.Fatal(err)
	}
	if text(t, a) != text(t, b) {
		t.Error("same seed, different reports")
	}
	j, err := json.Marshal(a.JSON())
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Experiment string           `json:"experiment"`
		Runs       []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	if v.Experiment != "isolation" || len(v.Runs) != 2 || v.Runs[0]["policy"] != "pull" || v.Runs[1]["policy"] != "pull-isolated" {
		t.Errorf("JSON: %s", j[:200])
	}
}

func TestLookup(t *testing.T) {
	for _, e := range Experiments() {
		if got, err := Lookup(e.Name); err != nil || got != e {
			t.Errorf("Lookup(%q): %v", e.Name, err)
		}
	}
	if _, err := Lookup("isolatoin"); err == nil || !strings.Contains(err.Error(), "isolation, hrtimer-soft, kernbench, panic") {
		t.Errorf("unknown experiment: %v", err)
	}
	e, _ := Lookup("panic")
	if _, err := e.Run(Options{Short: true, Set: []string{"cost.nope=1"}}); err == nil {
		t.Error("a bad --set was accepted")
	}
}
