package tmigr_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tmigr/tmigr"
)

// A pinned worker per CPU; an hrtimer on the first one, which never fires
// early; a timer stopped before it fires, and one that runs.
func Example() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	start := time.Now()
	fired := make(chan time.Duration)
	rt.HRAfterFunc(rt.CPUs()[0], 300*time.Microsecond, func() { fired <- time.Since(start) }, tmigr.Hard)
	fmt.Println("hrtimer not early:", <-fired >= 300*time.Microsecond)

	t := rt.AfterFunc(time.Hour, func() { panic("stopped timers do not run") })
	fmt.Println("stopped:", t.Stop())

	ran := make(chan int)
	rt.AfterFunc(2*time.Millisecond, func() { ran <- rt.CPU() })
	fmt.Println("ran on a worker:", <-ran >= 0)
	// Output:
	// hrtimer not early: true
	// stopped: true
	// ran on a worker: true
}

// AfterFunc, as time.AfterFunc: by default a precise (hrtimer) timer, on a
// housekeeping worker when armed from an ordinary goroutine.
func ExampleRuntime_AfterFunc() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	start := time.Now()
	done := make(chan time.Duration)
	rt.AfterFunc(250*time.Microsecond, func() { done <- time.Since(start) })
	fmt.Println("not early:", <-done >= 250*time.Microsecond)
	// Output: not early: true
}

// NewTimer, as time.NewTimer: the expiry's time arrives on C; Stop and
// Reset take back a value nobody received (Go 1.23's rule).
func ExampleRuntime_NewTimer() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	t := rt.NewTimer(time.Millisecond)
	<-t.C
	fmt.Println("fired; stop reports:", t.Stop())
	t.Reset(time.Hour)
	fmt.Println("stopped while pending:", t.Stop())
	// Output:
	// fired; stop reports: false
	// stopped while pending: true
}

// NewTicker, as time.NewTicker: ticks on the grid of the first one, never
// early, without drift.
func ExampleRuntime_NewTicker() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	start := time.Now()
	tk := rt.NewTicker(500 * time.Microsecond)
	defer tk.Stop()
	for range 4 {
		<-tk.C
	}
	fmt.Println("4 ticks took at least 2ms:", time.Since(start) >= 2*time.Millisecond)
	// Output: 4 ticks took at least 2ms: true
}

// Ticker.Reset changes the period; the next tick is due a period from now.
func ExampleTicker_Reset() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	tk := rt.NewTicker(time.Hour)
	defer tk.Stop()
	start := time.Now()
	tk.Reset(time.Millisecond)
	<-tk.C
	fmt.Println("a tick after Reset, not early:", time.Since(start) >= time.Millisecond)
	// Output: a tick after Reset, not early: true
}

// Sleep, as time.Sleep, with a context: a cancelled context ends it early.
func ExampleRuntime_Sleep() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	fmt.Println(rt.Sleep(context.Background(), 200*time.Microsecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	fmt.Println(rt.Sleep(ctx, time.Hour))
	// Output:
	// <nil>
	// context deadline exceeded
}

// Precise chooses the hrtimer's mode: Soft runs in the softirq pass.
func ExamplePrecise() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ran := make(chan bool)
	rt.AfterFunc(100*time.Microsecond, func() { ran <- rt.CPU() >= 0 }, tmigr.Precise(tmigr.Soft))
	fmt.Println("ran on a worker:", <-ran)
	// Output: ran on a worker: true
}

// Coarse makes a timer-wheel timer, rounded up to the tick (at HZ=1000, a
// 1 ms timeout becomes 1-2 ms), which the hierarchy may expire remotely.
func ExampleCoarse() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	start := time.Now()
	t := rt.NewTimer(time.Millisecond, tmigr.Coarse())
	<-t.C
	fmt.Println("not early:", time.Since(start) >= time.Millisecond)
	// Output: not early: true
}

// Timer.Reset re-arms: true if the timer was pending.
func ExampleTimer_Reset() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	t := rt.AfterFunc(time.Hour, func() {})
	fmt.Println(t.Reset(2*time.Hour), t.Stop(), t.Reset(time.Hour), t.Stop())
	// Output: true true false true
}

// AfterFuncOn arms a wheel timer on behalf of a named worker; a pinned one
// runs there.
func ExampleRuntime_AfterFuncOn() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	c := rt.CPUs()[0]
	ran := make(chan int)
	if _, err := rt.AfterFuncOn(c, time.Millisecond, func() { ran <- rt.CPU() }, tmigr.Pinned); err != nil {
		panic(err)
	}
	fmt.Println("ran on the worker named:", <-ran == c)
	_, err = rt.AfterFuncOn(c, time.Millisecond, nil)
	fmt.Println(err)
	// Output:
	// ran on the worker named: true
	// tmigr: nil function
}

// HRAfterFunc arms an hrtimer on a named worker; after Close it returns
// ErrClosed.
func ExampleRuntime_HRAfterFunc() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	c := rt.CPUs()[0]
	ran := make(chan int)
	if _, err := rt.HRAfterFunc(c, 100*time.Microsecond, func() { ran <- rt.CPU() }, tmigr.Hard); err != nil {
		panic(err)
	}
	fmt.Println("ran on the worker named:", <-ran == c)
	rt.Close()
	_, err = rt.HRAfterFunc(c, time.Millisecond, func() {}, tmigr.Hard)
	fmt.Println(err)
	// Output:
	// ran on the worker named: true
	// tmigr: runtime closed
}

// SleepOn sleeps on an hrtimer of a named worker.
func ExampleRuntime_SleepOn() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	start := time.Now()
	err = rt.SleepOn(context.Background(), rt.CPUs()[0], 300*time.Microsecond, tmigr.Soft)
	fmt.Println(err, time.Since(start) >= 300*time.Microsecond)
	// Output: <nil> true
}

// After, as time.After: a channel that receives the time once, here after
// a precise 400 µs.
func ExampleRuntime_After() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	start := time.Now()
	select {
	case at := <-rt.After(400 * time.Microsecond):
		fmt.Println("not early:", at.Sub(start) >= 400*time.Microsecond)
	case <-time.After(time.Minute):
		fmt.Println("never came")
	}
	// Output: not early: true
}

// WithTimeout, as context.WithTimeout, with a deadline that expires when
// asked even below a millisecond: the context and those derived from it
// read as DeadlineExceeded.
func ExampleRuntime_WithTimeout() {
	rt, err := tmigr.Start(tmigr.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ctx, cancel := rt.WithTimeout(context.Background(), 300*time.Microsecond)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	<-child.Done()
	fmt.Println(ctx.Err(), child.Err(), context.Cause(ctx))
	// Output: context deadline exceeded context deadline exceeded context deadline exceeded
}
