// Package hrtimer is Linux's high-resolution timer core
// (kernel/time/hrtimer.c) as a pure state machine: per-CPU bases of
// timers ordered by expiry, expired by passes that the caller drives with
// the current time as a parameter.
//
// # Bases, hard and soft
//
// Every CPU has a CPUBase with eight clock bases: CLOCK_MONOTONIC,
// CLOCK_REALTIME, CLOCK_BOOTTIME and CLOCK_TAI, each once for hard and once
// for soft timers. All are modelled; the last three differ from MONOTONIC
// only by an offset the driver sets with SetOffsets (zero by default). Each
// clock base is a queue ordered by hard expiry, FIFO among equal expiries,
// as the kernel's timerqueue (an rbtree that sends equal keys right).
//
// A timer has a range: it may expire any time from its softexpires on, and
// the hardware is programmed for its hard expiry, softexpires + slack. The
// slack is how wakeups coalesce: a pass runs a timer once its soft expiry
// has passed, so one interrupt serves every timer whose range covers it.
//
// Hard timers run in the hardirq pass (Interrupt), soft timers in the
// HRTIMER_SOFTIRQ pass (Softirq), which a hardirq pass raises once the first
// soft timer's hard expiry has come (softirq_expires_next): a soft timer does
// not ride along on an earlier hard interrupt, though once raised the soft
// pass runs every soft timer whose range covers now. On a PREEMPT_RT kernel (Config.PreemptRT)
// every timer not set up with ModeHard is soft, and the softirq runs in a
// thread (ktimers/N) that RT tasks preempt. That is why sleepers matter:
// since 2017 in the RT tree and 2019 in mainline, an RT or deadline task's
// nanosleep timer is hard, so it is woken from the interrupt, while a
// SCHED_OTHER task's is soft, so a crowd of SCHED_OTHER sleepers expiring
// together is woken from the softirq thread, after the RT task has run,
// instead of in front of it in the interrupt (cyclictest max 107 → 66 µs on
// an Atom, 261 → 90 µs on a Zynq). SetupSleeper implements the rule;
// Config.Sleepers selects the earlier behaviour, SleepersAllHard, for
// comparison.
//
// # Driving expiry
//
// The core never calls the driver. A pass hands out expired timers one at a
// time, in the manner of etcd raft's Ready: the driver runs what the timer
// stands for (Timer.Data) and reports the callback's return value, then ends
// the pass with a fresh now, which tells it how to program the clock event
// device:
//
//	p, _ := cpu.Interrupt(now)
//	for {
//		for t := p.Next(); t != nil; t = p.Next() {
//			p.Done(t, run(t)) // Restart or NoRestart
//		}
//		out, _ := p.End(clock())
//		if !out.Retry {
//			armDevice(out.At)
//			break
//		}
//	}
//	if cpu.SoftirqActivated() {
//		// the same loop over cpu.Softirq(now)
//	}
//
// End retries when the next event is already past (at most three passes),
// and then gives up as the kernel does: hang_detected, nr_hangs,
// max_hang_time, and the device pushed to now + min(delta, 100 ms). In
// low-resolution mode (Config.LowRes) the driver calls Tick every jiffy
// instead of Interrupt.
//
// Operations that may reprogram the hardware (Start, TryCancel, End, ...)
// return an Effect: program this CPU's device for At, or send another CPU
// a retrigger IPI.
//
// # Placement
//
// A start on behalf of CPU c may put an unpinned timer on another CPU's base
// that the driver chose (StartOn; the kernel's get_nohz_timer_target), but
// only if the timer would not be first to expire there, since a remote
// device cannot be reprogrammed; a pinned timer stays on c and a timer whose
// callback runs never moves. Dying moves all timers of an unplugged CPU to
// another.
//
// # Concurrency
//
// Each CPUBase has a lock, the kernel's cpu_base->lock, that covers the base
// and every timer on it: a Timer names its clock base, and whoever locks a
// timer first locks the CPU it points at, then checks that the timer did not
// move meanwhile. A pass drops the lock while the driver runs a callback;
// the timer is then marked running on its base, which keeps it from moving
// and makes TryCancel answer -1:
//
//	driver of CPU 0                 another goroutine
//	───────────────                 ─────────────────
//	lock 0; t := Next(); unlock
//	  (t running, not queued)       lock 0; TryCancel(t) = -1; unlock
//	run t's callback                lock 0; Start(t): t stays on CPU 0
//	                                  (running), queued again; unlock
//	lock 0; Done(t, Restart):
//	  t already queued, so not
//	  queued twice; unlock
//
// A start that moves a timer from CPU A to CPU B cannot hold both locks (a
// second mover could take them in the other order), so it points the timer
// at a placeholder, drops A's lock and takes B's; anyone locking the timer
// meanwhile waits for the placeholder to go:
//
//	lock A; remove t; t.base = placeholder; unlock A
//	lock B; suitable? t.base = B's base, enqueue : (unlock B; lock A; back)
//	unlock B
//
// Nothing here allocates on the start, cancel or expiry paths once a base's
// queues have grown to the largest number of timers they have held.
package hrtimer
