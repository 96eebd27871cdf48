package replay

import (
	"path/filepath"
	"testing"
)

// TestUpdateReadsLaterCAS replays a window of a 7.3 recording (4 CPUs,
// isolcpus=2-3) where a deactivation's tmigr_update_events read the state
// another CPU's later compare-and-swap left: at line 29 CPU 1's walk left
// the group active (CPU 0 its migrator), but CPU 0's deactivation, printed
// after it, came in between and CPU 1's update found the group idle, so
// CPU 1 was handed CPU 0's event (4592000000); at line 202 the same with
// CPU 0's line printed first, so that CPU 0's operation, waiting for CPU
// 1's transition to be replayed first, runs inside CPU 1's walk. Both
// decisions match; the window's only undetermined ones are its start.
func TestUpdateReadsLaterCAS(t *testing.T) {
	const f = "vm4-1node-isol-busy-sleeper-7.3-update-reads-later-cas.txt"
	tr, err := ReadFile(filepath.Join("../testdata/traces", f))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Tmigr: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Tmigr
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	want := map[string]int{whyFirst: 2, whyWakeup: 1}
	if len(c.UndeterminedReasons) != len(want) {
		t.Errorf("undetermined: %s, want 2 %s, 1 %s", c.Reasons(), whyFirst, whyWakeup)
	}
	for why, n := range want {
		if c.UndeterminedReasons[why] != n {
			t.Errorf("undetermined: %s, want 2 %s, 1 %s", c.Reasons(), whyFirst, whyWakeup)
			break
		}
	}
}
