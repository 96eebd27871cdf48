package tmigr

import (
	"math"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// clock is the runtime's time base: CLOCK_MONOTONIC in nanoseconds, the
// clock the futex deadlines are measured against. Tests that drive the
// workers' event handling without threads give the runtime a fake one.
type clock interface {
	now() int64
}

// monoClock is the real clock.
//
// It is read as monoRaw, time.Since(procEpoch), plus a constant. Since(t)
// of a Time with a monotonic reading is a single read of the runtime's
// nanotime, which on Linux is the vDSO's clock_gettime(CLOCK_MONOTONIC):
// about 20 ns, no system call, no linkname into the runtime. The constant (the runtime's start
// offset) is found at Start by bracketing a clock_gettime system call
// between two Since reads; of 64 tries the narrowest bracket wins, and the
// constant is taken at the bracket's upper end, so our clock runs at or
// ahead of CLOCK_MONOTONIC by less than the bracket's width (a few hundred
// ns at most). Running ahead is the safe side: a futex deadline computed
// from our clock can only make the thread wake late, never early.
type monoClock struct {
	off int64
}

// procEpoch is every real clock's epoch, one for the process, so that
// Timer.Reset can read the clock before it has touched the Timer that says
// which runtime it is for (see Reset; Runtime.nowFrom).
var procEpoch = time.Now()

// monoRaw is the reading a monoClock adds its offset to.
func monoRaw() int64 { return int64(time.Since(procEpoch)) }

func newClock() *monoClock {
	c := &monoClock{}
	width := int64(math.MaxInt64)
	for range 64 {
		a := monoRaw()
		m := osthread.Monotonic()
		b := monoRaw()
		if b-a < width {
			width, c.off = b-a, m-a
		}
	}
	return c
}

func (c *monoClock) now() int64 { return monoRaw() + c.off }

// nowFrom is the runtime's clock given monoRaw read a moment before: the
// same reading for the real clock, a fresh one for a test's fake clock.
func (rt *Runtime) nowFrom(raw int64) int64 {
	if m := rt.mono; m != nil {
		return raw + m.off
	}
	return rt.clk.now()
}

// The tick grid is tick.Grid: jiffy j begins at T0 + (j - J0)·tick, so
// jiffies and the snapshot of the last jiffies update are both pure
// functions of the clock, the same for every worker; J0 is the kernel's
// boot value (cpu.InitialJiffies), so 32-bit wrap-around is exercised as in
// the kernel.

// satAdd is a + b for b ≥ 0, saturating at the largest time.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
