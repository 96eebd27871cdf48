package sim

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestParseDist(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Dist
		err  string
	}{
		{"1.5us", Dist{Kind: Const, A: 1500}, ""},
		{" 2ms ", Dist{Kind: Const, A: 2e6}, ""},
		{"uniform(1us,3us)", Dist{Kind: Uniform, A: 1000, B: 3000}, ""},
		{"lognormal(1.2µs,0.25)", Dist{Kind: LogNormal, A: 1200, Sigma: 0.25}, ""},
		{"lognormal(1us, 0.3, max=8us)", Dist{Kind: LogNormal, A: 1000, Sigma: 0.3, Max: 8000}, ""},
		{"", Dist{}, "bad duration"},
		{"fast", Dist{}, "bad duration"},
		{"-1us", Dist{}, "negative"},
		{"uniform(3us,1us)", Dist{}, "MAX below MIN"},
		{"uniform(1us)", Dist{}, "two durations"},
		{"lognormal(1us,x)", Dist{}, "sigma"},
		{"lognormal(1us,9)", Dist{}, "sigma"},
		{"lognormal(1us,0.2,cap=3us)", Dist{}, "max="},
		{"gauss(1us,2us)", Dist{}, "want a duration"},
		{"uniform(1us,2us", Dist{}, "missing ')'"},
	} {
		got, err := ParseDist(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseDist(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// A distribution printed by String reads back as itself.
func TestDistRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ns := func(label string) float64 {
			return float64(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, label))
		}
		var d Dist
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			d = Dist{Kind: Const, A: ns("a")}
		case 1:
			a, b := ns("a"), ns("b")
			d = Dist{Kind: Uniform, A: math.Min(a, b), B: math.Max(a, b)}
		case 2:
			d = Dist{Kind: LogNormal, A: ns("a"), Sigma: float64(rapid.IntRange(0, 500).Draw(t, "sigma")) / 100}
			if rapid.Bool().Draw(t, "capped") {
				d.Max = ns("max")
			}
		}
		back, err := ParseDist(d.String())
		if err != nil || back != d {
			t.Fatalf("%+v printed %q read back as %+v, %v", d, d.String(), back, err)
		}
	})
}

func TestDistSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	u := U(time.Microsecond, 3*time.Microsecond)
	ln := Dist{Kind: LogNormal, A: 1000, Sigma: 0.5, Max: 2500}
	var sumU float64
	for i := 0; i < 10000; i++ {
		v := u.Sample(r)
		if v < 1000 || v > 3000 {
			t.Fatalf("uniform sample %d outside [1µs,3µs]", v)
		}
		sumU += float64(v)
		if w := ln.Sample(r); w <= 0 || w > 2500 {
			t.Fatalf("lognormal sample %d outside (0, cap]", w)
		}
	}
	if m := sumU / 10000; math.Abs(m-u.Mean()) > 30 {
		t.Errorf("uniform mean %v, want about %v", m, u.Mean())
	}
	// A constant draws nothing from the stream.
	r1, r2 := rand.New(rand.NewPCG(5, 5)), rand.New(rand.NewPCG(5, 5))
	C(time.Microsecond).Sample(r1)
	if r1.Uint64() != r2.Uint64() {
		t.Error("a constant consumed a random number")
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"1us", "uniform(1us,3us)", "lognormal(1.2us,0.25,max=8us)", "lognormal(", "uniform(,)", "(", ")", "lognormal(1us,0.2,max=)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		back, err := ParseDist(d.String())
		if err != nil || back != d {
			t.Fatalf("%q parsed as %+v, printed %q, read back as %+v, %v", s, d, d.String(), back, err)
		}
	})
}

func TestParams(t *testing.T) {
	var c Costs
	ps := &Params{}
	c.Register(ps)
	if err := ps.Set("cost.tick", "lognormal(2us,0.1)"); err != nil || c.Tick.A != 2000 {
		t.Fatalf("set tick: %v %+v", err, c.Tick)
	}
	if err := ps.SetAssignment("cost.ipi_latency = 3us"); err != nil || c.IPILatency != 3000 {
		t.Fatalf("set ipi: %v %d", err, c.IPILatency)
	}
	if err := ps.Set("cost.counter_mhz", "2100"); err != nil || c.CounterMHz != 2100 {
		t.Fatal(err)
	}
	for _, bad := range []struct{ in, err string }{
		{"cost.nope=1us", `unknown parameter "cost.nope"`},
		{"cost.tick", "want NAME=VALUE"},
		{"cost.irqoff_share=-1", "non-negative number"},
		{"cost.irqoff_share=NaN", "non-negative number"},
		{"cost.counter_mhz=1.5", "non-negative integer"},
		{"cost.tick=uniform(2us,1us)", "MAX below MIN"},
	} {
		if err := ps.SetAssignment(bad.in); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("SetAssignment(%q) = %v, want an error with %q", bad.in, err, bad.err)
		}
	}
	err := ps.Read(strings.NewReader("# comment\n\ncost.tick = 1us\ncost.bogus = 2\n"), "f.params")
	if err == nil || !strings.Contains(err.Error(), "f.params:4:") {
		t.Errorf("Read error %v should name line 4", err)
	}
}

// What Explain prints reads back into the same values.
func TestExplainRoundTrip(t *testing.T) {
	p, _ := PlatformByName("zynq-7020")
	c := p.Costs
	ps := &Params{}
	c.Register(ps)
	var b bytes.Buffer
	if err := ps.Explain(&b); err != nil {
		t.Fatal(err)
	}
	var d Costs
	ps2 := &Params{}
	d.Register(ps2)
	if err := ps2.Read(&b, "explain"); err != nil {
		t.Fatal(err)
	}
	if d != c {
		t.Errorf("read back %+v\nwant %+v", d, c)
	}
}

func TestPlatforms(t *testing.T) {
	for _, p := range Platforms() {
		if err := p.Costs.validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
		if q, err := PlatformByName(p.Name); err != nil || q.Name != p.Name {
			t.Errorf("lookup %s: %v", p.Name, err)
		}
	}
	if _, err := PlatformByName("pdp11"); err == nil || !strings.Contains(err.Error(), "server") {
		t.Errorf("unknown platform: %v", err)
	}
}

func FuzzParamsRead(f *testing.F) {
	for _, s := range []string{"cost.tick = 1us\n", "# c\n\ncost.counter_mhz=2400", "cost.irqoff_share = 0.5\ncost.tick = uniform(1us,2us)", "=", "cost.tick"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c Costs
		ps := &Params{}
		c.Register(ps)
		if err := ps.Read(strings.NewReader(s), "fuzz"); err != nil {
			return
		}
		// Whatever was accepted prints and reads back the same.
		var b bytes.Buffer
		if err := ps.Explain(&b); err != nil {
			t.Fatal(err)
		}
		var d Costs
		ps2 := &Params{}
		d.Register(ps2)
		if err := ps2.Read(&b, "explain"); err != nil {
			t.Fatalf("accepted %q but its explanation does not read back: %v", s, err)
		}
		if d != c {
			t.Fatalf("accepted %q: %+v read back as %+v", s, c, d)
		}
	})
}
