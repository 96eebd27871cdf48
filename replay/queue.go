package replay

import "github.com/tmigr/tmigr/ftrace"

// queue is where each pending wheel timer of the trace sits, as its lines
// tell: the CPU, the base and the bucket (timer_start's bucket_expiry).
//
// An expiry takes a whole bucket off the wheel before it runs the bucket's
// first timer (__run_timers, collect_expired_timers, kernel/time/timer.c),
// and drops the base's lock around each callback: a next event computed
// meanwhile, by the CPU or for it, no longer sees the bucket's other
// timers, though their lines come later. queue takes them off at the first
// timer_expire_entry of the bucket.
type queue struct {
	queued   map[uint64]slot
	detached map[uint64]slot // cancelled, perhaps for the expiry that follows
}

// slot is where one timer sits.
type slot struct {
	cpu, base int
	bucket    uint64
}

func newQueue() *queue {
	return &queue{queued: map[uint64]slot{}, detached: map[uint64]slot{}}
}

// start records a timer_start line.
func (q *queue) start(p ftrace.TimerStart) {
	delete(q.queued, p.Timer)
	delete(q.detached, p.Timer)
	if !p.NoBucketExpiry {
		q.queued[p.Timer] = slot{p.CPU, baseOfFlags(p.Flags), p.BucketExpiry}
	}
}

// cancel records a timer_cancel line: expire_timers prints one as it
// detaches each timer to run it, so the slot is kept for the expiry that
// may follow.
func (q *queue) cancel(timer uint64) {
	if s, ok := q.queued[timer]; ok {
		q.detached[timer] = s
		delete(q.queued, timer)
	}
}

// expire records a timer_expire_entry line and calls off for each other
// timer of its bucket, which left the wheel with it.
func (q *queue) expire(p ftrace.TimerExpireEntry, off func(timer uint64)) {
	s, ok := q.queued[p.Timer]
	if !ok {
		s, ok = q.detached[p.Timer]
	}
	if ok {
		for tm, o := range q.queued {
			if tm != p.Timer && o.cpu == s.cpu && o.base == s.base && o.bucket == p.BaseClk {
				if off != nil {
					off(tm)
				}
				delete(q.queued, tm)
			}
		}
	}
	delete(q.queued, p.Timer)
	delete(q.detached, p.Timer)
}

// first returns the earliest bucket of the timers queued on cpu's base.
func (q *queue) first(cpu, base int) (bucket uint64, ok bool) {
	for _, s := range q.queued {
		if s.cpu == cpu && s.base == base && (!ok || s.bucket < bucket) {
			bucket, ok = s.bucket, true
		}
	}
	return bucket, ok
}

// expiringCancel reports whether the timer_cancel at event i is the detach
// of a timer whose expiry comes next (expire_timers, kernel/time/timer.c,
// prints the cancel and then timer_expire_entry), and returns that expiry.
// __run_timers took the timer's whole bucket off the wheel
// (collect_expired_timers) before that cancel: a CPU that computes its next
// event between the two lines no longer finds the bucket. expire_timers
// drops the base's lock with interrupts on before the callback of a timer
// that is not irqsafe, so an interrupt's lines (and, 7.1+, its deferred
// rearm on the way out) may come between the two: they are skipped.
func expiringCancel(events []ftrace.Event, i int, p ftrace.TimerCancel) (ftrace.TimerExpireEntry, bool) {
	c := events[i].CPU
	for ei := i + 1; ei < len(events); ei++ {
		ev := &events[ei]
		if ev.CPU != c {
			continue
		}
		if ev.Flags.HardIRQ() || ev.Flags.NMI() || isRearm(ev) {
			continue
		}
		x, ok := ev.Data.(ftrace.TimerExpireEntry)
		return x, ok && x.Timer == p.Timer
	}
	return ftrace.TimerExpireEntry{}, false
}
