package sweep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/sweep"
	"github.com/tmigr/tmigr/sim/workload"
)

// BenchmarkSweep runs 4 seeds of oslat on 127 of 128 CPUs (10 s
// simulated each) on 1 and on 2 workers, side by side: on a machine with
// two free cores the second should take about half the time of the
// first.
//
//	go test -run '^$' -bench Sweep -benchtime 3x ./sim/sweep
func BenchmarkSweep(b *testing.B) {
	p, _ := sim.PlatformByName("server")
	run := func(ctx context.Context, pt sweep.Point, progress func(float64)) (json.RawMessage, error) {
		c := sim.Config{CPUs: 128, Nodes: 2, HZ: 250, Policy: cpu.PullIsolated, Costs: p.Costs, Platform: "server",
			Warmup: 100 * time.Millisecond, Duration: 10 * time.Second, Seed: pt.Seed}
		res, err := sim.RunContext(ctx, c, func(pr sim.Progress) { progress(pr.Done()) },
			workload.NewHousekeeping(), workload.NewOslat(cpumask.Range(1, 63).Or(cpumask.Range(65, 127)), ""))
		if err != nil {
			return nil, err
		}
		r := res.Report()
		r.WallS = 0
		return json.Marshal(r)
	}
	seeds, _ := sweep.ParseSeeds("1-4")
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				if err := sweep.Run(context.Background(), sweep.Plan{Seeds: seeds}, sweep.Options{Workers: w}, run, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
