package wheel

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// Clock values every index table is run at: the origin, an ordinary value,
// the 64-bit kernel's INITIAL_JIFFIES for HZ=1000 and HZ=100 (-300·HZ
// truncated to 32 bits), and values just short of the 64-bit wrap, so that a
// non-modular comparison anywhere shows.
var indexClocks = []uint64{
	0,
	1000,
	1<<32 - 300*1000,
	1<<32 - 300*100,
	math.MaxUint64 - 1000,
	math.MaxUint64 - 62,
	math.MaxUint64,
}

// TestIndexWorkedExamples replays the worked examples of docs/wheel.md W4.
func TestIndexWorkedExamples(t *testing.T) {
	for _, depth := range []int{8, 9} {
		for _, tc := range []struct {
			expires    uint64
			idx        int
			bucket     uint64
			lvl        int
			lateByGran bool // bucket - expires == the level's granularity
		}{
			{expires: 1005, idx: 46, bucket: 1006, lvl: 0},
			{expires: 1100, idx: 74, bucket: 1104, lvl: 1},                   // q = 137+1 = 138, 4 late
			{expires: 1096, idx: 74, bucket: 1104, lvl: 1, lateByGran: true}, // a multiple of 8 still moves up a granule
			{expires: 990, idx: 40, bucket: 1000, lvl: 0},                    // in the past: slot 1000&63, due at clk
		} {
			idx, bucket := Index(tc.expires, 1000, depth)
			if idx != tc.idx || bucket != tc.bucket {
				t.Errorf("depth %d: Index(%d, 1000) = (%d, %d), want (%d, %d)", depth, tc.expires, idx, bucket, tc.idx, tc.bucket)
			}
			if Level(idx) != tc.lvl {
				t.Errorf("depth %d: Level(%d) = %d, want %d", depth, idx, Level(idx), tc.lvl)
			}
			if tc.lateByGran && bucket-tc.expires != LvlGran(tc.lvl) {
				t.Errorf("depth %d: expires %d is %d late, want a full granule %d", depth, tc.expires, bucket-tc.expires, LvlGran(tc.lvl))
			}
		}
	}
}

// TestGeometry checks the package's constants against the numbers of the
// level table of docs/wheel.md W2, typed in from it.
func TestGeometry(t *testing.T) {
	// First timeout of each level (W2 derived table).
	starts := []uint64{0, 63, 504, 4032, 32256, 258048, 2064384, 16515072, 132120576}
	grans := []uint64{1, 8, 64, 512, 4096, 32768, 262144, 2097152, 16777216}
	for n := 1; n < len(starts); n++ {
		if got := LvlStart(n); got != starts[n] {
			t.Errorf("LvlStart(%d) = %d, want %d", n, got, starts[n])
		}
	}
	for n, g := range grans {
		if got := LvlGran(n); got != g {
			t.Errorf("LvlGran(%d) = %d, want %d", n, got, g)
		}
		if got := LvlShift(n); uint64(1)<<got != g {
			t.Errorf("LvlShift(%d) = %d, want log2(%d)", n, got, g)
		}
	}
	for _, tc := range []struct {
		depth       int
		cutoff, max uint64
	}{
		{9, 1_056_964_608, 1_040_187_392},
		{8, 132_120_576, 130_023_424},
	} {
		if got := TimeoutCutoff(tc.depth); got != tc.cutoff {
			t.Errorf("TimeoutCutoff(%d) = %d, want %d", tc.depth, got, tc.cutoff)
		}
		if got := TimeoutMax(tc.depth); got != tc.max {
			t.Errorf("TimeoutMax(%d) = %d, want %d", tc.depth, got, tc.max)
		}
	}
	for _, tc := range []struct{ hz, depth int }{{1000, 9}, {300, 9}, {250, 9}, {101, 9}, {100, 8}, {24, 8}} {
		if got := DepthForHZ(tc.hz); got != tc.depth {
			t.Errorf("DepthForHZ(%d) = %d, want %d", tc.hz, got, tc.depth)
		}
	}
	if NextTimerMaxDelta != 1_073_741_823 {
		t.Errorf("NextTimerMaxDelta = %d, want 2^30-1", NextTimerMaxDelta)
	}
	for idx, lvl := range map[int]int{0: 0, 63: 0, 64: 1, 127: 1, 128: 2, 511: 7, 512: 8, 575: 8} {
		if Level(idx) != lvl {
			t.Errorf("Level(%d) = %d, want %d", idx, Level(idx), lvl)
		}
	}
}

// TestIndexLevelBoundaries places timers one tick either side of every level
// boundary, for both depths and at every test clock.
func TestIndexLevelBoundaries(t *testing.T) {
	for _, depth := range []int{8, 9} {
		for _, clk := range indexClocks {
			for n := 1; n < depth; n++ {
				for _, tc := range []struct {
					delta uint64
					lvl   int
				}{
					{LvlStart(n) - 1, n - 1},
					{LvlStart(n), n},
				} {
					expires := clk + tc.delta
					idx, bucket := Index(expires, clk, depth)
					name := fmt.Sprintf("depth %d clk %d delta %d", depth, clk, tc.delta)
					if Level(idx) != tc.lvl {
						t.Errorf("%s: level %d, want %d", name, Level(idx), tc.lvl)
						continue
					}
					checkRoundUp(t, name, expires, idx, bucket)
				}
			}
		}
	}
}

// checkRoundUp checks WI3 for an unclamped, unexpired placement: the
// bucket expiry is a multiple of the level's granularity in
// (expires, expires+gran], and the slot is that multiple's level clock.
func checkRoundUp(t *testing.T, name string, expires uint64, idx int, bucket uint64) {
	t.Helper()
	lvl := Level(idx)
	g := LvlGran(lvl)
	if bucket%g != 0 || !After(bucket, expires) || bucket-expires > g {
		t.Errorf("%s: bucket %d is not the multiple of %d in (%d, %d]", name, bucket, g, expires, expires+g)
	}
	if slot := int(bucket / g % LvlSize); idx != lvl*LvlSize+slot {
		t.Errorf("%s: idx %d, want level %d slot %d", name, idx, lvl, slot)
	}
}

// TestIndexCapacity checks the clamp of docs/wheel.md W4: a timeout of CUTOFF or
// more fires in (clk+MAX, clk+CUTOFF], before it was asked to; CUTOFF−1
// still fits and is placed normally in the last level.
func TestIndexCapacity(t *testing.T) {
	for _, depth := range []int{8, 9} {
		cutoff, max := TimeoutCutoff(depth), TimeoutMax(depth)
		last := depth - 1
		for _, clk := range indexClocks {
			// Just fits.
			expires := clk + cutoff - 1
			idx, bucket := Index(expires, clk, depth)
			name := fmt.Sprintf("depth %d clk %d delta CUTOFF-1", depth, clk)
			if Level(idx) != last {
				t.Errorf("%s: level %d, want %d", name, Level(idx), last)
			}
			checkRoundUp(t, name, expires, idx, bucket)

			// Clamped.
			for _, delta := range []uint64{cutoff, cutoff + 1, 1 << 40, math.MaxInt64} {
				expires := clk + delta
				idx, bucket := Index(expires, clk, depth)
				name := fmt.Sprintf("depth %d clk %d delta %d", depth, clk, delta)
				if Level(idx) != last {
					t.Errorf("%s: level %d, want %d", name, Level(idx), last)
				}
				if d := bucket - clk; d <= max || d > cutoff {
					t.Errorf("%s: bucket at clk+%d, want in (clk+%d, clk+%d]", name, d, max, cutoff)
				}
				// Early: due before time_after(clk, expires) holds.
				if After(bucket, expires) {
					t.Errorf("%s: clamped bucket %d is not early (expires %d)", name, bucket, expires)
				}
				checkRoundUp(t, name, clk+max, idx, bucket)
			}
		}
	}
	// A worked case: clk 0, depth 9. MAX is 62 granules of 2^24, so the
	// round-up lands exactly on CUTOFF, in the last slot of level 8.
	if idx, bucket := Index(1<<40, 0, 9); idx != 8*64+63 || bucket != 1_056_964_608 {
		t.Errorf("Index(2^40, 0, 9) = (%d, %d), want (575, 1056964608)", idx, bucket)
	}
}

// TestIndexExpired checks the already-expired case: any expiry before the
// clock (as a signed difference) goes to the clock's own level-0 slot,
// processed at clk itself.
func TestIndexExpired(t *testing.T) {
	for _, depth := range []int{8, 9} {
		for _, clk := range indexClocks {
			for _, back := range []uint64{1, 2, 63, 64, 1 << 20, 1 << 40, 1 << 63} {
				idx, bucket := Index(clk-back, clk, depth)
				if idx != int(clk%64) || bucket != clk {
					t.Errorf("depth %d: Index(clk-%d, clk=%d) = (%d, %d), want (%d, %d)", depth, back, clk, idx, bucket, clk%64, clk)
				}
			}
			// delta 0 is not expired: level 0, one tick later.
			if idx, bucket := Index(clk, clk, depth); bucket != clk+1 || idx != int((clk+1)%64) {
				t.Errorf("depth %d: Index(clk, clk=%d) = (%d, %d), want (%d, %d)", depth, clk, idx, bucket, (clk+1)%64, clk+1)
			}
		}
	}
}

// TestIndexLevelRanges checks the level table of the package comment and
// docs/wheel.md W2 end to end: each level's first and last timeout.
func TestIndexLevelRanges(t *testing.T) {
	ranges := [][2]uint64{
		{0, 62}, {63, 503}, {504, 4031}, {4032, 32255}, {32256, 258047},
		{258048, 2064383}, {2064384, 16515071}, {16515072, 132120575}, {132120576, 1056964607},
	}
	for _, depth := range []int{8, 9} {
		for lvl, r := range ranges[:depth] {
			hi := r[1]
			if lvl == depth-1 {
				hi = TimeoutCutoff(depth) - 1 // the last level takes everything up to the cutoff
			}
			for _, delta := range []uint64{r[0], hi} {
				if idx, _ := Index(5000+delta, 5000, depth); Level(idx) != lvl {
					t.Errorf("depth %d: timeout %d on level %d, want %d", depth, delta, Level(idx), lvl)
				}
			}
		}
	}
}

// TestTimeComparisons checks the modular comparisons, wrap included.
func TestTimeComparisons(t *testing.T) {
	const top = math.MaxUint64
	for _, tc := range []struct {
		a, b          uint64
		after, afterq bool
	}{
		{2, 1, true, true},
		{1, 1, false, true},
		{1, 2, false, false},
		{0, top, true, true},             // 0 comes one tick after the wrap
		{top, 0, false, false},           //
		{5, top - 5, true, true},         // across the wrap
		{1 << 63, 0, true, false},        // half way: the difference is MinInt64, "after" but not "after or equal", as in C
		{1<<63 - 1, 0, true, true},       // just under half way: "after"
		{1<<32 - 300000, 0, true, true},  // INITIAL_JIFFIES vs 0
		{top - 1000, 1000, false, false}, // near the wrap vs small
	} {
		if got := After(tc.a, tc.b); got != tc.after {
			t.Errorf("After(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.after)
		}
		if got := refAfter(tc.a, tc.b); got != tc.after {
			t.Errorf("refAfter(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.after)
		}
		if got := AfterEq(tc.a, tc.b); got != tc.afterq {
			t.Errorf("AfterEq(%d, %d) = %v, want %v", tc.a, tc.b, got, tc.afterq)
		}
		if got := Before(tc.b, tc.a); got != tc.after {
			t.Errorf("Before(%d, %d) = %v, want %v", tc.b, tc.a, got, tc.after)
		}
	}
}

// drawDelta draws a timeout that exercises every part of the index
// calculation: each level's edges, the capacity edge, huge and negative
// (already expired) values, and uniform ones.
func drawDelta(t *rapid.T, depth int, label string) uint64 {
	cutoff := TimeoutCutoff(depth)
	switch rapid.IntRange(0, 6).Draw(t, label+"Kind") {
	case 0: // near a level edge
		n := rapid.IntRange(1, depth-1).Draw(t, label+"Lvl")
		return LvlStart(n) + uint64(rapid.IntRange(-2, 2).Draw(t, label+"Off"))
	case 1: // near the capacity
		return cutoff + uint64(rapid.IntRange(-2, 2).Draw(t, label+"Off"))
	case 2: // in the past
		return -uint64(rapid.Uint64Range(1, 1<<62).Draw(t, label+"Back"))
	case 3: // anything
		return rapid.Uint64().Draw(t, label)
	case 4: // short
		return rapid.Uint64Range(0, 200).Draw(t, label)
	default: // within the wheel
		return rapid.Uint64Range(0, cutoff+cutoff/4).Draw(t, label)
	}
}

// drawClock draws a base clock, biased towards the wrap and INITIAL_JIFFIES.
func drawClock(t *rapid.T, label string) uint64 {
	switch rapid.IntRange(0, 3).Draw(t, label+"Kind") {
	case 0:
		return math.MaxUint64 - rapid.Uint64Range(0, 1<<32).Draw(t, label+"Off")
	case 1:
		return 1<<32 - 300*1000 + rapid.Uint64Range(0, 1<<20).Draw(t, label+"Off")
	default:
		return rapid.Uint64().Draw(t, label)
	}
}

// TestIndexMatchesDocProse cross-checks Index against refPlaceOf, the
// independent implementation in ref_test.go, for random (expires, clk).
func TestIndexMatchesDocProse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		depth := rapid.SampledFrom([]int{8, 9}).Draw(t, "depth")
		clk := drawClock(t, "clk")
		expires := clk + drawDelta(t, depth, "delta")
		checkIndexAgainstRef(t, expires, clk, depth)
	})
}

func checkIndexAgainstRef(t interface{ Fatalf(string, ...any) }, expires, clk uint64, depth int) {
	idx, bucket := Index(expires, clk, depth)
	p := refPlaceOf(expires, clk, depth)
	if idx != p.idx || bucket != p.bucket {
		t.Fatalf("depth %d: Index(%d, clk %d) = (%d, %d); docs/wheel.md's prose gives (%d, %d) (lvl %d, expired %v, clamped %v)",
			depth, expires, clk, idx, bucket, p.idx, p.bucket, p.lvl, p.expired, p.clamped)
	}
	// Never early (WI1/WI3) unless clamped (WI4).
	switch {
	case p.expired:
		if bucket != clk {
			t.Fatalf("expired timer due at %d, want clk %d", bucket, clk)
		}
	case p.clamped:
		if d := bucket - clk; d <= TimeoutMax(depth) || d > TimeoutCutoff(depth) {
			t.Fatalf("clamped timer due at clk+%d", d)
		}
	default:
		if !After(bucket, expires) || bucket-expires > LvlGran(Level(idx)) {
			t.Fatalf("bucket %d for expires %d on level %d: early or more than a granule late", bucket, expires, Level(idx))
		}
		// Relative slack: at most 8/63 of the timeout on levels >= 1.
		if lvl := Level(idx); lvl >= 1 && 63*(bucket-expires) > 8*(expires-clk) {
			t.Fatalf("level %d: %d late for a timeout of %d, over 8/63", lvl, bucket-expires, expires-clk)
		}
	}
}

// FuzzIndex is the same cross-check under the fuzzer:
//
//	go test ./wheel -run '^$' -fuzz FuzzIndex
func FuzzIndex(f *testing.F) {
	for _, s := range []struct {
		expires, clk uint64
		depth        uint8
	}{
		{1005, 1000, 9}, {1100, 1000, 9}, {1096, 1000, 9}, {990, 1000, 9},
		{1000 + 1_056_964_607, 1000, 9}, {1000 + 1_056_964_608, 1000, 9},
		{131_120_576, 0, 8}, {5, math.MaxUint64 - 10, 9}, {math.MaxUint64, 0, 8},
	} {
		f.Add(s.expires, s.clk, s.depth)
	}
	f.Fuzz(func(t *testing.T, expires, clk uint64, d uint8) {
		depth := 8 + int(d%2)
		checkIndexAgainstRef(t, expires, clk, depth)
	})
}

// TestTimerFlags checks the flag word's layout against docs/wheel.md W3 and that
// the flag setters leave the bucket index alone, even on a pending timer.
func TestTimerFlags(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"TIMER_CPUMASK", FlagCPUMask, 0x0003FFFF},
		{"TIMER_MIGRATING", FlagMigrating, 0x00040000},
		{"TIMER_BASEMASK", FlagBaseMask, 0x0007FFFF},
		{"TIMER_DEFERRABLE", FlagDeferrable, 0x00080000},
		{"TIMER_PINNED", FlagPinned, 0x00100000},
		{"TIMER_IRQSAFE", FlagIRQSafe, 0x00200000},
		{"TIMER_INIT_FLAGS", FlagInitMask, 0x00380000},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}

	var b Base
	b.Init(9, 0)
	var tm, other Timer
	b.Add(&other, 1<<40) // bucket 575, the largest index: all 10 bits
	b.Add(&tm, 1<<40)
	if tm.Index() != 575 {
		t.Fatalf("Index = %d, want 575", tm.Index())
	}
	tm.SetFlags(FlagPinned | FlagDeferrable | 5)
	if tm.Index() != 575 || tm.CPU() != 5 || tm.Flags()&FlagInitMask != FlagPinned|FlagDeferrable {
		t.Fatalf("after SetFlags: index %d cpu %d flags %#x", tm.Index(), tm.CPU(), tm.Flags())
	}
	// Detach relies on the stored index to clear the right pending bit.
	b.Detach(&other)
	b.Detach(&tm)
	if b.PendingBit(575) || b.Len() != 0 {
		t.Fatalf("bucket 575 still marked after both timers left (pending %v, %d timers)", b.PendingBit(575), b.Len())
	}
	if !b.NeedsRecalc() {
		t.Fatalf("emptying the first bucket did not mark next_expiry stale")
	}
}
