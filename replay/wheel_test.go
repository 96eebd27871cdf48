package replay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/wheel"
)

func traceFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../testdata/traces/*.txt")
	if len(files) == 0 {
		t.Fatal("no traces in testdata/traces")
	}
	return files
}

// readTrace reads a recording and the shape of its machine.
func readTrace(t *testing.T, f string) (*Trace, Shape) {
	t.Helper()
	tr, err := ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, s
}

// TestWheelTraces: every timer_start of the recordings is reproduced by our
// wheel; none is left undetermined but by what no line prints: state from
// before the recording (a timer armed before it that held a base clock
// back), or the jiffies a stalled CPU read before the start it printed.
func TestWheelTraces(t *testing.T) {
	total := 0
	for _, f := range traceFiles(t) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := CheckWheel(tr, tr.Header.Machine.HZ)
		t.Logf("%s: wheel %d/%d matched, %d undetermined", filepath.Base(f), c.Matched, c.Checked, c.Undetermined)
		for why := range c.UndeterminedReasons {
			if !strings.Contains(why, "before the recording") && why != whyJiffiesMoved {
				t.Errorf("%s: undetermined for a reason the recording holds: %q", f, why)
			}
		}
		if c.Checked == 0 || len(c.Mismatches) != 0 || c.Matched+c.Undetermined != c.Checked {
			t.Errorf("%s: %d/%d matched, %d undetermined, mismatches %v", f, c.Matched, c.Checked, c.Undetermined, c.Mismatches)
		}
		total += c.Checked
	}
	if total < 1600 {
		t.Errorf("only %d timer_start events checked", total)
	}
}

// TestWheelCatchesMismatch: a bucket the kernel could not have chosen is
// reported with its line.
func TestWheelCatchesMismatch(t *testing.T) {
	b, err := os.ReadFile("../testdata/traces/cpu0-busy-3s.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The first timer_start: expires=4295013810 [timeout=1] bucket_expiry=4295013811 idx=51.
	const good = "bucket_expiry=4295013811 cpu=0 idx=51"
	lines := strings.Split(string(b), "\n")
	n := -1
	for i, l := range lines {
		if strings.Contains(l, good) {
			lines[i] = strings.Replace(l, good, "bucket_expiry=4295013816 cpu=0 idx=80", 1)
			n = i + 1
			break
		}
	}
	if n < 0 {
		t.Fatal("test line not found")
	}
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	c := CheckWheel(tr, 250)
	if len(c.Mismatches) != 1 || c.Mismatches[0].Line != n {
		t.Fatalf("mismatches %v, want one at line %d", c.Mismatches, n)
	}
	if !strings.Contains(c.Mismatches[0].Model, "idx=51 bucket_expiry=4295013811") {
		t.Fatalf("model side %q", c.Mismatches[0].Model)
	}
}

// TestWheelUndetermined: a base holding a timer armed before the recording,
// whose bucket the trace never shows, leaves a start that a lagging clock
// could explain undetermined rather than matched or mismatched.
func TestWheelUndetermined(t *testing.T) {
	const trace = `# machine: cpus=1 nodes=1 node-cpus=0 kernel=6.12.117 hz=250 cmdline="" busy= sleepers=
          <idle>-0       [000] d.s2.   100.000000: timer_start: timer=00000000000000aa function=f expires=1510 [timeout=10] bucket_expiry=1512 cpu=0 idx=125 flags=D
          <idle>-0       [000] d.s2.   100.000100: timer_cancel: timer=00000000000000bb
`
	tr, err := Read(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	c := CheckWheel(tr, 250)
	if c.Checked != 1 || c.Undetermined != 1 {
		t.Fatalf("got %+v, want 1 undetermined", c)
	}
	// Without the earlier timer the same start is a plain mismatch.
	tr.Events = tr.Events[:1]
	c = CheckWheel(tr, 250)
	if len(c.Mismatches) != 1 {
		t.Fatalf("got %+v, want a mismatch", c)
	}
}

// TestWheelStaleNextExpiryAfterCancel: a timer pending since before the
// recording, cancelled (del_timer: detach_if_pending only flags
// next_expiry for recalculation), left the base's next_expiry at its
// bucket, which the trace never shows; a start right after (the same
// on-stack timer set up again and armed one jiffy ahead) found the clock
// held back there, more than a level-0 span behind jiffies, and went to
// level 1 (campaign 20261219 draw 39, 6.12 PREEMPT_RT: CPU 3's timer
// softirq starved on a busy vCPU). Its old life's base is not named, so
// the cancel may have been any base's until each recalculates; without
// the cancel the start is a mismatch.
func TestWheelStaleNextExpiryAfterCancel(t *testing.T) {
	const trace = `# machine: cpus=4 nodes=1 node-cpus=0-3 kernel=6.12.118 hz=250 cmdline="" busy= sleepers=
     rcu_preempt-19      [003] d..1.    22.898231: timer_cancel: timer=00000000d657300e
     rcu_preempt-19      [003] .....    22.898268: timer_init: timer=00000000d657300e
     rcu_preempt-19      [003] d..1.    22.898272: timer_start: timer=00000000d657300e function=process_timeout expires=4294897951 [timeout=1] bucket_expiry=4294897952 cpu=3 idx=100 flags=
`
	tr, err := Read(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	c := CheckWheel(tr, 250)
	if c.Checked != 1 || c.UndeterminedReasons[whyHeldBack] != 1 {
		t.Fatalf("got %+v, want 1 undetermined, held back", c)
	}
	tr.Events = tr.Events[1:]
	c = CheckWheel(tr, 250)
	if len(c.Mismatches) != 1 {
		t.Fatalf("without the cancel: %+v, want a mismatch", c)
	}
	tr, s := readTrace(t, "../testdata/traces/vm6-4node-isol-rt-6.12-stale-next-expiry-after-cancel.txt")
	c = CheckWheel(tr, s.HZ)
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyHeldBack] != 1 {
		t.Errorf("recording: mismatches %+v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
}

// TestWheelBucketBeingExpired: when the softirq expires a bucket, all of
// its timers leave the wheel at once (collect_expired_timers); one that
// re-arms from its callback while another of the bucket waits its turn
// sees the base clock forwarded to jiffies, not held back by the waiting
// one (the lab's finding vm16-1node-partition-busy-sleepers-6.19-wheel-clock:
// tcp_orphan_update re-arming while a delayed work of its bucket waited).
func TestWheelBucketBeingExpired(t *testing.T) {
	const hz = 250
	depth := wheel.DepthForHZ(hz)
	clk0 := uint64(4294913700)
	// Two global timers of CPU 0 in one bucket.
	_, be := wheel.Index(clk0+28, clk0, depth)
	jiffies := be + 987 // the CPU slept long past the bucket
	expires := jiffies + 25
	idx, want := wheel.Index(expires, jiffies, depth)
	if held, _ := wheel.Index(expires, be, depth); held == idx {
		t.Fatalf("the test shows nothing: a clock held at %d gives the same bucket", be)
	}
	ev := []ftrace.Event{
		{CPU: 0, Data: ftrace.TimerStart{Timer: 1, Function: "tcp_orphan_update", Expires: clk0 + 28, Timeout: 28, BucketExpiry: be, CPU: 0, Idx: 0}},
		{CPU: 0, Data: ftrace.TimerStart{Timer: 2, Function: "delayed_work_timer_fn", Expires: clk0 + 28, Timeout: 28, BucketExpiry: be, CPU: 0, Idx: 0}},
		{CPU: 0, Data: ftrace.TimerCancel{Timer: 1}},
		{CPU: 0, Data: ftrace.TimerExpireEntry{Timer: 1, Function: "tcp_orphan_update", Now: jiffies, BaseClk: be}},
		{CPU: 0, Data: ftrace.TimerStart{Timer: 1, Function: "tcp_orphan_update", Expires: expires, Timeout: 25, BucketExpiry: want, CPU: 0, Idx: idx}},
		{CPU: 0, Data: ftrace.TimerExpireExit{Timer: 1}},
		{CPU: 0, Data: ftrace.TimerCancel{Timer: 2}},
		{CPU: 0, Data: ftrace.TimerExpireEntry{Timer: 2, Function: "delayed_work_timer_fn", Now: jiffies, BaseClk: be}},
		{CPU: 0, Data: ftrace.TimerExpireExit{Timer: 2}},
	}
	for i := range ev {
		ev[i].Line, ev[i].TS, ev[i].Name = i+1, int64(i+1)*1000, ev[i].Data.Name()
	}
	// The first two starts' buckets are the test's own; the third is the
	// one that matters.
	ev[0].Data = withIdx(ev[0].Data.(ftrace.TimerStart), depth, clk0)
	ev[1].Data = withIdx(ev[1].Data.(ftrace.TimerStart), depth, clk0)
	c := CheckWheel(&Trace{Events: ev}, hz)
	if len(c.Mismatches) > 0 || c.Matched != 3 {
		t.Errorf("%d/%d matched, mismatches %v", c.Matched, c.Checked, c.Mismatches)
	}
}

func withIdx(p ftrace.TimerStart, depth int, clk uint64) ftrace.TimerStart {
	p.Idx, p.BucketExpiry = wheel.Index(p.Expires, clk, depth)
	return p
}

// TestWheel61: Linux 6.1 prints no bucket_expiry; its timer_start lines
// are checked by their bucket index, every one reproduced.
func TestWheel61(t *testing.T) {
	files, _ := filepath.Glob("../testdata/traces/*-6.1.txt")
	if len(files) == 0 {
		t.Fatal("no 6.1 recordings")
	}
	for _, f := range files {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := CheckWheel(tr, tr.Header.Machine.HZ)
		for why := range c.UndeterminedReasons {
			if !strings.Contains(why, "before the recording") && why != whyJiffiesMoved {
				t.Errorf("%s: undetermined for a reason the recording holds: %q", f, why)
			}
		}
		if c.Checked == 0 || len(c.Mismatches) != 0 || c.Matched+c.Undetermined != c.Checked {
			t.Errorf("%s: %d/%d matched, mismatches %v", f, c.Matched, c.Checked, c.Mismatches)
		}
	}
}

// TestWheelNextExpiryLeftEarly: a cancel leaves the base's next_expiry
// where the cancelled timer's bucket put it, flagged for recalculation,
// and a timer softirq that runs late (ksoftirqd behind a busy task) leaves
// it so for ticks; __forward_timer_base then stops the clock there. The
// lines of a 6.1 guest's TCP load (lab campaign seed 20261205, draw 2):
// delack timers re-armed and re-armed again without ever expiring, the
// last start's level only explained by a clock at a cancelled bucket. That
// start is undetermined, in both the 6.1 form (no bucket_expiry) and the
// 6.9 form; with the base's timer softirq seen to run between (an expiry:
// __run_timers recalculated next_expiry) nothing holds the clock back and
// it is a mismatch; with it run while the timer was still pending, the
// recalculation itself set next_expiry to the timer's bucket, and the
// start is undetermined again.
func TestWheelNextExpiryLeftEarly(t *testing.T) {
	const hz = 250
	depth := wheel.DepthForHZ(hz)
	j0 := uint64(4294895073)
	start := func(tm uint64, expires, jiffies uint64, clk uint64, no61 bool) ftrace.Event {
		idx, be := wheel.Index(expires, clk, depth)
		p := ftrace.TimerStart{Timer: tm, Function: "tcp_delack_timer", Expires: expires, Timeout: int64(expires - jiffies), CPU: 8, Idx: idx, BucketExpiry: be}
		if no61 {
			p.BucketExpiry, p.NoBucketExpiry = 0, true
		}
		return ftrace.Event{CPU: 8, PID: 157, Data: p}
	}
	for _, tc := range []struct {
		name    string
		form61  bool
		expired bool // the base's softirq ran between
		// pendingAtRecalc: the softirq ran while the timer was still
		// pending (a 7.0 guest's TCP load, seed 20261207, draws 9 and
		// 34): the recalculation set next_expiry to its bucket, where
		// the cancel left it.
		pendingAtRecalc bool
	}{{"6.1", true, false, false}, {"6.9", false, false, false}, {"recalculated", false, true, false}, {"pending at recalculation", false, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ev := []ftrace.Event{start(1, j0+10, j0, j0, tc.form61)} // bucket j0+11
			if tc.pendingAtRecalc {
				ev = append(ev, start(4, j0+2, j0, j0, tc.form61),
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerCancel{Timer: 4}},
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerExpireEntry{Timer: 4, Function: "tcp_delack_timer", Now: j0 + 3, BaseClk: j0 + 3}},
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerExpireExit{Timer: 4}})
			}
			ev = append(ev,
				ftrace.Event{CPU: 8, PID: 157, Data: ftrace.TimerCancel{Timer: 1}},
				start(1, j0+40, j0+16, j0+16, tc.form61), // moved on; next_expiry stays at j0+11
			)
			if tc.expired {
				// A timer of the base expires at j0+20: __run_timers
				// recalculated next_expiry to j0+41.
				ev = append(ev, start(2, j0+19, j0+16, j0+16, tc.form61),
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerCancel{Timer: 2}},
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerExpireEntry{Timer: 2, Function: "tcp_delack_timer", Now: j0 + 20, BaseClk: j0 + 20}},
					ftrace.Event{CPU: 8, PID: 0, Flags: "..s1.", Data: ftrace.TimerExpireExit{Timer: 2}})
				// The CPU read j0+30 just before, on its local base:
				// the late start's forward read no fewer.
				pinned := start(5, j0+35, j0+30, j0+30, tc.form61)
				p := pinned.Data.(ftrace.TimerStart)
				p.Flags = ftrace.TimerPinned
				pinned.Data = p
				ev = append(ev, pinned)
			}
			// At jiffies j0+30 the clock stops at the early next_expiry
			// j0+11, and a timer 60 ticks ahead goes to level 1.
			late := start(3, j0+30+60, j0+30, j0+11, tc.form61)
			if held, _ := wheel.Index(j0+90, j0+30, depth); held == late.Data.(ftrace.TimerStart).Idx {
				t.Fatal("the test shows nothing: the clock at jiffies gives the same bucket")
			}
			ev = append(ev, late)
			for i := range ev {
				ev[i].Line, ev[i].TS, ev[i].Name = i+1, int64(i+1)*1000, ev[i].Data.Name()
			}
			c := CheckWheel(&Trace{Events: ev}, hz)
			if tc.expired {
				if len(c.Mismatches) != 1 {
					t.Errorf("after a recalculation: mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
				}
				return
			}
			if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyEarlyNext] != 1 {
				t.Errorf("mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
			}
		})
	}
}

// TestWheelClockAheadAfterExpiry: __run_timers counts the base's clock up
// before it runs a tick's timers, and leaves it there: within the jiffy of
// the tick it expired, the clock is one ahead of jiffies after the last
// callback returned too. A timer armed then already due (expires before
// the clock) goes to the clock's own bucket, one ahead of jiffies; told
// that the expiry was a jiffy earlier, the same start is a mismatch.
func TestWheelClockAheadAfterExpiry(t *testing.T) {
	const hz = 250
	j := uint64(4294896573)
	for _, tc := range []struct {
		name     string
		ranAt    uint64
		mismatch bool
	}{{"same jiffy", j, false}, {"a jiffy earlier", j - 1, true}} {
		ev := []ftrace.Event{
			{CPU: 3, Data: ftrace.TimerStart{Timer: 1, Function: "f", Expires: tc.ranAt - 1, Timeout: -1, CPU: 3, Idx: int((tc.ranAt) & 63), BucketExpiry: tc.ranAt}},
			{CPU: 3, Flags: "..s1.", Data: ftrace.TimerCancel{Timer: 1}},
			{CPU: 3, Flags: "..s1.", Data: ftrace.TimerExpireEntry{Timer: 1, Function: "f", Now: tc.ranAt, BaseClk: tc.ranAt}},
			{CPU: 3, Flags: "..s1.", Data: ftrace.TimerExpireExit{Timer: 1}},
			// After the callback, at jiffies j, a timer already due:
			// the kernel put it in the bucket of the clock, j+1.
			{CPU: 3, Data: ftrace.TimerStart{Timer: 2, Function: "g", Expires: j - 1, Timeout: -1, CPU: 3, Idx: int((j + 1) & 63), BucketExpiry: j + 1}},
		}
		for i := range ev {
			ev[i].Line, ev[i].TS, ev[i].Name = i+1, int64(i+1)*1000, ev[i].Data.Name()
		}
		c := CheckWheel(&Trace{Events: ev}, hz)
		if got := len(c.Mismatches) == 1 && c.Mismatches[0].Line == 5; got != tc.mismatch || !tc.mismatch && len(c.Mismatches) != 0 {
			t.Errorf("%s: mismatches %+v, undetermined %v", tc.name, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestWheelClockMovedByEmptyPass: a 6.1 PREEMPT_RT guest's TCP load (the
// fresh-recording step, seed 115) re-armed a write timer at jiffies J, 63
// ticks ahead, into level 0: its clock was J+1. A delack timer due by J had
// been cancelled, its bucket left as the base's next_expiry: the timer
// softirq ran __run_timers, whose pass over the empty bucket counted the
// clock up and printed nothing. Undetermined; without a due next_expiry
// nothing raises the softirq, and the start is a mismatch.
func TestWheelClockMovedByEmptyPass(t *testing.T) {
	const hz = 250
	depth := wheel.DepthForHZ(hz)
	j := uint64(4294898568)
	start := func(tm, expires, jiffies, clk uint64) ftrace.Event {
		idx, be := wheel.Index(expires, clk, depth)
		return ftrace.Event{CPU: 0, Data: ftrace.TimerStart{Timer: tm, Function: "tcp_write_timer", Expires: expires, Timeout: int64(expires - jiffies), CPU: 0, Idx: idx, BucketExpiry: be}}
	}
	for _, tc := range []struct {
		name     string
		due      bool // a delack due by j was cancelled
		mismatch bool
	}{{"due next_expiry", true, false}, {"none due", false, true}} {
		var ev []ftrace.Event
		if tc.due {
			ev = append(ev, start(1, j-3, j-10, j-10), ftrace.Event{CPU: 0, Data: ftrace.TimerCancel{Timer: 1}})
		} else {
			// The recording began before jiffies j (another CPU's
			// start shows j-10): CPU 0's softirq of j would have
			// printed its lines.
			other := start(3, j+10, j-10, j-10)
			other.CPU = 1
			d := other.Data.(ftrace.TimerStart)
			d.CPU = 1
			other.Data = d
			ev = append(ev, other)
		}
		late := start(2, j+63, j, j+1)
		if held, _ := wheel.Index(j+63, j, depth); held == late.Data.(ftrace.TimerStart).Idx {
			t.Fatal("the test shows nothing: the clock at jiffies gives the same bucket")
		}
		ev = append(ev, late)
		for i := range ev {
			ev[i].Line, ev[i].TS, ev[i].Name = i+1, int64(i+1)*1000, ev[i].Data.Name()
		}
		c := CheckWheel(&Trace{Events: ev}, hz)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || !tc.mismatch && c.UndeterminedReasons[whyEmptyPass] != 1 {
			t.Errorf("%s: mismatches %+v, undetermined %v", tc.name, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// checkJiffiesMoved replays start, whose line prints jiffies printed, on
// its CPU after earlier starts that printed other jiffies: undetermined
// (jiffies moved) when the CPU read 16 fewer before; a mismatch when it
// read as many as printed before, or printed nothing.
func checkJiffiesMoved(t *testing.T, hz int, printed uint64, start ftrace.TimerStart) {
	t.Helper()
	for _, tc := range []struct {
		name     string
		before   []uint64 // jiffies the CPU printed before
		mismatch bool
	}{{"read earlier", []uint64{printed - 18}, false}, {"read the same before", []uint64{printed - 18, printed}, true}, {"nothing before", nil, true}} {
		var ev []ftrace.Event
		for k, b := range tc.before {
			ev = append(ev, ftrace.Event{CPU: start.CPU, Data: ftrace.TimerStart{Timer: uint64(10 + k), Function: "process_timeout",
				Expires: b + 20, Timeout: 20, CPU: start.CPU, Idx: int((b + 21) % 64), BucketExpiry: b + 21}})
		}
		ev = append(ev, ftrace.Event{CPU: start.CPU, Data: start})
		for i := range ev {
			ev[i].Line, ev[i].TS, ev[i].Name = i+1, int64(i+1)*1_000_000, ev[i].Data.Name()
		}
		c := CheckWheel(&Trace{Events: ev}, hz)
		if got := len(c.Mismatches) == 1; got != tc.mismatch || !tc.mismatch && c.UndeterminedReasons[whyJiffiesMoved] != 1 {
			t.Errorf("%s: mismatches %+v, undetermined %v", tc.name, c.Mismatches, c.UndeterminedReasons)
		}
	}
}

// TestWheelJiffiesMovedPastExpiry: a timer armed already due (a
// schedule_timeout whose task was held up 14 jiffies between computing its
// expiry and arming it: timeout=-14) goes to the base clock's own level-0
// bucket, so only that very clock gives the kernel's bucket: one jiffy
// behind the printed jiffies is the forward's read before jiffies moved,
// where the CPU's earlier lines allow it (campaign 20261218 draw 62, 7.2
// PREEMPT_RT).
func TestWheelJiffiesMovedPastExpiry(t *testing.T) {
	const hz = 250
	depth := wheel.DepthForHZ(hz)
	j := uint64(4294894048)
	idx, be := wheel.Index(j-14, j-1, depth)
	checkJiffiesMoved(t, hz, j, ftrace.TimerStart{Timer: 1, Function: "process_timeout",
		Expires: j - 14, Timeout: -14, CPU: 5, Idx: idx, BucketExpiry: be})
	// The recording: CPU 5's base also had timers armed before it began,
	// which may as well have held the clock at 4294894047 (line 1800).
	tr, s := readTrace(t, "../testdata/traces/vm8-1node-nohzfull-rt-7.2-start-already-due-at-older-clock.txt")
	c := CheckWheel(tr, s.HZ)
	if len(c.Mismatches) != 0 || c.Undetermined != 1 {
		t.Errorf("recording: mismatches %+v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
}

// TestWheelJiffiesMovedDuringStart: add_timer_on armed random.c's
// mix_interrupt_randomness at expires = jiffies J on a 6.19 PREEMPT_RT
// guest, forwarded the base clock to J, and its timer_start line, two
// jiffies later, read J+2 ([timeout=-2]): a vCPU stalled between the
// forward and the tracepoint (enqueue_timer prints jiffies after
// calc_wheel_index). The bucket J+1 needs a clock of J or less, which
// the CPU's earlier lines allow: undetermined. When the CPU printed J+2
// before (or nothing at all), no read of the forward gives that bucket:
// a mismatch.
func TestWheelJiffiesMovedDuringStart(t *testing.T) {
	const hz = 250
	depth := wheel.DepthForHZ(hz)
	j := uint64(4294895154)
	idx, be := wheel.Index(j, j, depth)
	checkJiffiesMoved(t, hz, j+2, ftrace.TimerStart{Timer: 1, Function: "mix_interrupt_randomness",
		Expires: j, Timeout: -2, CPU: 0, Flags: ftrace.TimerPinned, Idx: idx, BucketExpiry: be})
	tr, s := readTrace(t, "../testdata/traces/vm4-4node-rt-6.19-jiffies-move-during-start.txt")
	c := CheckWheel(tr, s.HZ)
	if len(c.Mismatches) != 0 || c.UndeterminedReasons[whyJiffiesMoved] != 1 {
		t.Errorf("recording: mismatches %+v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
}

// TestWheelClockOnePastTickBeforeStart: a window's first start on CPU 4's
// global base (line 22) read jiffies 4294893978, the first the window
// shows, and the kernel bucketed it with the base clock one past them:
// __run_timers leaves base->clk one past the jiffy it ran, and CPU 4's
// softirq of that jiffy ran before the window began. Undetermined; with
// an earlier jiffy shown first, the softirq would have printed its
// lines, and it is a mismatch.
func TestWheelClockOnePastTickBeforeStart(t *testing.T) {
	const file = "vm5-2node-7.2-clock-one-past-tick-before-start.txt"
	lines, at := recordingAt(t, file, "6.705913: timer_start: ")
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if c := CheckWheel(tr, 250); len(c.Mismatches) != 0 || c.UndeterminedReasons[whyRanBefore] != 1 {
		t.Errorf("mismatches %v, undetermined %v", c.Mismatches, c.UndeterminedReasons)
	}
	_, h := recordingAt(t, file, "# entries-in-buffer/")
	lines[h] = strings.ReplaceAll(lines[h], "1947", "1948")
	earlier := "     tmigr-guest-999     [000] d..1.     6.700000: timer_start: timer=00000000abcdef01 function=process_timeout expires=4294894077 [timeout=100] bucket_expiry=4294894080 cpu=0 idx=64 flags="
	lines = slices.Insert(lines, at, earlier)
	if tr, err = Read(strings.NewReader(strings.Join(lines, "\n"))); err != nil {
		t.Fatal(err)
	}
	if c := CheckWheel(tr, 250); len(c.Mismatches) != 1 || c.Mismatches[0].Line != 23 {
		t.Errorf("with jiffies 4294893977 shown first: mismatches %v, want one at line 23", c.Mismatches)
	}
}
