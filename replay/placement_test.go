package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// placementFiles are the recordings of every kernel in testdata/traces.
func placementFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.txt"} {
		m, err := filepath.Glob(filepath.Join("../testdata/traces", pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 20 {
		t.Fatalf("only %d recordings", len(out))
	}
	return out
}

func placementOf(t *testing.T, file, kernel string, edit func(*ftrace.Machine)) Counts {
	t.Helper()
	tr, err := ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(tr.Header.Machine)
	}
	return placementOfTrace(t, tr, kernel)
}

// placementOfTrace runs the placement check over tr under kernel ("": its
// own).
func placementOfTrace(t *testing.T, tr *Trace, kernel string) Counts {
	t.Helper()
	s, err := shapeOf(tr, Options{Kernel: kernel})
	if err != nil {
		t.Fatal(err)
	}
	c, err := CheckPlacement(tr, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPlacementTraces: on every recording, 6.1 to 7.3, each timer is
// queued where the kernel's rule of its version puts it. On Debian's 6.1
// every decision is determined: the guests armed their timers from tasks
// on housekeeping CPUs (plain isolcpus= does not take a CPU out of
// HK_TYPE_TIMER, so the busy isolated CPUs keep their own timers) or
// re-armed them from their callbacks, so get_nohz_timer_target kept every
// one local. With timer_migration=0 (6.12 and 7.3) every hrtimer started
// after the write stays where it was started.
func TestPlacementTraces(t *testing.T) {
	for _, f := range placementFiles(t) {
		c := placementOf(t, f, "", nil)
		name := strings.TrimPrefix(f, "../testdata/traces/")
		t.Logf("%s: placement %d/%d matched, %d undetermined (%s)", name, c.Matched, c.Checked, c.Undetermined, sortedReasons(c.UndeterminedReasons))
		for i, m := range c.Mismatches {
			if i < 5 {
				t.Errorf("%s line %d: %s: kernel %s, model %s", name, m.Line, m.Event, m.Kernel, m.Model)
			}
		}
		if c.Checked == 0 {
			t.Errorf("%s: no placement checked", name)
		}
		if strings.Contains(name, "-6.1.") && c.Matched != c.Checked {
			t.Errorf("%s: %d of %d determined", name, c.Matched, c.Checked)
		}
	}
}

// TestPlacementTellsModelsApart: the rules differ by version and by
// sysctl, and the check says so. Under the 6.1 model the 6.12 nohz_full
// recordings' timers armed by tasks on nohz_full CPUs would have gone to
// the housekeeping CPU; the 6.12 and 7.3 recordings with
// timer_migration=1, told they ran with 0, have hrtimers of nohz_full CPUs
// on CPU 0 where 0 keeps them local.
func TestPlacementTellsModelsApart(t *testing.T) {
	for _, f := range []string{"vm24-1node-nohzfull-busy-sleepers.txt", "vm12-1node-nohzfull-busy.txt"} {
		c := placementOf(t, filepath.Join("../testdata/traces", f), "6.1.0", nil)
		if !hasPlacement(c, "timer_start placement") {
			t.Errorf("%s under 6.1: no wheel placement mismatch: %v", f, c.Mismatches)
		}
	}
	for _, f := range []string{"vm4-1node-nohzfull-hrtimers-tm1-6.12.txt", "vm4-1node-nohzfull-hrtimers-tm1-7.3.txt"} {
		c := placementOf(t, filepath.Join("../testdata/traces", f), "", func(m *ftrace.Machine) {
			for i := range m.At {
				if m.At[i].Kind == ftrace.ChangeTimerMigration {
					m.At[i].On = false
				}
			}
		})
		if !hasPlacement(c, "hrtimer_start placement") {
			t.Errorf("%s told timer_migration=0: no hrtimer placement mismatch: %v", f, c.Mismatches)
		}
	}
}

func hasPlacement(c Counts, event string) bool {
	for _, m := range c.Mismatches {
		if m.Event == event {
			return true
		}
	}
	return false
}

// TestPlacementAddTimerOnBefore69: on 6.1 a delayed work queued for CPU 0
// by a task on busy CPU 2 (queue_delayed_work_on: add_timer_on) prints
// cpu=0 without TIMER_PINNED (a 6.1 guest of the lab campaign, seed
// 20261205, draw 3): the push rule cannot put it there, add_timer_on can,
// and the trace does not tell which ran, so it is undetermined. From 6.9
// (aae55e9fb8fc) add_timer_on marks it pinned, and the same unmarked line
// is a mismatch: only the push could have moved it, and there is none.
func TestPlacementAddTimerOnBefore69(t *testing.T) {
	m := ftrace.Machine{CPUs: 3, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 2)}, HZ: 250}
	ev := []ftrace.Event{{Line: 2, CPU: 2, PID: 102, Task: "tmigr-guest", Flags: "d..3.", Name: "timer_start",
		Data: ftrace.TimerStart{Timer: 0xe264ed5a, Function: "delayed_work_timer_fn", Expires: 4294893765, Timeout: 501, CPU: 0, Idx: 89, Flags: ftrace.TimerIrqsafe, NoBucketExpiry: true}}}
	for _, tc := range []struct {
		kernel   string
		mismatch bool
	}{{"6.1.192", false}, {"6.12.118", true}} {
		m.Kernel = tc.kernel
		c := placementOfEvents(t, m, ev)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || (!tc.mismatch && c.UndeterminedReasons[whyAddTimerOn] != 1) {
			t.Errorf("%s: mismatches %v, undetermined %v", tc.kernel, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestPlacementAddTimerOnLocalBefore69: on 6.1 a non-pinned timer armed on
// a nohz_full CPU goes to a housekeeping CPU (get_nohz_timer_target), yet
// random.c's add_interrupt_randomness queues mix_interrupt_randomness on
// the CPU that runs it with add_timer_on, which leaves no TIMER_PINNED
// before 6.9 (a 6.1 guest of the lab campaign, seed 20261207, draw 28): the
// trace cannot tell the two apart, so it is undetermined. schedule_timeout's
// process_timeout, which only mod_timer arms, queued there is a mismatch.
func TestPlacementAddTimerOnLocalBefore69(t *testing.T) {
	m := ftrace.Machine{CPUs: 3, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 2)}, HZ: 250, Kernel: "6.1.192", Cmdline: "nohz_full=1-2"}
	for _, tc := range []struct {
		function string
		mismatch bool
	}{{"mix_interrupt_randomness", false}, {"process_timeout", true}} {
		ev := []ftrace.Event{{Line: 2, CPU: 2, PID: 0, Task: "<idle>", Flags: "d.h2.", Name: "timer_start",
			Data: ftrace.TimerStart{Timer: 0xae35bea7, Function: tc.function, Expires: 4294895756, Timeout: 0, CPU: 2, Idx: 13, NoBucketExpiry: true}}}
		c := placementOfEvents(t, m, ev)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || (!tc.mismatch && c.UndeterminedReasons[whyAddTimerOn] != 1) {
			t.Errorf("%s: mismatches %v, undetermined %v", tc.function, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestPlacementAddTimerOnAfterCallbackBefore69: a delayed work's timer
// expired on CPU 0 (line 196) and, just after its callback returned, a
// task on busy CPU 4 re-armed it on CPU 5 with no TIMER_PINNED (line 198;
// a 6.1 guest of the lab campaign, seed 20261227, draw 100): the push rule
// for a re-arm as the callback ends keeps it on CPU 4, add_timer_on (a
// queue_delayed_work_on naming CPU 5) puts it on CPU 5 unmarked before
// 6.9, so it is undetermined, as it is for any other arm. Under the 6.12
// model the same line is a mismatch.
func TestPlacementAddTimerOnAfterCallbackBefore69(t *testing.T) {
	const file = "../testdata/traces/vm8-3node-isol-6.1-delayed-work-requeued-on-another-cpu.txt"
	c := placementOf(t, file, "", nil)
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyAddTimerOn] != 1 {
		t.Errorf("6.1: mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
	if c := placementOf(t, file, "6.12.118", nil); len(c.Mismatches) == 0 {
		t.Errorf("6.12: no mismatch (%s)", c.Reasons())
	}
}

// TestPlacementInitAnewLeavesRunningBase: schedule_timeout's on-stack
// timer expired on CPU 4 woke its task, which moved to CPU 0 and set up a
// new on-stack timer at the same address before CPU 4's expiry returned (a
// 7.3 guest of the lab campaign, seed 20261207, draw 15): do_init_timer
// gave it CPU 0's base, so __mod_timer queued it there although CPU 4's
// base still held the address as running. Without the timer_init line
// the timer is the one running on CPU 4, and a queue on CPU 0 is a
// mismatch.
func TestPlacementInitAnewLeavesRunningBase(t *testing.T) {
	m := ftrace.Machine{CPUs: 5, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 4)}, HZ: 250, Kernel: "7.3.4"}
	const tm = 0xe97c14ab
	entry := ftrace.Event{Line: 2, TS: 1_000_000, CPU: 4, Task: "init", Flags: ".Bs..", Name: "timer_expire_entry",
		Data: ftrace.TimerExpireEntry{Timer: tm, Function: "process_timeout", Now: 4294895170, BaseClk: 4294895170}}
	init := ftrace.Event{Line: 3, TS: 1_000_100, CPU: 0, Task: "rcu_preempt", Flags: ".....", Name: "timer_init", Data: ftrace.TimerInit{Timer: tm}}
	start := ftrace.Event{Line: 4, TS: 1_000_100, CPU: 0, Task: "rcu_preempt", Flags: "d..1.", Name: "timer_start",
		Data: ftrace.TimerStart{Timer: tm, Function: "process_timeout", Expires: 4294895171, Timeout: 1, BucketExpiry: 4294895172, CPU: 0, Idx: 4}}
	exit := ftrace.Event{Line: 5, TS: 1_100_000, CPU: 4, Task: "init", Flags: ".Bs..", Name: "timer_expire_exit", Data: ftrace.TimerExpireExit{Timer: tm}}
	// The exit stamped with the start's time: which came first is not
	// printed (a 7.2 guest of the lab campaign, seed 20261209, draw 4).
	sameStamp := exit
	sameStamp.TS = start.TS
	for _, tc := range []struct {
		name     string
		ev       []ftrace.Event
		mismatch bool
	}{
		{"init anew", []ftrace.Event{entry, init, start, exit}, false},
		{"re-armed", []ftrace.Event{entry, start, exit}, true},
		{"re-armed as it returned", []ftrace.Event{entry, start, sameStamp}, false},
	} {
		c := placementOfEvents(t, m, tc.ev)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || !tc.mismatch && c.Matched+c.UndeterminedReasons[whyFinishing] != 1 {
			t.Errorf("%s: %d matched, mismatches %v, undetermined %v", tc.name, c.Matched, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestPlacementHotplugMovesHrtimer: an hrtimer a task started on busy CPU 1
// stays on CPU 1 (get_nohz_timer_target keeps a busy housekeeping CPU's
// timers), and expiring on CPU 0 is a mismatch; with CPU 1's hotplug
// thread taking it offline in between (a 6.19 guest of the lab campaign,
// seed 20261207, draw 11), hrtimers_cpu_dying moved it, and where it
// expires is undetermined.
func TestPlacementHotplugMovesHrtimer(t *testing.T) {
	m := ftrace.Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)}, HZ: 250, Kernel: "6.19.14"}
	const h = 0x90410ca7
	start := ftrace.Event{Line: 2, TS: 6_180_755_000, CPU: 1, PID: 208, Task: "tmigr-guest", Flags: "d..12", Name: "hrtimer_start",
		Data: ftrace.HrtimerStart{Hrtimer: h, Function: "pm_suspend_timer_fn", Expires: 6783300947, SoftExpires: 6658300947}}
	cpuhp := ftrace.Event{Line: 3, TS: 6_673_289_000, CPU: 1, PID: 26, Task: "cpuhp/1", Flags: "d..1.", Name: "timer_cancel", Data: ftrace.TimerCancel{Timer: 0x43c8651e}}
	expire := ftrace.Event{Line: 4, TS: 6_698_541_000, CPU: 0, PID: 15, Task: "ktimers/0", Flags: "..s.2", Name: "hrtimer_expire_entry",
		Data: ftrace.HrtimerExpireEntry{Hrtimer: h, Function: "pm_suspend_timer_fn", Now: 6675999217}}
	for _, tc := range []struct {
		name     string
		ev       []ftrace.Event
		mismatch bool
	}{
		{"offline between", []ftrace.Event{start, cpuhp, expire}, false},
		{"no hotplug", []ftrace.Event{start, expire}, true},
	} {
		c := placementOfEvents(t, m, tc.ev)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || !tc.mismatch && c.UndeterminedReasons[whyHotplug] != 1 {
			t.Errorf("%s: mismatches %v, undetermined %v", tc.name, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestPlacementAnyHousekeepingCPU: a task on nohz_full CPU 5 starts an
// hrtimer; get_nohz_timer_target looks for a busy housekeeping CPU among
// CPU 5's domains and else takes housekeeping_any_cpu's, which may be an
// isolcpus= CPU out of every domain (a 6.19 guest of the lab campaign, seed
// 20261208, draw 1: CPU 3). Which one depends on which CPUs were busy;
// another nohz_full CPU it can never be.
func TestPlacementAnyHousekeepingCPU(t *testing.T) {
	m := ftrace.Machine{CPUs: 16, Nodes: 3, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 0), cpumask.Range(1, 6), cpumask.Range(7, 15)},
		HZ: 250, Kernel: "6.19.14", Cmdline: "isolcpus=1-4,6-7,11,13-14 nohz_full=5-8"}
	const h = 0xaba8389d
	for _, tc := range []struct {
		on       int
		mismatch bool
	}{{3, false}, {9, false}, {6, true}} {
		ev := []ftrace.Event{
			{Line: 2, TS: 14_134_688_000, CPU: 5, PID: 365, Task: "tmigr-guest", Flags: "d..1.", Name: "hrtimer_start",
				Data: ftrace.HrtimerStart{Hrtimer: h, Function: "hrtimer_wakeup", Expires: 14113113000, SoftExpires: 14113113000, Mode: ftrace.HrtimerModeAbs}},
			{Line: 3, TS: 14_134_962_000, CPU: tc.on, PID: 0, Task: "<idle>", Flags: "d.h1.", Name: "hrtimer_expire_entry",
				Data: ftrace.HrtimerExpireEntry{Hrtimer: h, Function: "hrtimer_wakeup", Now: 14113113746}},
		}
		c := placementOfEvents(t, m, ev)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || !tc.mismatch && c.UndeterminedReasons[whyPushTarget] != 1 {
			t.Errorf("on CPU %d: mismatches %v, undetermined %v", tc.on, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// placementOfEvents runs the placement check over events of machine m.
func placementOfEvents(t *testing.T, m ftrace.Machine, ev []ftrace.Event) Counts {
	t.Helper()
	return placementOfTrace(t, &Trace{Header: ftrace.Header{Machine: &m}, Events: ev}, "")
}

// TestPlacementPinnedRearmOfRunningTimer: a delayed work's timer expiring
// on CPU 2 was re-armed pinned by a kworker on CPU 1 before CPU 2 printed
// the callback's exit, and queued on CPU 1 (a 7.3 guest with nohz_full,
// seed 901 of .ci/fresh-recordings): add_timer_on, which the workqueue
// uses to put delayed work on a housekeeping CPU, moves even a running
// timer, where a mod_timer of a pinned timer leaves it on its base. Not
// pinned, the re-arm must stay on CPU 2's base.
func TestPlacementPinnedRearmOfRunningTimer(t *testing.T) {
	m := ftrace.Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)}, HZ: 250, Kernel: "7.3.4"}
	const tm = 0x5be88fb7
	entry := ftrace.Event{Line: 2, TS: 4_864_797_000, CPU: 2, Task: "<idle>", Flags: "d.s1.", Name: "timer_expire_entry",
		Data: ftrace.TimerExpireEntry{Timer: tm, Function: "delayed_work_timer_fn", Now: 4294893520, BaseClk: 4294893520}}
	start := ftrace.Event{Line: 3, TS: 4_864_935_000, CPU: 1, PID: 47, Task: "kworker/u16:1", Flags: "d..1.", Name: "timer_start",
		Data: ftrace.TimerStart{Timer: tm, Function: "delayed_work_timer_fn", Expires: 4294893770, Timeout: 250, BucketExpiry: 4294893776, CPU: 1, Idx: 90,
			Flags: ftrace.TimerPinned | ftrace.TimerIrqsafe}}
	exit := ftrace.Event{Line: 4, TS: 4_864_970_000, CPU: 2, Task: "<idle>", Flags: "d.s1.", Name: "timer_expire_exit", Data: ftrace.TimerExpireExit{Timer: tm}}
	unpinned := start
	p := start.Data.(ftrace.TimerStart)
	p.Flags = ftrace.TimerIrqsafe
	unpinned.Data = p
	c := placementOfEvents(t, m, []ftrace.Event{entry, start, exit})
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyPinnedRunning] != 1 {
		t.Errorf("pinned: mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
	c = placementOfEvents(t, m, []ftrace.Event{entry, unpinned, exit})
	if len(c.Mismatches) != 1 {
		t.Errorf("not pinned: mismatches %v, want one (the running timer stays on CPU 2's base)", c.Mismatches)
	}
}

// TestPlacementHrtimerRearmAtCallbackExit: an hrtimer re-armed on CPU 2
// at the very time its callback's exit is stamped on CPU 4 may have found
// it running (switch_hrtimer_base keeps it on CPU 4's base) or done (the
// rule places it): the tie of one timestamp prints CPU 2's line first
// whichever ran first. With the exit clearly later, the timer was running
// and stays on CPU 4: queued on CPU 2, it is a mismatch.
func TestPlacementHrtimerRearmAtCallbackExit(t *testing.T) {
	m := ftrace.Machine{CPUs: 5, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 4)}, HZ: 250, Kernel: "6.19.14"}
	const hr = 0x5564a206
	const at = 13_914_639_000
	entry := ftrace.Event{Line: 2, TS: 13_868_319_000, CPU: 4, PID: 65, Task: "ktimers/4", Flags: "..s.2", Name: "hrtimer_expire_entry",
		Data: ftrace.HrtimerExpireEntry{Hrtimer: hr, Function: "posix_timer_fn", Now: 13_895_875_280}}
	start := ftrace.Event{Line: 3, TS: at, CPU: 2, PID: 203, Task: "tmigr-guest", Flags: "d..11", Name: "hrtimer_start",
		Data: ftrace.HrtimerStart{Hrtimer: hr, Function: "posix_timer_fn", Expires: 13_942_456_310, SoftExpires: 13_942_456_310}}
	exit := ftrace.Event{Line: 4, TS: at, CPU: 4, PID: 65, Task: "ktimers/4", Flags: "..s.2", Name: "hrtimer_expire_exit",
		Data: ftrace.HrtimerExpireExit{Hrtimer: hr}}
	again := ftrace.Event{Line: 5, TS: 13_942_500_000, CPU: 2, Task: "<idle>", Flags: "d.h1.", Name: "hrtimer_expire_entry",
		Data: ftrace.HrtimerExpireEntry{Hrtimer: hr, Function: "posix_timer_fn", Now: 13_942_460_000}}
	c := placementOfEvents(t, m, []ftrace.Event{entry, start, exit, again})
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyFinishing] != 1 {
		t.Errorf("exit at the start's time: mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
	exit.TS += 5_000_000
	c = placementOfEvents(t, m, []ftrace.Event{entry, start, exit, again})
	if len(c.Mismatches) != 1 {
		t.Errorf("exit 5 ms later: mismatches %v, want one (the running timer stays on CPU 4's base)", c.Mismatches)
	}
}

// TestPlacementHrtimerRearmBeforeBaseRelocked: a 6.1 timerfd's callback
// returned on CPU 1 (its exit line) and CPU 0 re-armed it 13 us later; the
// kernel queued it on CPU 1, though the arm was pinned to CPU 0 (campaign
// 20261215 draw 3). __run_hrtimer prints the exit before it relocks the
// base and clears base->running, and CPU 1 printed nothing until after the
// arm: the arm may have found the callback running (switch_hrtimer_base
// keeps it on its base) or done. Undetermined; once CPU 1 has printed
// another line it had cleared base->running, and queued on CPU 1 is a
// mismatch.
func TestPlacementHrtimerRearmBeforeBaseRelocked(t *testing.T) {
	m := ftrace.Machine{CPUs: 2, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 1)}, HZ: 250, Kernel: "6.1.192"}
	const hr = 0x955ee696
	entry := ftrace.Event{Line: 2, TS: 6_113_686_000, CPU: 1, PID: 123, Task: "tmigr-guest", Flags: "d.h..", Name: "hrtimer_expire_entry",
		Data: ftrace.HrtimerExpireEntry{Hrtimer: hr, Function: "timerfd_tmrproc", Now: 6_136_979_700}}
	exit := ftrace.Event{Line: 3, TS: 6_115_238_000, CPU: 1, PID: 123, Task: "tmigr-guest", Flags: "d.h..", Name: "hrtimer_expire_exit",
		Data: ftrace.HrtimerExpireExit{Hrtimer: hr}}
	other := ftrace.Event{Line: 4, TS: 6_115_240_000, CPU: 1, PID: 123, Task: "tmigr-guest", Flags: "d.h1.", Name: "hrtimer_start",
		Data: ftrace.HrtimerStart{Hrtimer: 0x25eb7be3, Function: "tick_sched_timer", Expires: 6_140_000_000, SoftExpires: 6_140_000_000, Mode: ftrace.HrtimerModePinned | ftrace.HrtimerModeHard}}
	start := ftrace.Event{Line: 5, TS: 6_115_251_000, CPU: 0, PID: 113, Task: "tmigr-guest", Flags: "d..2.", Name: "hrtimer_start",
		Data: ftrace.HrtimerStart{Hrtimer: hr, Function: "timerfd_tmrproc", Expires: 6_156_490_670, SoftExpires: 6_156_490_670, Mode: ftrace.HrtimerModePinned}}
	again := ftrace.Event{Line: 6, TS: 6_133_282_000, CPU: 1, Task: "<idle>", Flags: "d.h1.", Name: "hrtimer_expire_entry",
		Data: ftrace.HrtimerExpireEntry{Hrtimer: hr, Function: "timerfd_tmrproc", Now: 6_156_589_970}}
	c := placementOfEvents(t, m, []ftrace.Event{entry, exit, start, again})
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyFinishing] != 1 {
		t.Errorf("nothing printed since the exit: mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
	c = placementOfEvents(t, m, []ftrace.Event{entry, exit, other, start, again})
	if len(c.Mismatches) != 1 {
		t.Errorf("a line printed since the exit: mismatches %v, want one (the timer was done and goes where it is pinned)", c.Mismatches)
	}
}

// TestPlacementWheelRearmWhileCallbackFinishing: on a 6.1 guest a delack
// timer's callback returned on CPU 1 (line 94), which then printed nothing
// for 7 ms; nohz_full CPU 3 re-armed it 7 ms later and the kernel queued
// it on CPU 2 (line 102): the callback no longer counted running, and
// get_nohz_timer_target pushed the timer of a nohz_full CPU to a busy
// housekeeping CPU. A re-arm while the callback may be finishing goes to
// its base or where the version's rule puts it, not to the arming CPU.
func TestPlacementWheelRearmWhileCallbackFinishing(t *testing.T) {
	c := placementOf(t, "../testdata/traces/vm5-3node-nohzfull-6.1-wheel-rearm-while-callback-finishing.txt", "", nil)
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	if c.UndeterminedReasons[whyFinishing] == 0 {
		t.Errorf("no re-arm of a finishing callback undetermined (%s)", c.Reasons())
	}
}
