package replay

import (
	"math"
	"slices"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Operations of other CPUs between a walk's compare-and-swap and its
// event update.
//
// A deactivation clears its bit in a group with a compare-and-swap and
// only then takes the group's lock to update the events
// (__tmigr_cpu_deactivate, tmigr_inactive_up, tmigr_update_events in
// kernel/time/timer_migration.c, 6.9+); the update reads the group's
// state again under the lock, and at the top an idle state makes the
// result the top's first event. Another CPU's compare-and-swap (and what
// that CPU did before it: a deactivation's CPU event is un-ignored before
// its walk) can fall in between. The update's line prints the state it
// read (group_active, and child_active above level 0); where that is not
// the state the walk's own transition left, and the next pending
// operation of another CPU, close in time, leads from the one to the
// other, that operation ran in between. hier calls its Tracer right after
// each compare-and-swap, with no group lock held, where the kernel emits
// its tracepoint: the replay runs the other CPU's operation there (only
// the walking CPU's own lock is held, and another CPU's operation takes
// its own). It runs whole, its event update included, when the other
// CPU's update line comes first (the update lines are printed under the
// group's lock: their order is the lock order). When the interrupted
// walk's comes first, its update queued its new event before the other
// CPU read the queue, and a deactivation of the other CPU that found the
// top idle may have returned that event: the other operation is split
// (split below), run on a goroutine paused in its Tracer call after its
// compare-and-swap and resumed when the interrupted walk has ended. The
// interrupted walk ends at that group: its compare-and-swap left the group
// active (else no other CPU's deactivation could clear a bit there), so
// its update was its last step.

// walkAt is an activation or deactivation whose walk is running in hier.
type walkAt struct {
	o     *op
	depth int // r.depth inside its collect
	n     int // transitions traced so far
}

// newWalk returns a new walkAt, taken from a block of them: a walk is
// replayed for nearly every operation, and a block is one allocation for
// many (none is reused: saved contexts may hold it).
func (r *replayer) newWalk(o *op, depth int) *walkAt {
	if len(r.walkBlock) == 0 {
		r.walkBlock = make([]walkAt, opBlock)
	}
	w := &r.walkBlock[0]
	r.walkBlock = r.walkBlock[1:]
	*w = walkAt{o: o, depth: depth}
	return w
}

// onCAS is called by the recorder after every group transition of the
// model, right after its compare-and-swap.
func (r *replayer) onCAS() {
	if len(r.walks) == 0 {
		return
	}
	w := r.walks[len(r.walks)-1]
	if w.depth != r.depth {
		return // a transition of something replayed inside the walk
	}
	if sp := r.pausing; sp != nil && !sp.beforeCAS && sp.o == w.o && len(r.rec.lines) > 0 && r.rec.lines[len(r.rec.lines)-1].group == sp.g {
		r.pause(sp)
		// Resumed: the walk it waited for has ended. Its own event
		// update has still to read the group's state, and other CPUs'
		// operations printed before that update may have run first, as
		// after any compare-and-swap (below).
	}
	if r.splitOf(w.o) != nil {
		return // its update must come first: nothing more in between
	}
	k := w.n
	w.n++
	o := w.o
	if k >= len(o.groups) {
		return
	}
	u := r.readAfter(o, k)
	if u < 0 {
		r.childSeenActive(o, k)
		r.childReadActive(o, k)
		return
	}
	p := r.ev[u].Data.(ftrace.TmigrUpdateEvents)
	g, ok := r.gm.id(p.Group)
	if !ok || g != r.groupLine(o.groups[k]).id {
		return
	}
	child, ok := r.gm.id(p.Child)
	if !ok {
		return
	}
	if k+1 == len(o.groups) {
		if j := r.ignoredBefore(o, g, u, p); j >= 0 {
			r.split(j, o, g, true)
			return
		}
	}
	for tries := 0; tries < lookahead; tries++ {
		grp, want := g, p.GroupActive
		if r.m.state(g).active == want {
			if child == hier.NoGroup || r.m.state(child).active == p.ChildActive {
				return
			}
			grp, want = child, p.ChildActive
		}
		j, _ := r.bridge(o, grp, r.m.state(grp), func(s gstate) bool { return s.active == want }, true, u)
		if j < 0 {
			return
		}
		if r.updatesAfter(r.ops[j], g, u) {
			// It waits after its compare-and-swap; others of the
			// chain may still come before the update.
			r.split(j, o, g, false)
			continue
		}
		if pg, ok := r.parentUpdateAfter(r.ops[j], g, u); ok {
			// Its update of g's parent, which reads g's queue under
			// g's lock, came after the interrupted walk's update of g:
			// it waits after its compare-and-swap of the parent.
			r.split(j, o, pg, false)
			return
		}
		if k := r.claimedFirst(j); k >= 0 {
			// The round runs first, and j inside it (expireRemote).
			r.nest(k)
			continue
		}
		r.nest(j)
	}
}

// claimedFirst returns the pending remote round that claimed the CPU of
// operation j before j's first line, or -1. tmigr_handle_remote_cpu
// prints the claim with the target's lock held, and every operation of
// the target prints its first line under that lock (tmigr_cpu_activate,
// tmigr_cpu_deactivate, tmigr_cpu_new_timer; 6.9+
// kernel/time/timer_migration.c): the claim came first, and j cannot be
// replayed before the round. The round is replayed first where its CPU
// is free to run it (no earlier operation of its CPU pending, no walk or
// round of its CPU in progress).
func (r *replayer) claimedFirst(j int) int {
	p := r.ops[j]
	busy := r.busyCPUs(-1, len(r.ops))
	defer r.putSet(busy)
	for k := j - 1; k >= 0 && k >= j-lookahead; k-- {
		q := r.ops[k]
		if r.done[k] || q.kind != opRemote || q.cpu == p.cpu {
			continue
		}
		if !r.claims(q, p) || busy[q.cpu] {
			return -1
		}
		for i := k - 1; i >= 0 && i >= k-lookahead; i-- {
			if r.ops[i].cpu == q.cpu && !r.done[i] {
				return -1
			}
		}
		return k
	}
	return -1
}

// claims reports whether round q claimed the CPU of operation p before p's
// first line (see claimedFirst).
func (r *replayer) claims(q, p *op) bool {
	for _, ti := range q.targets() {
		if ti < p.first() && r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU == p.cpu {
			return true
		}
	}
	return false
}

// claimedPending reports whether a pending remote round within lookahead
// before operation j claimed j's CPU before j's first line: j cannot be
// replayed before that round (see claimedFirst), wherever the round is.
func (r *replayer) claimedPending(j int) bool {
	p := r.ops[j]
	for k := j - 1; k >= 0 && k >= j-lookahead; k-- {
		if q := r.ops[k]; !r.done[k] && q.kind == opRemote && q.cpu != p.cpu && r.claims(q, p) {
			return true
		}
	}
	return false
}

// childSeenActive replays, after the k-th compare-and-swap of
// deactivation o, another CPU's operation that made that group active
// again, when o's next transition shows it so and no event update was
// printed in between. tmigr_inactive_up (kernel/time/timer_migration.c,
// 6.9+) reads the child's state again before its compare-and-swap of the
// parent and leaves the child's bit set if the child is active: the
// parent's printed state then keeps the bit. With no update line to print
// the state in between (a CPU event that is ignored, KTIME_MAX, returns
// from tmigr_update_events at level 0 before taking the lock or printing),
// that kept bit is what tells the other CPU's activation of the child
// came between the two compare-and-swaps.
func (r *replayer) childSeenActive(o *op, k int) {
	if o.kind != opDeactivate || k+1 >= len(o.groups) {
		return
	}
	next := r.groupLine(o.groups[k+1])
	if next.activate || next.after.active&next.childmask == 0 {
		return
	}
	g := r.groupLine(o.groups[k]).id
	if g == hier.NoGroup {
		return
	}
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.state(g)
		if cur.active != 0 {
			return
		}
		j, _ := r.bridge(o, g, cur, func(s gstate) bool { return s.active != 0 }, true, o.groups[k+1])
		if j < 0 {
			return
		}
		r.nest(j)
	}
}

// childReadActive replays, after the k-th compare-and-swap of
// deactivation o, another CPU's operation that made the child of that
// group active again, when the kernel printed no event update for the
// group. Above level 0 tmigr_update_events (kernel/time/timer_migration.c,
// 6.9+) reads the child's state under the child's lock and returns at once
// when it is active, printing nothing: the line is missing exactly when
// another CPU's activation of the child came between o's compare-and-swap
// of the group and that read. At the top it is what leaves the CPU going
// idle without the hierarchy's first event as its wakeup.
func (r *replayer) childReadActive(o *op, k int) {
	if o.kind != opDeactivate || k < 1 {
		return
	}
	child := r.groupLine(o.groups[k-1]).id
	if child == hier.NoGroup {
		return
	}
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.state(child)
		if cur.active != 0 {
			return
		}
		j, _ := r.bridge(o, child, cur, func(s gstate) bool { return s.active != 0 }, true, o.last())
		if j < 0 {
			return
		}
		r.nest(j)
	}
}

// ignoredBefore returns the index of another CPU's activation whose first
// step fell before the event update u of group g, which ends walk o, and
// whose compare-and-swap came after it; -1 if there is none.
//
// __tmigr_cpu_activate (kernel/time/timer_migration.c, 6.9+) prints
// tmigr_cpu_active, marks the CPU's event ignored and only then walks:
// its compare-and-swap of the CPU's group can come after another CPU's
// update of that group read the group's state (printed idle), while the
// ignore flag came before the update read the queue, so that the update
// removed the event (tmigr_next_groupevt's lazy removal) and left it out
// of the group's next expiry. The printed next_expiry tells: it is never
// later than an event still queued in the group, so a next_expiry later
// than the activating CPU's event says the flag was set first.
//
// Above level 0 the same holds for a child group's event:
// tmigr_active_up marks the group's event in its parent ignored right
// after its compare-and-swap of the group, before the walk goes on to the
// parent's. An activation that walked through a child of g, whose event in
// g's queue the printed next_expiry leaves out, had done so before the
// update read the queue, and its compare-and-swap of g came after.
func (r *replayer) ignoredBefore(o *op, g hier.GroupID, u int, p ftrace.TmigrUpdateEvents) int {
	if r.m.state(g).active != p.GroupActive {
		return -1 // not the state the update read
	}
	var queue []hier.EventInfo // g's queue, read once a candidate needs it
	read := false
	// Only each CPU's first operation of the window counts: a CPU is seen
	// when its stamp is this call's.
	if len(r.stamp) < r.topo.NCPUs {
		r.stamp = make([]uint32, r.topo.NCPUs)
	}
	if r.gen++; r.gen == 0 {
		clear(r.stamp)
		r.gen = 1
	}
	r.stamp[o.cpu] = r.gen
	for j := o.idx + 1; j < len(r.ops) && j <= o.idx+lookahead; j++ {
		a := r.ops[j]
		if r.stamp[a.cpu] == r.gen {
			continue
		}
		r.stamp[a.cpu] = r.gen
		if a.kind != opActivate || r.done[j] || len(a.groups) == 0 || r.ek[a.cpu] != known || a.first() > u {
			continue
		}
		if p.Child == 0 {
			if r.groupLine(a.groups[0]).id != g {
				continue
			}
			ci := r.m.h.CPU(a.cpu)
			if ci.Group == g && ci.Idle && ci.EvtQueued && !ci.EvtIgnore && ci.EvtExpires < p.NextExpiry {
				return j
			}
			continue
		}
		k := 1
		for k < len(a.groups) && r.groupLine(a.groups[k]).id != g {
			k++
		}
		if k == len(a.groups) {
			continue
		}
		child := r.groupLine(a.groups[k-1]).id
		if child == hier.NoGroup {
			continue
		}
		if !read {
			queue, read = r.m.h.Queue(g), true
		}
		owner := child.String()
		for _, e := range queue {
			if e.Owner == owner && !e.Ignore && e.Expires < p.NextExpiry {
				return j
			}
		}
	}
	return -1
}

// updatesAfter reports whether p is a deactivation whose event update of
// group g the kernel printed after line u (the interrupted walk's update
// of g): tmigr_update_events is printed under the group's lock, so the
// printed order of two updates of one group is their lock order. Two
// updates printed with one timestamp come in the merge's order instead
// (ties.go): there the first expiry u printed says it. p's update queues
// its event, and the group's first expiry is no later than that event
// ever after, so a later one printed by u was read before p's update.
func (r *replayer) updatesAfter(p *op, g hier.GroupID, u int) bool {
	if p.kind != opDeactivate {
		return false
	}
	for _, i := range p.updates {
		q := r.ev[i].Data.(ftrace.TmigrUpdateEvents)
		if id, ok := r.gm.id(q.Group); ok && id == g {
			if w := r.ev[u].Data.(ftrace.TmigrUpdateEvents); i < u && r.ev[i].TS == r.ev[u].TS &&
				q.NextEvt != hier.KtimeMax && w.NextExpiry > q.NextEvt {
				return true
			}
			return i > u
		}
	}
	return false
}

// parentUpdateAfter returns the group of deactivation p's event update
// whose child is g, if the kernel printed it after line u (the interrupted
// walk's update of g): that update holds g's lock too
// (tmigr_update_events locks the child and the group), so the printed
// order is the lock order.
func (r *replayer) parentUpdateAfter(p *op, g hier.GroupID, u int) (hier.GroupID, bool) {
	if p.kind != opDeactivate {
		return hier.NoGroup, false
	}
	for _, i := range p.updates {
		q := r.ev[i].Data.(ftrace.TmigrUpdateEvents)
		if child, ok := r.gm.id(q.Child); ok && child == g && i > u {
			if pg, ok := r.gm.id(q.Group); ok {
				return pg, true
			}
		}
	}
	return hier.NoGroup, false
}

// A split operation: another CPU's deactivation replayed inside a walk up
// to its compare-and-swap of group g, where it waits, on a goroutine of its
// own paused in hier's Tracer call, for the interrupted walk to end (its
// update of g, which took the lock first, included); then it goes on to its
// own update. Only one goroutine runs at a time: each hands over to the
// other and waits. What the replay keeps per running operation (the lines
// being collected, the walks in progress, the trace line) is swapped at
// each hand-over.
type split struct {
	o  *op // the split operation
	in *op // the walk it interrupted
	g  hier.GroupID
	// beforeCAS: the operation is an activation paused just before its
	// compare-and-swap of g, its CPU's event already ignored
	// (ignoredBefore); otherwise it paused just after it.
	beforeCAS bool
	handoff
	// oldEvent: what was known of the split deactivation's CPU event
	// before its walk. __tmigr_cpu_deactivate un-ignores the CPU's event
	// before the walk, with its old expiry, which only its event update
	// replaces: the interrupted walk's update, which took the lock first,
	// read that old event.
	oldEvent reason
}

// handoff runs an operation on a goroutine of its own that may pause in
// its middle (a split walk, a waiting round) and hands control back and
// forth: one of the two goroutines runs at a time, so the replay's state
// needs no lock, and each keeps its own rctx.
type handoff struct {
	ctx rctx // the paused operation's, while it waits
	// resume hands over to the operation; yield hands back: it paused
	// or ended.
	resume, yield chan struct{}
	ended         bool
}

func newHandoff() handoff {
	return handoff{resume: make(chan struct{}), yield: make(chan struct{})}
}

// launch runs f, the operation, on its goroutine, and returns when it
// ended or paused.
func (r *replayer) launch(h *handoff, f func()) {
	c := r.saveCtx()
	go func() {
		f()
		h.ended = true
		h.yield <- struct{}{}
	}()
	<-h.yield
	r.restoreCtx(c)
}

// park is the operation's side: it pauses until resumed.
func (r *replayer) park(h *handoff) {
	h.ctx = r.saveCtx()
	h.yield <- struct{}{}
	<-h.resume
	r.restoreCtx(h.ctx)
}

// wake resumes the paused operation and returns when it ended or paused
// again.
func (r *replayer) wake(h *handoff) {
	c := r.saveCtx()
	h.resume <- struct{}{}
	<-h.yield
	r.restoreCtx(c)
}

// rctx is what the replay keeps per running operation.
type rctx struct {
	lines  []mline
	on     bool
	depth  int
	walks  []*walkAt
	rounds []*round
	inWalk int
	line   int
	pos    int
}

func (r *replayer) saveCtx() rctx {
	return rctx{r.rec.lines, r.rec.on, r.depth, slices.Clone(r.walks), slices.Clone(r.rounds), r.inWalk, r.line, r.pos}
}

func (r *replayer) restoreCtx(c rctx) {
	r.rec.lines, r.rec.on, r.depth, r.walks, r.rounds, r.inWalk, r.line, r.pos = c.lines, c.on, c.depth, c.walks, c.rounds, c.inWalk, c.line, c.pos
}

// onPoint is called by hier at its interleaving points: an activation
// being split before its compare-and-swap pauses there.
func (r *replayer) onPoint(p hier.Point, cpu int, g hier.GroupID) {
	if sp := r.pausing; sp != nil && sp.beforeCAS && p == hier.PointActiveCAS && cpu == sp.o.cpu && g == sp.g {
		r.pause(sp)
		r.resumeAt(sp.o, g)
		return
	}
	if p == hier.PointActiveCAS || p == hier.PointInactiveCAS {
		r.catchUp(cpu, g)
	}
	if p == hier.PointInactiveCAS {
		r.childKeptActive(cpu, g)
	}
}

// resumeAt replays, when activation o, split before its compare-and-swap
// of group g (ignoredBefore), resumes after the walk it interrupted, the
// operations of other CPUs that lead g to the state its printed transition
// started from: its compare-and-swap reads g only now, and one printed
// before its transition may have come in the meantime.
func (r *replayer) resumeAt(o *op, g hier.GroupID) {
	for _, i := range o.groups {
		gl := r.groupLine(i)
		if gl.id != g {
			continue
		}
		if p := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); !p.bad {
			r.leadTo(o, g, p.admits, i, math.MaxInt64)
		}
		return
	}
}

// leadTo replays inside walk o, one after another, the operations of
// other CPUs that lead group g to a state want admits (bridge, with the
// walk's line seen), each printed no later than until, at most lookahead
// of them.
func (r *replayer) leadTo(o *op, g hier.GroupID, want func(gstate) bool, seen int, until int64) {
	for tries := 0; tries < lookahead && !want(r.m.state(g)); tries++ {
		j, _ := r.bridge(o, g, r.m.state(g), want, true, seen)
		if j < 0 || r.ev[r.ops[j].key()].TS > until {
			return
		}
		r.nest(j)
	}
}

// childKeptActive replays, just before a deactivation's compare-and-swap
// of group g above its first, another CPU's operation that made g's child
// active again, when the transition's printed state keeps the child's bit
// and the model's child is inactive. tmigr_inactive_up
// (kernel/time/timer_migration.c, 6.9+) reads the child's state right
// before that compare-and-swap and leaves the bit set when the child is
// active: the activation came after the deactivation's event update of
// the child, which printed it idle, and before that read (childSeenActive
// is the same without an update line in between).
func (r *replayer) childKeptActive(cpu int, g hier.GroupID) {
	if len(r.walks) == 0 {
		return
	}
	w := r.walks[len(r.walks)-1]
	o := w.o
	if w.depth != r.depth || o.cpu != cpu || o.kind != opDeactivate || r.splitOf(o) != nil {
		return
	}
	for k := 1; k < len(o.groups); k++ {
		line := r.groupLine(o.groups[k])
		if line.id != g {
			continue
		}
		child := r.groupLine(o.groups[k-1]).id
		if line.activate || line.after.active&line.childmask == 0 || child == hier.NoGroup {
			return
		}
		r.leadTo(o, child, func(s gstate) bool { return s.active != 0 }, o.groups[k], math.MaxInt64)
		return
	}
}

// catchUp replays, before a walk's compare-and-swap of a group above its
// first, the activations and deactivations of other CPUs printed before
// that transition's line and clearly earlier (by more than skewNS): the
// walking CPU stalled between two levels of its walk (a vCPU descheduled),
// and they ran meanwhile, each CPU's in its order. The transition's line is
// printed right after its compare-and-swap, so its place among the other
// CPUs' lines is the compare-and-swap's, unless its state says otherwise:
// a child's activation its deactivation did not see came after it (the
// line printed late). Only operations whose transitions start from the
// model's states are replayed so, and none of a CPU a remote round still
// pending claimed before it (the round, which catchUp does not replay,
// came first: claimedPending).
func (r *replayer) catchUp(cpu int, g hier.GroupID) {
	if len(r.walks) == 0 {
		return
	}
	w := r.walks[len(r.walks)-1]
	o := w.o
	if w.depth != r.depth || o.cpu != cpu || r.splitOf(o) != nil {
		return
	}
	at, child := -1, hier.NoGroup
	for k, i := range o.groups {
		if k > 0 && r.groupLine(i).id == g {
			at, child = i, r.groupLine(o.groups[k-1]).id
			break
		}
	}
	if at < 0 {
		return
	}
	ts := r.ev[at].TS
	// A deactivation's transition that cleared its child's bit read the
	// child idle (tmigr_inactive_up reads it again before its
	// compare-and-swap): an activation of the child printed before it
	// came after that read, its line however clearly earlier.
	gl := r.groupLine(at)
	readIdle := !gl.activate && gl.after.active&gl.childmask == 0
	blocked := r.busyCPUs(cpu, len(r.ops))
	defer r.putSet(blocked)
	for j := o.idx + 1; j < len(r.ops) && r.ops[j].key() < at; j++ {
		p := r.ops[j]
		if r.done[j] || blocked[p.cpu] {
			continue
		}
		if p.kind != opActivate && p.kind != opDeactivate || r.ev[p.key()].TS >= ts-skewNS ||
			r.changeDue(r.ev[p.key()].TS) || !r.fits(p, hier.NoGroup, r.m.current()) ||
			readIdle && r.activates(p, child) || r.claimedPending(j) {
			blocked[p.cpu] = true
			continue
		}
		r.nest(j)
	}
	// Lines within skewNS of the transition's are in no printed order;
	// where the state the transition read is still not the model's, the
	// states say which of them came first: an operation whose
	// transitions lead there ran before it (bridge).
	if p := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); !p.bad {
		r.leadTo(o, g, p.admits, at, ts+skewNS)
	}
}

// activates reports whether operation p's transitions leave group g active.
func (r *replayer) activates(p *op, g hier.GroupID) bool {
	for _, i := range p.groups {
		if gl := r.groupLine(i); gl.id == g && gl.activate {
			return true
		}
	}
	return false
}

// split replays operation j inside walk o up to its compare-and-swap of g:
// just after it, or, with beforeCAS, an activation just before it
// (ignoredBefore).
func (r *replayer) split(j int, o *op, g hier.GroupID, beforeCAS bool) {
	sp := &split{o: r.ops[j], in: o, g: g, beforeCAS: beforeCAS, handoff: newHandoff(), oldEvent: known}
	r.pausing = sp
	r.launch(&sp.handoff, func() { r.nest(j) })
	r.pausing = nil
	if p := r.ops[j]; p.kind == opDeactivate {
		sp.oldEvent = r.evBefore[p.cpu] // set as its walk began
	}
	if !sp.ended {
		r.splits = append(r.splits, sp)
	}
}

// pause is the split operation's side: it waits in its Tracer call.
func (r *replayer) pause(sp *split) {
	r.pausing = nil
	r.park(&sp.handoff)
	// The walk it waited for has ended: its CPU is free to run its next
	// operation inside this one's walk.
	r.walks = slices.DeleteFunc(r.walks, func(w *walkAt) bool { return w.o == sp.in })
}

// splitOf returns the split operation waiting for walk o, or nil.
func (r *replayer) splitOf(o *op) *split {
	for _, sp := range r.splits {
		if sp.in == o {
			return sp
		}
	}
	return nil
}

// resumeSplits lets the operations waiting for walk o, which has ended, go
// on, each to its end.
func (r *replayer) resumeSplits(o *op) {
	for sp := r.splitOf(o); sp != nil; sp = r.splitOf(o) {
		for k, x := range r.splits {
			if x == sp {
				r.splits = append(r.splits[:k], r.splits[k+1:]...)
				break
			}
		}
		r.wake(&sp.handoff)
		r.checkInvariants()
	}
}

// readAfter returns the index of the event update that follows o's k-th
// transition in the same step of the walk (before its next transition),
// or -1 if the kernel printed none.
func (r *replayer) readAfter(o *op, k int) int {
	gi := o.groups[k]
	end := len(r.ev)
	if k+1 < len(o.groups) {
		end = o.groups[k+1]
	}
	for _, u := range o.updates {
		if u > gi && u < end {
			return u
		}
	}
	return -1
}

// nest replays operation j inside the walk in progress.
func (r *replayer) nest(j int) {
	line, pos := r.line, r.pos
	r.inWalk++
	if r.done[j] {
		// Waiting in its preResync for the walk in progress to come
		// first: it was already counted as begun.
		o := r.ops[j]
		r.line, r.pos = r.ev[o.first()].Line, o.key()
		r.volatile()
		r.runWalk(o)
	} else {
		// The CPU's new timers before it that did not walk come
		// first (bridge passes over them).
		o := r.ops[j]
		for k := max(0, j-lookahead); k < j; k++ {
			if p := r.ops[k]; p.cpu == o.cpu && !r.done[k] && quietNewTimer(p) {
				r.exec(k)
			}
		}
		r.exec(j)
	}
	r.inWalk--
	r.line, r.pos = line, pos
}

// quietNewTimer reports whether o is a new timer that did not walk
// (tmigr_cpu_new_timer_idle alone): it reads its CPU's wakeup and changes
// no group.
func quietNewTimer(o *op) bool { return o.kind == opNewTimer && !o.walked }

// fits reports whether every transition of p, except that of group g,
// starts from the model's state of its group: replayed inside a walk, p
// must need no resynchronisation.
func (r *replayer) fits(p *op, g hier.GroupID, states *groupStates) bool {
	for _, i := range p.groups {
		gl := r.groupLine(i)
		if gl.id == hier.NoGroup || gl.id == g {
			continue
		}
		if pr := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); pr.bad || !pr.admits(*states.at(gl.id)) {
			return false
		}
	}
	return true
}

// changeDue reports whether a change of the machine takes effect before
// trace time ts.
func (r *replayer) changeDue(ts int64) bool {
	for _, k := range r.at {
		if !k.checked && k.done < ts {
			return true
		}
	}
	return false
}
