package replay

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// The placement check: on which CPU a timer is queued when it is armed.
//
// A wheel timer's timer_start prints the CPU of the base it went to (cpu=)
// and is printed by the CPU that armed it; an hrtimer expires on the CPU
// of the base it was queued on (hrtimer_expire_entry's CPU), started by
// the CPU of its hrtimer_start. The kernel's rules, by version
// (docs/kernels.md K1, K4):
//
//   - a pinned wheel timer queued on another CPU is add_timer_on's, whose
//     caller chose the CPU, even from the timer's own callback (no
//     running-timer check there: clocksource_watchdog hops so): no
//     placement decision; before 6.9 add_timer_on did not mark it pinned
//     (kernel.AddTimerOnPinned, aae55e9fb8fc), so a non-pinned timer
//     queued on another CPU than the rules allow may be its, and so may
//     one of add_timer_on's callbacks queued on the arming CPU
//     (addTimerOnLocal): undetermined;
//   - a timer re-armed from its own callback stays on its base (the base's
//     running_timer), on every kernel: for a wheel timer expired remotely
//     that is the remote CPU's base;
//   - a pinned timer is queued on the arming CPU;
//   - wheel timers: up to 6.8 (kernel.PushAtEnqueue) with
//     kernel.timer_migration=1 a non-pinned timer goes to
//     get_nohz_timer_target(): the arming CPU if it is housekeeping (not
//     nohz_full) and not idle, else a busy housekeeping CPU of its
//     scheduler domains, else the arming CPU if housekeeping, else any
//     housekeeping CPU; from 6.9 (b2cf7507e186) always the arming CPU,
//     whatever the sysctl says;
//   - hrtimers, on every kernel: with timer_migration=1 a non-pinned
//     hrtimer may go to get_nohz_timer_target() too, unless it would be the
//     first to expire there (hrtimer_check_target) or, from 7.1
//     (3288cd486376), it is the first on the arming CPU; with
//     timer_migration=0 it stays on the arming CPU;
//   - an hrtimer of a CPU going offline is moved by hrtimers_cpu_dying to
//     another CPU, which expires it: one started before a line of the
//     CPU's hotplug thread (cpuhp/N) and expired elsewhere is
//     undetermined.
//
// An arm from a task (not the idle task) means the CPU is not idle. Where
// the rules leave one CPU the decision is determined; where they leave
// several (which CPUs were idle then, which was the target's next event)
// the kernel's CPU must be one of them, else it is a mismatch, and within
// them it is undetermined. timer_migration comes from the machine line's
// at= (1 before its first change): an arm within a change's window is
// undetermined.

// whyPushTarget and the other reasons of the placement check.
const (
	whyPushTarget = "target depends on which CPUs were idle"
	whySysctl     = "timer_migration changed then"
	whyFinishing  = "re-armed as its callback returned on another CPU"
	whyAddTimerOn = "queued where add_timer_on put it, unmarked before 6.9"
	whyHotplug    = "moved off its CPU by a hotplug"
	// whyPinnedRunning: a pinned arm on the arming CPU of a timer whose
	// callback runs on another base.
	whyPinnedRunning = "pinned re-arm of a running timer: add_timer_on moves it, mod_timer does not"
)

// addTimerOnLocal holds the callbacks of the timers that the kernel's own
// callers of add_timer_on queue on the CPU that runs them: a line of one
// of them queued on its arming CPU, where the push rule would have moved
// it, may be add_timer_on's. Every other callback is armed with
// mod_timer or add_timer only (schedule_timeout's process_timeout, RCU's
// and the workqueue's own timers), so such a line of theirs is a
// mismatch before 6.9 as after.
var addTimerOnLocal = map[string]bool{
	// __queue_delayed_work (kernel/workqueue.c): queue_delayed_work_on
	// with a CPU, as the per-CPU works (vmstat_update, ...) re-arm.
	"delayed_work_timer_fn": true,
	// add_interrupt_randomness (drivers/char/random.c, 5.19 to 6.x):
	// add_timer_on(&fast_pool->mix, raw_smp_processor_id()).
	"mix_interrupt_randomness": true,
	// clocksource_watchdog (kernel/time/clocksource.c) hops to the next
	// online CPU, which may be its own.
	"clocksource_watchdog": true,
}

// addTimerOn widens want, the CPUs the rules allow for a non-pinned arm
// on CPU a, where add_timer_on may have queued it. Before aae55e9fb8fc
// (6.9) add_timer_on left no TIMER_PINNED: its caller's CPU prints like a
// push the rules do not allow, or, where the caller named the arming CPU
// itself, like a local arm the rules do not allow (a nohz_full CPU's timer
// goes to a housekeeping CPU). A timer re-armed as its callback ends on
// another CPU is no exception (a delayed work whose callback ran on one
// CPU, re-queued with queue_delayed_work_on by a task on another).
func (p *placer) addTimerOn(a int, d ftrace.TimerStart, want cpumask.Mask, why reason) (cpumask.Mask, reason) {
	if !want.Test(d.CPU) && !p.km.Has(kernel.AddTimerOnPinned) && (d.CPU != a || addTimerOnLocal[d.Function]) {
		want.Set(d.CPU)
		why = reasonAddTimerOn
	}
	return want, why
}

// exitsWithin reports whether timer tm's timer_expire_exit follows event
// i within d ns of trace time.
func exitsWithin(evs []ftrace.Event, i int, tm uint64, d int64) bool {
	for k := i + 1; k < len(evs) && evs[k].TS-evs[i].TS <= d; k++ {
		if x, ok := evs[k].Data.(ftrace.TimerExpireExit); ok && x.Timer == tm {
			return true
		}
	}
	return false
}

// hrExitsWithin is exitsWithin for an hrtimer's callback.
func hrExitsWithin(evs []ftrace.Event, i int, hr uint64, d int64) bool {
	for k := i + 1; k < len(evs) && evs[k].TS-evs[i].TS <= d; k++ {
		if x, ok := evs[k].Data.(ftrace.HrtimerExpireExit); ok && x.Hrtimer == hr {
			return true
		}
	}
	return false
}

// hotplugThread reports whether task is a CPU's hotplug thread
// ("cpuhp/3", smpboot's cpuhp/%u) and which CPU's.
func hotplugThread(task string) (int, bool) {
	n, ok := strings.CutPrefix(task, "cpuhp/")
	if !ok {
		return 0, false
	}
	c, err := strconv.Atoi(n)
	return c, err == nil && c >= 0
}

// finishingOn returns the CPU whose base may still hold tm as running
// after its callback returned, or -1.
func finishingOn(finishing map[int]uint64, tm uint64) int {
	for c, t := range finishing {
		if t == tm {
			return c
		}
	}
	return -1
}

// wheelRule is where __mod_timer queues a timer that is not running: on
// the arming CPU if pinned, else where the kernel's rule puts it (since
// 6.9 the arming CPU too; before, get_nohz_timer_target's push).
func (p *placer) wheelRule(a int, ev ftrace.Event, d ftrace.TimerStart) (cpumask.Mask, reason) {
	if d.Flags&ftrace.TimerPinned != 0 {
		var m cpumask.Mask
		m.Set(a)
		return m, known
	}
	return p.wheel(a, ev)
}

// CheckPlacement runs the placement check over a trace of machine s.
func CheckPlacement(t *Trace, s Shape) (Counts, error) { return checkPlacement(newFacts(t), s) }

func checkPlacement(f *facts, s Shape) (Counts, error) {
	t := f.t
	c := f.t.counts()
	km, err := s.model()
	if err != nil {
		return c, err
	}
	iso, err := cmdline.ParseIsolation(s.Cmdline, s.CPUs)
	if err != nil {
		return c, fmt.Errorf("command line: %v", err)
	}
	all := cpumask.Range(0, s.CPUs-1)
	hk := all.AndNot(iso.NohzFull) // HK_TYPE_TIMER
	p := placer{km: km, hk: hk, domains: all.AndNot(iso.Domain), start: f.changesStart()}
	for _, ch := range s.At {
		if ch.Kind == ftrace.ChangeTimerMigration {
			p.sysctl = append(p.sysctl, ch)
		}
	}
	lost := map[int]bool{}
	// The wheel: which timer runs its callback where, and on whose base.
	remote := f.remoteExpiry()
	running := map[uint64]int{}
	// hrtimers: the start waiting for its expiry, and the ones running.
	type hstart struct {
		ev   ftrace.Event
		want cpumask.Mask
		why  reason
	}
	hpending := map[uint64]hstart{}
	hrunning := map[uint64]int{}
	// hfinishing: per CPU, an hrtimer whose callback returned (its exit
	// line) while its base may still hold it as running: __run_hrtimer
	// clears base->running only after it relocks the CPU's base, before
	// the CPU prints anything else.
	hfinishing := map[int]uint64{}
	// finishing: per CPU, a timer whose callback returned (its exit line)
	// while the base may still hold it as running: __run_timers clears
	// running_timer only after relocking, before the CPU prints anything
	// else (a vCPU stalled there keeps it so for milliseconds).
	finishing := map[int]uint64{}
	// hotplug: per CPU, the last line its hotplug thread printed.
	// hrtimers_cpu_dying moves the hrtimers of a CPU going offline to
	// another CPU, which then expires them: an hrtimer started before
	// such a line expires wherever that was.
	hotplug := map[int]int64{}
	for i := range t.Events {
		ev := &t.Events[i]
		if c, ok := hotplugThread(ev.Task); ok {
			hotplug[c] = ev.TS
		}
		base, _ := remote.Observe(ev)
		if len(hfinishing) > 0 {
			delete(hfinishing, ev.CPU)
		}
		if tm, ok := finishing[ev.CPU]; ok && len(finishing) > 0 {
			delete(finishing, ev.CPU)
			if _, again := ev.Data.(ftrace.TimerExpireEntry); !again || ev.Data.(ftrace.TimerExpireEntry).Timer != tm {
				delete(running, tm)
			}
		}
		switch d := ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			lost[ev.CPU] = true
		case ftrace.TimerInit:
			// A timer initialised anew (an on-stack timer of
			// schedule_timeout at an address its last use left
			// running on another CPU's base) is of the initialising
			// CPU's base (do_init_timer): __mod_timer's lock_timer_base
			// never finds the other base's running_timer.
			delete(running, d.Timer)
			for c, tm := range finishing {
				if tm == d.Timer {
					delete(finishing, c)
				}
			}
		case ftrace.TimerExpireEntry:
			running[d.Timer] = base
		case ftrace.TimerExpireExit:
			if _, ok := running[d.Timer]; ok {
				finishing[ev.CPU] = d.Timer
			}
		case ftrace.TimerStart:
			a := ev.CPU
			var want cpumask.Mask
			why := known
			base, ok := running[d.Timer]
			switch fin := finishingOn(finishing, d.Timer); {
			case d.Flags&ftrace.TimerPinned != 0 && d.CPU != a:
				// add_timer_on, which moves even a running timer:
				// the caller chose the CPU.
				continue
			case ok && base != a && d.Flags&ftrace.TimerPinned != 0 && d.CPU == a:
				// A pinned arm naming the arming CPU while the callback
				// runs on another base: add_timer_on (the workqueue's
				// delayed work on a housekeeping CPU, 6.9+, or a CPU
				// its caller named) moves even a running timer, a
				// mod_timer of a pinned timer leaves it on its base
				// (__mod_timer's running_timer check): which one armed
				// it, the line does not tell.
				want.Set(base)
				want.Set(a)
				why = reasonPinnedRunning
			case ok && fin >= 0 && fin != a:
				// Re-armed elsewhere as its callback is just done:
				// the base has normally cleared running_timer, and
				// the rule places it, unless its CPU stalled before
				// relocking (then it stays).
				want, why = p.wheelRule(a, *ev, d)
				if d.CPU == base {
					why = first(why, reasonFinishing)
					want.Set(base)
				}
				want, why = p.addTimerOn(a, d, want, why)
			case ok && base != a && exitsWithin(t.Events, i, d.Timer, skewNS):
				// Its callback's exit line, on the base's CPU, is
				// stamped with this line's time: which came first the
				// two CPUs' lines do not tell, and running_timer is
				// cleared only after the exit line.
				want, why = p.wheelRule(a, *ev, d)
				want.Set(base)
				why = first(why, reasonFinishing)
				want, why = p.addTimerOn(a, d, want, why)
			case ok:
				want.Set(base)
			case d.Flags&ftrace.TimerPinned != 0:
				want.Set(a)
			default:
				want, why = p.wheel(a, *ev)
				want, why = p.addTimerOn(a, d, want, why)
			}
			p.decide(&c, *ev, "timer_start", d.CPU, want, why, lost[a])
		case ftrace.HrtimerStart:
			a := ev.CPU
			var want cpumask.Mask
			why := known
			base, ok := hrunning[d.Hrtimer]
			fin := finishingOn(hfinishing, d.Hrtimer)
			switch {
			case ok && base != a && hrExitsWithin(t.Events, i, d.Hrtimer, skewNS), !ok && fin >= 0 && fin != a:
				// Its callback's exit line is printed, and its CPU has
				// printed nothing since, or the exit line is stamped
				// with this line's time: __run_hrtimer clears the
				// base's running timer only after the exit line, when
				// it relocks the base (a vCPU stalled there keeps it
				// so for milliseconds), and switch_hrtimer_base keeps
				// a running timer on its base, else it applies the
				// rule.
				if d.Mode.Pinned() {
					want.Set(a)
				} else {
					want, why = p.hrtimer(a, *ev)
				}
				if !ok {
					base = fin
				}
				want.Set(base)
				why = first(why, reasonFinishing)
			case ok:
				want.Set(base)
			case d.Mode.Pinned():
				want.Set(a)
			default:
				want, why = p.hrtimer(a, *ev)
			}
			hpending[d.Hrtimer] = hstart{*ev, want, why}
		case ftrace.HrtimerCancel:
			delete(hpending, d.Hrtimer)
		case ftrace.HrtimerExpireEntry:
			hrunning[d.Hrtimer] = ev.CPU
			if st, ok := hpending[d.Hrtimer]; ok {
				delete(hpending, d.Hrtimer)
				if at, ok := hotplug[st.ev.CPU]; ok && at > st.ev.TS && !st.want.Test(ev.CPU) {
					c.undeterminedBy(st.ev.Line, reasonHotplug)
					break
				}
				p.decide(&c, st.ev, "hrtimer_start", ev.CPU, st.want, st.why, lost[st.ev.CPU])
			}
		case ftrace.HrtimerExpireExit:
			if _, ok := hrunning[d.Hrtimer]; ok {
				hfinishing[ev.CPU] = d.Hrtimer
			}
			delete(hrunning, d.Hrtimer)
		}
	}
	return c, nil
}

// placer holds what the placement rules read.
type placer struct {
	km      kernel.Model
	hk      cpumask.Mask // HK_TYPE_TIMER: not nohz_full
	domains cpumask.Mask // CPUs in the scheduler domains (not isolcpus domain)
	start   int64
	sysctl  []ftrace.Change
}

// migration returns kernel.timer_migration at trace time ts, or why it is
// not known.
func (p *placer) migration(ts int64) (bool, reason) {
	on := true
	prev := p.start
	for _, ch := range p.sysctl {
		done := p.start + int64(ch.At) + int64(time.Millisecond)
		switch {
		case ts > done:
			on = ch.On
		case ts >= prev && ch.On != on:
			return on, reasonSysctl
		}
		prev = p.start + int64(ch.At)
	}
	return on, known
}

// nohzTarget is what get_nohz_timer_target may return for an arm on CPU a
// (busy: the arm comes from a task): the CPUs it may pick.
func (p *placer) nohzTarget(a int, busy bool) cpumask.Mask {
	var out cpumask.Mask
	if p.hk.Test(a) {
		if busy {
			out.Set(a)
			return out
		}
		out.Set(a) // the default when no other housekeeping CPU is busy
	}
	if !p.hk.Test(a) {
		// A busy housekeeping CPU of its domains, else
		// housekeeping_any_cpu: the one sched_numa_find_closest picks
		// by the arming CPU's number among the housekeeping CPUs, an
		// isolcpus= CPU out of every domain included.
		return p.hk
	}
	if p.domains.Test(a) {
		// Any busy housekeeping CPU of its domains.
		out = out.Or(p.domains.And(p.hk))
	}
	return out
}

// wheel is the rule of a non-pinned wheel timer armed on CPU a.
func (p *placer) wheel(a int, ev ftrace.Event) (cpumask.Mask, reason) {
	var local cpumask.Mask
	local.Set(a)
	if !p.km.Has(kernel.PushAtEnqueue) {
		return local, known
	}
	on, why := p.migration(ev.TS)
	if why != known {
		return p.nohzTarget(a, ev.PID != 0).Or(local), why
	}
	if !on {
		return local, known
	}
	return p.nohzTarget(a, ev.PID != 0), known
}

// hrtimer is the rule of a non-pinned hrtimer started on CPU a.
func (p *placer) hrtimer(a int, ev ftrace.Event) (cpumask.Mask, reason) {
	var local cpumask.Mask
	local.Set(a)
	on, why := p.migration(ev.TS)
	if why != known {
		return p.nohzTarget(a, ev.PID != 0).Or(local), why
	}
	if !on {
		return local, known
	}
	// hrtimer_check_target (and from 7.1 a timer first on its CPU) may
	// keep it here whatever the target.
	return p.nohzTarget(a, ev.PID != 0).Or(local), known
}

// decide counts one placement: the kernel put the timer on got.
func (p *placer) decide(c *Counts, ev ftrace.Event, event string, got int, want cpumask.Mask, why reason, lost bool) {
	switch {
	case want.Test(got) && want.Weight() == 1 && why == known:
		c.match(ev.Line)
	case want.Test(got) && why != known:
		c.undeterminedBy(ev.Line, why)
	case want.Test(got):
		c.undeterminedBy(ev.Line, reasonPushTarget)
	case lost:
		c.undeterminedBy(ev.Line, reasonLost) // a line that would explain it may be lost
	default:
		c.mismatch(Mismatch{Line: ev.Line, Event: event + " placement",
			Kernel: fmt.Sprintf("armed on CPU %d, queued on CPU %d", ev.CPU, got),
			Model:  fmt.Sprintf("queued on CPU %s (%s)", want, p.rule(ev, event))})
	}
}

// rule names the rule that applied, for a mismatch.
func (p *placer) rule(ev ftrace.Event, event string) string {
	on, _ := p.migration(ev.TS)
	switch {
	case event == "timer_start" && !p.km.Has(kernel.PushAtEnqueue):
		return "since 6.9 a wheel timer is queued where it is armed (b2cf7507e186)"
	case !on:
		return "timer_migration=0"
	case event == "timer_start":
		return "push at enqueue: get_nohz_timer_target"
	}
	return "get_nohz_timer_target or the arming CPU"
}
