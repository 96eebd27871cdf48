package tmigr

import (
	"fmt"
	"runtime"

	"github.com/tmigr/tmigr/cpumask"
)

// Offline takes worker cpu offline, as CPU hotplug does: it leaves the
// migration hierarchy (tmigr_cpu_offline) and every timer it holds, wheel
// and hrtimer, pinned or not, moves to the first online housekeeping worker
// (timers_dead_cpu, hrtimers_cpu_dying), as do its queued tasks. Its thread
// then sleeps until Online. A task running on it is waited for. The last
// online worker cannot go offline, a worker cannot take itself offline,
// and a timer function may not call it (ErrOnWorker).
func (rt *Runtime) Offline(c int) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	if self := rt.self(); self == w || inTimerFunc(self) {
		return ErrOnWorker
	}
	rt.ctlMu.Lock()
	defer rt.ctlMu.Unlock()
	if rt.closed.Load() {
		return ErrClosed
	}
	if !w.online.Load() {
		return fmt.Errorf("tmigr: worker %d is already offline", c)
	}
	to := rt.housekeeping(w)
	if to == nil {
		return fmt.Errorf("tmigr: worker %d is the last one online", c)
	}
	return <-w.request(ctlOffline, to).done
}

// Online brings an offline worker back (an isolated one stays out of the
// hierarchy under PullIsolated, as the kernel keeps it). A timer function
// may not call it (ErrOnWorker).
func (rt *Runtime) Online(c int) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	if inTimerFunc(rt.self()) {
		return ErrOnWorker
	}
	rt.ctlMu.Lock()
	defer rt.ctlMu.Unlock()
	if rt.closed.Load() {
		return ErrClosed
	}
	if w.online.Load() {
		return fmt.Errorf("tmigr: worker %d is already online", c)
	}
	return <-w.request(ctlOnline, nil).done
}

// goOffline runs on the dying worker, active, between tasks.
func (w *worker) goOffline(to *worker) error {
	rt := w.rt
	now := w.now()
	w.leaveIdle(now) // the hotplug thread runs on the CPU: it is active
	w.hp.Lock()
	// to.tk is read only for its CPU number and state, which its own
	// goroutine does not change while hotplug is serialised (ctlMu).
	r, err := w.tk.Offline(&to.tk, now)
	if err != nil {
		w.hp.Unlock()
		rt.fail(fmt.Errorf("offline worker %d: %w", w.cpu, err))
		return rt.Err()
	}
	w.online.Store(false)
	tasks := w.takeTasks()
	w.hp.Unlock()

	to.queue(tasks...)
	if r.Activate >= 0 {
		rt.workers[r.Activate].kick(kickActivate)
	}
	if r.Kick >= 0 {
		rt.workers[r.Kick].kick(kickTimer)
	}
	if r.Retrigger >= 0 {
		rt.workers[r.Retrigger].kick(kickRetrigger)
	}
	w.apply(r)
	w.idleSince.Store(w.now())
	return nil
}

// goOnline runs on the worker coming back: its bases are prepared, it joins
// the hierarchy (unless isolated and excluded) active, and its tick starts.
func (w *worker) goOnline() {
	rt := w.rt
	now := w.now()
	w.hp.Lock()
	r, err := w.tk.Online(now)
	if err != nil {
		w.hp.Unlock()
		rt.fail(fmt.Errorf("online worker %d: %w", w.cpu, err))
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
// partition does: list holds every worker to be isolated besides
// Config.Isolated (which stays isolated), "" for none. Under PullIsolated
// the hierarchy's exclusion runs with the kernel's set arithmetic
// (tmigr_isolated_exclude_cpumask): workers in list that take part leave
// it, and workers out of it that had left come back. Under the other
// policies only the housekeeping set changes (where AfterFunc from outside
// the workers queues). At least one housekeeping worker must remain. It
// waits for idle workers running a timer function to finish it, and a timer
// function may not call it (ErrOnWorker).
func (rt *Runtime) Exclude(list string) error {
	if !rt.started() {
		return ErrNotStarted
	}
	e, err := cpumask.Parse(list)
	if err != nil {
		return fmt.Errorf("tmigr: Exclude: %w", err)
	}
	var all cpumask.Mask
	for _, w := range rt.order {
		all.Set(w.cpu)
	}
	if extra := e.AndNot(all); !extra.Empty() {
		return fmt.Errorf("tmigr: Exclude: CPUs %s run no worker (workers: %s)", extra, all)
	}
	iso := rt.bootIso.Or(e)
	if hk := all.AndNot(iso); hk.Empty() {
		return fmt.Errorf("tmigr: Exclude(%q) leaves no housekeeping worker", list)
	}
	self := rt.self()
	if inTimerFunc(self) {
		return ErrOnWorker
	}
	rt.ctlMu.Lock()
	defer rt.ctlMu.Unlock()
	if rt.closed.Load() {
		return ErrClosed
	}
	h := rt.set.Hierarchy()
	if rt.cfg.Policy != PullIsolated || h == nil {
		rt.isolated.Store(&iso)
		return nil
	}

	// In the kernel each CPU withdraws or returns itself, from an IPI
	// (on_each_cpu_mask), so it is running, and its idle state cannot
	// change meanwhile. Here one call does it for all; pin every other
	// online worker active first (a pinned worker does not go idle, and
	// one that was idle is kicked out of it), so the hierarchy's view of
	// each is the state it keeps until the exclusion is done. The
	// caller's own worker, if any, cannot change state while it runs us.
	var pinned []*worker
	for _, w := range rt.order {
		if w == self || !w.online.Load() {
			continue
		}
		w.pins.Add(1)
		pinned = append(pinned, w)
		if w.idling.Load() {
			w.kick(kickActivate)
		}
	}
	for _, w := range pinned {
		for w.idling.Load() && rt.Err() == nil {
			runtime.Gosched()
		}
	}
	if err := rt.Err(); err != nil {
		for _, w := range pinned {
			w.pins.Add(-1)
		}
		return err
	}
	hiso := h.Isolation()
	hiso.CpusetIsolated = e
	if err := h.SetIsolation(hiso); err != nil {
		for _, w := range pinned {
			w.pins.Add(-1)
		}
		return fmt.Errorf("tmigr: Exclude: %w", err)
	}
	triggers := rt.set.ExcludeIsolated(e)
	rt.isolated.Store(&iso)
	for _, w := range pinned {
		w.pins.Add(-1)
		w.kick(kickTimer) // go idle again, through the hierarchy
	}
	for _, c := range triggers {
		rt.workers[c].kick(kickActivate)
	}
	return nil
}

// inTimerFunc reports whether the caller, running on worker self (nil: on
// none), is in a timer function rather than in a task's own code. Control
// operations wait for other workers, which may be in timer functions
// waiting for them in turn; tasks may call them, timer functions may not.
// self is the caller's worker, so its goroutine-owned fields are ours to
// read.
func inTimerFunc(self *worker) bool {
	return self != nil && (!self.inTask || self.inYield)
}
