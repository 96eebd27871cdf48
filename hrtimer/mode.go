package hrtimer

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode is enum hrtimer_mode: a set of bits given at setup and at start.
type Mode uint8

// The mode bits, with the kernel's values.
const (
	ModeAbs    Mode = 0x0 // the time is absolute
	ModeRel    Mode = 0x1 // the time is relative to the clock's now
	ModePinned Mode = 0x2 // start: keep the timer on the starting CPU
	ModeSoft   Mode = 0x4 // setup: expire in softirq context
	ModeHard   Mode = 0x8 // setup: expire in hardirq context, even on PREEMPT_RT
)

const modeMask = ModeRel | ModePinned | ModeSoft | ModeHard

// modeNames are the twelve values the kernel's trace events print
// (decode_hrtimer_mode); any other value prints as hex, as __print_symbolic
// does.
var modeNames = map[Mode]string{
	ModeAbs:                         "ABS",
	ModeRel:                         "REL",
	ModeAbs | ModePinned:            "ABS|PINNED",
	ModeRel | ModePinned:            "REL|PINNED",
	ModeAbs | ModeSoft:              "ABS|SOFT",
	ModeRel | ModeSoft:              "REL|SOFT",
	ModeAbs | ModePinned | ModeSoft: "ABS|PINNED|SOFT",
	ModeRel | ModePinned | ModeSoft: "REL|PINNED|SOFT",
	ModeAbs | ModeHard:              "ABS|HARD",
	ModeRel | ModeHard:              "REL|HARD",
	ModeAbs | ModePinned | ModeHard: "ABS|PINNED|HARD",
	ModeRel | ModePinned | ModeHard: "REL|PINNED|HARD",
}

// String formats m as the kernel's hrtimer trace events do: "ABS",
// "REL|PINNED|HARD", or "0xc" for a value outside the table.
func (m Mode) String() string {
	if s, ok := modeNames[m]; ok {
		return s
	}
	return "0x" + strconv.FormatUint(uint64(m), 16)
}

// ParseMode reads a mode as printed by String or by the kernel's trace
// events. The flag names may come in any order but ABS or REL must appear
// exactly once; a hex value ("0x9") is accepted too.
func ParseMode(s string) (Mode, error) {
	if strings.HasPrefix(s, "0x") {
		v, err := strconv.ParseUint(s[2:], 16, 8)
		if err != nil || Mode(v)&^modeMask != 0 {
			return 0, fmt.Errorf("hrtimer: bad mode %q: not a hex value of the bits 0x1-0x8", s)
		}
		return Mode(v), nil
	}
	var m Mode
	base := 0
	for _, f := range strings.Split(s, "|") {
		var bit Mode
		switch f {
		case "ABS":
			base++
			continue
		case "REL":
			base++
			bit = ModeRel
		case "PINNED":
			bit = ModePinned
		case "SOFT":
			bit = ModeSoft
		case "HARD":
			bit = ModeHard
		default:
			return 0, fmt.Errorf("hrtimer: bad mode %q: unknown flag %q (want ABS, REL, PINNED, SOFT, HARD)", s, f)
		}
		if m&bit != 0 {
			return 0, fmt.Errorf("hrtimer: bad mode %q: %s given twice", s, f)
		}
		m |= bit
	}
	if base != 1 {
		return 0, fmt.Errorf("hrtimer: bad mode %q: need exactly one of ABS and REL", s)
	}
	return m, nil
}

// Clock is the clock a timer runs on. Each has a hard and a soft clock base
// on every CPU; base index = clock (hard) or 4 + clock (soft), and passes
// visit bases in index order.
type Clock uint8

// The clocks, in the kernel's base order (HRTIMER_BASE_*).
const (
	Monotonic Clock = iota
	Realtime
	Boottime
	TAI
	numClocks
)

var clockNames = [numClocks]string{"CLOCK_MONOTONIC", "CLOCK_REALTIME", "CLOCK_BOOTTIME", "CLOCK_TAI"}

// String returns the kernel's name, e.g. "CLOCK_MONOTONIC".
func (c Clock) String() string {
	if c < numClocks {
		return clockNames[c]
	}
	return "CLOCK_" + strconv.Itoa(int(c))
}

// ParseClock reads a clock name as the kernel's trace events print it
// ("CLOCK_MONOTONIC"); the "CLOCK_" prefix is optional.
func ParseClock(s string) (Clock, error) {
	n := strings.TrimPrefix(s, "CLOCK_")
	for c, name := range clockNames {
		if name[len("CLOCK_"):] == n {
			return Clock(c), nil
		}
	}
	return 0, fmt.Errorf("hrtimer: bad clock %q (want CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI)", s)
}

// Action is what a callback returns: enum hrtimer_restart.
type Action uint8

const (
	// NoRestart leaves the timer inactive (HRTIMER_NORESTART).
	NoRestart Action = 0
	// Restart requeues the timer at its current expiry, which the callback
	// normally moved on with Forward (HRTIMER_RESTART). It is ignored when
	// someone restarted the timer while its callback ran.
	Restart Action = 1
)

func (a Action) String() string {
	if a == NoRestart {
		return "NORESTART"
	}
	return "RESTART"
}

// Policy is the scheduling class of the task that sets up a sleeper.
type Policy uint8

// The Linux scheduling policies. SCHED_BATCH and SCHED_IDLE are "other" for
// timer purposes.
const (
	SchedOther Policy = iota
	SchedFIFO
	SchedRR
	SchedBatch
	SchedIdle
	SchedDeadline
)

var policyNames = [...]string{"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH", "SCHED_IDLE", "SCHED_DEADLINE"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "SCHED_" + strconv.Itoa(int(p))
}

// RTOrDL is rt_or_dl_task_policy: SCHED_FIFO, SCHED_RR or SCHED_DEADLINE.
func (p Policy) RTOrDL() bool {
	return p == SchedFIFO || p == SchedRR || p == SchedDeadline
}

// SleeperRule chooses how a PREEMPT_RT kernel picks the expiry context of
// sleepers (nanosleep, schedule_hrtimeout) that did not ask for SOFT. It has
// no effect on a non-RT kernel, where sleepers expire as requested (hard,
// for nanosleep).
type SleeperRule uint8

const (
	// SleepersByPolicy is the rule since the 2017 RT patch "Use softirq
	// based wakeups for non-RT threads" and mainline commit 1842f5a427f5
	// (2019): RT and deadline tasks sleep on hard timers, every other task
	// on a soft one, so a crowd of SCHED_OTHER sleepers expiring together
	// is woken from the softirq thread, which RT tasks preempt.
	SleepersByPolicy SleeperRule = iota
	// SleepersAllHard is the earlier behaviour: every sleeper expires in
	// hardirq context, in front of any RT task woken by the same interrupt.
	SleepersAllHard
)

func (r SleeperRule) String() string {
	if r == SleepersAllHard {
		return "all-hard"
	}
	return "by-policy"
}

// DefaultTimerSlack is init_task's timer_slack_ns, 50 µs: the slack every
// SCHED_OTHER task inherits unless it changes it with PR_SET_TIMERSLACK.
const DefaultTimerSlack int64 = 50_000

// SleeperSlack is the range a sleeper of a task with the given policy and
// timer_slack_ns arms (hrtimer_nanosleep): 0 for RT and deadline tasks,
// whose slack the scheduler forces to 0 (commit ed4fb6d7ef68, 2024; before
// it hrtimer_nanosleep zeroed it itself), else timerSlack.
func SleeperSlack(p Policy, timerSlack int64) int64 {
	if p.RTOrDL() {
		return 0
	}
	return timerSlack
}
