package migrators_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// TestSimulatedPullersAmongHandlers runs the simulator, one history among
// those the rules allow, and checks that every CPU that ran another CPU's
// timers in it is among the predicted handlers.
func TestSimulatedPullersAmongHandlers(t *testing.T) {
	for _, tc := range []struct {
		kernel                    string
		cpus, nodes               int
		isolcpus, nohzFull, loads string
		sleepers                  string
	}{
		{kernel: "6.12", cpus: 40, isolcpus: "1-9,11-39", loads: "oslat"},
		{kernel: "7.3", cpus: 40, isolcpus: "1-9,11-39", loads: "oslat"},
		{kernel: "6.12", cpus: 16, nodes: 2, isolcpus: "1-7,9-15", loads: "busy:1-6,9-14", sleepers: "7,15"},
		{kernel: "6.12", cpus: 12, nohzFull: "1-11", loads: "oslat"},
		{kernel: "7.3", cpus: 12, nohzFull: "1-11", loads: "busy:4-11", sleepers: "1-3"},
		{kernel: "6.12", cpus: 18, nodes: 2, loads: "busy:1,10", sleepers: "3-4,12-14"},
		{kernel: "6.12", cpus: 16, loads: "idle"},
	} {
		name := fmt.Sprintf("%s/%dcpus/%s/%s/%s", tc.kernel, tc.cpus, tc.isolcpus, tc.nohzFull, tc.loads)
		t.Run(name, func(t *testing.T) {
			km := model(t, tc.kernel)
			cfg := sim.Config{CPUs: tc.cpus, Nodes: max(tc.nodes, 1), HZ: 250, Isolcpus: mask(t, tc.isolcpus),
				NohzFull: mask(t, tc.nohzFull), Policy: km.Policy(true), ImbalancedNUMA: km.ImbalancedNUMA(),
				Warmup: 200 * time.Millisecond, Duration: time.Second, Seed: 1}
			var w sim.Workload
			var err error
			if b, ok := cutPrefix(tc.loads, "busy:"); ok {
				w = &workload.Loads{Busy: mask(t, b), Sleepers: mask(t, tc.sleepers), Period: 3 * time.Millisecond}
			} else if w, err = workload.Parse(tc.loads, &cfg, ptr(workload.DefaultOptions())); err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(cfg, workload.NewHousekeeping(), w)
			if err != nil {
				t.Fatal(err)
			}
			nodeOf := make([]int, tc.cpus)
			per := (tc.cpus + cfg.Nodes - 1) / cfg.Nodes
			for c := range nodeOf {
				nodeOf[c] = c / per
			}
			p, err := migrators.Predict(migrators.Setup{NodeOf: nodeOf, Nodes: cfg.Nodes, Model: km,
				Domain: cfg.Isolcpus, NohzFull: cfg.NohzFull, Busy: workload.Busy(w), Timekeeper: kernel.Timekeeper(cfg.NohzFull)})
			if err != nil {
				t.Fatal(err)
			}
			var pullers cpumask.Mask
			for _, cr := range res.CPUs {
				for _, rf := range cr.RemoteFrom {
					if rf.CPU != cr.CPU && rf.Count > 0 {
						pullers.Set(cr.CPU)
					}
				}
			}
			if out := pullers.AndNot(p.Handlers); !out.Empty() {
				t.Errorf("the simulated pullers %s are not all among the handlers %s: %s", pullers, p.Handlers, out)
			}
			t.Logf("simulated pullers %s, handlers %s", pullers, p.Handlers)
		})
	}
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}

func ptr[T any](v T) *T { return &v }
