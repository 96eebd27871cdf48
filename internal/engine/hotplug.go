package engine

import (
	"fmt"
	"runtime"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
)

// Offline takes worker w offline, as CPU hotplug does: it leaves the
// migration hierarchy (tmigr_cpu_offline) and every timer it holds, wheel
// and hrtimer, pinned or not, moves to the first online housekeeping worker
// (timers_dead_cpu, hrtimers_cpu_dying), as do its queued tasks. Its thread
// then sleeps until Online. A task running on it is waited for. The last
// online worker cannot go offline, a worker cannot take itself offline,
// and a timer function may not call it (ErrOnWorker).
func (e *Engine) Offline(w *Worker) error {
	if self := e.Self(); self == w || self.InTimerFunc() {
		return ErrOnWorker
	}
	e.ctlMu.Lock()
	defer e.ctlMu.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if !w.online.Load() {
		return fmt.Errorf("tmigr: worker %d is already offline", w.cpu)
	}
	to := e.Housekeeping(w)
	if to == nil {
		return fmt.Errorf("tmigr: worker %d is the last one online", w.cpu)
	}
	return <-w.request(ctlOffline, to).done
}

// Online brings an offline worker back (an isolated one stays out of the
// hierarchy under PullIsolated, as the kernel keeps it). A timer function
// may not call it (ErrOnWorker).
func (e *Engine) Online(w *Worker) error {
	if e.Self().InTimerFunc() {
		return ErrOnWorker
	}
	e.ctlMu.Lock()
	defer e.ctlMu.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if w.online.Load() {
		return fmt.Errorf("tmigr: worker %d is already online", w.cpu)
	}
	return <-w.request(ctlOnline, nil).done
}

// goOffline runs on the dying worker, active, between tasks.
func (w *Worker) goOffline(to *Worker) error {
	e := w.e
	now := w.now()
	w.leaveIdle(now) // the hotplug thread runs on the CPU: it is active
	w.hp.Lock()
	// to.tk is read only for its CPU number and state, which its own
	// goroutine does not change while hotplug is serialised (ctlMu).
	r, err := w.tk.Offline(&to.tk, now)
	if err != nil {
		w.hp.Unlock()
		e.Fail(fmt.Errorf("offline worker %d: %w", w.cpu, err))
		return e.Err()
	}
	w.online.Store(false)
	tasks := w.takeTasks()
	w.hp.Unlock()

	to.queue(tasks...)
	if r.Activate >= 0 {
		e.workers[r.Activate].Kick(kickActivate)
	}
	if r.Kick >= 0 {
		e.workers[r.Kick].Kick(KickTimer)
	}
	if r.Retrigger >= 0 {
		e.workers[r.Retrigger].Kick(kickRetrigger)
	}
	w.apply(r)
	w.idleSince.Store(w.now())
	return nil
}

// goOnline runs on the worker coming back: its bases are prepared, it joins
// the hierarchy (unless isolated and excluded) active, and its tick starts.
func (w *Worker) goOnline() {
	e := w.e
	now := w.now()
	w.hp.Lock()
	r, err := w.tk.Online(now)
	if err != nil {
		w.hp.Unlock()
		e.Fail(fmt.Errorf("online worker %d: %w", w.cpu, err))
		return
	}
	w.online.Store(true)
	w.hp.Unlock()
	w.apply(r)
	if s := w.idleSince.Swap(0); s != 0 {
		w.st.idleNs.Add(now - s)
	}
	w.idling.Store(false)
}

// Exclude sets the isolated workers at run time, as an isolated cpuset
// partition does: ex holds every worker to be isolated besides
// Config.Isolated (which stays isolated). Under PullIsolated the
// hierarchy's exclusion runs with the kernel's set arithmetic
// (tmigr_isolated_exclude_cpumask): workers in ex that take part leave it,
// and workers out of it that had left come back. Under the other policies
// only the housekeeping set changes (where timers from outside the workers
// go). At least one housekeeping worker must remain; list is how the
// caller wrote ex, for the errors. It waits for idle workers running a
// timer function to finish it, and a timer function may not call it
// (ErrOnWorker).
func (e *Engine) Exclude(ex cpumask.Mask, list string) error {
	var all cpumask.Mask
	for _, w := range e.order {
		all.Set(w.cpu)
	}
	if extra := ex.AndNot(all); !extra.Empty() {
		return fmt.Errorf("tmigr: Exclude: CPUs %s run no worker (workers: %s)", extra, all)
	}
	iso := e.bootIso.Or(ex)
	if hk := all.AndNot(iso); hk.Empty() {
		return fmt.Errorf("tmigr: Exclude(%q) leaves no housekeeping worker", list)
	}
	self := e.Self()
	if self.InTimerFunc() {
		return ErrOnWorker
	}
	e.ctlMu.Lock()
	defer e.ctlMu.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	h := e.set.Hierarchy()
	if e.cfg.Policy != cpu.PullIsolated || h == nil {
		e.isolated.Store(&iso)
		return nil
	}

	// In the kernel each CPU withdraws or returns itself, from an IPI
	// (on_each_cpu_mask), so it is running, and its idle state cannot
	// change meanwhile. Here one call does it for all; pin every other
	// online worker active first (a pinned worker does not go idle, and
	// one that was idle is kicked out of it), so the hierarchy's view of
	// each is the state it keeps until the exclusion is done. The
	// caller's own worker, if any, cannot change state while it runs us.
	var pinned []*Worker
	for _, w := range e.order {
		if w == self || !w.online.Load() {
			continue
		}
		w.pins.Add(1)
		pinned = append(pinned, w)
		if w.idling.Load() {
			w.Kick(kickActivate)
		}
	}
	for _, w := range pinned {
		for w.idling.Load() && e.Err() == nil {
			runtime.Gosched()
		}
	}
	if err := e.Err(); err != nil {
		for _, w := range pinned {
			w.pins.Add(-1)
		}
		return err
	}
	hiso := h.Isolation()
	hiso.CpusetIsolated = ex
	if err := h.SetIsolation(hiso); err != nil {
		for _, w := range pinned {
			w.pins.Add(-1)
		}
		return fmt.Errorf("tmigr: Exclude: %w", err)
	}
	triggers := e.set.ExcludeIsolated(ex)
	e.isolated.Store(&iso)
	for _, w := range pinned {
		w.pins.Add(-1)
		w.Kick(KickTimer) // go idle again, through the hierarchy
	}
	for _, c := range triggers {
		e.workers[c].Kick(kickActivate)
	}
	return nil
}

// InTimerFunc reports whether the caller, running on worker w (nil: on
// none), is in a timer function rather than in a task's own code. Control
// operations wait for other workers, which may be in timer functions
// waiting for them in turn; tasks may call them, timer functions may not.
// w is the caller's worker, so its goroutine-owned fields are ours to
// read.
func (w *Worker) InTimerFunc() bool {
	return w != nil && (!w.inTask || w.inYield)
}
