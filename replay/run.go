package replay

import (
	"fmt"
	"slices"

	"github.com/tmigr/tmigr/hier"
)

// Running the operations in the order they take effect.

func (r *replayer) run() {
	for i := range r.ops {
		if r.done[i] {
			continue
		}
		if k := r.roundBeforeTiedActivation(i); k >= 0 {
			r.tiedBefore[k] = i
			r.exec(k)
			if r.done[i] {
				continue
			}
		}
		r.exec(i)
	}
	// An operation still waiting for one that did not end (the
	// recording stopped first) goes on now: none is left half replayed,
	// and no goroutine parked.
	for len(r.splits) > 0 {
		r.resumeSplits(r.splits[0].in)
	}
	for len(r.waits) > 0 {
		r.resumeWaits(r.waits[0].outer)
	}
	if len(r.ev) > 0 && (r.gm == nil || r.gm.err == nil) {
		r.closeChanges(maxNS, r.ev[len(r.ev)-1].Line)
	}
}

func (r *replayer) exec(i int) {
	r.done[i] = true
	o := r.ops[i]
	if len(o.lines) > 0 {
		r.line = r.ev[o.first()].Line
		r.pos = o.key()
		if r.inWalk == 0 {
			// Inside a walk, a change waits for the next operation
			// replayed at the top (interleave.go).
			r.closeChanges(r.ev[o.key()].TS, r.line)
		}
	}
	r.volatile()
	switch o.kind {
	case opActivate, opDeactivate:
		r.runWalk(o)
	case opNewTimer:
		r.runNewTimer(o)
	case opRemote:
		r.runRemote(i, o)
	case opPartial:
		r.runPartial(o, reasonPartial)
	case opHotplug:
		r.runHotplug(o)
	case opLost:
		// Whatever the CPU did in the lost stretch is unknown: its
		// event, its wakeup and the groups on its path.
		r.setEvUnknown(o.cpu, reasonLost)
		r.wk[o.cpu] = reasonLost
		for _, g := range r.topo.Path[o.cpu] {
			*r.gk.at(g) = first(*r.gk.at(g), reasonLost)
		}
	}
}

// collect runs f with the recorder on and returns the lines our hierarchy
// printed. Operations replayed inside f (nested in a remote round) keep
// their own lines.
func (r *replayer) collect(f func()) []mline {
	saved, on := r.rec.lines, r.rec.on
	r.rec.lines, r.rec.on = r.lineBuf(), true
	r.depth++
	f()
	r.depth--
	got := r.rec.lines
	r.rec.lines, r.rec.on = saved, on
	r.checkInvariants()
	return got
}

// checkInvariants runs hier's invariant checker at a quiescent point: at
// the top, with no split operation waiting in the middle of its walk.
func (r *replayer) checkInvariants() {
	if r.invariants && r.depth == 0 && len(r.splits) == 0 && r.invErr == nil {
		if err := r.m.h.Check(); err != nil {
			r.invErr = fmt.Errorf("near line %d: the model broke an invariant: %w", r.line, err)
		}
	}
}

// lineBuf returns an empty list of lines to fill: one a caller gave back
// (release), or a new one with room for the lines a walk prints in a
// hierarchy of the usual depth.
func (r *replayer) lineBuf() []mline {
	if n := len(r.spare); n > 0 {
		b := r.spare[n-1]
		r.spare = r.spare[:n-1]
		return b
	}
	return make([]mline, 0, collectLines)
}

// release gives back lines of collect or onlyBuf that the caller no longer
// reads, for the next operation's: an operation replays with no
// allocation for its lines.
func (r *replayer) release(ls []mline) {
	if cap(ls) > 0 {
		r.spare = append(r.spare, ls[:0])
	}
}

// collectLines is the room lineBuf makes for the lines of an operation.
const collectLines = 8

// one returns the line of ls of the given kind if there is exactly one.
func one(ls []mline, kind hier.EventKind) (mline, bool) {
	var l mline
	n := 0
	for _, x := range ls {
		if x.kind == kind {
			l = x
			n++
		}
	}
	return l, n == 1
}

// onlyBuf is only, into a list of lines from lineBuf (to release).
func (r *replayer) onlyBuf(ls []mline, kind hier.EventKind) []mline {
	out := r.lineBuf()
	for _, l := range ls {
		if l.kind == kind {
			out = append(out, l)
		}
	}
	return out
}

// only returns the lines of ls of the given kind, in order (nil if none).
func only(ls []mline, kind hier.EventKind) []mline {
	n := 0
	for _, l := range ls {
		if l.kind == kind {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]mline, 0, n)
	for _, l := range ls {
		if l.kind == kind {
			out = append(out, l)
		}
	}
	return out
}

// preResync compares the model's states with the kernel's, as o's
// transitions imply they were just before o. Where they differ:
//
//   - another CPU's operation that the merged trace lists after o may have
//     changed the group first: if one of the next operations bridges the
//     gap (its transition leads from the model's state to the one o
//     found), it is replayed first;
//   - a group whose state is unknown (from before the recording, or
//     changed by a CPU whose transitions the trace lacks) is
//     resynchronised to the kernel's, and o is undetermined;
//   - otherwise the model's state is the kernel's as far as the trace
//     shows, and o's transitions are compared as they are: a difference is
//     a mismatch.
//
// gls are o's group lines (groupLines). It returns why o is undetermined
// (known if nothing was unknown).
func (r *replayer) preResync(o *op, gls []kgroup) reason {
	// The transitions whose state an operation replayed inside the walk
	// will give (catchesUp): no resynchronisation gives it before.
	var caught map[int]bool
	for tries := 0; ; tries++ {
		cur := r.m.current() // read only: bridge changes nothing, exec is last
		bridged := false
		for k, gl := range gls {
			i := o.groups[k]
			p := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl)
			if gl.id == hier.NoGroup || p.bad || p.admits(*cur.at(gl.id)) {
				continue
			}
			if j, split := r.bridge(o, gl.id, *cur.at(gl.id), p.admits, false, -1); j >= 0 && tries < lookahead {
				if k > 0 && r.catchesUp(o, j, i) {
					// Its lines come after o's first transition and
					// clearly before this one: it ran while o's CPU
					// was between the two, where catchUp replays it.
					if caught == nil {
						caught = map[int]bool{}
					}
					caught[i] = true
					continue
				}
				r.execBridged(j, split, o, gl.id)
				bridged = true
				break
			}
		}
		if r.walked[o.idx] {
			// o itself ran inside the operation replayed first, between
			// its compare-and-swap and its update (interleave.go).
			return known
		}
		if !bridged {
			break
		}
	}
	cur := r.m.current() // read only, until resyncTo
	var want map[hier.GroupID]gstate
	why := known
	for k, gl := range gls {
		i := o.groups[k]
		p := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl)
		// A transition no consistent state leads to, or one from a state
		// the model knows, is left to the comparison.
		if gl.id == hier.NoGroup || p.bad || p.admits(*cur.at(gl.id)) || *r.gk.at(gl.id) == known {
			continue
		}
		if caught[i] {
			// Given by an operation from a state the model does not
			// know: o is undetermined all the same.
			why = first(why, *r.gk.at(gl.id))
			continue
		}
		if want == nil {
			want = map[hier.GroupID]gstate{}
		}
		want[gl.id] = p.s
		why = first(why, *r.gk.at(gl.id))
	}
	if len(want) == 0 {
		return why
	}
	r.resyncTo(want, why)
	return why
}

// catchesUp reports whether catchUp will replay operation j inside walk
// o, before o's transition printed on line index i: j is an activation or
// a deactivation printed after o's first line and whose every line is
// clearly (by more than skewNS) before line i.
func (r *replayer) catchesUp(o *op, j, i int) bool {
	p := r.ops[j]
	if p.kind != opActivate && p.kind != opDeactivate || p.key() < o.first() {
		return false
	}
	return r.ev[p.last()].TS < r.ev[i].TS-skewNS
}

// A bridging transition is looked for among the next lookahead
// operations, within bridgeNS of trace time: a CPU's trace line can trail
// its compare-and-swap only as long as it took to print it, unless the CPU
// printed nothing meanwhile (silent).
const (
	lookahead = 32
	bridgeNS  = 1_000_000
)

// bridge returns the index of a pending operation of another CPU whose
// transition of group g starts from state cur and begins a chain of such
// operations (at most bridgeDepth) that ends in a state want admits, or
// -1: the merged trace put them after o, their CPUs made them first; and
// whether that operation is to be replayed only up to its compare-and-swap
// of g (splitsAt, never inside a walk). Each
// must be the next pending operation of its CPU or follow that CPU's
// earlier one in the chain (a CPU's lines are in program order; one CPU
// may go busy and idle again while o's CPU stalls), close in time to o,
// and its transitions other than g's must start from the model's states
// (else another CPU's operation printed before it comes first). A chain longer than
// one is common under QEMU TCG, where several vCPUs' lines carry the same
// stamp: CPUs leaving an isolated partition one by one, or waking
// together.
//
// inWalk looks for operations to replay inside o's walk, after its
// compare-and-swap (interleave.go): activations and deactivations only,
// whose other transitions start from the model's states, with no change
// of the machine due before them; an operation whose preResync is
// replaying o first counts as pending (its CPU's lines came first in the
// merged trace, its compare-and-swap after o's). seen is then the line of
// o that read the state the chain leads to (its event update, or its next
// transition): the chain's compare-and-swaps came before it, so an
// operation printed before that line is close enough in time however long
// o's CPU took between its compare-and-swap and that line (a vCPU
// descheduled in between); one printed after it, within bridgeNS.
func (r *replayer) bridge(o *op, g hier.GroupID, cur gstate, want func(gstate) bool, inWalk bool, seen int) (int, bool) {
	at := o.idx
	ts := r.ev[o.key()].TS
	until := ts // the latest trace time a candidate's first line may trail by bridgeNS
	if inWalk && seen >= 0 {
		until = max(ts, r.ev[seen].TS)
	}
	type cand struct {
		j     int // the operation to replay first: this one, or its prerequisite
		cpu   int
		seq   int // its place among its CPU's candidates
		from  prior
		after gstate
		split bool // j is replayed up to its compare-and-swap of g (splitsAt)
	}
	var cands []cand
	seq := map[int]int{}
	states := r.m.current() // read only: bridge changes nothing
	from, waitingBefore := at+1, len(r.ops)
	if inWalk {
		// The operations waiting in the window are candidates.
		from = max(0, at-lookahead)
		waitingBefore = from
	}
	blocked := r.busyCPUs(o.cpu, waitingBefore) // CPUs with an earlier pending operation
	defer r.putSet(blocked)
	firstOf := r.cloneSet(blocked) // CPUs whose first pending operation was passed
	defer r.putSet(firstOf)
	pendingAt := func(j int) bool { return !r.done[j] || inWalk && slices.Contains(r.waiting, j) && !r.walked[j] }
	for j := from; j < len(r.ops) && j <= at+lookahead; j++ {
		p := r.ops[j]
		if j == at || !pendingAt(j) || blocked[p.cpu] {
			continue
		}
		if inWalk && quietNewTimer(p) && !r.done[j] {
			// It changes no group, and nest runs it before the
			// CPU's next operation.
			continue
		}
		blocked[p.cpu] = true
		run, split := j, false
		if (p.kind == opActivate || p.kind == opDeactivate) && !r.fits(p, g, states) {
			// Another CPU's operation printed after it may lead the
			// group it does not fit to the state it read (prereq).
			switch {
			case !inWalk && o.kind == opRemote && r.splitsAt(p, g):
				// A round needs only its compare-and-swap of g.
				run, split = j, true
			default:
				run = r.prereq(o, p, g, states, from, at, until, firstOf, pendingAt, inWalk)
				if run < 0 && !inWalk && (o.kind == opActivate || o.kind == opDeactivate) && r.splitsAt(p, g) {
					run, split = j, true
				}
			}
			if run < 0 {
				continue
			}
		}
		if inWalk && (p.kind != opActivate && p.kind != opDeactivate || r.changeDue(r.ev[p.key()].TS)) {
			continue
		}
		if !inWalk && p.kind != opHotplug && !r.fits(p, g, states) && run == j && !split {
			// Its first transitions must start where the model is:
			// another CPU's operation printed before it comes first.
			continue
		}
		// An activation's compare-and-swap lies between its
		// tmigr_cpu_active line and its first transition's: a vCPU
		// descheduled in between stretches that.
		from := r.ev[p.key()].TS
		if p.kind == opActivate {
			from = r.ev[p.first()].TS
		}
		if from-until > bridgeNS && !r.silent(p.cpu, o.key(), p.first()) {
			continue
		}
		if ts-r.ev[p.key()].TS > bridgeNS {
			continue
		}
		if p.kind != opActivate && p.kind != opDeactivate && p.kind != opHotplug {
			continue
		}
		for _, i := range p.groups {
			if gl := r.groupLine(i); gl.id == g {
				cands = append(cands, cand{run, p.cpu, seq[p.cpu], priorOf(gl.activate, gl.after, gl.childmask, gl.lvl), gl.after, split})
				seq[p.cpu]++
				// Its CPU's next operation may follow it in the chain
				// (a CPU that went busy and idle again meanwhile).
				blocked[p.cpu] = false
				break
			}
		}
	}
	used := map[int]int{} // per CPU, its candidates in the chain so far
	var search func(s gstate, depth int) bool
	search = func(s gstate, depth int) bool {
		for _, c := range cands {
			if used[c.cpu] != c.seq || !c.from.admits(s) {
				continue
			}
			if want(c.after) {
				return true
			}
			if depth > 1 {
				used[c.cpu]++
				ok := search(c.after, depth-1)
				used[c.cpu]--
				if ok {
					return true
				}
			}
		}
		return false
	}
	for _, c := range cands {
		if c.seq != 0 || !c.from.admits(cur) {
			continue
		}
		used[c.cpu]++
		ok := want(c.after) || search(c.after, bridgeDepth-1)
		used[c.cpu]--
		if ok {
			return c.j, c.split
		}
	}
	return -1, false
}

// prereq returns, for candidate p of bridge (walk or operation o, group
// g) that does not fit the model's states in one other group g2, the
// pending operation of another CPU that must run before it there, or -1:
// the first pending operation of its CPU (firstOf: none passed yet), it
// fits the model's states, its transition of g2 leads to the state p's
// transition of g2 read, and it is as close in time as a candidate, and
// it leaves g2 where o's own transition of g2, if o has one that starts
// from the state now and replays after the chain, can start. A CPU may
// print its compare-and-swap long after it, past other CPUs' whole walks
// that read its result (a vCPU descheduled in between).
func (r *replayer) prereq(o, p *op, g hier.GroupID, states *groupStates, from, at int, until int64,
	firstOf cpuSet, pendingAt func(int) bool, inWalk bool) int {
	g2, need := hier.NoGroup, prior{}
	for _, i := range p.groups {
		gl := r.groupLine(i)
		if gl.id == hier.NoGroup || gl.id == g {
			continue
		}
		pr := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl)
		if pr.bad {
			return -1
		}
		if !pr.admits(*states.at(gl.id)) {
			if g2 != hier.NoGroup {
				return -1 // two groups out of step: not one prerequisite
			}
			g2, need = gl.id, pr
		}
	}
	if g2 == hier.NoGroup {
		return -1
	}
	// o's own transition of g2, when o replays after the chain (not
	// inside its walk): its compare-and-swap reads what the chain leaves.
	var own *prior
	if !inWalk {
		for _, i := range o.groups {
			if gl := r.groupLine(i); gl.id == g2 {
				if pr := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); !pr.bad && pr.admits(*states.at(g2)) {
					own = &pr
				}
				break
			}
		}
	}
	passed := r.cloneSet(firstOf)
	defer r.putSet(passed)
	for k := from; k < len(r.ops) && k <= at+lookahead; k++ {
		q := r.ops[k]
		if k == at || !pendingAt(k) || passed[q.cpu] {
			continue
		}
		passed[q.cpu] = true
		if q.cpu == p.cpu || q.kind != opActivate && q.kind != opDeactivate || !r.fits(q, g2, states) {
			continue
		}
		if inWalk && r.changeDue(r.ev[q.key()].TS) {
			continue
		}
		if r.ev[q.key()].TS-until > bridgeNS && !r.silent(q.cpu, o.key(), q.first()) {
			continue
		}
		for _, i := range q.groups {
			if gl := r.groupLine(i); gl.id == g2 {
				if pr := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); !pr.bad && pr.admits(*states.at(g2)) && need.admits(gl.after) {
					if own != nil && !own.admits(gl.after) {
						// It would leave g2 where o's transition,
						// which reads the state now, could not
						// start: o's compare-and-swap came first.
						break
					}
					return k
				}
				break
			}
		}
	}
	return -1
}

// busyCPUs returns the CPUs in the middle of an operation: self, the
// walks and rounds in progress, and the operations before index
// waitingBefore waiting for others to be replayed first. None of them may
// run another operation now: a CPU's operations run in its order.
//
// The set is the caller's until it gives it back (putSet).
func (r *replayer) busyCPUs(self, waitingBefore int) cpuSet {
	busy := r.takeSet()
	if self >= 0 {
		busy[self] = true
	}
	for _, w := range r.walks {
		busy[w.o.cpu] = true
	}
	for _, rd := range r.rounds {
		busy[rd.o.cpu] = true
	}
	for _, w := range r.waits {
		busy[w.o.cpu] = true
	}
	for _, k := range r.waiting {
		if !r.walked[k] && k < waitingBefore {
			busy[r.ops[k].cpu] = true
		}
	}
	return busy
}

// silent reports whether cpu printed no line between event indexes a and
// b: its line at b may then trail its compare-and-swap by all that time
// (a vCPU descheduled between the two), beyond bridgeNS.
func (r *replayer) silent(cpu, a, b int) bool {
	for i := a + 1; i < b; i++ {
		if r.ev[i].CPU == cpu {
			return false
		}
	}
	return true
}

// splitsAt reports whether bridge may replay candidate p, whose later
// transitions do not fit the model's states, up to its compare-and-swap of
// g only: p is a deactivation whose walk begins there. Its later levels
// come after the walk or round bridged for, as the walk resumes (split):
// a vCPU descheduled between its levels printed them all late, the first
// before that operation's, the later ones after others'. For a round,
// which reads g's migrator only, such a candidate is split rather than
// preceded by a prerequisite (prereq) for its later levels.
func (r *replayer) splitsAt(p *op, g hier.GroupID) bool {
	return p.kind == opDeactivate && len(p.groups) > 1 && r.groupLine(p.groups[0]).id == g
}

// bridgeDepth bounds the chains bridge looks for.
const bridgeDepth = 8

// fmtGroup formats a group's state after a transition.
func fmtGroup(id hier.GroupID, s gstate) string {
	return fmt.Sprintf("%v active=%x migrator=%x", id, s.active, s.migrator)
}

// cpuSet is a set of CPUs, by number. The replay's sets come from a pool
// (takeSet) and go back to it (putSet): busyCPUs runs for nearly every
// operation, and its sets, made anew each time, were most of what a
// replay allocated after its setup.
type cpuSet []bool

// takeSet returns an empty set of the machine's CPUs, the caller's until
// it gives it back.
func (r *replayer) takeSet() cpuSet {
	if n := len(r.sets); n > 0 {
		s := r.sets[n-1]
		r.sets = r.sets[:n-1]
		clear(s)
		return s
	}
	return make(cpuSet, len(r.ek))
}

// cloneSet returns a copy of s, taken as takeSet takes one.
func (r *replayer) cloneSet(s cpuSet) cpuSet {
	c := r.takeSet()
	copy(c, s)
	return c
}

// putSet gives a set back; its taker no longer reads it.
func (r *replayer) putSet(s cpuSet) { r.sets = append(r.sets, s) }
