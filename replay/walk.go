package replay

import (
	"slices"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Activations and deactivations (tmigr_cpu_activate, tmigr_cpu_deactivate).

// runWalk replays an activation or a deactivation.
func (r *replayer) runWalk(o *op) {
	c := o.cpu
	// o's group lines, decoded once for the resynchronisation and the
	// comparison.
	var glBuf [8]kgroup
	gls := r.groupLines(glBuf[:0], o)
	if !slices.Contains(r.waiting, o.idx) { // a set: o may be replayed inside its own preResync
		r.waiting = append(r.waiting, o.idx)
	}
	resynced := r.preResync(o, gls)
	if k := slices.Index(r.waiting, o.idx); k >= 0 {
		r.waiting = slices.Delete(r.waiting, k, k+1)
	}
	if r.walked[o.idx] {
		return // replayed inside another CPU's walk meanwhile (interleave.go)
	}
	r.walked[o.idx] = true
	// The walk reads the states of the groups on c's path bottom-up.
	var pwBuf [8]reason
	pathWhy := r.pathWhy(pwBuf[:0], c, resynced)
	nextevt, evWhy := o.nextevt, known
	if o.kind == opDeactivate && !o.closed {
		nextevt, evWhy = r.cutNextevt(o)
	}
	if o.kind == opDeactivate {
		r.ek[c] = known // see below: known once the CPU deactivates
		if evWhy != known {
			r.setEvUnknown(c, evWhy)
		}
	}
	wBefore := r.wk[c]
	if o.kind == opDeactivate {
		r.evBefore[c] = r.ek[c]
		if !r.evSet[c] {
			r.evBefore[c] = first(r.evBefore[c], reasonEvent)
		}
	}
	var ret int64
	r.walks = append(r.walks, r.newWalk(o, r.depth+1))
	ml := r.collect(func() {
		if o.kind == opActivate {
			r.m.h.Activate(c)
		} else {
			ret = r.m.h.Deactivate(c, nextevt)
		}
	})
	defer r.release(ml)
	r.walks = r.walks[:len(r.walks)-1]
	// The split deactivations waiting for this walk: their CPUs' old
	// events were in the queues this walk's updates read.
	splitWhy := known
	for _, sp := range r.splits {
		if sp.in == o {
			splitWhy = first(splitWhy, sp.oldEvent)
		}
	}
	// So were those of the deactivations this walk ran inside: each
	// un-ignored its old event before its first compare-and-swap
	// (__tmigr_cpu_deactivate sets cpuevt.ignore false before it walks,
	// 6.9+), and its update, which replaces it, comes after this walk.
	for _, w := range r.walks {
		if w.o.kind == opDeactivate {
			splitWhy = first(splitWhy, r.evBefore[w.o.cpu])
		}
	}
	r.resumeSplits(o)
	// The stored wakeup tmigr_cpu_active prints.
	if o.kind == opActivate {
		if a, ok := one(ml, hier.EvCPUActive); ok {
			r.checkNS(r.ev[o.first()].Line, "tmigr_cpu_active wakeup", wBefore, o.oldWakeup, a.wakeup)
		}
	}
	kind := hier.EvGroupSetCPUActive
	if o.kind == opDeactivate {
		kind = hier.EvGroupSetCPUInactive
	}
	mg := r.onlyBuf(ml, kind)
	defer r.release(mg)
	lastWhy := r.compareGroups(o, gls, mg, kind, resynced, pathWhy)
	if o.kind == opDeactivate && r.evBefore[c] != known {
		// The kernel's event, from before the recording, may have sat
		// queued with this very expiry: tmigr_update_events leaves such
		// an event in its place (6.9+), where the model queued it
		// afresh, after the others of its expiry.
		r.qpos[c] = true
	}
	if o.kind == opActivate {
		r.ek[c], r.wk[c] = known, known
		r.volatile()
		return
	}
	if !o.closed {
		// Cut by the recording before its tmigr_cpu_idle: its result
		// is not printed, and from now on unknown.
		r.evSet[c] = true
		r.wk[c] = reasonPartial
		r.volatile()
		return
	}
	// The deactivation's result: the first event of the top group if the
	// walk left the whole hierarchy idle (then every idle CPU's event
	// counts), else KTIME_MAX.
	why := lastWhy
	if handback(o, r, mg, ml) {
		why = first(why, r.qIdle(r.topo.Top), splitWhy)
		if why == known && ret != o.wakeup && r.ignoreUnseen(o) {
			why = reasonIgnoreLate
		}
	}
	r.checkNS(r.ev[o.last()].Line, "tmigr_cpu_idle", r.lateWhy(why, o.wakeup, ret), o.wakeup, ret)
	r.evSet[c] = true
	r.wk[c] = known
	if ret != o.wakeup {
		r.wk[c] = first(why, reasonDiverged)
	}
	r.volatile()
}

// compareGroups compares the group transitions of a walk, the kernel's
// with the model's, and then puts what the kernel printed in the model
// where it differs (after a mismatch or an undetermined replay): it is
// known from now on. gls are o's group lines (groupLines). It returns
// why the walk was undetermined.
func (r *replayer) compareGroups(o *op, gls []kgroup, mg []mline, kind hier.EventKind, resynced reason, pathWhy []reason) reason {
	lastWhy := known
	for k := 0; k < max(len(o.groups), len(mg)); k++ {
		why := resynced
		if k < len(pathWhy) {
			why = first(why, pathWhy[k])
		}
		line := r.ev[o.last()].Line
		var kernel, model transition
		if k < len(o.groups) {
			gl := gls[k]
			line = gl.line
			kernel = transition{gl.id, gl.after, true}
			if !*r.seen.at(gl.id) {
				why = first(why, reasonFirst)
			}
		}
		if k < len(mg) {
			model = transition{mg[k].group, gstate{mg[k].active, mg[k].migrator}, true}
			if k >= len(o.groups) && o.cut {
				why = first(why, reasonPartial) // the recording ended first
			}
		}
		if kernel != model && why == known && k < len(o.groups) && k < len(mg) && kernel.id == model.id {
			why = r.cutAtEnd(o.groups[k], kernel.id, kernel.s, model.s)
		}
		if kernel != model && why == known && k < len(o.groups) && *r.startTie.at(kernel.id) {
			// The group's state is the one a transition printed at
			// the recording's first time left; lines of one time are
			// printed in the merge's order, not the order they ran in
			// (ties.go), and another CPU's transition printed before
			// the recording began, at that time, may have come after
			// it.
			why = reasonBefore
		}
		if same := kernel == model; why != known || same {
			r.decide(line, kind.String(), why, same, "", "")
		} else {
			r.check(line, kind.String(), why, kernel.String(), model.String())
		}
		lastWhy = first(lastWhy, why)
	}
	// A transition the model made as the kernel did needs no fixing,
	// whatever operations replayed inside the walk did afterwards.
	// post: the model's state of each group of o's transitions now,
	// before any fix.
	var fix map[hier.GroupID]gstate
	var postBuf [8]gstate
	post := postBuf[:0]
	cur := r.m.current()
	for _, gl := range gls {
		post = append(post, *cur.at(gl.id))
	}
	for k, gl := range gls {
		*r.seen.at(gl.id) = true
		same := k < len(mg) && mg[k].group == gl.id && gstate{mg[k].active, mg[k].migrator} == gl.after
		if gl.id != hier.NoGroup && !same && post[k] != gl.after {
			if fix == nil {
				fix = map[hier.GroupID]gstate{}
			}
			fix[gl.id] = gl.after
		}
	}
	applied := true
	if len(fix) > 0 {
		applied = r.resyncTo(fix, first(lastWhy, reasonDiverged))
	}
	for k, gl := range gls {
		if gl.id == hier.NoGroup {
			continue
		}
		if applied || post[k] == gl.after {
			*r.gk.at(gl.id) = known
		}
		*r.startTie.at(gl.id) = r.ev[o.groups[k]].TS == r.startTS && !r.boot
	}
	return lastWhy
}

// transition is one side of a compared group transition: the group and
// the state it left, or none (ok false). Two sides are compared as values
// and formatted only for a mismatch.
type transition struct {
	id hier.GroupID
	s  gstate
	ok bool
}

func (t transition) String() string {
	if !t.ok {
		return "no transition"
	}
	return fmtGroup(t.id, t.s)
}

// pathWhy appends to buf, per level of cpu's path, why the states a walk
// reads up to that level may differ from the kernel's.
func (r *replayer) pathWhy(buf []reason, cpu int, why reason) []reason {
	for _, g := range r.topo.Path[cpu] {
		why = first(why, *r.gk.at(g))
		buf = append(buf, why)
	}
	return buf
}

// handback reports whether a deactivation (the kernel's or ours) left the
// top group idle, or found it idle when it updated the top's events (an
// interleaving, see interleave.go), so that its result is the top's first
// event.
func handback(o *op, r *replayer, mg []mline, ml []mline) bool {
	for _, u := range o.updates {
		p := r.ev[u].Data.(ftrace.TmigrUpdateEvents)
		if id, ok := r.gm.id(p.Group); ok && id == r.topo.Top && p.GroupActive == 0 {
			return true
		}
	}
	for _, l := range ml {
		if l.kind == hier.EvUpdateEvents && l.group == r.topo.Top && l.active == 0 {
			return true
		}
	}
	if n := len(o.groups); n > 0 {
		gl := r.groupLine(o.groups[n-1])
		if gl.id == r.topo.Top && gl.after.migrator == hier.MigratorNone {
			return true
		}
	}
	if n := len(mg); n > 0 && mg[n-1].group == r.topo.Top && mg[n-1].migrator == hier.MigratorNone {
		return true
	}
	return false
}

// whyIgnoreLate: see ignoreUnseen.
const whyIgnoreLate = "ignore flag an activation wrote without a lock, not yet seen"

// ignoreUnseen reports whether deactivation o, which found the top idle,
// may have read the top's queue before another CPU's activation, in
// flight meanwhile, marked its group's event there ignored: its printed
// wakeup is the expiry that group's last update of the top queued.
// tmigr_active_up sets a group's groupevt.ignore after its
// compare-and-swap, without the parent's lock, so the parent's next
// reader may not see it yet (kernel/time/timer_migration.c, 6.9+; "the
// migrator of the parent group observes the change too late"), and
// tmigr_next_groupevt then keeps the event first. The model's write is
// seen at once. The activation must have begun before o's update of the
// top and changed the top only after it.
func (r *replayer) ignoreUnseen(o *op) bool {
	top := r.topo.Top
	u := -1
	for _, i := range o.updates {
		if id, ok := r.gm.id(r.ev[i].Data.(ftrace.TmigrUpdateEvents).Group); ok && id == top {
			u = i
		}
	}
	if u < 0 {
		return false
	}
	for j := max(0, o.idx-lookahead); j < len(r.ops) && j <= o.idx+lookahead; j++ {
		p := r.ops[j]
		path := r.topo.Path[p.cpu]
		if p.kind != opActivate || p.cpu == o.cpu || p.first() > u || len(path) < 2 {
			continue
		}
		after := false
		for _, i := range p.groups {
			after = after || i > u && r.groupLine(i).id == top
		}
		if !after {
			continue
		}
		child := path[len(path)-2]
		for i := u - 1; i >= 0; i-- {
			q, ok := r.ev[i].Data.(ftrace.TmigrUpdateEvents)
			if !ok {
				continue
			}
			g, ok1 := r.gm.id(q.Group)
			c, ok2 := r.gm.id(q.Child)
			if ok1 && ok2 && g == top && c == child {
				if q.NextEvt == o.wakeup {
					return true
				}
				break
			}
		}
	}
	return false
}

// cutNextevt returns the CPU event of deactivation o, which the
// recording cut before its tmigr_cpu_idle: its level-0 event update prints
// it (tmigr_update_events traces the walk's nextexp there, 6.9+), else it
// is unknown.
func (r *replayer) cutNextevt(o *op) (int64, reason) {
	for _, i := range o.updates {
		if q := r.ev[i].Data.(ftrace.TmigrUpdateEvents); q.Child == 0 {
			return q.NextEvt, known
		}
	}
	return hier.KtimeMax, reasonPartial
}

// cutAtEnd is why a transition of group g printed at event index i, whose
// state differs from the model's only in the bits of children whose CPUs
// print no line after it, may be right: another CPU's operation can have
// changed g between the model's state and this compare-and-swap and print
// its own transition only after the recording's end (a line is printed
// after its compare-and-swap, a vCPU descheduled in between delays it).
// reasonPartial then, else known.
func (r *replayer) cutAtEnd(i int, g hier.GroupID, kernel, model gstate) reason {
	n := r.topo.Node(g)
	if n == nil {
		return known
	}
	diff := kernel.active ^ model.active
	if kernel.migrator != model.migrator {
		for _, m := range []uint8{kernel.migrator, model.migrator} {
			if m != hier.MigratorNone {
				diff |= m
			}
		}
	}
	if diff == 0 {
		return known
	}
	var cpus cpumask.Mask
	var found uint8
	for _, c := range n.CPUs {
		if b := r.topo.CPUBit[c]; diff&b != 0 {
			cpus.Set(c)
			found |= b
		}
	}
	for _, kid := range n.Kids {
		if b := r.topo.Node(kid).Bit; diff&b != 0 {
			cpus = cpus.Or(r.topo.Node(kid).Below)
			found |= b
		}
	}
	if found != diff {
		return known
	}
	for k := i + 1; k < len(r.ev); k++ {
		if c := r.ev[k].CPU; c >= 0 && cpus.Test(c) {
			return known
		}
	}
	return reasonPartial
}
