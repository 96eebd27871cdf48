package tmigr

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/engine"
)

// TestResetLaterIsLazy: a Reset that moves an armed high-resolution timer
// later leaves the core's queue alone (the device stays at the old expiry),
// the worker that finds it due there queues it for the new expiry without
// running it or counting an expiry, and it runs once, at the new expiry. A
// Reset earlier, and a Reset of a timer that has run, reach the core when
// the worker next looks at its list of moves (TestResetEarlierIsListed); a
// Stop goes to the core at once.
func TestResetLaterIsLazy(t *testing.T) {
	t.Parallel()
	clk, w0, tm, runs := oneHRTimer(t, time.Millisecond)
	device := func(want int64, when string) {
		t.Helper()
		w0.IdleRound(clk.t)
		if got := w0.HB().Device(); got != want {
			t.Fatalf("%s: device at %d ms, want %d ms", when, got/ms, want/ms)
		}
	}
	device(1*ms, "armed for 1 ms")

	if !tm.Reset(5 * time.Millisecond) {
		t.Fatal("Reset of an armed timer returned false")
	}
	device(1*ms, "after Reset(5 ms), lazy")
	clk.t = 1 * ms
	w0.Service(clk.t)
	if len(*runs) != 0 || w0.Peek().Timers != 0 {
		t.Fatalf("at the old expiry: ran %v, %d expiries counted; want none", *runs, w0.Peek().Timers)
	}
	device(5*ms, "queued again at the old expiry for the new one")
	clk.t = 5 * ms
	w0.Service(clk.t)
	if len(*runs) != 1 || (*runs)[0] != 5 || w0.Peek().Timers != 1 {
		t.Fatalf("at the new expiry: ran %v, %d expiries counted; want [5], 1", *runs, w0.Peek().Timers)
	}

	// Expired: a Reset lists it, the worker queues it.
	if tm.Reset(4 * time.Millisecond) {
		t.Fatal("Reset of an expired timer returned true")
	}
	w0.Service(clk.t)
	device(9*ms, "Reset after the run")
	// Later, lazily; then earlier than the core's expiry: at once.
	tm.Reset(9 * time.Millisecond)
	device(9*ms, "Reset later again")
	tm.Reset(2 * time.Millisecond)
	device(9*ms, "Reset earlier than the core's expiry, listed")
	w0.Service(clk.t)
	device(7*ms, "Reset earlier, after the worker's look at its list")
	// Later again, then Stop: nothing runs at either expiry.
	tm.Reset(20 * time.Millisecond)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	for _, at := range []int64{7, 9, 25, 40} {
		clk.t = at * ms
		w0.Service(clk.t)
	}
	if len(*runs) != 1 {
		t.Fatalf("after Stop: ran %v, want only [5]", *runs)
	}
}

// TestResetEarlierIsListed: a Reset that moves an armed high-resolution
// timer earlier, or arms one that has run or was stopped, lists it for its
// worker and leaves the core's queue alone;
// the worker queues it for the new expiry when it next looks (service, or a
// rescue of it), and it runs once, there. A worker asleep past the new
// expiry is kicked, one awake is not; a listed timer that was stopped, or
// moved later again, is left as it is; one the worker finds overdue is
// counted late from the expiry asked for.
func TestResetEarlierIsListed(t *testing.T) {
	t.Parallel()
	clk, w0, tm, runs := oneHRTimer(t, 10*time.Millisecond)
	w0.IdleRound(clk.t)
	if dev := w0.HB().Device(); dev != 10*ms {
		t.Fatalf("armed for 10 ms: device at %d ms", dev/ms)
	}

	// The worker is awake (its last deadline is not after now): no kick.
	w0.Awake(clk.t)
	if !tm.Reset(4 * time.Millisecond) {
		t.Fatal("Reset of an armed timer returned false")
	}
	if !w0.Peek().Listed || w0.HB().Device() != 10*ms || w0.Peek().Pending != 0 {
		t.Fatalf("after Reset(4 ms): listed %v, device at %d ms, pending %#x; want listed, 10 ms, nothing",
			w0.Peek().Listed, w0.HB().Device()/ms, w0.Peek().Pending)
	}
	w0.Service(clk.t)
	if w0.Peek().Listed || w0.HB().Device() != 4*ms {
		t.Fatalf("after the worker's look: listed %v, device at %d ms; want empty, 4 ms", w0.Peek().Listed, w0.HB().Device()/ms)
	}

	// Asleep until 4 ms, moved to 2 ms: kicked, its deadline lowered.
	w0.Asleep(4 * ms)
	tm.Reset(2 * time.Millisecond)
	if !w0.Peek().TimerKick || w0.Peek().SleepUntil != 2*ms {
		t.Fatalf("Reset(2 ms) under a sleep to 4 ms: pending %#x, sleep until %d ms; want a timer kick, 2 ms",
			w0.Peek().Pending, w0.Peek().SleepUntil/ms)
	}
	w0.Service(clk.t)
	for _, at := range []int64{1, 2, 3, 4, 10} {
		clk.t = at * ms
		w0.Service(clk.t)
	}
	if fmt.Sprint(*runs) != "[2]" || w0.Peek().Timers != 1 {
		t.Fatalf("ran at %v ms, %d expiries counted; want [2], 1", *runs, w0.Peek().Timers)
	}

	// Listed, then stopped: nothing runs; listed, then moved later than the
	// core's expiry again: it runs at the later one only.
	w0.Awake(clk.t)
	tm.Reset(20 * time.Millisecond) // has run: listed, 30 ms
	if !w0.Peek().Listed || w0.HB().Device() != math.MaxInt64 {
		t.Fatalf("Reset after the run: listed %v, device at %d; want listed, none", w0.Peek().Listed, w0.HB().Device())
	}
	w0.Service(clk.t)
	if w0.HB().Device() != 30*ms {
		t.Fatalf("Reset after the run, the worker having looked: device at %d ms, want 30 ms", w0.HB().Device()/ms)
	}
	tm.Reset(5 * time.Millisecond) // listed, 15 ms
	if !tm.Stop() {
		t.Fatal("Stop of a listed timer returned false")
	}
	tm.Reset(20 * time.Millisecond) // stopped: listed, 30 ms
	tm.Reset(5 * time.Millisecond)  // listed, 15 ms
	tm.Reset(25 * time.Millisecond) // later than the core's: lazy, 35 ms
	for _, at := range []int64{10, 15, 30, 34} {
		clk.t = at * ms
		w0.Service(clk.t)
	}
	if fmt.Sprint(*runs) != "[2]" {
		t.Fatalf("after Stop and a move later: ran at %v ms, want only [2]", *runs)
	}
	clk.t = 35 * ms
	w0.Service(clk.t)
	if fmt.Sprint(*runs) != "[2 35]" {
		t.Fatalf("ran at %v ms, want [2 35]", *runs)
	}

	// Listed for 40 ms and found at 43 ms (the worker late): it runs then,
	// on the worker's next round (what was due in the core goes first), and
	// its lateness counts from 40 ms.
	tm.Reset(20 * time.Millisecond) // 55 ms, listed
	w0.Service(clk.t)
	tm.Reset(5 * time.Millisecond) // 40 ms, listed
	clk.t = 43 * ms
	w0.Service(clk.t)
	if fmt.Sprint(*runs) != "[2 35]" || w0.HB().Device() != 43*ms {
		t.Fatalf("after one round at 43 ms: ran at %v, device at %d ms; want [2 35], 43 ms", *runs, w0.HB().Device()/ms)
	}
	w0.Service(clk.t)
	if fmt.Sprint(*runs) != "[2 35 43]" {
		t.Fatalf("ran at %v ms, want [2 35 43]", *runs)
	}
	if h := (Histogram{w0.Lateness()}); h.Max() < 3*time.Millisecond {
		t.Fatalf("largest lateness %v, want at least 3 ms (asked for 40 ms, ran at 43)", h.Max())
	}
}

// ms is a millisecond in clock units, for the fake clock's tests.
const ms = int64(time.Millisecond)

// oneHRTimer starts a fake runtime with its workers idle and one hard
// hrtimer on worker 0 for d, and returns the runs' clock times in ms.
func oneHRTimer(t *testing.T, d time.Duration) (*fakeClock, *engine.Worker, *Timer, *[]int64) {
	t.Helper()
	clk, rt := fakeRuntime(t)
	for _, w := range rt.e.Workers() {
		w.IdleRound(clk.t)
	}
	runs := new([]int64)
	tm, err := rt.HRAfterFunc(0, d, func() { *runs = append(*runs, clk.t/ms) }, Hard)
	if err != nil {
		t.Fatal(err)
	}
	return clk, rt.e.Worker(0), tm, runs
}

// TestPlaceOnePerGroup: a timer made off the workers goes to the last
// online housekeeping worker of each group of eight in turn, isolated and
// offline workers skipped, so the workers' wake-ups land on few CPUs.
func TestPlaceOnePerGroup(t *testing.T) {
	t.Parallel()
	_, rt := fakeRuntimeWith(t, Config{CPUs: "0-19", Isolated: "3,12"})
	// Housekeeping: 0-2,4-11,13-19 (18 workers): groups 0-2,4-8 | 9-11,13-17 | 18-19.
	placed := func() []int {
		var got []int
		for h := range uint32(6) {
			got = append(got, rt.place(h, placeGroup))
		}
		return got
	}
	if got, want := fmt.Sprint(placed()), "[8 17 19 8 17 19]"; got != want {
		t.Fatalf("placed on %s, want %s", got, want)
	}
	rt.e.Worker(17).SetOnline(false) // as Offline leaves it (no threads here)
	// 17 offline: 0-2,4-8 | 9-11,13-16,18 | 19.
	if got, want := fmt.Sprint(placed()), "[8 18 19 8 18 19]"; got != want {
		t.Fatalf("with CPU 17 offline placed on %s, want %s", got, want)
	}
	tm := rt.AfterFunc(time.Hour, func() {})
	defer tm.Stop()
	if c := int(tm.cpu); c != 8 && c != 18 && c != 19 {
		t.Fatalf("AfterFunc off the workers placed its timer on CPU %d, not one of 8, 18, 19", c)
	}
	// Coarse timers: every housekeeping worker in turn.
	var coarse []int
	for h := range uint32(4) {
		coarse = append(coarse, rt.place(h, placeCoarse))
	}
	if got, want := fmt.Sprint(coarse), "[0 1 2 4]"; got != want {
		t.Fatalf("coarse timers placed on %s, want %s", got, want)
	}
}
