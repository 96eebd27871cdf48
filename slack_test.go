package tmigr

import (
	"testing"
	"time"
)

// TestSlack drives a worker with a fake clock: with Config.Slack, two
// precise timers due 2 ms apart, less than the slack, cost one hrtimer
// interrupt, programmed for the first one's latest expiry (asked + slack),
// which runs both, in expiry order; a third, due after that interrupt, is
// not run before its own time, and the device then waits for its latest
// expiry. Under SCHED_FIFO (Priority) the slack is ignored, as the
// kernel gives real-time tasks none, and a negative one is refused.
func TestSlack(t *testing.T) {
	t.Parallel()
	const slack = 5 * time.Millisecond
	for _, prio := range []int{0, 50} {
		clk := &fakeClock{}
		rt, err := build(Config{CPUs: "0-1", Slack: slack, Priority: prio, pinTo: virtual(t)}, clk)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.e.Boot(); err != nil {
			t.Fatal(err)
		}
		w0 := rt.e.Worker(0)
		for _, w := range rt.e.Workers() {
			w.IdleRound(clk.t)
		}
		var ran []string
		rec := func(what string) func() {
			return func() { ran = append(ran, what+"@"+itoa(int(clk.t/int64(time.Millisecond)))) }
		}
		if _, err := rt.HRAfterFunc(0, time.Millisecond, rec("a"), Hard); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.HRAfterFunc(0, 3*time.Millisecond, rec("b"), Hard); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.HRAfterFunc(0, 7*time.Millisecond, rec("c"), Hard); err != nil {
			t.Fatal(err)
		}
		w0.IdleRound(clk.t)
		if prio != 0 {
			if got, want := w0.HB().Device(), int64(time.Millisecond); got != want {
				t.Fatalf("Priority %d: device at %d, want %d (no slack)", prio, got, want)
			}
			continue
		}
		want := int64(time.Millisecond + slack)
		if got := w0.HB().Device(); got != want {
			t.Fatalf("device at %d, want %d (the first timer plus the slack)", got, want)
		}
		clk.t = want
		w0.Service(clk.t)
		if len(ran) != 2 || ran[0] != "a@6" || ran[1] != "b@6" {
			t.Fatalf("the interrupt at 6 ms ran %v, want [a@6 b@6]", ran)
		}
		if n := w0.Peek().Timers; n != 2 {
			t.Fatalf("%d timers counted, want 2", n)
		}
		if got, want := w0.HB().Device(), int64(7*time.Millisecond+slack); got != want {
			t.Fatalf("after the interrupt the device is at %d, want %d (the third timer plus the slack)", got, want)
		}
	}
	if _, err := build(Config{CPUs: "0-1", Slack: -1, pinTo: virtual(t)}, &fakeClock{}); err == nil {
		t.Fatal("a negative Slack was accepted")
	}
}
