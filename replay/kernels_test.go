package replay

import (
	"path/filepath"
	"testing"
)

// TestWrongKernelMismatches: a recording replayed under a kernel whose
// rules decide differently reports mismatches, while under its own kernel
// it reports none. A check that cannot fail for the wrong model proves
// nothing for the right one.
func TestWrongKernelMismatches(t *testing.T) {
	for _, tc := range []struct {
		file, wrong string
		why         string
	}{
		{"vm16-2node-isol-busy-sleepers.txt", "6.1.0", "6.1 has no hierarchy: every tmigr line contradicts it"},
		{"vm16-2node-isol-busy-sleepers.txt", "7.3.0", "7.3 excludes the busy isolated CPUs the 6.12 kernel kept in"},
		{"vm16-2node-isol-busy-sleepers-7.3.txt", "6.18.0", "6.18 keeps in the isolated CPUs that 7.3 excluded"},
	} {
		t.Run(tc.file+"@"+tc.wrong, func(t *testing.T) {
			tr, err := ReadFile(filepath.Join("../testdata/traces", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			own, err := Run(tr, Options{Tmigr: true, Placement: true})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(own.Tmigr.Mismatches) + len(own.Placement.Mismatches); n != 0 {
				t.Fatalf("under its own kernel: %d mismatches", n)
			}
			wrong, err := Run(tr, Options{Tmigr: true, Placement: true, Kernel: tc.wrong})
			if err != nil {
				t.Fatal(err)
			}
			if len(wrong.Tmigr.Mismatches) == 0 {
				t.Errorf("under %s: no tmigr mismatch (%s); matched %d of %d", tc.wrong, tc.why, wrong.Tmigr.Matched, wrong.Tmigr.Checked)
			}
		})
	}
}
