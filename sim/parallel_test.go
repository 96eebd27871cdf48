package sim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// runThreads runs c with its workloads on threads goroutines and returns
// the text report and the JSON (less the wall time).
func runThreads(t *testing.T, c sim.Config, threads int, workloads func(c *sim.Config) []sim.Workload) string {
	t.Helper()
	c.Threads = threads
	res, err := sim.Run(c, workloads(&c)...)
	if err != nil {
		t.Fatal(err)
	}
	text, js := outputs(t, res)
	return fmt.Sprintf("events %d\n%s\n%s", res.Events, text, js)
}

// The output of a seed is byte for byte the same whatever the number of
// goroutines that run the quiet ticks: busy machines big enough for the
// quiet passes to be shared, with idle and isolated CPUs, nohz_full,
// hotplug and cpuset changes, cyclictest's sleepers and PREEMPT_RT.
func TestThreadsSameOutput(t *testing.T) {
	d := 400 * time.Millisecond
	if testing.Short() {
		d = 100 * time.Millisecond
	}
	type tc struct {
		name string
		c    sim.Config
		w    func(c *sim.Config) []sim.Workload
	}
	oslatAll := func(n, nodes int) (sim.Config, cpumask.Mask) {
		var list cpumask.Mask
		for i := 0; i < n; i++ {
			if i%(n/nodes) != 0 {
				list.Set(i)
			}
		}
		c := sim.Config{CPUs: n, Nodes: nodes, HZ: 250, Policy: cpu.PullIsolated, Costs: costs(), Platform: "server",
			Warmup: 100 * time.Millisecond, Duration: d, Seed: 3}
		return c, list
	}
	var cases []tc
	{
		c, list := oslatAll(1024, 8)
		cases = append(cases, tc{"oslat", c, func(*sim.Config) []sim.Workload {
			return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(list, "")}
		}})
	}
	{
		c, _ := oslatAll(768, 4)
		c.Isolcpus = cpumask.MustParse("1-191")
		c.NohzFull = cpumask.MustParse("100-191")
		c.Policy = cpu.Pull
		c.Actions = []sim.Action{
			{At: c.Warmup + d/8, Kind: sim.Offline, CPU: 390},
			{At: c.Warmup + d/4, Kind: sim.SetPartition, Mask: cpumask.MustParse("600-650")},
			{At: c.Warmup + d/2, Kind: sim.Online, CPU: 390},
			{At: c.Warmup + 3*d/4, Kind: sim.SetPartition},
		}
		cases = append(cases, tc{"isolated+hotplug", c, func(*sim.Config) []sim.Workload {
			return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(cpumask.MustParse("1-383,400-700"), ""),
				workload.NewCyclictest(cpumask.MustParse("701-760"), 0)}
		}})
	}
	{
		c, list := oslatAll(1024, 2)
		c.PreemptRT = true
		list = list.AndNot(cpumask.MustParse("0-63"))
		cases = append(cases, tc{"preempt-rt", c, func(*sim.Config) []sim.Workload {
			return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(list, ""),
				workload.NewCyclictest(cpumask.MustParse("1-40"), 4)}
		}})
	}
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			want := runThreads(t, k.c, 1, k.w)
			for _, n := range []int{2, 3} {
				if got := runThreads(t, k.c, n, k.w); got != want {
					t.Errorf("%d goroutines: the output differs from one goroutine's", n)
				}
			}
			if got := runThreads(t, k.c, 2, k.w); got != want {
				t.Error("a second run on 2 goroutines differs")
			}
		})
	}
}

// The late pass's local softirqs, run side by side in segments between
// the ticks that stay on the machine's goroutine, leave the output of a
// seed byte for byte as one goroutine's, which runs every softirq in CPU
// order: isolated and nohz_full CPUs whose global timers the migrators
// pull and re-arm on the owner's base (a cross-CPU re-arm), idle CPUs,
// both hierarchical policies; and with the clocksource watchdog, a timer
// re-armed on the next CPU (not local), no softirq is shared at all.
func TestSoftirqsSameOrder(t *testing.T) {
	d := 600 * time.Millisecond
	if testing.Short() {
		d = 200 * time.Millisecond
	}
	run := func(c sim.Config, threads int, hop bool) (string, [3]uint64) {
		t.Helper()
		c.Threads = threads
		m, err := sim.New(c)
		if err != nil {
			t.Fatal(err)
		}
		hk := workload.NewHousekeeping()
		for i := range hk.Classes {
			if hk.Classes[i].Name == "clocksource_watchdog" {
				hk.Classes[i].Enabled = hop
			}
		}
		// oslat on all but the first CPU of each node and 900-919 (idle).
		var list cpumask.Mask
		for i := 1; i < c.CPUs; i++ {
			if i%(c.CPUs/c.Nodes) != 0 && (i < 900 || i >= 920) {
				list.Set(i)
			}
		}
		res, err := m.Run(hk, workload.NewOslat(list, ""))
		if err != nil {
			t.Fatal(err)
		}
		text, js := outputs(t, res)
		var n [3]uint64
		n[0], n[1], n[2] = sim.SoftirqCounts(m)
		return fmt.Sprintf("events %d\n%s\n%s", res.Events, text, js), n
	}
	for _, pol := range []cpu.Policy{cpu.PullIsolated, cpu.Pull} {
		c := sim.Config{CPUs: 1024, Nodes: 8, HZ: 250, Policy: pol, Costs: costs(), Platform: "server",
			Warmup: 100 * time.Millisecond, Duration: d, Seed: 7,
			Isolcpus: cpumask.MustParse("1-127,129-255"), NohzFull: cpumask.MustParse("1-127")}
		t.Run(pol.String(), func(t *testing.T) {
			want, n1 := run(c, 1, false)
			if n1 != ([3]uint64{}) {
				t.Errorf("one goroutine: %v softirqs local, segments shared, kept serial; want none", n1)
			}
			for _, threads := range []int{2, 4} {
				got, n := run(c, threads, false)
				if got != want {
					t.Errorf("%d goroutines: the output differs from one goroutine's", threads)
				}
				if n[0] == 0 || n[1] == 0 || n[2] == 0 {
					t.Errorf("%d goroutines: %d softirqs local, %d segments shared, %d kept serial; want some of each", threads, n[0], n[1], n[2])
				}
			}
			want, _ = run(c, 1, true)
			got, n := run(c, 4, true)
			if got != want {
				t.Error("with the clocksource watchdog, 4 goroutines: the output differs from one goroutine's")
			}
			if n != ([3]uint64{}) {
				t.Errorf("with the clocksource watchdog: %v softirqs local, segments shared, kept serial; want none", n)
			}
		})
	}
}
