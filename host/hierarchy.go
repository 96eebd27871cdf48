package host

import (
	"fmt"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// hierarchy builds the hierarchy as the kernel does: sized for the
// possible CPUs and nodes, the present CPUs brought up in ascending order,
// the online ones available, isolated ones excluded by the model.
func (r *Report) hierarchy() {
	if r.Policy != cpu.Pull && r.Policy != cpu.PullIsolated {
		return
	}
	exclude := r.Policy == cpu.PullIsolated
	iso := hier.Isolation{Domain: r.Domain, NohzFull: r.NohzFull, Timekeeper: -1}
	if exclude {
		iso.CpusetIsolated = r.Partition
	}
	if !r.NohzFull.Empty() {
		iso.Timekeeper = r.Timekeeper
	}
	h, err := hier.New(hier.Options{NodeOf: r.NodeOf, Nodes: r.Nodes, ExcludeIsolated: exclude, Isolation: iso})
	if err != nil {
		r.notef("no hierarchy drawn: %v", err)
		return
	}
	for c := r.Present.First(); c >= 0; c = r.Present.Next(c) {
		if err := h.Prepare(c); err != nil {
			r.warnf("the kernel cannot bring CPU %d up into its hierarchy (it WARNs): %v", c, err)
		}
	}
	for c := r.Online.First(); c >= 0; c = r.Online.Next(c) {
		_ = h.SetAvailable(c, false) // prepared above, or already warned about
	}
	h.InitIsolation(nil)
	if exclude && !r.Partition.Empty() {
		h.ExcludeIsolated(r.Domain.Or(r.Partition), nil)
	}
	r.Hierarchy, r.BootLine = h, h.BootLine()
	if r.BootLine == "" {
		return
	}
	r.Picture = h.Picture()
}

// migrators predicts who may run other CPUs' timers once the workload
// runs (package migrators): the workload's busy CPUs (oslat's, by default
// the isolated and nohz_full ones) always active unless nohz_full, under
// nohz_full the timekeeper too, every other CPU idle but for transients.
func (r *Report) migrators() error {
	if r.Hierarchy == nil || r.BootLine == "" {
		return nil
	}
	busy := r.Busy
	if r.Workload != "" && r.Workload != "oslat:"+r.Busy.String() {
		cfg := sim.Config{CPUs: r.CPUs, Isolcpus: r.Domain, NohzFull: r.NohzFull, Partition: r.Partition}
		opts := workload.DefaultOptions()
		w, err := workload.Parse(r.Workload, &cfg, &opts)
		if err != nil {
			return fmt.Errorf("--workload: %v", err)
		}
		busy = workload.Busy(w).And(r.Online)
	}
	r.Migrators = migrators.Of(r.Hierarchy, migrators.AlwaysActive(busy, r.NohzFull, r.Hierarchy.Available(), r.Timekeeper))
	isolated := r.Domain.Or(r.NohzFull).Or(r.Partition)
	r.IsolatedHandlers = r.Migrators.Handlers.And(isolated)
	return nil
}
