package tmigr_test

import (
	"fmt"
	"time"

	"github.com/tmigr/tmigr"
)

// A pinned worker per CPU; an hrtimer on the first one, which never fires
// early; a wheel timer stopped before it fires, and one that runs.
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
