package replay

import "github.com/tmigr/tmigr/ftrace"

// RemoteExpiry follows whose timers each timer_expire_entry runs: the
// printing CPU's own, or, inside a remote expiry, the global timers of the
// CPU its tmigr_handle_remote_cpu line named. It is the one reading of that
// context that the checks, explain and the conformance tools share.
//
// A remote expiry starts at the handler's tmigr_handle_remote_cpu line
// (tmigr_handle_remote_cpu, kernel/time/timer_migration.c, 6.9+), which then
// runs timer_expire_remote(target): __run_timer_base on the target's
// BASE_GLOBAL only. Its end is not always printed. The kernel prints the
// walk that follows (a level-0 tmigr_update_events) only when the target is
// still idle and online when the handler relocks it; a target that woke
// meanwhile (it ran its own timers beside the handler) gets no walk, and the
// handler's next line may be its own. So a remote expiry ends at the first
// of:
//
//  1. the handler's next tmigr_* line other than tmigr_handle_remote_cpu
//     (the walk's tmigr_update_events, the next level's tmigr_handle_remote,
//     or the CPU's own idle or activation path once the softirq is over);
//  2. a line the handler's task printed outside softirq context
//     (run_timer_softirq is over; a line of another task on that CPU is an
//     interruption or, on PREEMPT_RT, a preemption of the timer thread, and
//     ends nothing);
//  3. a timer_expire_entry of another task on that CPU (another run of the
//     softirq: a remote expiry runs in the handler's call stack) or of a
//     timer last queued on another CPU than the target (timer_expire_remote
//     expires the target's timers only), or of a timer armed before the
//     recording whose next timer_start shows it pinned or deferrable (it sat
//     on a BASE_LOCAL or BASE_DEF, which timer_expire_remote never runs; a
//     timer keeps those flags for life, until its next timer_init). A pinned
//     or deferrable timer last queued on the target itself stays attributed
//     to the round: the trace then contradicts itself, which the checks
//     report rather than explain away;
//  4. a tmigr_handle_remote_cpu line of any CPU, the target's own included,
//     that names the same target: it is printed only once the target's
//     remote flag is clear, which the handler clears at the very end (a
//     handler that found the target awake when it relocked it walks
//     nothing and prints nothing);
//  5. an hrtimer_expire_entry the handler's task printed in softirq
//     context, not an interrupt's: a soft hrtimer's expiry
//     (hrtimer_run_softirq, HRTIMER_SOFTIRQ). handle_softirqs
//     (kernel/softirq.c) runs the pending vectors in bit order, each
//     handler to its end, TIMER_SOFTIRQ before HRTIMER_SOFTIRQ, so
//     run_timer_softirq has returned by then; a timer expiry after it is
//     another run of the timer softirq (on PREEMPT_RT both run in the
//     same ktimers thread, so rule 3's other task does not show it).
//
// Lines without latency flags (a trace made with the irq-info option off)
// leave rule 2 unused.
type RemoteExpiry struct {
	ctx   map[int]remoteCtx // handler CPU -> its remote expiry in progress
	where map[uint64]int    // timer -> the CPU whose base it was last queued on
	// local: the expiries whose timer's next start shows it pinned or
	// deferrable (rule 3), by the address of their event in the trace.
	local map[*ftrace.Event]bool
}

type remoteCtx struct {
	target int
	pid    int
}

// NewRemoteExpiry returns a RemoteExpiry for the trace events, which
// Observe is then given one by one, by address.
func NewRemoteExpiry(events []ftrace.Event) *RemoteExpiry {
	return newRemoteExpiry(localExpiries(events, newEventIndex(events).having(kindsOf(kTimer))))
}

// newRemoteExpiry returns a RemoteExpiry whose rule 3 takes the expiries
// local holds as local; it only reads local.
func newRemoteExpiry(local map[*ftrace.Event]bool) *RemoteExpiry {
	return &RemoteExpiry{ctx: map[int]remoteCtx{}, where: map[uint64]int{}, local: local}
}

// localExpiries finds the expiries of rule 3, whose timer's next start
// shows it pinned or deferrable, by the address of their event; timers
// are the indexes of the timer events (eventIndex).
func localExpiries(events []ftrace.Event, timers []int) map[*ftrace.Event]bool {
	local := map[*ftrace.Event]bool{}
	next := map[uint64]ftrace.TimerFlags{} // timer -> the flags of its next start
	for k := len(timers) - 1; k >= 0; k-- {
		i := timers[k]
		switch d := events[i].Data.(type) {
		case ftrace.TimerInit:
			delete(next, d.Timer)
		case ftrace.TimerStart:
			next[d.Timer] = d.Flags
		case ftrace.TimerExpireEntry:
			if f, ok := next[d.Timer]; ok && f&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0 {
				local[&events[i]] = true
			}
		}
	}
	return local
}

// Observe takes the trace's next event (events in trace order). For a
// timer_expire_entry it returns the CPU whose timer base the timer runs
// from and whether that is a remote expiry; for other events, the CPU that
// printed it and false.
func (r *RemoteExpiry) Observe(ev *ftrace.Event) (base int, remote bool) {
	x, in := r.ctx[ev.CPU]
	switch d := ev.Data.(type) {
	case ftrace.TmigrHandleRemoteCPU:
		for h, x := range r.ctx {
			if x.target == d.CPU {
				delete(r.ctx, h) // rule 4
			}
		}
		r.ctx[ev.CPU] = remoteCtx{target: d.CPU, pid: ev.PID}
		return ev.CPU, false
	case ftrace.TimerStart:
		r.where[d.Timer] = d.CPU
	case ftrace.HrtimerExpireEntry:
		if in && ev.PID == x.pid && ev.Flags.SoftIRQ() && !ev.Flags.HardIRQ() && !ev.Flags.NMI() {
			delete(r.ctx, ev.CPU) // rule 5
		}
	case ftrace.TimerExpireEntry:
		if !in {
			return ev.CPU, false
		}
		on, known := r.where[d.Timer]
		if ev.PID != x.pid || (known && on != x.target) || (!known && r.local[ev]) {
			delete(r.ctx, ev.CPU)
			return ev.CPU, false
		}
		return x.target, true
	}
	if in && ev.Data != nil && ftrace.IsTmigr(ev.Data) {
		delete(r.ctx, ev.CPU)
	} else if in && ev.PID == x.pid && ev.Flags != "" && !ev.Flags.SoftIRQ() && !ev.Flags.NMI() {
		delete(r.ctx, ev.CPU)
	}
	return ev.CPU, false
}

// Target returns the CPU whose timers cpu is expiring remotely now, if any.
func (r *RemoteExpiry) Target(cpu int) (int, bool) {
	x, ok := r.ctx[cpu]
	return x.target, ok
}
