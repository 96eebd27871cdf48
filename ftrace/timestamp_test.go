package ftrace

import (
	"fmt"
	"math"
	"testing"
)

// FuzzFormatTS holds FormatTS to the kernel's "%lu.%06lu" of the
// magnitude, and to a round trip through the line parser for times a line
// can carry.
func FuzzFormatTS(f *testing.F) {
	for _, ns := range []int64{0, 1, 999, 1000, 123456789012, -1, math.MaxInt64, math.MinInt64} {
		f.Add(ns)
	}
	f.Fuzz(func(t *testing.T, ns int64) {
		got := FormatTS(ns)
		if ns == math.MinInt64 {
			return // no positive int64 to compare with
		}
		m, sign := ns, ""
		if ns < 0 {
			m, sign = -ns, "-"
		}
		if want := fmt.Sprintf("%s%d.%06d", sign, m/1e9, m%1e9/1e3); got != want {
			t.Fatalf("FormatTS(%d) = %q, want %q", ns, got, want)
		}
		if ns >= 0 && ns < math.MaxInt64/2 {
			back, digits, why := parseTimestamp(got + ":")
			if why != "" || digits != 6 || back != ns/1e3*1e3 {
				t.Fatalf("FormatTS(%d) = %q reads back as %d (%d digits, %q)", ns, got, back, digits, why)
			}
		}
	})
}

func TestFormatTS(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "0.000000"},
		{999, "0.000000"},
		{1000, "0.000001"},
		{123456789, "0.123456"},
		{1_000_000_000, "1.000000"},
		{12_345_678_901, "12.345678"},
		{-1500, "-0.000001"},
		{-2_000_001_000, "-2.000001"},
		{math.MaxInt64, "9223372036.854775"},
		{math.MinInt64, "-9223372036.854775"},
	} {
		if got := FormatTS(tc.ns); got != tc.want {
			t.Errorf("FormatTS(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}
