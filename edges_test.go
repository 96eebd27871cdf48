package tmigr

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestGOMAXPROCSRestoredInAnyOrder: overlapping runtimes with SpareProcs
// add their spare Ps together and GOMAXPROCS is back to the program's value
// once the last one closes, whichever closes first (it was left at 4 when two runtimes of two
// workers closed in start order: 2 -> 4 -> 6 -> 6 -> 4). A value the
// program sets while they run is its new value, the spares on top.
func TestGOMAXPROCSRestoredInAnyOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cfg := Config{CPUs: "0-1", pinTo: virtual(t), SpareProcs: true}
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		runtime.GOMAXPROCS(2)
		var rts [2]*Runtime
		for i, want := range []int{4, 6} {
			rt, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rts[i] = rt
			if got := runtime.GOMAXPROCS(0); got != want {
				t.Fatalf("GOMAXPROCS %d after Start %d, want %d", got, i+1, want)
			}
		}
		for i, want := range []int{4, 2} {
			if err := rts[order[i]].Close(); err != nil {
				t.Fatal(err)
			}
			if got := runtime.GOMAXPROCS(0); got != want {
				t.Fatalf("closing in order %v: GOMAXPROCS %d after Close %d, want %d", order, got, i+1, want)
			}
		}
	}

	// The program's own value, set while a runtime runs, is the base the
	// spares of every runtime running go on, and what the last Close
	// leaves.
	runtime.GOMAXPROCS(2)
	a, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(3)
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 7 {
		t.Fatalf("GOMAXPROCS %d, want the program's 3 plus 2 spares of each runtime", got)
	}
	a.Close()
	if got := runtime.GOMAXPROCS(0); got != 5 {
		t.Fatalf("GOMAXPROCS %d after closing the runtime started before the program's value, want 5", got)
	}
	b.Close()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS %d at the end, want the program's 3", got)
	}
}

// TestSparePsKept: a GOMAXPROCS the program sets while a runtime runs (as
// the testing package does before each measured round of a benchmark)
// takes the spare Ps away; a worker's late wake-up puts them back on top of
// the program's value, and Close leaves that value. The look is rate
// limited (keepProcsEvery), so a second late wake-up right after does not
// take the scheduler's lock again.
func TestSparePsKept(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	rt, err := Start(Config{CPUs: "0-1", pinTo: virtual(t), SpareProcs: true})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(1)
	now := rt.e.Now()
	rt.e.Loaded(now)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("GOMAXPROCS %d after a late wake-up, want the program's 1 plus 2 spares", got)
	}
	runtime.GOMAXPROCS(2)
	rt.e.Loaded(now + keepProcsEvery/2)
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("GOMAXPROCS %d: a look within keepProcsEvery of the last one changed it", got)
	}
	rt.e.Loaded(now + keepProcsEvery)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("GOMAXPROCS %d after a late wake-up, want the program's 2 plus 2 spares", got)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("GOMAXPROCS %d after Close, want the program's 2", got)
	}
}

// TestZeroRuntime: a Runtime not made by Start returns ErrNotStarted from
// every method that can fail and is inert in the others; none panics (it
// panicked with an index error).
func TestZeroRuntime(t *testing.T) {
	t.Parallel()
	var rt Runtime
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Close":       rt.Close,
		"Offline":     func() error { return rt.Offline(0) },
		"Online":      func() error { return rt.Online(0) },
		"Exclude":     func() error { return rt.Exclude("") },
		"Sleep":       func() error { return rt.Sleep(ctx, time.Millisecond) },
		"SleepOn":     func() error { return rt.SleepOn(ctx, 0, time.Millisecond, Hard) },
		"Go":          func() error { return rt.Go(0, func() {}) },
		"AfterFuncOn": func() error { _, err := rt.AfterFuncOn(0, time.Millisecond, func() {}); return err },
		"HRAfterFunc": func() error { _, err := rt.HRAfterFunc(0, time.Millisecond, func() {}, Hard); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotStarted) {
			t.Errorf("%s on a zero Runtime: %v, want ErrNotStarted", name, err)
		}
	}
	tm := rt.AfterFunc(time.Millisecond, func() { t.Error("a zero Runtime's timer ran") })
	if tm.Stop() || tm.Reset(time.Millisecond) {
		t.Error("a zero Runtime's timer was armed")
	}
	rt.Yield()
	if rt.Stats() != nil || rt.Isolated() != nil || len(rt.CPUs()) != 0 || rt.CPU() != -1 || rt.Err() != nil {
		t.Errorf("a zero Runtime: Stats %v, Isolated %v, CPUs %v, CPU %d, Err %v", rt.Stats(), rt.Isolated(), rt.CPUs(), rt.CPU(), rt.Err())
	}
}

// TestRunningTimerStaysAfterHotplug: a timer whose worker went offline ran
// where its timers went (worker 0); re-armed from its own function, after
// its worker came back, it stays on the base it runs from, as mod_timer
// and hrtimer_start_range_ns keep a running timer on its base
// (base->running_timer, hrtimer_callback_running); re-armed once it has
// returned, it goes back to its worker.
func TestRunningTimerStaysAfterHotplug(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"wheel", "hrtimer"} {
		t.Run(kind, func(t *testing.T) {
			rt := newRuntime(t, Config{CPUs: "0-1", pinTo: virtual(t)})
			ran := make(chan int, 3)
			running, online := make(chan struct{}), make(chan struct{})
			var tm *Timer
			armed := make(chan struct{})
			runs := 0
			f := func() {
				<-armed
				runs++
				ran <- rt.CPU()
				if runs == 1 {
					close(running)
					<-online
					tm.Reset(time.Millisecond)
				}
			}
			var err error
			if kind == "wheel" {
				tm, err = rt.AfterFuncOn(1, time.Hour, f, Pinned)
			} else {
				tm, err = rt.HRAfterFunc(1, time.Hour, f, Hard)
			}
			if err != nil {
				t.Fatal(err)
			}
			close(armed)
			if err := rt.Offline(1); err != nil {
				t.Fatal(err)
			}
			if kind == "wheel" && tm.x.wt.CPU() != 0 {
				t.Fatalf("after Offline(1) the timer is on worker %d's wheel, want 0's", tm.x.wt.CPU())
			}
			tm.Reset(time.Millisecond) // worker 1 is offline: it stays on 0
			if c := recv(t, ran, "the moved timer"); c != 0 {
				t.Fatalf("the moved timer ran on %d, want 0", c)
			}
			<-running
			if err := rt.Online(1); err != nil {
				t.Fatal(err)
			}
			close(online)
			if c := recv(t, ran, "the timer re-armed while it ran"); c != 0 {
				t.Fatalf("re-armed while running after Online: ran on %d, want 0 (where it ran)", c)
			}
			// f sent before returning, and a timer re-armed while its
			// function runs stays on the base it runs from: wait until the
			// core no longer marks it running.
			for deadline := time.Now().Add(10 * time.Second); kind == "wheel" && rt.e.Set().Running(&tm.x.wt) || kind == "hrtimer" && tm.ht.Running(); {
				if time.Now().After(deadline) {
					t.Fatal("the timer's second run did not return in 10 s")
				}
				time.Sleep(100 * time.Microsecond)
			}
			tm.Reset(time.Millisecond)
			if c := recv(t, ran, "the timer re-armed from outside"); c != 1 {
				t.Fatalf("re-armed from outside after Online: ran on %d, want its worker 1", c)
			}
		})
	}
}

// TestDefaultIdleMode: the zero Config idles in HaltPoll, the mode chosen
// from the lateness measurements (see IdleMode), and every mode is
// accepted while a value outside them is not.
func TestDefaultIdleMode(t *testing.T) {
	t.Parallel()
	var cfg Config
	if cfg.Idle != HaltPoll || cfg.Idle.String() != "haltpoll" {
		t.Fatalf("the default idle mode is %v, want haltpoll", cfg.Idle)
	}
	for _, m := range []IdleMode{HaltPoll, Halt, Poll} {
		if _, err := build(Config{CPUs: "0", Idle: m}, &fakeClock{}); err != nil {
			t.Errorf("idle mode %v: %v", m, err)
		}
	}
	for _, m := range []IdleMode{-1, Poll + 1} {
		if _, err := build(Config{CPUs: "0", Idle: m}, &fakeClock{}); err == nil {
			t.Errorf("idle mode %d accepted", int(m))
		}
	}
}
