package hrtimer

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Config describes the kernel being modelled. The zero value is a non-RT
// kernel in high-resolution mode with the current sleeper rule. Every CPU
// base of one machine should get the same Config.
type Config struct {
	// PreemptRT models CONFIG_PREEMPT_RT: every timer not set up with
	// ModeHard expires in softirq context (the softirq runs in a thread,
	// ktimers/N, that RT tasks preempt).
	PreemptRT bool
	// LowRes keeps the base in low-resolution mode (hres_active = 0): hard
	// timers run from the tick (Tick), so they are tick-granular, and the
	// resolution is one tick. The kernel switches to high-resolution mode at
	// boot once a oneshot clock event device is available; the model does
	// not switch.
	LowRes bool
	// HZ is the tick rate; it sets the resolution in low-resolution mode
	// (LOW_RES_NSEC = TICK_NSEC = (10⁹ + HZ/2) / HZ). Required with LowRes
	// or TimeLowRes.
	HZ int
	// TimeLowRes models CONFIG_TIME_LOW_RES: a relative start gets one
	// resolution unit added, for clocks that cannot read below a tick.
	TimeLowRes bool
	// Sleepers picks the PREEMPT_RT sleeper rule (see SleeperRule).
	Sleepers SleeperRule
}

// Base indices: 0-3 hard clocks, 4-7 the same clocks soft.
const (
	numBases   = 8
	softShift  = 4
	activeHard = 0x0F
	activeSoft = 0xF0
)

// clockBase is struct hrtimer_clock_base: one clock's timers on one CPU, in
// one expiry context.
type clockBase struct {
	cpu     *CPUBase
	index   uint8
	clock   Clock
	offset  int64  // this clock minus CLOCK_MONOTONIC
	running *Timer // the timer whose callback runs now
	q       queue
}

// CPUBase is one CPU's hrtimer state (struct hrtimer_cpu_base): eight clock
// bases, the next-event bookkeeping, the hang statistics and the passes
// (hardirq and softirq) a driver runs on it.
//
// Methods that act "on behalf of a CPU" (Setup, Start, TryCancel, ...) are
// called on the base of the CPU doing the operation, the kernel's
// this_cpu_ptr(&hrtimer_bases): it decides whether the clock event device
// may be reprogrammed (only the local one can) and where an unpinned timer
// may go. A driver that acts for a CPU from elsewhere (the runtime's
// goroutines) calls them on that CPU's base and forwards the Effect to it.
type CPUBase struct {
	mu   sync.Mutex // cpu_base->lock: the base and every timer on it
	cond sync.Cond  // broadcast when a callback finishes (Cancel waits on it)

	cpu int
	cfg Config
	res int64 // hrtimer_resolution
	// online is written under mu but read by other CPUs' starts without it.
	online atomic.Bool

	clock  [numBases]clockBase
	active uint8 // active_bases: bit i set iff clock[i] has queued timers
	seq    uint64

	inHrtirq           bool
	hangDetected       bool
	softirqActivated   bool
	expiresNext        int64
	nextTimer          *Timer
	softirqExpiresNext int64
	softirqNextTimer   *Timer
	device             int64 // what the clock event device is armed for

	nrEvents, nrRetries, nrHangs uint64
	maxHangTime                  uint32

	hard, soft Pass
}

// Effect is what an operation asks of the driver's clock event hardware.
type Effect struct {
	// Program: the clock event device of the CPU the method was called on
	// must now fire at At (Never: stop it). A device armed for a time
	// already past fires at once.
	Program bool
	At      int64
	// IPI, when not nil, is a CPU that must be sent a retrigger IPI: the
	// driver calls IPI.Retrigger on it (after whatever delivery delay it
	// models) and applies the Effect that returns on that CPU.
	IPI *CPUBase
}

// NewCPUBase returns the base of CPU cpu, online and empty
// (hrtimers_prepare_cpu + hrtimers_cpu_starting).
func NewCPUBase(cpu int, cfg Config) (*CPUBase, error) {
	if cpu < 0 {
		return nil, fmt.Errorf("hrtimer: bad CPU number %d", cpu)
	}
	if (cfg.LowRes || cfg.TimeLowRes) && cfg.HZ <= 0 {
		return nil, fmt.Errorf("hrtimer: Config.HZ = %d: a positive tick rate is required with LowRes or TimeLowRes", cfg.HZ)
	}
	if cfg.Sleepers > SleepersAllHard {
		return nil, fmt.Errorf("hrtimer: bad Config.Sleepers %d", cfg.Sleepers)
	}
	b := &CPUBase{cpu: cpu, cfg: cfg, res: 1}
	if cfg.LowRes {
		b.res = (1_000_000_000 + int64(cfg.HZ)/2) / int64(cfg.HZ)
	}
	b.cond.L = &b.mu
	for i := range b.clock {
		b.clock[i] = clockBase{cpu: b, index: uint8(i), clock: Clock(i % softShift)}
	}
	b.hard.b, b.soft.b = b, b
	b.reset()
	return b, nil
}

// reset is hrtimers_cpu_starting.
func (b *CPUBase) reset() {
	b.active = 0
	b.hangDetected = false
	b.nextTimer, b.softirqNextTimer = nil, nil
	b.expiresNext, b.softirqExpiresNext = Never, Never
	b.device = Never
	b.online.Store(true)
}

// CPU returns the CPU number.
func (b *CPUBase) CPU() int { return b.cpu }

// Config returns the configuration the base was made with.
func (b *CPUBase) Config() Config { return b.cfg }

// Resolution returns hrtimer_resolution: 1 ns in high-resolution mode, one
// tick in low-resolution mode.
func (b *CPUBase) Resolution() int64 { return b.res }

// Setup prepares t to run on clock with the SOFT/HARD bits of mode, on this
// CPU's base (__hrtimer_setup). On PREEMPT_RT every timer without ModeHard
// becomes soft. A relative CLOCK_REALTIME timer becomes CLOCK_MONOTONIC
// (POSIX: relative timers ignore clock changes). PINNED is ignored here; it
// matters at start. Data is left alone.
func (b *CPUBase) Setup(t *Timer, clock Clock, mode Mode) error {
	if clock >= numClocks {
		return fmt.Errorf("hrtimer: setup: bad clock %d", clock)
	}
	if mode&^modeMask != 0 {
		return fmt.Errorf("hrtimer: setup: bad mode %#x", uint8(mode))
	}
	if cb := t.lock(); cb != nil {
		active := t.queued || cb.running == t
		cb.cpu.mu.Unlock()
		if active {
			return ErrActive
		}
	}
	soft := mode&ModeSoft != 0
	if b.cfg.PreemptRT && mode&ModeHard == 0 {
		soft = true
	}
	if clock == Realtime && mode&ModeRel != 0 {
		clock = Monotonic
	}
	idx := int(clock)
	if soft {
		idx += softShift
	}
	t.expires, t.softexpires, t.seq, t.idx = 0, 0, 0, -1
	t.queued, t.rel = false, false
	t.soft, t.hard = soft, mode&ModeHard != 0
	t.base.Store(&b.clock[idx])
	return nil
}

// SleeperMode returns the mode __hrtimer_setup_sleeper sets a sleeper up
// with for a task of policy p that asked for mode. On PREEMPT_RT, under
// SleepersByPolicy, an RT or deadline task's sleeper gets ModeHard unless
// ModeSoft was asked for, so it wakes from hardirq context, while a
// SCHED_OTHER task's stays unmarked and therefore soft; under
// SleepersAllHard every sleeper not asking for ModeSoft gets ModeHard. On a
// non-RT kernel the mode is used as given (nanosleep: hard).
func (c Config) SleeperMode(p Policy, mode Mode) Mode {
	if c.PreemptRT && mode&ModeSoft == 0 && (p.RTOrDL() || c.Sleepers == SleepersAllHard) {
		mode |= ModeHard
	}
	return mode
}

// SetupSleeper sets t up as the sleeper of a task of policy p
// (hrtimer_setup_sleeper_on_stack): Setup with b.Config().SleeperMode(p,
// mode). Arm it with the task's slack, SleeperSlack, and start it with
// t.SleeperStartMode(mode).
func (b *CPUBase) SetupSleeper(t *Timer, clock Clock, mode Mode, p Policy) error {
	return b.Setup(t, clock, b.cfg.SleeperMode(p, mode))
}

// Start (re)starts t on behalf of this CPU with the target chosen to be this
// CPU: StartOn(t, b, ...). Use it when timer migration is off, for pinned
// timers, or when the driver's target choice picked this CPU.
func (b *CPUBase) Start(t *Timer, now, tim, slack int64, mode Mode) (Effect, error) {
	return b.StartOn(t, b, now, tim, slack, mode)
}

// StartOn (re)starts t on behalf of this CPU b (hrtimer_start_range_ns):
// softexpires = tim, expires = tim + slack (saturating), with tim relative
// to the clock's now when mode has ModeRel; now is CLOCK_MONOTONIC ns.
// A queued timer is first removed.
//
// target is where the driver's get_target_base chose to put the timer: the
// result of get_nohz_timer_target for an unpinned timer with migration on,
// any online housekeeping CPU when b is offline, else b. The kernel's rules
// then apply: a pinned start on an online CPU stays on b; a timer whose
// callback runs stays where it is; a remote target is used only if the timer
// would not be the first to expire there (expires ≥ target's expires_next),
// else the timer goes to b. When the timer is b's next_timer it stays on b
// so the hardware is reprogrammed once (force_local).
//
// The Effect tells whether b's clock event device must be reprogrammed, or
// (b offline) whether the target must be sent a retrigger IPI.
func (b *CPUBase) StartOn(t *Timer, target *CPUBase, now, tim, slack int64, mode Mode) (Effect, error) {
	var eff Effect
	if mode&^modeMask != 0 {
		return eff, fmt.Errorf("hrtimer: start: bad mode %#x", uint8(mode))
	}
	if slack < 0 {
		return eff, fmt.Errorf("hrtimer: start: negative slack %d", slack)
	}
	if target == nil {
		return eff, errors.New("hrtimer: start: nil target CPU base")
	}
	this := b
	thisOnline := this.online.Load()
	sel := target
	if thisOnline && mode&ModePinned != 0 {
		sel = this
	}
	if !sel.online.Load() {
		return eff, fmt.Errorf("hrtimer: start: target CPU %d is offline", sel.cpu)
	}
	cb := t.lock()
	if cb == nil {
		return eff, ErrNotSetUp
	}
	cpu := cb.cpu
	forceLocal := cpu == this && cpu.nextTimer == t && thisOnline
	if t.queued && cpu == this && sel == this && !forceLocal {
		// A restart in place: the timer stays on its clock base (the
		// target is the CPU it is on, always suitable), and it is not
		// next_timer, so removing it would reprogram nothing. Removing
		// and enqueueing would leave the same queue order, and the same
		// answer to "is it now the leftmost", as moving its heap entry to
		// its new key does (see queue.fix); that touches no other timer's
		// entry but those it passes.
		t.softexpires, t.expires = cpu.expiry(t, cb, now, tim, slack, mode)
		cpu.seq++
		t.seq = cpu.seq
		if cb.q.fix(t) {
			this.reprogram(t, true, &eff)
		}
		cpu.mu.Unlock()
		return eff, nil
	}

	// remove_hrtimer(restart): the timer keeps its queued state, and the
	// hardware is reprogrammed on removal only if the timer is local, was
	// first, and is not about to be requeued locally anyway.
	if t.queued {
		cpu.dequeue(t, cb, true, cpu == this && !forceLocal, &eff)
	}
	t.softexpires, t.expires = cpu.expiry(t, cb, now, tim, slack, mode)

	nb := cb
	if !forceLocal {
		nb = switchBase(t, cb, this, sel)
	}
	first := nb.cpu.enqueue(t, nb)
	switch {
	case forceLocal:
		nb.cpu.forceReprogram(true, &eff)
	case !thisOnline:
		// Queued remotely from an offline CPU: kick the target if the timer
		// is first there.
		if first {
			eff.IPI = nb.cpu
		}
	case first:
		this.reprogram(t, true, &eff)
	}
	nb.cpu.mu.Unlock()
	return eff, nil
}

// expiry returns a start's soft and hard expiry in cb's clock (t's CPU b
// locked): tim, relative to now with ModeRel, plus the resolution for a
// relative timer in TimeLowRes (which marks it), and the slack.
func (b *CPUBase) expiry(t *Timer, cb *clockBase, now, tim, slack int64, mode Mode) (int64, int64) {
	if mode&ModeRel != 0 {
		tim = addSafe(tim, now+cb.offset)
	}
	if b.cfg.TimeLowRes {
		t.rel = mode&ModeRel != 0
		if t.rel {
			tim = addSafe(tim, b.res)
		}
	}
	return tim, addSafe(tim, slack)
}

// switchBase is switch_hrtimer_base. Called with cb's CPU locked; returns
// the clock base the timer now belongs to, with its CPU locked.
func switchBase(t *Timer, cb *clockBase, this, newCPU *CPUBase) *clockBase {
	for {
		nb := &newCPU.clock[cb.index]
		if nb != cb {
			// A running callback pins the timer to its base: the pass
			// that runs it will look at it again when it returns.
			if cb.running == t {
				return cb
			}
			t.base.Store(&migrationBase)
			cb.cpu.mu.Unlock()
			nb.cpu.mu.Lock()
			if !suitable(t, nb, this) {
				nb.cpu.mu.Unlock()
				cb.cpu.mu.Lock()
				newCPU = this
				t.base.Store(cb)
				continue
			}
			t.base.Store(nb)
			return nb
		}
		if !suitable(t, nb, this) {
			newCPU = this
			continue
		}
		return nb
	}
}

// suitable is hrtimer_suitable_target, called with nb's CPU locked: the
// local CPU always is; from an offline CPU any target is (an IPI fixes it
// up); a remote CPU is only if the timer expires at or after its
// expires_next, because a remote clock event device cannot be reprogrammed
// and an IPI might come too late. An offline target (a start racing with
// hotplug, where the kernel would warn) is never suitable.
func suitable(t *Timer, nb *clockBase, this *CPUBase) bool {
	nc := nb.cpu
	if nc == this {
		return true
	}
	if !nc.online.Load() {
		return false
	}
	if !this.online.Load() {
		return true
	}
	return t.expires-nb.offset >= nc.expiresNext
}

// enqueue is enqueue_hrtimer: it reports whether t became the leftmost of
// its clock base.
func (b *CPUBase) enqueue(t *Timer, cb *clockBase) bool {
	b.active |= 1 << cb.index
	t.queued = true
	b.seq++
	t.seq = b.seq
	return cb.q.push(t)
}

// dequeue is __remove_hrtimer for a queued timer: keepQueued leaves the
// queued state set (a restart, a migration), and reprogram recomputes the
// next event when t was the one the hardware waits for.
func (b *CPUBase) dequeue(t *Timer, cb *clockBase, keepQueued, reprogram bool, eff *Effect) {
	t.queued = keepQueued
	if !cb.q.remove(t) {
		b.active &^= 1 << cb.index
	}
	if reprogram && t == b.nextTimer {
		b.forceReprogram(true, eff)
	}
}

// TryCancel stops t on behalf of this CPU b (hrtimer_try_to_cancel): 1 if
// it was queued and is now inactive, 0 if it was inactive, -1 if its
// callback is running (then nothing changes). Removing the first timer of
// b's own base reprograms b's device; removing one from another CPU does not
// (that CPU takes a spurious interrupt and reprograms then).
func (b *CPUBase) TryCancel(t *Timer) (int, Effect) {
	var eff Effect
	cb := t.lock()
	if cb == nil {
		return 0, eff
	}
	defer cb.cpu.mu.Unlock()
	if cb.running == t {
		return -1, eff
	}
	if !t.queued {
		return 0, eff
	}
	cb.cpu.dequeue(t, cb, false, cb.cpu == b, &eff)
	return 1, eff
}

// Cancel is hrtimer_cancel: TryCancel, waiting while the callback runs,
// until it returns 0 or 1. It blocks until another goroutine calls
// Pass.Done for t, so a single-goroutine driver (the simulator) must use
// TryCancel instead, and no driver may call it from t's own callback: that
// deadlocks here as it does in the kernel.
func (b *CPUBase) Cancel(t *Timer) (int, Effect) {
	for {
		r, eff := b.TryCancel(t)
		if r >= 0 {
			return r, eff
		}
		cb := t.lock()
		for cb.running == t {
			cb.cpu.cond.Wait()
		}
		cb.cpu.mu.Unlock()
	}
}

// reprogram is hrtimer_reprogram for a timer just enqueued as the first of
// its base, executed on this CPU b, with t's CPU locked.
func (b *CPUBase) reprogram(t *Timer, reprogram bool, eff *Effect) {
	cb := t.base.Load()
	expires := t.expires - cb.offset
	if expires < 0 {
		expires = 0
	}
	if t.soft {
		// A soft timer updates its own CPU's soft next event, remote or
		// not; it goes on to the hardware only if it also precedes the
		// combined next event.
		tc := cb.cpu
		if tc.softirqActivated || expires >= tc.softirqExpiresNext {
			return
		}
		tc.softirqNextTimer = t
		tc.softirqExpiresNext = expires
		if expires >= tc.expiresNext || !reprogram {
			return
		}
	}
	if cb.cpu != b || expires >= b.expiresNext || b.inHrtirq {
		return
	}
	b.nextTimer = t
	b.program(expires, eff)
}

// program is __hrtimer_reprogram: record expires_next and arm the device,
// unless the base is in low-resolution mode or a hang left the hang delay in
// the hardware.
func (b *CPUBase) program(expiresNext int64, eff *Effect) {
	b.expiresNext = expiresNext
	if b.cfg.LowRes || b.hangDetected {
		return
	}
	b.device = expiresNext
	eff.Program = true
	eff.At = expiresNext
}

// forceReprogram is hrtimer_force_reprogram.
func (b *CPUBase) forceReprogram(skipEqual bool, eff *Effect) {
	exp := b.updateNextEvent()
	if skipEqual && exp == b.expiresNext {
		return
	}
	b.program(exp, eff)
}

// nextEventBase is __hrtimer_next_event_base without an excluded timer: the
// earliest expiry (CLOCK_MONOTONIC, clamped at 0) over the given bases, at
// most expiresNext, recording the timer it belongs to in next_timer or
// softirq_next_timer.
func (b *CPUBase) nextEventBase(active uint8, expiresNext int64) int64 {
	for active != 0 {
		i := bits.TrailingZeros8(active)
		active &^= 1 << i
		cb := &b.clock[i]
		t := cb.q.first()
		if t == nil {
			continue
		}
		if exp := t.expires - cb.offset; exp < expiresNext {
			expiresNext = exp
			if t.soft {
				b.softirqNextTimer = t
			} else {
				b.nextTimer = t
			}
		}
	}
	if expiresNext < 0 {
		expiresNext = 0
	}
	return expiresNext
}

// getNextEvent is __hrtimer_get_next_event: soft bases count only while the
// softirq is not raised.
func (b *CPUBase) getNextEvent(mask uint8) int64 {
	var next *Timer
	exp := Never
	if !b.softirqActivated && mask&activeSoft != 0 {
		b.softirqNextTimer = nil
		exp = b.nextEventBase(b.active&activeSoft, Never)
		next = b.softirqNextTimer
	}
	if mask&activeHard != 0 {
		b.nextTimer = next
		exp = b.nextEventBase(b.active&activeHard, exp)
	}
	return exp
}

// updateNextEvent is hrtimer_update_next_event: refresh
// softirq_expires_next (unless the softirq is raised) and return the
// combined next event, with next_timer following the earlier of the two.
func (b *CPUBase) updateNextEvent() int64 {
	soft := Never
	if !b.softirqActivated {
		soft = b.getNextEvent(activeSoft)
		b.softirqExpiresNext = soft
	}
	exp := b.getNextEvent(activeHard)
	if exp > soft {
		b.nextTimer = b.softirqNextTimer
		exp = soft
	}
	return exp
}

// Retrigger is retrigger_next_event, run on b when a retrigger IPI arrives
// (after a clock change, after hotplug moved timers here, or after a start
// from an offline CPU): in high-resolution mode it recomputes the next event
// and reprograms b's device, in low-resolution mode it only refreshes the
// soft next event (NOHZ is assumed active).
func (b *CPUBase) Retrigger() Effect {
	var eff Effect
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.LowRes {
		b.updateNextEvent()
	} else {
		b.forceReprogram(false, &eff)
	}
	return eff
}

// SetOffsets sets the offsets of CLOCK_REALTIME, CLOCK_BOOTTIME and
// CLOCK_TAI from CLOCK_MONOTONIC, as timekeeping would after a clock change
// (hrtimer_update_base), and reports whether b needs a retrigger IPI
// (update_needs_ipi): a base whose offset changed now has a first timer
// earlier than expires_next (or, for the bases the kernel's test admits,
// softirq_expires_next). As in the kernel, that test compares clock ids with
// a base index, so it checks the soft next event for the BOOTTIME and TAI
// bases, hard ones included, and never for REALTIME.
func (b *CPUBase) SetOffsets(realtime, boottime, tai int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	var changed uint8
	for c, off := range [...]int64{Realtime: realtime, Boottime: boottime, TAI: tai} {
		if c == int(Monotonic) || b.clock[c].offset == off {
			continue
		}
		changed |= 1<<c | 1<<(c+softShift)
		b.clock[c].offset = off
		b.clock[c+softShift].offset = off
	}
	if changed == 0 || b.inHrtirq {
		return false
	}
	active := changed & b.active
	for active != 0 {
		i := bits.TrailingZeros8(active)
		active &^= 1 << i
		cb := &b.clock[i]
		exp := cb.q.first().expires - cb.offset
		if exp < b.expiresNext {
			return true
		}
		if kernelClockID[cb.clock] < softShift || b.softirqActivated {
			continue
		}
		if exp < b.softirqExpiresNext {
			return true
		}
	}
	return false
}

// kernelClockID maps our clocks to the kernel's clockid_t values.
var kernelClockID = [numClocks]int{Monotonic: 1, Realtime: 0, Boottime: 7, TAI: 11}

// Dying moves every timer of b, a CPU going offline, to CPU to
// (hrtimers_cpu_dying): each goes to the base of the same index, in order,
// staying queued throughout so concurrent cancels do not see it vanish;
// then b is marked offline. The driver chooses to (any active housekeeping
// CPU) and must then deliver the returned Effect's IPI (to.Retrigger), which
// reprograms to and lets anything overdue run. As in the kernel, where the
// dying CPU runs this with interrupts off, hotplug operations must not run
// concurrently with each other nor with operations on behalf of the dying
// CPU; starts on behalf of other CPUs may race with it (a start that finds
// its target offline falls back to its own CPU).
func (b *CPUBase) Dying(to *CPUBase) (Effect, error) {
	var eff Effect
	if to == nil || to == b {
		return eff, errors.New("hrtimer: dying: the target must be another CPU")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.online.Load() {
		return eff, fmt.Errorf("hrtimer: dying: CPU %d is already offline", b.cpu)
	}
	if !to.online.Load() {
		return eff, fmt.Errorf("hrtimer: dying: target CPU %d is offline", to.cpu)
	}
	if b.hard.active || b.soft.active {
		return eff, fmt.Errorf("hrtimer: dying: CPU %d has an expiry pass in progress", b.cpu)
	}
	to.mu.Lock()
	for i := range b.clock {
		ob, nb := &b.clock[i], &to.clock[i]
		for t := ob.q.first(); t != nil; t = ob.q.first() {
			b.dequeue(t, ob, true, false, nil)
			t.base.Store(nb)
			to.enqueue(t, nb)
		}
	}
	to.getNextEvent(activeSoft)
	to.mu.Unlock()
	b.online.Store(false)
	eff.IPI = to
	return eff, nil
}

// Starting brings an offline base back (hrtimers_cpu_starting): all
// bookkeeping is reset and the base is online again.
func (b *CPUBase) Starting() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reset()
}

// Online reports whether the CPU is online (hrtimer_base_is_online).
func (b *CPUBase) Online() bool { return b.online.Load() }

// ExpiresNext returns expires_next: the event the hardware is meant to fire
// for, hard and soft timers together (soft ones only while the softirq is
// not raised). It is Never while a hardirq pass runs, so that no other CPU
// queues a timer here that it would have to reprogram.
func (b *CPUBase) ExpiresNext() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.expiresNext
}

// SoftirqExpiresNext returns softirq_expires_next: when the next hardirq
// pass must raise the softirq. It is Never while the softirq is raised.
func (b *CPUBase) SoftirqExpiresNext() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.softirqExpiresNext
}

// SoftirqActivated reports whether HRTIMER_SOFTIRQ is raised and its pass
// has not finished (softirq_activated).
func (b *CPUBase) SoftirqActivated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.softirqActivated
}

// HangDetected reports hang_detected: the last interrupt gave up after three
// passes and left the hang delay in the hardware.
func (b *CPUBase) HangDetected() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hangDetected
}

// Device returns what the clock event device is armed for in
// high-resolution mode (Never: stopped, or fired and not yet rearmed).
func (b *CPUBase) Device() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.device
}

// NextHardExpiry returns the earliest hard expiry over the hard bases, in
// CLOCK_MONOTONIC ns (clamped at 0), or Never.
func (b *CPUBase) NextHardExpiry() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peek(activeHard)
}

// NextSoftExpiry returns the earliest hard expiry over the soft bases, in
// CLOCK_MONOTONIC ns (clamped at 0), or Never, whether or not the softirq
// is raised.
func (b *CPUBase) NextSoftExpiry() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peek(activeSoft)
}

func (b *CPUBase) peek(mask uint8) int64 {
	exp := Never
	for i := range b.clock {
		if mask&(1<<i) == 0 {
			continue
		}
		cb := &b.clock[i]
		if t := cb.q.first(); t != nil && t.expires-cb.offset < exp {
			exp = t.expires - cb.offset
		}
	}
	return max(exp, 0)
}

// GetNextEvent is hrtimer_get_next_event, which the NOHZ code asks when it
// stops the tick: in low-resolution mode the next event over all bases; in
// high-resolution mode Never (hrtimers program the device themselves).
func (b *CPUBase) GetNextEvent() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.cfg.LowRes {
		return Never
	}
	return b.getNextEvent(activeHard | activeSoft)
}

// Len returns the number of timers queued on the base.
func (b *CPUBase) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for i := range b.clock {
		n += len(b.clock[i].q)
	}
	return n
}

// Stats are the interrupt statistics of a CPU base.
type Stats struct {
	Events  uint64 // nr_events: hardirq interrupts
	Retries uint64 // nr_retries: passes whose next event was already past
	Hangs   uint64 // nr_hangs: interrupts that gave up after three passes
	// MaxHangTime is max_hang_time, in ns. Like the kernel's it is 32 bits
	// wide and compared after truncation.
	MaxHangTime uint32
}

// Stats returns the interrupt statistics.
func (b *CPUBase) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{b.nrEvents, b.nrRetries, b.nrHangs, b.maxHangTime}
}
