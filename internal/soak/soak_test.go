package soak

import "testing"

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{"": 0, "1": 1, "1e7": 10_000_000, "10000000": 10_000_000, "2.5e3": 2500} {
		if got, err := parse(s); err != nil || got != want {
			t.Errorf("parse(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"x", "0", "-5", "1.5", "NaN", "Inf", "1e16", "1e7x"} {
		if n, err := parse(s); err == nil {
			t.Errorf("parse(%q) = %d, want an error", s, n)
		}
	}
}

func TestRun(t *testing.T) {
	t.Setenv(Env, "")
	n := 0
	Run(t, func() int64 { return int64(n) }, func(*testing.T) { n++ })
	if n != 1 {
		t.Fatalf("unsoaked: %d batches, want 1", n)
	}
	t.Setenv(Env, "10")
	ops := int64(0)
	batches := 0
	Run(t, func() int64 { return ops }, func(*testing.T) { ops += 3; batches++ })
	if ops != 12 || batches != 4 {
		t.Fatalf("soaked to 10 by 3s: %d operations in %d batches, want 12 in 4", ops, batches)
	}
}
