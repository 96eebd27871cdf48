package engine

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
	c := NewClock()
	for range 1000 {
		a := osthread.Monotonic()
		ours := c.Now()
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
	if SatAdd(math.MaxInt64-5, 10) != math.MaxInt64 || SatAdd(5, 10) != 15 {
		t.Error("SatAdd")
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

// TestHistogram: a snapshot holds every value recorded, each in the
// bucket of the values within about 3% (1/32) at or below its bound, the
// buckets in order; the bucket bounds round-trip.
func TestHistogram(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var h Histogram
		n := rapid.IntRange(1, 2000).Draw(t, "n")
		seed := rapid.Uint64().Draw(t, "seed")
		r := rand.New(rand.NewPCG(seed, 1))
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(math.Exp(r.Float64() * 30)) // 1 ns .. 10 s, log-spread
			h.Record(vals[i])
		}
		slices.Sort(vals)
		s := h.Snapshot()
		var sum int64
		for _, v := range vals {
			sum += v
		}
		if s.N != uint64(n) || s.Max != time.Duration(vals[n-1]) || s.Sum != time.Duration(sum) {
			t.Fatalf("count %d max %v sum %v, want %d %v %v", s.N, s.Max, s.Sum, n, vals[n-1], sum)
		}
		// The buckets, in order, hold the sorted values in runs.
		i := 0
		for k, b := range s.Buckets {
			if k > 0 && b.Upper <= s.Buckets[k-1].Upper {
				t.Fatalf("bucket %d's bound %d not above the one before", k, b.Upper)
			}
			for range b.Count {
				v := vals[i]
				if v > b.Upper || v < b.Upper-b.Upper/32-1 {
					t.Fatalf("value %d in the bucket of bound %d", v, b.Upper)
				}
				i++
			}
		}
	})
	var h Histogram
	h.Record(-5)
	if s := h.Snapshot(); s.N != 1 || s.Max != 0 || len(s.Buckets) != 1 || s.Buckets[0].Upper != 0 {
		t.Fatalf("a negative value must count as 0: %+v", s)
	}
	for i := range histBuckets {
		if histIndex(histUpper(i)) != i || i > 0 && histIndex(histUpper(i-1)+1) != i {
			t.Fatalf("bucket %d: bounds do not round-trip", i)
		}
	}
}
