package tmigr

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/wheel"
)

// TimerOption modifies a wheel timer armed with AfterFuncOn.
type TimerOption uint8

const (
	// Pinned keeps the timer on its worker's LOCAL wheel: it always runs
	// there, even while that worker is idle (a global timer may be run by
	// the hierarchy's migrator instead).
	Pinned TimerOption = 1 << iota
	// Deferrable puts the timer on the DEF wheel: it never wakes an idle
	// worker and runs at the worker's first tick after it is due.
	Deferrable
)

// HRMode chooses the context a high-resolution timer runs in.
type HRMode uint8

const (
	// Soft timers run in the HRTIMER_SOFTIRQ pass, after every hard timer
	// due at the same interrupt.
	Soft HRMode = iota
	// Hard timers run in the interrupt pass itself, first.
	Hard
)

func (m HRMode) String() string {
	if m == Hard {
		return "hard"
	}
	return "soft"
}

// Timer is a timer of the runtime: a wheel timer (AfterFunc, AfterFuncOn)
// or a high-resolution timer (HRAfterFunc). Its Stop and Reset have the
// results of time.Timer's for a timer made by time.AfterFunc, and may be
// called from any goroutine, also from the timer's own function and while
// it runs.
//
// A Timer's "armed" state is kept beside the core's queued state, under
// the Timer's own mutex, because the two differ for an instant: the core
// unqueues a timer (in expiry order, its lock then dropped) before the
// driver runs it. Reset and Stop decide on armed; the run claims the timer
// only if it is still armed and was not queued again meanwhile:
//
//	worker                              another goroutine
//	──────                              ─────────────────
//	core: t unqueued, to run
//	                                    Reset(d): armed (true, returns true),
//	                                      queued again for now+d
//	claim: armed but queued again:
//	  this expiry is stale, skip        (t runs at now+d, once)
//
// So f never runs for an arm that Stop or Reset reported as stopped, and
// never early for the arm that Reset made.
type Timer struct {
	wt wheel.Timer // its Data is the Timer

	rt   *Runtime
	f    func()
	cpu  int  // the CPU it is armed on behalf of; -1: the arming goroutine's
	isHR bool // a high-resolution timer
	ht   hrtimer.Timer

	mu      sync.Mutex
	armed   bool
	when    int64        // the expiry asked for, clock ns
	running atomic.Int32 // the function runs (per run in progress)
}

// AfterFunc arranges for f to run on a worker after at least d (a negative
// d counts as 0) and returns the Timer. It is a global wheel timer, queued on
// the worker the caller runs on (inside a task or a timer function), as the
// kernel queues a timer on the CPU that arms it, else on the first
// housekeeping worker. While that worker is idle, the hierarchy's migrator
// may run f instead (the kernel's remote expiry). The wheel rounds d up to
// whole ticks plus one (a timer armed at a tick's edge must not fire a tick
// early) and, beyond 63 ticks, to its level granularity (up to 1/8 later).
// f runs on the worker's thread and must not block. After Close the timer
// is returned unarmed, as it is from a zero Runtime.
func (rt *Runtime) AfterFunc(d time.Duration, f func()) *Timer {
	t := &Timer{rt: rt, f: f, cpu: -1}
	cpu.Setup(&t.wt, 0)
	t.wt.Data = t
	t.Reset(d)
	return t
}

// AfterFuncOn is AfterFunc on behalf of worker cpu, as if armed by code
// running there: a global timer on its wheel, a pinned one with Pinned, a
// deferrable one with Deferrable. If the worker is offline, the timer goes
// where its timers went (the first housekeeping worker).
//
// Offline moves the timer with the worker's other timers, and Online does
// not bring it back: the next arm does. An arm from the timer's own
// function (Reset while it runs) is the exception: a running timer stays
// on the base it runs from, as mod_timer keeps it (base->running_timer), so
// a timer that re-arms itself keeps running where hotplug moved it, also
// after its worker is back, until it is armed while not running.
func (rt *Runtime) AfterFuncOn(c int, d time.Duration, f func(), opts ...TimerOption) (*Timer, error) {
	if _, err := rt.worker(c); err != nil {
		return nil, err
	}
	var flags uint32
	for _, o := range opts {
		switch o {
		case Pinned:
			flags |= cpu.Pinned
		case Deferrable:
			flags |= cpu.Deferrable
		default:
			return nil, fmt.Errorf("tmigr: unknown TimerOption %d", o)
		}
	}
	t := &Timer{rt: rt, f: f, cpu: c}
	cpu.Setup(&t.wt, flags)
	t.wt.Data = t
	t.Reset(d)
	return t, nil
}

// HRAfterFunc runs f on worker cpu after at least d, with nanosecond
// resolution: a high-resolution timer, hard or soft. The worker wakes for it
// whatever its timer wheels hold.
//
// As for AfterFuncOn, Offline moves it to the first housekeeping worker,
// and a Reset from its own function keeps it there (the kernel's
// switch_hrtimer_base never moves a timer whose callback runs), also after
// its worker is back; an arm while it is not running brings it back.
func (rt *Runtime) HRAfterFunc(c int, d time.Duration, f func(), mode HRMode) (*Timer, error) {
	w, err := rt.worker(c)
	if err != nil {
		return nil, err
	}
	if mode != Soft && mode != Hard {
		return nil, fmt.Errorf("tmigr: unknown HRMode %d", mode)
	}
	t := &Timer{rt: rt, f: f, cpu: c, isHR: true}
	t.ht.Data = t
	if err := w.hb.Setup(&t.ht, hrtimer.Monotonic, hrMode(mode)); err != nil {
		return nil, fmt.Errorf("tmigr: %w", err)
	}
	t.Reset(d)
	return t, nil
}

func hrMode(m HRMode) hrtimer.Mode {
	if m == Hard {
		return hrtimer.ModeHard
	}
	return hrtimer.ModeSoft
}

// Stop prevents the timer from firing. It returns true if the call stops
// the timer, false if the timer has already expired or been stopped. It
// does not wait for a function that has started. On a zero Timer (not made
// by the runtime) it does nothing and returns false.
func (t *Timer) Stop() bool {
	if t.rt == nil || !t.rt.started() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	t.armed = false
	if t.isHR {
		t.rt.workers[t.cpu].hb.TryCancel(&t.ht)
	} else {
		t.rt.set.Del(&t.wt)
	}
	return was
}

// Reset changes the timer to expire after d, and returns true if the timer
// had been active, false if it had expired or been stopped. The function
// runs once more after d, even if it is running now. After Close, and on a
// zero Timer, Reset arms nothing.
func (t *Timer) Reset(d time.Duration) bool {
	if t.rt == nil {
		return false
	}
	if d < 0 {
		d = 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.armed
	if !t.rt.arming() {
		t.armed = false
		return was
	}
	t.armed = true
	if t.isHR {
		t.armHR(d)
	} else {
		t.armWheel(d)
	}
	return was
}

// armWheel queues the wheel timer (t.mu held).
func (t *Timer) armWheel(d time.Duration) {
	rt := t.rt
	c := t.cpu
	if c < 0 {
		// The caller's CPU: only this case needs to know who calls (a
		// thread-id system call while some worker runs user code).
		if self := rt.self(); self != nil && self.online.Load() {
			c = self.cpu
		} else if hk := rt.housekeeping(nil); hk != nil {
			c = hk.cpu
		} else {
			c = rt.order[0].cpu
		}
	}
	w := rt.onBehalf(c)
	now := rt.clk.now()
	t.when = satAdd(now, int64(d))
	_, kickCPU := rt.set.Mod(w.cpu, &t.wt, rt.grid.Expiry(now, int64(d)), rt.grid.Jiffies(now), 0)
	w.hp.RUnlock()
	switch {
	case kickCPU >= 0:
		rt.workers[kickCPU].kick(kickTimer)
	case t.running.Load() == 0 && w.idleSince.Load() != 0 && t.wt.Flags()&cpu.Deferrable == 0 && newFirst(t.when, w.firstGlobal.Load(), rt.clk.now()):
		// A new first global timer on an idle worker, queued from
		// elsewhere, which the kernel never does (mod_timer queues on the
		// CPU it runs on). Unless the worker looks at its timers before
		// it is due anyway, wake it to publish the new first event to the
		// hierarchy, as add_timer_on's IPI would. (From the worker itself,
		// in a timer function, that is a bit in its pending word and no
		// system call.) A timer re-armed while its function runs needs
		// none: whoever runs it re-examines the base afterwards. A plain
		// kick, not lower: sleepUntil may be stale while the worker is
		// between reading its bases and going to sleep; the kick's
		// pending bit is what it checks last.
		w.kick(kickTimer)
	}
}

// newFirst reports whether a global timer expiring at when, queued on an
// idle worker, may be a first event the hierarchy does not know. first is
// the worker's first global expiry as it last told the hierarchy (a tick's
// start, at or after the expiry of the timer it stands for), MinInt64 while
// it is finding out; now is read after the timer was queued.
//
// A timer queued while the worker was finding out is either seen by it or
// kicks it (first is MinInt64). Queued before first was read, it is in
// first, and then when ≤ first if it is the first. An event not yet due is
// still the one the hierarchy holds (only the worker changes it before it
// is due, and then first is updated); one that is due may have been
// handled by another CPU, which walks the worker's next event up without
// telling the worker, possibly before the timer was queued: then the
// answer is yes too.
func newFirst(when, first, now int64) bool { return when <= first || first <= now }

// armHR starts the hrtimer on behalf of its worker (t.mu held).
func (t *Timer) armHR(d time.Duration) {
	rt := t.rt
	w := rt.onBehalf(t.cpu)
	now := rt.clk.now()
	t.when = satAdd(now, int64(d))
	eff, err := w.hb.Start(&t.ht, now, int64(d), 0, hrtimer.ModeRel)
	w.hp.RUnlock()
	if err != nil {
		rt.fail(fmt.Errorf("hrtimer start on worker %d: %w", w.cpu, err))
		return
	}
	rt.apply(w, eff)
}

// apply carries out an hrtimer Effect of an operation on behalf of w.
func (rt *Runtime) apply(w *worker, eff hrtimer.Effect) {
	if eff.Program {
		w.lower(eff.At)
	}
	if eff.IPI != nil {
		rt.workers[eff.IPI.CPU()].kick(kickRetrigger)
	}
}

// claim decides, under t.mu, whether an hrtimer expiry the core handed
// out runs the function: only if t is armed and not queued again since. It
// returns the expiry asked for. (runWheel does the same for wheel timers.)
func (t *Timer) claim() (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.armed || t.ht.Queued() {
		return 0, false
	}
	t.armed = false
	t.running.Add(1)
	return t.when, true
}

// hrFirer is what an hrtimer's Data is: a Timer or a sleeper.
type hrFirer interface{ fireHR(w *worker) }

// testHookExpired, if set, runs on the worker when the core has handed out
// an expired timer, before the runtime claims it: tests widen the window in
// which a Reset or Stop races with the expiry.
var testHookExpired func(t *Timer)

func (t *Timer) fireHR(w *worker) {
	if testHookExpired != nil {
		testHookExpired(t)
	}
	when, ok := t.claim()
	if !ok {
		return
	}
	w.runTimer(t, w.cpu, when)
}

// runTimer runs t's function on w for owner's base, expiry asked for when.
// It is counted before it runs, so what the function makes visible is in
// Stats already.
func (w *worker) runTimer(t *Timer, owner int, when int64) {
	start := w.now()
	w.st.late.record(start - when)
	w.st.timers.Add(1)
	if owner != w.cpu {
		w.st.remote.Add(1)
		w.st.remoteFor[owner].Add(1)
	}
	w.userCall(t, t.f)
	t.running.Add(-1)
	if owner != w.cpu {
		w.st.remoteNs.Add(w.now() - start)
	}
}
