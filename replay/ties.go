package replay

import "github.com/tmigr/tmigr/hier"

// Operations of different CPUs printed with one timestamp.
//
// The trace's text merges the CPUs' ring buffers by timestamp; lines of
// different CPUs with one timestamp come out in the order of the merge
// (__find_next_entry, kernel/trace/trace.c, takes the lowest CPU on a
// tie), which says nothing of the order in which they ran. Ties are
// common where a vCPU's trace clock stands still or when stamps are
// printed to the microsecond. The states the group transitions print do
// say it: each transition's line is printed right after its
// compare-and-swap (tmigr_active_up, tmigr_inactive_up, 6.9+), so the
// state it read is the previous transition's result (priorOf inverts one
// transition). Where the printed order of a tie does not chain that way
// and another order of the same operations does, with each CPU's own
// operations kept in their order, that order is the one they ran in.

// maxTie is the largest tie orderTies reorders: ties of a few operations
// are what two or three CPUs going idle or busy at one stamp print, and
// the search is exponential in the tie's length.
const maxTie = 10

// maxTieSteps bounds the search of one tie's orders.
const maxTieSteps = 10000

// orderTies reorders, in place, the runs of operations of ops whose keys
// share one timestamp, where their group transitions chain in another
// order and not in the printed one (see above).
func (r *replayer) orderTies(ops []*op) {
	last := sized[lastState](r.topo) // each group's last printed state
	known := func(o *op) {
		for _, i := range o.groups {
			if gl := r.groupLine(i); gl.id != hier.NoGroup {
				*last.at(gl.id) = lastState{gl.after, true}
			}
		}
	}
	for a := 0; a < len(ops); {
		b := a + 1
		ts := r.ev[ops[a].key()].TS
		for b < len(ops) && r.ev[ops[b].key()].TS == ts {
			b++
		}
		if b-a > 1 && b-a <= maxTie {
			r.orderTie(ops[a:b], &last)
		}
		for _, o := range ops[a:b] {
			known(o)
		}
		a = b
	}
	for i, o := range ops {
		o.idx = i
	}
}

// tieTrans is a transition of an operation of a tie.
type tieTrans struct {
	g     hier.GroupID
	prior prior
	after gstate
}

// tieScratch is orderTie's scratch space, kept from one tie to the next.
type tieScratch struct {
	trans []tieTrans
	rows  [][]tieTrans
	state tieStates
	// printed: the states as the printed order leaves them.
	printed tieStates
}

// lastState is a group's last printed state, if ok.
type lastState struct {
	s  gstate
	ok bool
}

// tieStates are the states of the groups a tie's transitions change, as
// far as they are known: a few groups, looked up in a list.
type tieStates []groupState

type groupState struct {
	g hier.GroupID
	s gstate
}

func (st tieStates) get(g hier.GroupID) (gstate, bool) {
	for _, x := range st {
		if x.g == g {
			return x.s, true
		}
	}
	return gstate{}, false
}

func (st *tieStates) set(g hier.GroupID, s gstate) {
	for k := range *st {
		if (*st)[k].g == g {
			(*st)[k].s = s
			return
		}
	}
	*st = append(*st, groupState{g, s})
}

// orderTie reorders one tie (see orderTies); last holds the groups'
// states before it.
func (r *replayer) orderTie(tie []*op, last *byGroup[lastState]) {
	twoCPUs := false
	for _, o := range tie {
		twoCPUs = twoCPUs || o.cpu != tie[0].cpu
	}
	if !twoCPUs {
		return
	}
	// Each operation's transitions, in the replayer's scratch space for
	// ties (a tie is met every few operations; orderTie is not reentered).
	flat, trs := r.ties.trans[:0], r.ties.rows[:0]
	for _, o := range tie {
		from := len(flat)
		for _, i := range o.groups {
			gl := r.groupLine(i)
			if gl.id == hier.NoGroup {
				continue
			}
			flat = append(flat, tieTrans{gl.id, priorOf(gl.activate, gl.after, gl.childmask, gl.lvl), gl.after})
		}
		trs = append(trs, flat[from:len(flat):len(flat)])
	}
	r.ties.trans, r.ties.rows = flat[:0], trs[:0] // for the next tie: this one's stay as they are
	if len(flat) == 0 {
		return // no group's transition
	}
	state := r.ties.state[:0]
	for k := range trs {
		for _, t := range trs[k] {
			if l := last.at(t.g); l.ok {
				state.set(t.g, l.s)
			}
		}
	}
	r.ties.state = state[:0]
	// step applies operation k to st if each of its transitions reads
	// what the one before left (or a state not known), and reports
	// whether it did.
	step := func(st *tieStates, k int) bool {
		for _, t := range trs[k] {
			if s, ok := st.get(t.g); ok && (t.prior.bad || !t.prior.admits(s)) {
				return false
			}
		}
		for _, t := range trs[k] {
			st.set(t.g, t.after)
		}
		return true
	}
	copyOf := func(st tieStates) tieStates { return append(tieStates(nil), st...) }
	printed := append(r.ties.printed[:0], state...)
	r.ties.printed = printed[:0]
	chains := true
	for k := range tie {
		if !step(&printed, k) {
			chains = false
			break
		}
	}
	if chains {
		return
	}
	// Search the orders that keep each CPU's operations in their order,
	// the printed one's neighbours first.
	order := make([]int, 0, len(tie))
	used := make([]bool, len(tie))
	steps := 0
	var search func(st tieStates) bool
	search = func(st tieStates) bool {
		if len(order) == len(tie) {
			return true
		}
		if steps++; steps > maxTieSteps {
			return false
		}
		for k := range tie {
			if used[k] || cpuBefore(tie, used, k) {
				continue
			}
			next := copyOf(st)
			if !step(&next, k) {
				continue
			}
			used[k] = true
			order = append(order, k)
			if search(next) {
				return true
			}
			order = order[:len(order)-1]
			used[k] = false
		}
		return false
	}
	if !search(state) {
		return // no order chains: the replay reports what it finds
	}
	was := append([]*op(nil), tie...)
	for i, k := range order {
		tie[i] = was[k]
	}
}

// cpuBefore reports whether an operation of tie's k-th operation's CPU
// printed before it is not yet placed (used): a CPU's own operations run
// in the order it printed them.
func cpuBefore(tie []*op, used []bool, k int) bool {
	for j := 0; j < k; j++ {
		if !used[j] && tie[j].cpu == tie[k].cpu {
			return true
		}
	}
	return false
}
