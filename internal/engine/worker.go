package engine

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/futex"
	"github.com/tmigr/tmigr/internal/osthread"
	"github.com/tmigr/tmigr/tick"
)

// The state word a worker sleeps on (futex).
const (
	stateRunning  uint32 = 0
	stateSleeping uint32 = 1
)

// Kicks: why a worker was woken. They accumulate in worker.pending until
// the worker takes them all at once.
const (
	KickTimer     uint32 = 1 << iota // a timer was queued or moved earlier: re-evaluate the next event
	kickWork                         // a task was queued
	kickActivate                     // leave idle (tmigr_trigger_active, or a pin)
	kickRetrigger                    // the hrtimer retrigger IPI
	kickCtl                          // a control request, or a fatal error
)

type ctlOp uint8

const (
	ctlStop ctlOp = iota
	ctlOffline
	ctlOnline
)

type ctlReq struct {
	op   ctlOp
	to   *Worker // ctlOffline: who takes the timers and tasks
	done chan error
}

// worker is one CPU: a goroutine locked to an OS thread pinned to that CPU.
//
// Fields above the line are shared; below it, only the worker's goroutine
// touches them.
//
// Waking a worker is the kernel's IPI: a kick sets a bit in pending and, if
// the worker sleeps, swaps the state word to running and wakes the futex:
//
//	worker (going to sleep)               kicker
//	───────────────────────               ──────
//	state = sleeping                      pending |= bit
//	if pending != 0: state = running,     if CAS(state, sleeping, running):
//	  do not sleep                            futex_wake(state)
//	futex_wait(state, sleeping, deadline)
//	state = running
//
// Either the worker sees the bit, or the kicker sees the worker asleep; and
// a wake that comes before the wait finds the word changed, so the wait
// returns at once (EAGAIN). No kick is lost and no system call is made for
// a worker that is awake.
//
// sleepUntil is when the worker next looks at its timers (its next tick or
// the deadline it sleeps to). Whoever moves the worker's hrtimer device
// earlier lowers it and kicks; the worker publishes it, then re-reads the
// device before sleeping, so one of the two always sees the other.
type Worker struct {
	e   *Engine
	cpu int // the CPU this worker is, in the timer code
	pin int // the real CPU its thread is pinned to
	hb  *hrtimer.CPUBase

	tid    atomic.Int64
	inUser atomic.Bool // running a task or a timer function

	// cpuMu is the CPU: the worker's goroutine holds it but while it
	// waits for its next event, and a rescue holds it while it runs the
	// worker's overdue timers (see rescue.go); the fields below the line
	// belong to whoever holds it. rescuer is the rescuing thread's id
	// (-1: none), which self takes for the worker's; rescueT is the
	// rescue timer (nil in tests without threads).
	cpuMu   sync.Mutex
	rescuer atomic.Int64
	rescueT *time.Timer

	state      atomic.Uint32
	pending    atomic.Uint32
	sleepUntil atomic.Int64

	online atomic.Bool
	// hp is held shared by every operation on behalf of this CPU (arming a
	// timer "from" it) and exclusively by its offline and online, so a
	// timer is never queued on a CPU whose timers have left.
	hp sync.RWMutex

	// pins > 0 keeps the worker active (Exclude); idling is true from the
	// moment the worker decides to go idle until it is active again.
	pins   atomic.Int32
	idling atomic.Bool
	// idleSince is when the worker went idle, 0 while active.
	idleSince atomic.Int64
	// firstGlobal is, while the worker is idle, the expiry of its first
	// global timer as it last told the hierarchy; MinInt64 while it is
	// finding out. A timer queued from elsewhere that comes earlier must
	// wake it (see the public API's Timer.armWheel).
	firstGlobal atomic.Int64

	mu    sync.Mutex
	tasks []func()
	ctl   chan *ctlReq

	// moves lists the high-resolution timers of this worker that a Reset
	// moved earlier than their expiry in the core, or armed while not in
	// it, for the worker to queue before it next waits (moves.go).
	moves moveList

	st workerStats

	// ────────────────────────── owned by cpuMu's holder: the worker's goroutine, or a rescue
	// tk is the CPU's tick and NOHZ protocol (package tick): every kernel
	// decision about the tick, idle and the interrupts' timer work is made
	// there; the worker carries out the Ready each call returns.
	tk      tick.CPU
	tickAt  int64 // when the tick is next due (Ready.Tick): the next tick, or the NOHZ wakeup
	inTask  bool
	inYield bool
	stop    bool
	gov     governor
	// rescueArmed: rescueT is armed (by the worker or a rescue).
	rescueArmed bool
}

func newWorker(e *Engine, set *cpu.Set, c, pin int, hb *hrtimer.CPUBase) (*Worker, error) {
	w := &Worker{e: e, cpu: c, pin: pin, hb: hb, ctl: make(chan *ctlReq, 1), tickAt: tick.Never}
	if err := w.tk.Init(tick.Config{CPU: c, Set: set, Hrtimer: hb, Grid: e.grid}); err != nil {
		return nil, err
	}
	w.st.init(len(e.workers))
	w.tid.Store(-1)
	w.rescuer.Store(-1)
	w.firstGlobal.Store(math.MinInt64)
	return w, nil
}

// main is the worker's goroutine. It locks itself to its thread for good:
// the thread's affinity and timer slack are changed, and a goroutine that
// returns while locked takes its thread with it, so neither leaks to other
// goroutines.
//
// The process's main thread is the exception: the Go runtime never exits
// it, and a goroutine returning locked to it wedges it, here pinned to a
// worker's CPU. A worker that starts there hands over to a goroutine on
// another thread, keeping the main thread locked until the new one has
// locked its own, so the new one cannot land on it.
func (w *Worker) main(ready chan<- error, begin <-chan struct{}, abort *atomic.Bool) {
	runtime.LockOSThread()
	if osthread.IsMain() {
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			w.main(ready, begin, abort)
		}()
		<-locked
		runtime.UnlockOSThread()
		return
	}
	defer w.e.wg.Done()
	if err := w.setupThread(); err != nil {
		ready <- fmt.Errorf("tmigr: worker %d: %w", w.cpu, err)
		return
	}
	ready <- nil
	<-begin
	if abort.Load() {
		return
	}
	w.loop()
}

func (w *Worker) setupThread() error {
	if err := osthread.Pin(w.pin); err != nil {
		return err
	}
	if err := osthread.SetTimerSlack(1); err != nil {
		return err
	}
	if p := w.e.cfg.Priority; p != 0 {
		if err := osthread.SetFIFO(p); err != nil {
			return err
		}
	}
	w.tid.Store(int64(osthread.Gettid()))
	return nil
}

func (w *Worker) now() int64 { return w.e.clk.Now() }

// Now reads the engine's clock.
func (w *Worker) Now() int64 { return w.e.clk.Now() }

// kick wakes the worker for the given reasons.
func (w *Worker) Kick(bits uint32) {
	w.pending.Or(bits)
	if w.state.CompareAndSwap(stateSleeping, stateRunning) {
		if _, err := futex.Wake(&w.state, 1); err != nil {
			w.e.Fail(fmt.Errorf("futex wake of worker %d: %w", w.cpu, err))
		}
	}
}

// lower moves the time the worker looks at its timers to at, if earlier,
// and kicks it if so: its hrtimer device was programmed earlier.
func (w *Worker) Lower(at int64) {
	for {
		cur := w.sleepUntil.Load()
		if at >= cur {
			return
		}
		if w.sleepUntil.CompareAndSwap(cur, at) {
			w.Kick(KickTimer)
			return
		}
	}
}

// request sends a control request and kicks the worker; the result comes
// on the returned request's done channel.
func (w *Worker) request(op ctlOp, to *Worker) *ctlReq {
	r := &ctlReq{op: op, to: to, done: make(chan error, 1)}
	w.ctl <- r
	w.Kick(kickCtl)
	return r
}

// queue appends tasks and kicks the worker.
func (w *Worker) queue(fs ...func()) {
	if len(fs) == 0 {
		return
	}
	w.mu.Lock()
	w.tasks = append(w.tasks, fs...)
	w.mu.Unlock()
	w.Kick(kickWork)
}

func (w *Worker) popTask() func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.tasks) == 0 {
		return nil
	}
	f := w.tasks[0]
	w.tasks[0] = nil
	w.tasks = w.tasks[1:]
	return f
}

func (w *Worker) takeTasks() []func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	fs := w.tasks
	w.tasks = nil
	return fs
}

// Firer is what the Data of a high-resolution timer armed through the
// engine is: FireHR runs on worker w for an expiry the core handed out.
type Firer interface{ FireHR(w *Worker) }

// loop is the CPU: interrupts (ticks, hrtimers, kicks), tasks, idle. The
// kernel's part of each step is in service, leaveIdle and idle, which take
// the time as an argument and never block (tests drive them with a fake
// clock, without a thread); the loop adds the thread's part, sleeping.
func (w *Worker) loop() {
	w.cpuMu.Lock()
	defer w.cpuMu.Unlock()
	for !w.stop {
		w.service(w.now())
		if w.stop {
			return
		}
		if f := w.popTask(); f != nil {
			w.leaveIdle(w.now())
			w.runTask(f)
			continue
		}
		now := w.now()
		w.sleep(w.idle(now), now)
	}
}

// service handles what is due at now: kicks, the hrtimer interrupt and the
// tick, then the timers Resets listed for it (moves.go). Inside a task
// (Yield) control requests wait until the task returns.
func (w *Worker) service(now int64) {
	if p := w.pending.Swap(0); p != 0 {
		if p&kickCtl != 0 {
			if w.inTask {
				w.pending.Or(kickCtl)
			} else {
				w.control()
				if w.stop {
					return
				}
			}
		}
		if p&kickRetrigger != 0 {
			w.apply(w.tk.Retrigger())
		}
		if p&kickActivate != 0 {
			w.leaveIdle(now)
		}
	}
	if now >= w.hb.Device() {
		w.hrInterrupt(now)
	}
	if now >= w.tickAt {
		w.tick(now)
	}
	// After what was due: a listed timer due now is queued for it and
	// runs on the next round, before the worker waits (see sleep).
	w.drainMoves()
}

// apply carries out what the tick core asked for. The tick is the worker's
// own timer (tickAt). The clock event device is the hrtimer base's
// register, hrtimer.CPUBase.Device: a Ready's DeviceAt is what the pass
// that returned it wrote there, under the base's lock, and starts on
// behalf of this CPU from other goroutines write it too (forwarding their
// Effect with lower), so the worker arms its sleep from the register,
// which holds every programming in its order (see sleep).
func (w *Worker) apply(r tick.Ready) {
	w.tickAt = r.Tick
}

// tick is the tick interrupt at now, and the timer softirq if it raised
// it (on a non-RT kernel the softirq runs on the way out of the
// interrupt).
func (w *Worker) tick(now int64) {
	r := w.tk.Tick(now)
	w.apply(r)
	w.st.ticks.Add(1)
	if r.Softirq&tick.TimerSoftirq != 0 {
		p := w.tk.TimerSoftirq(now)
		for t := p.Next(); t != nil; t = p.Next() {
			w.e.cfg.RunWheel(w, t)
		}
		w.e.refreshFirst(w, now)
	}
}

// refreshFirst runs after worker self's timer softirq, which may have
// expired other idle workers' global timers on the hierarchy's behalf
// (tmigr_handle_remote) and walked each one's next event up
// (fetch_next_timer_interrupt_remote). Such a worker's firstGlobal still
// names the event that was due, so every timer queued on it from elsewhere
// would kick it (newFirst's "due" case) until it next goes through its idle
// round, although the hierarchy already holds its new first event: on a
// busy runtime that is a futex wake for most re-arms of a coarse timer. So
// for every idle worker whose firstGlobal is due, the event the hierarchy
// now holds for it becomes its firstGlobal.
//
// The value stored is the hierarchy's own (the CPU's event, none if it is
// ignored), read under the hierarchy's locks, so firstGlobal never names
// an event later than the one the hierarchy will wake for, which is all
// newFirst needs; it is stored only over the due value read before (a
// compare-and-swap), so a worker that went through its idle round
// meanwhile (which stores MinInt64, then its own value, never a due one)
// keeps what it stored. A worker being expired remotely right now is left
// for later.
func (e *Engine) refreshFirst(self *Worker, now int64) {
	h := e.set.Hierarchy()
	if h == nil {
		return
	}
	for _, o := range e.order {
		if o == self || o.idleSince.Load() == 0 {
			continue
		}
		first := o.firstGlobal.Load()
		if first == math.MinInt64 || first > now {
			continue
		}
		ci := h.CPU(o.cpu)
		if !ci.Available || !ci.Idle || ci.Remote {
			continue
		}
		next := ci.EvtExpires
		if ci.EvtIgnore {
			next = math.MaxInt64
		}
		if next > now {
			o.firstGlobal.CompareAndSwap(first, next)
		}
	}
}

// hrInterrupt runs hrtimer_interrupt, then the HRTIMER_SOFTIRQ pass if it
// was raised.
func (w *Worker) hrInterrupt(now int64) {
	r, ok := w.hardInterrupt(now)
	if !ok || r.Softirq&tick.HrtimerSoftirq == 0 {
		return
	}
	sp, err := w.tk.HrtimerSoftirq(w.now())
	if err != nil {
		w.e.Fail(fmt.Errorf("hrtimer softirq on worker %d: %w", w.cpu, err))
		return
	}
	w.runPass(sp, true)
}

// hardInterrupt is hrtimer_interrupt's hard pass. It also runs on its own
// when the interrupt arrives while the soft pass runs: in the kernel the
// hardirq preempts the softirq, so a hard timer that comes due meanwhile (a
// real-time task's wake-up) does not wait for the soft callbacks, and the
// soft pass in progress carries on afterwards (the interrupt raises
// nothing then: the softirq is still active). It reports whether it ran.
func (w *Worker) hardInterrupt(now int64) (tick.Ready, bool) {
	p, err := w.tk.HrtimerInterrupt(now)
	if err != nil {
		w.e.Fail(fmt.Errorf("hrtimer interrupt on worker %d: %w", w.cpu, err))
		return tick.Ready{}, false
	}
	return w.runPass(p, false)
}

// runPass runs a pass's callbacks and ends it, as often as the interrupt
// retries; in a soft pass (soft), a hard timer that comes due between two
// callbacks interrupts it (hardInterrupt).
func (w *Worker) runPass(p *hrtimer.Pass, soft bool) (tick.Ready, bool) {
	for {
		for t := p.Next(); t != nil; t = p.Next() {
			t.Data.(Firer).FireHR(w)
			p.Done(t, hrtimer.NoRestart)
			if soft {
				if now := w.now(); now >= w.hb.Device() {
					w.hardInterrupt(now)
				}
			}
		}
		r, retry, err := w.tk.EndPass(p, w.now())
		if err != nil {
			w.e.Fail(fmt.Errorf("hrtimer pass on worker %d: %w", w.cpu, err))
			return r, false
		}
		if r.Hang {
			w.st.hangs.Add(1)
		}
		if !retry {
			w.apply(r)
			return r, true
		}
	}
}

// leaveIdle is the way out of idle at now when there is work
// (tick_nohz_idle_exit: the tick core restarts a stopped tick, and with it
// the timer base and the hierarchy see the CPU active again).
func (w *Worker) leaveIdle(now int64) {
	if !w.tk.InIdle() {
		return
	}
	w.apply(w.tk.IdleExit(now, true))
	if s := w.idleSince.Swap(0); s != 0 {
		w.st.idleNs.Add(now - s)
	}
	w.idling.Store(false)
}

// idle is one round of the idle loop at now (do_idle): with nothing to do,
// the tick core stops the tick if the next event is more than a tick away,
// telling the hierarchy, or re-arms the stopped one for the next event
// (for a CPU already idle that publishes a new first global timer to the
// hierarchy). It returns when the worker must look at its timers next: the
// earliest of its tick and the wheel's event (the hierarchy's, when this
// is the last active CPU); the caller sleeps until then, the hrtimer device
// or a kick.
func (w *Worker) idle(now int64) int64 {
	if !w.tk.InIdle() {
		w.idling.Store(true)
		if w.pins.Load() > 0 {
			// Held active (Exclude): sleep with the tick running.
			w.idling.Store(false)
			return w.tickAt
		}
		w.idleSince.Store(now)
	}
	w.firstGlobal.Store(math.MinInt64)
	r := w.tk.Idle(now)
	w.apply(r)
	if h := w.e.cfg.Idled; h != nil {
		h(w, r, false)
	}
	if r.Stopped {
		w.firstGlobal.Store(w.firstWake(r))
	}
	if h := w.e.cfg.Idled; h != nil {
		h(w, r, true)
	}
	return w.tickAt
}

// firstWake returns what the worker stores as firstGlobal after an idle
// round r that left its tick stopped: the earliest instant at which
// someone looks at its global timers without being told, from what that
// round decided. The worker itself does at r.Tick (its NOHZ wakeup, after
// which it goes through its idle round again and publishes whatever is
// queued then); while it is idle in the hierarchy, the CPU that handles
// its event does at the event the hierarchy holds for it. The hierarchy's
// value is read under its locks and counts only for a CPU idle in it: an
// isolated CPU outside it handles its own global timers.
//
// It must not be recomputed from the bases: a timer queued from elsewhere
// after the round handed the hierarchy its event, and before such a
// recomputation, would be in firstGlobal but neither in the hierarchy nor
// in r.Tick, and its arm, finding it not earlier than firstGlobal, would
// not kick the worker: the timer would wait for the worker's next wake-up,
// an hour later in TestIdleRoundRace (and, rarely, a timer of
// TestTimerModifiedEarlier in timeport_test.go never fired).
func (w *Worker) firstWake(r tick.Ready) int64 {
	first := r.Tick
	if h := w.e.set.Hierarchy(); h != nil {
		if ci := h.CPU(w.cpu); ci.Available && ci.Idle && !ci.EvtIgnore {
			first = min(first, ci.EvtExpires)
		}
	}
	return first
}

// sleep waits until deadline, the hrtimer device, or a kick, in the
// configured idle mode.
func (w *Worker) sleep(deadline, now int64) {
	w.sleepUntil.Store(deadline)
	if dev := w.hb.Device(); dev < deadline {
		deadline = dev
		w.sleepUntil.Store(deadline)
	}
	if w.pending.Load() != 0 || w.moves.listed() || deadline <= now {
		return
	}
	// The wait is the one time the worker lets go of its CPU lock: a
	// rescue may run its overdue timers meanwhile (rescue.go).
	w.armRescue(deadline, now)
	w.cpuMu.Unlock()
	switch w.e.cfg.Idle {
	case Poll:
		w.poll(deadline)
	case HaltPoll:
		if w.e.haltPollNow(now) {
			w.haltPoll(deadline, now)
		} else {
			w.halt(deadline) // the machine is loaded (rescue.go)
		}
	default:
		w.halt(deadline)
	}
	if woke := w.now(); lateBy(deadline, woke) {
		w.e.loaded(woke)
	}
	w.cpuMu.Lock()
	if w.rescueArmed {
		w.rescueT.Stop()
		w.rescueArmed = false
	}
}

// halt sleeps in the kernel until deadline or a kick, and reports whether
// it was kicked.
func (w *Worker) halt(deadline int64) (kicked bool) {
	w.state.Store(stateSleeping)
	if w.pending.Load() != 0 {
		w.state.Store(stateRunning)
		return true
	}
	for {
		r, err := futex.Wait(&w.state, stateSleeping, deadline)
		if err != nil {
			w.state.Store(stateRunning)
			w.e.Fail(fmt.Errorf("futex wait on worker %d: %w", w.cpu, err))
			return false
		}
		if r != futex.Again {
			w.st.wakeups.Add(1)
		}
		if r == futex.TimedOut || w.state.Load() != stateSleeping {
			break
		}
	}
	w.state.Store(stateRunning)
	return w.pending.Load() != 0
}

// poll spins until deadline or a kick, and reports whether it was kicked.
func (w *Worker) poll(deadline int64) (kicked bool) {
	for w.pending.Load() == 0 {
		if w.now() >= deadline {
			return false
		}
	}
	return true
}

// runTask runs a task, the worker active.
func (w *Worker) runTask(f func()) {
	w.inTask = true
	w.sleepUntil.Store(min(w.tickAt, w.hb.Device()))
	w.UserCall(nil, f)
	w.inTask = false
	w.st.tasks.Add(1)
}

// UserCall runs user code on the worker, recovering a panic, which it
// hands to Config.Report with ref (the timer whose function f is, or nil
// for a task).
func (w *Worker) UserCall(ref any, f func()) {
	was := w.inUser.Swap(true)
	defer func() {
		w.inUser.Store(was)
		if r := recover(); r != nil {
			w.st.panics.Add(1)
			w.e.cfg.Report(w.cpu, ref, r, debug.Stack())
		}
	}()
	f()
}

// yield is Engine.Yield (the public Runtime.Yield) on this worker: a
// preemption point in a task.
func (w *Worker) yield() {
	if !w.inTask || w.inYield {
		return
	}
	now := w.now()
	if w.pending.Load() == 0 && now < w.sleepUntil.Load() {
		return
	}
	w.inYield = true
	w.service(now)
	w.sleepUntil.Store(min(w.tickAt, w.hb.Device()))
	w.inYield = false
}

// control handles control requests, between tasks.
func (w *Worker) control() {
	if w.e.fatal.Load() != nil {
		w.halted()
		return
	}
	for {
		select {
		case r := <-w.ctl:
			switch r.op {
			case ctlStop:
				w.stop = true
				r.done <- nil
				return
			case ctlOffline:
				err := w.goOffline(r.to)
				r.done <- err
				if err == nil {
					w.parked()
					if w.stop {
						return
					}
				}
			case ctlOnline:
				r.done <- fmt.Errorf("tmigr: worker %d is already online", w.cpu)
			}
		default:
			return
		}
	}
}

// halted is where a worker of a runtime stopped by a fatal error sleeps
// until Close. Pending kicks are cleared before the channel is looked at, so
// a request sent meanwhile leaves its kick for the next halt to see.
func (w *Worker) halted() {
	for {
		w.pending.Store(0)
		select {
		case r := <-w.ctl:
			if r.op == ctlStop {
				w.stop = true
				r.done <- nil
				return
			}
			r.done <- w.e.Err()
		default:
			w.halt(futex.Forever)
		}
	}
}

// parked is where an offline worker sleeps until Online or Close (kicks
// are cleared first, as in halted).
func (w *Worker) parked() {
	for {
		w.pending.Store(0)
		// A Reset that saw the worker online may list a timer after it
		// went offline; it kicks it then (listHR), and the list goes to
		// where the worker's timers went.
		w.drainMoves()
		if w.e.fatal.Load() != nil {
			w.halted()
			return
		}
		select {
		case r := <-w.ctl:
			switch r.op {
			case ctlStop:
				w.stop = true
				r.done <- nil
				return
			case ctlOnline:
				w.goOnline()
				r.done <- nil
				return
			default:
				r.done <- fmt.Errorf("tmigr: worker %d is offline", w.cpu)
			}
		default:
			w.halt(futex.Forever)
		}
	}
}

// CPU is the worker's CPU, in the timer code.
func (w *Worker) CPU() int { return w.cpu }

// HB is the worker's hrtimer base.
func (w *Worker) HB() *hrtimer.CPUBase { return w.hb }

// Online reports whether the worker is online.
func (w *Worker) Online() bool { return w.online.Load() }

// IdleSince is when the worker went idle, 0 while it is active.
func (w *Worker) IdleSince() int64 { return w.idleSince.Load() }

// FirstGlobal is, while the worker is idle, the expiry of its first
// global timer as it last told the hierarchy; MinInt64 while it is finding
// out. A timer queued on it from elsewhere that comes earlier must kick it
// (KickTimer).
func (w *Worker) FirstGlobal() int64 { return w.firstGlobal.Load() }

// Release drops the hotplug lock that Engine.OnBehalf took.
func (w *Worker) Release() { w.hp.RUnlock() }

// Queue appends tasks and kicks the worker (the worker must be the one
// OnBehalf returned, not released yet).
func (w *Worker) Queue(fs ...func()) { w.queue(fs...) }

// Account counts an expiry of owner's base asked for at when, run on w at
// start.
func (w *Worker) Account(owner int, when, start int64) {
	w.st.late.Record(start - when)
	w.st.timers.Add(1)
	if owner != w.cpu {
		w.st.remote.Add(1)
		w.st.remoteFor[owner].Add(1)
	}
}

// AddRemoteTime counts ns spent running another worker's timer.
func (w *Worker) AddRemoteTime(ns int64) { w.st.remoteNs.Add(ns) }
