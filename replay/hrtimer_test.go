package replay

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

const rtTrace = "../testdata/traces/vm8-1node-rt-fifo-other-sleepers.txt"

func readTraceText(t *testing.T, text string) *Trace {
	t.Helper()
	tr, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func checkHrtimerText(t *testing.T, text string) *Counts {
	t.Helper()
	tr := readTraceText(t, text)
	var l Load
	if m := tr.Header.Machine; m != nil {
		var err error
		if l, err = LoadOf(m); err != nil {
			t.Fatal(err)
		}
	}
	c, err := CheckHrtimer(tr, l)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sleeperStart is an oracle independent of the check: the guest program's
// sleeper starts, by CPU and printed mode.
var sleeperStart = regexp.MustCompile(`(?m)^ *tmigr-guest-\d+ +\[(\d+)\] \S+ +[\d.]+: hrtimer_start: .*function=hrtimer_wakeup .*mode=(\S+)`)

// TestHrtimerRealRT checks the PREEMPT_RT recording: every start of the
// guest program's sleepers is determined and matched (the SCHED_FIFO ones
// on the note's CPUs print HARD, all others do not), and so is the context
// of their expiries.
func TestHrtimerRealRT(t *testing.T) {
	data, err := os.ReadFile(rtTrace)
	if err != nil {
		t.Fatal(err)
	}
	c := checkHrtimerText(t, string(data))
	if c == nil {
		t.Fatal("no hrtimer check on a trace with sleepers")
	}
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	// The oracle: the note's FIFO sleepers print HARD, every other
	// thread of the guest program does not.
	fifo := cpumask.Range(4, 6)
	starts := 0
	for _, m := range sleeperStart.FindAllStringSubmatch(string(data), -1) {
		cpu, _ := strconv.Atoi(m[1])
		if hard := strings.Contains(m[2], "HARD"); hard != fifo.Test(cpu) {
			t.Errorf("the recording itself: CPU %d sleeper started with %s", cpu, m[2])
		}
		starts++
	}
	if starts < 100 {
		t.Fatalf("oracle found only %d sleeper starts", starts)
	}
	expiries := c.Matched - starts
	if expiries < starts/2 {
		t.Errorf("%d matched for %d guest sleeper starts: the expiries were not checked", c.Matched, starts)
	}
	for why, n := range c.UndeterminedReasons {
		// Only other tasks' sleepers and the ones armed before the
		// recording may stay undetermined.
		if why != "sleeper started before the recording" && why != "sleeper of a task whose policy the recording does not tell" {
			t.Errorf("%d undetermined: %s", n, why)
		}
	}
	if c.Undetermined > c.Checked/20 {
		t.Errorf("%d of %d undetermined", c.Undetermined, c.Checked)
	}
}

// flipLine returns text with the first line that matches re and contains
// old changed to contain new instead, and that line's number.
func flipLine(t *testing.T, text string, re *regexp.Regexp, old, new string) (string, int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if re.MatchString(l) && strings.Contains(l, old) {
			lines[i] = strings.Replace(l, old, new, 1)
			return strings.Join(lines, "\n"), i + 1
		}
	}
	t.Fatalf("no line matches %v with %q", re, old)
	return "", 0
}

func wantMismatchAt(t *testing.T, c *Counts, line int, event string) {
	t.Helper()
	for _, m := range c.Mismatches {
		if m.Line == line && m.Event == event {
			if len(c.Mismatches) != 1 {
				t.Errorf("%d mismatches, want 1: %+v", len(c.Mismatches), c.Mismatches)
			}
			return
		}
	}
	t.Errorf("no %s mismatch at line %d: %+v", event, line, c.Mismatches)
}

// TestHrtimerFlipped changes one decision of the kernel in the RT
// recording at a time and expects exactly that line to mismatch.
func TestHrtimerFlipped(t *testing.T) {
	data, err := os.ReadFile(rtTrace)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	fifoStart := regexp.MustCompile(`tmigr-guest-\d+ +\[004\] .*hrtimer_start: .*function=hrtimer_wakeup`)
	otherStart := regexp.MustCompile(`tmigr-guest-\d+ +\[001\] .*hrtimer_start: .*function=hrtimer_wakeup`)
	hardExpiry := regexp.MustCompile(`\[00[4-6]\] d\.h1\. .*hrtimer_expire_entry: .*function=hrtimer_wakeup`)
	softExpiry := regexp.MustCompile(`ktimers/1-\d+ +\[001\] \.\.s\.3 .*hrtimer_expire_entry: .*function=hrtimer_wakeup`)

	t.Run("fifo-start-without-HARD", func(t *testing.T) {
		flipped, line := flipLine(t, text, fifoStart, "mode=REL|HARD", "mode=REL")
		wantMismatchAt(t, checkHrtimerText(t, flipped), line, "hrtimer_start")
	})
	t.Run("other-start-with-HARD", func(t *testing.T) {
		flipped, line := flipLine(t, text, otherStart, "mode=REL ", "mode=REL|HARD ")
		wantMismatchAt(t, checkHrtimerText(t, flipped), line, "hrtimer_start")
	})
	t.Run("fifo-expiry-in-softirq", func(t *testing.T) {
		// A later hard expiry: the first may belong to a sleeper started
		// before the recording.
		lines := strings.Split(text, "\n")
		n := 0
		for i, l := range lines {
			if hardExpiry.MatchString(l) {
				if n++; n == 10 {
					lines[i] = strings.Replace(l, "d.h1.", "..s.3", 1)
					c := checkHrtimerText(t, strings.Join(lines, "\n"))
					wantMismatchAt(t, c, i+1, "hrtimer_expire_entry")
					return
				}
			}
		}
		t.Fatal("fewer than 10 hard sleeper expiries")
	})
	t.Run("other-expiry-in-hardirq", func(t *testing.T) {
		lines := strings.Split(text, "\n")
		n := 0
		for i, l := range lines {
			if softExpiry.MatchString(l) {
				if n++; n == 10 {
					lines[i] = strings.Replace(l, "..s.3", "d.h1.", 1)
					c := checkHrtimerText(t, strings.Join(lines, "\n"))
					wantMismatchAt(t, c, i+1, "hrtimer_expire_entry")
					return
				}
			}
		}
		t.Fatal("fewer than 10 soft sleeper expiries")
	})
	t.Run("note-without-fifo-sleepers", func(t *testing.T) {
		// The same recording, its note no longer naming the SCHED_FIFO
		// CPUs: every hard start of CPUs 4-6 is now a mismatch.
		flipped := strings.Replace(text, "; fifo-sleepers=4-6", "", 1)
		c := checkHrtimerText(t, flipped)
		hard := len(regexp.MustCompile(`tmigr-guest-\d+ +\[00[4-6]\] .*hrtimer_start: .*function=hrtimer_wakeup.*mode=REL\|HARD`).FindAllString(text, -1))
		starts := 0
		for _, m := range c.Mismatches {
			if m.Event == "hrtimer_start" {
				starts++
			}
		}
		if starts != hard {
			t.Errorf("%d start mismatches, want the %d HARD starts of CPUs 4-6", starts, hard)
		}
	})
}

const nonRTHeader = `# machine: cpus=4 nodes=1 node-cpus=0-3 kernel=6.12.118 hz=250 cmdline="" busy=3 sleepers=1-2 (QEMU TCG; fifo-sleepers=2; period=3ms)
# tracer: nop
#
`

// TestHrtimerNonRT: without PREEMPT_RT every sleeper is hard whatever its
// task's policy, and the kernel never adds HARD: a task whose policy the
// recording does not tell is determined all the same.
func TestHrtimerNonRT(t *testing.T) {
	trace := nonRTHeader +
		"     tmigr-guest-90      [002] .....    10.000000: hrtimer_init: hrtimer=00000000aaaa0001 clockid=CLOCK_MONOTONIC mode=REL\n" +
		"     tmigr-guest-90      [002] d..1.    10.000010: hrtimer_start: hrtimer=00000000aaaa0001 function=hrtimer_wakeup expires=10003010000 softexpires=10003010000 mode=REL\n" +
		"     tmigr-guest-91      [001] .....    10.000020: hrtimer_init: hrtimer=00000000aaaa0002 clockid=CLOCK_MONOTONIC mode=REL\n" +
		"     tmigr-guest-91      [001] d..1.    10.000030: hrtimer_start: hrtimer=00000000aaaa0002 function=hrtimer_wakeup expires=10003080000 softexpires=10003030000 mode=REL\n" +
		"      kworker/0:1-20     [000] d..1.    10.000040: hrtimer_start: hrtimer=00000000aaaa0003 function=hrtimer_wakeup expires=10005000000 softexpires=10004950000 mode=REL\n" +
		"          <idle>-0       [002] d.h1.    10.003011: hrtimer_expire_entry: hrtimer=00000000aaaa0001 function=hrtimer_wakeup now=10003011000\n" +
		"          <idle>-0       [001] d.h1.    10.003081: hrtimer_expire_entry: hrtimer=00000000aaaa0002 function=hrtimer_wakeup now=10003081000\n" +
		"          <idle>-0       [000] d.h1.    10.005001: hrtimer_expire_entry: hrtimer=00000000aaaa0003 function=hrtimer_wakeup now=10005001000\n" +
		"          <idle>-0       [003] d.h1.    10.006001: hrtimer_expire_entry: hrtimer=00000000aaaa0009 function=hrtimer_wakeup now=10006001000\n"
	c := checkHrtimerText(t, trace)
	if c == nil {
		t.Fatal("no check")
	}
	if c.Checked != 7 || c.Matched != 6 || len(c.Mismatches) != 0 || c.UndeterminedReasons["sleeper started before the recording"] != 1 {
		t.Errorf("counts %+v, want 6 matched and the sleeper from before the recording undetermined", *c)
	}

	// HARD on a non-RT kernel's sleeper, or an expiry in the softirq, is
	// not what the model does.
	bad := strings.Replace(trace, "softexpires=10003010000 mode=REL", "softexpires=10003010000 mode=REL|HARD", 1)
	bad = strings.Replace(bad, "[001] d.h1.", "[001] ..s..", 1)
	c = checkHrtimerText(t, bad)
	if len(c.Mismatches) != 2 || c.Mismatches[0].Line != 5 || c.Mismatches[1].Line != 10 {
		t.Errorf("mismatches %+v, want lines 5 and 10", c.Mismatches)
	}
}

// TestHrtimerRTUnknownPolicy: on PREEMPT_RT the mode depends on the
// policy, so another task's sleeper is undetermined, start and expiry.
func TestHrtimerRTUnknownPolicy(t *testing.T) {
	trace := strings.Replace(nonRTHeader, "(QEMU TCG;", "(QEMU TCG; PREEMPT_RT;", 1) +
		"      kworker/0:1-20     [000] d..1.    10.000040: hrtimer_start: hrtimer=00000000aaaa0003 function=hrtimer_wakeup expires=10005000000 softexpires=10004950000 mode=REL\n" +
		"       ktimers/0-15      [000] ..s.3    10.005001: hrtimer_expire_entry: hrtimer=00000000aaaa0003 function=hrtimer_wakeup now=10005001000\n" +
		"      tmigr-guest-90     [002] d..1.    10.000010: hrtimer_start: hrtimer=00000000aaaa0001 function=hrtimer_wakeup expires=10003010000 softexpires=10003010000 mode=REL|HARD\n"
	c := checkHrtimerText(t, trace)
	if c.Checked != 3 || c.Matched != 1 || c.UndeterminedReasons["sleeper of a task whose policy the recording does not tell"] != 2 {
		t.Errorf("counts %+v", *c)
	}
}

// TestHrtimerNoSleepers: a trace without sleeper starts gets no check.
func TestHrtimerNoSleepers(t *testing.T) {
	trace := nonRTHeader +
		"          <idle>-0       [000] d.h1.    10.000000: hrtimer_start: hrtimer=00000000aaaa0001 function=tick_nohz_handler expires=10004000000 softexpires=10004000000 mode=ABS|PINNED|HARD\n"
	if c := checkHrtimerText(t, trace); c != nil {
		t.Errorf("a check on a trace without sleepers: %+v", *c)
	}
}

func TestLoadOf(t *testing.T) {
	m := ftrace.Machine{CPUs: 8, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 7)}, Kernel: "6.12.118", HZ: 250,
		Busy: cpumask.Of(7), Sleepers: cpumask.Range(1, 6), Note: "QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms"}
	l, err := LoadOf(&m)
	if err != nil {
		t.Fatal(err)
	}
	if !l.PreemptRT || l.FIFOSleepers.String() != "4-6" || l.Period != 3*time.Millisecond || l.Absolute || l.Busy.String() != "7" || l.Sleepers.String() != "1-6" {
		t.Errorf("load %+v", l)
	}
	m.Note = "QEMU TCG; period=250us absolute"
	if l, err = LoadOf(&m); err != nil || l.PreemptRT || !l.FIFOSleepers.Empty() || l.Period != 250*time.Microsecond || !l.Absolute {
		t.Errorf("load %+v, %v", l, err)
	}
	for _, note := range []string{"fifo-sleepers=9", "fifo-sleepers=0", "fifo-sleepers=x", "period=0s", "period=3", "period=-1ms", "period=3ms absolutely"} {
		m.Note = "QEMU TCG; " + note
		if _, err := LoadOf(&m); err == nil {
			t.Errorf("note %q: no error", note)
		}
	}
}

// FuzzLoadOf: any note reads without a panic, and a load read back names
// only the machine's CPUs.
func FuzzLoadOf(f *testing.F) {
	for _, s := range []string{"QEMU TCG; PREEMPT_RT; fifo-sleepers=4-6; period=3ms", "period=1ms absolute", "fifo-sleepers=", ";;", "KVM guest", "fifo-sleepers=1-3:2/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, note string) {
		m := ftrace.Machine{CPUs: 8, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 7)}, Sleepers: cpumask.Range(1, 6), Note: note}
		l, err := LoadOf(&m)
		if err != nil {
			return
		}
		if !l.FIFOSleepers.Subset(&m.Sleepers) || l.Period < 0 {
			t.Errorf("note %q: load %+v", note, l)
		}
	})
}

// TestHrtimerNamedSleepers: a 3-CPU PREEMPT_RT guest with a load on every
// CPU (a lab campaign draw, seed 20261208, draw 24) runs the guest's
// runtime threads on CPU 0 beside its SCHED_FIFO sleeper. With the
// sleeper's thread named tmigr-sleeper, the runtime thread's relative
// sleep, soft on PREEMPT_RT, is a SCHED_OTHER one, and the sleeper's is
// hard. Without the name, two of the guest's threads sleep on CPU 0 and
// the trace does not tell which is the sleeper: undetermined. With only
// the runtime thread's sleep there, it is taken for the sleeper, and its
// soft sleep is a mismatch.
func TestHrtimerNamedSleepers(t *testing.T) {
	const machine = "# machine: cpus=3 nodes=1 node-cpus=0-2 kernel=6.19.14 hz=250 cmdline=\"\" busy= sleepers=0,2 (QEMU TCG; PREEMPT_RT; fifo-sleepers=0; timerfd=1; period=2.3ms absolute)\n"
	const sleeper = `   SLEEPER-173     [000] d..1.     1.000000: hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires=1002300000 softexpires=1002300000 mode=ABS|HARD
`
	const runtime = `     tmigr-guest-171     [000] .....     1.000090: hrtimer_setup: hrtimer=00000000000000b1 clockid=CLOCK_MONOTONIC mode=REL
     tmigr-guest-171     [000] d..1.     1.000100: hrtimer_start: hrtimer=00000000000000b1 function=hrtimer_wakeup expires=1000120000 softexpires=1000120000 mode=REL
       ktimers/0-15      [000] ..s.2     1.000200: hrtimer_expire_entry: hrtimer=00000000000000b1 function=hrtimer_wakeup now=1000200000
`
	const sleeperExpiry = `          <idle>-0       [000] d.h1.     1.002300: hrtimer_expire_entry: hrtimer=00000000000000a1 function=hrtimer_wakeup now=1002300000
`
	for _, tc := range []struct {
		name                  string
		text                  string
		matched, undetermined int
		mismatch              bool
	}{
		{"named", strings.ReplaceAll(sleeper, "   SLEEPER", "tmigr-sleeper") + runtime + sleeperExpiry, 4, 0, false},
		{"unnamed", strings.ReplaceAll(sleeper, "   SLEEPER", "  tmigr-guest") + runtime + sleeperExpiry, 0, 4, false},
		{"runtime alone", runtime, 0, 0, true},
	} {
		c := checkHrtimerText(t, machine+tc.text)
		if c == nil {
			t.Fatal("no hrtimer check")
		}
		if got := len(c.Mismatches) > 0; got != tc.mismatch || !tc.mismatch && (c.Matched != tc.matched || c.UndeterminedReasons[whyPolicy] != tc.undetermined) {
			t.Errorf("%s: %d/%d matched (%s), mismatches %+v", tc.name, c.Matched, c.Checked, c.Reasons(), c.Mismatches)
		}
	}
}

// TestHrtimerAskedModeFromStart: a sleeper set up before the recording
// (no hrtimer_init or hrtimer_setup line) asked for the mode its start
// prints, less the HARD the kernel adds: a timer load's thread of an
// absolute-period guest sleeping relatively (seed 20261208, draw 40) is
// matched, not held to the load's absolute mode. A SCHED_FIFO sleeper's
// start without HARD on PREEMPT_RT is still a mismatch.
func TestHrtimerAskedModeFromStart(t *testing.T) {
	const machine = "# machine: cpus=6 nodes=1 node-cpus=0-5 kernel=6.19.14 hz=250 cmdline=\"\" busy= sleepers=1 (QEMU TCG; PREEMPT_RT; fifo-sleepers=1; tcp=5; period=7.7ms absolute)\n"
	const load = "     tmigr-guest-379     [005] d..1.     1.000000: hrtimer_start: hrtimer=00000000000000c1 function=hrtimer_wakeup expires=1000200000 softexpires=1000150000 mode=REL\n"
	const fifo = "     tmigr-guest-380     [001] d..1.     1.000010: hrtimer_start: hrtimer=00000000000000c2 function=hrtimer_wakeup expires=1007700000 softexpires=1007700000 mode=ABS\n"
	c := checkHrtimerText(t, machine+load)
	if c == nil || c.Matched != 1 || len(c.Mismatches) != 0 {
		t.Errorf("the timer load's relative sleep: %+v", c)
	}
	c = checkHrtimerText(t, machine+load+fifo)
	if c == nil || len(c.Mismatches) != 1 || c.Mismatches[0].Line != 3 {
		t.Errorf("the SCHED_FIFO sleeper's start without HARD: %+v", c)
	}
}

// TestHrtimerNamedRuntimeOnBusyCPU: with the sleepers named, the guest's
// thread that sleeps on the busy loop's CPU is a runtime thread, SCHED_OTHER
// (the busy loop never sleeps); without the names its policy is unknown.
func TestHrtimerNamedRuntimeOnBusyCPU(t *testing.T) {
	const machine = "# machine: cpus=3 nodes=1 node-cpus=0-2 kernel=6.1.192 hz=250 cmdline=\"\" busy=0 sleepers=1-2 (QEMU TCG; PREEMPT_RT; fifo-sleepers=1; period=9.3ms)\n"
	const runtime = "     tmigr-guest-171     [000] d..1.     1.000100: hrtimer_start: hrtimer=00000000000000b1 function=hrtimer_wakeup expires=1000120000 softexpires=1000120000 mode=REL\n"
	const named = "   tmigr-sleeper-173     [001] d..1.     1.000000: hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires=1009300000 softexpires=1009300000 mode=REL|HARD\n"
	if c := checkHrtimerText(t, machine+named+runtime); c == nil || c.Matched != 2 || len(c.Mismatches) != 0 {
		t.Errorf("named: %+v", c)
	}
	if c := checkHrtimerText(t, machine+runtime); c == nil || c.Matched != 0 || c.UndeterminedReasons[whyPolicy] != 1 {
		t.Errorf("unnamed: %+v", c)
	}
}

// TestHrtimerSleeperMovedByOffline: a pinned sleeper of a CPU taken
// offline runs on another CPU from then on (select_fallback_rq breaks its
// affinity), so a sleeper task first seen after the offline may have
// begun, on a CPU whose own sleeper has another policy, may be either:
// undetermined. The offline may have begun at any time after the change
// before it, here the start: the machine line gives when it was done. The
// CPU's own sleeper, seen there before, stays determined. (A window of a
// 6.1 PREEMPT_RT recording, campaign 20261221 draw 24, began after CPU 1,
// SCHED_FIFO, went offline, and its sleeper on CPU 2 was held to CPU 2's
// SCHED_OTHER rule; in draw 83 of campaign 20261241, 7.0, the teardown
// moved CPU 6's sleeper 147 ms before the machine line's time.) Here the
// moved sleeper shows 200 ms before it.
func TestHrtimerSleeperMovedByOffline(t *testing.T) {
	const machine = "# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.1.192 hz=250 cmdline=\"\" busy= sleepers=0-1 at=\"500ms offline 0\" (QEMU TCG; PREEMPT_RT; fifo-sleepers=0; period=2ms absolute)\n"
	const start = "     tmigr-guest-150     [001] .....     1.000000: tracing_mark_write: tmigr-lab: start\n"
	own := func(ts string) string {
		return "   tmigr-sleeper-201     [001] d..1.     " + ts + ": hrtimer_start: hrtimer=00000000000000b1 function=hrtimer_wakeup expires=1002000000 softexpires=1002000000 mode=ABS\n"
	}
	const moved = "   tmigr-sleeper-200     [001] d..1.     1.300000: hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires=1302000000 softexpires=1302000000 mode=ABS|HARD\n"
	c := checkHrtimerText(t, machine+own("0.990000")+start+moved+own("1.700000"))
	if len(c.Mismatches) > 0 || c.UndeterminedReasons[whyMovedSleeper] != 1 || c.Matched != 2 {
		t.Errorf("%d/%d matched (%s), mismatches %+v; want the moved sleeper undetermined, CPU 1's own matched twice", c.Matched, c.Checked, c.Reasons(), c.Mismatches)
	}
	// Without the offline, the HARD start on CPU 1 breaks its SCHED_OTHER rule.
	c = checkHrtimerText(t, strings.Replace(machine, ` at="500ms offline 0"`, "", 1)+own("0.990000")+start+moved)
	if len(c.Mismatches) != 1 {
		t.Errorf("without the offline: mismatches %+v, want one (%s)", c.Mismatches, c.Reasons())
	}
}

// TestHrtimerMovedSleeperFirstSeenElsewhere: a window that begins after a
// SCHED_FIFO sleeper's CPU began going offline shows its thread first on
// CPU 0, which has no sleeper (no policy the load tells), then on CPU 1,
// a SCHED_OTHER sleeper's CPU, starting HARD: it is the moved sleeper,
// not CPU 1's. Seen on CPU 1 before the start, before the offline can
// have begun, the thread is CPU 1's own, and the start breaks its rule.
func TestHrtimerMovedSleeperFirstSeenElsewhere(t *testing.T) {
	const machine = "# machine: cpus=3 nodes=1 node-cpus=0-2 kernel=6.12.118 hz=250 cmdline=\"\" busy= sleepers=1-2 at=\"900ms offline 2\" (QEMU TCG; PREEMPT_RT; fifo-sleepers=2; period=2ms absolute)\n"
	const start = "     tmigr-guest-150     [001] .....     1.000000: tracing_mark_write: tmigr-lab: start\n"
	const elsewhere = "   tmigr-sleeper-200     [000] d..1.     1.050000: hrtimer_start: hrtimer=00000000000000a1 function=hrtimer_wakeup expires=1052000000 softexpires=1052000000 mode=ABS|HARD\n"
	const moved = "   tmigr-sleeper-200     [001] d..1.     1.100000: hrtimer_start: hrtimer=00000000000000a2 function=hrtimer_wakeup expires=1102000000 softexpires=1102000000 mode=ABS|HARD\n"
	c := checkHrtimerText(t, machine+start+elsewhere+moved)
	if len(c.Mismatches) > 0 || c.UndeterminedReasons[whyTwoCPUs] != 1 {
		t.Errorf("%d/%d matched (%s), mismatches %+v; want the start on CPU 1 undetermined", c.Matched, c.Checked, c.Reasons(), c.Mismatches)
	}
	before := strings.Replace(moved, "1.100000: hrtimer_start: hrtimer=00000000000000a2 function=hrtimer_wakeup expires=1102000000 softexpires=1102000000",
		"0.990000: hrtimer_start: hrtimer=00000000000000a2 function=hrtimer_wakeup expires=992000000 softexpires=992000000", 1)
	c = checkHrtimerText(t, machine+before+start)
	if len(c.Mismatches) != 1 {
		t.Errorf("seen on CPU 1 before the start: mismatches %+v, want one (%s)", c.Mismatches, c.Reasons())
	}
}
