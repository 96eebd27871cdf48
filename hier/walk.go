package hier

// The five walks. Each climbs from a group (normally the CPU's level-0
// group) towards the top, calling its step function per group; a step that
// returns true ends the walk (__walk_groups_from). The parent pointer is
// loaded once per step, and the child's groupmask is read only after a
// non-nil parent was loaded (the kernel reads it unconditionally; the value
// is unused when the walk ends, and reading it only after the parent keeps
// the read ordered after the setup code's write).

// Point names a place in the kernel's code where another CPU's operation
// can fall in between and no tracepoint marks it (see Options.Interleave).
type Point int

const (
	// PointInactiveCAS: in the deactivation walk, just before the CAS of a
	// group's state (its child state already read for this attempt).
	PointInactiveCAS Point = iota
	// PointActiveCAS: in the activation walk, just before the CAS. At the
	// CPU's own group, the CPU's event is already ignored
	// (__tmigr_cpu_activate sets the flag before it walks).
	PointActiveCAS
	// PointUpdateLock: in an event update, just before the group (and
	// child) locks are taken.
	PointUpdateLock
	// PointRemoteExpire: in a remote expiry, after the target was claimed
	// (remote set) and its lock dropped, before its timers run.
	PointRemoteExpire
	// PointRemoteRelock: in a remote expiry, after the target's timers ran,
	// before its bases and lock are taken again for the walk.
	PointRemoteRelock
	// PointNewTimerRemote: NewTimer found its CPU being expired remotely
	// while its event was ignored, and returns without walking: the case
	// where the kernel loses the new timer (see the package doc).
	PointNewTimerRemote
	// PointStaleStop: a deactivation walk stops at a group (its CAS left
	// the group active) whose event update, under the lock, found it idle:
	// the group's event may not reach the parent (see the package doc).
	PointStaleStop
)

// Interleave is called at each Point with the CPU running the walk and the
// group concerned (NoGroup for PointRemoteExpire, PointRemoteRelock and
// PointNewTimerRemote, where target is the CPU expired remotely; target is
// -1 otherwise). It runs on the walking CPU's goroutine with only that
// CPU's own locks held at the CAS points, so it may pause the walk and run
// another CPU's operation in between: the race orders of the kernel's
// comments in tests, and the orders a recording shows in the replay.
type Interleave func(p Point, cpu int, g GroupID, target int)

// hook calls the Interleave function, if any.
func (h *Hierarchy) hook(p Point, cpu int, g *group, target int) {
	if f := h.interleave; f != nil {
		id := NoGroup
		if g != nil {
			id = g.id()
		}
		f(p, cpu, id, target)
	}
}

// walkActiveUp walks tmigr_active_up from group (child below it).
func (h *Hierarchy) walkActiveUp(w *walk, child, g *group) {
	for g != nil {
		if h.activeUp(g, w) {
			return
		}
		child = g
		if g = child.parent.Load(); g == nil {
			return
		}
		w.childmask = child.groupmask
	}
}

// walkInactiveUp walks tmigr_inactive_up from the CPU's group.
func (h *Hierarchy) walkInactiveUp(w *walk, g *group) {
	var child *group
	for g != nil {
		if h.inactiveUp(g, child, w) {
			return
		}
		child = g
		if g = child.parent.Load(); g == nil {
			return
		}
		w.childmask = child.groupmask
	}
}

// walkUpdate walks tmigr_new_timer_up (= tmigr_update_events) from the
// CPU's group.
func (h *Hierarchy) walkUpdate(w *walk, g *group) {
	var child *group
	for g != nil {
		if h.updateEvents(g, child, w) {
			return
		}
		child = g
		if g = child.parent.Load(); g == nil {
			return
		}
		w.childmask = child.groupmask
	}
}

// walkRequires walks tmigr_requires_handle_remote_up from the CPU's group.
func (h *Hierarchy) walkRequires(w *walk, g *group) {
	for g != nil {
		// Handle the group only if the child is its migrator or it has
		// none; otherwise its own migrator handles it.
		if !checkMigrator(g, w.childmask) {
			return
		}
		w.firstexp = g.nextExpiry.Load()
		if w.now >= w.firstexp {
			w.check = true
			return
		}
		child := g
		if g = child.parent.Load(); g == nil {
			return
		}
		w.childmask = child.groupmask
	}
}

// activeUp is tmigr_active_up: set the child active in g; it becomes
// migrator only if g had none, and only then does the walk go on (g was
// idle, so its parent must learn that it is active now).
func (h *Hierarchy) activeUp(g *group, w *walk) bool {
	childmask := w.childmask
	cur := g.state.Load()
	var next migrState
	var done bool
	for {
		s := migrState(cur)
		done = true
		migrator := s.migrator()
		if migrator == MigratorNone {
			migrator = childmask
			done = false
		}
		next = makeState(s.active()|childmask, migrator, s.seq()+1)
		h.hook(PointActiveCAS, w.cpu, g, -1)
		if g.state.CompareAndSwap(cur, uint32(next)) {
			break
		}
		cur = g.state.Load()
	}
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvGroupSetCPUActive, Group: g.id(), Parent: g.parentID(), Node: g.node, Active: next.active(), Migrator: next.migrator(), Childmask: childmask})
	}
	// The group is active again: its event in the parent's queue may be
	// ignored. Written without the lock; the worst outcome of a race is one
	// useless remote expiry by the parent's migrator.
	g.evt.ignore.Store(true)
	return done
}

// inactiveUp is tmigr_inactive_up: clear the child's active bit in g if the
// child is really inactive (its state is re-read on every attempt: race
// R1), hand the migrator role to the lowest remaining active bit if the
// child had it, and go on only if g became idle. The events are updated at
// every level visited; update_events' result does not steer this walk.
func (h *Hierarchy) inactiveUp(g, child *group, w *walk) bool {
	childmask := w.childmask
	cur := g.state.Load()
	var next migrState
	var done bool
	for {
		var childActive uint8
		if child != nil {
			childActive = child.loadState().active()
		}
		s := migrState(cur)
		done = true
		active, migrator := s.active(), s.migrator()
		if childActive == 0 {
			active &^= childmask
		}
		if migrator == childmask && childActive == 0 {
			migrator = lowestBit(active)
			if migrator == MigratorNone {
				done = false // g became idle: propagate
			}
		}
		next = makeState(active, migrator, s.seq()+1)
		if next.migrator() != MigratorNone && next.active() == 0 {
			h.warn()
		}
		h.hook(PointInactiveCAS, w.cpu, g, -1)
		if g.state.CompareAndSwap(cur, uint32(next)) {
			break
		}
		cur = g.state.Load()
	}
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvGroupSetCPUInactive, Group: g.id(), Parent: g.parentID(), Node: g.node, Active: next.active(), Migrator: next.migrator(), Childmask: childmask})
	}
	w.remote = false
	w.sawIdle = false
	h.updateEvents(g, child, w)
	if done && w.sawIdle && g.parent.Load() != nil {
		h.hook(PointStaleStop, w.cpu, g, -1)
	}
	return done
}

// updateEvents is tmigr_update_events, the only place where a group
// event's expiry is set. With child == nil it queues the CPU event w.evt
// with expiry w.nextexp in the level-0 group g; otherwise it propagates the
// child group's first event into g. It reports whether the walk is done.
//
// The group and child states are read under the locks (race R3): whoever
// takes the top group's lock second sees the other's effect.
func (h *Hierarchy) updateEvents(g, child *group, w *walk) bool {
	remote := w.remote
	done := false
	var evt, first *event
	var nextexp int64
	var ignore bool
	var childState, groupState migrState

	if child != nil {
		h.hook(PointUpdateLock, w.cpu, g, -1)
		child.mu.Lock()
		g.mu.Lock()
		childState = child.loadState()
		groupState = g.loadState()
		if childState.active() != 0 {
			// An active child's migrator takes care of its events.
			g.mu.Unlock()
			child.mu.Unlock()
			return true
		}
		first = child.nextGroupEvt()
		nextexp = child.nextExpiry.Load()
		evt = &child.evt
		// May race with a concurrent activation of child: if this write
		// wins, the parent's migrator may do one useless remote expiry.
		ignore = nextexp == KtimeMax
		evt.ignore.Store(ignore)
	} else {
		nextexp = w.nextexp
		evt, first = w.evt, w.evt
		ignore = evt.ignore.Load()
		// Level-0 fast path: an ignored CPU event need not be touched here;
		// the parent step drops it lazily. Not after a remote expiry, and
		// not in a single-level hierarchy where g is the top.
		if ignore && !remote && g.parent.Load() != nil {
			return true
		}
		h.hook(PointUpdateLock, w.cpu, g, -1)
		g.mu.Lock()
		groupState = g.loadState()
	}
	w.sawIdle = groupState.active() == 0

	if evt.queued {
		if evt.expires == nextexp && !ignore {
			// Same expiry, but maybe a different CPU owns it now.
			evt.cpu = first.cpu
			goto checkTop
		}
		if !g.events.del(evt) {
			g.nextExpiry.Store(KtimeMax)
		}
	}
	if ignore {
		// Nothing to propagate. After a remote expiry the walk must still
		// go on through inactive groups, so events queued there are
		// propagated again (race R4).
		if !remote || groupState.active() != 0 {
			done = true
		}
	} else {
		evt.expires = nextexp
		evt.cpu = first.cpu
		if g.events.add(evt) {
			g.nextExpiry.Store(nextexp)
		}
	}

checkTop:
	if g.parent.Load() == nil && groupState.migrator() == MigratorNone {
		// The whole hierarchy is idle: hand the first event back so the
		// CPU going idle (or adding the timer) arms for it. After a remote
		// expiry the handle-remote walk computes it itself.
		done = true
		if remote {
			g.mu.Unlock()
			if child != nil {
				child.mu.Unlock()
			}
			return done
		}
		w.firstexp = g.nextGroupEvtExpires()
	}

	if h.tr != nil {
		childID, childExp, childCPU := NoGroup, int64(0), 0
		if child != nil {
			childID, childExp, childCPU = child.id(), child.evt.expires, child.evt.cpu
		}
		h.tr.Trace(Event{Kind: EvUpdateEvents, Child: childID, Group: g.id(),
			ChildActive: childState.active(), GroupActive: groupState.active(),
			NextEvt: nextexp, NextExpiry: g.nextExpiry.Load(), ChildEvtExpiry: childExp, ChildEvtCPU: childCPU})
	}
	g.mu.Unlock()
	if child != nil {
		child.mu.Unlock()
	}
	return done
}
