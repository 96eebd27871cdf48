package tick

import (
	"math"

	"github.com/tmigr/tmigr/cpu"
)

// Never is "no time": a stopped tick with nothing to wake for, a disarmed
// device. It is hrtimer.Never and cpu.KtimeMax.
const Never int64 = math.MaxInt64

// Grid is the tick grid: jiffy J begins at T0 + (J - J0)·TickNs. Every CPU
// of a machine shares it (the kernel's jiffies are global), so a jiffies
// value and the snapshot of the last jiffies update are pure functions of
// the clock. J0 is the kernel's boot value (cpu.InitialJiffies), so that
// 32-bit wrap-around is exercised as in the kernel.
type Grid struct {
	T0     int64  // the time jiffy J0 begins
	J0     uint64 // the jiffies at T0
	TickNs int64  // the tick length (TICK_NSEC)
}

// NewGrid returns the grid at hz whose jiffy J0 = cpu.InitialJiffies(hz)
// begins at the last tick instant at or before t0 (t0 rounded down to a
// multiple of the tick).
func NewGrid(t0 int64, hz int) Grid {
	tk := cpu.TickNsec(hz)
	return Grid{T0: t0 - t0%tk, J0: cpu.InitialJiffies(hz), TickNs: tk}
}

// Jiffies returns the jiffy now falls in (J0 before T0).
func (g Grid) Jiffies(now int64) uint64 {
	if now < g.T0 {
		return g.J0
	}
	return g.J0 + uint64((now-g.T0)/g.TickNs)
}

// At returns the time jiffy j begins.
func (g Grid) At(j uint64) int64 { return g.T0 + int64(j-g.J0)*g.TickNs }

// Snapshot returns the last jiffies update at or before now
// (get_jiffies_update): the jiffy now falls in and the time it began.
func (g Grid) Snapshot(now int64) cpu.Snapshot {
	j := g.Jiffies(now)
	return cpu.Snapshot{J: j, M: g.At(j)}
}

// Next returns the first tick instant after now: where a tick restarted at
// now fires first.
func (g Grid) Next(now int64) int64 { return g.At(g.Jiffies(now) + 1) }

// Expiry returns the wheel expiry of a timer armed at now for d ns: the
// current jiffies plus d in ticks, rounded up (the kernel's jiffies +
// nsecs_to_jiffies rounded up, as msecs_to_jiffies rounds). A timer so
// armed never fires early: the wheel queues it one granule past its expiry
// (calc_index), so it runs at the start of jiffy expiry+1 at the earliest,
// at least d after now.
func (g Grid) Expiry(now, d int64) uint64 {
	if d < 0 {
		d = 0
	}
	n := d / g.TickNs
	if d%g.TickNs != 0 {
		n++
	}
	return g.Jiffies(now) + uint64(n)
}
