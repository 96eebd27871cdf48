package kernel

import (
	"fmt"
	"strings"

	"github.com/tmigr/tmigr/cpu"
)

// Switch is one change of the timer-migration rules, named after the
// kernel commit that made it. The package doc has the table.
type Switch uint8

const (
	// PushAtEnqueue: mod_timer queues a non-pinned timer armed on an idle
	// CPU on a busy one chosen by get_nohz_timer_target (2.6.31 to 6.8).
	PushAtEnqueue Switch = iota
	// PullHierarchy: timers stay where they were armed; an idle CPU's
	// global timers are expired by a migrator of the timer-migration
	// hierarchy (7ee988770326, 6.9).
	PullHierarchy
	// SysctlHrtimerOnly: kernel.timer_migration only decides whether a
	// non-pinned hrtimer may be queued on another CPU; the wheel ignores
	// it (b2cf7507e186, 6.9).
	SysctlHrtimerOnly
	// AddTimerOnPinned: add_timer_on() sets TIMER_PINNED, so a timer its
	// caller queued on another CPU prints flags=P (aae55e9fb8fc "timers:
	// Make sure TIMER_PINNED flag is set in add_timer_on()", 6.9). Before,
	// such a timer printed no P: nothing told it from a pushed one.
	AddTimerOnPinned
	// NUMABalancedTree: groups below the crossnode level hold CPUs of one
	// node only (5eb579dfd46b, 6.19; 6.18.2).
	NUMABalancedTree
	// ExcludeIsolated: isolcpus (domain) CPUs and isolated cpuset
	// partitions are unavailable in the hierarchy, except nohz_full CPUs
	// and, under nohz_full, the timekeeper (7dec062cfcf2, 6.19).
	ExcludeIsolated
	// PartitionDomain: isolated cpuset partitions are part of
	// HK_TYPE_DOMAIN; the exclusion predicate no longer tests cpusets
	// separately (0947d018cf57, 7.0). Same CPUs excluded as on 6.19.
	PartitionDomain
	// RemoteSelfExpiry: tmigr_handle_remote_up also expires the walking
	// CPU's own global timers instead of skipping itself, which could
	// livelock the softirq (d486b4934a8e, 7.1; 6.12.94, 6.18.36, 7.0.13).
	RemoteSelfExpiry
	// PerCapacity: one hierarchy per CPU capacity (098cbaad8e57, 7.2), in
	// effect only with CONFIG_BROKEN and without nohz_full.
	PerCapacity
	// HrtimerPreferLocal: hrtimer_start keeps a timer on the local CPU
	// when it is the first to expire there, even on a nohz_full CPU with
	// timer_migration on (3288cd486376 "hrtimer: Optimize for local
	// timers", 7.1).
	HrtimerPreferLocal

	numSwitches
)

// Newest is the newest release whose rules the package knows: the default
// kernel of the simulator.
var Newest = V(7, 3, 0)

// Info describes a switch.
type Info struct {
	Name   string  // "exclude-isolated"
	Commit string  // the commit that introduced it, 12 hex digits
	Title  string  // its subject line
	Since  Version // the first mainline release with it
	// Until is the first mainline release without it (zero: still there).
	Until Version
	// Stable lists the first release of each older stable series that
	// carries a backport.
	Stable []Version
}

var infos = [numSwitches]Info{
	PushAtEnqueue: {Name: "push-at-enqueue", Commit: "eea08f32adb3", Title: "timers: Logic to move non pinned timers",
		Since: V(2, 6, 31), Until: V(6, 9, 0)},
	PullHierarchy: {Name: "pull-hierarchy", Commit: "7ee988770326", Title: "timers: Implement the hierarchical pull model",
		Since: V(6, 9, 0)},
	SysctlHrtimerOnly: {Name: "sysctl-hrtimer-only", Commit: "b2cf7507e186", Title: "timers: Always queue timers on the local CPU",
		Since: V(6, 9, 0)},
	NUMABalancedTree: {Name: "numa-balanced-tree", Commit: "5eb579dfd46b", Title: "timers/migration: Fix imbalanced NUMA trees",
		Since: V(6, 19, 0), Stable: []Version{V(6, 18, 2)}},
	ExcludeIsolated: {Name: "exclude-isolated", Commit: "7dec062cfcf2", Title: "timers/migration: Exclude isolated cpus from hierarchy",
		Since: V(6, 19, 0)},
	PartitionDomain: {Name: "partition-domain", Commit: "0947d018cf57", Title: "timers/migration: Remove superfluous cpuset isolation test",
		Since: V(7, 0, 0)},
	RemoteSelfExpiry: {Name: "remote-self-expiry", Commit: "d486b4934a8e", Title: "timers/migration: Fix livelock in tmigr_handle_remote_up()",
		Since: V(7, 1, 0), Stable: []Version{V(6, 12, 94), V(6, 18, 36), V(7, 0, 13)}},
	PerCapacity: {Name: "per-capacity", Commit: "098cbaad8e57", Title: "timers/migration: Split per-capacity hierarchies",
		Since: V(7, 2, 0)},
	HrtimerPreferLocal: {Name: "hrtimer-prefer-local", Commit: "3288cd486376", Title: "hrtimer: Optimize for local timers",
		Since: V(7, 1, 0)},
	AddTimerOnPinned: {Name: "add-timer-on-pinned", Commit: "aae55e9fb8fc", Title: "timers: Make sure TIMER_PINNED flag is set in add_timer_on()",
		Since: V(6, 9, 0)},
}

// Switches returns every switch, oldest first.
func Switches() []Switch {
	out := make([]Switch, numSwitches)
	for i := range out {
		out[i] = Switch(i)
	}
	return out
}

// Info returns what is known about the switch.
func (s Switch) Info() Info {
	if s >= numSwitches {
		return Info{Name: fmt.Sprintf("Switch(%d)", s)}
	}
	i := infos[s]
	i.Stable = append([]Version(nil), i.Stable...)
	return i
}

func (s Switch) String() string { return s.Info().Name }

// ParseSwitch returns the switch of the given name.
func ParseSwitch(name string) (Switch, error) {
	for i := range infos {
		if infos[i].Name == name {
			return Switch(i), nil
		}
	}
	names := make([]string, len(infos))
	for i := range infos {
		names[i] = infos[i].Name
	}
	return 0, fmt.Errorf("unknown kernel switch %q (want one of %s)", name, strings.Join(names, ", "))
}

// In reports whether a kernel of version v has the switch.
func (s Switch) In(v Version) bool {
	if s >= numSwitches {
		return false
	}
	i := &infos[s]
	if i.Until != (Version{}) && v.AtLeast(i.Until) {
		return false
	}
	if v.AtLeast(i.Since) {
		return true
	}
	for _, st := range i.Stable {
		if v.Major == st.Major && v.Minor == st.Minor && v.Patch >= st.Patch {
			return true
		}
	}
	return false
}

// Backport returns the first release of v's series with a stable backport
// of the switch, if there is one (for a Release whose patch level is
// unknown, the switch is then unknown).
func (s Switch) Backport(v Version) (Version, bool) {
	if s >= numSwitches {
		return Version{}, false
	}
	for _, st := range infos[s].Stable {
		if v.Major == st.Major && v.Minor == st.Minor {
			return st, true
		}
	}
	return Version{}, false
}

// Model is the set of switches of one kernel.
type Model struct {
	Version Version
	on      uint32
}

// For returns the model of a kernel of version v.
func For(v Version) Model {
	m := Model{Version: v}
	for s := range numSwitches {
		if s.In(v) {
			m.on |= 1 << s
		}
	}
	return m
}

// Has reports whether the model has the switch.
func (m Model) Has(s Switch) bool { return s < numSwitches && m.on&(1<<s) != 0 }

// With returns the model with the switch set to on: for a distribution
// kernel with a backport, or to ask "what if".
func (m Model) With(s Switch, on bool) Model {
	if s >= numSwitches {
		return m
	}
	if on {
		m.on |= 1 << s
	} else {
		m.on &^= 1 << s
	}
	return m
}

// Switches returns the switches the model has, oldest first.
func (m Model) Switches() []Switch {
	var out []Switch
	for s := range numSwitches {
		if m.Has(s) {
			out = append(out, s)
		}
	}
	return out
}

// Policy returns the placement rule of wheel timers on this kernel with
// kernel.timer_migration set as given: Push or None up to 6.8, Pull from
// 6.9, PullIsolated from 6.19. From 6.9 the sysctl does not change it (see
// SysctlHrtimerOnly). A model with neither PushAtEnqueue nor PullHierarchy
// (built by With) is None.
func (m Model) Policy(timerMigration bool) cpu.Policy {
	switch {
	case m.Has(PullHierarchy) && m.Has(ExcludeIsolated):
		return cpu.PullIsolated
	case m.Has(PullHierarchy):
		return cpu.Pull
	case m.Has(PushAtEnqueue) && timerMigration:
		return cpu.Push
	}
	return cpu.None
}

// TimerMigration says in a sentence what kernel.timer_migration=value
// does on this kernel.
func (m Model) TimerMigration(value bool) string {
	switch {
	case m.Has(SysctlHrtimerOnly) && value:
		return "timer_migration=1 lets a non-pinned hrtimer be queued on a busy CPU chosen by get_nohz_timer_target(); wheel timers ignore it and migrate through the pull hierarchy"
	case m.Has(SysctlHrtimerOnly):
		return "timer_migration=0 keeps non-pinned hrtimers on the CPU that starts them; wheel timers ignore it and still migrate through the pull hierarchy"
	case value:
		return "timer_migration=1 moves a non-pinned timer or hrtimer armed on an idle CPU to a busy CPU chosen by get_nohz_timer_target()"
	}
	return "timer_migration=0 keeps every timer and hrtimer on the CPU that arms it; an idle CPU wakes for its own timers"
}

// ImbalancedNUMA reports whether the kernel builds its hierarchy as before
// 5eb579dfd46b (hier.Options.ImbalancedNUMA): a pull kernel without
// NUMABalancedTree.
func (m Model) ImbalancedNUMA() bool { return m.Has(PullHierarchy) && !m.Has(NUMABalancedTree) }

// Unmodelled returns the model's behaviours that the core does not
// reproduce: the core walks with the remote-self-expiry fix. (Nor does it
// model per-capacity hierarchies, which no real build enables, see
// PerCapacityActive, or 7.1's hrtimer_prefer_local, see
// cpu.Set.HrtimerTarget.)
func (m Model) Unmodelled() []string {
	var out []string
	if m.Has(HrtimerPreferLocal) {
		out = append(out, "hrtimer_prefer_local of "+infos[HrtimerPreferLocal].Commit+" (a timer first on its CPU stays there even on a nohz_full CPU)")
	}
	if m.Has(PullHierarchy) && !m.Has(RemoteSelfExpiry) {
		out = append(out, "the remote walk before "+infos[RemoteSelfExpiry].Commit+" (the migrator skipped its own global timers)")
	}
	return out
}

func (m Model) String() string {
	names := make([]string, 0, numSwitches)
	for _, s := range m.Switches() {
		names = append(names, s.String())
	}
	return m.Version.String() + ": " + strings.Join(names, ",")
}

// PerCapacityActive reports whether a kernel of this model builds one
// hierarchy per CPU capacity: it has the code (PerCapacity), was built with
// CONFIG_BROKEN (broken), nohz_full is not in use, and the CPUs do not all
// have the same capacity.
func (m Model) PerCapacityActive(broken, nohzFull, mixedCapacity bool) bool {
	return m.Has(PerCapacity) && broken && !nohzFull && mixedCapacity
}
