package tmigr

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/futex"
	"github.com/tmigr/tmigr/internal/osthread"
)

// The state word a worker sleeps on (futex).
const (
	stateRunning  uint32 = 0
	stateSleeping uint32 = 1
)

// Kicks: why a worker was woken. They accumulate in worker.pending until
// the worker takes them all at once.
const (
	kickTimer     uint32 = 1 << iota // a timer was queued or moved earlier: re-evaluate the next event
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
	to   *worker // ctlOffline: who takes the timers and tasks
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
type worker struct {
	rt  *Runtime
	cpu int // the CPU this worker is, in the timer code
	pin int // the real CPU its thread is pinned to
	hb  *hrtimer.CPUBase

	tid    atomic.Int64
	inUser atomic.Bool // running a task or a timer function

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
	// wake it (see Timer.armWheel).
	firstGlobal atomic.Int64

	mu    sync.Mutex
	tasks []func()
	ctl   chan *ctlReq

	st workerStats

	// ────────────────────────── owned by the worker's goroutine
	inIdle      bool  // idle: no task, the hierarchy may see it inactive
	tickStopped bool  // NOHZ: the tick is stopped (the timer base is idle)
	nextTick    int64 // the next tick while the tick runs
	wheelAt     int64 // while the tick is stopped: the wheel's next event (cpu.NextEvent/TryToSetIdle)
	inTask      bool
	inYield     bool
	stop        bool
	gov         governor
}

func newWorker(rt *Runtime, c, pin int, hb *hrtimer.CPUBase) *worker {
	w := &worker{rt: rt, cpu: c, pin: pin, hb: hb, ctl: make(chan *ctlReq, 1)}
	w.st.init(len(rt.workers))
	w.tid.Store(-1)
	w.firstGlobal.Store(math.MinInt64)
	return w
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
func (w *worker) main(ready chan<- error, begin <-chan struct{}, abort *atomic.Bool) {
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
	defer w.rt.wg.Done()
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

func (w *worker) setupThread() error {
	if err := osthread.Pin(w.pin); err != nil {
		return err
	}
	if err := osthread.SetTimerSlack(1); err != nil {
		return err
	}
	if p := w.rt.cfg.Priority; p != 0 {
		if err := osthread.SetFIFO(p); err != nil {
			return err
		}
	}
	w.tid.Store(int64(osthread.Gettid()))
	return nil
}

func (w *worker) now() int64 { return w.rt.clk.now() }

// kick wakes the worker for the given reasons.
func (w *worker) kick(bits uint32) {
	w.pending.Or(bits)
	if w.state.CompareAndSwap(stateSleeping, stateRunning) {
		if _, err := futex.Wake(&w.state, 1); err != nil {
			w.rt.fail(fmt.Errorf("futex wake of worker %d: %w", w.cpu, err))
		}
	}
}

// lower moves the time the worker looks at its timers to at, if earlier,
// and kicks it if so: its hrtimer device was programmed earlier.
func (w *worker) lower(at int64) {
	for {
		cur := w.sleepUntil.Load()
		if at >= cur {
			return
		}
		if w.sleepUntil.CompareAndSwap(cur, at) {
			w.kick(kickTimer)
			return
		}
	}
}

// request sends a control request and kicks the worker; the result comes
// on the returned request's done channel.
func (w *worker) request(op ctlOp, to *worker) *ctlReq {
	r := &ctlReq{op: op, to: to, done: make(chan error, 1)}
	w.ctl <- r
	w.kick(kickCtl)
	return r
}

// queue appends tasks and kicks the worker.
func (w *worker) queue(fs ...func()) {
	if len(fs) == 0 {
		return
	}
	w.mu.Lock()
	w.tasks = append(w.tasks, fs...)
	w.mu.Unlock()
	w.kick(kickWork)
}

func (w *worker) popTask() func() {
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

func (w *worker) takeTasks() []func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	fs := w.tasks
	w.tasks = nil
	return fs
}

// loop is the CPU: interrupts (ticks, hrtimers, kicks), tasks, idle.
func (w *worker) loop() {
	w.nextTick = w.rt.grid.at(w.rt.grid.jiffies(w.now()) + 1)
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
		w.idle()
	}
}

// service handles what is due: kicks, the hrtimer interrupt and the tick.
// Inside a task (Yield) control requests wait until the task returns.
func (w *worker) service(now int64) {
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
			w.hb.Retrigger() // the device is read back from the base
		}
		if p&kickActivate != 0 {
			w.leaveIdle(now)
		}
	}
	if now >= w.hb.Device() {
		w.hrInterrupt(now)
	}
	if w.tickStopped && now >= w.wheelAt || !w.tickStopped && now >= w.nextTick {
		w.tick()
	}
}

// tick is the tick on this CPU: the wheel's part of update_process_times
// (run_local_timers), and the timer softirq if it is raised.
func (w *worker) tick() {
	j, basem := w.rt.grid.snapshot(w.now())
	if w.tickStopped {
		w.wheelAt = math.MaxInt64 // the idle path computes the next one
	} else {
		w.nextTick = basem + w.rt.grid.tick
	}
	w.st.ticks.Add(1)
	sn := cpu.Snapshot{J: j, M: basem}
	if w.rt.set.Tick(w.cpu, sn) {
		p := w.rt.set.Softirq(w.cpu, sn)
		for t := p.Next(); t != nil; t = p.Next() {
			w.rt.runWheel(w.cpu, t)
		}
	}
}

// hrInterrupt runs hrtimer_interrupt, then the HRTIMER_SOFTIRQ pass if it
// was raised (on a non-RT kernel the softirq runs on the way out of the
// interrupt).
func (w *worker) hrInterrupt(now int64) {
	if !w.hardInterrupt(now) {
		return
	}
	if w.hb.SoftirqActivated() {
		sp, err := w.hb.Softirq(w.now())
		if err != nil {
			w.rt.fail(fmt.Errorf("hrtimer softirq on worker %d: %w", w.cpu, err))
			return
		}
		w.runPass(sp, true)
	}
}

// hardInterrupt is hrtimer_interrupt's hard pass. It also runs on its own
// when the interrupt arrives while the soft pass runs: in the kernel the
// hardirq preempts the softirq, so a hard timer that comes due meanwhile (a
// real-time task's wake-up) does not wait for the soft callbacks, and the
// soft pass in progress carries on afterwards. It reports whether it ran.
func (w *worker) hardInterrupt(now int64) bool {
	p, err := w.hb.Interrupt(now)
	if err != nil {
		w.rt.fail(fmt.Errorf("hrtimer interrupt on worker %d: %w", w.cpu, err))
		return false
	}
	w.runPass(p, false)
	return true
}

// runPass runs a pass's callbacks; in a soft pass (soft), a hard timer that
// comes due between two callbacks interrupts it (hardInterrupt).
func (w *worker) runPass(p *hrtimer.Pass, soft bool) {
	for {
		for t := p.Next(); t != nil; t = p.Next() {
			t.Data.(hrFirer).fireHR(w)
			p.Done(t, hrtimer.NoRestart)
			if soft {
				if now := w.now(); now >= w.hb.Device() {
					w.hardInterrupt(now)
				}
			}
		}
		out, err := p.End(w.now())
		if err != nil {
			w.rt.fail(fmt.Errorf("hrtimer pass on worker %d: %w", w.cpu, err))
			return
		}
		if out.Hang {
			w.st.hangs.Add(1)
		}
		if !out.Retry {
			return
		}
	}
}

// leaveIdle is the way out of idle when there is work: the tick restarts
// (tick_nohz_idle_exit) and the timer base and the hierarchy see the CPU
// active again (timer_clear_idle).
func (w *worker) leaveIdle(now int64) {
	if !w.inIdle {
		return
	}
	w.rt.set.ClearIdle(w.cpu)
	w.rt.set.SetBusy(w.cpu, true)
	w.inIdle, w.tickStopped = false, false
	w.nextTick = w.rt.grid.at(w.rt.grid.jiffies(now) + 1)
	if s := w.idleSince.Swap(0); s != 0 {
		w.st.idleNs.Add(now - s)
	}
	w.idling.Store(false)
}

// idle is the idle loop's body (do_idle → tick_nohz_idle_stop_tick): with
// nothing to do, stop the tick if the next event is more than a tick away,
// telling the hierarchy (timer_base_try_to_set_idle), and sleep until the
// earliest of the wheel's event, the hierarchy's (when this is the last
// active CPU) and the hrtimer device. Back from sleep, the loop services
// what is due and comes here again, which re-evaluates the next event
// (get_next_timer_interrupt; for a CPU already idle that publishes a new
// first global timer to the hierarchy).
func (w *worker) idle() {
	now := w.now()
	if !w.inIdle {
		w.idling.Store(true)
		if w.pins.Load() > 0 {
			// Held active (Exclude): sleep with the tick running.
			w.idling.Store(false)
			w.sleep(w.nextTick, now)
			return
		}
		w.inIdle = true
		w.idleSince.Store(now)
		w.rt.set.SetBusy(w.cpu, false)
	}
	j, basem := w.rt.grid.snapshot(now)
	sn := cpu.Snapshot{J: j, M: basem}
	w.firstGlobal.Store(math.MinInt64)
	if !w.tickStopped {
		next := w.rt.set.NextEvent(w.cpu, sn)
		wake, stopped := w.rt.set.TryToSetIdle(w.cpu, sn)
		if stopped {
			w.tickStopped = true
			w.wheelAt = min(next, wake)
		}
	} else {
		w.wheelAt = w.rt.set.NextEvent(w.cpu, sn)
	}
	if w.tickStopped {
		w.firstGlobal.Store(w.nextGlobal(j, basem))
		w.sleep(w.wheelAt, now)
	} else {
		w.sleep(w.nextTick, now)
	}
}

// nextGlobal returns the expiry of the worker's first global timer, as the
// hierarchy knows it (fetch_next_timer_interrupt_remote's global result).
func (w *worker) nextGlobal(j uint64, basem int64) int64 {
	s := w.rt.set
	s.LockBases(w.cpu)
	defer s.UnlockBases(w.cpu)
	return s.NextGlobalRemote(w.cpu, j, basem)
}

// sleep waits until deadline, the hrtimer device, or a kick, in the
// configured idle mode.
func (w *worker) sleep(deadline, now int64) {
	w.sleepUntil.Store(deadline)
	if dev := w.hb.Device(); dev < deadline {
		deadline = dev
		w.sleepUntil.Store(deadline)
	}
	if w.pending.Load() != 0 || deadline <= now {
		return
	}
	switch w.rt.cfg.Idle {
	case Poll:
		w.poll(deadline)
	case HaltPoll:
		w.haltPoll(deadline, now)
	default:
		w.halt(deadline)
	}
}

// halt sleeps in the kernel until deadline or a kick, and reports whether
// it was kicked.
func (w *worker) halt(deadline int64) (kicked bool) {
	w.state.Store(stateSleeping)
	if w.pending.Load() != 0 {
		w.state.Store(stateRunning)
		return true
	}
	for {
		r, err := futex.Wait(&w.state, stateSleeping, deadline)
		if err != nil {
			w.state.Store(stateRunning)
			w.rt.fail(fmt.Errorf("futex wait on worker %d: %w", w.cpu, err))
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
func (w *worker) poll(deadline int64) (kicked bool) {
	for w.pending.Load() == 0 {
		if w.now() >= deadline {
			return false
		}
	}
	return true
}

// runTask runs a task, the worker active.
func (w *worker) runTask(f func()) {
	w.inTask = true
	w.sleepUntil.Store(min(w.nextTick, w.hb.Device()))
	w.userCall(nil, f)
	w.inTask = false
	w.st.tasks.Add(1)
}

// userCall runs user code on the worker, recovering a panic.
func (w *worker) userCall(t *Timer, f func()) {
	was := w.inUser.Swap(true)
	defer func() {
		w.inUser.Store(was)
		if r := recover(); r != nil {
			w.st.panics.Add(1)
			w.rt.report(Panic{CPU: w.cpu, Timer: t, Value: r, Stack: stack()})
		}
	}()
	f()
}

// yield is Runtime.Yield on this worker: a preemption point in a task.
func (w *worker) yield() {
	if !w.inTask || w.inYield {
		return
	}
	now := w.now()
	if w.pending.Load() == 0 && now < w.sleepUntil.Load() {
		return
	}
	w.inYield = true
	w.service(now)
	w.sleepUntil.Store(min(w.nextTick, w.hb.Device()))
	w.inYield = false
}

// control handles control requests, between tasks.
func (w *worker) control() {
	if w.rt.fatal.Load() != nil {
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
func (w *worker) halted() {
	for {
		w.pending.Store(0)
		select {
		case r := <-w.ctl:
			if r.op == ctlStop {
				w.stop = true
				r.done <- nil
				return
			}
			r.done <- w.rt.Err()
		default:
			w.halt(futex.Forever)
		}
	}
}

// parked is where an offline worker sleeps until Online or Close (kicks
// are cleared first, as in halted).
func (w *worker) parked() {
	for {
		w.pending.Store(0)
		if w.rt.fatal.Load() != nil {
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
