package tmigr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tmigr/tmigr/internal/engine"
)

// TestHistogram: the public Histogram's quantiles against the exact ones
// of random samples recorded by a worker's histogram.
func TestHistogram(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var h engine.Histogram
		n := rapid.IntRange(1, 2000).Draw(t, "n")
		seed := rapid.Uint64().Draw(t, "seed")
		r := rand.New(rand.NewPCG(seed, 1))
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = int64(math.Exp(r.Float64() * 30)) // 1 ns .. 10 s, log-spread
			h.Record(vals[i])
		}
		slices.Sort(vals)
		s := (Histogram{h.Snapshot()})
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
	var h engine.Histogram
	h.Record(-5)
	if s := (Histogram{h.Snapshot()}); s.Quantile(0.5) != 0 || s.Mean() != 0 {
		t.Fatal("negative values count as 0")
	}
	if (Histogram{}).Quantile(0.5) != 0 || (Histogram{}).Mean() != 0 {
		t.Fatal("empty histogram")
	}
}
