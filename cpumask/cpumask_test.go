package cpumask

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		in    string
		cpus  []int
		canon string
	}{
		{"", nil, ""},
		{"\n", nil, ""},
		{"5", []int{5}, "5"},
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{"0-3,8,10-11\n", []int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
		{"10-11,0-3,2", []int{0, 1, 2, 3, 10, 11}, "0-3,10-11"},
		{"0-31:2/4", []int{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29}, "0-1,4-5,8-9,12-13,16-17,20-21,24-25,28-29"},
		{"1-9:1/3", []int{1, 4, 7}, "1,4,7"},
		{"0-7:0/4", nil, ""},
		{"3-3", []int{3}, "3"},
		{"8191", []int{8191}, "8191"},
		{"1-31,33-63,65-95,97-127", nil, "1-31,33-63,65-95,97-127"},
	} {
		m, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if tc.cpus != nil && !slices.Equal(m.CPUs(), tc.cpus) {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, m.CPUs(), tc.cpus)
		}
		if got := m.String(); got != tc.canon {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got, tc.canon)
		}
	}
}

func TestParseErrorsNameTheToken(t *testing.T) {
	for _, tc := range []struct{ in, token, reason string }{
		{"3-1", "3-1", "below its start"},
		{"a", "a", "not a number"},
		{"1,,2", "", "empty region"},
		{"0-3,8192", "8192", "beyond the last CPU 8191"},
		{"0-31:2/0", "0-31:2/0", "group size is 0"},
		{"0-31:5/4", "0-31:5/4", "uses 5 of every 4"},
		{"0-31:2", "0-31:2", "USED/GROUP"},
		{"1, 2", " 2", "not a number"},
		{"-1", "-1", "missing number"},
		{"1-", "1-", "missing number"},
		{",", "", "empty region"},
		{"0x3", "0x3", "not a number"},
		{"1\n\n", "1\n", "not a number"},
		{"99999999999", "99999999999", "too large"},
	} {
		_, err := Parse(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want a *ParseError", tc.in, err)
			continue
		}
		if pe.Token != tc.token || !strings.Contains(pe.Error(), tc.reason) {
			t.Errorf("Parse(%q): token %q, error %q; want token %q and %q", tc.in, pe.Token, pe.Error(), tc.token, tc.reason)
		}
	}
}

func TestParseFor(t *testing.T) {
	m, err := ParseFor("all", 16)
	if err != nil || m.String() != "0-15" {
		t.Fatalf("all: %v %v", m, err)
	}
	m, err = ParseFor("1-N:1/2", 8)
	if err != nil || m.String() != "1,3,5,7" {
		t.Fatalf("1-N:1/2: %v %v", m, err)
	}
	if _, err := ParseFor("0-16", 16); err == nil || !strings.Contains(err.Error(), "beyond the last CPU 15") {
		t.Fatalf("0-16 on 16 CPUs: %v", err)
	}
	if _, err := Parse("all"); err == nil {
		t.Fatal("Parse accepted the keyword all without a machine size")
	}
	if _, err := ParseFor("1", 0); err == nil {
		t.Fatal("ParseFor accepted a machine of 0 CPUs")
	}
}

// TestSetOperations checks every operation against a map-based model.
func TestSetOperations(t *testing.T) {
	cpuGen := rapid.OneOf(rapid.IntRange(0, 200), rapid.IntRange(0, MaxCPUs-1))
	rapid.Check(t, func(t *rapid.T) {
		as := rapid.SliceOf(cpuGen).Draw(t, "a")
		bs := rapid.SliceOf(cpuGen).Draw(t, "b")
		a, b := Of(as...), Of(bs...)
		ma, mb := map[int]bool{}, map[int]bool{}
		for _, c := range as {
			ma[c] = true
		}
		for _, c := range bs {
			mb[c] = true
		}
		model := func(f func(x, y bool) bool) []int {
			var out []int
			for c := range MaxCPUs {
				if f(ma[c], mb[c]) {
					out = append(out, c)
				}
			}
			return out
		}
		check := func(name string, got Mask, want []int) {
			g := got.CPUs()
			if len(g) == 0 {
				g = nil
			}
			if !slices.Equal(g, want) {
				t.Fatalf("%s = %v, want %v", name, g, want)
			}
			if got.Weight() != len(want) {
				t.Fatalf("%s weight %d, want %d", name, got.Weight(), len(want))
			}
			first, last := -1, -1
			if len(want) > 0 {
				first, last = want[0], want[len(want)-1]
			}
			if got.First() != first || got.Last() != last || got.Empty() != (len(want) == 0) {
				t.Fatalf("%s first/last/empty = %d/%d/%v, want %d/%d", name, got.First(), got.Last(), got.Empty(), first, last)
			}
		}
		check("and", a.And(b), model(func(x, y bool) bool { return x && y }))
		check("or", a.Or(b), model(func(x, y bool) bool { return x || y }))
		check("andnot", a.AndNot(b), model(func(x, y bool) bool { return x && !y }))
		if a.Equal(b) != (len(model(func(x, y bool) bool { return x != y })) == 0) {
			t.Fatal("Equal disagrees with the model")
		}
		if a.Subset(&b) != (len(model(func(x, y bool) bool { return x && !y })) == 0) {
			t.Fatal("Subset disagrees with the model")
		}
		if a.Intersects(&b) != (len(model(func(x, y bool) bool { return x && y })) > 0) {
			t.Fatal("Intersects disagrees with the model")
		}
		c := rapid.IntRange(-1, MaxCPUs).Draw(t, "c")
		want := -1
		for d := c + 1; d < MaxCPUs; d++ {
			if ma[d] {
				want = d
				break
			}
		}
		if got := a.Next(c); got != want {
			t.Fatalf("Next(%d) = %d, want %d", c, got, want)
		}
		if c >= 0 && c < MaxCPUs {
			x := a
			x.Set(c)
			if !x.Test(c) {
				t.Fatal("Set then Test false")
			}
			x.Clear(c)
			if x.Test(c) {
				t.Fatal("Clear then Test true")
			}
		}
		p, err := Parse(a.String())
		if err != nil || !p.Equal(a) {
			t.Fatalf("round trip of %q: %v", a.String(), err)
		}
	})
}

func TestTestOutOfRange(t *testing.T) {
	m := Range(0, MaxCPUs-1)
	if m.Test(-1) || m.Test(MaxCPUs) {
		t.Fatal("Test true outside the range")
	}
	if m.Weight() != MaxCPUs || m.Next(MaxCPUs-1) != -1 {
		t.Fatal("full mask")
	}
}

func TestTextMarshaling(t *testing.T) {
	var m Mask
	if err := m.UnmarshalText([]byte("2-4\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := m.MarshalText()
	if string(b) != "2-4" {
		t.Fatalf("got %q", b)
	}
	if err := m.UnmarshalText([]byte("4-2")); err == nil {
		t.Fatal("bad text accepted")
	}
}

// FuzzParse: no input panics; whatever parses formats back to a list that
// parses to the same set, and the canonical form is a fixed point.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "0-3,8,10-11", "0-31:2/4", "3-1", "1,,2", "8192", "0-31:2/0", "\n", "all", "N", "1-N:3/7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range []int{MaxCPUs, 16} {
			m, err := parse(s, n, n != MaxCPUs)
			if err != nil {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Error() == "" {
					t.Fatalf("Parse(%q): error %v is not a *ParseError", s, err)
				}
				continue
			}
			canon := m.String()
			back, err := Parse(canon)
			if err != nil || !back.Equal(m) {
				t.Fatalf("Parse(%q) = %q, which re-parses to %v (%v)", s, canon, back, err)
			}
			if back.String() != canon {
				t.Fatalf("canonical form not a fixed point: %q -> %q", canon, back.String())
			}
		}
	})
}

func BenchmarkNext(b *testing.B) {
	m := MustParse("1-31,33-63,65-95,97-127,4000,8000")
	for b.Loop() {
		n := 0
		for c := m.First(); c >= 0; c = m.Next(c) {
			n++
		}
		if n != 126 {
			b.Fatal(n)
		}
	}
}
