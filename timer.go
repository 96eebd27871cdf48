package tmigr

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/engine"
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

// Timer is a timer of the runtime: a high-resolution timer (AfterFunc and
// NewTimer by default, HRAfterFunc) or a wheel timer (with Coarse,
// AfterFuncOn). Its Stop and Reset have the results of time.Timer's (for a
// timer with a channel, those of Go 1.23 and later), and may be called from
// any goroutine, also from the timer's own function and while it runs.
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
	// The Timer is 128 bytes, a size class whose objects are 128-aligned,
	// so these first 64 bytes are one cache line: everything a Reset
	// touches, also one that lists the timer for its worker (moveNext), and
	// what the worker's look at a listed timer reads before it queues it.
	// Re-arming one of many timers, each a cache miss, then misses one
	// line; the core's timer, the second line, is touched only when the
	// timer is queued or runs. (At 136 bytes, a 144-byte allocation at any
	// 16-byte offset in a line, a Reset read one or two lines, and the
	// worker's look at a listed timer missed twice, on moveNext and on the
	// lock: docs/performance.md.)
	// TestTimerLayout keeps it so.
	mu      sync.Mutex
	running atomic.Int32 // the function runs (per run in progress)
	cpu     int16        // the CPU it is armed on behalf of; -1: the arming goroutine's
	armed   bool
	isHR    bool // a high-resolution timer
	rt      *Runtime
	when    int64       // the expiry asked for, clock ns
	coreAt  int64       // a high-resolution timer's expiry in the core, while armed (<= when); notInCore: listed, not queued yet
	x       *timerExtra // nil for a high-resolution function timer

	// moveNext links the timer's hrtimer on its worker's list of moves
	// (internal/engine/moves.go); nil: not listed.
	moveNext atomic.Pointer[hrtimer.Timer]

	f func()

	ht hrtimer.Timer

	// C delivers the time of each expiry of a timer made by NewTimer (nil
	// for a function timer), as time.Timer's C does: a send that finds
	// the channel full is dropped, and Stop and Reset empty it, so no
	// value of an arm they stopped is received after they return.
	C <-chan time.Time
}

// timerExtra is the part of a Timer that a high-resolution function timer,
// the common one, does without: a Timer is then two cache lines (see
// Timer), and a re-arm of one of many timers misses one line and fewer
// pages.
type timerExtra struct {
	wt     wheel.Timer    // a wheel timer's; its Data is the Timer
	c      chan time.Time // C, writable; nil for a function timer
	period int64          // a Ticker's interval, 0 for a one-shot timer
	hint   uint32         // which worker a coarse timer armed off the workers goes to (see place)
}

// timerWithExtra is a wheel timer's memory: the Timer and its extra in one
// allocation. Every Reset of a wheel timer reads both (the wheel timer is
// in the extra), so with many timers the extra, allocated on its own, was
// a second cache miss, dependent on the first; beside the Timer it is on
// the same page and mostly the next line.
type timerWithExtra struct {
	t Timer
	x timerExtra
}

// chanOf returns the channel of a timer with one, else nil.
func (t *Timer) chanOf() chan time.Time {
	if t.x == nil {
		return nil
	}
	return t.x.c
}

// withChan gives t a channel C of capacity 1 (NewTimer, NewTicker).
func (t *Timer) withChan() {
	if t.x == nil {
		t.x = new(timerExtra)
	}
	t.x.c = make(chan time.Time, 1)
	t.C = t.x.c
}

// AfterFuncOn is a coarse AfterFunc on behalf of worker cpu, as if armed
// by code running there: a global timer on its wheel, a pinned one with
// Pinned, a deferrable one with Deferrable. If the worker is offline, the
// timer goes where its timers went (the first housekeeping worker). A nil
// f is refused (package time would accept it and panic when it fires); after
// Close it returns ErrClosed.
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
	if f == nil {
		return nil, errNilFunc
	}
	flags, err := wheelFlags(opts)
	if err != nil {
		return nil, err
	}
	if rt.e.Closed() {
		return nil, ErrClosed
	}
	t := rt.newWheelTimer(c, flags)
	t.f = f
	t.start(d)
	return t, nil
}

// errNilFunc refuses a nil timer function or task.
var errNilFunc = errors.New("tmigr: nil function")

func wheelFlags(opts []TimerOption) (uint32, error) {
	var flags uint32
	for _, o := range opts {
		switch o {
		case Pinned:
			flags |= cpu.Pinned
		case Deferrable:
			flags |= cpu.Deferrable
		default:
			return 0, fmt.Errorf("tmigr: unknown TimerOption %d", o)
		}
	}
	return flags, nil
}

// newWheelTimer returns an unarmed wheel timer on behalf of c (-1: of
// whoever arms it).
func (rt *Runtime) newWheelTimer(c int, flags uint32) *Timer {
	m := &timerWithExtra{t: Timer{rt: rt, cpu: int16(c)}}
	t := &m.t
	t.x = &m.x
	cpu.Setup(&t.x.wt, flags)
	t.x.wt.Data = t
	return t
}

// newHRTimer returns an unarmed hrtimer on behalf of worker w.
func (rt *Runtime) newHRTimer(w *engine.Worker, mode HRMode) (*Timer, error) {
	t := &Timer{rt: rt, cpu: int16(w.CPU()), isHR: true}
	t.ht.Data = (*hrTimer)(t)
	if err := w.HB().Setup(&t.ht, hrtimer.Monotonic, hrMode(mode)); err != nil {
		return nil, fmt.Errorf("tmigr: %w", err)
	}
	return t, nil
}

// HRAfterFunc runs f on worker cpu after at least d, with nanosecond
// resolution: a high-resolution timer, hard or soft. The worker wakes for it
// whatever its timer wheels hold. A nil f is refused; after Close it
// returns ErrClosed.
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
	if err := checkMode(mode); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, errNilFunc
	}
	if rt.e.Closed() {
		return nil, ErrClosed
	}
	t, err := rt.newHRTimer(w, mode)
	if err != nil {
		return nil, err
	}
	t.f = f
	t.start(d)
	return t, nil
}

func checkMode(m HRMode) error {
	if m != Soft && m != Hard {
		return fmt.Errorf("tmigr: unknown HRMode %d", m)
	}
	return nil
}

func hrMode(m HRMode) hrtimer.Mode {
	if m == Hard {
		return hrtimer.ModeHard
	}
	return hrtimer.ModeSoft
}

// Stop prevents the timer from firing. It returns true if the call stops
// the timer, false if the timer has already expired or been stopped. It
// does not wait for a function that has started. For a timer with a
// channel, a value it sent and nobody received is taken back, so none is
// received after Stop returns. On a zero Timer (not made by the runtime)
// it does nothing and returns false.
func (t *Timer) Stop() bool {
	if t.rt == nil || !t.rt.started() {
		return false
	}
	t.mu.Lock()
	was := t.armed
	t.armed = false
	if t.isHR {
		t.rt.e.Worker(int(t.cpu)).HB().TryCancel(&t.ht)
	} else {
		t.rt.e.Set().Del(&t.x.wt)
	}
	was = t.drain() || was
	t.mu.Unlock()
	return was
}

// drain empties the channel of a timer with one (t.mu held): every send
// happens under t.mu, so nothing of an earlier arm arrives afterwards (Go
// 1.23's rule for time.Timer's channel). It reports whether it took a value
// back: then, as in Go 1.23, Stop and Reset report the timer as stopped
// while active, since nobody received its expiry (so the old idiom
// "if !t.Stop() { <-t.C }" never blocks).
func (t *Timer) drain() bool { return drainChan(t.chanOf()) }

// drainChan takes a value back from c, if c is not nil and holds one.
func drainChan(c chan time.Time) bool {
	if c != nil {
		select {
		case <-c:
			return true
		default:
		}
	}
	return false
}

// Reset changes the timer to expire after d, and returns true if the timer
// had been active, false if it had expired or been stopped. The function
// runs once more after d, even if it is running now. For a timer with a
// channel, Reset empties it as Stop does. After Close, and on a zero
// Timer, Reset arms nothing.
//
// Reset is the whole re-arm, Stop included, in one critical section, with
// one clock reading, and it does not allocate. It reads a channel timer's
// extra before taking the Timer's lock, so that its cache line is on its
// way before the first locked instruction (which lets no later read start
// until it is done). The timer stays on the worker it was placed on (see
// AfterFunc).
//
// A high-resolution timer that is armed and moved later stays where it is
// in the core's queue, and Reset touches nothing but the Timer: the worker
// finds it due at the old expiry, sees the later one, and queues it for
// that instead of running it (fireHR). This is how Go's runtime re-arms a
// timer that is in its heap (timerModified: the heap entry is fixed when
// it comes to the top), and the reason is the same: a timeout re-armed
// before it expires, the common use, would otherwise lock the worker's
// base and move a heap entry (cache misses on the entry and on every
// timer it passes) at every re-arm. The cost is one wake-up of the worker
// at the old expiry. A move earlier, and an arm of a timer that expired or
// was stopped, are listed for the worker, which queues the timer for its
// new expiry before it next waits (see internal/engine/moves.go): the
// caller locks nothing of the worker's either. Only a timer re-armed while
// its function runs (which stays on the base where it runs), one whose
// worker is offline, and a new timer's first arm go to the core at once, as
// hrtimer_start_range_ns.
func (t *Timer) Reset(d time.Duration) bool { return t.reset(d, true) }

// start is a new timer's first arm: Reset, straight to the core, so that
// the timer is queued when its constructor returns.
func (t *Timer) start(d time.Duration) { t.reset(d, false) }

// reset is Reset; list: it may leave the core to the worker (listHR).
func (t *Timer) reset(d time.Duration, list bool) bool {
	// The clock first: its reading waits for every load before it, so read
	// after the Timer it would wait for the Timer's cache miss, and the
	// lock after it for the clock; read before, the miss overlaps it.
	raw := engine.MonoRaw()
	if t.rt == nil {
		return false
	}
	var c chan time.Time
	if t.x != nil {
		c = t.x.c // immutable once made; read early (see above)
	}
	if d < 0 {
		d = 0
	}
	t.mu.Lock()
	was := t.armed
	if !t.rt.e.Arming() {
		t.armed = false
		t.mu.Unlock()
		return was
	}
	was = drainChan(c) || was
	now := t.rt.e.NowFrom(raw)
	if t.isHR {
		when := engine.SatAdd(now, int64(d))
		switch {
		case t.armed && when >= t.coreAt:
			t.when = when
		case list && t.listHR(when):
		default:
			t.armed = true
			t.armHR(now, int64(d))
		}
	} else {
		t.armed = true
		t.armWheel(now, int64(d))
	}
	t.mu.Unlock()
	return was
}

// listHR arms the high-resolution timer for when, for its worker to queue
// in the core before it next waits (see internal/engine/moves.go), and
// reports whether it did (t.mu held). It does for a timer moved earlier than its expiry in the
// core, and for one not armed (expired or stopped; it is then notInCore
// until the worker queues it), if its worker is online; the caller then
// locks nothing of the worker's. Not while the timer's function runs:
// re-armed then, it stays on the base where it runs (see HRAfterFunc),
// which only an arm at once can tell.
func (t *Timer) listHR(when int64) bool {
	w := t.rt.e.Worker(int(t.cpu))
	if t.running.Load() != 0 || !w.Online() {
		return false
	}
	if h := t.rt.cfg.hooks.listing; h != nil {
		h(t)
	}
	w.PushMove(&t.ht, &t.moveNext, when)
	if !w.Online() {
		// It went offline since the look above, and may have emptied its
		// list already: a parked worker empties it when kicked, queuing
		// the timer where the worker's timers went (both loads and the
		// push are sequentially consistent: either the offline worker's
		// last drain sees the push, or this load sees it offline).
		w.Kick(engine.KickTimer)
	}
	if !t.armed {
		t.armed = true
		t.coreAt = notInCore
	}
	t.when = when
	return true
}

// notInCore is the coreAt of a timer armed by listHR that the worker has
// not queued yet.
const notInCore = math.MaxInt64

// armWheel queues the wheel timer d ns after now (t.mu held).
func (t *Timer) armWheel(now, d int64) {
	rt := t.rt
	c := int(t.cpu)
	if c < 0 {
		// The caller's CPU: only this case needs to know who calls (a
		// thread-id system call while some worker runs user code).
		if self := rt.e.Self(); self != nil && self.Online() {
			c = self.CPU()
		} else {
			c = rt.place(t.x.hint, placeCoarse)
		}
	}
	w := rt.e.OnBehalf(c)
	t.when = engine.SatAdd(now, d)
	grid := rt.e.Grid()
	exp := grid.Expiry(now, d)
	_, kickCPU := rt.e.Set().Mod(w.CPU(), &t.x.wt, exp, grid.Jiffies(now), 0)
	w.Release()
	if h := rt.cfg.hooks.queued; h != nil {
		h(t)
	}
	switch {
	case kickCPU >= 0:
		rt.e.Worker(kickCPU).Kick(engine.KickTimer)
	case t.running.Load() == 0 && w.IdleSince() != 0 && t.x.wt.Flags()&cpu.Deferrable == 0 && newFirst(grid.At(exp+1), w.FirstGlobal(), rt.e.Now()):
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
		// pending bit is what it checks last. (The clock is read again
		// here, after the timer was queued, as newFirst requires; only
		// for an idle worker.)
		w.Kick(engine.KickTimer)
	}
}

// newFirst reports whether a global timer that expires at the earliest at
// earliest, queued on an idle worker, may be a first event the hierarchy
// does not know. earliest is the start of the jiffy after the timer's wheel
// expiry: the wheel runs a timer of expiry e at jiffy e+1 at the earliest
// (its bucket expiry; later on the coarser levels), so the timer never
// runs before it. first is the worker's first global expiry as it last
// told the hierarchy (the start of the jiffy its first global timer's
// bucket expires at), MinInt64 while it is finding out; now is read after
// the timer was queued.
//
// The comparison is strict and on the rounded expiry, as enqueue_timer's
// time_before(bucket_expiry, base->next_expiry) is: a timer that expires
// at or after first is run, or found and walked up, by whoever handles the
// event at first (the worker, or the CPU that expires it remotely and
// fetches its next event afterwards), so it needs no kick. Comparing the
// unrounded expiry instead kicked for most timers that land in the jiffy
// of the current first one.
//
// A timer queued while the worker was finding out is either seen by it or
// kicks it (first is MinInt64). Queued before first was read, it is in
// first. An event not yet due is still the one the
// hierarchy holds (only the worker changes it before it is due, and then
// first is updated); one that is due may have been handled by another CPU,
// which walks the worker's next event up without telling the worker,
// possibly before the timer was queued (refreshFirst narrows that window):
// then the answer is yes too.
func newFirst(earliest, first, now int64) bool {
	return first == math.MinInt64 || earliest < first || first <= now
}

// armHR starts the hrtimer d ns after now on behalf of its worker (t.mu
// held).
func (t *Timer) armHR(now, d int64) {
	rt := t.rt
	w := rt.e.OnBehalf(int(t.cpu))
	t.when = engine.SatAdd(now, d)
	t.coreAt = t.when
	eff, err := w.HB().Start(&t.ht, now, d, rt.e.Slack(), hrtimer.ModeRel)
	w.Release()
	if err != nil {
		rt.e.Fail(fmt.Errorf("hrtimer start on worker %d: %w", w.CPU(), err))
		return
	}
	if eff.Program || eff.IPI != nil {
		rt.e.Apply(w, eff)
	}
}

// hrTimer is a high-resolution Timer as its hrtimer's Data: the engine's
// Firer and Movable, methods that are no part of Timer's API.
type hrTimer Timer

// FireHR is fireHR (engine.Firer).
func (h *hrTimer) FireHR(w *engine.Worker) { (*Timer)(h).fireHR(w) }

// MoveLink is the timer's link on its worker's list of moves
// (engine.Movable).
func (h *hrTimer) MoveLink() *atomic.Pointer[hrtimer.Timer] { return &h.moveNext }

// Moved is the worker's look at the timer on its list of moves
// (engine.Movable): under the timer's lock it unlinks it and, if it is
// still armed for an expiry earlier than the core's (or not in the core,
// notInCore), queues it for that expiry.
func (h *hrTimer) Moved(w *engine.Worker, now int64) (next *hrtimer.Timer, when int64, queued bool) {
	t := (*Timer)(h)
	t.mu.Lock()
	next = t.moveNext.Load()
	t.moveNext.Store(nil)
	if t.armed && t.when < t.coreAt && (t.ht.Queued() || t.coreAt == notInCore) {
		when, queued = t.when, true
		t.queueForWhen(now)
	}
	t.mu.Unlock()
	return next, when, queued
}

// fireHR runs on worker w for an hrtimer expiry the core handed out. It
// runs the function only if t is armed and not queued again since (see
// Timer), and only if the arm's expiry has come: a Reset that moved an
// armed timer later left it in the core at the earlier one (see Reset),
// and it is queued for the later one now, on behalf of the worker it
// belongs to, as that Reset would have.
func (t *Timer) fireHR(w *engine.Worker) {
	if h := t.rt.cfg.hooks.expired; h != nil {
		h(t)
	}
	t.mu.Lock()
	if !t.armed || t.ht.Queued() || t.coreAt == notInCore {
		// Stopped, or queued again since; or stopped and armed again by
		// listHR since, which this expiry is not for.
		t.mu.Unlock()
		return
	}
	if t.when > t.coreAt {
		if now := w.Now(); now < t.when {
			t.queueForWhen(now)
			t.mu.Unlock()
			return
		}
	}
	t.fire(w, w.CPU())
}

// queueForWhen queues the armed high-resolution timer in the core for the
// expiry its last Reset asked for, t.when, which the core did not hold (a
// move later, found at the old expiry; a listed one, see
// internal/engine/moves.go). One found overdue is queued for now and keeps
// its when, so that its lateness still counts from what was asked (t.mu
// held).
func (t *Timer) queueForWhen(now int64) {
	when := t.when
	t.armHR(now, max(when-now, 0))
	t.when = when
}

// fire runs an expiry that t.mu, held, has claimed, on w for owner's base,
// and unlocks t.mu. A timer with a channel sends under the lock (Stop and
// Reset drain under it) and a Ticker re-arms there, forwarded from the
// expiry it asked for; a function runs with the lock dropped. The expiry is
// counted before the function runs or the value is sent, so what that
// makes visible is in Stats already.
func (t *Timer) fire(w *engine.Worker, owner int) {
	t.armed = false
	when := t.when
	c := t.chanOf()
	if c == nil {
		t.running.Add(1)
		t.mu.Unlock()
		start := w.Now()
		w.Account(owner, when, start)
		w.UserCall(t, t.f)
		t.running.Add(-1)
		if owner != w.CPU() {
			w.AddRemoteTime(w.Now() - start)
		}
		return
	}
	now := w.Now()
	w.Account(owner, when, now)
	select {
	case c <- time.Now():
	default: // a slow receiver: the value is dropped, as time.Ticker does
	}
	if t.x.period > 0 && !t.rt.e.Closed() {
		t.armed = true
		next := forward(when, now, t.x.period)
		if t.isHR {
			t.armHR(now, next-now)
		} else {
			t.armWheel(now, next-now)
		}
	}
	t.mu.Unlock()
}

// forward is hrtimer_forward for a Ticker that expired at when, now: the
// first when + k·period (k ≥ 1) after now. Ticks missed while the worker
// was late are dropped (the kernel counts them as overruns); the ones kept
// stay on the grid of the first expiry, so the period never drifts by the
// lateness of each expiry, as re-arming after now + period would.
func forward(when, now, period int64) int64 {
	k := int64(1)
	if now-when >= period {
		k = (now-when)/period + 1
	}
	if k > (math.MaxInt64-when)/period {
		return math.MaxInt64
	}
	return when + k*period
}
