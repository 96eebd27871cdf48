package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// The nextevt check.
//
// When a CPU goes idle (tmigr_cpu_deactivate) or re-evaluates its sleep
// with its base already idle (tmigr_cpu_new_timer), the timer code hands
// the hierarchy its first global timer, nextevt, which the kernel prints in
// tmigr_cpu_idle and tmigr_cpu_new_timer_idle. The tmigr check takes the
// printed value as its input; this check holds it against our own timer
// code: the recording's timer_start, timer_cancel and timer_expire_entry
// lines rebuild every CPU's LOCAL, GLOBAL and DEF bases in a cpu.Set, each
// timer in the bucket the kernel printed (cpu.Set.Restore), and at every
// such line cpu.Set.NextEvents (fetch_next_timer_interrupt) computes what
// the CPU would hand the hierarchy, which tick.CPU passes on: its Global
// event (KTIME_MAX when the global wheel is empty, when the local wheel's
// first timer is on the same jiffy or earlier, or for deferrable timers,
// which the DEF base keeps out).
//
// The value does not depend on where in its jiffy the CPU's snapshot was
// taken: a line is printed only when the next event is more than a jiffy
// away, and then nextevt is ns(B) for the bucket expiry B of the first
// global timer, ns being the clock of clock.go. Where that clock's offset
// is not known, or a timer armed before the recording (its first line is a
// cancel or an expiry) may still be pending on the CPU and could explain a
// difference, a difference is undetermined, not a mismatch; so is one on a
// CPU whose buffer lost events ("events lost": a timer line of that CPU
// may be missing).

// CheckNextevt runs the nextevt check over a trace of the machine s.
func CheckNextevt(t *Trace, s Shape) (Counts, error) {
	var c Counts
	if s.CPUs <= 0 {
		return c, fmt.Errorf("the trace does not say how many CPUs the machine has; give it with --cpus")
	}
	nodeOf := make([]int, s.CPUs)
	set, err := cpu.New(cpu.Config{NodeOf: nodeOf, HZ: s.HZ, Policy: cpu.None})
	if err != nil {
		return c, err
	}
	start := firstJiffies(t)
	for i := range s.CPUs {
		if err := set.Online(i, start); err != nil {
			return c, err
		}
	}
	clk := newClock(t, s.HZ)
	pre := preexisting(t, clk)
	end := lastJiffies(t)
	timers := map[uint64]*wheel.Timer{}
	timer := func(p uint64) *wheel.Timer {
		tm := timers[p]
		if tm == nil {
			tm = new(wheel.Timer)
			timers[p] = tm
		}
		return tm
	}
	lost := make([]bool, s.CPUs) // CPUs whose buffer lost events
	for i, ev := range t.Events {
		switch p := ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			if ev.CPU >= 0 && ev.CPU < s.CPUs {
				lost[ev.CPU] = true
			}
		case ftrace.TimerStart:
			if p.CPU >= s.CPUs {
				return c, fmt.Errorf("line %d: timer_start on CPU %d of a %d-CPU machine", ev.Line, p.CPU, s.CPUs)
			}
			flags := uint32(p.Flags) & (cpu.Deferrable | cpu.Pinned)
			set.Restore(timer(p.Timer), p.CPU, flags, p.Expires, p.Now(), p.Idx, p.BucketExpiry)
		case ftrace.TimerCancel:
			if tm := timers[p.Timer]; tm != nil {
				set.Del(tm)
			}
		case ftrace.TimerExpireEntry:
			if tm := timers[p.Timer]; tm != nil {
				set.Del(tm)
			}
		case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			kind, c0, printed := hier.EvCPUIdle, 0, int64(0)
			if q, ok := p.(ftrace.TmigrCPUIdle); ok {
				c0, printed = q.CPU, q.NextEvt
			} else {
				q := p.(ftrace.TmigrCPUNewTimerIdle)
				kind, c0, printed = hier.EvCPUNewTimerIdle, q.CPU, q.NextEvt
			}
			// The snapshot's jiffies: nextevt does not depend on it once
			// the next event is more than a jiffy away, which the kernel
			// printing the line says; the lowest the trace allows is the
			// strictest test of that.
			basej := start
			if lo, _, hasLo, _ := clk.bounds(i, ev.CPU); hasLo {
				basej = lo
			}
			checkNextevt(&c, ev, i, kind, c0, printed, set, clk, basej, start, end, pre, c0 >= 0 && c0 < len(lost) && lost[c0])
		}
	}
	return c, nil
}

// checkNextevt checks one printed nextevt of CPU c against our timer code.
func checkNextevt(cnt *Counts, ev ftrace.Event, i int, kind hier.EventKind, c int, printed int64,
	set *cpu.Set, clk *clock, basej, start, end uint64, pre []preTimer, lost bool) {
	if c < 0 || c >= set.NumCPUs() {
		cnt.mismatch(Mismatch{Line: ev.Line, Event: kind.String(), Kernel: fmt.Sprintf("cpu=%d", c), Model: "no such CPU"})
		return
	}
	if !clk.known {
		cnt.undetermined("time base unknown")
		return
	}
	evs := set.NextEvents(c, cpu.Snapshot{J: basej, M: clk.ns(basej)})
	model := evs.Global
	idle := wheel.After(evs.Next, basej+1)
	if idle && model == printed {
		cnt.match()
		return
	}
	// A timer pending since before the recording began, which the model
	// does not hold, explains the kernel's value if it could be first:
	// global and due at the printed event, or local and due no later than
	// the model's global event (which makes nextevt KTIME_MAX). One that
	// outlives the recording shows no line at all, so it explains a
	// nextevt beyond the recording's end. One that expires shows its bucket
	// (and its CPU); one that is cancelled does not, but it had not expired
	// by then, so its bucket is no earlier than the jiffy before.
	if lost {
		// Its buffer lost events: timers started or removed in the gap
		// are not in our bases.
		cnt.undetermined(whyLost)
		return
	}
	if printed != cpu.KtimeMax && printed > clk.ns(end) && (model == cpu.KtimeMax || model > printed) {
		cnt.undetermined("timer armed before the recording, pending beyond its end")
		return
	}
	if printed != cpu.KtimeMax && printed < clk.ns(start) && (model == cpu.KtimeMax || model > printed) {
		// Due before the first jiffy the trace shows, and pending on a
		// CPU whose lines the trace clock may put too late.
		cnt.undetermined("timer due before the recording began")
		return
	}
	for _, p := range pre {
		if i >= p.until || p.deferrable || p.cpu >= 0 && p.cpu != c {
			continue
		}
		earliest := clk.ns(p.bucket) // the earliest event it can stand for
		if !p.revealed {
			earliest = clk.ns(p.atJ - 1)
		}
		switch {
		case printed == cpu.KtimeMax && (model == cpu.KtimeMax || earliest <= model),
			printed != cpu.KtimeMax && (p.revealed && printed == earliest || !p.revealed && printed >= earliest):
			cnt.undetermined("timer armed before the recording")
			return
		}
	}
	m := fmtNS(model)
	if !idle {
		m = fmt.Sprintf("next event at jiffy %d, not more than a jiffy after %d: no %s", evs.Next, basej, kind)
	}
	cnt.mismatch(Mismatch{Line: ev.Line, Event: kind.String() + " nextevt", Kernel: fmtNS(printed), Model: m})
}

// preTimer is a timer that was pending when the recording began: its first
// line is a cancel or an expiry. It may sit on CPU cpu's bases (-1: any
// CPU's) until event index until.
type preTimer struct {
	until      int
	cpu        int
	deferrable bool
	bucket     uint64 // its bucket's expiry, if revealed (it expired)
	revealed   bool
	atJ        uint64 // not revealed: the jiffies when it was cancelled, at least
}

// preexisting finds the timers pending when the recording began. An
// expiry outside a remote round names the CPU whose base it sat on; a
// later start of the same timer tells whether it is deferrable (the flags
// stay with the timer).
func preexisting(t *Trace, clk *clock) []preTimer {
	seen := map[uint64]bool{}
	found := map[uint64]int{} // timer -> index in out
	var out []preTimer
	remote := map[int]int{} // handler CPU -> the CPU it expires
	for i, ev := range t.Events {
		switch p := ev.Data.(type) {
		case ftrace.TmigrHandleRemoteCPU:
			remote[ev.CPU] = p.CPU
		case ftrace.TmigrHandleRemote, ftrace.TmigrUpdateEvents:
			delete(remote, ev.CPU)
		case ftrace.TimerInit:
			seen[p.Timer] = true
		case ftrace.TimerStart:
			if k, ok := found[p.Timer]; ok && !seen[p.Timer] {
				out[k].deferrable = p.Flags&ftrace.TimerDeferrable != 0
			}
			seen[p.Timer] = true
		case ftrace.TimerCancel:
			if seen[p.Timer] {
				break
			}
			seen[p.Timer] = true
			found[p.Timer] = len(out)
			if e, ok := nextOnCPU(t.Events, i).(ftrace.TimerExpireEntry); ok && e.Timer == p.Timer {
				// The cancel that detaches a timer for its expiry
				// (expire_timers): the expiry reveals its bucket.
				out = append(out, preTimer{until: i, cpu: expiredOn(ev.CPU, remote), bucket: e.BaseClk, revealed: true})
				break
			}
			var j uint64
			if lo, _, ok, _ := clk.bounds(i, ev.CPU); ok {
				j = lo
			}
			out = append(out, preTimer{until: i, cpu: -1, atJ: j})
		case ftrace.TimerExpireEntry:
			if !seen[p.Timer] {
				seen[p.Timer] = true
				found[p.Timer] = len(out)
				out = append(out, preTimer{until: i, cpu: expiredOn(ev.CPU, remote), bucket: p.BaseClk, revealed: true})
			}
		}
	}
	return out
}

// expiredOn returns the CPU whose base a timer expiring on handler sat on:
// the CPU it is expiring remotely, else itself.
func expiredOn(handler int, remote map[int]int) int {
	if target, ok := remote[handler]; ok {
		return target
	}
	return handler
}

// lastJiffies is the last jiffies value the trace shows (0 if none).
func lastJiffies(t *Trace) uint64 {
	var j uint64
	for _, ev := range t.Events {
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			j = later(j, p.Now())
		case ftrace.TimerExpireEntry:
			j = later(j, p.Now)
		}
	}
	return j
}

// firstJiffies is the first jiffies value the trace shows (0 if none).
func firstJiffies(t *Trace) uint64 {
	for _, ev := range t.Events {
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			return p.Now()
		case ftrace.TimerExpireEntry:
			return p.Now
		}
	}
	return 0
}

func later(a, b uint64) uint64 {
	if wheel.After(b, a) {
		return b
	}
	return a
}
