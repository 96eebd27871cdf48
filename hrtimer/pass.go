package hrtimer

import (
	"errors"
	"math/bits"
)

type passKind uint8

const (
	passIRQ  passKind = iota // hrtimer_interrupt: high-resolution hardirq
	passTick                 // hrtimer_run_queues: low-resolution, from the tick
	passSoft                 // hrtimer_run_softirq
)

// Pass is one expiry pass over a CPU's hard or soft bases, driven by the
// caller:
//
//	p, err := b.Interrupt(now)      // or b.Tick(now), b.Softirq(now)
//	for {
//		for t := p.Next(); t != nil; t = p.Next() {
//			p.Done(t, run(t))       // run t's callback; the lock is not held
//		}
//		out, err := p.End(clock())  // a fresh now
//		if !out.Retry {
//			break                    // out.Program / out.At: arm the device
//		}
//	}
//
// Each CPU has one hardirq pass (Interrupt or Tick) and one softirq pass;
// they may be open at the same time, since the hardirq interrupts the
// softirq (and, on PREEMPT_RT, its thread). A Pass belongs to its CPUBase
// and is reused; its methods are safe to call from any goroutine, though
// one driver goroutine normally owns it.
type Pass struct {
	b       *CPUBase
	kind    passKind
	active  bool
	now     int64 // the pass's CLOCK_MONOTONIC now
	entry   int64 // hardirq entry time, for the hang delay
	basenow int64 // now in the clock of the base being expired
	mask    uint8 // bases still to visit (snapshot of active_bases)
	cur     int   // base being expired, -1 before the first
	retries int
	raised  bool
	running *Timer
	armSoft int64
	armHard int64
	err     error
}

// Errors that name a misuse of the pass API.
var (
	ErrPassActive  = errors.New("hrtimer: an expiry pass of this kind is already in progress on this CPU")
	ErrHighRes     = errors.New("hrtimer: Tick is the low-resolution path; this base is in high-resolution mode")
	ErrLowRes      = errors.New("hrtimer: Interrupt is the high-resolution path; this base is in low-resolution mode")
	ErrOffline     = errors.New("hrtimer: the CPU is offline")
	ErrNotRunning  = errors.New("hrtimer: Done for a timer that is not the pass's running timer")
	ErrOutstanding = errors.New("hrtimer: the callback handed out by Next has not been reported with Done")
	ErrNoPass      = errors.New("hrtimer: no pass in progress")
)

// Interrupt begins hrtimer_interrupt on b at now (the clock event device
// fired): nr_events is counted, the device is disarmed, the softirq is
// raised if now ≥ softirq_expires_next (Raised), and the pass walks the hard
// bases. While it runs, expires_next is Never and in_hrtirq is set: starts
// on this CPU do not reprogram (End does), and no other CPU queues a timer
// here.
func (b *CPUBase) Interrupt(now int64) (*Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.LowRes {
		return nil, ErrLowRes
	}
	if err := b.canStart(&b.hard); err != nil {
		return nil, err
	}
	b.nrEvents++
	b.device = Never
	p := &b.hard
	p.begin(passIRQ, now)
	p.entry = now
	p.retries = 0
	b.startHard(p, now)
	return p, nil
}

// Tick is hrtimer_run_queues, the low-resolution path, called from the tick
// every jiffy: raise the softirq if due, then a pass over the hard bases at
// now. Hard timers therefore expire at tick granularity. End programs
// nothing.
func (b *CPUBase) Tick(now int64) (*Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.cfg.LowRes {
		return nil, ErrHighRes
	}
	if err := b.canStart(&b.hard); err != nil {
		return nil, err
	}
	p := &b.hard
	p.begin(passTick, now)
	p.raised = b.raiseIfDue(now)
	p.mask = b.active & activeHard
	return p, nil
}

// Softirq is hrtimer_run_softirq, the HRTIMER_SOFTIRQ handler: a pass over
// the soft bases at now. Its End clears softirq_activated and reprograms for
// the next soft timer.
//
// When to call it is the driver's scheduling decision, and it differs by
// kernel. On a non-RT kernel a raised softirq normally runs on the way out
// of the interrupt, before any task the hardirq woke gets the CPU (or later
// in ksoftirqd under load), so soft wakeups still delay an RT task. On
// PREEMPT_RT it runs in a per-CPU thread (ktimers/N) with a low SCHED_FIFO
// priority, so an RT task woken by the hardirq pass runs first; that is the
// point of making SCHED_OTHER sleepers soft.
func (b *CPUBase) Softirq(now int64) (*Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.canStart(&b.soft); err != nil {
		return nil, err
	}
	p := &b.soft
	p.begin(passSoft, now)
	p.mask = b.active & activeSoft
	return p, nil
}

func (b *CPUBase) canStart(p *Pass) error {
	if p.active {
		return ErrPassActive
	}
	if !b.online.Load() {
		return ErrOffline
	}
	return nil
}

func (p *Pass) begin(kind passKind, now int64) {
	*p = Pass{b: p.b, kind: kind, active: true, now: now, cur: -1}
}

// startHard is the retry label of hrtimer_interrupt.
func (b *CPUBase) startHard(p *Pass, now int64) {
	b.inHrtirq = true
	b.expiresNext = Never
	p.now = now
	p.cur = -1
	p.raised = b.raiseIfDue(now)
	p.mask = b.active & activeHard
}

func (b *CPUBase) raiseIfDue(now int64) bool {
	if now < b.softirqExpiresNext {
		return false
	}
	b.softirqExpiresNext = Never
	b.softirqActivated = true
	return true
}

// Raised reports whether the latest (re)start of this pass raised
// HRTIMER_SOFTIRQ: the driver must then run b.Softirq (on PREEMPT_RT: wake
// the ktimers thread, which any RT task woken by this pass preempts).
func (p *Pass) Raised() bool {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return p.raised
}

// Now returns the pass's CLOCK_MONOTONIC now (the time given to Interrupt,
// Tick, Softirq or, on a retry, End).
func (p *Pass) Now() int64 {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return p.now
}

// Next returns the next timer whose callback the driver must run, or nil
// when the pass has nothing more to run. It visits the bases that had
// timers when the pass (re)started, in index order; within a base it takes
// the leftmost timer (earliest hard expiry, FIFO among equals) while its
// softexpires is not after now in that base's clock, and stops at the first
// that is, without looking further right (that timer forces a wakeup
// anyway). A timer queued during the pass, by a restart or by another CPU,
// runs in this pass if it is due and sits on the base being expired or on
// one not yet visited, as in the kernel.
//
// The returned timer is removed from its queue and marked running, so
// TryCancel returns -1 for it until Done.
func (p *Pass) Next() *Timer {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !p.active {
		return nil
	}
	if p.running != nil {
		p.fail(ErrOutstanding)
		return nil
	}
	for p.mask != 0 {
		i := bits.TrailingZeros8(p.mask)
		cb := &b.clock[i]
		if p.cur != i {
			p.cur = i
			p.basenow = p.now + cb.offset
		}
		if t := cb.q.first(); t != nil && p.basenow >= t.softexpires {
			cb.running = t
			b.dequeue(t, cb, false, false, nil)
			p.running = t
			p.armSoft, p.armHard = t.softexpires, t.expires
			return t
		}
		p.mask &^= 1 << i
	}
	return nil
}

// Armed returns the soft and hard expiry, in the timer's clock, of the
// timer Next returned last, as they were when it was taken off the queue
// (a concurrent restart may have changed the timer since), and the pass's
// now in that clock: the callback runs now − soft after its soft expiry.
func (p *Pass) Armed() (soft, hard, now int64) {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return p.armSoft, p.armHard, p.basenow
}

// Done reports that t's callback returned a (the end of __run_hrtimer).
// Restart requeues t at its current expiry unless it is already queued
// (restarted from inside the callback or from another CPU while it ran), so
// a timer is never queued twice. The running mark is cleared and Cancel
// waiters wake. A t that is not the pass's running timer is a misuse that
// End reports.
func (p *Pass) Done(t *Timer, a Action) {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if t == nil || !p.active || p.running != t {
		p.fail(ErrNotRunning)
		return
	}
	// A running timer never changes base, so t is still where Next took it.
	cb := t.base.Load()
	if a != NoRestart && !t.queued {
		b.enqueue(t, cb)
	}
	cb.running = nil
	p.running = nil
	b.cond.Broadcast()
}

// fail records a misuse for End to report (all of them, joined).
func (p *Pass) fail(err error) {
	p.err = errors.Join(p.err, err)
}

// Outcome is what End reports.
type Outcome struct {
	// Effect: Program/At is how the pass leaves the device (the
	// interrupt's final program, the hang delay, or the softirq's
	// reprogram for the next soft timer); IPI is unused.
	Effect
	// Retry: a hardirq pass found its next event already past at the now
	// given to End (long callbacks, a preempted VM). A further pass has
	// begun at that now: call Next/Done again, then End. Only Interrupt
	// passes retry, at most twice (three passes in all).
	Retry bool
	// Raised: the retry pass raised HRTIMER_SOFTIRQ.
	Raised bool
	// Hang: the third pass failed too. hang_detected is set, nr_hangs and
	// max_hang_time are updated, and the device is forced to
	// now + min(HangDelta, 100 ms) so the system makes progress. The
	// kernel prints "hrtimer: interrupt took <HangDelta> ns" for the
	// first hang after boot only; that is the driver's to do.
	Hang      bool
	HangDelta int64
}

// End finishes the pass at now, a fresh reading of the clock.
//
// Interrupt: the next event is recomputed into expires_next and the device
// programmed for it; that succeeds if it is Never or after now, which clears
// hang_detected and ends the pass. Otherwise the pass retries (Retry), or,
// after three passes, gives up (Hang). Tick: ends the pass. Softirq: clears
// softirq_activated and reprograms for the next soft timer (Program is set
// if the device moved).
//
// An error (a callback still outstanding, a Done for the wrong timer) leaves
// the pass open.
func (p *Pass) End(now int64) (Outcome, error) {
	b := p.b
	b.mu.Lock()
	defer b.mu.Unlock()
	var out Outcome
	if !p.active {
		return out, ErrNoPass
	}
	if p.running != nil {
		return out, ErrOutstanding
	}
	if err := p.err; err != nil {
		p.err = nil
		return out, err
	}
	switch p.kind {
	case passTick:
		p.active = false
	case passSoft:
		b.softirqActivated = false
		if b.getNextEvent(activeSoft) != Never {
			b.reprogram(b.softirqNextTimer, true, &out.Effect)
		}
		p.active = false
	case passIRQ:
		exp := b.updateNextEvent()
		b.expiresNext = exp
		b.inHrtirq = false
		if exp == Never || exp > now {
			b.device = exp
			b.hangDetected = false
			out.Program, out.At = true, exp
			p.active = false
			return out, nil
		}
		b.nrRetries++
		p.retries++
		if p.retries < 3 {
			b.startHard(p, now)
			out.Retry, out.Raised = true, p.raised
			return out, nil
		}
		b.nrHangs++
		b.hangDetected = true
		delta := now - p.entry
		if uint32(delta) > b.maxHangTime {
			b.maxHangTime = uint32(delta)
		}
		at := now + min(delta, hangCap)
		b.device = at
		out.Program, out.At = true, at
		out.Hang, out.HangDelta = true, delta
		p.active = false
	}
	return out, nil
}
