package kernel

import (
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
)

// Isolation returns the isolation setup package hier's exclusion reads on
// this kernel, from the command line's domain-isolated CPUs (isolcpus=,
// isolcpus=domain,), its nohz_full CPUs (nohz_full=, isolcpus=nohz,), the
// CPUs of isolated cpuset partitions made at run time and the nohz
// timekeeper (-1 for none).
//
// On 6.19 a partition's CPUs are cpuset_cpu_is_isolated; from 7.0
// (PartitionDomain, 0947d018cf57) they are outside HK_TYPE_DOMAIN instead.
// Both exclude the same CPUs, and hier reads Domain at boot only (the late
// initcall) and CpusetIsolated at every cpuset update, so the partition goes
// into CpusetIsolated on every kernel that has ExcludeIsolated; a kernel
// without it ignores partitions (and hier's ExcludeIsolated does nothing).
func (m Model) Isolation(domain, nohzFull, partition cpumask.Mask, timekeeper int) hier.Isolation {
	iso := hier.Isolation{Domain: domain, NohzFull: nohzFull, Timekeeper: timekeeper}
	if m.Has(ExcludeIsolated) {
		iso.CpusetIsolated = partition
	}
	return iso
}

// Timekeeper returns the nohz timekeeper of a machine whose boot CPU is 0:
// under nohz_full the boot CPU keeps the duty (tick_nohz_full_setup makes it
// housekeeping if nohz_full= named it: cmdline.ParseIsolation has already
// given it back), otherwise there is none that matters to the hierarchy
// (-1).
func Timekeeper(nohzFull cpumask.Mask) int {
	if nohzFull.Empty() || nohzFull.Test(0) {
		return -1
	}
	return 0
}

// Excluded returns the CPUs of online that a kernel of this model keeps out
// of the timer-migration hierarchy for isolation (not for hotplug): none
// before 6.19; from 6.19 (ExcludeIsolated, 7dec062cfcf2) the CPUs the
// predicate tmigr_is_isolated finds isolated (domain-isolated or in an
// isolated partition, and not nohz_full), except the timekeeper while
// nohz_full is in use, which tmigr_init_isolation and
// tmigr_isolated_exclude_cpumask never withdraw.
func (m Model) Excluded(iso hier.Isolation, online cpumask.Mask) cpumask.Mask {
	var out cpumask.Mask
	if !m.Has(ExcludeIsolated) || !m.Has(PullHierarchy) {
		return out
	}
	for c := online.First(); c >= 0; c = online.Next(c) {
		if iso.IsIsolated(c) && (iso.NohzFull.Empty() || c != iso.Timekeeper) {
			out.Set(c)
		}
	}
	return out
}

// ExcludedWhy says in a few words why Excluded leaves cpu out on this
// kernel, or why it keeps an isolated CPU in; "" for a CPU isolation does
// not touch.
func (m Model) ExcludedWhy(iso hier.Isolation, cpu int) string {
	isolated := iso.Domain.Test(cpu) || iso.CpusetIsolated.Test(cpu)
	switch {
	case !isolated:
		return ""
	case !m.Has(PullHierarchy):
		return "no hierarchy before 6.9"
	case !m.Has(ExcludeIsolated):
		return "isolated, kept in the hierarchy before 6.19 (" + infos[ExcludeIsolated].Commit + ")"
	case iso.NohzFull.Test(cpu):
		return "isolated and nohz_full: stays in the hierarchy"
	case !iso.NohzFull.Empty() && cpu == iso.Timekeeper:
		return "the timekeeper under nohz_full: stays in the hierarchy"
	case iso.Domain.Test(cpu):
		return "isolcpus (domain): excluded (" + infos[ExcludeIsolated].Commit + ")"
	}
	return "isolated cpuset partition: excluded (" + infos[ExcludeIsolated].Commit + ")"
}
