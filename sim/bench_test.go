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

// BenchmarkOslatMachine simulates ten seconds of oslat on every CPU but
// the first of each node (8 nodes, or one per 64 CPUs below 512), with
// the housekeeping mix, for machines of 64 to 4096 CPUs. It reports
// simulated events per wall second and the cost per CPU-second, which
// should stay flat: the simulator's cost is linear in CPUs x duration.
//
//	go test -run '^$' -bench OslatMachine -benchtime 1x ./sim
func BenchmarkOslatMachine(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024, 2048, 4096} {
		b.Run(fmt.Sprintf("cpus=%d", n), func(b *testing.B) {
			nodes := 8
			if n < 512 {
				nodes = max(1, n/64)
			}
			var list cpumask.Mask
			for c := 0; c < n; c++ {
				if c%(n/nodes) != 0 {
					list.Set(c)
				}
			}
			c := sim.Config{CPUs: n, Nodes: nodes, HZ: 250, Policy: cpu.PullIsolated, Costs: costs(), Platform: "server",
				Warmup: 100 * time.Millisecond, Duration: 10 * time.Second, Seed: 1}
			var events uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := sim.Run(c, workload.NewHousekeeping(), workload.NewOslat(list, ""))
				if err != nil {
					b.Fatal(err)
				}
				events += res.Events
			}
			el := b.Elapsed().Seconds()
			b.ReportMetric(float64(events)/el/1e6, "Mevents/s")
			b.ReportMetric(el/float64(b.N)/(float64(n)*10.1)*1e9, "ns/CPU-s")
		})
	}
}
