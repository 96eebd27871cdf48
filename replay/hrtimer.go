package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hrtimer"
)

// The hrtimer check: the expiry context of sleepers.
//
// A task that sleeps (clock_nanosleep, schedule_hrtimeout) arms an hrtimer
// whose function is hrtimer_wakeup. On a PREEMPT_RT kernel every hrtimer not
// set up with HRTIMER_MODE_HARD expires in softirq context, in the ktimers
// thread, which real-time tasks preempt; since 2019 the sleeper of an RT or
// deadline task is made hard, any other's stays soft (seed 003). The kernel
// prints the decision twice:
//
//	hrtimer_init:  mode=REL        what the task asked for
//	hrtimer_start: mode=REL|HARD   hrtimer_sleeper_start_expires adds HARD to a hard sleeper
//	hrtimer_expire_entry           in hardirq context ('h' in the flags) or in
//	                               the softirq thread ('s')
//
// so a soft sleeper on RT starts with plain REL and expires with 's'. The
// check gives package hrtimer the task's policy and the mode it asked for,
// and compares what SetupSleeper and SleeperStartMode answer with the
// start's mode and with the context of the expiry.
//
// The policy comes from the recording's machine line: the guest program of
// "tmigr lab record" (comm tmigr-guest) runs one pinned sleeper on each CPU
// of sleepers=, SCHED_FIFO on the CPUs of the note's fifo-sleepers=, and
// its own runtime threads as SCHED_OTHER on the CPUs without a load (see
// Load.Policy). Every other task's policy is unknown; its sleepers are
// undetermined, unless the answer is the same for every policy (a kernel
// without PREEMPT_RT).

// guestComm is the comm of "tmigr lab record"'s guest program, and
// sleeperComm that of its sleepers' threads, which name themselves so in
// recordings made since 2026-12-06 (before, they were tmigr-guest too).
const (
	guestComm   = "tmigr-guest"
	sleeperComm = "tmigr-sleeper"
)

// Load is what a recording's "# machine:" line says about the load its
// guest ran (see package lab): the busy and sleeping CPUs, which sleepers
// were SCHED_FIFO, their period, and whether the kernel was PREEMPT_RT. The
// note carries the last three:
//
//	(QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms)
//	(QEMU TCG; period=3ms absolute)
type Load struct {
	Busy, Sleepers cpumask.Mask
	FIFOSleepers   cpumask.Mask  // a subset of Sleepers
	Period         time.Duration // 0 when the note does not say
	Absolute       bool          // the sleepers slept to absolute deadlines
	PreemptRT      bool
	// named: the sleepers' threads are named sleeperComm in the trace,
	// so the guest's other threads, the runtime's and the timer loads',
	// are told apart from them on a shared CPU.
	named bool
	// shared: without the names, the CPUs where more than one of the
	// guest's threads slept: which of them is the sleeper the trace does
	// not tell.
	shared cpumask.Mask
	// offline: the machine line's hotplug offlines. A pinned sleeper of
	// a CPU taken offline runs on another CPU from then on (the
	// scheduler breaks its affinity, select_fallback_rq), where the CPU
	// no longer tells whose sleeper a task is.
	offline []offlineChange
}

// offlineChange is a hotplug offline of the machine line and when it may
// have begun (begunAfter, as the tmigr check reads every change). Taking a
// CPU down moves its tasks early in the teardown, and under TCG the
// teardown takes up to hundreds of milliseconds.
type offlineChange struct {
	ftrace.Change
	from time.Duration // since the recording started, like At
}

// LoadOf reads the load from a machine line. An item of the note that
// names a load parameter but cannot be read is an error; other items
// ("QEMU TCG", "KVM guest") are free text.
func LoadOf(m *ftrace.Machine) (Load, error) {
	l := Load{Busy: m.Busy, Sleepers: m.Sleepers}
	for i, c := range m.At {
		if c.Kind == ftrace.ChangeOffline {
			l.offline = append(l.offline, offlineChange{c, begunAfter(m.At, i)})
		}
	}
	for _, item := range strings.Split(m.Note, ";") {
		item = strings.TrimSpace(item)
		switch {
		case item == "PREEMPT_RT":
			l.PreemptRT = true
		case strings.HasPrefix(item, "fifo-sleepers="):
			v := strings.TrimPrefix(item, "fifo-sleepers=")
			f, err := cpumask.ParseFor(v, m.CPUs)
			if err != nil {
				return Load{}, fmt.Errorf("machine note: fifo-sleepers=%q: %v", v, err)
			}
			if !f.Subset(&m.Sleepers) {
				return Load{}, fmt.Errorf("machine note: fifo-sleepers=%s names CPUs %s that are not in sleepers=%s", f, f.AndNot(m.Sleepers), m.Sleepers)
			}
			l.FIFOSleepers = f
		case strings.HasPrefix(item, "period="):
			v := strings.TrimPrefix(item, "period=")
			v, abs := strings.CutSuffix(v, " absolute")
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return Load{}, fmt.Errorf("machine note: period=%q is not a positive duration", v)
			}
			l.Period, l.Absolute = d, abs
		}
	}
	return l, nil
}

// Policy returns the scheduling policy of the task that ran ev, as far as
// the load tells it. The guest program pins one thread to each loaded CPU
// and every other thread of its own (the Go runtime's) to the CPUs without
// a load, and makes only the SCHED_FIFO sleepers real-time: so the guest
// program on a sleeper CPU is that CPU's sleeper, and on a CPU without a
// load it is a SCHED_OTHER runtime thread. ok is false for any other task
// (kernel threads, the init script's commands, the guest on a busy CPU).
//
// Where the sleepers' threads have a name of their own (Load.named), the
// guest's threads named tmigr-guest are never sleepers: when every CPU has
// a load, the runtime's threads share CPU 0 with its sleeper. They are
// SCHED_OTHER, as are the timer loads' threads.
func (l *Load) Policy(ev *ftrace.Event) (p hrtimer.Policy, ok bool) {
	switch {
	case ev.Task == sleeperComm && l.Sleepers.Test(ev.CPU) && l.FIFOSleepers.Test(ev.CPU):
		return hrtimer.SchedFIFO, true
	case ev.Task == sleeperComm && l.Sleepers.Test(ev.CPU):
		return hrtimer.SchedOther, true
	case ev.Task == guestComm && l.named:
		// The busy loop never sleeps: on its CPU too, the guest's
		// thread that sleeps is the runtime's.
		return hrtimer.SchedOther, true
	case ev.Task != guestComm || l.Busy.Test(ev.CPU):
		return 0, false
	case l.shared.Test(ev.CPU):
		return 0, false
	case l.FIFOSleepers.Test(ev.CPU):
		return hrtimer.SchedFIFO, true
	}
	return hrtimer.SchedOther, true
}

// preemptRT reports whether the trace is of a PREEMPT_RT kernel: its note
// says so, or it shows the ktimers threads that only such a kernel has.
func (l *Load) preemptRT(t *Trace) bool {
	if l.PreemptRT {
		return true
	}
	for i := range t.Events {
		if strings.HasPrefix(t.Events[i].Task, "ktimers/") {
			return true
		}
	}
	return false
}

// sleeperDecision is what the model decided for one sleeper's start.
type sleeperDecision struct {
	line       int
	determined bool
	why        reason // the undetermined reason
	soft       bool
	who        string // "SCHED_FIFO sleeper (tmigr-guest pid 234 on CPU 4)"
}

// sleeperInit is what an hrtimer_init/hrtimer_setup line said.
type sleeperInit struct {
	mode  hrtimer.Mode
	clock hrtimer.Clock
}

// The reasons of the hrtimer check, beside whyLost.
const (
	whyTwoCPUs       = "sleeper task seen on two CPUs"
	whyMode          = "sleeper mode the model cannot set up"
	whyPolicy        = "sleeper of a task whose policy the recording does not tell"
	whyNoStartMode   = "start mode not in the trace (trace-cmd's hrtimer plugin prints none)"
	whyStartedBefore = "sleeper started before the recording"
	whyNoContext     = "expiry context not in the trace (no irq-info flags)"
	whyMovedSleeper  = "sleeper on a CPU where one from a CPU taken offline may run"
)

// movedHere reports whether a sleeper of another CPU, whose policy is not
// p, may run on cpu at trace time ts: that CPU, one of the load's sleeper
// CPUs, may have begun going offline before (since changes counted from
// base). A task seen sleeping on cpu before any such offline is cpu's own.
func (l *Load) movedHere(cpu int, p hrtimer.Policy, ts, base int64, firstSeen int64) bool {
	for _, c := range l.offline {
		at := base + int64(c.from) - changeSlack
		if c.CPU == cpu || !l.Sleepers.Test(c.CPU) || ts < at || firstSeen < at {
			continue
		}
		q := hrtimer.SchedOther
		if l.FIFOSleepers.Test(c.CPU) {
			q = hrtimer.SchedFIFO
		}
		if q != p {
			return true
		}
	}
	return false
}

// CheckHrtimer checks every hrtimer_start of a sleeper (function
// hrtimer_wakeup) and the expiry of every sleeper started in the trace
// against package hrtimer's sleeper rule (hrtimer.SleepersByPolicy) for the
// kernel the trace is of; see the comment at the top of this file. It
// returns nil when the trace holds no sleeper start.
func CheckHrtimer(t *Trace, l Load) (*Counts, error) { return checkHrtimer(newFacts(t), l) }

func checkHrtimer(f *facts, l Load) (*Counts, error) {
	t := f.t
	sleptOn := map[int]int{} // a CPU's first guest thread that slept there
	sleeps := false
	for _, i := range f.index().having(kindsOf(kHrtimer)) {
		ev := &t.Events[i]
		d, ok := ev.Data.(ftrace.HrtimerStart)
		if !ok || d.Function != "hrtimer_wakeup" {
			continue
		}
		sleeps = true
		if ev.Task == guestComm && ev.CPU >= 0 && ev.CPU < cpumask.MaxCPUs {
			if pid, seen := sleptOn[ev.CPU]; !seen {
				sleptOn[ev.CPU] = ev.PID
			} else if pid != ev.PID {
				l.shared.Set(ev.CPU)
			}
		}
	}
	if !sleeps {
		return nil, nil // no sleeper starts: nothing to check
	}
	for i := range t.Events {
		if t.Events[i].Task == sleeperComm {
			l.named = true
			break
		}
	}
	cfg := hrtimer.Config{PreemptRT: l.preemptRT(t), Sleepers: hrtimer.SleepersByPolicy}
	base, err := hrtimer.NewCPUBase(0, cfg)
	if err != nil {
		return nil, fmt.Errorf("hrtimer check: %v", err)
	}
	c := f.t.counts()
	ok := false
	// model returns the mode the sleeper starts with and whether it is
	// soft, for a task of policy p that asked for mode.
	model := func(clock hrtimer.Clock, mode hrtimer.Mode, p hrtimer.Policy) (hrtimer.Mode, bool, error) {
		var tm hrtimer.Timer
		if err := base.SetupSleeper(&tm, clock, mode, p); err != nil {
			return 0, false, err
		}
		return tm.SleeperStartMode(mode), tm.IsSoft(), nil
	}
	defaultMode := hrtimer.ModeRel
	if l.Absolute {
		defaultMode = hrtimer.ModeAbs
	}
	inits := map[uint64]sleeperInit{}
	pending := map[uint64]*sleeperDecision{}
	cpuOf := map[int]int{}       // a sleeper task's CPU, by pid
	firstSeen := map[int]int64{} // when a sleeper task first slept, by pid
	changesAt := f.changesStart()
	lost := map[int]bool{} // CPUs whose buffer lost events
	for i := range t.Events {
		ev := &t.Events[i]
		switch d := ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			lost[ev.CPU] = true
		case ftrace.HrtimerInit:
			inits[d.Hrtimer] = initOf(d.ClockID, d.Mode)
			delete(pending, d.Hrtimer)
		case ftrace.HrtimerSetup:
			inits[d.Hrtimer] = initOf(d.ClockID, d.Mode)
			delete(pending, d.Hrtimer)
		case ftrace.HrtimerCancel:
			delete(pending, d.Hrtimer)
		case ftrace.HrtimerStart:
			if d.Function != "hrtimer_wakeup" {
				continue
			}
			ok = true
			in, seen := inits[d.Hrtimer]
			dec := &sleeperDecision{line: ev.Line}
			pending[d.Hrtimer] = dec
			if !seen {
				// Set up before the recording: the start prints the
				// mode the task asked for, with at most HARD added
				// (hrtimer_sleeper_start_expires), which is the
				// decision checked; without a printed mode, the load's.
				in = sleeperInit{mode: defaultMode, clock: hrtimer.Monotonic}
				if !d.NoMode {
					in.mode = hrtimer.Mode(d.Mode &^ (ftrace.HrtimerModeHard | ftrace.HrtimerModeSoft))
				}
			}
			// The policies the task may have: the one the load tells, or
			// any when it does not.
			policies := []hrtimer.Policy{hrtimer.SchedOther, hrtimer.SchedFIFO}
			p, known := l.Policy(ev)
			if _, seen := cpuOf[ev.PID]; !seen && !known && ev.Task == sleeperComm {
				// A sleeper's thread first seen where the load tells
				// no policy has moved there (a CPU taken offline):
				// seen later on a sleeper CPU, it is not that CPU's.
				cpuOf[ev.PID] = ev.CPU
			}
			if known {
				if prev, moved := cpuOf[ev.PID]; moved && prev != ev.CPU {
					dec.why = reasonTwoCPUs
					c.undeterminedBy(ev.Line, dec.why)
					continue
				}
				cpuOf[ev.PID] = ev.CPU
				ts, seen := firstSeen[ev.PID]
				if !seen {
					ts = ev.TS
					firstSeen[ev.PID] = ts
				}
				if ev.Task == sleeperComm && l.movedHere(ev.CPU, p, ev.TS, changesAt, ts) {
					dec.why = reasonMovedSleeper
					c.undeterminedBy(ev.Line, dec.why)
					continue
				}
				policies = policies[:0]
				policies = append(policies, p)
				dec.who = fmt.Sprintf("%s sleeper (%s pid %d on CPU %d)", p, ev.Task, ev.PID, ev.CPU)
			} else {
				dec.who = fmt.Sprintf("sleeper of %s pid %d on CPU %d, policy unknown", ev.Task, ev.PID, ev.CPU)
			}
			var mode hrtimer.Mode
			agree := true
			for k, p := range policies {
				m, soft, err := model(in.clock, in.mode, p)
				if err != nil {
					dec.why = reasonMode
					agree = false
					break
				}
				if k > 0 && (m != mode || soft != dec.soft) {
					agree = false
					dec.why = reasonPolicy
					break
				}
				mode, dec.soft = m, soft
			}
			if !agree {
				c.undeterminedBy(ev.Line, dec.why)
				continue
			}
			if kernel := d.Mode.String(); kernel != mode.String() && !seen && lost[ev.CPU] {
				// Its setup line, which says how it was set up, may be
				// among the lost events.
				dec.why = reasonLost
				c.undeterminedBy(ev.Line, dec.why)
				continue
			}
			dec.determined = true
			if d.NoMode {
				// trace-cmd's hrtimer plugin prints no mode; the expiry
				// context (below) is still checked.
				c.undeterminedBy(ev.Line, reasonNoStartMode)
				continue
			}
			if kernel := d.Mode.String(); kernel != mode.String() {
				c.mismatch(Mismatch{Line: ev.Line, Event: "hrtimer_start",
					Kernel: "mode=" + kernel,
					Model:  fmt.Sprintf("mode=%s for a %s that asked for %s", mode, dec.who, in.mode)})
				continue
			}
			c.match(ev.Line)
		case ftrace.HrtimerExpireEntry:
			if d.Function != "hrtimer_wakeup" {
				continue
			}
			dec := pending[d.Hrtimer]
			delete(pending, d.Hrtimer)
			switch {
			case dec == nil:
				c.undeterminedBy(ev.Line, reasonStartedBefore)
				continue
			case !dec.determined:
				c.undeterminedBy(ev.Line, dec.why)
				continue
			case ev.Flags == "":
				c.undeterminedBy(ev.Line, reasonNoContext)
				continue
			}
			kernelSoft := !ev.Flags.HardIRQ() && ev.Flags.SoftIRQ()
			if !ev.Flags.HardIRQ() && !ev.Flags.SoftIRQ() {
				c.mismatch(Mismatch{Line: ev.Line, Event: "hrtimer_expire_entry",
					Kernel: fmt.Sprintf("expired outside interrupt context (flags %s)", ev.Flags),
					Model:  fmt.Sprintf("%s expiry of the %s started at line %d", hardSoft(dec.soft), dec.who, dec.line)})
				continue
			}
			if kernelSoft != dec.soft {
				c.mismatch(Mismatch{Line: ev.Line, Event: "hrtimer_expire_entry",
					Kernel: fmt.Sprintf("%s expiry (flags %s, task %s)", hardSoft(kernelSoft), ev.Flags, ev.Task),
					Model:  fmt.Sprintf("%s expiry of the %s started at line %d", hardSoft(dec.soft), dec.who, dec.line)})
				continue
			}
			c.match(ev.Line)
		}
	}
	if !ok {
		return nil, nil
	}
	return &c, nil
}

func initOf(clock ftrace.ClockID, mode ftrace.HrtimerMode) sleeperInit {
	in := sleeperInit{mode: hrtimer.Mode(mode), clock: hrtimer.Monotonic}
	switch clock {
	case ftrace.ClockRealtime:
		in.clock = hrtimer.Realtime
	case ftrace.ClockBoottime:
		in.clock = hrtimer.Boottime
	case ftrace.ClockTAI:
		in.clock = hrtimer.TAI
	}
	if mode > 0xff {
		in.mode = 0xff // not a mode: SetupSleeper refuses it
	}
	return in
}

func hardSoft(soft bool) string {
	if soft {
		return "soft (softirq)"
	}
	return "hard (hardirq)"
}
