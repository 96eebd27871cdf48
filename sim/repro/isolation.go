package repro

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// The post's rows (seed 000/001), as quoted there.
// Whitespace is normalised ("Maximum:     1203" in the post).
const (
	postBefore = "Maximum: 1203 10 3 4 ... 5 (us)"
	postAfter  = "Maximum: 10 4 3 4 3 ... 5 (us)"
)

// IsolationMachine returns the machine of seeds 000/001 for n CPUs: every
// 32nd CPU (0, 32, 64, 96 on 128) is a housekeeping CPU, the others are
// isolated (isolcpus=1-31,33-63,65-95,97-127 on 128), on two NUMA nodes.
// The post names "the CPU with the lowest count in a timer migration
// hierarchy (here 1 and 65)": two sockets of 64 CPUs each fit that, with
// the devices whose driver work spiked attached one to each socket, whose
// interrupts, and so whose timers, go to the socket's first housekeeping
// CPU (0 and 64).
func IsolationMachine(n int) (cpus, nodes int, iso cpumask.Mask) {
	nodes = 2
	if n < 16 {
		nodes = 1
	}
	for c := 0; c < n; c++ {
		if c%32 != 0 {
			iso.Set(c)
		}
	}
	return n, nodes, iso
}

func runIsolation(o Options) (*Outcome, error) {
	n, dur := 128, 62*time.Second
	if o.Short {
		n, dur = 64, time.Second
	}
	if o.Duration > 0 {
		dur = o.Duration
	}
	cpus, nodes, iso := IsolationMachine(n)
	out := &Outcome{Experiment: "isolation"}
	type run struct {
		policy cpu.Policy
		res    *sim.Result
		oslat  *workload.OslatResult
		hk     *workload.Housekeeping
	}
	var runs []run
	after := o.kernel()
	for _, km := range []kernel.Model{kernel.For(kernel.V(6, 18, 0)), after} {
		pol := km.Policy(true)
		mc, err := newMachine(o, "server", sim.Config{CPUs: cpus, Nodes: nodes, HZ: 250, Isolcpus: iso, Policy: pol,
			ImbalancedNUMA: km.ImbalancedNUMA(), Duration: dur})
		if err != nil {
			return nil, err
		}
		ol := workload.NewOslat(iso, iso.String())
		res, err := mc.run(ol)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", pol, err)
		}
		runs = append(runs, run{pol, res, res.Workload("oslat").(*workload.OslatResult), mc.hk})
		out.Runs = append(out.Runs, res)
	}
	c := &runs[0].res.Config
	out.printf("isolation (seed posts 000, 001): oslat on the isolated CPUs, policies %s (before, Linux 6.9-6.18) and %s (after, Linux %s)\n",
		runs[0].policy, runs[1].policy, after.Version.Series())
	out.printf("  machine: %s\n", describe(c))
	out.printf("  # oslat -c %s -D %s      (seed %d, %.0f s measured per run)\n\n", iso, durArg(dur), o.Seed, dur.Seconds())
	out.printf("  %-34s %s\n", "post, before the change:", postBefore)
	out.printf("  %-34s %s\n", "simulated, pull (Linux 6.9-6.18):", report.MaximumRow(runs[0].oslat.Max(), 4))
	out.printf("  %-34s %s\n", "post, after the change:", postAfter)
	out.printf("  %-34s %s\n\n", fmt.Sprintf("simulated, %s (%s):", runs[1].policy, after.Version.Series()), report.MaximumRow(runs[1].oslat.Max(), 4))
	for _, r := range runs {
		out.printf("  worst CPUs under %-14s %s\n", r.policy.String()+":", worst(r.oslat, 4))
	}
	out.printf("\nWhy: who expired whose timers (every timer function runs from the timer softirq's expiry pass)\n")
	r0 := runs[0]
	out.printf("  pull: the isolated CPUs take part in the hierarchy. oslat keeps them busy, so each group's migrator is\n")
	out.printf("  its lowest active child (the kernel's rule: the lowest set bit of the active mask, tmigr_inactive_up):\n")
	out.printf("    %s\n", migratorLine(r0.res, cpumask.Range(0, cpus-1).AndNot(iso)))
	out.printf("  and the migrators expire the idle housekeeping CPUs' global timers, the driver's among them:\n")
	for _, l := range remoteSummary(r0.hk.Stats(), nil) {
		out.printf("    %s\n", l)
	}
	for _, cr := range r0.res.CPUs {
		if iso.Test(cr.CPU) && cr.RemoteExpired > 0 {
			out.printf("    CPU %d (isolated): %d remote expiries in all, oslat maximum %d µs\n", cr.CPU, cr.RemoteExpired, maxOf(r0.oslat, cr.CPU))
		}
	}
	var idleMigrators, busyMigrators []string
	for _, g := range r0.res.Migrators {
		if g.Level != 0 || g.CPU < 0 || !iso.Test(g.CPU) || !hasHousekeeping(r0.res, g.Group, cpumask.Range(0, cpus-1).AndNot(iso)) {
			continue
		}
		if r0.res.CPUs[g.CPU].RemoteExpired == 0 {
			idleMigrators = append(idleMigrators, fmt.Sprintf("%d (%s)", g.CPU, g.Group))
		} else {
			busyMigrators = append(busyMigrators, fmt.Sprint(g.CPU))
		}
	}
	if len(idleMigrators) > 0 {
		out.printf("  CPUs %s are migrators too, but their groups' housekeeping CPUs arm no global timer of their\n", strings.Join(idleMigrators, ", "))
		out.printf("  own (their vmstat timer is pinned and deferrable): the devices' timers are on the first housekeeping\n")
		out.printf("  CPU of each node, whose groups' migrators are CPUs %s", strings.Join(busyMigrators, " and "))
		if strings.Join(busyMigrators, ",") == "1,65" {
			out.printf(": the two the post names")
		}
		out.printf(".\n")
	}
	r1 := runs[1]
	isoRemote := 0
	for _, cr := range r1.res.CPUs {
		if iso.Test(cr.CPU) && cr.RemoteExpired > 0 {
			isoRemote++
		}
	}
	if runs[1].policy == cpu.PullIsolated {
		out.printf("  pull-isolated: the isolated CPUs are unavailable to the hierarchy; %d isolated CPU(s) expired a remote timer.\n", isoRemote)
		out.printf("  The housekeeping CPUs handle each other's timers (the last one to go idle wakes for the first event):\n")
		for _, l := range remoteSummary(r1.hk.Stats(), nil) {
			out.printf("    %s\n", l)
		}
		out.printf("  so the isolated CPUs see only their own tick: maxima at the noise floor (worst %s).\n", worst(r1.oslat, 1))
	} else {
		out.printf("  %s (Linux %s) keeps the isolated CPUs in the hierarchy too: %d isolated CPU(s) expired a remote timer.\n",
			runs[1].policy, after.Version.Series(), isoRemote)
	}
	if o.Full {
		for _, r := range runs {
			out.printf("\n--- policy %s: the full oslat report and migration summary ---\n", r.policy)
			if err := r.res.WriteText(&out.text); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func durArg(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// worst lists the n CPUs with the highest maxima.
func worst(r *workload.OslatResult, n int) string {
	type cm struct {
		cpu int
		max uint64
	}
	var all []cm
	for _, t := range r.Report.Threads {
		all = append(all, cm{t.CPU, t.MaxLat})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].max > all[j].max })
	var parts []string
	for i := 0; i < n && i < len(all); i++ {
		parts = append(parts, fmt.Sprintf("CPU %d %d µs", all[i].cpu, all[i].max))
	}
	return strings.Join(parts, ", ")
}

func maxOf(r *workload.OslatResult, cpu int) uint64 {
	for _, t := range r.Report.Threads {
		if t.CPU == cpu {
			return t.MaxLat
		}
	}
	return 0
}

// migratorLine names the migrators of the groups that hold a housekeeping
// CPU, and of every group above level 0.
func migratorLine(r *sim.Result, hk cpumask.Mask) string {
	var parts []string
	for _, g := range r.Migrators {
		if g.CPU < 0 {
			continue
		}
		if g.Level == 0 {
			// Only the groups of housekeeping CPUs matter here.
			if !hasHousekeeping(r, g.Group, hk) {
				continue
			}
		}
		parts = append(parts, fmt.Sprintf("%s: CPU %d", g.Group, g.CPU))
	}
	return strings.Join(parts, ", ")
}

func hasHousekeeping(r *sim.Result, group string, hk cpumask.Mask) bool {
	for _, g := range r.GroupCPUs {
		if g.Group == group {
			for _, c := range g.CPUs {
				if hk.Test(c) {
					return true
				}
			}
		}
	}
	return false
}
