package tmigr

import (
	"fmt"
	"testing"
	"time"
)

// TestResetLaterIsLazy: a Reset that moves an armed high-resolution timer
// later leaves the core's queue alone (the device stays at the old expiry),
// the worker that finds it due there queues it for the new expiry without
// running it or counting an expiry, and it runs once, at the new expiry. A
// Reset earlier, a Stop, and a Reset of a timer that has run go to the core
// at once.
func TestResetLaterIsLazy(t *testing.T) {
	clk, rt := fakeRuntime(t)
	w0 := rt.workers[0]
	for _, w := range rt.order {
		w.idle(clk.t)
	}
	const ms = int64(time.Millisecond)
	var ran []int64
	tm, err := rt.HRAfterFunc(0, time.Millisecond, func() { ran = append(ran, clk.t/ms) }, Hard)
	if err != nil {
		t.Fatal(err)
	}
	device := func(want int64, when string) {
		t.Helper()
		w0.idle(clk.t)
		if got := w0.hb.Device(); got != want {
			t.Fatalf("%s: device at %d ms, want %d ms", when, got/ms, want/ms)
		}
	}
	device(1*ms, "armed for 1 ms")

	if !tm.Reset(5 * time.Millisecond) {
		t.Fatal("Reset of an armed timer returned false")
	}
	device(1*ms, "after Reset(5 ms), lazy")
	clk.t = 1 * ms
	w0.service(clk.t)
	if len(ran) != 0 || w0.st.timers.Load() != 0 {
		t.Fatalf("at the old expiry: ran %v, %d expiries counted; want none", ran, w0.st.timers.Load())
	}
	device(5*ms, "queued again at the old expiry for the new one")
	clk.t = 5 * ms
	w0.service(clk.t)
	if len(ran) != 1 || ran[0] != 5 || w0.st.timers.Load() != 1 {
		t.Fatalf("at the new expiry: ran %v, %d expiries counted; want [5], 1", ran, w0.st.timers.Load())
	}

	// Expired: a Reset goes to the core.
	if tm.Reset(4 * time.Millisecond) {
		t.Fatal("Reset of an expired timer returned true")
	}
	device(9*ms, "Reset after the run")
	// Later, lazily; then earlier than the core's expiry: at once.
	tm.Reset(9 * time.Millisecond)
	device(9*ms, "Reset later again")
	tm.Reset(2 * time.Millisecond)
	device(7*ms, "Reset earlier than the core's expiry")
	// Later again, then Stop: nothing runs at either expiry.
	tm.Reset(20 * time.Millisecond)
	if !tm.Stop() {
		t.Fatal("Stop of an armed timer returned false")
	}
	for _, at := range []int64{7, 9, 25, 40} {
		clk.t = at * ms
		w0.service(clk.t)
	}
	if len(ran) != 1 {
		t.Fatalf("after Stop: ran %v, want only [5]", ran)
	}
}

// TestPlaceOnePerGroup: a timer made off the workers goes to the last
// online housekeeping worker of each group of eight in turn, isolated and
// offline workers skipped, so the workers' wake-ups land on few CPUs.
func TestPlaceOnePerGroup(t *testing.T) {
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
	rt.workers[17].online.Store(false) // as Offline leaves it (no threads here)
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
