package hier

// Remote is one tmigr_handle_remote walk, stepped through by its caller so
// that the timers of each CPU it expires can be handed out one at a time
// (package cpu's expiry pass gives them to the driver, which runs them)
// rather than run from inside the walk:
//
//	var r hier.Remote
//	h.BeginRemote(&r, cpu, now, basej)
//	for target := r.Next(); target >= 0; target = r.Next() {
//		// expire target's due global timers (timer_expire_remote)
//		r.Done(f) // re-fetch target's next global event, walk it up
//	}
//
// Between Next and Done no lock of the hierarchy is held: the target is
// marked remote, so its own NewTimer walks nothing meanwhile, and it may
// leave idle (Done then leaves its state alone), exactly the window the
// kernel's tmigr_handle_remote_cpu opens around timer_expire_remote.
// HandleRemote is this loop with Expirer.ExpireRemote in the middle.
//
// A Remote belongs to the handler CPU's driver; it holds no pointer into
// the caller and may live in a per-CPU structure, reused walk after walk.
type Remote struct {
	h       *Hierarchy
	t       *tmcpu // the handler
	g       *group // the group being handled; nil once the walk is over
	entered bool   // tmigr_handle_remote was traced for g
	done    bool   // the walk ended and the handler's wakeup was stored
	w       walk
	target  *tmcpu // claimed by Next, not yet reported by Done
}

// Fetcher is the part of the timer code a remote walk needs after a
// target's timers ran: its bases locked, its next global event.
type Fetcher interface {
	// LockBases locks target's LOCAL then GLOBAL timer base. The lock
	// order is: timer bases, then per-CPU hierarchy lock, then groups.
	LockBases(target int)
	// NextGlobalRemote is the global result of
	// fetch_next_timer_interrupt_remote for target, bases locked, computed
	// with the caller's (basej, now) snapshot: target's first global expiry
	// in ns, or KtimeMax if its global wheel is empty or its first local
	// timer is on the same jiffy or earlier.
	NextGlobalRemote(target int, basej uint64, now int64) int64
	// UnlockBases unlocks what LockBases locked.
	UnlockBases(target int)
}

// BeginRemote starts r as cpu's remote walk at the end of its timer softirq
// (tmigr_handle_remote): in every group where cpu's branch is the migrator
// (or the group has none), the due events are expired one by one, each
// standing for a CPU whose global timers cpu must run. now and basej are
// the time and jiffies of the last jiffies update. When the walk is over,
// cpu's wakeup is the next expiry of the highest group it handled
// (KtimeMax if it handled none), whether cpu is idle or active.
func (h *Hierarchy) BeginRemote(r *Remote, cpu int, now int64, basej uint64) {
	r.h, r.t, r.g, r.entered, r.done, r.target = h, nil, nil, false, true, nil
	t := h.tmc(cpu)
	if notAvailable(t) {
		return
	}
	g := t.tmgroup.Load()
	// Fast exit for a non-migrator, unless it is an idle ex-migrator with a
	// stale wakeup: the walk then stops at once and the wakeup is reset
	// when it ends, which ends the re-arming (race R7).
	if !checkMigrator(g, t.groupmask) && t.wakeup.Load() == KtimeMax {
		return
	}
	r.t, r.g, r.done = t, g, false
	r.w = walk{childmask: t.groupmask, firstexp: KtimeMax, now: now, basej: basej, cpu: cpu}
}

// Next returns the next CPU whose global timers the walk expires, claimed
// (tmigr_handle_remote_cpu: marked remote, its wakeup reset), or -1 when
// the walk is over. Each target must be reported with Done before Next is
// called again.
func (r *Remote) Next() int {
	if r.target != nil {
		r.h.warn() // a driver bug: the claimed target was never reported
		return -1
	}
	for r.g != nil {
		g := r.g
		if !r.entered {
			if r.h.tr != nil {
				r.h.tr.Trace(Event{Kind: EvHandleRemote, Group: g.id()})
			}
			r.entered = true
		}
		// tmigr_handle_remote_up: while this child is the migrator of g
		// (or g has none), dequeue g's expired events one by one.
		if !checkMigrator(g, r.w.childmask) {
			r.g = nil
			break
		}
		g.mu.Lock()
		if e := g.nextExpiredGroupEvt(r.w.now); e != nil {
			target := e.cpu
			g.mu.Unlock()
			if r.claim(target) {
				return target
			}
			continue
		}
		// firstexp is overwritten at every level: it ends up as the next
		// expiry of the highest group handled.
		r.w.firstexp = g.nextExpiry.Load()
		g.mu.Unlock()
		child := g
		if r.g = child.parent.Load(); r.g != nil {
			r.w.childmask = child.groupmask
		}
		r.entered = false
	}
	if !r.done {
		r.done = true
		r.t.mu.Lock()
		r.t.wakeup.Store(r.w.firstexp)
		r.t.mu.Unlock()
	}
	return -1
}

// claim is the first half of tmigr_handle_remote_cpu: take target unless
// it is unavailable (its timers were migrated, or it handles them itself),
// already being expired, awake again (its event is ignored) or not yet due
// (its event was updated, and whoever did so takes care of it).
func (r *Remote) claim(target int) bool {
	h := r.h
	t := &h.cpus[target]
	t.mu.Lock()
	if !t.available.Load() || t.remote.Load() || t.evt.ignore.Load() || r.w.now < t.evt.expires {
		t.mu.Unlock()
		return false
	}
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvHandleRemoteCPU, CPU: target, Parent: t.parentID(), Wakeup: t.wakeup.Load()})
	}
	t.remote.Store(true)
	t.wakeup.Store(KtimeMax)
	t.mu.Unlock() // let the target leave idle meanwhile
	r.h.hook(PointRemoteExpire, r.w.cpu, nil, target)
	r.target = t
	return true
}

// Done reports that the claimed target's due global timers have run (also
// when the target is the handler itself: the kernel skipped the self case
// until the June 2026 livelock fix, d486b4934a8e). If the target is still
// idle and available, its next global event is fetched through f and
// walked up (even when there is none: race R4); then the target is no
// longer being expired.
func (r *Remote) Done(f Fetcher) {
	t := r.target
	if t == nil {
		r.h.warn()
		return
	}
	r.target = nil
	r.h.hook(PointRemoteRelock, r.w.cpu, nil, t.cpu)
	// Lock order: timer bases, then the CPU lock, then groups.
	f.LockBases(t.cpu)
	t.mu.Lock()
	if !t.available.Load() || !t.idle.Load() {
		// Offline meanwhile (already walked then), or awake and in
		// charge of its own state.
		f.UnlockBases(t.cpu)
	} else {
		global := f.NextGlobalRemote(t.cpu, r.w.basej, r.w.now)
		f.UnlockBases(t.cpu)
		rw := walk{nextexp: global, firstexp: KtimeMax, evt: &t.evt, remote: true, cpu: r.w.cpu}
		r.h.walkUpdate(&rw, t.tmgroup.Load())
	}
	t.remote.Store(false)
	t.mu.Unlock()
}
