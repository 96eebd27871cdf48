package workload

import (
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
)

func testConfig(n int) sim.Config {
	p, _ := sim.PlatformByName("server")
	return sim.Config{CPUs: n, Nodes: 2, HZ: 250, Policy: cpu.Pull, Costs: p.Costs, Platform: "server",
		Warmup: 500 * time.Millisecond, Duration: time.Second, Seed: 1, Check: true}
}

func TestParse(t *testing.T) {
	c := testConfig(16)
	c.Isolcpus = cpumask.MustParse("1-7,9-15")
	o := DefaultOptions()
	for _, tc := range []struct {
		spec  string
		check func(sim.Workload) string
		err   string
	}{
		{spec: "oslat", check: func(w sim.Workload) string {
			if o := w.(*Oslat); o.CPUs.String() != "1-7,9-15" || o.List != "1-7,9-15" {
				return "default list " + o.CPUs.String()
			}
			return ""
		}},
		{spec: "oslat:2-3", check: func(w sim.Workload) string {
			if w.(*Oslat).CPUs.String() != "2-3" {
				return "list"
			}
			return ""
		}},
		{spec: "cyclictest:stress=8,interval=500,prio=80,hist=100,cpus=0-1", check: func(w sim.Workload) string {
			c := w.(*Cyclictest)
			if c.Stress != 8 || c.IntervalUS != 500 || c.Prio != 80 || c.Hist != 100 || c.CPUs.String() != "0-1" {
				return "options"
			}
			return ""
		}},
		{spec: "cyclictest", check: func(w sim.Workload) string {
			if c := w.(*Cyclictest); c.Stress != 0 || c.Prio != 99 || c.CPUs.Weight() != 16 {
				return "defaults"
			}
			return ""
		}},
		{spec: "kernbench:8", check: func(w sim.Workload) string {
			if w.(*Kernbench).Jobs != 8 {
				return "jobs"
			}
			return ""
		}},
		{spec: "idle"},
		{spec: "panic:5:halt", check: func(w sim.Workload) string {
			if p := w.(*Panic); p.CPU != 5 || !p.Halt {
				return "panic"
			}
			return ""
		}},
		{spec: "panic:5", check: func(w sim.Workload) string {
			if w.(*Panic).Halt {
				return "busy is the default"
			}
			return ""
		}},
		// A cpulist inside the options may hold commas; the old forms
		// still read as they did.
		{spec: "cyclictest:cpus=1,3", check: func(w sim.Workload) string {
			if c := w.(*Cyclictest); c.CPUs.String() != "1,3" || c.Stress != 0 {
				return "cpus " + c.CPUs.String()
			}
			return ""
		}},
		{spec: "cyclictest:stress=2,cpus=1,3,5-6,prio=70", check: func(w sim.Workload) string {
			if c := w.(*Cyclictest); c.CPUs.String() != "1,3,5-6" || c.Stress != 2 || c.Prio != 70 {
				return "options " + c.CPUs.String()
			}
			return ""
		}},
		{spec: "cyclictest:cpus=0-7:2/4,stress=1", check: func(w sim.Workload) string {
			if c := w.(*Cyclictest); c.CPUs.String() != "0-1,4-5" || c.Stress != 1 {
				return "group syntax " + c.CPUs.String()
			}
			return ""
		}},
		{spec: "cyclictest:stress=2,3", err: `option "3" is not KEY=VALUE`},
		{spec: "cyclictest:cpus=1,,3", err: `option "" is not KEY=VALUE`},
		{spec: "cyclictest:", err: "no option after ':'"},
		{spec: "cyclictest:cpus=0-7:0/2", err: "selects no CPU"},
		// An empty list is a mistake, as a list that selects no CPU is,
		// not a request for the default (it read as every CPU).
		{spec: "oslat:", err: "selects no CPU"},
		{spec: "oslat:0-7:0/2", err: "selects no CPU"},
		{spec: "oslat:1-99", err: "beyond the last CPU 15"},
		{spec: "oslat:x", err: "oslat:x"},
		{spec: "cyclictest:stress=-1", err: "non-negative"},
		{spec: "cyclictest:stress", err: "KEY=VALUE"},
		{spec: "cyclictest:bogus=1", err: `unknown option "bogus"`},
		{spec: "cyclictest:prio=100", err: "outside 1-99"},
		{spec: "cyclictest:interval=0", err: "positive"},
		{spec: "kernbench", err: "JOBS >= 1"},
		{spec: "kernbench:0", err: "JOBS >= 1"},
		{spec: "idle:3", err: "no argument"},
		{spec: "panic", err: "panic:CPU"},
		{spec: "panic:16", err: "out of range"},
		{spec: "panic:1:nap", err: `unknown mode "nap"`},
		{spec: "stress-ng", err: `unknown workload "stress-ng"`},
	} {
		w, err := Parse(tc.spec, &c, &o)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %v, want an error with %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.spec, err)
			continue
		}
		if tc.check != nil {
			if why := tc.check(w); why != "" {
				t.Errorf("Parse(%q): %s", tc.spec, why)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"oslat", "oslat:1-3", "cyclictest:stress=4,cpus=0-1", "kernbench:2", "idle", "panic:1:halt", "panic::", "cyclictest:=", "oslat:", "cyclictest:cpus=1,3,stress=2", "cyclictest:cpus=1,"} {
		f.Add(s)
	}
	c := testConfig(8)
	o := DefaultOptions()
	f.Fuzz(func(t *testing.T, spec string) {
		w, err := Parse(spec, &c, &o)
		if err == nil && w == nil {
			t.Fatalf("Parse(%q) returned neither a workload nor an error", spec)
		}
		if err != nil && w != nil {
			t.Fatalf("Parse(%q) returned a workload and an error", spec)
		}
	})
}

// round_jiffies at HZ=250: to a whole second, down within the first
// quarter second, else up, with 3 ticks of skew per CPU.
func TestRoundJiffies(t *testing.T) {
	for _, c := range []struct {
		j    uint64
		cpu  int
		now  uint64
		want uint64
	}{
		{1010, 0, 900, 1000},  // 10 ticks past a second: down
		{1100, 0, 900, 1250},  // 100 ticks past: up
		{1061, 0, 900, 1000},  // 61 < HZ/4 = 62: down
		{1062, 0, 900, 1250},  // 62 is not below 62: up
		{1010, 2, 900, 994},   // skew 6: (1016 rounded down to 1000) - 6
		{1010, 0, 1005, 1010}, // the rounded value is in the past: keep j
	} {
		if got := RoundJiffies(c.j, c.cpu, 250, c.now); got != c.want {
			t.Errorf("RoundJiffies(%d, cpu %d, now %d) = %d, want %d", c.j, c.cpu, c.now, got, c.want)
		}
	}
}

// Per-node classes live on each node's first housekeeping CPU; delayed
// work is pinned when nohz_full is in use.
func TestHousekeepingPlacement(t *testing.T) {
	c := testConfig(16)
	c.Isolcpus = cpumask.MustParse("1-7,9-15")
	hk := NewHousekeeping()
	m, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(hk); err != nil {
		t.Fatal(err)
	}
	homes := map[string][]int{}
	for _, ht := range hk.timers {
		homes[ht.c.Name] = append(homes[ht.c.Name], ht.home)
	}
	if got := homes["driver"]; len(got) != 2 || got[0] != 0 || got[1] != 8 {
		t.Errorf("driver homes %v, want [0 8]", got)
	}
	if got := homes["vmstat"]; len(got) != 2 {
		t.Errorf("vmstat on %v, want the 2 housekeeping CPUs", got)
	}
	if got := homes["neigh"]; len(got) != 1 || got[0] != 0 {
		t.Errorf("neigh on %v", got)
	}
	if hk.pinDelayedWork() {
		t.Error("delayed work pinned without nohz_full")
	}
	c.NohzFull = cpumask.MustParse("9-15")
	c.Isolcpus = cpumask.MustParse("1-7")
	hk2 := NewHousekeeping()
	m2, err := sim.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Run(hk2); err != nil {
		t.Fatal(err)
	}
	if !hk2.pinDelayedWork() {
		t.Error("nohz_full in use: delayed work must be pinned (housekeeping_enabled(HK_TYPE_TIMER))")
	}
	for _, s := range hk2.Stats() {
		if s.Handler != s.Owner && s.Class == "writeback" {
			t.Errorf("pinned writeback ran remotely: %+v", s)
		}
	}
}

func TestKernbenchFinishes(t *testing.T) {
	for _, jobs := range []int{1, 4, 16} {
		c := testConfig(8)
		c.Duration = time.Hour
		p := DefaultKernbench()
		p.Work, p.Serial = 5*time.Second, 500*time.Millisecond
		k := NewKernbench(jobs, p)
		res, err := sim.Run(c, NewHousekeeping(), k)
		if err != nil {
			t.Fatal(err)
		}
		r := res.Workload("kernbench").(*KernbenchResult)
		lower := p.Work.Seconds()/float64(min(jobs, 8)) + p.Serial.Seconds()
		if !r.Finished || r.ElapsedS < lower || r.ElapsedS > 2*lower+1 {
			t.Errorf("%d jobs: finished %v in %.3f s, want at least %.3f", jobs, r.Finished, r.ElapsedS, lower)
		}
		if r.Done != r.Compiles {
			t.Errorf("%d jobs: %d of %d compiles done", jobs, r.Done, r.Compiles)
		}
		if got := float64(res.Duration) / 1e9; got != r.ElapsedS {
			t.Errorf("the run ended at %.6f s, the build at %.6f s", got, r.ElapsedS)
		}
	}
}

func TestPanicModes(t *testing.T) {
	var busy [2]float64
	for i, halt := range []bool{false, true} {
		c := testConfig(4)
		c.Check = false
		res, err := sim.Run(c, NewHousekeeping(), &Panic{CPU: 1, Halt: halt, SampleHz: 4000})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Workload("panic").(*PanicResult)
		busy[i] = r.BusyS
		if r.Interrupts < 240 || r.Interrupts > 300 {
			t.Errorf("halt=%v: %d interrupts in 1 s, want the tick's 250 and a few", halt, r.Interrupts)
		}
		for c := 0; c < 4; c++ {
			if c != 1 && res.CPUs[c].Ticks != 0 {
				t.Errorf("stopped CPU %d took %d ticks", c, res.CPUs[c].Ticks)
			}
		}
	}
	if busy[0] < 0.999 || busy[1] > 0.01 {
		t.Errorf("busy-wait %.6f s, halt %.6f s of CPU in 1 s", busy[0], busy[1])
	}
}
