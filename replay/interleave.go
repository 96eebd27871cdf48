package replay

import (
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
// its own). It runs whole, its event update included. That is the
// kernel's order when the other CPU's update line comes first; when the
// interrupted walk's comes first, its update queued its new event before
// the other CPU read the queue, and a deactivation of the other CPU that
// found the top idle may have returned that event: the model's reads the
// queue without it (a mismatch, not replayed yet: it would take running
// the other operation on a goroutine paused in its Tracer call after its
// compare-and-swap, and resumed after the interrupted update).

// walkAt is an activation or deactivation whose walk is running in hier.
type walkAt struct {
	o     *op
	depth int // r.depth inside its collect
	n     int // transitions traced so far
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
	k := w.n
	w.n++
	o := w.o
	if k >= len(o.groups) {
		return
	}
	u := r.readAfter(o, k)
	if u < 0 {
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
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.states()
		grp, want := g, p.GroupActive
		if cur[g].active == want {
			if child == hier.NoGroup || cur[child].active == p.ChildActive {
				return
			}
			grp, want = child, p.ChildActive
		}
		j := r.bridge(o, grp, cur[grp], func(s gstate) bool { return s.active == want }, true)
		if j < 0 {
			return
		}
		r.nest(j)
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
		r.exec(j)
	}
	r.inWalk--
	r.line, r.pos = line, pos
}

// fits reports whether every transition of p, except that of group g,
// starts from the model's state of its group: replayed inside a walk, p
// must need no resynchronisation.
func (r *replayer) fits(p *op, g hier.GroupID, states map[hier.GroupID]gstate) bool {
	for _, i := range p.groups {
		gl := r.groupLine(i)
		if gl.id == hier.NoGroup || gl.id == g {
			continue
		}
		if pr := priorOf(gl.activate, gl.after, gl.childmask); pr.bad || !pr.admits(states[gl.id]) {
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
