package hrtimer

import "math"

// Never is KTIME_MAX: "no event". A base with no queued timer reports Never
// as its next expiry, and programming Never stops the clock event device.
const Never int64 = math.MaxInt64

// SatMax is where the kernel's saturating ktime addition (ktime_add_safe)
// clamps: KTIME_SEC_MAX whole seconds, 9,223,372,036 s, the largest value
// a timespec handed back to user space can hold. It is just below Never, so
// a saturated timer is still queued and still sorts before Never.
const SatMax int64 = (math.MaxInt64 / 1_000_000_000) * 1_000_000_000

// hangCap bounds how far hrtimer_interrupt pushes the next event after a
// hang: 100 ms.
const hangCap int64 = 100_000_000

// addSafe is ktime_add_safe: a + b, clamped to SatMax when the sum is
// negative or smaller than either operand. The "smaller than either" rule
// means a negative relative time added to a clock value also saturates, as
// in the kernel.
func addSafe(a, b int64) int64 {
	r := int64(uint64(a) + uint64(b))
	if r < 0 || r < a || r < b {
		return SatMax
	}
	return r
}
