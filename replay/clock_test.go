package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// cutTrace is a window of this project's 2-CPU 6.18 host, recorded through
// tracefs with the timer and timer_migration events (hrtimers included),
// cut from a 3-second recording so that it starts after CPU 0's first
// global timer was armed. Its idle CPU 0 publishes one next expiry,
// 124064000000 ns, eight times over, always with the same first timer the
// window does not hold.
const cutTrace = "kvm2-6.18-remote-target-woke-cut.txt"

// TestClockFromTheTick: the tick's hrtimer expires on the jiffies grid and
// the softirq it raises prints the jiffies it read, so a recording with
// hrtimer lines ties jiffies to nanoseconds outright: line 25 of
// kvm2-1node-sleepers.txt is the tick due at 6288480000000 ns, line 33 its
// softirq at jiffies 4296464367.
func TestClockFromTheTick(t *testing.T) {
	wantOffset(t, "kvm2-1node-sleepers.txt", 6288480000000-4296464367*4000000)
}

// TestClockNotFromOnePublication: one published expiry, however often
// repeated, is a lower bound of the clock's offset, not the offset. Without
// the tick's lines the cut recording leaves the clock unknown (its rounds
// undetermined); with them the tick gives it. Taking the repeated bound
// for the offset put the round at line 222 128 ms early and made it a
// mismatch.
func TestClockNotFromOnePublication(t *testing.T) {
	tr, err := ReadFile(filepath.Join("../testdata/traces", cutTrace))
	if err != nil {
		t.Fatal(err)
	}
	var noHR Trace
	noHR = *tr
	noHR.Events = nil
	for _, ev := range tr.Events {
		if !strings.HasPrefix(ev.Name, "hrtimer_") {
			noHR.Events = append(noHR.Events, ev)
		}
	}
	for _, tc := range []struct {
		name  string
		tr    *Trace
		known bool
	}{{"with the tick", tr, true}, {"without hrtimer lines", &noHR, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(tc.tr, 250)
			if c.known != tc.known {
				t.Errorf("clock known %v (off %d), want %v", c.known, c.off, tc.known)
			}
			if want := int64(124064000000 - 4294923264*4000000); c.known && c.off != want {
				t.Errorf("off %d, want %d (the tick at line 211, jiffies 4294923264 at line 214)", c.off, want)
			}
			res, err := Run(tc.tr, Options{Wheel: true, Tmigr: true, Placement: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range append(res.Tmigr.Mismatches, res.Placement.Mismatches...) {
				t.Errorf("mismatch: %+v", m)
			}
		})
	}
}

// TestRemoteExpiryWhoseTargetWoke: in the cut recording CPU 0 expires CPU
// 1's timers (line 16) while CPU 1 wakes and runs them itself; CPU 0's walk
// is not printed, and its next softirq (lines 211-229) runs its own
// timers, one of which (wq_watchdog_timer_fn) re-arms itself on CPU 0. The
// placement check must see that re-arm as CPU 0's, not as a timer of CPU
// 1's base re-armed from its callback.
func TestRemoteExpiryWhoseTargetWoke(t *testing.T) {
	tr, err := ReadFile(filepath.Join("../testdata/traces", cutTrace))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Placement: true, CPUs: 2, HZ: 250})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placement.Mismatches) != 0 || res.Placement.Matched == 0 {
		t.Errorf("placement %d/%d matched, mismatches %+v", res.Placement.Matched, res.Placement.Checked, res.Placement.Mismatches)
	}
	found := false
	for _, ev := range tr.Events {
		if d, ok := ev.Data.(ftrace.TimerStart); ok && d.Function == "wq_watchdog_timer_fn" && d.CPU == 0 && ev.CPU == 0 {
			found = true
		}
	}
	if !found {
		t.Fatal("the recording lost its wq_watchdog_timer_fn re-arm")
	}
}

// TestRemoteExpiryDeferrableAfterRound: in a window of a fresh 7.0
// recording, busy CPU 3 expires idle CPU 6's timers in its task's softirq
// (line 70), CPU 6 wakes meanwhile (no walk printed), and 15 ms later, in
// the same task, CPU 3's own softirq runs tcp_orphan_update, armed before
// the window, which re-arms itself deferrable on CPU 3 (line 106). A
// deferrable timer sits on BASE_DEF, which timer_expire_remote never runs:
// it is CPU 3's, and its re-arm stays there.
func TestRemoteExpiryDeferrableAfterRound(t *testing.T) {
	tr, err := ReadFile("../testdata/traces/vm7-1node-mixed-7.0-deferrable-after-round-cut.txt")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Placement: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Placement.Mismatches) != 0 || res.Placement.Matched < 3 {
		t.Errorf("placement %d/%d matched, mismatches %+v", res.Placement.Matched, res.Placement.Checked, res.Placement.Mismatches)
	}
}

// TestTickBoundsOnlyWithinItsJiffy replays a window of a fresh 7.0
// PREEMPT_RT recording (3 CPUs, nohz_full=1-2) whose timer thread
// (ktimers) ran a tick's softirq jiffies after the tick: taken as a bound
// on the clock, that late softirq put the clock a tick low, and from line
// 4149 on CPU 0's rounds, which expired CPU 1's timers, found nothing due.
// The tick bounds the clock only through a softirq that read jiffies
// within the tick's own jiffy.
func TestTickBoundsOnlyWithinItsJiffy(t *testing.T) {
	c := replayWindow(t, "vm3-1node-nohzfull-rt-7.0-tick-jiffy-bound.txt")
	if c.Matched != 927 || c.Checked != 957 {
		t.Errorf("tmigr %d/%d matched (%s), want 927/957", c.Matched, c.Checked, c.Reasons())
	}
}

// TestClockBucketOffWheel: a window of a 15-CPU 6.19 guest where CPU 11
// expired nohz_full CPU 14's bucket of two delack timers and ran the first
// for 20 ms; CPU 14, idle meanwhile, published its next event without the
// second, which had left the wheel with the bucket (collect_expired_timers).
// Counted as still pending, that timer and one like it on CPU 6 voted twice
// for an offset 41 jiffies late, the largest bound seen twice, and every
// expiry of the recording came out 164 ms late.
func TestClockBucketOffWheel(t *testing.T) {
	c := nextevtWindow(t, "vm15-2node-isol-6.19-bucket-off-wheel-clock.txt")
	if c.Matched < 300 {
		t.Errorf("only %d nextevt values matched (%s)", c.Matched, c.Reasons())
	}
}

// TestQueueBucketOffWheel: the first expiry of a bucket takes the bucket's
// other timers of that base off the wheel, and no other.
func TestQueueBucketOffWheel(t *testing.T) {
	q := newQueue()
	start := func(timer uint64, cpu int, flags ftrace.TimerFlags, bucket uint64) {
		q.start(ftrace.TimerStart{Timer: timer, CPU: cpu, Flags: flags, BucketExpiry: bucket})
	}
	start(1, 3, 0, 100)
	start(2, 3, 0, 100)
	start(3, 3, ftrace.TimerPinned, 100) // another base
	start(4, 4, 0, 100)                  // another CPU
	start(5, 3, 0, 101)                  // another bucket
	q.cancel(1)
	var off []uint64
	q.expire(ftrace.TimerExpireEntry{Timer: 1, BaseClk: 100}, func(tm uint64) { off = append(off, tm) })
	if len(off) != 1 || off[0] != 2 {
		t.Errorf("taken off with timer 1: %v, want [2]", off)
	}
	if b, ok := q.first(3, baseOfFlags(0)); !ok || b != 101 {
		t.Errorf("CPU 3's first global bucket: %d %v, want 101", b, ok)
	}
	if b, ok := q.first(3, baseOfFlags(ftrace.TimerPinned)); !ok || b != 100 {
		t.Errorf("CPU 3's first local bucket: %d %v, want 100", b, ok)
	}
	if b, ok := q.first(4, baseOfFlags(0)); !ok || b != 100 {
		t.Errorf("CPU 4's first global bucket: %d %v, want 100", b, ok)
	}
}

// TestClockContradictionBoundsNeitherSide: jiffies never go back, so when
// one CPU's line reads more jiffies than lines of other CPUs stamped
// clearly later, one trace clock is off. The shape is campaign 20261214's
// draw 8 (7.3, 5 CPUs): CPU 0 stamped a read of jiffies 518 4 ms before
// CPUs 1 and 2 still read 514. Taken as a lower bound for the later
// lines of other CPUs, CPU 0's line put CPU 1's snapshot at 518 or more
// while CPU 1 itself read 514 after it: the round's now was wrong by four
// jiffies and its next event a mismatch.
func TestClockContradictionBoundsNeitherSide(t *testing.T) {
	const text = `# machine: cpus=3 nodes=1 node-cpus=0-2 kernel=7.3.4 hz=1000
          <idle>-0       [001] ..s1.     5.120000: timer_expire_entry: timer=0000000000000001 function=process_timeout now=513 baseclk=513
          <idle>-0       [000] ..s1.     5.128218: timer_expire_entry: timer=0000000000000002 function=process_timeout now=518 baseclk=518
          <idle>-0       [001] ..s1.     5.130000: timer_expire_entry: timer=0000000000000003 function=process_timeout now=514 baseclk=514
          <idle>-0       [002] ..s1.     5.131000: timer_expire_entry: timer=0000000000000004 function=process_timeout now=514 baseclk=514
`
	tr, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := newClock(tr, 1000)
	// The snapshot CPU 1 took just before its read of 514 at 5.130000.
	lo, hi, hasLo, hasHi := c.bounds(2, 1)
	if !hasLo || !hasHi || lo > hi {
		t.Fatalf("bounds [%d, %d] (lo %v, hi %v): contradictory or missing", lo, hi, hasLo, hasHi)
	}
	if lo != 513 || hi != 514 {
		t.Errorf("bounds [%d, %d], want [513, 514]: CPU 0's line at 5.128218 bounds no later line from below", lo, hi)
	}
}

// TestTickBelowPublishedBound: a window of a 6.12 PREEMPT_RT guest
// (campaign 20261215, draw 70) where CPU 0's tick handler ran 2.5 ms of
// trace time (lines 3241-3245) and the timer thread's softirq after it read
// the next jiffy (line 3278): by the trace clock, which under TCG does not
// keep CLOCK_MONOTONIC's pace, still within the tick's jiffy. Twice so, it
// put the clock a tick below the offset the published expiries give, and
// CPU 4's expiries came out 4 ms early. A tick bound below the published
// ones is no bound.
func TestTickBelowPublishedBound(t *testing.T) {
	c := nextevtWindow(t, "vm5-1node-nohzfull-rt-6.12-late-softirq-tick-bound.txt")
	if c.Matched < 700 {
		t.Errorf("only %d nextevt values matched (%s)", c.Matched, c.Reasons())
	}
}

// TestClockTickHandlerPastNextJiffy: a tick handler that ran into the next
// jiffy restarts its hrtimer two ticks on, past the handler's now
// (hrtimer_forward), and its softirq reads the jiffy that now moved
// jiffies to: in the window, the tick due at 6800000000 (line 1319)
// restarted for 6808000000 (line 1325) and its softirq read jiffies
// 4294893933 (line 1329). Its
// bound on the clock is the restart's less a tick. Taken from the expiry,
// two such ticks bounded the clock a jiffy below the offset that five
// others and a published expiry give, and nextevt values came out 4 ms
// early.
func TestClockTickHandlerPastNextJiffy(t *testing.T) {
	wantOffset(t, "vm5-1node-nohzfull-rt-6.12-window-tick-handler-into-next-jiffy.txt", 6708000000-4294893909*4000000)
}

// wantOffset reads a recording of testdata/traces made at HZ=250 and
// holds its clock's offset to want.
func wantOffset(t *testing.T, name string, want int64) {
	t.Helper()
	tr, err := ReadFile(filepath.Join("../testdata/traces", name))
	if err != nil {
		t.Fatal(err)
	}
	if c := newClock(tr, 250); !c.known || c.off != want {
		t.Errorf("%s: off %d (known %v), want %d", name, c.off, c.known, want)
	}
}
