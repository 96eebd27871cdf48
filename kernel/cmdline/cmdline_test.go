package cmdline

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := Parse("BOOT_IMAGE=/vmlinuz  nohz-full=1-3 dyndbg=\"file x +p\" quiet \"\" -- isolcpus=2\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Param{{"BOOT_IMAGE", "/vmlinuz", true}, {"nohz-full", "1-3", true}, {"dyndbg", "file x +p", true}, {"quiet", "", false}}
	if len(c.Params) != len(want) {
		t.Fatalf("params %+v, want %+v", c.Params, want)
	}
	for i := range want {
		if c.Params[i] != want[i] {
			t.Errorf("param %d: %+v, want %+v", i, c.Params[i], want[i])
		}
	}
	if strings.Join(c.Init, " ") != "isolcpus=2" {
		t.Errorf("init part %q", c.Init)
	}
	if got := c.Get("nohz_full"); len(got) != 1 || got[0].Value != "1-3" {
		t.Errorf("Get(nohz_full) = %+v", got)
	}
	if got := c.Isolation(); got != "nohz-full=1-3" {
		t.Errorf("Isolation() = %q", got)
	}
	if got := c.Params[2].String(); got != `dyndbg="file x +p"` {
		t.Errorf("String() = %q", got)
	}
	for _, tc := range []struct{ in, want string }{
		{`quiet isolcpus="1-3`, `command line: unterminated quote in "isolcpus=\"1-3"`},
		{"quiet iso\x00lcpus=1 nohz_full=2", `command line: a NUL byte in "iso\x00lcpus=1"`},
		{strings.Repeat("x", MaxLen+1), "command line of 65537 bytes: longer than any kernel accepts (65536)"},
	} {
		if _, err := Parse(tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%.40q): %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestParseIsolation(t *testing.T) {
	for _, tc := range []struct {
		cmdline               string
		cpus                  int
		domain, nohz, managed string
		warnings              []string
	}{
		{"", 16, "", "", "", nil},
		{"isolcpus=1-7,9-15", 16, "1-7,9-15", "", "", nil},
		{"isolcpus=domain,1-3", 16, "1-3", "", "", nil},
		{"isolcpus=nohz,1-3", 16, "", "1-3", "", nil},
		{"isolcpus=managed_irq,1-3", 16, "", "", "1-3", nil},
		{"isolcpus=nohz,domain,managed_irq,1-3", 16, "1-3", "1-3", "1-3", nil},
		{"nohz_full=1-11", 12, "", "1-11", "", nil},
		{"nohz-full=1-11 quiet", 12, "", "1-11", "", nil},
		{"root=/dev/vda isolcpus=2 isolcpus_x=3", 4, "2", "", "", nil},
		{"isolcpus=1-3 nohz_full=1-3", 8, "1-3", "1-3", "", nil},
		{"isolcpus=1-3 nohz_full=2-3", 8, "1-3", "2-3", "", nil},
		// "N" (the last CPU) is a letter, which the isolcpus flag loop
		// takes for an unknown flag, as the kernel does.
		{"isolcpus=N", 8, "", "", "", []string{"isolcpus: Skipped unknown flag N"}},
		{"isolcpus=domain,N", 8, "", "", "", []string{"isolcpus: Skipped unknown flag N"}},
		{"nohz_full=N", 8, "", "7", "", nil},
		{"isolcpus=", 8, "", "", "", nil},
		{`foo="a b isolcpus=1" isolcpus=2`, 4, "2", "", "", nil},
		{"isolcpus=1 -- isolcpus=2", 4, "1", "", "", nil},
		{"isolcpus=foo,1-3", 8, "1-3", "", "", []string{"isolcpus: Skipped unknown flag foo"}},
		{"isolcpus=f00,1-3", 8, "", "", "", []string{"isolcpus: Invalid flag f00"}},
		{"isolcpus=nohz", 8, "", "", "", []string{"isolcpus: Skipped unknown flag nohz"}},
		{"isolcpus=0-15", 16, "1-15", "", "", []string{"Housekeeping: must include one present CPU, using boot CPU:0"}},
		{"isolcpus=1-99", 16, "", "", "", []string{"Housekeeping: nohz_full= or isolcpus= incorrect CPU range"}},
		{"isolcpus=nohz,1-3 nohz_full=2-3", 8, "", "1-3", "", []string{"Housekeeping: nohz_full= must match isolcpus="}},
		{"nohz_full=1-3 isolcpus=0,4-7", 8, "", "1-3", "", []string{"Housekeeping: must include one present CPU neither in nohz_full= nor in isolcpus=domain, ignoring setting 0,4-7"}},
		// nohz_full over every CPU keeps CPU 0, which then is in neither.
		{"nohz_full=0-7 isolcpus=1-7", 8, "1-7", "1-7", "", []string{"Housekeeping: must include one present CPU, using boot CPU:0"}},
	} {
		iso, err := ParseIsolation(tc.cmdline, tc.cpus)
		if err != nil {
			t.Errorf("%q: %v", tc.cmdline, err)
			continue
		}
		if iso.Domain.String() != tc.domain || iso.NohzFull.String() != tc.nohz || iso.ManagedIRQ.String() != tc.managed ||
			strings.Join(iso.Warnings, "|") != strings.Join(tc.warnings, "|") {
			t.Errorf("%q on %d CPUs: domain=%q nohz=%q managed=%q warnings=%q; want %q %q %q %q",
				tc.cmdline, tc.cpus, iso.Domain.String(), iso.NohzFull.String(), iso.ManagedIRQ.String(), iso.Warnings,
				tc.domain, tc.nohz, tc.managed, tc.warnings)
		}
	}
	if _, err := ParseIsolation(`isolcpus="1-3`, 8); err == nil || err.Error() != `isolation: command line: unterminated quote in "isolcpus=\"1-3"` {
		t.Errorf("unterminated quote: %v", err)
	}
	if _, err := ParseIsolation("", 0); err == nil {
		t.Error("a machine of 0 CPUs was accepted")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"BOOT_IMAGE=/vmlinuz root=UUID=x ro quiet isolcpus=1-31,33-63,65-95,97-127",
		`isolcpus=nohz,domain,managed_irq,1-7 nohz_full=1-7 -- --init-arg isolcpus=2`,
		`dyndbg="file x +p" nohz-full=3 rcu_nocbs irqaffinity=0`,
		"a\"b c\"d", "\"", "--", " -- ", "\t\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			return
		}
		// Printing the parameters and splitting them again gives them back.
		var parts []string
		for _, p := range c.Params {
			if p.Name == "--" && !p.HasValue {
				t.Fatalf("%q: \"--\" kept as a parameter", s)
			}
			parts = append(parts, p.String())
		}
		again, err := Parse(strings.Join(parts, " "))
		if err != nil {
			t.Fatalf("%q: re-split of %q: %v", s, strings.Join(parts, " "), err)
		}
		if len(again.Params) != len(c.Params) {
			t.Fatalf("%q: %d parameters, %d after printing them", s, len(c.Params), len(again.Params))
		}
		for i := range again.Params {
			if again.Params[i] != c.Params[i] {
				t.Fatalf("%q: parameter %d %+v became %+v", s, i, c.Params[i], again.Params[i])
			}
		}
		// The isolation part parses as the kernel's isolation does.
		if _, err := ParseIsolation(c.Isolation(), 64); err != nil {
			t.Fatalf("%q: the isolation part %q does not split: %v", s, c.Isolation(), err)
		}
		for _, p := range c.Get("isolcpus") {
			v := ParseIsolcpus(p.Value)
			if v.Invalid == "" && !strings.HasSuffix(p.Value, v.List) {
				t.Fatalf("isolcpus=%q: list %q is not its tail", p.Value, v.List)
			}
			if v.Invalid != "" && (v.List != "" || !strings.Contains(p.Value, v.Invalid)) {
				t.Fatalf("isolcpus=%q: invalid flag %q with list %q", p.Value, v.Invalid, v.List)
			}
			for _, fl := range v.Flags {
				if fl != "nohz" && fl != "domain" && fl != "managed_irq" {
					t.Fatalf("isolcpus=%q: flag %q", p.Value, fl)
				}
			}
			for _, u := range v.Unknown {
				if u == "" || !strings.Contains(p.Value, u+",") && !strings.HasSuffix(p.Value, u) {
					t.Fatalf("isolcpus=%q: unknown flag %q is not in it", p.Value, u)
				}
			}
		}
	})
}

func FuzzParseIsolation(f *testing.F) {
	f.Add("isolcpus=nohz,domain,managed_irq,1-7 nohz_full=1-7", 16)
	f.Add(`isolcpus=foo,1 "x y" -- nohz_full=2`, 4)
	f.Fuzz(func(t *testing.T, cmdline string, cpus int) {
		iso, err := ParseIsolation(cmdline, cpus)
		if err != nil {
			return
		}
		all := iso.Domain.Or(iso.NohzFull).Or(iso.ManagedIRQ)
		if all.Last() >= cpus {
			t.Fatalf("%q on %d CPUs isolates CPU %d", cmdline, cpus, all.Last())
		}
		// The kernel always keeps a CPU neither nohz_full nor domain-isolated.
		either := iso.Domain.Or(iso.NohzFull)
		if either.Weight() >= cpus {
			t.Fatalf("%q on %d CPUs leaves no housekeeping CPU: domain %s nohz_full %s", cmdline, cpus, iso.Domain, iso.NohzFull)
		}
	})
}

func TestParseIsolcpus(t *testing.T) {
	for _, tc := range []struct {
		in                    string
		flags, unknown        string
		invalid, list         string
		domain, nohz, managed bool
	}{
		{"1-7", "", "", "", "1-7", false, false, false},
		{"nohz,domain,managed_irq,1-7", "nohz domain managed_irq", "", "", "1-7", true, true, true},
		{"domain", "", "domain", "", "", false, false, false},
		{"foo,x_y,domain,2", "domain", "foo x_y", "", "2", true, false, false},
		{"foo,f00,domain,2", "", "foo", "f00", "", false, false, false},
		{"N", "", "N", "", "", false, false, false},
	} {
		v := ParseIsolcpus(tc.in)
		if strings.Join(v.Flags, " ") != tc.flags || strings.Join(v.Unknown, " ") != tc.unknown || v.Invalid != tc.invalid || v.List != tc.list ||
			v.Has("domain") != tc.domain || v.Has("nohz") != tc.nohz || v.Has("managed_irq") != tc.managed {
			t.Errorf("ParseIsolcpus(%q) = %+v", tc.in, v)
		}
	}
}
