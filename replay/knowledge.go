package replay

import (
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/groups"
	"github.com/tmigr/tmigr/hier"
)

// knowledge is what the replay knows of the model's state: whether each
// part of it is the kernel's (see the package documentation), on the tree
// of groups topo. Each is known where the model's value is the kernel's,
// else why not.
type knowledge struct {
	topo *groups.Tree
	gk   byGroup[reason] // a group's state word
	gev  byGroup[reason] // a group's event in its parent
	ek   []reason        // a CPU's event
	// evSet: the CPU's event expiry was set by a deactivation the replay
	// ran. An active CPU's event is ignored, and so known whatever its
	// expiry, until its next deactivation un-ignores it, with that old
	// expiry, before its walk (__tmigr_cpu_deactivate); one from before
	// the recording is unknown.
	evSet []bool
	// evBefore: what was known of the CPU's event when its deactivation
	// in progress began, evSet counted.
	evBefore []reason
	wk       []reason // a CPU's wakeup
	// qpos: the CPU's event sits in its groups' queues where the kernel
	// put it before the recording (the model queued it when the trace
	// first showed it, the kernel had not walked): its place among the
	// events of its expiry, which rounds handle in queue order, is not
	// known until it is expired or queued again.
	qpos []bool
	// seen: the group's first transition was replayed (its state before
	// it was inferred from that very line).
	seen byGroup[bool]
	// startTie: the group's last transition was printed at the
	// recording's first time (compareGroups).
	startTie byGroup[bool]
	// opaque: CPUs whose transitions the trace does not show; opaqueCPUs
	// lists them (volatile marks them before every operation).
	opaque     []bool
	opaqueCPUs []int
	// late: CPUs that print nothing in the recording, which the model
	// leaves out of the hierarchy although its kernel would have them in
	// (checkMembers), and whose event the recording does not rule out
	// (eventless). In, such a CPU is idle with its event due after the
	// recording's end, at lateFrom or later: one due before would have
	// been claimed, or woken it, and printed. Out, or in with such an
	// event, it leaves every group state and every value before lateFrom
	// as the model has them; a value the kernel printed lower than the
	// model's, at lateFrom or later, may be its event (lateWhy).
	late     []bool
	anyLate  bool
	lateFrom int64
	// lostWin: per CPU, the event index ranges its lost events lie in.
	lostWin map[int][][2]int
}

// byGroup holds a value for each group, as a map of them would: in a
// table by level and index for the groups of the tree it was sized for
// (the replay reads its knowledge of a group for nearly every line), in a
// map for any other key. Its zero value keeps every key in the map.
type byGroup[T any] struct {
	v     [][]T
	other map[hier.GroupID]*T
}

// sized returns an empty byGroup with a place in its table for each
// group of t.
func sized[T any](t *groups.Tree) byGroup[T] {
	var b byGroup[T]
	if t == nil {
		return b
	}
	for _, g := range t.Groups {
		for g.Level >= len(b.v) {
			b.v = append(b.v, nil)
		}
		for g.Index >= len(b.v[g.Level]) {
			b.v[g.Level] = append(b.v[g.Level], *new(T))
		}
	}
	return b
}

// at returns the place of g's value.
func (b *byGroup[T]) at(g hier.GroupID) *T {
	if g.Level >= 0 && g.Level < len(b.v) && g.Index >= 0 && g.Index < len(b.v[g.Level]) {
		return &b.v[g.Level][g.Index]
	}
	p := b.other[g]
	if p == nil {
		if b.other == nil {
			b.other = map[hier.GroupID]*T{}
		}
		p = new(T)
		b.other[g] = p
	}
	return p
}

// setEvUnknown records that cpu's event may differ from the kernel's; so may
// then every group event it was propagated into.
func (r *knowledge) setEvUnknown(cpu int, why reason) {
	if r.ek[cpu] == known {
		r.ek[cpu] = why
	}
	for _, g := range r.topo.Path[cpu] {
		if *r.gev.at(g) == known {
			*r.gev.at(g) = why
		}
	}
}

// qIdle is why the events queued in an idle group g may differ from the
// kernel's: the first unknown event of its children.
func (r *knowledge) qIdle(g hier.GroupID) reason {
	n := r.topo.Node(g)
	for _, c := range n.CPUs {
		if r.ek[c] != known {
			return r.ek[c]
		}
	}
	for _, k := range n.Kids {
		if *r.gev.at(k) != known {
			return *r.gev.at(k)
		}
	}
	return known
}

// qReason is why the events queued in g may differ from the kernel's; the
// events of active children are ignored and do not count, where g's state
// is known.
func (r *knowledge) qReason(g hier.GroupID, s gstate) reason {
	n := r.topo.Node(g)
	activeKnown := *r.gk.at(g) == known || *r.gk.at(g) == reasonMigrator
	for _, c := range n.CPUs {
		if activeKnown && s.active&r.topo.CPUBit[c] != 0 {
			continue
		}
		if r.ek[c] != known {
			return r.ek[c]
		}
	}
	for _, k := range n.Kids {
		if activeKnown && s.active&r.topo.Node(k).Bit != 0 {
			continue
		}
		if *r.gev.at(k) != known {
			return *r.gev.at(k)
		}
	}
	return known
}

// onUpdate follows the hierarchy's event updates as they happen: a child
// group's event was (re)computed from its queue.
func (r *knowledge) onUpdate(child, g hier.GroupID) {
	if child != hier.NoGroup {
		*r.gev.at(child) = r.qIdle(child)
	}
}

// volatile marks what opaque CPUs may change at any moment, and CPUs
// inside a stretch their buffer lost.
func (r *replayer) volatile() {
	mark := func(c int, why reason) {
		r.setEvUnknown(c, why)
		r.wk[c] = why
		for _, g := range r.topo.Path[c] {
			*r.gk.at(g) = why
		}
	}
	for _, c := range r.opaqueCPUs {
		mark(c, reasonOpaque)
	}
	for c, ws := range r.lostWin {
		for _, w := range ws {
			if r.pos >= w[0] && r.pos <= w[1] {
				mark(c, reasonLost)
			}
		}
	}
}

// findLost finds, per CPU, the stretches of the trace its lost events lie
// in: the kernel prints "[LOST n EVENTS]" before the CPU's next event, and
// the events were lost after its previous one. Until its next line the
// CPU may have done anything at any moment, as an untraced CPU.
func (r *replayer) findLost() {
	if len(r.x.having(kindsOf(kLost))) == 0 {
		return // nothing lost: no window
	}
	// last is each CPU's last line, 0 before its first (a slice: it is
	// written for every line).
	last := make([]int, r.topo.NCPUs)
	var pending []struct{ cpu, from int }
	for i := range r.ev {
		ev := &r.ev[i]
		if ev.CPU < 0 {
			continue // no reader makes one (Run refuses it)
		}
		if ev.CPU >= len(last) {
			last = append(last, make([]int, ev.CPU+1-len(last))...)
		}
		switch ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			pending = append(pending, struct{ cpu, from int }{ev.CPU, last[ev.CPU]})
			continue
		}
		for k := 0; k < len(pending); k++ {
			if pending[k].cpu == ev.CPU {
				if r.lostWin == nil {
					r.lostWin = map[int][][2]int{}
				}
				r.lostWin[ev.CPU] = append(r.lostWin[ev.CPU], [2]int{pending[k].from, i})
				pending = append(pending[:k], pending[k+1:]...)
				k--
			}
		}
		last[ev.CPU] = i
	}
	for _, p := range pending {
		if r.lostWin == nil {
			r.lostWin = map[int][][2]int{}
		}
		r.lostWin[p.cpu] = append(r.lostWin[p.cpu], [2]int{p.from, len(r.ev)})
	}
}
