package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNextevtRecordings: every nextevt the kernel printed in the recordings
// is what our timer code computes, or undetermined for a reason (a timer
// armed before the recording); none differs.
func TestNextevtRecordings(t *testing.T) {
	matched := 0
	for _, f := range traceFiles(t) {
		tr, s := readTrace(t, f)
		c, err := CheckNextevt(tr, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Mismatches {
			t.Errorf("%s line %d: %s: kernel %s, model %s", filepath.Base(f), m.Line, m.Event, m.Kernel, m.Model)
		}
		for why := range c.UndeterminedReasons {
			if !strings.Contains(why, "before the recording") && why != "time base unknown" {
				t.Errorf("%s: undetermined for %q", filepath.Base(f), why)
			}
		}
		matched += c.Matched
	}
	if matched < 10000 {
		t.Errorf("only %d nextevt values matched over the recordings", matched)
	}
}

// TestNextevtCatchesCorruption: a nextevt our timer code would not hand
// the hierarchy, written into a recording, is a mismatch at its line.
func TestNextevtCatchesCorruption(t *testing.T) {
	for _, tc := range []struct {
		name, file, at, old, new string
	}{
		// CPU 1's first global timer is in the bucket of 7.240 s, not a
		// tick later.
		{"later", "vm16-2node-mixed.txt", "11.887448: tmigr_cpu_idle", "nextevt=7240000000", "nextevt=7244000000"},
		// CPU 9's is at 61.096 s: it has one, so not KTIME_MAX.
		{"none", "vm64-4node-mixed.txt", "61.128202: tmigr_cpu_idle", "nextevt=61096000000", "nextevt=9223372036854775807"},
		// CPU 52 has no global timer that could come first.
		{"invented", "vm64-4node-mixed.txt", "60.825433: tmigr_cpu_idle", "nextevt=9223372036854775807", "nextevt=60900000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("../testdata/traces", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			n := -1
			for i, l := range lines {
				if strings.Contains(l, tc.at) {
					if !strings.Contains(l, tc.old) {
						t.Fatalf("line %d lacks %q", i+1, tc.old)
					}
					lines[i], n = strings.Replace(l, tc.old, tc.new, 1), i+1
					break
				}
			}
			tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := shapeOf(tr, Options{})
			c, err := CheckNextevt(tr, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Mismatches) != 1 || c.Mismatches[0].Line != n {
				t.Fatalf("mismatches %+v, want one at line %d", c.Mismatches, n)
			}
			t.Logf("line %d: %s: kernel %s, model %s", n, c.Mismatches[0].Event, c.Mismatches[0].Kernel, c.Mismatches[0].Model)
		})
	}
}
