package hrtimer

import (
	"errors"
	"runtime"
	"sync/atomic"
)

// Timer is one high-resolution timer (struct hrtimer). The caller owns the
// memory: a Timer is set up once with CPUBase.Setup or SetupSleeper and then
// started, restarted and cancelled any number of times without allocating.
// A Timer must not be copied after setup.
//
// There is no callback function: when the timer expires, Pass.Next hands it
// to the driver, which runs whatever the timer stands for (Data is there to
// find it) and reports the callback's return value with Pass.Done.
type Timer struct {
	// Data belongs to the caller; the package never reads or writes it.
	Data any

	// base is the clock base the timer belongs to, or &migrationBase while
	// StartOn moves it between CPUs. Everything below is protected by the
	// lock of base's CPU (hashed locking: the CPU lock covers every timer
	// that points at one of its bases).
	base atomic.Pointer[clockBase]

	expires     int64  // hard expiry: the queue key and the hardware target
	softexpires int64  // earliest permitted expiry
	seq         uint64 // enqueue order on its CPU, for FIFO among equal expiries
	idx         int32  // index in base's queue, -1 when not in it
	queued      bool   // is_queued (HRTIMER_STATE_ENQUEUED)
	soft        bool   // is_soft: lives on a soft base, expires in the softirq
	hard        bool   // is_hard: set up with ModeHard
	rel         bool   // is_rel (TimeLowRes only)
}

// migrationBase is the placeholder a timer points at while StartOn holds
// neither its old nor its new CPU lock (the kernel's migration_base). lock
// spins until the move is over.
var migrationBase clockBase

// Errors that name a misuse of the API.
var (
	ErrNotSetUp = errors.New("hrtimer: timer is not set up")
	ErrActive   = errors.New("hrtimer: timer is active (queued or its callback is running)")
)

// lock locks the CPU base the timer belongs to and returns the clock base,
// or nil if the timer was never set up (lock_hrtimer_base).
func (t *Timer) lock() *clockBase {
	for {
		cb := t.base.Load()
		if cb == nil {
			return nil
		}
		if cb != &migrationBase {
			cb.cpu.mu.Lock()
			if t.base.Load() == cb {
				return cb
			}
			cb.cpu.mu.Unlock()
		}
		runtime.Gosched()
	}
}

// Expires returns the hard expiry in the timer's clock: the time the clock
// event device is programmed for, softexpires plus the slack.
func (t *Timer) Expires() int64 {
	cb := t.lock()
	if cb == nil {
		return 0
	}
	defer cb.cpu.mu.Unlock()
	return t.expires
}

// SoftExpires returns the earliest time, in the timer's clock, at which the
// timer may expire.
func (t *Timer) SoftExpires() int64 {
	cb := t.lock()
	if cb == nil {
		return 0
	}
	defer cb.cpu.mu.Unlock()
	return t.softexpires
}

// IsSoft reports whether the timer expires in softirq context. It is fixed
// at setup.
func (t *Timer) IsSoft() bool { return t.soft }

// IsHard reports whether the timer was set up with ModeHard.
func (t *Timer) IsHard() bool { return t.hard }

// Clock returns the clock the timer runs on. A relative CLOCK_REALTIME timer
// was turned into a CLOCK_MONOTONIC one at setup.
func (t *Timer) Clock() Clock {
	cb := t.base.Load()
	for cb == &migrationBase {
		runtime.Gosched()
		cb = t.base.Load()
	}
	if cb == nil {
		return Monotonic
	}
	return cb.clock
}

// CPU returns the CPU whose base the timer belongs to, or -1 if it is not
// set up.
func (t *Timer) CPU() int {
	cb := t.lock()
	if cb == nil {
		return -1
	}
	defer cb.cpu.mu.Unlock()
	return cb.cpu.cpu
}

// Queued reports whether the timer is queued (hrtimer_is_queued).
func (t *Timer) Queued() bool {
	cb := t.lock()
	if cb == nil {
		return false
	}
	defer cb.cpu.mu.Unlock()
	return t.queued
}

// Running reports whether the timer's callback is running: Pass.Next handed
// it out and Pass.Done was not yet called (hrtimer_callback_running).
func (t *Timer) Running() bool {
	cb := t.lock()
	if cb == nil {
		return false
	}
	defer cb.cpu.mu.Unlock()
	return cb.running == t
}

// Active reports whether the timer is queued or its callback is running
// (hrtimer_active). Both facts are read under the CPU lock, so it never
// gives a false negative.
func (t *Timer) Active() bool {
	cb := t.lock()
	if cb == nil {
		return false
	}
	defer cb.cpu.mu.Unlock()
	return t.queued || cb.running == t
}

// Forward moves the expiry of a timer that is not queued (normally from its
// callback) past now, in steps of interval, and returns the number of steps
// ("overruns"), as hrtimer_forward does. now is in the timer's clock.
//
//   - now before the hard expiry: 0, nothing changes.
//   - the timer is queued: 0, nothing changes (the kernel warns).
//   - otherwise interval is raised to the resolution (1 ns in high-resolution
//     mode, a tick in low-resolution mode) and the result k ≥ 1 satisfies
//     new = old + k·interval, new > now ≥ new − interval.
//
// Soft and hard expiry move together, so the slack is kept.
func (t *Timer) Forward(now, interval int64) uint64 {
	cb := t.lock()
	if cb == nil {
		return 0
	}
	defer cb.cpu.mu.Unlock()
	delta := now - t.expires
	if delta < 0 || t.queued {
		return 0
	}
	if res := cb.cpu.res; interval < res {
		interval = res
	}
	orun := uint64(1)
	if delta >= interval {
		orun = uint64(delta / interval)
		// hrtimer_add_expires_ns: a plain addition, it cannot pass now.
		inc := interval * int64(orun)
		t.expires += inc
		t.softexpires += inc
		if t.expires > now {
			return orun
		}
		orun++
	}
	// hrtimer_add_expires: saturating.
	t.expires = addSafe(t.expires, interval)
	t.softexpires = addSafe(t.softexpires, interval)
	return orun
}

// SleeperStartMode returns the mode hrtimer_sleeper_start_expires hands to
// the start of a sleeper set up with SetupSleeper: on PREEMPT_RT a sleeper
// that was made hard gets ModeHard added, so the mode recorded by the
// kernel's hrtimer_start trace event says HARD exactly for the sleepers that
// expire in hardirq context.
func (t *Timer) SleeperStartMode(mode Mode) Mode {
	cb := t.base.Load()
	if cb != nil && cb != &migrationBase && cb.cpu.cfg.PreemptRT && t.hard {
		mode |= ModeHard
	}
	return mode
}
