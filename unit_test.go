package tmigr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/internal/osthread"
)

// TestClockIsMonotonicAndAhead: the runtime's clock is CLOCK_MONOTONIC,
// never behind it (so futex deadlines computed from it never wake early)
// and ahead by less than a calibration bracket.
func TestClockIsMonotonicAndAhead(t *testing.T) {
	c := newClock()
	for range 1000 {
		a := osthread.Monotonic()
		ours := c.now()
		b := osthread.Monotonic()
		if ours < a {
			t.Fatalf("clock %d ns behind CLOCK_MONOTONIC", a-ours)
		}
		if ours > b+int64(50*time.Microsecond) {
			t.Fatalf("clock %d ns ahead of CLOCK_MONOTONIC", ours-b)
		}
	}
}

// TestGrid: jiffies, tick starts and wheel expiries on the tick grid.
func TestGrid(t *testing.T) {
	g := newGrid(1_000_000_500, 1000) // HZ 1000: 1 ms ticks
	if g.t0 != 1_000_000_000 || g.j0 != cpu.InitialJiffies(1000) {
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
		j, base := g.snapshot(tc.now)
		if j != g.j0+tc.j || (tc.now >= g.t0 && base != tc.base) {
			t.Errorf("snapshot(%d) = %d, %d", tc.now, j-g.j0, base)
		}
	}
	if e := g.expiry(1_000_500_000, 0); e != g.j0 {
		t.Errorf("expiry of 0 = +%d", e-g.j0)
	}
	if e := g.expiry(1_000_500_000, 1); e != g.j0+1 {
		t.Errorf("expiry of 1 ns = +%d", e-g.j0)
	}
	if e := g.expiry(1_000_500_000, 3_000_000); e != g.j0+3 {
		t.Errorf("expiry of 3 ms = +%d", e-g.j0)
	}
	if e := g.expiry(1_000_500_000, math.MaxInt64); e <= g.j0 {
		t.Error("huge expiry wrapped")
	}
	if satAdd(math.MaxInt64-5, 10) != math.MaxInt64 || satAdd(5, 10) != 15 {
		t.Error("satAdd")
	}
}

// TestExpiryNeverEarly: a wheel timer armed at any instant of a tick for any
// d is collected (at bucket expiry, one granule past its expiry at level 0)
// no earlier than now + d. Property over the grid and the level-0 bucket.
func TestExpiryNeverEarly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hz := rapid.SampledFrom([]int{100, 250, 300, 1000}).Draw(t, "hz")
		g := newGrid(rapid.Int64Range(0, 1e15).Draw(t, "start"), hz)
		now := g.t0 + rapid.Int64Range(0, 1e12).Draw(t, "now")
		d := rapid.Int64Range(0, 62*g.tick).Draw(t, "d") // level 0
		e := g.expiry(now, d)
		runs := g.at(e + 1) // the first tick whose softirq collects it
		if runs < now+d {
			t.Fatalf("armed at %d for %d: runs at %d, %d early", now, d, runs, now+d-runs)
		}
		if runs > now+d+2*g.tick {
			t.Fatalf("armed at %d for %d: runs at %d, more than two ticks late", now, d, runs)
		}
	})
}

// TestGovernor walks the haltpoll governor through its rules.
func TestGovernor(t *testing.T) {
	var g governor
	if g.pollFirst() {
		t.Fatal("polls with an empty window")
	}
	// Timed wake-ups that overslept grow the window from 50 µs, doubling,
	// up to 200 µs.
	for _, want := range []int64{50_000, 100_000, 200_000, 200_000} {
		g.timed(true)
		if g.limit != want {
			t.Fatalf("after a late wake-up: window %d, want %d", g.limit, want)
		}
	}
	// Wake-ups in time shrink it by half only after haltPollHits in a row.
	for i := 1; i < haltPollHits; i++ {
		g.timed(false)
	}
	if g.limit != 200_000 {
		t.Fatalf("shrunk early: %d", g.limit)
	}
	g.timed(false)
	if g.limit != 100_000 {
		t.Fatalf("after %d hits: %d, want 100000", haltPollHits, g.limit)
	}
	// A miss resets the count.
	for i := 1; i < haltPollHits; i++ {
		g.timed(false)
	}
	g.timed(true)
	for i := 1; i < haltPollHits; i++ {
		g.timed(false)
	}
	if g.limit != 200_000 {
		t.Fatalf("the count survived a miss: %d", g.limit)
	}
	// Kicked halts: the kernel's adjust_poll_limit.
	g = governor{limit: 100_000}
	g.kicked(50_000) // within the window: no change
	if g.limit != 100_000 {
		t.Fatal(g.limit)
	}
	g.kicked(150_000) // a poll of 200 µs would have caught it
	if g.limit != 200_000 {
		t.Fatal(g.limit)
	}
	g.kicked(300_000) // a long halt
	if g.limit != 100_000 {
		t.Fatal(g.limit)
	}
	g.kicked(1_000_000)
	g.kicked(1_000_000)
	if g.limit != 25_000 {
		t.Fatal(g.limit)
	}
	// haltpoll_select: poll after a halt or a poll that caught something;
	// halt after a poll that ran out.
	if !g.pollFirst() {
		t.Fatal("no poll after a halt")
	}
	g.lastPollTimedOut = true
	if g.pollFirst() {
		t.Fatal("polls again after an empty poll")
	}
}

// TestHistogram against exact quantiles of random samples.
func TestHistogram(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h histogram
		n := rapid.IntRange(1, 2000).Draw(t, "n")
		seed := rapid.Uint64().Draw(t, "seed")
		r := rand.New(rand.NewPCG(seed, 1))
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(math.Exp(r.Float64() * 30)) // 1 ns .. 10 s, log-spread
			h.record(vals[i])
		}
		slices.Sort(vals)
		s := h.snapshot()
		if s.Count() != uint64(n) || s.Max() != time.Duration(vals[n-1]) {
			t.Fatalf("count %d max %v, want %d %v", s.Count(), s.Max(), n, vals[n-1])
		}
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
			rank := max(int(math.Ceil(q*float64(n))), 1)
			exact := vals[rank-1]
			got := int64(s.Quantile(q))
			// At or above the exact value, within one sub-bucket (1/32).
			if got < exact || got > exact+exact/32+1 {
				t.Fatalf("q%.2f = %d, exact %d", q, got, exact)
			}
		}
	})
	var h histogram
	h.record(-5)
	if s := h.snapshot(); s.Quantile(0.5) != 0 || s.Mean() != 0 {
		t.Fatal("negative values count as 0")
	}
	if (Histogram{}).Quantile(0.5) != 0 || (Histogram{}).Mean() != 0 {
		t.Fatal("empty histogram")
	}
	for i := range histBuckets {
		if histIndex(histUpper(i)) != i || i > 0 && histIndex(histUpper(i-1)+1) != i {
			t.Fatalf("bucket %d: bounds do not round-trip", i)
		}
	}
}
