package tmigr

// Ports of package time's own tests (Go's src/time/sleep_test.go and
// tick_test.go) to the runtime's Timer, Ticker and Sleep, each run for the
// precise (default) and the coarse flavour. Go's tests bound how late
// things happen; on a loaded machine those bounds are luck, so the ports
// keep what holds whatever the load (never early, exactly once, the results
// of Stop and Reset, nothing stale on a channel) and detect hangs only
// (recv's hangAfter).

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var flavours = []struct {
	name string
	opt  Option
}{
	{"precise", Precise(Hard)},
	{"precise-soft", Precise(Soft)},
	{"coarse", Coarse()},
}

func forFlavours(t *testing.T, test func(t *testing.T, rt *Runtime, o Option)) {
	rt := newRuntime(t, Config{})
	for _, f := range flavours {
		t.Run(f.name, func(t *testing.T) { test(t, rt, f.opt) })
	}
}

// TestAfterFunc is sleep_test.go's: a chain of ten AfterFunc(0) timers,
// each armed by the one before from its function, runs to the end.
func TestAfterFunc(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		i := 10
		c := make(chan bool)
		var f func()
		f = func() {
			i--
			if i >= 0 {
				rt.AfterFunc(0, f, o)
			} else {
				c <- true
			}
		}
		rt.AfterFunc(0, f, o)
		recv(t, c, "the chain's end")
		if i != -1 {
			t.Fatalf("i = %d", i)
		}
	})
}

// TestAfterStress is sleep_test.go's: timers keep firing while another
// goroutine forces garbage collections.
func TestAfterStress(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				runtime.GC()
				time.Sleep(time.Nanosecond)
			}
		}()
		for range 200 {
			tm := rt.NewTimer(1, o)
			recv(t, tm.C, "a 1 ns timer")
		}
		stop.Store(true)
		<-done
	})
}

// TestTimerStopStress is sleep_test.go's: timers stopped from many
// goroutines before they are due never run, and each Stop reports it.
func TestTimerStopStress(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		var wg sync.WaitGroup
		var ran atomic.Int32
		for i := range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tm := rt.AfterFunc(time.Hour, func() { ran.Add(1) }, o)
				time.Sleep(time.Duration(i) * 10 * time.Microsecond)
				if !tm.Stop() {
					t.Errorf("timer %d: Stop of a pending timer returned false", i)
				}
			}()
		}
		wg.Wait()
		if ran.Load() != 0 {
			t.Fatalf("%d stopped timers ran", ran.Load())
		}
	})
}

// TestReset is sleep_test.go's: Reset of an active timer returns true and
// moves it (it does not fire at the old time, and does at the new one);
// Reset of a fired one returns false. "Not at the old time" is checked by
// the time it sends, not by the scheduling of this goroutine.
func TestReset(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		const d = 2 * time.Millisecond
		t0 := rt.NewTimer(time.Hour, o)
		if !t0.Reset(time.Hour) {
			t.Fatal("resetting an active timer returned false")
		}
		reset := time.Now()
		if !t0.Reset(3 * d) {
			t.Fatal("resetting an active timer returned false")
		}
		if at := recv(t, t0.C, "the reset timer"); at.Sub(reset) < 3*d {
			t.Fatalf("reset timer fired %v after the Reset, asked for %v", at.Sub(reset), 3*d)
		}
		if t0.Reset(time.Hour) {
			t.Fatal("resetting an expired timer returned true")
		}
		t0.Stop()
	})
}

// TestTimerModifiedEarlier is sleep_test.go's: a timer stopped and reset
// into the past, repeatedly, fires; the idiom "if !t.Stop() { <-t.C }"
// never blocks (Stop reports an unreceived expiry as stopped, Go 1.23).
func TestTimerModifiedEarlier(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		past := time.Until(time.Unix(0, 0)) // negative
		for range 100 {
			tm := rt.NewTimer(time.Hour, o)
			for range 10 {
				if !tm.Stop() {
					recv(t, tm.C, "the expiry Stop did not stop")
				}
				tm.Reset(past)
			}
			recv(t, tm.C, "a timer reset into the past")
		}
	})
}

// TestAdjustTimers is sleep_test.go's: a hundred timers go, in a random
// interleaving, through fire, receive, long resets that are cancelled (each
// Reset of an idle timer returns false, each Stop of a pending one true),
// and a last Reset(0) that fires. The interleaving comes from a fixed seed;
// every assertion holds for any.
func TestAdjustTimers(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		rnd := rand.New(rand.NewPCG(13, 1))
		timers := make([]*Timer, 100)
		states := make([]int, len(timers))
		indices := rnd.Perm(len(timers))
		for len(indices) != 0 {
			ii := rnd.IntN(len(indices))
			i := indices[ii]
			tm := timers[i]
			state := states[i]
			states[i]++
			switch state {
			case 0:
				timers[i] = rt.NewTimer(0, o)
			case 1:
				recv(t, tm.C, "a 0 timer") // now idle
			case 2, 4, 6:
				if tm.Reset(time.Duration(state) * time.Minute) {
					t.Fatalf("timer %d state %d: Reset of an idle timer returned true", i, state)
				}
			case 3, 5, 7:
				if !tm.Stop() {
					t.Fatalf("timer %d state %d: Stop of a pending timer returned false", i, state)
				}
			case 8:
				if tm.Reset(0) {
					t.Fatalf("timer %d: Reset of a stopped timer returned true", i)
				}
			case 9:
				recv(t, tm.C, "a reset 0 timer")
			case 10:
				indices[ii] = indices[len(indices)-1]
				indices = indices[:len(indices)-1]
			}
		}
	})
}

// TestZeroTimer is sleep_test.go's: a timer of 0 fires, as a channel timer
// and as a function timer.
func TestZeroTimer(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		c := make(chan time.Time, 1)
		for range 500 {
			recv(t, rt.NewTimer(0, o).C, "NewTimer(0)")
			rt.AfterFunc(0, func() { c <- time.Now() }, o)
			recv(t, c, "AfterFunc(0)")
		}
	})
}

// TestStopNoStaleValue is Go 1.23's channel rule (sleep_test.go's
// TestTimerFromStopped/TestChan cases): after Stop or Reset returns, no
// value of the stopped arm is received, even if it had expired.
func TestStopNoStaleValue(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		tm := rt.NewTimer(0, o)
		waitFor(t, "the timer to expire", func() bool { return len(tm.C) == 1 })
		if !tm.Stop() {
			t.Fatal("Stop of an unreceived expiry returned false")
		}
		select {
		case v := <-tm.C:
			t.Fatalf("received %v after Stop", v)
		default:
		}
		tm.Reset(0)
		waitFor(t, "the timer to expire", func() bool { return len(tm.C) == 1 })
		if !tm.Reset(time.Hour) {
			t.Fatal("Reset over an unreceived expiry returned false")
		}
		select {
		case v := <-tm.C:
			t.Fatalf("received %v after Reset", v)
		default:
		}
		tm.Stop()
	})
}

// TestTicker is tick_test.go's: n ticks of d take at least n·d, and after
// Reset(2d) n more take at least 2n·d; after Stop no tick arrives. Each
// tick is sent no earlier than its place on the grid start + k·d.
func TestTicker(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		const n, d = 10, time.Millisecond
		start := time.Now()
		tk := rt.NewTicker(d, o)
		for k := 1; k <= n; k++ {
			if at := recv(t, tk.C, "a tick"); at.Sub(start) < time.Duration(k)*d {
				t.Fatalf("tick %d at %v, before %v", k, at.Sub(start), time.Duration(k)*d)
			}
		}
		if el := time.Since(start); el < n*d {
			t.Fatalf("%d ticks of %v took %v", n, d, el)
		}
		start = time.Now()
		tk.Reset(2 * d)
		for k := 1; k <= n; k++ {
			if at := recv(t, tk.C, "a tick"); at.Sub(start) < time.Duration(2*k)*d {
				t.Fatalf("tick %d after Reset at %v, before %v", k, at.Sub(start), time.Duration(2*k)*d)
			}
		}
		tk.Stop()
		time.Sleep(5 * d)
		select {
		case <-tk.C:
			t.Fatal("a tick after Stop")
		default:
		}
	})
}

// TestTickerStopWithDirectInitialization is tick_test.go's: Stop and
// Reset of a Ticker not made by NewTicker do nothing, and do not panic.
func TestTickerStopWithDirectInitialization(t *testing.T) {
	t.Parallel()
	c := make(chan time.Time)
	tk := &Ticker{C: c}
	tk.Stop()
	tk.Reset(time.Second)
	var tm Timer
	if tm.Stop() || tm.Reset(time.Second) {
		t.Fatal("a zero Timer reports itself active")
	}
}

// TestForwardNoDrift: a Ticker's next expiry is hrtimer_forward's: on the
// grid of the first one, the first point of it after now (so late expiries
// never shift the grid), saturating at the end of time.
func TestForwardNoDrift(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		when := r.Int64N(1 << 50)
		period := 1 + r.Int64N(1<<30)
		now := when + r.Int64N(1<<40)
		next := forward(when, now, period)
		if next <= now || next-period > now || (next-when)%period != 0 {
			t.Fatalf("forward(%d, %d, %d) = %d", when, now, period, next)
		}
	}
	if got := forward(math.MaxInt64-10, math.MaxInt64-5, 100); got != math.MaxInt64 {
		t.Fatalf("forward past the end of time: %d, want MaxInt64", got)
	}
}

// TestSleepContext: Sleep of each flavour returns after at least d, early
// with the context's error when it is cancelled, and at once for a context
// already done.
func TestSleepContext(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		for _, d := range []time.Duration{0, 100 * time.Microsecond, 2 * time.Millisecond} {
			start := time.Now()
			if err := rt.Sleep(context.Background(), d, o); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < d {
				t.Fatalf("Sleep(%v) returned after %v", d, el)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Millisecond); cancel() }()
		if err := rt.Sleep(ctx, time.Hour, o); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Sleep: %v", err)
		}
		if err := rt.Sleep(ctx, time.Hour, o); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep with a done context: %v", err)
		}
	})
}
