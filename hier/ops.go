package hier

import "math/bits"

// Expirer is what the per-CPU timer code provides for remote expiry
// (timer.c's side of tmigr_handle_remote_cpu). It is implemented elsewhere
// (package cpu); tests use fakes.
type Expirer interface {
	// ExpireRemote is timer_expire_remote: run target's due timers of its
	// GLOBAL wheel, up to the current jiffies, on handler. It takes target's
	// base lock itself. handler may be target.
	ExpireRemote(handler, target int)
	Fetcher
}

// Activate is tmigr_cpu_activate: cpu leaves idle (timer_clear_idle, or the
// timer code undoing a Deactivate whose result was due within a jiffy). It
// becomes migrator of every group on its path that had none, going up as
// long as it finds idle groups. Its event stays queued, now ignored, until a
// queue is next examined (lazy removal). No-op for an unavailable CPU, and
// (a kernel WARN, counted in Warnings) for a CPU that is not idle.
func (h *Hierarchy) Activate(cpu int) {
	t := h.tmc(cpu)
	if notAvailable(t) {
		return
	}
	if !t.idle.Load() {
		h.warn()
		return
	}
	t.mu.Lock()
	t.idle.Store(false)
	h.activate(t)
	t.mu.Unlock()
}

// activate is __tmigr_cpu_activate (t locked, t.idle already false).
func (h *Hierarchy) activate(t *tmcpu) {
	g := t.tmgroup.Load()
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUActive, CPU: t.cpu, Parent: g.id(), Wakeup: t.wakeup.Load()}) // before the reset
	}
	t.evt.ignore.Store(true)
	t.wakeup.Store(KtimeMax)
	w := walk{childmask: t.groupmask, cpu: t.cpu}
	h.walkActiveUp(&w, nil, g)
}

// Deactivate is tmigr_cpu_deactivate: cpu goes idle (its tick stops).
// nextexp is its first global timer if that is strictly earlier than its
// first local timer, else KtimeMax. The result is what the CPU must wake
// for besides its local timers: KtimeMax while another available CPU is
// active anywhere, otherwise (this was the last active CPU) the first event
// of the whole hierarchy, which may be earlier than nextexp and may belong
// to another CPU. An unavailable CPU gets nextexp back: it handles its own
// timers.
func (h *Hierarchy) Deactivate(cpu int, nextexp int64) int64 {
	t := h.tmc(cpu)
	if notAvailable(t) {
		return nextexp
	}
	t.mu.Lock()
	ret := h.deactivate(t, nextexp)
	t.idle.Store(true)
	t.wakeup.Store(ret)
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUIdle, CPU: cpu, Parent: t.parentID(), NextEvt: nextexp, Wakeup: ret})
	}
	t.mu.Unlock()
	return ret
}

// deactivate is __tmigr_cpu_deactivate (t locked).
func (h *Hierarchy) deactivate(t *tmcpu, nextexp int64) int64 {
	// With nextexp == KtimeMax the event keeps the ignore flag of the last
	// activation: "no event".
	if nextexp != KtimeMax {
		t.evt.ignore.Store(false)
	}
	w := walk{nextexp: nextexp, firstexp: KtimeMax, evt: &t.evt, childmask: t.groupmask, cpu: t.cpu}
	h.walkInactiveUp(&w, t.tmgroup.Load())
	return w.firstexp
}

// NewTimer is tmigr_cpu_new_timer: cpu is already idle in the hierarchy and
// its first global timer may have changed (the idle loop re-evaluates its
// sleep after an interrupt). If nextexp is a new expiry, it is walked up
// and the result stored as the CPU's wakeup (even KtimeMax); otherwise the
// stored wakeup is returned unchanged, so an idle last-resort CPU keeps its
// duty. A cancelled timer (nextexp == KtimeMax) does not dequeue the old
// event: at worst it causes one useless remote expiry. While another CPU is
// expiring this CPU's timers, nothing is walked and KtimeMax is returned
// (that CPU walks afterwards). An unavailable CPU gets nextexp back.
func (h *Hierarchy) NewTimer(cpu int, nextexp int64) int64 {
	t := h.tmc(cpu)
	if notAvailable(t) {
		return nextexp
	}
	t.mu.Lock()
	ret := t.wakeup.Load()
	if nextexp != KtimeMax && (nextexp != t.evt.expires || t.evt.ignore.Load()) {
		ret = h.newTimer(t, nextexp)
		t.wakeup.Store(ret)
	}
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUNewTimerIdle, CPU: cpu, Parent: t.parentID(), NextEvt: nextexp, Wakeup: t.wakeup.Load()})
	}
	t.mu.Unlock()
	return ret
}

// newTimer is tmigr_new_timer (t locked).
func (h *Hierarchy) newTimer(t *tmcpu, nextexp int64) int64 {
	if t.remote.Load() {
		if t.evt.ignore.Load() {
			h.hook(PointNewTimerRemote, t.cpu, nil, t.cpu)
		}
		return KtimeMax
	}
	g := t.tmgroup.Load()
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUNewTimer, CPU: t.cpu, Parent: g.id(), Wakeup: t.wakeup.Load()})
	}
	t.evt.ignore.Store(false)
	w := walk{nextexp: nextexp, firstexp: KtimeMax, evt: &t.evt, childmask: t.groupmask, cpu: t.cpu}
	h.walkUpdate(&w, g)
	return w.firstexp
}

// QuickCheck is tmigr_quick_check, used when the timer code only predicts
// the sleep length of an active cpu: KtimeMax if some other CPU is likely to
// handle the hierarchy (cpu is not the lonely migrator of its group, or a
// group on the way up has more than one active child), else the minimum of
// nextevt and the next expiries of all groups up to the top (events are not
// sorted bottom-up while this CPU is active). An unavailable CPU gets
// nextevt back, and so does an idle one (a kernel WARN).
func (h *Hierarchy) QuickCheck(cpu int, nextevt int64) int64 {
	t := h.tmc(cpu)
	if notAvailable(t) {
		return nextevt
	}
	if t.idle.Load() {
		h.warn()
		return nextevt
	}
	g := t.tmgroup.Load()
	// tmigr_check_migrator_and_lonely: one read of the state for both.
	s := g.loadState()
	m := s.migrator()
	if !((m == t.groupmask || m == MigratorNone) && bits.OnesCount8(s.active()) <= 1) {
		return KtimeMax
	}
	for ; g != nil; g = g.parent.Load() {
		if !checkLonely(g) {
			return KtimeMax
		}
		nextevt = min(nextevt, g.nextExpiry.Load())
	}
	return nextevt
}

// RequiresHandleRemote is tmigr_requires_handle_remote, asked by cpu's tick:
// must the timer softirq run for remote expiry? now is the monotonic time
// of the last jiffies update. An active CPU walks up while it is the
// migrator (or the group has none) and answers whether a group's next
// expiry is due; an idle CPU (woken by its own armed wakeup) answers
// now >= wakeup.
func (h *Hierarchy) RequiresHandleRemote(cpu int, now int64) bool {
	t := h.tmc(cpu)
	if notAvailable(t) {
		return false
	}
	if !t.idle.Load() {
		w := walk{now: now, childmask: t.groupmask, firstexp: KtimeMax}
		h.walkRequires(&w, t.tmgroup.Load())
		return w.check
	}
	return now >= t.wakeup.Load()
}

// HandleRemote is tmigr_handle_remote, run by cpu at the end of its timer
// softirq: in every group where cpu's branch is the migrator (or the group
// has no migrator), expire the due events, running the global timers of the
// CPUs they stand for through x, and re-walk those CPUs' events. now and
// basej are the time and jiffies of the last jiffies update. Afterwards
// cpu's wakeup is the next expiry of the highest group it handled (KtimeMax
// if it handled none), whether cpu is idle or active. x must not be nil. It
// is a Remote walk run to its end (see Remote, which a caller uses to hand
// the timers out one at a time instead).
func (h *Hierarchy) HandleRemote(cpu int, now int64, basej uint64, x Expirer) {
	var r Remote
	h.BeginRemote(&r, cpu, now, basej)
	for target := r.Next(); target >= 0; target = r.Next() {
		x.ExpireRemote(cpu, target)
		r.Done(x)
	}
}
