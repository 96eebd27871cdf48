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

// oslatMachine is the benchmarks' machine: n CPUs on 8 nodes (one per 64
// CPUs below 512, or the nodes given), oslat on every CPU but the first
// of each node, the housekeeping mix, 100 ms of warm-up.
func oslatMachine(n, nodes int, d time.Duration) (sim.Config, cpumask.Mask) {
	if nodes == 0 {
		nodes = 8
		if n < 512 {
			nodes = max(1, n/64)
		}
	}
	var list cpumask.Mask
	for c := 0; c < n; c++ {
		if c%(n/nodes) != 0 {
			list.Set(c)
		}
	}
	return sim.Config{CPUs: n, Nodes: nodes, HZ: 250, Policy: cpu.PullIsolated, Costs: costs(), Platform: "server",
		Warmup: 100 * time.Millisecond, Duration: d, Seed: 1}, list
}

// benchRun runs cfg b.N times and reports simulated events per wall
// second and the wall time per simulated CPU-second.
func benchRun(b *testing.B, c sim.Config, workloads func() []sim.Workload) {
	var events uint64
	for b.Loop() {
		res, err := sim.Run(c, workloads()...)
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/el/1e6, "Mevents/s")
	b.ReportMetric(el/float64(b.N)/(float64(c.CPUs)*(c.Warmup+c.Duration).Seconds())*1e9, "ns/CPU-s")
}

// BenchmarkOslatMachine simulates ten seconds of oslat on every CPU but
// the first of each node, with the housekeeping mix, for machines of 64
// to 8192 CPUs (8 nodes from 512 CPUs; 8192 on 64 nodes). It reports
// simulated events per wall second and the cost per CPU-second, which
// should stay flat: the simulator's cost is linear in CPUs x duration.
//
//	go test -run '^$' -bench OslatMachine -benchtime 1x ./sim
func BenchmarkOslatMachine(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024, 2048, 4096, 8192} {
		nodes := 0
		if n == 8192 {
			nodes = 64
		}
		b.Run(fmt.Sprintf("cpus=%d", n), func(b *testing.B) {
			c, list := oslatMachine(n, nodes, 10*time.Second)
			benchRun(b, c, func() []sim.Workload {
				return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(list, "")}
			})
		})
	}
}

// BenchmarkOslatTicks is BenchmarkOslatMachine without the housekeeping
// mix: nothing but the ticks of busy CPUs and their oslat samples, no
// timer softirq. It is the floor under the machine's cost per CPU-second
// (a tick's cost draw, the tick core's checks, the sample), which no
// faster timer code can lower.
//
//	go test -run '^$' -bench OslatTicks -benchtime 1x ./sim
func BenchmarkOslatTicks(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("cpus=%d", n), func(b *testing.B) {
			c, list := oslatMachine(n, 0, 10*time.Second)
			benchRun(b, c, func() []sim.Workload { return []sim.Workload{workload.NewOslat(list, "")} })
		})
	}
}

// BenchmarkOslatDuration is the 1024-CPU machine of BenchmarkOslatMachine
// for 2.5 to 40 simulated seconds: the cost per CPU-second should not
// depend on the length of the run.
//
//	go test -run '^$' -bench OslatDuration -benchtime 1x ./sim
func BenchmarkOslatDuration(b *testing.B) {
	for _, d := range []time.Duration{2500 * time.Millisecond, 10 * time.Second, 40 * time.Second} {
		b.Run(fmt.Sprintf("duration=%v", d), func(b *testing.B) {
			c, list := oslatMachine(1024, 0, d)
			benchRun(b, c, func() []sim.Workload {
				return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(list, "")}
			})
		})
	}
}

// timers is a workload of k timers per CPU, each re-armed on its CPU
// from its own callback every 8 to 23 ticks (and so kept busy: a wheel
// of k pending timers per CPU).
type timers struct{ k int }

func (timers) Name() string                           { return "timers" }
func (timers) Result(*sim.Machine) sim.WorkloadResult { return nil }
func (w timers) Start(m *sim.Machine) error {
	for c := 0; c < m.NumCPUs(); c++ {
		for i := 0; i < w.k; i++ {
			period := uint64(8 + (c*7+i*5)%16)
			t := m.NewTimer("bench", cpu.Pinned, func(x *sim.Exec, t *sim.Timer) {
				x.Spend(300)
				x.AddOn(t, x.CPU, x.Jiffies()+period)
			})
			m.AddOn(t, c, m.Jiffies()+period+uint64(i%8))
		}
	}
	return nil
}

// BenchmarkTimers is the 256-CPU machine of BenchmarkOslatMachine with 0
// to 64 extra timers per CPU, each expiring every 32-92 ms: the cost of a
// CPU-second grows with the timers that expire in it.
//
//	go test -run '^$' -bench Timers -benchtime 1x ./sim
func BenchmarkTimers(b *testing.B) {
	for _, k := range []int{0, 4, 16, 64} {
		b.Run(fmt.Sprintf("timers=%d", k), func(b *testing.B) {
			c, list := oslatMachine(256, 0, 10*time.Second)
			benchRun(b, c, func() []sim.Workload {
				return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(list, ""), timers{k}}
			})
		})
	}
}
