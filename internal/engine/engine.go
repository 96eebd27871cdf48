// Package engine is the runtime's OS-thread engine: one worker per CPU, a
// goroutine locked to an OS thread pinned to that CPU, that runs the core's
// timer code (package tick's events, the wheels, the hierarchy and the
// hrtimers) and sleeps in futex waits with absolute deadlines. It holds the
// workers' loop and kicks (worker.go), their idle modes (idle.go), the
// rescue of a worker whose thread does not get its CPU (rescue.go), the
// list of high-resolution timers a Reset moved (moves.go), CPU hotplug
// and run-time isolation (hotplug.go), the clock (clock.go) and the
// workers' statistics (stats.go).
//
// The public API (package tmigr at the module's root) drives it: its
// Timer's arm, claim and expiry rules, placement, Sleep and the
// configuration's checks are there; the engine calls back into it for an
// expired wheel timer (Config.RunWheel), an expired high-resolution timer
// (the Firer its Data holds), a listed one (Movable), a recovered panic
// (Config.Report) and a late wake-up (Config.Loaded).
package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/osthread"
	"github.com/tmigr/tmigr/tick"
	"github.com/tmigr/tmigr/wheel"
)

// IdleMode is what a worker with nothing to do does until its next event
// (the public API's IdleMode, same values).
type IdleMode int

const (
	// HaltPoll polls for an adaptive window before halting (see governor).
	HaltPoll IdleMode = iota
	// Halt sleeps in the kernel, a futex wait with an absolute deadline.
	Halt
	// Poll spins on the worker's state word and the clock.
	Poll
)

// Config is what the engine is built from. The public API has checked
// the ranges of its values (HZ, Priority, Idle, Policy).
type Config struct {
	// CPUs are the workers' CPUs; empty: the CPUs the process may run on.
	CPUs cpumask.Mask
	// Isolated are the workers isolated from the start.
	Isolated cpumask.Mask
	HZ       int
	Policy   cpu.Policy
	Idle     IdleMode
	// Priority, if not 0, is the workers' SCHED_FIFO priority.
	Priority int
	// Slack is the slack of the high-resolution timers armed through
	// the engine, ns.
	Slack int64
	// Clock is the time base; nil: the real clock (NewClock). Tests that
	// drive the workers' event handling without threads give a fake one.
	Clock Clock

	// RunWheel runs on worker w for every expired wheel timer its timer
	// softirq's pass hands out, the owner's base lock dropped.
	RunWheel func(w *Worker, t *wheel.Timer)
	// Report receives a panic recovered by Worker.UserCall, with the ref
	// it was given.
	Report func(cpu int, ref any, value any, stack []byte)
	// Loaded, if set, runs when a worker wakes late or is rescued (the
	// machine is loaded).
	Loaded func(now int64)

	// PinTo maps a worker's CPU to the real CPU its thread is pinned to;
	// nil is the identity. Tests use it to run more workers than the
	// machine has CPUs.
	PinTo func(cpu int) int
	// Tracer, if set, receives the hierarchy's tracepoints (tests).
	Tracer hier.Tracer
	// Idled, if set, runs on the worker after the tick core's idle round,
	// before (published false) and after (true) it publishes firstGlobal:
	// tests queue a timer from elsewhere in between.
	Idled func(w *Worker, r tick.Ready, published bool)
}

// Errors of the engine's operations; the public API gives them its own
// names.
var (
	ErrClosed   = errors.New("engine: closed")
	ErrOnWorker = errors.New("engine: called from a worker, whose progress it would wait for")
)

// Engine is a set of workers, one per CPU. The zero Engine is not started:
// Started reports false, and the public API refuses to use it.
type Engine struct {
	cfg     Config
	set     *cpu.Set
	clk     Clock
	mono    *MonoClock // clk, when it is the real clock (see NowFrom)
	grid    tick.Grid
	workers []*Worker    // by CPU number; nil where no worker runs
	order   []*Worker    // the workers, in CPU order
	bootIso cpumask.Mask // Config.Isolated

	isolated atomic.Pointer[cpumask.Mask] // boot ∪ the last Exclude

	ctlMu  sync.Mutex // serialises Offline, Online, Exclude and Close
	closed atomic.Bool
	done   chan struct{} // closed by Close once every worker has stopped
	wg     sync.WaitGroup

	fatal atomic.Pointer[error]
	// loadedUntil: until when workers arm rescue timers; rescuedUntil:
	// until when HaltPoll workers halt without polling (rescue.go).
	loadedUntil, rescuedUntil atomic.Int64

	start int64
}

// Init checks cfg against the machine and builds the engine's timer code
// and workers in e, offline and without threads: Run adds the threads and
// boots the CPUs; tests drive the workers' event handling directly, after
// Boot.
func (e *Engine) Init(cfg Config) error {
	allowed, err := osthread.Allowed()
	if err != nil {
		return fmt.Errorf("tmigr: the runtime needs Linux CPU affinity: %w", err)
	}
	cpus := cfg.CPUs
	if cpus.Empty() {
		cpus = allowed
	}
	if cpus.Empty() {
		return errors.New("tmigr: Config.CPUs is empty")
	}
	pinTo := cfg.PinTo
	if pinTo == nil {
		pinTo = func(c int) int { return c }
	}
	for c := cpus.First(); c >= 0; c = cpus.Next(c) {
		if p := pinTo(c); p < 0 || p >= cpumask.MaxCPUs || !allowed.Test(p) {
			return fmt.Errorf("tmigr: CPU %d is not one this process may run on (%s)", p, allowed)
		}
	}
	iso := cfg.Isolated
	if extra := iso.AndNot(cpus); !extra.Empty() {
		return fmt.Errorf("tmigr: Config.Isolated names CPUs %s that run no worker (workers: %s)", extra, cpus)
	}
	hk := cpus.AndNot(iso)
	if hk.Empty() {
		return fmt.Errorf("tmigr: Config.Isolated (%s) leaves no housekeeping worker", iso)
	}

	n := cpus.Last() + 1
	nodeOf := make([]int, n)
	for c := cpus.First(); c >= 0; c = cpus.Next(c) {
		nodeOf[c] = osthread.NodeOf(pinTo(c))
	}
	set, err := cpu.New(cpu.Config{
		NodeOf:    nodeOf,
		HZ:        cfg.HZ,
		Policy:    cfg.Policy,
		Isolation: hier.Isolation{Domain: iso, Timekeeper: hk.First()},
		Tracer:    cfg.Tracer,
	})
	if err != nil {
		return fmt.Errorf("tmigr: %w", err)
	}

	clk := cfg.Clock
	if clk == nil {
		clk = NewClock()
	}
	e.cfg = cfg
	e.clk = clk
	e.workers = make([]*Worker, n)
	e.order = nil
	e.bootIso = iso
	e.done = make(chan struct{})
	e.mono, _ = clk.(*MonoClock)
	e.isolated.Store(&iso)
	e.start = clk.Now()
	e.grid = tick.NewGrid(e.start, cfg.HZ)
	for c := cpus.First(); c >= 0; c = cpus.Next(c) {
		hb, err := hrtimer.NewCPUBase(c, hrtimer.Config{})
		if err != nil {
			return fmt.Errorf("tmigr: %w", err)
		}
		w, err := newWorker(e, set, c, pinTo(c), hb)
		if err != nil {
			return fmt.Errorf("tmigr: %w", err)
		}
		e.workers[c] = w
		e.order = append(e.order, w)
	}
	e.set = set // last: Started reports true only for a whole engine
	return nil
}

// Run starts the workers' threads, then brings their CPUs online, and
// returns when all run. If a thread cannot be set up, every one started
// stops and Run returns the errors.
func (e *Engine) Run() error {
	for _, w := range e.order {
		w.rescueT = time.AfterFunc(time.Duration(rescueHorizon), w.rescue)
		w.rescueT.Stop()
	}
	ready := make(chan error, len(e.order))
	begin := make(chan struct{})
	var abort atomic.Bool
	for _, w := range e.order {
		e.wg.Add(1)
		go w.main(ready, begin, &abort)
	}
	var errs []error
	for range e.order {
		if err := <-ready; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := e.Boot(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		abort.Store(true)
		close(begin)
		e.wg.Wait()
		return errors.Join(errs...)
	}
	close(begin)
	return nil
}

// Boot brings every worker's CPU online, active, as the kernel does (every
// CPU online and active, then the hierarchy's late isolation initcall). A
// worker's goroutine, if it has one, has not begun: it reads its state only
// after Run lets it.
func (e *Engine) Boot() error {
	now := e.clk.Now()
	for _, w := range e.order {
		r, err := w.tk.Online(now)
		if err != nil {
			return fmt.Errorf("tmigr: CPU %d: %w", w.cpu, err)
		}
		w.apply(r)
		w.online.Store(true)
	}
	e.set.InitIsolation() // every worker is active: nobody to force
	return nil
}

// Close stops every worker and waits for their goroutines to return (their
// pinned threads exit with them). Not from a worker (ErrOnWorker). It
// reports whether this call closed the engine (false: it was already).
func (e *Engine) Close() (bool, error) {
	if e.Self() != nil {
		return false, ErrOnWorker
	}
	e.ctlMu.Lock()
	defer e.ctlMu.Unlock()
	if e.closed.Swap(true) {
		return false, nil
	}
	var reqs []*ctlReq
	for _, w := range e.order {
		reqs = append(reqs, w.request(ctlStop, nil))
	}
	for _, r := range reqs {
		<-r.done
	}
	e.wg.Wait()
	for _, w := range e.order {
		w.rescueT.Stop() // a rescue that still fires finds the engine closed
	}
	close(e.done)
	return true, nil
}

// Done is closed once Close has stopped every worker.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Err returns the fatal error that stopped the workers, or nil.
func (e *Engine) Err() error {
	if p := e.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

// Fail records a fatal error and halts every worker. Only the first error
// is kept.
func (e *Engine) Fail(err error) {
	err = fmt.Errorf("tmigr: fatal: %w", err)
	if e.fatal.CompareAndSwap(nil, &err) {
		for _, w := range e.order {
			w.Kick(kickCtl)
		}
	}
}

// Started reports whether Init built the engine.
func (e *Engine) Started() bool { return e.set != nil }

// Closed reports whether Close was called.
func (e *Engine) Closed() bool { return e.closed.Load() }

// Arming reports whether timers may be armed: started and not closed.
func (e *Engine) Arming() bool { return e.Started() && !e.closed.Load() }

// Set is the engine's timer code.
func (e *Engine) Set() *cpu.Set { return e.set }

// Grid is the tick grid of the engine's clock.
func (e *Engine) Grid() *tick.Grid { return &e.grid }

// Now reads the engine's clock.
func (e *Engine) Now() int64 { return e.clk.Now() }

// Slack is the slack of the high-resolution timers, ns.
func (e *Engine) Slack() int64 { return e.cfg.Slack }

// Workers returns the workers, in CPU order.
func (e *Engine) Workers() []*Worker { return e.order }

// Worker returns the worker of CPU c, nil if none runs there.
func (e *Engine) Worker(c int) *Worker {
	if c < 0 || c >= len(e.workers) {
		return nil
	}
	return e.workers[c]
}

// Isolated returns the isolated workers' CPUs: Config.Isolated plus the
// last Exclude (nil before Init).
func (e *Engine) Isolated() *cpumask.Mask { return e.isolated.Load() }

// CPUList is the workers' CPUs in the cpulist syntax.
func (e *Engine) CPUList() string {
	var m cpumask.Mask
	for _, w := range e.order {
		m.Set(w.cpu)
	}
	return m.String()
}

// Self returns the worker the calling goroutine runs on, or nil. A worker
// runs only its own goroutine (it is locked to its thread), so the thread
// id decides. The system call is skipped while no worker is inside user
// code, which is when no other goroutine can be on one.
func (e *Engine) Self() *Worker {
	any := false
	for _, w := range e.order {
		if w.inUser.Load() {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	tid := int64(osthread.Gettid())
	for _, w := range e.order {
		if w.tid.Load() == tid || w.rescuer.Load() == tid {
			return w
		}
	}
	return nil
}

// Housekeeping returns the first online worker that is not isolated, else
// the first online worker, except the one given: where timers armed from
// outside the workers go, and where an offline worker's timers and tasks
// move.
func (e *Engine) Housekeeping(except *Worker) *Worker {
	iso := e.isolated.Load()
	var any *Worker
	for _, w := range e.order {
		if w == except || !w.online.Load() {
			continue
		}
		if !iso.Test(w.cpu) {
			return w
		}
		if any == nil {
			any = w
		}
	}
	return any
}

// OnBehalf returns the worker an operation "on CPU c" runs on behalf of,
// with its hotplug lock held shared so it cannot go offline meanwhile: c's
// worker if online, else the housekeeping worker that took its timers. The
// caller must call Release.
func (e *Engine) OnBehalf(c int) *Worker {
	w := e.workers[c]
	for {
		w.hp.RLock()
		if w.online.Load() {
			return w
		}
		w.hp.RUnlock()
		if w = e.Housekeeping(nil); w == nil {
			w = e.order[0]
		}
	}
}

// Apply carries out an hrtimer Effect of an operation on behalf of w.
func (e *Engine) Apply(w *Worker, eff hrtimer.Effect) {
	if eff.Program {
		w.Lower(eff.At)
	}
	if eff.IPI != nil {
		e.workers[eff.IPI.CPU()].Kick(kickRetrigger)
	}
}

// Yield is a preemption point for a task (the public Yield): if the worker
// running the caller has a tick, an hrtimer or a kick due, it is handled
// now. Elsewhere it does nothing. When nothing is due on any worker it
// costs a clock read and a few atomic loads; otherwise it finds the
// caller's worker by its thread id (a system call).
func (e *Engine) Yield() {
	now := e.clk.Now()
	for _, w := range e.order {
		if w.inUser.Load() && (w.pending.Load() != 0 || now >= w.sleepUntil.Load()) {
			if w := e.Self(); w != nil {
				w.yield()
			}
			return
		}
	}
}
