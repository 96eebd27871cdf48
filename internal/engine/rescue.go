package engine

import (
	"runtime"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// Rescue: another thread runs the due timers of a worker whose thread does
// not get its CPU.
//
// A worker's thread is pinned to its CPU. On a loaded machine a thread
// that its deadline woke is runnable but waits for the CPU behind other
// threads (a CPU hog, other processes, the kernel's own work) for up to a
// scheduling period or more, and so do the timers it is to run, while
// package time's timers run on whatever thread of the Go scheduler gets a
// CPU first. In the kernel a CPU is never "runnable elsewhere": the
// hrtimer interrupt preempts whatever runs there. The nearest the kernel
// has to what we need is the migration hierarchy, in which a CPU that is
// awake runs the global timers of idle ones (tmigr_handle_remote); here a
// worker that is not running is the same case for every timer it holds,
// not only its global ones.
//
// So while the machine is loaded, a worker going to sleep until deadline
// also arms a package time timer (its rescue timer) for deadline plus
// RescueAfter. If it wakes and runs in time it stops that timer; if not,
// the rescue timer's function, on some thread of the Go scheduler that did
// get a CPU, takes the worker's CPU lock and runs the worker's due hrtimer
// interrupt and tick exactly as the worker would (service's timer parts,
// its list of moves included, then the idle round), then re-arms itself
// for the worker's next event in case the thread still does not run. The
// worker's CPU lock (cpuMu) is what makes that safe: the worker's
// goroutine holds it at all times but while it waits for its next event
// (the halt, poll or haltpoll wait), so a rescue runs only while the
// worker waits or is runnable after its wait, never beside it, and the
// worker, when it runs again, waits for a rescue in progress to finish and
// then sees the state the rescue left (the interrupts' effects, its next
// events). Inside a rescued timer function the runtime sees the rescuing
// thread as the worker (CPU reports it, a Sleep is refused with
// ErrOnWorker), as if the worker had run it.
//
// A rescue also tells HaltPoll workers to halt without polling for
// pollHold (haltPollNow): on a CPU that other threads want, a worker
// that wakes early to poll spends its share of the CPU spinning and is
// preempted in its poll window, while one that sleeps to the deadline
// wakes with the scheduler's credit for sleepers and preempts the hog
// (with a hog on every CPU, halting after a rescue more than halves the
// hrtimer p99: docs/performance.md). A late wake-up alone does not switch:
// halting on a quiet VM is late by more than RescueAfter often enough that
// the switch would hold for good; a rescue needs the worker not to have
// run for RescueAfter plus package time's latency.
//
// A rescued timer runs about RescueAfter plus package time's own lateness
// after it was due, so under load the runtime's tail follows std's rather
// than the worker's thread's wait for its CPU. On a machine that is not
// loaded the rescue timers cost nothing: a worker arms one only within
// loadedHold of a wake-up (its own or a rescue) that came more than
// RescueAfter late, so an idle runtime adds no wake-up and no timer of
// package time.
const (
	// RescueAfter is how long a worker's next event may be overdue before
	// another thread runs it.
	RescueAfter = 200 * time.Microsecond
	// loadedHold is how long the runtime counts as loaded after a late
	// wake-up.
	loadedHold = int64(time.Second)
	// pollHold is how long HaltPoll workers halt without polling after a
	// rescue. Under CPU hogs rescues recur every few tens of milliseconds,
	// so the workers keep halting there; on a quiet VM a rescue comes from
	// a rare wake-up hundreds of microseconds late (the host's, a few a
	// second), and a hold of loadedHold kept polling off most of the time,
	// losing HaltPoll's median, while under hogs the two holds gave the
	// same p99 (docs/performance.md, "Rescue and pollHold").
	pollHold = int64(100 * time.Millisecond)
	// rescueHorizon: a worker sleeping longer than this (its next event
	// is far or none) arms no rescue timer; the rescue of its next event,
	// if the machine is still loaded then, is armed at its next wake-up.
	rescueHorizon = int64(time.Hour)
)

// rescueDelay returns how long from now the rescue timer of a worker
// sleeping until deadline is to wait, and whether to arm it at all: only
// while the runtime is loaded (now before loadedUntil) and for a deadline
// within rescueHorizon.
func rescueDelay(deadline, now, loadedUntil int64) (time.Duration, bool) {
	if now >= loadedUntil || deadline-now > rescueHorizon {
		return 0, false
	}
	return time.Duration(deadline-now) + RescueAfter, true
}

// lateBy reports whether a worker that waited until deadline and ran at
// woke was late enough for the runtime to count as loaded.
func lateBy(deadline, woke int64) bool { return woke-deadline > int64(RescueAfter) }

// loaded marks the engine loaded at now, for loadedHold, and tells
// Config.Loaded (the public API puts back the spare Ps there if the
// program's GOMAXPROCS took them: a worker that finds no P wakes late).
func (e *Engine) loaded(now int64) {
	if until := now + loadedHold; until > e.loadedUntil.Load() {
		e.loadedUntil.Store(until)
	}
	if f := e.cfg.Loaded; f != nil {
		f(now)
	}
}

// armRescue arms the worker's rescue timer, if the runtime is loaded, for
// its next event at deadline (cpuMu held): before the worker waits, and
// after a rescue, for the worker's thread may still not run.
func (w *Worker) armRescue(deadline, now int64) {
	if w.rescueT == nil {
		return
	}
	if d, ok := rescueDelay(deadline, now, w.e.loadedUntil.Load()); ok {
		w.rescueT.Reset(d)
		w.rescueArmed = true
	}
}

// rescue is the rescue timer's function, on a goroutine of the Go
// scheduler.
func (w *Worker) rescue() {
	if !w.cpuMu.TryLock() {
		return // the worker runs, or another rescue does
	}
	defer w.cpuMu.Unlock()
	w.rescueArmed = false
	if w.rescueAt(w.now()) {
		w.armRescue(min(w.tickAt, w.hb.Device()), w.now())
	}
}

// rescueAt runs, with cpuMu held by a thread other than the worker's, the
// worker's timer interrupts that have been due for more than RescueAfter
// at now, as service and the idle round would. Kicks and control requests
// stay for the worker. It reports whether it ran anything.
func (w *Worker) rescueAt(now int64) bool {
	e := w.e
	if w.stop || !w.online.Load() || e.closed.Load() || e.fatal.Load() != nil {
		return false
	}
	// This thread is the worker from here on (self, CPU): the list of
	// moves may run timers that came due while it is emptied.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w.rescuer.Store(int64(osthread.Gettid()))
	defer w.rescuer.Store(-1)
	// The earliest expiry due: the core's, or a listed timer's (queued by
	// the drain, overdue ones for now).
	dev := min(w.hb.Device(), w.drainMoves())
	late := int64(RescueAfter)
	if now-dev <= late && now-w.tickAt <= late {
		return false
	}
	w.st.rescues.Add(1)
	e.loaded(now)
	if now >= w.hb.Device() {
		w.hrInterrupt(now)
	}
	if now = w.now(); now >= w.tickAt {
		w.tick(now)
	}
	if w.tk.InIdle() {
		w.idle(w.now())
	}
	if until := now + pollHold; until > e.rescuedUntil.Load() {
		e.rescuedUntil.Store(until)
	}
	if w.crowded() {
		w.st.crowded.Add(1)
	}
	return true
}

// crowded reports, during a rescue, whether the worker's thread is
// runnable: its wait ended (or it was preempted) and it still did not get
// its CPU, which other threads hold; as against asleep, its own timer late
// (as a VM's often are). It is counted (Stats.Crowded) to tell a user which
// of the two the rescues were, and decides nothing: turning HaltPoll's
// polling off only after crowded rescues was tried and measured, and was
// worse than after any rescue (docs/performance.md); most rescues there
// found the worker runnable anyway, its CPU shared with the process's own
// Go threads.
func (w *Worker) crowded() bool {
	tid := int(w.tid.Load())
	if tid <= 0 {
		return true
	}
	r, err := osthread.Runnable(tid)
	return err != nil || r
}

// haltPollNow reports whether a HaltPoll worker is to poll at now: not
// within pollHold of a rescue.
func (e *Engine) haltPollNow(now int64) bool { return now >= e.rescuedUntil.Load() }
