package tmigr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tmigr/tmigr/internal/osthread"
)

// TestClockIsMonotonicAndAhead: the runtime's clock is CLOCK_MONOTONIC,
// never behind it (so futex deadlines computed from it never wake early)
// and ahead by less than a calibration bracket.
func TestClockIsMonotonicAndAhead(t *testing.T) {
	t.Parallel()
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

// TestSatAdd: times saturate at the largest one.
func TestSatAdd(t *testing.T) {
	t.Parallel()
	if satAdd(math.MaxInt64-5, 10) != math.MaxInt64 || satAdd(5, 10) != 15 {
		t.Error("satAdd")
	}
}

// TestGovernor walks the haltpoll governor through its rules.
func TestGovernor(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
