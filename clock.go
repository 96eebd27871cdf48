package tmigr

import (
	"math"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/internal/osthread"
)

// clock is the runtime's time base: CLOCK_MONOTONIC in nanoseconds, the
// clock the futex deadlines are measured against.
//
// It is read as time.Since(epoch) plus a constant. Since(t) of a Time with a
// monotonic reading is a single read of the runtime's nanotime, which on
// Linux is the vDSO's clock_gettime(CLOCK_MONOTONIC): about 20 ns, no system
// call, no linkname into the runtime. The constant (the runtime's start
// offset) is found at Start by bracketing a clock_gettime system call
// between two Since reads; of 64 tries the narrowest bracket wins, and the
// constant is taken at the bracket's upper end, so our clock runs at or
// ahead of CLOCK_MONOTONIC by less than the bracket's width (a few hundred
// ns at most). Running ahead is the safe side: a futex deadline computed
// from our clock can only make the thread wake late, never early.
type clock struct {
	epoch time.Time
	off   int64
}

func newClock() clock {
	c := clock{epoch: time.Now(), off: 0}
	width := int64(math.MaxInt64)
	for range 64 {
		a := int64(time.Since(c.epoch))
		m := osthread.Monotonic()
		b := int64(time.Since(c.epoch))
		if b-a < width {
			width, c.off = b-a, m-a
		}
	}
	return c
}

func (c *clock) now() int64 { return int64(time.Since(c.epoch)) + c.off }

// grid is the tick grid: jiffy j begins at t0 + (j - j0) * tick, so jiffies
// and the (basej, basem) snapshot that package cpu takes are both pure
// functions of the clock, the same for every worker. j0 is the kernel's
// boot value (InitialJiffies), so 32-bit wrap-around is exercised as in the
// kernel.
type grid struct {
	t0   int64
	j0   uint64
	tick int64
}

func newGrid(now int64, hz int) grid {
	tick := cpu.TickNsec(hz)
	return grid{t0: now - now%tick, j0: cpu.InitialJiffies(hz), tick: tick}
}

// jiffies returns the jiffy now falls in (never before t0).
func (g grid) jiffies(now int64) uint64 {
	if now < g.t0 {
		return g.j0
	}
	return g.j0 + uint64((now-g.t0)/g.tick)
}

// at returns the time jiffy j begins.
func (g grid) at(j uint64) int64 { return g.t0 + int64(j-g.j0)*g.tick }

// snapshot returns the (basej, basem) of the last tick at or before now.
func (g grid) snapshot(now int64) (uint64, int64) {
	j := g.jiffies(now)
	return j, g.at(j)
}

// expiry returns the wheel expiry of a timer armed at now for d: the
// current jiffy plus d in ticks, rounded up (the kernel's jiffies +
// msecs_to_jiffies(d)). It never fires early: the wheel queues a timer one
// granule past its expiry (calc_index), so it runs at the start of jiffy
// expiry+1 at the earliest, which is at least d after now.
func (g grid) expiry(now int64, d int64) uint64 {
	if d < 0 {
		d = 0
	}
	n := d / g.tick
	if d%g.tick != 0 {
		n++
	}
	return g.jiffies(now) + uint64(n)
}

// satAdd is a + b for b ≥ 0, saturating at the largest time.
func satAdd(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}
