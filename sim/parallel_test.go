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
