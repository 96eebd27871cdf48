package engine

import (
	"math"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// Clock is the engine's time base: CLOCK_MONOTONIC in nanoseconds, the
// clock the futex deadlines are measured against. Tests that drive the
// workers' event handling without threads give the engine a fake one.
type Clock interface {
	Now() int64
}

// MonoClock is the real clock.
//
// It is read as MonoRaw, time.Since(procEpoch), plus a constant. Since(t)
// of a Time with a monotonic reading is a single read of the runtime's
// nanotime, which on Linux is the vDSO's clock_gettime(CLOCK_MONOTONIC):
// about 20 ns, no system call, no linkname into the runtime. The constant (the runtime's start
// offset) is found at Start by bracketing a clock_gettime system call
// between two Since reads; of 64 tries the narrowest bracket wins, and the
// constant is taken at the bracket's upper end, so our clock runs at or
// ahead of CLOCK_MONOTONIC by less than the bracket's width (a few hundred
// ns at most). Running ahead is the safe side: a futex deadline computed
// from our clock can only make the thread wake late, never early.
type MonoClock struct {
	off int64
}

// procEpoch is every real clock's epoch, one for the process, so that
// Timer.Reset can read the clock before it has touched the Timer that says
// which runtime it is for (see Reset; Engine.NowFrom).
var procEpoch = time.Now()

// MonoRaw is the reading a MonoClock adds its offset to.
func MonoRaw() int64 { return int64(time.Since(procEpoch)) }

// NewClock calibrates a real clock.
func NewClock() *MonoClock {
	c := &MonoClock{}
	width := int64(math.MaxInt64)
	for range 64 {
		a := MonoRaw()
		m := osthread.Monotonic()
		b := MonoRaw()
		if b-a < width {
			width, c.off = b-a, m-a
		}
	}
	return c
}

// Now reads the clock.
func (c *MonoClock) Now() int64 { return MonoRaw() + c.off }

// NowFrom is the engine's clock given MonoRaw read a moment before: the
// same reading for the real clock, a fresh one for a test's fake clock.
func (e *Engine) NowFrom(raw int64) int64 {
	if m := e.mono; m != nil {
		return raw + m.off
	}
	return e.clk.Now()
}

// The tick grid is tick.Grid: jiffy j begins at T0 + (j - J0)·tick, so
// jiffies and the snapshot of the last jiffies update are both pure
// functions of the clock, the same for every worker; J0 is the kernel's
// boot value (cpu.InitialJiffies), so 32-bit wrap-around is exercised as in
// the kernel.

// SatAdd is a + b for b ≥ 0, saturating at the largest time.
func SatAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
