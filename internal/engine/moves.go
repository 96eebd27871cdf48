package engine

import (
	"math"
	"sync/atomic"

	"github.com/tmigr/tmigr/hrtimer"
)

// Moves: a Reset of the public API's Timer that moves an armed
// high-resolution timer earlier leaves it where the core's queue has it, as
// a move later does (see Timer.Reset), and lists it on its worker's
// moveList; so does a Reset of a timer that expired or was stopped (not in
// the queue: notInCore). The worker queues each for its new expiry before it
// next waits, so the caller takes no lock of the worker's base and sifts
// nothing in its queue, whose entries and the timers they pass are cache
// misses with many timers. Go's runtime leaves a timer moved earlier in its
// heap too (timerModified, found by a scan of the heap when its new expiry
// comes); a list spares the scan. The kernel has no such step: hrtimer_start
// queues at once, on the CPU that calls it, which here would be the caller's
// goroutine taking the worker's base lock.
//
// The worker must look at the list before the new expiry. It does at every
// wake-up (service, and a rescue's run of its timers), and it never sleeps
// with the list non-empty. The push and the sleep order themselves so that
// one of the two sides sees the other (both use sequentially consistent
// atomics):
//
//	Reset (pusher)                       worker (sleep)
//	1. push (or find t listed)           1. sleepUntil = deadline
//	2. read sleepUntil; if the new       2. read the list's head; if set, do
//	   expiry is before it, lower it        not sleep: go round and drain
//	   and kick the worker                  the list
//
// If the worker's read (2) misses the push, the push came after it, so the
// pusher's read (2) sees the deadline the worker is about to sleep to, and
// kicks it if the timer is due before. A worker that is awake has
// sleepUntil at or before now, so a push to it kicks nothing: it drains the
// list before it next sleeps.
//
// A timer is on the list at most once: its moveNext links it, and a
// Reset of a timer listed already only changes its expiry (t.when), which
// is what the worker reads when it comes to it. The worker re-checks the
// timer under its lock (still armed, still earlier than the core's
// expiry), so a Stop, another Reset or an expiry meanwhile needs no
// removal. So the list never holds more than the worker's timers, and a
// Reset that moves a timer earlier twice before the worker looks pushes
// once.
//
// The list is a stack that Resets push onto with a compare-and-swap and
// the worker empties whole with a swap, taking no lock: the push was a
// mutex, and with more goroutines re-arming than CPUs a pusher preempted
// while it held it made the others sleep on it and wait for the
// scheduler (in BenchmarkAPIParallel, most of the callers' scheduling
// delay in a Go execution trace: docs/performance.md). A
// stack emptied whole has no ABA problem (nothing is popped alone); the
// worker turns each batch around, so timers are queued in the order they
// were listed, as the list's mutex had them.
//
//	Reset (t.mu held)                    worker (cpuMu held)
//	1. t not listed: t.moveNext = head,  1. batch = head.Swap(nil)
//	   head.CAS(head, t), retried        2. reverse the batch (the links
//	   until it takes                       are the worker's once swapped)
//	2. t listed already: nothing         3. per timer: lock t.mu, unlink
//	                                        it (moveNext = nil), queue it
//	                                        if still earlier; unlock
//
// A timer's moveNext is written by a pusher only while it is not listed
// (nil), under t.mu, before the compare-and-swap publishes it, and by the
// worker after the swap took the batch (turning it around, then nil under
// t.mu when it unlinks the timer). Pushers read it to see whether the
// timer is listed while the worker turns the batch around, so it is
// atomic; the batch turned around ends with movesEnd too, so a timer in
// it never reads as not listed.
//
// The list links the timers' hrtimer.Timer, whose Data (a Movable) is the
// timer: the engine knows the link and asks the timer to queue itself; the
// timer's lock, its armed state and expiries are the public API's.
type moveList struct {
	head atomic.Pointer[hrtimer.Timer] // the last timer listed; nil: none
	_    [56]byte                      // the pushers' line, apart from the worker's state words
}

// Movable is what the Data of a high-resolution timer on a list of moves
// is.
type Movable interface {
	// MoveLink is the timer's link on the list (its moveNext): nil while
	// it is not listed.
	MoveLink() *atomic.Pointer[hrtimer.Timer]
	// Moved runs on worker w at now (w's CPU lock held) for the listed
	// timer: under the timer's own lock it unlinks it (MoveLink set to
	// nil) and, if it is still armed earlier than its expiry in the core,
	// or not in the core at all, queues it for the expiry its Reset asked
	// for. It returns the timer linked after it, and that expiry if it
	// queued it.
	Moved(w *Worker, now int64) (next *hrtimer.Timer, when int64, queued bool)
}

// movesEnd ends the list (the link of the timer listed first, when it was
// empty) and a batch turned around, so that a listed timer's link is never
// nil.
var movesEnd hrtimer.Timer

// listed reports whether the list holds a timer.
func (l *moveList) listed() bool { return l.head.Load() != nil }

// MovesBetween is how many listed timers a drain queues between two looks
// at the timers due (about 1 µs each with many timers: cache misses).
const MovesBetween = 64

// PushMove lists t, whose Reset (its timer's lock held) moved it to expire
// at when, if it is not listed already (its link, next, is nil), and
// lowers the worker's deadline to when.
func (w *Worker) PushMove(t *hrtimer.Timer, next *atomic.Pointer[hrtimer.Timer], when int64) {
	if next.Load() == nil {
		l := &w.moves
		for {
			head := l.head.Load()
			n := head
			if n == nil {
				n = &movesEnd
			}
			next.Store(n)
			if l.head.CompareAndSwap(head, t) {
				break
			}
		}
	}
	if when < w.sleepUntil.Load() {
		w.Lower(when)
	}
}

// drainMoves queues the listed timers for the expiries their Resets asked
// for, on behalf of the worker each belongs to (cpuMu held: the worker, or
// a rescue of it), and returns the earliest of those expiries
// (math.MaxInt64: none). The clock is read once per MovesBetween timers:
// a timer whose expiry passed since is queued for it all the same, a time
// already past, and runs at the worker's next look, as one found overdue.
func (w *Worker) drainMoves() (first int64) {
	first = math.MaxInt64
	l := &w.moves
	if !l.listed() {
		return first
	}
	batch := &movesEnd // turned around: the timer listed first, first
	for t := l.head.Swap(nil); t != &movesEnd; {
		link := t.Data.(Movable).MoveLink()
		next := link.Load()
		link.Store(batch)
		batch, t = t, next
	}
	now := w.now()
	for i, t := 0, batch; t != &movesEnd; i++ {
		if i%MovesBetween == MovesBetween-1 {
			// A long list (a worker that could not run, or moves
			// coming faster than it wakes) does not hold up the
			// timers due meanwhile.
			if now = w.now(); now >= w.hb.Device() {
				w.hrInterrupt(now)
				now = w.now()
			}
		}
		next, when, queued := t.Data.(Movable).Moved(w, now)
		if queued {
			first = min(first, when)
		}
		t = next
	}
	return first
}
