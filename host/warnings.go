package host

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// warnings looks for setups that likely do not do what their author
// meant, and notes what else the reader should know. The warnings about
// parameters the kernel ignores come from isolation; the one about
// isolated migrators from migratorWarning, after the prediction.
func (r *Report) warnings(h *Host, noHzFull int) {
	isolated := r.Domain.Or(r.Partition)
	r.isolcpusWarnings(h)

	if nf := r.NohzFull.AndNot(isolated); !nf.Empty() {
		r.warnf("nohz_full %s %s in neither isolcpus (domain) nor an isolated partition: the scheduler still balances tasks "+
			"onto %s, and with a second runnable task the tick restarts; list %s in isolcpus=domain,managed_irq,%s too, "+
			"or keep every other task off with affinity", cpus(nf), verb(nf, "is", "are"), them(nf), them(nf), nf)
	}
	if r.IrqAffinity != nil {
		if over := r.IrqAffinity.And(isolated.Or(r.NohzFull)); !over.Empty() {
			hk := cpumask.Range(0, r.CPUs-1).AndNot(isolated).AndNot(r.NohzFull).And(r.Online)
			r.warnf("irqaffinity=%s includes isolated %s: device interrupts go there by default, and the timers their "+
				"handlers arm (network, storage) are queued there; give irqaffinity=%s (the housekeeping CPUs)", r.IrqAffinity, cpus(over), hk)
		}
	}

	// What kernel.timer_migration does here.
	tm := r.TimerMigration != 0
	if r.TimerMigration >= 0 {
		r.notef("%s", r.Model.TimerMigration(tm))
	} else if r.Policy != cpu.None {
		r.notef("no %s: the kernel has no timer_migration sysctl (built without SMP or NO_HZ_COMMON?); 1 assumed", fileTimerMigration)
	}
	if r.Model.Has(kernel.SysctlHrtimerOnly) && r.TimerMigration == 0 {
		r.warnf("timer_migration=0 does not keep timers local on %s: since 6.9 (%s) it only keeps non-pinned hrtimers on the CPU "+
			"that starts them; wheel timers still move through the pull hierarchy",
			r.Release.Version.Series(), kernel.SysctlHrtimerOnly.Info().Commit)
	}
	if tm && r.Policy != cpu.None && !r.NohzFull.Empty() {
		r.warnf("timer_migration=1: a non-pinned hrtimer started on a nohz_full CPU (%s) may be queued on a housekeeping CPU, "+
			"since get_nohz_timer_target() only keeps it local on HK_TYPE_TIMER housekeeping CPUs; a sleeper's wakeup then comes "+
			"by IPI (cyclictest sees it). The simulation keeps hrtimers where they are started.", r.NohzFull)
	}

	// Partitions and cpusets.
	if !r.Partition.Empty() && !r.Model.Has(kernel.ExcludeIsolated) && (r.Policy == cpu.Pull) {
		r.warnf("the isolated partition's %s %s in the timer-migration hierarchy on %s: cpuset partitions take CPUs out of it "+
			"from 6.19 (%s)", cpus(r.Partition), verb(r.Partition, "stays", "stay"), r.Release.Version.Series(), kernel.ExcludeIsolated.Info().Commit)
	}
	if hk := r.Online.AndNot(isolated).AndNot(r.NohzFull); hk.Empty() {
		r.warnf("no housekeeping CPU is left: isolcpus, nohz_full and the isolated partitions cover every online CPU (%s); "+
			"the kernel refuses such a setup at boot or in cpuset, so the files read are inconsistent", r.Online)
	}
	for _, cs := range h.Cgroup.V1 {
		if cs.HasLoadBalance && !cs.LoadBalance && strings.Contains(cs.Path, "/") {
			// The root's sched_load_balance=0 only hands the choice to the
			// child cpusets.
			kind := ""
			if cs.Exclusive {
				kind = "exclusive, "
			}
			r.warnf("cgroup v1 cpuset %s (cpus %s, %ssched_load_balance=0) only takes its CPUs out of scheduler load balancing: "+
				"cgroup v1 has no isolated partitions, and timer migration still counts those CPUs (use isolcpus= or a cgroup v2 "+
				"isolated partition, honoured from 6.19)", cs.Path, cs.CPUs, kind)
		}
	}

	// What the model cannot tell for sure.
	r.modelNotes(h, noHzFull)
}

// isolcpusWarnings checks each isolcpus= for flags that do not mean what
// they look like.
func (r *Report) isolcpusWarnings(h *Host) {
	for _, p := range h.Cmdline.Get("isolcpus") {
		v := cmdline.ParseIsolcpus(p.Value)
		flags, list := v.Flags, v.List
		if v.Invalid != "" {
			r.warnf("%s has an invalid flag: the kernel ignores the whole parameter (\"isolcpus: Invalid flag\")", p)
			continue
		}
		for _, u := range v.Unknown {
			r.warnf("%s: the kernel skips the unknown flag %q (known: nohz, domain, managed_irq; each ends in a comma)", p, u)
		}
		if len(flags)+len(v.Unknown) > 0 && !v.Has("domain") {
			r.warnf("%s has flags but not \"domain\": once any flag is given, domain is no longer implied, so %s stay in "+
				"the scheduler's domains and, on 6.19 and later, in the timer-migration hierarchy; write isolcpus=%sdomain,%s",
				p, listPhrase(list, r.CPUs), flagPrefix(flags), list)
		}
		if !v.Has("managed_irq") && list != "" {
			r.warnf("%s has no managed_irq flag: managed interrupts (multiqueue NICs, NVMe) may still be routed to %s, "+
				"and the timers their handlers arm are queued there; add managed_irq, to the flags", p, listPhrase(list, r.CPUs))
		}
	}
}

func flagPrefix(flags []string) string {
	var b strings.Builder
	for _, f := range flags {
		if f != "domain" {
			b.WriteString(f + ",")
		}
	}
	return b.String()
}

// modelNotes says where the model of this release is uncertain or
// approximate.
func (r *Report) modelNotes(h *Host, noHzFull int) {
	m, rel := r.Model, r.Release
	if r.Running != "" {
		r.notef("modelled as kernel %s; the machine runs %s", rel.Raw, r.Running)
	}
	if rel.PatchUnknown {
		var unsure []string
		for _, s := range kernel.Switches() {
			if st, ok := s.Backport(rel.Version); ok {
				unsure = append(unsure, fmt.Sprintf("%s (from %s)", s, st))
			}
		}
		if len(unsure) > 0 {
			r.warnf("the release %q names a distribution ABI, not the stable patch level (/proc/version has it): %s taken as absent",
				rel.Raw, strings.Join(unsure, ", "))
		}
	}
	if strings.Contains(rel.Local, ".el") {
		r.notef("%s is an enterprise kernel: its vendor backports features, and the model follows the upstream version %s", rel.Raw, rel.Series())
	}
	if r.Policy == cpu.Pull || r.Policy == cpu.PullIsolated {
		if !m.Has(kernel.NUMABalancedTree) {
			if why := r.imbalancedTree(); why != "" {
				r.warnf("%s predates %s (imbalanced NUMA trees), and on this machine it matters: %s, so the kernel connects groups "+
					"of different nodes below the crossnode level; the hierarchy shown and simulated is the balanced one",
					rel.Version.Series(), kernel.NUMABalancedTree.Info().Commit, why)
			}
		}
		if !m.Has(kernel.RemoteSelfExpiry) {
			r.notef("%s lacks %s (the remote-expiry livelock fix, stable 6.12.94/6.18.36/7.0.13); the model has the fix",
				rel.Raw, kernel.RemoteSelfExpiry.Info().Commit)
		}
	}
	caps := map[int]bool{}
	for c, v := range h.Capacity {
		if r.Online.Test(c) {
			caps[v] = true
		}
	}
	if len(caps) > 1 {
		var vs []int
		for v := range caps {
			vs = append(vs, v)
		}
		sort.Ints(vs)
		broken := h.Config != nil && h.Config.Enabled("BROKEN")
		switch {
		case m.PerCapacityActive(broken, !r.NohzFull.Empty(), true):
			r.warnf("CPUs of capacities %v: this kernel (with CONFIG_BROKEN) builds one hierarchy per capacity (%s); "+
				"the hierarchy drawn and simulated is a single one", vs, kernel.PerCapacity.Info().Commit)
		case m.Has(kernel.PerCapacity) && h.Config == nil:
			r.notef("CPUs of capacities %v: per-capacity hierarchies need CONFIG_BROKEN (not known here); one hierarchy is modelled", vs)
		default:
			r.notef("CPUs of capacities %v share one hierarchy on this kernel: a big CPU may run a little one's timers and the other way round", vs)
		}
	}
	if noHzFull < 0 && !r.NohzFull.Empty() {
		r.notef("whether the kernel has CONFIG_NO_HZ_FULL is unknown (no config, no sysfs): nohz_full= taken as working")
	}
	if r.PreemptRT {
		r.notef("PREEMPT_RT: the timer softirq runs in the ktimers thread, which real-time tasks preempt")
	}
}

// migratorWarning says which isolated CPUs run other CPUs' timers: on 6.9
// to 6.18 isolated CPUs stay in the hierarchy and, busy, become migrators.
func (r *Report) migratorWarning() {
	p := r.Prediction
	var n uint64
	var owners cpumask.Mask
	if p != nil {
		for _, pl := range p.Pulls {
			if p.IsolatedPullers.Test(pl.Handler) {
				n += pl.Count
				owners.Set(pl.Owner)
			}
		}
	}
	simulated := ""
	if p != nil && !p.IsolatedPullers.Empty() {
		simulated = fmt.Sprintf("; in one simulated history %s %s, %.1f timers/s of %s", cpus(p.IsolatedPullers),
			verb(p.IsolatedPullers, "does", "do"), p.PerSecond(n), cpus(owners))
	}
	cand := r.IsolatedHandlers
	stay := r.Domain.Or(r.Partition).AndNot(r.NohzFull).And(r.Online)
	if r.Policy == cpu.Pull && !stay.Empty() {
		what := "a busy one becomes the migrator of its group whenever the group's other CPUs are idle"
		if !cand.Empty() {
			what = fmt.Sprintf("busy, one of them per group with idle housekeeping CPUs is its migrator for good "+
				"(whichever became active first) and expires their global timers: the candidates are %s", cpus(cand))
		}
		r.warnf("isolated %s %s in the timer-migration hierarchy on %s (before 6.19): %s%s. To keep timers off %s, boot "+
			"6.19 or later (%s excludes isolated CPUs), or list %s in nohz_full= as well (%s): a nohz_full "+
			"CPU running one task stops its tick and is idle in the hierarchy. timer_migration=0 does not help on 6.9 and later.",
			cpus(stay), verb(stay, "stays", "stay"), r.Release.Version.Series(), what, simulated, them(stay),
			kernel.ExcludeIsolated.Info().Commit, them(stay), needsNoHzFull(r.noHzFull))
		return
	}
	if !cand.Empty() {
		r.warnf("isolated or nohz_full %s may run other CPUs' global timers, as the migrators of groups with idle CPUs%s",
			cpus(cand), simulated)
	} else if simulated != "" {
		r.warnf("isolated or nohz_full %s %s other CPUs' timers in one simulated history (%.1f timers/s)", cpus(p.IsolatedPullers),
			verb(p.IsolatedPullers, "runs", "run"), p.PerSecond(n))
	}
}

// cpus names a CPU set in a sentence: "CPU 3", "CPUs 4-7".
func cpus(m cpumask.Mask) string {
	if m.Weight() == 1 {
		return "CPU " + m.String()
	}
	return "CPUs " + m.String()
}

// verb picks the singular or plural form for a CPU set.
func verb(m cpumask.Mask, one, many string) string {
	if m.Weight() == 1 {
		return one
	}
	return many
}

func them(m cpumask.Mask) string { return verb(m, "it", "them") }

// listPhrase names a cpulist of the command line in a sentence.
func listPhrase(list string, n int) string {
	m, err := cpumask.ParseFor(list, n)
	if err != nil || m.Empty() {
		return "CPUs " + list
	}
	return cpus(m)
}

func needsNoHzFull(noHzFull int) string {
	if noHzFull == 0 {
		return "this kernel is built without CONFIG_NO_HZ_FULL: it takes a kernel with it"
	}
	return "needs CONFIG_NO_HZ_FULL"
}

// imbalancedTree says why the hierarchy before 5eb579dfd46b differs from
// the balanced one on this machine, or "" when it does not. The old setup
// stopped climbing at the first level holding a single group: when the
// first CPU of a second node comes up while the first node's CPUs fill no
// more than a group below the level under the crossnode level, that CPU
// creates a group of its own node there and puts the first node's top
// group below it (interleaved numbering does this at CPU 1).
func (r *Report) imbalancedTree() string {
	if r.Hierarchy == nil || r.Nodes < 2 {
		return ""
	}
	cross := r.Hierarchy.CrossnodeLevel()
	firstNode, k := -1, 0
	for c := r.Present.First(); c >= 0; c = r.Present.Next(c) {
		n := r.NodeOf[c]
		if firstNode < 0 {
			firstNode = n
		}
		if n == firstNode {
			k++
			continue
		}
		top, groups := 0, (k+7)/8
		for groups > 1 {
			top++
			groups = (groups + 7) / 8
		}
		if top < cross-1 {
			return fmt.Sprintf("node %d's first CPU (%d) comes up when %d CPU(s) of node %d are up, whose top group is at level %d, below level %d",
				n, c, k, firstNode, top, cross-1)
		}
		return ""
	}
	return ""
}
