package tmigr

import (
	"math"
	"sync"
	"sync/atomic"
)

// Moves: a Reset that moves an armed high-resolution timer earlier leaves
// it where the core's queue has it, as a move later does (see
// Timer.Reset), and lists it on its worker's moveList; so does a Reset of
// a timer that expired or was stopped (not in the queue: notInCore). The
// worker queues each for its new expiry before it next waits, so the
// caller takes no lock of the worker's base and sifts nothing in its
// queue, whose entries and the timers they pass are cache misses with many
// timers. Go's runtime leaves a timer moved earlier in its heap too
// (timerModified, found by a scan of the heap when its new expiry comes);
// a list spares the scan. The kernel has no such step: hrtimer_start
// queues at once, on the CPU that calls it, which here would be the
// caller's goroutine taking the worker's base lock.
//
// The worker must look at the list before the new expiry. It does at every
// wake-up (service, and a rescue's run of its timers), and it never sleeps
// with the list non-empty. The push and the sleep order themselves so that
// one of the two sides sees the other (both use sequentially consistent
// atomics):
//
//	Reset (pusher)                       worker (sleep)
//	1. append, any = true                1. sleepUntil = deadline
//	2. read sleepUntil; if the new       2. read any; if set, do not sleep:
//	   expiry is before it, lower it        go round and drain the list
//	   and kick the worker
//
// If the worker's read (2) misses the push, the push came after it, so the
// pusher's read (2) sees the deadline the worker is about to sleep to, and
// kicks it if the timer is due before. A worker that is awake has
// sleepUntil at or before now, so a push to it kicks nothing: it drains the
// list before it next sleeps.
//
// An entry is only a hint: the worker re-checks the timer under its lock
// (still armed, still earlier than the core's expiry), so a Stop, another
// Reset, an expiry or a second entry for the same timer need no removal. A
// full list (movesMax) sends the Reset to the core as before.
type moveList struct {
	mu  sync.Mutex
	ts  []*Timer
	old []*Timer // the slice the last drain emptied, for the next pushes
	any atomic.Bool
	_   [64]byte // the pushers' line, apart from the worker's state words
}

// movesBetween is how many listed timers a drain queues between two looks
// at the timers due (about 1 µs each with many timers: cache misses).
const movesBetween = 64

// movesMax bounds a worker's list: more moves than that between two of its
// wake-ups (a worker that cannot run) go to the core.
const movesMax = 1 << 16

// pushMove lists t, whose Reset (t.mu held) moved it to expire at when, and
// reports whether it did; false: the list is full.
func (w *worker) pushMove(t *Timer, when int64) bool {
	l := &w.moves
	l.mu.Lock()
	if len(l.ts) >= movesMax {
		l.mu.Unlock()
		return false
	}
	l.ts = append(l.ts, t)
	l.any.Store(true)
	l.mu.Unlock()
	if when < w.sleepUntil.Load() {
		w.lower(when)
	}
	return true
}

// drainMoves queues the listed timers for the expiries their Resets asked
// for, on behalf of the worker each belongs to (cpuMu held: the worker, or
// a rescue of it), and returns the earliest of those expiries
// (math.MaxInt64: none).
func (w *worker) drainMoves() (first int64) {
	first = math.MaxInt64
	l := &w.moves
	if !l.any.Load() {
		return first
	}
	l.mu.Lock()
	ts := l.ts
	l.ts, l.old = l.old, nil
	l.any.Store(false)
	l.mu.Unlock()
	for i, t := range ts {
		ts[i] = nil
		if i%movesBetween == movesBetween-1 {
			// A long list (a worker that could not run, or moves
			// coming faster than it wakes) does not hold up the
			// timers due meanwhile.
			if now := w.now(); now >= w.hb.Device() {
				w.hrInterrupt(now)
			}
		}
		t.mu.Lock()
		if t.armed && t.when < t.coreAt && (t.ht.Queued() || t.coreAt == notInCore) {
			first = min(first, t.when)
			t.queueForWhen(w.now())
		}
		t.mu.Unlock()
	}
	l.mu.Lock()
	if l.old == nil {
		l.old = ts[:0]
	}
	l.mu.Unlock()
	return first
}
