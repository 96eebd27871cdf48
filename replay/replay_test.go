package replay

import (
	"path/filepath"
	"testing"
)

func TestCountsReasons(t *testing.T) {
	var c Counts
	if got := c.Reasons(); got != "" {
		t.Errorf("no reasons: got %q", got)
	}
	for _, why := range []string{"b", "a", "c", "a", "c", "a"} {
		c.undetermined(1, why)
	}
	if got, want := c.Reasons(), "3 a, 2 c, 1 b"; got != want {
		t.Errorf("Reasons() = %q, want %q", got, want)
	}
	if c.Checked != 6 || c.Undetermined != 6 {
		t.Errorf("checked %d, undetermined %d, want 6 and 6", c.Checked, c.Undetermined)
	}
}

// TestEveryCheckTraces: every recording of testdata/traces replays with
// no mismatch in any check, as the README's table says. (The tmigr, nextevt
// and wheel checks have tests of their own over the recordings, which also
// look at what is left undetermined; the hrtimer and placement checks had
// none, and a sleeper moved by an offline before the machine line's time
// went unseen there.)
func TestEveryCheckTraces(t *testing.T) {
	for _, f := range traceFiles(t) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(tr, Options{Wheel: true, Tmigr: true, Hrtimer: true, Placement: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, c := range []*Counts{r.Wheel, r.Tmigr, r.Nextevt, r.Hrtimer, r.Placement} {
			if c == nil {
				continue
			}
			for i, m := range c.Mismatches {
				if i < 3 {
					t.Errorf("%s line %d: %s: kernel %s, model %s", filepath.Base(f), m.Line, m.Event, m.Kernel, m.Model)
				}
			}
		}
	}
}
