package tick

import (
	"math"
	"testing"

	"github.com/tmigr/tmigr/cpu"
	"pgregory.net/rapid"
)

// TestGrid: jiffies, tick starts and wheel expiries on the tick grid.
func TestGrid(t *testing.T) {
	g := NewGrid(1_000_000_500, 1000) // HZ 1000: 1 ms ticks
	if g.T0 != 1_000_000_000 || g.J0 != cpu.InitialJiffies(1000) || g.TickNs != 1_000_000 {
		t.Fatalf("grid %+v", g)
	}
	for _, tc := range []struct {
		now  int64
		j    uint64
		base int64
	}{
		{1_000_000_000, 0, 1_000_000_000},
		{1_000_999_999, 0, 1_000_000_000},
		{1_001_000_000, 1, 1_001_000_000},
		{999, 0, 1_000_000_000}, // before the grid: its first jiffy
	} {
		s := g.Snapshot(tc.now)
		if s.J != g.J0+tc.j || s.M != tc.base {
			t.Errorf("Snapshot(%d) = %d, %d", tc.now, s.J-g.J0, s.M)
		}
	}
	if n := g.Next(1_000_000_000); n != 1_001_000_000 {
		t.Errorf("Next at a tick instant = %d, want the following one", n)
	}
	if n := g.Next(1_000_999_999); n != 1_001_000_000 {
		t.Errorf("Next just before a tick = %d", n)
	}
	if e := g.Expiry(1_000_500_000, 0); e != g.J0 {
		t.Errorf("expiry of 0 = +%d", e-g.J0)
	}
	if e := g.Expiry(1_000_500_000, 1); e != g.J0+1 {
		t.Errorf("expiry of 1 ns = +%d", e-g.J0)
	}
	if e := g.Expiry(1_000_500_000, 3_000_000); e != g.J0+3 {
		t.Errorf("expiry of 3 ms = +%d", e-g.J0)
	}
	if e := g.Expiry(1_000_500_000, math.MaxInt64); e <= g.J0 {
		t.Error("huge expiry wrapped")
	}
}

// TestExpiryNeverEarly: a wheel timer armed at any instant of a tick for any
// d is collected (at bucket expiry, one granule past its expiry at level 0)
// no earlier than now + d. Property over the grid and the level-0 bucket.
func TestExpiryNeverEarly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hz := rapid.SampledFrom([]int{100, 250, 300, 1000}).Draw(t, "hz")
		g := NewGrid(rapid.Int64Range(0, 1e15).Draw(t, "start"), hz)
		now := g.T0 + rapid.Int64Range(0, 1e12).Draw(t, "now")
		d := rapid.Int64Range(0, 62*g.TickNs).Draw(t, "d") // level 0
		e := g.Expiry(now, d)
		runs := g.At(e + 1) // the first tick whose softirq collects it
		if runs < now+d {
			t.Fatalf("armed at %d for %d: runs at %d, %d early", now, d, runs, now+d-runs)
		}
		if runs > now+d+2*g.TickNs {
			t.Fatalf("armed at %d for %d: runs at %d, more than two ticks late", now, d, runs)
		}
	})
}

// The CPU's incremental snapshot is the grid's, whatever the order of
// times (never decreasing, as a driver gives them).
func TestIncrementalSnapshot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := NewGrid(rapid.Int64Range(0, 1e12).Draw(t, "t0"), rapid.SampledFrom([]int{100, 250, 1000}).Draw(t, "hz"))
		c := CPU{grid: g}
		now := g.T0 - rapid.Int64Range(0, 3*g.TickNs).Draw(t, "before")
		for range 50 {
			now += rapid.Int64Range(0, 3*g.TickNs).Draw(t, "step")
			if got, want := c.snapshot(now), g.Snapshot(now); got != want {
				t.Fatalf("at %d: %+v, want %+v", now, got, want)
			}
		}
	})
}
