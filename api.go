package tmigr

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/internal/engine"
)

// The API of package time, on the runtime's workers: AfterFunc, NewTimer,
// NewTicker and Sleep, each in two flavours chosen by an Option. Precise,
// the default, is a high-resolution timer (the kernel's hrtimer): it
// expires at the nanosecond asked for, waking its worker whatever the
// wheels hold. Coarse is a timer-wheel timer (the kernel's timer_list): it
// is rounded up to the tick and, while its worker is idle, may be expired
// by the hierarchy's migrator, which is what timer migration is about.
//
// None of them needs a CPU: a timer made on a worker (in a task or a timer
// function) goes on that worker, as the kernel arms on the CPU it runs on;
// one made from any other goroutine is placed by place. The low-level
// calls AfterFuncOn, HRAfterFunc and SleepOn name the CPU.
//
// The constructors that return no error (AfterFunc, NewTimer, NewTicker)
// panic at the call site on a programming error, as time.NewTicker does for
// a non-positive interval: a nil function, a non-positive interval, an
// unknown HRMode or TimerOption. (time.AfterFunc accepts a nil function and
// panics when it fires, on a goroutine of its own; here that would be on a
// worker, long after the mistake.) The calls that return an error refuse
// the same mistakes with one. On a Runtime not made by Start, the
// constructors return timers that are never armed and Sleep returns
// ErrClosed.

// Option chooses the flavour of a timer made by AfterFunc, NewTimer,
// NewTicker or Sleep. The last one given wins; none is Precise(Hard).
type Option struct {
	coarse bool
	mode   HRMode
	flags  uint32
	err    error
}

// Precise makes a high-resolution timer run in mode: Hard (the default,
// as an hrtimer set up without HRTIMER_MODE_SOFT and as nanosleep are on a
// non-RT kernel) runs in the interrupt pass, Soft in the HRTIMER_SOFTIRQ
// pass after the hard timers due at the same interrupt.
func Precise(mode HRMode) Option {
	return Option{mode: mode, err: checkMode(mode)}
}

// Coarse makes a timer-wheel timer, rounded up to whole ticks plus one
// (and beyond 63 ticks to its level's granularity, up to 1/8 later), as the
// kernel's timer_list is. Without options it is a global timer, which the
// migrator may expire while its worker is idle; Pinned and Deferrable
// (TimerOption) make it pinned or deferrable.
func Coarse(opts ...TimerOption) Option {
	flags, err := wheelFlags(opts)
	return Option{coarse: true, flags: flags, err: err}
}

func options(opts []Option) Option {
	o := Option{mode: Hard}
	for _, x := range opts {
		o = x
	}
	return o
}

// placeSeq numbers the timers and sleepers made off the workers, for place.
var placeSeq atomic.Uint32

// placeGroup is how many housekeeping workers share one placement worker
// for precise timers and sleepers (see place): the timer-migration
// hierarchy's group size. Coarse timers are spread over every housekeeping
// worker (a group of one), since every re-arm of one takes its base lock.
const placeGroup = 8

// placeCoarse is the group size for coarse timers (see place).
const placeCoarse = 1

// place returns the CPU a timer or sleeper armed from a goroutine that is
// not on a worker goes on: of the online housekeeping workers, taken in
// groups of size in CPU order, the last of the hint-th group, counting
// round from the first. Precise timers and sleepers use groups of
// placeGroup; coarse timers groups of one, every housekeeping worker in
// turn.
//
// The kernel arms a timer on the CPU that arms it. A goroutine has no CPU:
// the Go scheduler moves it between threads, and its P is neither stable
// nor visible. What placement must give is what per-CPU arming buys, that
// callers do not all take one lock, without what a user-space timer costs
// that a kernel one does not: every precise expiry wakes its worker's
// thread, and a wake-up on a CPU where a caller runs preempts the caller
// (a context switch; tens of µs on a VM). Spread over every worker, the
// wake-ups land on every CPU, and each caller is interrupted wherever it
// runs; on two vCPUs that took a re-arm from 160-200 ns to 290-460 (README,
// Performance). So the timers made off the workers go to one worker in
// each group of eight, as the timer-migration hierarchy gives each group
// one migrator to run the timers of the others while they do other work:
// the wake-ups stay on few CPUs, and the scheduler keeps the callers on the
// rest. The last of the group, since the first CPU of a machine is the one
// the kernel's own housekeeping (the jiffies update, unbound interrupts)
// favours. The base lock is not what callers share: a Reset of a precise
// timer takes only the timer's own lock (see Timer.Reset; internal/engine/moves.go).
// A coarse timer's Reset always takes its base lock (the wheel links it
// where it is due), and its expiries wait for a tick anyway, so coarse
// timers are spread over every worker: grouped, two goroutines re-arming
// them took nearly twice as long an op (BenchmarkAPIParallel/tmigr-coarse,
// docs/performance.md).
//
// Each Timer made off the workers takes the next number of a package-wide
// counter at creation (one atomic add, at creation only), and stays on the
// worker it names; each pooled sleeper takes one when it is made, and
// sync.Pool hands a goroutine the sleepers of its own P first. Isolated
// workers get none, as unbound kernel timers never land on isolated CPUs.
// Re-arming on the caller's P instead would move the timer between bases:
// two base locks and a cache-line transfer per Reset.
func (rt *Runtime) place(hint uint32, size int) int {
	iso := rt.e.Isolated()
	eligible := func(w *engine.Worker) bool { return w.Online() && !iso.Test(w.CPU()) }
	workers := rt.e.Workers()
	n := 0
	for _, w := range workers {
		if eligible(w) {
			n++
		}
	}
	if n > 0 {
		groups := (n + size - 1) / size
		g := int(hint % uint32(groups))
		k := min((g+1)*size, n) - 1 // the group's last, among the eligible
		for _, w := range workers {
			if eligible(w) {
				if k == 0 {
					return w.CPU()
				}
				k--
			}
		}
	}
	if w := rt.e.Housekeeping(nil); w != nil {
		return w.CPU()
	}
	return workers[0].CPU()
}

// newTimer makes an unarmed timer of the flavour o asks for, on the
// caller's worker or placed (see place). It panics on an invalid option.
func (rt *Runtime) newTimer(call string, o Option) *Timer {
	if o.err != nil {
		panic(fmt.Sprintf("%s: %v", call, o.err))
	}
	if !rt.started() {
		return &Timer{} // a Runtime not made by Start: a zero Timer, never armed
	}
	var c int
	if self := rt.e.Self(); self != nil && self.Online() {
		c = self.CPU()
	} else {
		size := placeGroup
		if o.coarse {
			size = placeCoarse
		}
		c = rt.place(placeSeq.Add(1), size)
	}
	if o.coarse {
		return rt.newWheelTimer(c, o.flags)
	}
	t, err := rt.newHRTimer(rt.e.Worker(c), o.mode)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", call, err)) // a fresh timer is never active
	}
	return t
}

// AfterFunc arranges for f to run on a worker after at least d (a negative
// d counts as 0) and returns the Timer, whose Stop and Reset change that,
// as time.AfterFunc does. By default it is a high-resolution timer; opts
// may ask for Precise(Soft) or a Coarse timer. A timer made on a worker (in
// a task or a timer function) runs on that worker; one made elsewhere is
// placed over the housekeeping workers (see place). f runs on the worker's
// thread and must not block. A nil f panics here, not on the worker. After
// Close the timer is returned unarmed.
//
// A coarse timer too stays on the worker it was placed on (a timer_list
// armed with mod_timer on that CPU each time: Reset does not ask which
// goroutine calls, which would cost a thread-id system call whenever a
// worker runs user code); while that worker is idle, the hierarchy's
// migrator may run f instead (the kernel's remote expiry). AfterFuncOn
// names the worker.
func (rt *Runtime) AfterFunc(d time.Duration, f func(), opts ...Option) *Timer {
	if f == nil {
		panic("tmigr: AfterFunc with a nil function")
	}
	t := rt.newTimer("tmigr: AfterFunc", options(opts))
	t.f = f
	t.start(d)
	return t
}

// NewTimer returns a Timer that sends the current time on its channel C
// after at least d, as time.NewTimer does, with the flavours and placement
// of AfterFunc. C has room for one value; Stop and Reset empty it (the
// rule of Go 1.23 and later), so after they return no value of an earlier
// arm is received. A Timer that is no longer needed must be stopped: an
// armed one is referenced by its worker until it fires.
func (rt *Runtime) NewTimer(d time.Duration, opts ...Option) *Timer {
	t := rt.newTimer("tmigr: NewTimer", options(opts))
	t.withChan()
	t.start(d)
	return t
}

// Ticker sends the time on C every period, as time.Ticker does.
//
// Each expiry is forwarded from the one before, as the kernel's periodic
// hrtimers are with hrtimer_forward: the n-th tick is due at start + n·d
// however late each expiry ran, so the period does not drift; ticks missed
// meanwhile (a slow receiver, a late worker) are dropped, not queued.
type Ticker struct {
	C <-chan time.Time
	t *Timer
}

// NewTicker returns a Ticker whose first tick is due d from now, with the
// flavours and placement of AfterFunc. It panics if d ≤ 0, as
// time.NewTicker does. A Ticker must be stopped when no longer needed:
// until then its worker references it.
func (rt *Runtime) NewTicker(d time.Duration, opts ...Option) *Ticker {
	if d <= 0 {
		panic("tmigr: non-positive interval for NewTicker")
	}
	t := rt.newTimer("tmigr: NewTicker", options(opts))
	t.withChan()
	t.x.period = int64(d)
	t.start(d)
	return &Ticker{C: t.C, t: t}
}

// Stop turns the ticker off: no tick is sent after it returns, and one
// sent and not received is taken back. It does not close C.
func (tk *Ticker) Stop() {
	if tk.t != nil {
		tk.t.Stop()
	}
}

// Reset stops the ticker and restarts it with period d, its next tick due
// d from now. It panics if d ≤ 0, as time.Ticker.Reset does; on a Ticker
// not made by NewTicker it does nothing.
func (tk *Ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("tmigr: non-positive interval for Ticker.Reset")
	}
	t := tk.t
	if t == nil {
		return
	}
	t.mu.Lock()
	t.x.period = int64(d)
	t.mu.Unlock()
	t.Reset(d)
}
