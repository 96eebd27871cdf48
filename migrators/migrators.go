// Package migrators says which CPUs may be the migrator of each group of
// the timer-migration hierarchy once a machine is in its steady state, and
// so which CPUs may run other CPUs' timers: what the kernel's rules
// determine, and, where the order in which CPUs became active decides, the
// set of candidates. A simulation (package sim) gives one possible history;
// this gives every history the rules allow.
//
// # The rules (kernel/time/timer_migration.c, 6.9 and later)
//
// A group's migrator is one of its children. On activation
// (tmigr_cpu_activate → tmigr_active_up) a child becomes migrator only if
// the group had none: an existing migrator is never displaced, whatever
// the bits. On deactivation of the migrator (tmigr_cpu_deactivate →
// tmigr_inactive_up) the role goes to the lowest set bit of the remaining
// active children, or to none, and only then does the walk go on to the
// parent. A CPU's tick is the only thing that deactivates it: a CPU running
// a task keeps its tick, and so stays active, unless it is nohz_full (a
// nohz_full CPU running one task stops its tick and is idle to the
// hierarchy, active again only while its tick runs); under nohz_full the
// timekeeper never stops its tick (can_stop_idle_tick), so it never goes
// idle. A CPU out of the hierarchy (offline; from 6.19, isolated:
// tmigr_is_isolated, 7dec062cfcf2) neither pulls nor is pulled.
//
// # The steady state
//
// The always-active CPUs are the busy CPUs in the hierarchy that are not
// nohz_full, plus the timekeeper while nohz_full is in use. A child is an
// always-active child if an always-active CPU is below it. Per group:
//
//   - Some child is always active: the group is never idle, so it always
//     has a migrator. Once that migrator is an always-active child it
//     never deactivates, so it keeps the role forever; a child that is not
//     always active can hold the role only if it held it before (it took
//     an idle group, or was handed the role while it had the lowest bit of
//     the active children) and keeps it only until it goes idle. In the
//     steady state the migrator is one of the always-active children
//     (which one: whichever held the role when the others came up — the
//     order of activation, which no configuration fixes), and the CPUs
//     that do its work are the candidates of that child. The other
//     children never become its migrator; their events, when they are
//     wholly idle, are queued here (tmigr_update_events) and expired by it
//     (tmigr_handle_remote_up, which walks only while the CPU is the
//     migrator of the group or the group has none).
//   - No child is always active: the group is idle most of the time, with
//     no migrator; a CPU below that becomes active takes the role of every
//     idle group on its way up (tmigr_active_up) and expires the events
//     queued there, and the last CPU to go idle in a wholly idle hierarchy
//     is woken by its wakeup to expire the first event of all. Any
//     available CPU below may do it: the candidates are all of them.
//
// # Who may run other CPUs' timers
//
// A CPU runs another CPU's timers only as the migrator (or the woken last
// CPU) of a group whose event queue holds that CPU's event. A group holds
// an event of a child only while the child is idle: an active child's
// events are handled by its own migrator below (tmigr_update_events stops
// at an active child; its group event is ignored). So:
//
//   - a group with an always-active child may pull from its other
//     children, those without an always-active CPU below: the available
//     CPUs below them (From); its candidates are handlers if From is not
//     empty. A group whose children are all always active pulls nothing;
//   - a group without one may pull from any child except the one its
//     migrator is below: with two or more children that hold available
//     CPUs, each available CPU below may pull from another child, so all
//     are handlers and all may be pulled from; with one such child, the
//     group pulls nothing its child does not pull already.
//
// Handlers is the union of the candidates of the groups that may pull;
// Never is every other CPU: the rules keep it from running another CPU's
// timers in the steady state (out of the hierarchy, under an always-active
// sibling, or with nobody to pull from). Before the steady state (the
// busy CPUs starting, a partition changing) a CPU that held a migrator
// role keeps it while it stays active, and hands it on by the lowest bit:
// such pulls are history, not a contradiction.
package migrators

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
)

// Group is one group of the hierarchy in the steady state.
type Group struct {
	Name  string `json:"group"`
	Level int    `json:"level"`
	// CPUs are the available CPUs below it.
	CPUs cpumask.Mask `json:"cpus"`
	// Always is whether it always has a migrator (a child with an
	// always-active CPU below).
	Always bool `json:"always_migrator"`
	// Candidates are the CPUs that may do its migrator's work: the
	// candidates of its always-active children, or, without one, every
	// available CPU below it.
	Candidates cpumask.Mask `json:"candidates"`
	// From are the CPUs whose timers its migrator may run (empty: it
	// pulls nothing).
	From cpumask.Mask `json:"pulls_from"`
	// Parent is the parent group's name ("" at the top); Children its
	// children in the order of their bits (join order).
	Parent   string  `json:"parent,omitempty"`
	Children []Child `json:"-"`
}

// Child is a child of a group: a CPU (level 0) or a group.
type Child struct {
	CPU    int    // level 0: the CPU; else -1
	Group  string // level > 0: the group's name
	Always bool   // an always-active CPU is below it
	// CPUs are the available CPUs below it, Candidates those that may do
	// its migrator's work.
	CPUs, Candidates cpumask.Mask
}

// Pulls reports whether the group's migrator may run other CPUs' timers.
func (g *Group) Pulls() bool { return !g.From.Empty() }

// Prediction is the steady state of a machine's hierarchy.
type Prediction struct {
	// Hierarchy is false for a kernel or machine without one (before 6.9,
	// a uniprocessor): nobody pulls; Why says why.
	Hierarchy bool   `json:"hierarchy"`
	Why       string `json:"why,omitempty"`
	// CPUs is the number of possible CPUs.
	CPUs int `json:"cpus"`
	// Available are the CPUs in the hierarchy; Always the always-active
	// ones among them.
	Available cpumask.Mask `json:"available"`
	Always    cpumask.Mask `json:"always_active"`
	// Groups are the groups by level, then index.
	Groups []Group `json:"groups"`
	// Handlers are the CPUs that may run other CPUs' timers, Never the
	// others (see the package comment).
	Handlers cpumask.Mask `json:"handlers"`
	Never    cpumask.Mask `json:"never"`

	level0 map[int]int // CPU -> index in Groups of its level-0 group
	byName map[string]int
}

// Path returns the groups from cpu's level-0 group to the top (nil for a
// CPU in no group).
func (p *Prediction) Path(cpu int) []*Group {
	i, ok := p.level0[cpu]
	if !ok {
		return nil
	}
	var out []*Group
	for {
		g := &p.Groups[i]
		out = append(out, g)
		if i, ok = p.byName[g.Parent]; !ok {
			return out
		}
	}
}

// None is the prediction for a machine without a hierarchy.
func None(cpus int, why string) *Prediction {
	p := &Prediction{CPUs: cpus, Why: why, Groups: []Group{}}
	p.Never = cpumask.Range(0, cpus-1)
	return p
}

// AlwaysActive returns the CPUs that never go idle to the hierarchy in the
// steady state: the busy available CPUs that are not nohz_full, and, while
// nohz_full is in use, the timekeeper (which never stops its tick).
func AlwaysActive(busy, nohzFull, available cpumask.Mask, timekeeper int) cpumask.Mask {
	a := busy.AndNot(nohzFull)
	if !nohzFull.Empty() && timekeeper >= 0 {
		a.Set(timekeeper)
	}
	return a.And(available)
}

// Of reads the prediction off a hierarchy as built and brought up (its
// groups and available CPUs; its activity state does not matter), with the
// always-active CPUs given (see AlwaysActive; CPUs out of the hierarchy are
// ignored).
func Of(h *hier.Hierarchy, always cpumask.Mask) *Prediction {
	n := h.CPUs()
	gs := h.Groups()
	if len(gs) == 0 {
		return None(n, "no hierarchy: one CPU")
	}
	available := h.Available()
	p := &Prediction{Hierarchy: true, CPUs: n, Available: available, Always: always.And(available),
		Groups: make([]Group, len(gs))}
	byName := make(map[string]int, len(gs))
	for i := range gs {
		byName[gs[i].Name] = i
	}
	p.byName, p.level0 = byName, map[int]int{}
	done := make([]bool, len(gs))
	var visit func(i int) *Group
	visit = func(i int) *Group {
		g := &p.Groups[i]
		if done[i] {
			return g
		}
		done[i] = true
		gi := &gs[i]
		*g = Group{Name: gi.Name, Level: gi.Level, Parent: gi.Parent}
		// The children are filled in place: a Child holds two masks of
		// cpumask.MaxCPUs bits, and copying them (or growing the slice)
		// cost more than the rest of the prediction on the largest
		// machines.
		g.Children = make([]Child, len(gi.CPUs)+len(gi.Children))
		for n, c := range gi.CPUs {
			p.level0[c] = i
			k := &g.Children[n]
			k.CPU = c
			if available.Test(c) {
				k.CPUs.Set(c)
				k.Candidates.Set(c)
				k.Always = p.Always.Test(c)
			}
		}
		for n, name := range gi.Children {
			k := &g.Children[len(gi.CPUs)+n]
			k.CPU, k.Group = -1, name
			if j, ok := byName[name]; ok {
				cg := visit(j)
				k.CPUs, k.Candidates, k.Always = cg.CPUs, cg.Candidates, cg.Always
			}
		}
		holding := 0
		for n := range g.Children {
			k := &g.Children[n]
			g.CPUs = g.CPUs.Or(k.CPUs)
			g.Always = g.Always || k.Always
			if !k.CPUs.Empty() {
				holding++
			}
		}
		switch {
		case g.Always:
			for n := range g.Children {
				k := &g.Children[n]
				if k.Always {
					g.Candidates = g.Candidates.Or(k.Candidates)
				} else {
					g.From = g.From.Or(k.CPUs)
				}
			}
		default:
			g.Candidates = g.CPUs
			if holding >= 2 {
				g.From = g.CPUs
			}
		}
		return g
	}
	for i := range gs {
		visit(i)
	}
	for i := range p.Groups {
		if g := &p.Groups[i]; g.Pulls() {
			p.Handlers = p.Handlers.Or(g.Candidates)
		}
	}
	p.Never = cpumask.Range(0, n-1).AndNot(p.Handlers)
	return p
}

// Setup is a machine's configuration as the prediction needs it.
type Setup struct {
	// NodeOf is each possible CPU's node; Nodes the number of possible
	// nodes (0: the highest in NodeOf plus one).
	NodeOf []int
	Nodes  int
	// Model is the kernel's (package kernel).
	Model kernel.Model
	// The isolation: isolcpus= (domain), nohz_full=, and the CPUs of the
	// isolated cpuset partitions in effect.
	Domain, NohzFull, Partition cpumask.Mask
	// Present and Online CPUs (empty: every possible CPU).
	Present, Online cpumask.Mask
	// Busy are the CPUs running a task that never sleeps.
	Busy cpumask.Mask
	// Timekeeper is the nohz timekeeper (tick_do_timer_cpu; -1 for none,
	// see kernel.Timekeeper).
	Timekeeper int
}

// Build builds the hierarchy the kernel builds for the setup, as package
// host does: sized for the possible CPUs and nodes, the present CPUs
// prepared in ascending order, the online ones available, the isolated
// ones excluded where the kernel excludes them (6.19 and later). It
// returns nil for a kernel without the pull hierarchy.
func Build(s Setup) (*hier.Hierarchy, error) {
	if !s.Model.Has(kernel.PullHierarchy) {
		return nil, nil
	}
	n := len(s.NodeOf)
	all := cpumask.Range(0, n-1)
	present, online := s.Present, s.Online
	if present.Empty() {
		present = all
	}
	if online.Empty() {
		online = present
	}
	exclude := s.Model.Has(kernel.ExcludeIsolated)
	iso := s.Model.Isolation(s.Domain, s.NohzFull, s.Partition, s.Timekeeper)
	h, err := hier.New(hier.Options{NodeOf: s.NodeOf, Nodes: s.Nodes, ExcludeIsolated: exclude,
		ImbalancedNUMA: s.Model.ImbalancedNUMA(), Isolation: iso})
	if err != nil {
		return nil, err
	}
	for c := present.First(); c >= 0; c = present.Next(c) {
		if err := h.Prepare(c); err != nil {
			return nil, fmt.Errorf("CPU %d: %v", c, err)
		}
	}
	for c := online.First(); c >= 0; c = online.Next(c) {
		if err := h.SetAvailable(c, false); err != nil {
			return nil, fmt.Errorf("CPU %d: %v", c, err)
		}
	}
	h.InitIsolation(nil)
	if exclude && !s.Partition.Empty() {
		h.ExcludeIsolated(s.Domain.Or(s.Partition), nil)
	}
	return h, nil
}

// Predict builds the setup's hierarchy and reads its prediction.
func Predict(s Setup) (*Prediction, error) {
	h, err := Build(s)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return None(len(s.NodeOf), "no pull hierarchy before 6.9: timers are placed when armed, nobody pulls"), nil
	}
	return Of(h, AlwaysActive(s.Busy, s.NohzFull, h.Available(), s.Timekeeper)), nil
}
