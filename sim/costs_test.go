package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// sampleRef is Dist.Sample as it was before the table: a ziggurat normal
// (math/rand/v2's NormFloat64) through math.Exp. It is the reference the
// table sampler is tested and benchmarked against.
func sampleRef(d Dist, r *rand.Rand) int64 {
	switch d.Kind {
	case Uniform:
		return int64(d.A + (d.B-d.A)*r.Float64())
	case LogNormal:
		v := d.A * math.Exp(d.Sigma*r.NormFloat64())
		if d.Max > 0 && v > d.Max {
			v = d.Max
		}
		return int64(v)
	}
	return int64(d.A)
}

// The lognormals the tests draw from: the server's tick and device
// interrupt, a wide one, and a heavy, capped one whose cap falls inside
// the interpolated cells.
var testLognormals = []Dist{
	{Kind: LogNormal, A: 1000, Sigma: 0.3, Max: 8000},
	LN(3*time.Microsecond, 0.3),
	LN(time.Microsecond, 1),
	{Kind: LogNormal, A: 100, Sigma: 2, Max: 2000},
	LN(50*time.Microsecond, 5),
}

// normCDF is Φ, accurate in both tails.
func normCDF(z float64) float64 { return math.Erfc(-z/math.Sqrt2) / 2 }

// lnCDF is the capped lognormal's CDF P(X <= v).
func lnCDF(k lnKey, v float64) float64 {
	if k.max > 0 && v >= k.max {
		return 1
	}
	if v <= 0 {
		return 0
	}
	return normCDF(math.Log(v/k.median) / k.sigma)
}

// bitsAt returns the random number that names cell i at position f.
func bitsAt(i int, f float64) uint64 {
	return uint64(i)<<(64-lnBits) | uint64(f*0x1p52)<<2
}

func TestNormInv(t *testing.T) {
	// Reference quantiles: Φ inverted by bisection on math.Erfc.
	for _, c := range []struct{ p, z float64 }{
		{0.5, 0},
		{0.25, -0.6744897501960817},
		{0.075, -1.4395314709384563},
		{0.025, -1.959963984540054},
		{1e-3, -3.090232306167814},
		{1e-10, -6.361340902404056},
		{1e-20, -9.262340089798408},
		{1e-300, -37.04709629936121},
	} {
		if got := normInv(c.p); math.Abs(got-c.z) > 1e-12*math.Max(1, math.Abs(c.z)) {
			t.Errorf("normInv(%g) = %.16g, want %.16g", c.p, got, c.z)
		}
	}
	// It inverts Φ everywhere, and is increasing across its two branches.
	prev := math.Inf(-1)
	for e := -60.0; e <= math.Log2(0.5); e += 1.0 / 64 {
		p := math.Exp2(e)
		z := normInv(p)
		if z <= prev {
			t.Fatalf("normInv not increasing at p = %g: %g after %g", p, z, prev)
		}
		prev = z
		if back := normCDF(z); math.Abs(back-p) > 1e-13*p {
			t.Fatalf("Φ(normInv(%g)) = %g", p, back)
		}
	}
	if !math.IsInf(normInv(0), -1) {
		t.Errorf("normInv(0) = %g, want -Inf", normInv(0))
	}
}

// The sampler's CDF, computed exactly from the sampler itself at 64
// points of every cell, is within the stated distance of the true one
// (1.7e-7 at σ = 0.3, 2.5e-7 at σ = 1, 1.2e-6 at σ = 5), and so is every
// tail's probability relative to itself (0.004%, 0.006%, 0.027%); the
// exact cells are exact to rounding, and the values increase with u.
func TestLognormalCDF(t *testing.T) {
	for _, d := range testLognormals {
		k := lnKey{d.A, d.Sigma, d.Max}
		tab := lnLookup(k)
		absBound, relBound := 1.8e-7, 4e-5 // σ <= 0.3
		switch {
		case d.Sigma > 2:
			absBound, relBound = 1.2e-6, 2.8e-4
		case d.Sigma > 0.3:
			absBound, relBound = 2.6e-7, 6e-5
		}
		var worst, worstRel, worstExact float64
		capMass := 1 - lnCDF(k, math.Nextafter(d.Max, 0))
		prev := 0.0
		for i := 0; i < lnCells; i++ {
			for j := 1; j < 64; j++ {
				u := (float64(i) + float64(j)/64) / lnCells
				v := k.value(tab, bitsAt(i, float64(j)/64))
				if v < prev {
					t.Fatalf("%v: value %g at u = %g below %g before it", d, v, u, prev)
				}
				prev = v
				if d.Max > 0 && v > d.Max {
					t.Fatalf("%v: value %g above the cap", d, v)
				}
				if d.Max > 0 && v == d.Max {
					// The cap's point mass: u must lie in it.
					if u < 1-capMass-absBound {
						t.Fatalf("%v: u = %g gave the cap, whose mass is %g", d, u, capMass)
					}
					continue
				}
				e := math.Abs(lnCDF(k, v) - u)
				exact := i < lnTail || i >= lnCells-lnTail || d.Max > 0 && tab.k[i+1].q >= d.Max
				if exact {
					worstExact = max(worstExact, e/min(u, 1-u))
				} else {
					worst = max(worst, e)
					worstRel = max(worstRel, e/min(u, 1-u))
				}
			}
		}
		t.Logf("%v: CDF off by %.2e at most, a tail by %.2e of itself, exact cells by %.1e", d, worst, worstRel, worstExact)
		if worst > absBound || worstRel > relBound || worstExact > 1e-9 {
			t.Errorf("%v: CDF off by %.2e (bound %.1e), a tail by %.2e of itself (bound %.1e), an exact cell by %.1e",
				d, worst, absBound, worstRel, relBound, worstExact)
		}
	}
}

// ks2 returns the two-sample Kolmogorov–Smirnov statistic of two samples
// given as histograms over whole nanoseconds: the largest distance
// between their empirical CDFs.
func ks2(a, b []int) float64 {
	var na, nb, ca, cb int
	for v := range a {
		na += a[v]
		nb += b[v]
	}
	var d float64
	for v := range a {
		ca += a[v]
		cb += b[v]
		d = max(d, math.Abs(float64(ca)/float64(na)-float64(cb)/float64(nb)))
	}
	return d
}

// hist draws n values of a capped distribution from a stream of seed,
// into a histogram over 0..cap ns.
func hist(n int, seed uint64, d Dist, sample func(Dist, *rand.Rand) int64) []int {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]int, int(d.Max)+1)
	for i := 0; i < n; i++ {
		out[sample(d, r)]++
	}
	return out
}

func draws(n int, seed uint64, sample func(r *rand.Rand) int64) []int64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]int64, n)
	for i := range out {
		out[i] = sample(r)
	}
	return out
}

// ksN is the sample size of the statistical tests, and ksCrit the
// critical value of the two-sample KS test at α = 0.001 for two samples
// of that size: c(α)·sqrt(2/n), c(0.001) = sqrt(-ln(0.0005)/2) = 1.9495
// (conservative for whole nanoseconds, which tie). The seeds are fixed,
// so the outcome is too; the power check below shows that the test fails
// distributions a few percent off.
const ksN = 1 << 20

var ksCrit = math.Sqrt(-math.Log(0.0005)/2) * math.Sqrt(2.0/ksN)

// The table sampler and the textbook draw give the same distribution: a
// two-sample KS test does not tell them apart, while it does tell the
// textbook draw from one with σ 3% larger or the median moved by 2% of σ
// in log space (0.6% at σ = 0.3). KS is blind to a monotone map of both
// samples, so the distributions differ only in what the truncation to
// whole nanoseconds and the cap do: the server's tick, a heavy one capped
// inside the interpolated cells, and a wide one capped far out. (The
// uncapped tails are TestLognormalCDF's, exactly.)
func TestLognormalKS(t *testing.T) {
	for _, d := range []Dist{testLognormals[0], testLognormals[3], {Kind: LogNormal, A: 1000, Sigma: 1, Max: 1e6}} {
		ref := hist(ksN, 1, d, sampleRef)
		got := hist(ksN, 2, d, Dist.Sample)
		D := ks2(ref, got)
		t.Logf("%v: D = %.5f (critical %.5f)", d, D, ksCrit)
		if D > ksCrit {
			t.Errorf("%v: two-sample KS D = %.5f > %.5f: the table draws another distribution", d, D, ksCrit)
		}
		for _, off := range []Dist{{Kind: LogNormal, A: d.A, Sigma: d.Sigma * 1.03, Max: d.Max},
			{Kind: LogNormal, A: d.A * math.Exp(0.02*d.Sigma), Sigma: d.Sigma, Max: d.Max}} {
			D := ks2(ref, hist(ksN, 3, off, sampleRef))
			t.Logf("  against %v: D = %.5f", off, D)
			if D <= ksCrit {
				t.Errorf("power: %v vs %v: D = %.5f <= %.5f: the test cannot fail", d, off, D, ksCrit)
			}
		}
	}
}

// The sample's mean and variance are the capped lognormal's, within 5
// standard errors, and so is the share of draws beyond the 99.9th
// percentile (a binomial count).
func TestLognormalMoments(t *testing.T) {
	for _, d := range testLognormals {
		k := lnKey{d.A, d.Sigma, d.Max}
		a, s := d.A, d.Sigma
		mean := a * math.Exp(s*s/2)
		m2 := a * a * math.Exp(2*s*s)
		if d.Max > 0 {
			zc := math.Log(d.Max/a) / s
			tail := 1 - normCDF(zc)
			mean = a*math.Exp(s*s/2)*normCDF(zc-s) + d.Max*tail
			m2 = a*a*math.Exp(2*s*s)*normCDF(zc-2*s) + d.Max*d.Max*tail
		}
		variance := m2 - mean*mean
		q999 := k.at(-normInv(0.001))
		got := draws(ksN, 4, d.Sample)
		var sum, sum2 float64
		beyond := 0
		for _, v := range got {
			sum += float64(v)
			if float64(v) >= q999 {
				beyond++
			}
		}
		gm := sum / ksN
		for _, v := range got {
			sum2 += (float64(v) - gm) * (float64(v) - gm)
		}
		gv := sum2 / (ksN - 1)
		// Truncation to whole nanoseconds lowers the mean by about 0.5 ns.
		se := math.Sqrt(variance / ksN)
		if math.Abs(gm+0.5-mean) > 5*se {
			t.Errorf("%v: mean %.2f, want %.2f ± %.2f", d, gm, mean, 5*se)
		}
		// The variance of the sample variance needs the fourth moment;
		// the capped ones have it, the uncapped σ >= 1 ones have it huge.
		if d.Max > 0 || d.Sigma < 1 {
			m4 := a * a * a * a * math.Exp(8*s*s)
			if d.Max > 0 {
				zc := math.Log(d.Max/a) / s
				m4 = a*a*a*a*math.Exp(8*s*s)*normCDF(zc-4*s) + math.Pow(d.Max, 4)*(1-normCDF(zc))
			}
			// Var(s²) ≈ (μ4 - σ⁴)/n with μ4 the central fourth moment,
			// bounded above by the raw one.
			sev := math.Sqrt((m4 - variance*variance) / ksN)
			if math.Abs(gv-variance) > 5*sev {
				t.Errorf("%v: variance %.4g, want %.4g ± %.3g", d, gv, variance, 5*sev)
			}
		}
		p := 0.001
		if d.Max > 0 && q999 >= d.Max {
			p = 1 - lnCDF(k, math.Nextafter(d.Max, 0))
		}
		want := p * ksN
		if sd := math.Sqrt(ksN * p * (1 - p)); math.Abs(float64(beyond)-want) > 5*sd {
			t.Errorf("%v: %d draws at or beyond the 99.9th percentile, want %.0f ± %.0f", d, beyond, want, 5*sd)
		}
	}
}

// With or without the table (the cache full), through value or the
// table's fast path, a draw is the same value, bit for bit, in every
// cell.
func TestLognormalTableIsPure(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, d := range testLognormals {
		k := lnKey{d.A, d.Sigma, d.Max}
		tab := lnLookup(k)
		for i := 0; i < lnCells; i++ {
			for j := 0; j < 8; j++ {
				x := uint64(i)<<(64-lnBits) | r.Uint64()>>lnBits
				a, b, c := k.value(tab, x), k.value(nil, x), tab.draw(x)
				if math.Float64bits(a) != math.Float64bits(b) || math.Float64bits(c) != math.Float64bits(b) {
					t.Fatalf("%v: x = %#x: %g with the table, %g without, %g drawn", d, x, a, b, c)
				}
			}
		}
	}
}

// A lognormal draw takes exactly one number from the stream, in every
// cell, so that what follows it in a run does not depend on the value.
func TestSampleConsumesOne(t *testing.T) {
	for _, d := range append(testLognormals, U(time.Microsecond, 2*time.Microsecond)) {
		r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 10000; i++ {
			d.Sample(r1)
			r2.Uint64()
		}
		if r1.Uint64() != r2.Uint64() {
			t.Errorf("%v: a draw consumed other than one number", d)
		}
	}
}

// Degenerate and extreme parameters give defined values: σ = 0 is the
// median, a zero median is 0, a huge one saturates instead of wrapping.
func TestSampleEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		d        Dist
		min, max int64
	}{
		{Dist{Kind: LogNormal, A: 1500, Sigma: 0}, 1500, 1500},
		{Dist{Kind: LogNormal, A: 1500, Sigma: 0, Max: 1000}, 1000, 1000},
		{Dist{Kind: LogNormal, A: 0, Sigma: 1}, 0, 0},
		{Dist{Kind: LogNormal, A: 1e18, Sigma: 5}, 0, math.MaxInt64},
		{Dist{Kind: LogNormal, A: 1000, Sigma: -0.3, Max: 8000}, 0, 8000},
		{Dist{Kind: LogNormal, A: math.NaN(), Sigma: 1}, 0, 0},
	} {
		sawMax := false
		for i := 0; i < 100000; i++ {
			v := c.d.Sample(r)
			if v < c.min || v > c.max {
				t.Fatalf("%+v: drew %d outside [%d, %d]", c.d, v, c.min, c.max)
			}
			sawMax = sawMax || v == math.MaxInt64
		}
		if c.d.A == 1e18 && !sawMax {
			t.Errorf("%+v: never saturated", c.d)
		}
	}
	// The far ends of the stream: u = 0 and the largest u.
	k := lnKey{1000, 0.3, 0}
	if v := k.value(lnLookup(k), 0); v != 0 {
		t.Errorf("u = 0 gave %g, want 0", v)
	}
	// The largest names u = 1 - 2⁻⁶²: z = 8.93.
	if v, want := k.value(lnLookup(k), math.MaxUint64), k.at(-normInv(0x1p-62)); v != want || want < 14000 {
		t.Errorf("the largest u gave %g, want %g", v, want)
	}
}

// Drawing allocates nothing once the table is built.
func TestSampleAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := testLognormals[0]
	d.Sample(r)
	if n := testing.AllocsPerRun(1000, func() { d.Sample(r) }); n != 0 {
		t.Errorf("Sample allocates %.1f times a draw", n)
	}
}

// Machines draw concurrently (a sweep): every goroutine sees the same
// values as a lone one, more distributions than the cache holds included
// (run with -race).
func TestSampleConcurrent(t *testing.T) {
	dists := make([]Dist, lnMaxTables+40)
	for i := range dists {
		dists[i] = Dist{Kind: LogNormal, A: 1000 + float64(i), Sigma: 0.25 + float64(i%7)/10}
	}
	run := func(seed uint64) []int64 {
		r := rand.New(rand.NewPCG(seed, 0))
		out := make([]int64, 0, 4*len(dists))
		for rep := 0; rep < 4; rep++ {
			for _, d := range dists {
				out = append(out, d.Sample(r))
			}
		}
		return out
	}
	want := make([][]int64, 4)
	for g := range want {
		want[g] = run(uint64(g))
	}
	var wg sync.WaitGroup
	got := make([][]int64, 4)
	for g := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[g] = run(uint64(g)) }()
	}
	wg.Wait()
	for g := range got {
		if !slices.Equal(got[g], want[g]) {
			t.Errorf("goroutine %d drew other values than a lone one", g)
		}
	}
}

// A Sampler draws what its Dist draws, value for value, the consts
// drawing nothing.
func TestSampler(t *testing.T) {
	for _, d := range append(testLognormals, U(time.Microsecond, 3*time.Microsecond), C(time.Microsecond)) {
		s := d.Sampler()
		r1, r2 := rand.New(rand.NewPCG(8, 8)), rand.New(rand.NewPCG(8, 8))
		p3 := rand.NewPCG(8, 8) // drawFrom's, the simulator's per-CPU draw
		for i := 0; i < 20000; i++ {
			if a, b, c := s.Sample(r1), d.Sample(r2), s.drawFrom(p3); a != b || c != b {
				t.Fatalf("%v: draw %d: Sampler %d, drawFrom %d, Dist %d", d, i, a, c, b)
			}
		}
		if x1, x2, x3 := r1.Uint64(), r2.Uint64(), p3.Uint64(); s.Dist() != d || x1 != x2 || x3 != x2 {
			t.Errorf("%v: the streams parted", d)
		}
	}
}

// BenchmarkDistSample draws from the server's tick cost, an uncapped
// lognormal and a uniform, with the table sampler (Dist.Sample; a
// Sampler resolved once, outside the loop) and with the textbook draw it
// replaced (ref), side by side:
//
//	go test -run '^$' -bench DistSample ./sim
func BenchmarkDistSample(b *testing.B) {
	for _, c := range []struct {
		name string
		d    Dist
	}{
		{"tick", testLognormals[0]},
		{"lognormal", testLognormals[2]},
		{"uniform", U(time.Microsecond, 3*time.Microsecond)},
	} {
		for _, impl := range []struct {
			name string
			f    func(Dist) func(*rand.Rand) int64
		}{
			{"table", func(d Dist) func(*rand.Rand) int64 { return d.Sample }},
			{"sampler", func(d Dist) func(*rand.Rand) int64 { s := d.Sampler(); return s.Sample }},
			{"ref", func(d Dist) func(*rand.Rand) int64 { return func(r *rand.Rand) int64 { return sampleRef(d, r) } }},
		} {
			b.Run(fmt.Sprintf("%s/%s", c.name, impl.name), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				draw := impl.f(c.d)
				var sum int64
				for b.Loop() {
					sum += draw(r)
				}
				if sum == 0 {
					b.Fatal("no draws")
				}
			})
		}
	}
}
