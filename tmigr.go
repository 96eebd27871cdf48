package tmigr

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/internal/engine"
	"github.com/tmigr/tmigr/tick"
	"github.com/tmigr/tmigr/wheel"
)

// Policy selects the kernel generation whose timer placement the runtime
// follows. The zero value is PullIsolated.
type Policy = cpu.Policy

const (
	// PullIsolated is the pull hierarchy with isolated workers excluded
	// (Linux 6.19): an isolated worker never runs another worker's timers,
	// and its own global timers stay with it.
	PullIsolated = cpu.PullIsolated
	// Pull is the hierarchy of Linux 6.9 to 6.18: isolated workers take
	// part, so a busy isolated worker expires idle workers' global timers.
	Pull = cpu.Pull
	// Push is the 2009 rule: a global timer armed on an idle worker is
	// queued on a busy one, and every worker expires only its own timers.
	Push = cpu.Push
	// None is timer_migration=0: every worker wakes for its own timers.
	None = cpu.None
)

// ParsePolicy returns the policy named none, push, pull or pull-isolated.
func ParsePolicy(s string) (Policy, error) { return cpu.ParsePolicy(s) }

// IdleMode is what a worker with nothing to do does until its next event.
//
// The zero value, and so the default, is HaltPoll, chosen from `tmigr live
// lateness` and `tmigr live idle` runs (docs/performance.md has the
// figures, the machine and the commands). On a quiet machine HaltPoll
// wakes for a known deadline many times sooner than Halt, which waits for
// the kernel's wake-up latency, and where measured it met the goal of a p99
// lateness of at most a tenth of package time's at SCHED_OTHER. On a
// machine loaded by other programs the noise of that load dominates every
// mode. Poll is worst there: a spinning worker takes its CPU from
// everything else (with SCHED_FIFO it starves even cyclictest), and it
// burns a CPU per worker. A worker with nothing to do uses no CPU in
// HaltPoll, as in Halt; one with events pays up to the poll window (at
// most 200 µs) per wake-up, several times Halt's CPU for a 1 kHz timer.
// Choose Halt where that matters more than the wake-up.
type IdleMode int

const (
	// HaltPoll polls for an adaptive window before halting, as Linux's
	// haltpoll cpuidle governor does for a guest, and places the window
	// before a known deadline (internal/engine/idle.go). For 100 ms after
	// a rescue of an overdue worker (a loaded machine, see
	// internal/engine/rescue.go) it halts without polling. The default.
	HaltPoll IdleMode = iota
	// Halt sleeps in the kernel (a futex wait with an absolute deadline):
	// no CPU time while idle, a wake-up costs the kernel's wake latency.
	Halt
	// Poll spins on the worker's state word and the clock: the fastest
	// wake-up on an idle machine, a whole CPU burnt.
	Poll
)

var idleNames = [...]string{Halt: "halt", Poll: "poll", HaltPoll: "haltpoll"}

func (m IdleMode) String() string {
	if m >= 0 && int(m) < len(idleNames) {
		return idleNames[m]
	}
	return fmt.Sprintf("IdleMode(%d)", int(m))
}

// ParseIdleMode returns the idle mode named halt, poll or haltpoll.
func ParseIdleMode(s string) (IdleMode, error) {
	for m, n := range idleNames {
		if n == s {
			return IdleMode(m), nil
		}
	}
	return 0, fmt.Errorf("tmigr: unknown idle mode %q (want halt, poll or haltpoll)", s)
}

// engineIdle is the engine's idle mode of each of ours.
var engineIdle = [...]engine.IdleMode{HaltPoll: engine.HaltPoll, Halt: engine.Halt, Poll: engine.Poll}

// Config configures a Runtime. The zero value runs one worker on every CPU
// the process may use, at 1000 Hz, under PullIsolated, in the HaltPoll idle mode.
type Config struct {
	// CPUs lists the CPUs to run workers on, in the kernel's cpulist
	// syntax ("0-3,6"). Empty: the CPUs the process may run on
	// (sched_getaffinity). A CPU outside that set is an error.
	CPUs string
	// Isolated lists the workers isolated from the start, as isolcpus=
	// does: they are not housekeeping workers, and under PullIsolated they
	// take no part in timer migration. It must leave at least one
	// housekeeping worker.
	Isolated string
	// HZ is the tick rate of the timer wheels (1 to 10000, default 1000).
	HZ int
	// Policy is the timer placement model (default PullIsolated).
	Policy Policy
	// Idle is what idle workers do (default HaltPoll: see IdleMode).
	Idle IdleMode
	// Priority, if not 0, makes the worker threads SCHED_FIFO at this
	// priority (1-99), as a latency-critical thread would run, so that no
	// SCHED_OTHER thread (the Go runtime's, other processes') delays a
	// wake-up. It needs CAP_SYS_NICE. With Poll, a worker then keeps its
	// CPU to itself but for the kernel's RT throttling (5% by default).
	Priority int
	// Slack is the timer slack of precise timers and sleeps, the kernel's
	// timer_slack_ns (prctl PR_SET_TIMERSLACK): each may expire up to
	// Slack after the time asked for, the range of hrtimer_start_range_ns.
	// An hrtimer interrupt runs every timer whose earliest expiry has come,
	// so timers within Slack of each other cost their worker one wake-up,
	// not one each. Zero, the default, keeps every precise timer exact.
	// Linux gives SCHED_OTHER tasks 50 µs by default and real-time tasks
	// none (hrtimer_nanosleep drops it for them, and PR_SET_TIMERSLACK is a
	// no-op for them): with Priority set, Slack is ignored too. Coarse
	// timers have none of their own (the tick rounds them anyway). It is
	// the runtime's own, for its hrtimers: the workers' threads keep an OS
	// timer slack of 1 ns whatever it is, so that each wakes at the
	// deadline it computed.
	Slack time.Duration
	// OnPanic receives the panics of timer functions and tasks, recovered
	// on the worker that ran them, which then goes on. It runs on that
	// worker and must not block. Nil: the panic and its stack are written
	// to standard error.
	OnPanic func(Panic)
	// SpareProcs, if true, raises GOMAXPROCS by one per worker while the
	// runtime runs, and again when the program lowers it meanwhile (at a
	// worker's late wake-up). It is the one process-wide change the
	// runtime makes, and only on request; without it GOMAXPROCS is never
	// touched.
	//
	// Why a worker wants a P of its own: its futex wait goes through the
	// Go scheduler's system-call path, which hands its P to other
	// goroutines while it sleeps. Waking, it needs a free P; if the
	// program's goroutines hold every P it waits for the scheduler to
	// preempt one (up to 10 ms) while its CPU idles, and its timers are
	// that late. With the zero Config the workers share the program's
	// GOMAXPROCS like any goroutine: Start does not fail for want of Ps,
	// and a timer is then as late as a goroutine of a busy program is
	// (package time's timers are no better off), not later. That is the
	// degraded behaviour, chosen over refusing to start because
	// GOMAXPROCS is the program's budget of parallel Go code: the
	// runtime's automatic setting follows the container's CPU quota, and
	// more runnable threads than the quota get the whole process
	// throttled for the rest of the quota's period, a far worse lateness
	// than a wait for a P. A program whose other goroutines keep every P
	// busy, and which owns its process (a latency tool, a benchmark), asks
	// for the spares.
	//
	// With SpareProcs the spares of runtimes that overlap add up, and
	// when the last of them closes GOMAXPROCS goes back to the program's
	// value: the value found at the first Start, or the one the program
	// set while they ran. If that value was the Go runtime's automatic
	// setting (no GOMAXPROCS environment variable, and the value
	// runtime.SetDefaultGOMAXPROCS gives), Close calls
	// runtime.SetDefaultGOMAXPROCS, so the automatic, cgroup-aware
	// updates that any runtime.GOMAXPROCS(n) call switches off (Go 1.25)
	// resume. Go cannot be asked whether the setting is automatic, so
	// Start finds out by setting the default and comparing: a program
	// that set GOMAXPROCS itself to exactly the default value gets the
	// automatic setting back.
	SpareProcs bool

	// pinTo maps a worker's CPU to the real CPU its thread is pinned to;
	// nil is the identity. Tests use it to run more workers than the
	// machine has CPUs.
	pinTo func(cpu int) int
	// tracer, if set, receives the hierarchy's tracepoints (tests).
	tracer hier.Tracer
	// hooks are the tests' hooks into the runtime's races; they belong to
	// the runtime (copied at Start, read without a lock), so tests of one
	// runtime do not disturb another's.
	hooks testHooks
}

// testHooks are functions tests set to hold the runtime in a race window.
// Each, if set, runs at one point of the runtime's code:
type testHooks struct {
	// listing runs in listHR after it found the worker online and before
	// it lists the timer.
	listing func(t *Timer)
	// queued runs after a wheel timer was queued and before its arm
	// decides whether to kick the worker.
	queued func(t *Timer)
	// expired runs on the worker when the core has handed out an expired
	// timer, before the runtime claims it: tests widen the window in which
	// a Reset or Stop races with the expiry.
	expired func(t *Timer)
	// idled runs on the worker after the tick core's idle round, before
	// (published false) and after (true) it publishes firstGlobal: tests
	// queue a timer from elsewhere in between.
	idled func(w *engine.Worker, r tick.Ready, published bool)
}

// Panic is a panic recovered from a timer function or a task.
type Panic struct {
	CPU   int    // the worker the function ran on
	Timer *Timer // the timer, or nil for a task
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

func (p Panic) String() string {
	what := "task"
	if p.Timer != nil {
		what = "timer function"
	}
	return fmt.Sprintf("tmigr: %s panicked on worker %d: %v", what, p.CPU, p.Value)
}

// Errors the runtime returns.
var (
	// ErrClosed: the runtime was closed.
	ErrClosed = errors.New("tmigr: runtime closed")
	// ErrOnWorker: the call would wait for the worker it is made from.
	ErrOnWorker = errors.New("tmigr: called from a worker, whose progress it would wait for")
	// ErrNotStarted: the Runtime was not made by Start (a zero Runtime).
	ErrNotStarted = errors.New("tmigr: runtime not started (use Start)")
)

// Runtime is a set of workers, one per CPU, each a goroutine locked to an OS
// thread pinned to its CPU, that together run Linux's timer code: per-CPU
// timer wheels, the timer-migration hierarchy and hrtimers.
type Runtime struct {
	// e is the OS-thread engine (internal/engine): the workers, their
	// idle modes, rescue, hotplug and the clock. The Runtime adds the
	// public API: timers, sleeps and tasks, placement, Stats, errors.
	e   engine.Engine
	cfg Config

	procsAt atomic.Int64 // when a late wake-up last looked at the spare Ps (keepProcs)
}

// Start starts one worker per CPU of cfg.CPUs and returns when all run.
func Start(cfg Config) (*Runtime, error) {
	rt, err := build(cfg, nil)
	if err != nil {
		return nil, err
	}

	// Workers block in futex system calls; each may have its P taken away
	// meanwhile, and must find one free when it wakes or wait for the Go
	// scheduler (milliseconds). One spare P per worker keeps that wait
	// away, if the program asked for them (Config.SpareProcs); Close takes
	// them back.
	rt.addProcs()
	if err := rt.e.Run(); err != nil {
		rt.restoreProcs()
		return nil, err
	}
	return rt, nil
}

// build checks cfg and builds the runtime on the clock clk (nil: the real
// one), its engine's workers offline and without threads: Start adds the
// threads and boots the CPUs; tests drive the workers' event handling
// directly.
func build(cfg Config, clk engine.Clock) (*Runtime, error) {
	if cfg.HZ == 0 {
		cfg.HZ = 1000
	}
	if cfg.HZ < 1 || cfg.HZ > 10000 {
		return nil, fmt.Errorf("tmigr: HZ %d outside 1..10000", cfg.HZ)
	}
	if cfg.Priority < 0 || cfg.Priority > 99 {
		return nil, fmt.Errorf("tmigr: Priority %d outside 0..99", cfg.Priority)
	}
	if cfg.Slack < 0 {
		return nil, fmt.Errorf("tmigr: negative Slack %v", cfg.Slack)
	}
	if cfg.Idle < HaltPoll || cfg.Idle > Poll {
		return nil, fmt.Errorf("tmigr: unknown idle mode %d", int(cfg.Idle))
	}
	if _, err := cpu.ParsePolicy(cfg.Policy.String()); err != nil {
		return nil, fmt.Errorf("tmigr: unknown policy %d", int(cfg.Policy))
	}
	var cpus cpumask.Mask
	if cfg.CPUs != "" {
		var err error
		if cpus, err = cpumask.Parse(cfg.CPUs); err != nil {
			return nil, fmt.Errorf("tmigr: Config.CPUs: %w", err)
		}
		if cpus.Empty() {
			return nil, errors.New("tmigr: Config.CPUs is empty")
		}
	}
	iso, err := cpumask.Parse(cfg.Isolated)
	if err != nil {
		return nil, fmt.Errorf("tmigr: Config.Isolated: %w", err)
	}
	rt := &Runtime{cfg: cfg}
	ec := engine.Config{
		CPUs:     cpus,
		Isolated: iso,
		HZ:       cfg.HZ,
		Policy:   cfg.Policy,
		Idle:     engineIdle[cfg.Idle],
		Priority: cfg.Priority,
		Clock:    clk,
		RunWheel: rt.runWheel,
		Report:   rt.report,
		Loaded:   rt.keepProcs,
		PinTo:    cfg.pinTo,
		Tracer:   cfg.tracer,
		Idled:    cfg.hooks.idled,
	}
	if cfg.Priority == 0 {
		ec.Slack = int64(cfg.Slack)
	}
	if err := rt.e.Init(ec); err != nil {
		return nil, err
	}
	return rt, nil
}

// Close stops the runtime. Timer functions and tasks already running are
// waited for; pending timers are cancelled without running (their Stop
// reports true, as for a timer stopped before it fired); queued tasks that
// have not started are dropped; sleepers return ErrClosed. Every worker's
// goroutine returns and its pinned thread exits with it (workers never
// unlock their thread, so no other goroutine ever runs with a worker's
// affinity or timer slack). Close must not be called from a worker
// (ErrOnWorker); calling it again returns nil.
func (rt *Runtime) Close() error {
	if !rt.started() {
		return ErrNotStarted
	}
	closed, err := rt.e.Close()
	if err != nil {
		return apiErr(err)
	}
	if closed {
		rt.restoreProcs()
	}
	return nil
}

// apiErr gives the engine's errors the public API's names.
func apiErr(err error) error {
	switch err {
	case engine.ErrClosed:
		return ErrClosed
	case engine.ErrOnWorker:
		return ErrOnWorker
	}
	return err
}

// addProcs adds the runtime's spare Ps, if it asked for them.
func (rt *Runtime) addProcs() {
	if rt.cfg.SpareProcs {
		procs.adjust(len(rt.e.Workers()))
	}
}

// restoreProcs takes back the runtime's spare Ps, if it added them.
func (rt *Runtime) restoreProcs() {
	if rt.cfg.SpareProcs {
		procs.adjust(-len(rt.e.Workers()))
	}
}

// procs accounts for the spare Ps that the runtimes of the process started
// with Config.SpareProcs add to GOMAXPROCS: while any runs, GOMAXPROCS is
// the program's value (base) plus one spare per worker of every such
// runtime running (added), in whatever order they start and close. (Each
// runtime restoring the value it found broke when two overlapped and
// closed in start order: 2 -> 4 -> 6, then the first close found 6, not
// its 4, and left it.)
//
// A value the program sets while runtimes run (GOMAXPROCS is not what we
// set last) is the new base, and the spares go back on top of it: at the
// next Start or Close, and at a worker's late wake-up (keepProcs). Without
// them a worker waking from its futex finds no free P and waits for the
// Go scheduler to preempt a goroutine (up to 10 ms), and one CPU idles
// meanwhile. The testing package does exactly that: it sets GOMAXPROCS
// before each measured round of a benchmark, after the round of one
// iteration that started the runtime (a Go execution trace of
// BenchmarkAPIParallel without the spares showed its workers runnable,
// waiting for a P, much of the time, and the machine partly idle).
var procs = procsAccount{get: runtime.GOMAXPROCS, setDefault: runtime.SetDefaultGOMAXPROCS, env: os.Getenv}

type procsAccount struct {
	// The Go runtime's calls (a test's fake in the account's own tests):
	// get is runtime.GOMAXPROCS, setDefault runtime.SetDefaultGOMAXPROCS,
	// env os.Getenv.
	get        func(n int) int
	setDefault func()
	env        func(key string) string

	mu    sync.Mutex
	base  int  // GOMAXPROCS without the spares: the program's value
	added int  // the spares of the runtimes running
	set   int  // what we set last: base + added
	auto  bool // base is the Go runtime's automatic setting (see Config.SpareProcs)
}

// adjust adds n spare Ps (n < 0 takes them back; 0 only puts them back on
// top of a value the program set since, see procs). A GOMAXPROCS that is
// not what we set last is the program's: the new base, and not automatic.
// Setting GOMAXPROCS stops the world, so it sets it only if the value
// changes. When the last spares go, GOMAXPROCS goes back to the base, or
// to the automatic setting if the base was that.
func (p *procsAccount) adjust(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.get(0)
	switch {
	case p.added == 0 && n <= 0:
		return // no spares to put back or take
	case p.added == 0:
		p.base, p.auto = cur, p.automatic(cur)
	case cur != p.set:
		p.base, p.auto = cur, false
	}
	p.added += n
	if p.added <= 0 {
		p.added = 0
		if p.auto {
			p.setDefault() // the automatic updates resume
		} else if p.get(0) != p.base {
			p.get(p.base)
		}
		return
	}
	p.set = p.base + p.added
	if p.get(0) != p.set {
		p.get(p.set)
	}
}

// automatic reports whether cur, the GOMAXPROCS found before any spares,
// is the Go runtime's automatic setting. Go has no call that says so: the
// GOMAXPROCS environment variable fixes it, and otherwise cur is taken as
// automatic if it is what runtime.SetDefaultGOMAXPROCS sets now. That call
// leaves GOMAXPROCS automatic (or changes it, for a program that had set
// its own value), until the caller sets the spares on top a moment later.
func (p *procsAccount) automatic(cur int) bool {
	if n, err := strconv.Atoi(p.env("GOMAXPROCS")); err == nil && n > 0 {
		return false
	}
	p.setDefault()
	return p.get(0) == cur
}

// keepProcsEvery is how often at most a late wake-up looks at GOMAXPROCS:
// reading it takes the Go scheduler's lock, and on a loaded machine most
// wake-ups are late.
const keepProcsEvery = int64(10 * time.Millisecond)

// keepProcs puts the spare Ps back if the program's GOMAXPROCS took them
// (see procs), at most every keepProcsEvery; a worker's late wake-up calls
// it (loaded), as a worker that finds no P wakes late.
func (rt *Runtime) keepProcs(now int64) {
	if !rt.cfg.SpareProcs {
		return
	}
	last := rt.procsAt.Load()
	if last != 0 && now-last < keepProcsEvery || !rt.procsAt.CompareAndSwap(last, now) {
		return
	}
	procs.adjust(0)
}

// Err returns the fatal error that stopped the runtime's workers, or nil.
// A stopped runtime's workers are halted, asleep in the kernel, until Close.
func (rt *Runtime) Err() error { return rt.e.Err() }

// CPUs returns the CPUs the runtime runs workers on.
func (rt *Runtime) CPUs() []int {
	ws := rt.e.Workers()
	out := make([]int, len(ws))
	for i, w := range ws {
		out[i] = w.CPU()
	}
	return out
}

// Isolated returns the isolated workers: Config.Isolated plus the last
// Exclude.
func (rt *Runtime) Isolated() []int {
	m := rt.e.Isolated()
	if m == nil {
		return nil // not started
	}
	return m.CPUs()
}

// CPU returns the CPU of the worker the caller runs on (inside a task or a
// timer function), or -1 for any other goroutine.
func (rt *Runtime) CPU() int {
	if w := rt.e.Self(); w != nil {
		return w.CPU()
	}
	return -1
}

// started reports whether Start made the runtime: a zero Runtime has no
// timer code, no clock and no workers, and every method that needs them
// returns ErrNotStarted (or, without an error result, does nothing).
func (rt *Runtime) started() bool { return rt.e.Started() }

// worker returns the worker of cpu, or an error naming it.
func (rt *Runtime) worker(c int) (*engine.Worker, error) {
	if !rt.started() {
		return nil, ErrNotStarted
	}
	w := rt.e.Worker(c)
	if w == nil {
		return nil, fmt.Errorf("tmigr: no worker runs on CPU %d (workers: %s)", c, rt.e.CPUList())
	}
	return w, nil
}

// report hands a recovered panic to OnPanic; ref is the Timer whose
// function panicked, nil for a task.
func (rt *Runtime) report(c int, ref any, v any, stack []byte) {
	p := Panic{CPU: c, Value: v, Stack: stack}
	p.Timer, _ = ref.(*Timer)
	if rt.cfg.OnPanic != nil {
		rt.cfg.OnPanic(p)
		return
	}
	fmt.Fprintf(os.Stderr, "%s\n%s\n", p, strings.TrimSpace(string(p.Stack)))
}

// runWheel runs on worker handler, for every expired wheel timer its timer
// softirq's pass hands out, the owner's base lock dropped
// (engine.Config.RunWheel). Every wheel timer of the engine's Set is a
// Timer's (its Data).
func (rt *Runtime) runWheel(handler *engine.Worker, wt *wheel.Timer) {
	t := wt.Data.(*Timer)
	if h := rt.cfg.hooks.expired; h != nil {
		h(t)
	}
	t.mu.Lock()
	if !t.armed || rt.e.Set().Pending(wt) {
		t.mu.Unlock()
		return
	}
	if now := handler.Now(); now < t.when {
		// Only a timeout beyond the wheel's capacity (12 days at HZ 1000)
		// comes early, clamped by the wheel: queue the rest.
		t.armWheel(now, t.when-now)
		t.mu.Unlock()
		return
	}
	t.fire(handler, wt.CPU()) // a running timer stays on its base
}
