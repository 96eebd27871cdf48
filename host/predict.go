package host

import (
	"fmt"
	"sort"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// Prediction is the machine simulated under its kernel's model.
type Prediction struct {
	Workload string
	Duration time.Duration
	Warmup   time.Duration
	Seed     uint64
	// Pulls are the wheel timers each CPU ran for another during the
	// measured time, by handler, then owner.
	Pulls []Pull
	// IsolatedPullers are the isolated (or nohz_full) CPUs that ran other
	// CPUs' timers.
	IsolatedPullers cpumask.Mask
	// Latency is each measured CPU's worst latency (µs), as the workload's
	// tool reports it (oslat's Maximum, cyclictest's Max).
	Latency map[int]float64
	// WorstCPU and WorstUS are the worst latency among the isolated CPUs
	// (WorstCPU -1: none measured).
	WorstCPU int
	WorstUS  float64
}

// Pull is a CPU running another CPU's timers.
type Pull struct {
	Handler int    `json:"handler"`
	Owner   int    `json:"owner"`
	Count   uint64 `json:"count"`
}

// PerSecond returns a count as a rate over the measured time.
func (p *Prediction) PerSecond(n uint64) float64 {
	if p.Duration <= 0 {
		return 0
	}
	return float64(n) / p.Duration.Seconds()
}

// predict runs the simulator on the machine. A workload that does not
// parse is an error; a machine the simulator refuses (a setup with no
// housekeeping CPU) is reported in PredictionErr.
func (r *Report) predict(o Options) error {
	plat, err := sim.PlatformByName("server")
	if err != nil {
		return err
	}
	cfg := sim.Config{CPUs: r.CPUs, Nodes: min(r.Nodes, r.CPUs), NodeOf: r.NodeOf, HZ: r.HZ,
		Isolcpus: r.Domain, NohzFull: r.NohzFull, Partition: r.Partition,
		Policy: r.Policy, PreemptRT: r.PreemptRT, Platform: plat.Name, Costs: plat.Costs,
		Warmup: o.Warmup, Duration: o.Duration, Seed: o.Seed}
	if cfg.Duration == 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Warmup == 0 {
		cfg.Warmup = time.Second
	}
	if r.Nodes > r.CPUs {
		r.notef("the simulation spreads the housekeeping devices over %d nodes, not the %d possible ones (more nodes than CPUs)", cfg.Nodes, r.Nodes)
	}
	for c := 0; c < r.CPUs; c++ {
		if !r.Online.Test(c) {
			cfg.Actions = append(cfg.Actions, sim.Action{At: 0, Kind: sim.Offline, CPU: c})
		}
	}
	if err := cfg.Validate(); err != nil {
		r.PredictionErr = "the simulator refuses this machine: " + err.Error()
		return nil
	}
	hk := workload.NewHousekeeping()
	wopts := workload.DefaultOptions()
	w, err := workload.Parse(r.Workload, &cfg, &wopts)
	if err != nil {
		return fmt.Errorf("--workload: %v", err)
	}
	res, err := sim.Run(cfg, hk, w)
	if err != nil {
		r.PredictionErr = "the simulation failed: " + err.Error()
		return nil
	}
	p := &Prediction{Workload: r.Workload, Duration: cfg.Duration, Warmup: cfg.Warmup, Seed: cfg.Seed,
		Latency: map[int]float64{}, WorstCPU: -1}
	isolated := r.Domain.Or(r.NohzFull).Or(r.Partition)
	for _, cr := range res.CPUs {
		for _, rf := range cr.RemoteFrom {
			if rf.Count == 0 {
				continue
			}
			p.Pulls = append(p.Pulls, Pull{Handler: cr.CPU, Owner: rf.CPU, Count: rf.Count})
			if isolated.Test(cr.CPU) {
				p.IsolatedPullers.Set(cr.CPU)
			}
		}
	}
	sort.Slice(p.Pulls, func(i, j int) bool {
		a, b := p.Pulls[i], p.Pulls[j]
		return a.Handler < b.Handler || a.Handler == b.Handler && a.Owner < b.Owner
	})
	for _, wr := range res.Workloads {
		if wr == nil {
			continue
		}
		for c, l := range wr.Latency() {
			p.Latency[c] = max(p.Latency[c], l[2])
		}
	}
	for c, us := range p.Latency {
		if isolated.Test(c) && (p.WorstCPU < 0 || us > p.WorstUS || us == p.WorstUS && c < p.WorstCPU) {
			p.WorstCPU, p.WorstUS = c, us
		}
	}
	r.Prediction = p
	return nil
}
