package report

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLatUSArithmetic checks latUS's shortcut against oslat's two
// divisions, on both sides of the product's wrap-around and at its edge.
func TestLatUSArithmetic(t *testing.T) {
	slow := func(ns, mhz uint64) uint64 { return ns * mhz / 1000 / mhz }
	r := rand.New(rand.NewPCG(1, 2))
	check := func(ns, mhz uint64) {
		if got, want := latUS(ns, mhz), slow(ns, mhz); got != want {
			t.Fatalf("latUS(%d, %d) = %d, want %d", ns, mhz, got, want)
		}
	}
	for _, mhz := range []uint64{1, 3, 1000, 2100, 3000, 1 << 20, math.MaxUint32} {
		edge := math.MaxUint64 / mhz
		for _, ns := range []uint64{0, 1, 999, 1000, 1001, edge - 1, edge, edge + 1, math.MaxUint64} {
			check(ns, mhz)
		}
		for range 10000 {
			check(r.Uint64N(1<<40), mhz)
			check(r.Uint64(), mhz)
			check(edge-1000+r.Uint64N(2000), mhz)
		}
	}
}
