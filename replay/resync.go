package replay

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/hier"
)

// Snapshots of the model's state, and resynchronising it with the
// kernel's where the trace shows it and the model cannot know it.

// gevt is a group's or CPU's event as far as decisions go: queued and not
// ignored, with its expiry and CPU; the zero value is "no event".
type gevt struct {
	live    bool
	expires int64
	cpu     int
}

type snapshot struct {
	st    map[hier.GroupID]gstate
	gevt  map[hier.GroupID]gevt
	cpus  []hier.CPUInfo
	evts  []seedEvt // the CPUs' live events in queue order
	idle  []bool
	wakes []int64
}

// ownerCPU returns the CPU whose event a queue entry is, by the owner name
// hier gives it ("cpu3"), or false for a group's.
func ownerCPU(owner string) (int, bool) {
	rest, ok := strings.CutPrefix(owner, "cpu")
	if !ok {
		return 0, false
	}
	c, err := strconv.Atoi(rest)
	return c, err == nil
}

func (r *replayer) snapshot() snapshot {
	gis := r.m.h.Groups()
	s := snapshot{st: map[hier.GroupID]gstate{}, gevt: map[hier.GroupID]gevt{}}
	byName := map[string]hier.GroupID{}
	for _, gi := range gis {
		byName[gi.Name] = gi.ID
		s.st[gi.ID] = gstate{gi.Active, gi.Migrator}
	}
	for _, gi := range gis {
		for _, e := range gi.Events {
			if e.Ignore {
				continue
			}
			if g, ok := byName[e.Owner]; ok {
				s.gevt[g] = gevt{true, e.Expires, e.CPU}
			} else if c, ok := ownerCPU(e.Owner); ok {
				s.evts = append(s.evts, seedEvt{c, e.Expires})
			}
		}
	}
	for c := 0; c < r.topo.NCPUs; c++ {
		ci := r.m.h.CPU(c)
		s.cpus = append(s.cpus, ci)
		s.idle = append(s.idle, ci.Idle)
		s.wakes = append(s.wakes, ci.Wakeup)
	}
	return s
}

// complete makes a set of group states consistent: a group is active in
// its parent exactly when it has an active child, and a migrator is an
// active child. Where a group and its parent disagree, the better known
// one wins: states the kernel printed or implied (keep) over states the
// model knows (gk "") over unknown ones; a parent that wins activates or
// idles the child (its lowest child, which one being unknown), a child that
// wins sets its bit in the parent. Groups changed are marked unknown with
// why unless they are in keep.
func (r *replayer) complete(st map[hier.GroupID]gstate, keep map[hier.GroupID]bool, why reason) {
	rank := func(g hier.GroupID) int {
		switch {
		case keep[g]:
			return 2
		case *r.gk.at(g) == known:
			return 1
		}
		return 0
	}
	ranks := map[hier.GroupID]int{}
	kidsOf := map[hier.GroupID]uint8{}
	for _, g := range r.topo.Groups {
		ranks[g] = rank(g)
		// Only children that exist (and, at level 0, CPUs that are
		// available) can be active.
		n := r.topo.Node(g)
		var kids uint8
		for _, c := range n.CPUs {
			if r.m.h.CPU(c).Available {
				kids |= r.topo.CPUBit[c]
			}
		}
		for _, k := range n.Kids {
			kids |= r.topo.Node(k).Bit
		}
		kidsOf[g] = kids
		s := st[g]
		s.active &= kids
		if s = valid(s); s != st[g] {
			st[g] = s
			*r.gk.at(g) = first(*r.gk.at(g), why)
		}
	}
	changed := func(g hier.GroupID, s gstate, rk int) {
		st[g] = valid(s)
		ranks[g] = rk
		if !keep[g] {
			*r.gk.at(g) = first(*r.gk.at(g), why)
		}
	}
	// Top-down: a better known parent decides whether its children are
	// active.
	for i := len(r.topo.Groups) - 1; i >= 0; i-- {
		g := r.topo.Groups[i]
		for _, k := range r.topo.Node(g).Kids {
			says := st[g].active&r.topo.Node(k).Bit != 0
			if says == (st[k].active != 0) || ranks[g] <= ranks[k] {
				continue
			}
			if says {
				low := lowest(kidsOf[k])
				if low == hier.MigratorNone {
					continue // no child can be active: the parent yields
				}
				changed(k, gstate{low, low}, ranks[g])
			} else {
				changed(k, gstate{0, hier.MigratorNone}, ranks[g])
			}
		}
	}
	// Bottom-up: the parent follows its children.
	for _, g := range r.topo.Groups {
		n := r.topo.Node(g)
		if n.Parent == hier.NoGroup {
			continue
		}
		want := st[g].active != 0
		ps := st[n.Parent]
		if (ps.active&n.Bit != 0) == want {
			continue
		}
		if want {
			ps.active |= n.Bit
		} else {
			ps.active &^= n.Bit
		}
		changed(n.Parent, ps, ranks[n.Parent])
	}
}

// valid returns s with a migrator that is one of its active children (the
// lowest) or none when there is none.
func valid(s gstate) gstate {
	if s.active == 0 {
		s.migrator = hier.MigratorNone
	} else if s.migrator == hier.MigratorNone || s.active&s.migrator == 0 || bits.OnesCount8(s.migrator) != 1 {
		s.migrator = lowest(s.active)
	}
	return s
}

// resyncTo replaces the model by one whose group states are want (the
// kernel's, as printed or inferred) over the model's own for the other
// groups, completed to a consistent state. CPUs keep their events; a CPU
// that becomes idle has an unknown one.
//
// Inside another CPU's walk (an operation replayed between that walk's
// compare-and-swap and its event update, see interleave.go) the model
// cannot be replaced: that walk goes on in it, holding its CPU's lock.
// The groups of want are then only marked unknown with why, for a later
// operation to resynchronise; resyncTo reports whether it replaced the
// model.
func (r *replayer) resyncTo(want map[hier.GroupID]gstate, why reason) bool {
	if r.inWalk > 0 {
		for g := range want {
			*r.gk.at(g) = first(*r.gk.at(g), why)
		}
		return false
	}
	old := r.snapshot()
	st := map[hier.GroupID]gstate{}
	for g, s := range old.st {
		st[g] = s
	}
	keep := map[hier.GroupID]bool{}
	for g, s := range want {
		st[g] = s
		keep[g] = true
	}
	r.complete(st, keep, why)
	var evts []seedEvt
	for c := 0; c < r.topo.NCPUs; c++ {
		idle := st[r.topo.CPUGroup[c]].active&r.topo.CPUBit[c] == 0
		switch {
		case idle && !old.idle[c]:
			r.setEvUnknown(c, why)
		case !idle && old.idle[c]:
			r.ek[c] = known
		}
	}
	for _, e := range old.evts {
		if st[r.topo.CPUGroup[e.cpu]].active&r.topo.CPUBit[e.cpu] == 0 {
			evts = append(evts, e)
		}
	}
	r.reseed(old, st, evts, why)
	return true
}

// reseed replaces the model by one with group states st and the idle
// CPUs' events evts (in that order), the CPUs' availability kept from old,
// the model's snapshot before: group events and wakeups that come out
// other than old's are unknown with why.
func (r *replayer) reseed(old snapshot, st map[hier.GroupID]gstate, evts []seedEvt, why reason) {
	avail := make([]bool, len(old.cpus))
	for c, ci := range old.cpus {
		avail[c] = ci.Available
	}
	if err := r.m.seed(st, evts, avail); err != nil {
		// complete() made the state consistent; should hier still not
		// reach it, start over from nothing known.
		for g := range st {
			st[g] = gstate{0, hier.MigratorNone}
			*r.gk.at(g), *r.gev.at(g) = why, why
		}
		for c := range r.ek {
			r.ek[c], r.wk[c] = why, why
		}
		if err := r.m.seed(st, nil, avail); err != nil {
			panic(err) // an idle hierarchy is always reachable
		}
	}
	nw := r.snapshot()
	for _, g := range r.topo.Groups {
		if old.gevt[g] != nw.gevt[g] && *r.gev.at(g) == known {
			*r.gev.at(g) = why
		}
	}
	for c := range nw.wakes {
		if nw.wakes[c] != old.wakes[c] && r.wk[c] == known {
			r.wk[c] = why
		}
	}
}
