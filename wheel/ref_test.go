package wheel

// An independent re-derivation of the wheel's arithmetic, written from the
// prose of docs/wheel.md (W2 and W4) rather than from
// wheel.go: powers and divisions instead of shifts and masks, level ranges
// from "level n holds the timeouts in [63·8^(n-1), 63·8^n)", the round-up as
// "the next multiple of the granularity strictly after the expiry". The
// tests compare the package against it, so a slip in either shows.

// refPow8 returns 8^n.
func refPow8(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 8
	}
	return p
}

// refLevelEnd returns the first timeout that no longer fits in level n:
// 63·8^n, one level-n granule short of 64 granules.
func refLevelEnd(n int) uint64 { return 63 * refPow8(n) }

// refCutoff is the wheel's capacity: the end of its last level.
func refCutoff(depth int) uint64 { return refLevelEnd(depth - 1) }

// refMax is the timeout a clamped timer is given: the capacity less one
// granule of the last level.
func refMax(depth int) uint64 { return refCutoff(depth) - refPow8(depth-1) }

// refPlace is where docs/wheel.md W4 puts a timer.
type refPlace struct {
	lvl     int
	idx     int    // 64·lvl + slot
	bucket  uint64 // the tick at which the bucket is processed
	expired bool   // armed in the past: the current level-0 slot
	clamped bool   // beyond the capacity: fires early
}

// refPlaceOf places a timer expiring at expires on a base whose clock is clk.
func refPlaceOf(expires, clk uint64, depth int) refPlace {
	delta := expires - clk
	if int64(delta) < 0 {
		// "already expired": the level-0 slot of clk, processed at clk.
		return refPlace{lvl: 0, idx: int(clk % 64), bucket: clk, expired: true}
	}
	var p refPlace
	e := expires
	switch {
	case delta >= refCutoff(depth):
		p.clamped = true
		p.lvl = depth - 1
		e = clk + refMax(depth)
	default:
		for delta >= refLevelEnd(p.lvl) {
			p.lvl++
		}
	}
	g := refPow8(p.lvl)
	// The next multiple of g strictly after e, modulo 2^64.
	p.bucket = e - e%g + g
	p.idx = 64*p.lvl + int(p.bucket/g%64)
	return p
}

// refAfter is time_after written as docs/wheel.md W1 states it: a is after b when
// the signed difference b−a is negative.
func refAfter(a, b uint64) bool { return int64(b-a) < 0 }
