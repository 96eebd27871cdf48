package replay

import (
	"path/filepath"
	"strings"
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

// TestUndeclaredPartitionInferred: a user's recording does not declare the
// isolated partition a container runtime made while it ran. With the
// machine line's at= taken away, the 7.3 recording's tmigr_cpu_unavailable
// lines are explained by the changes 7.3's rules allow (hotplug, or an
// isolated partition from 6.19 on) and listed as inferred, not mismatched;
// under 6.12, whose hotplug prints tmigr_cpu_offline and whose partitions
// leave the hierarchy alone, no rule explains them.
func TestUndeclaredPartitionInferred(t *testing.T) {
	tr, err := ReadFile("../testdata/traces/vm16-1node-partition-busy-sleepers-7.3.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Header.Machine.At) != 1 {
		t.Fatalf("the recording declares %v", tr.Header.Machine.At)
	}
	tr.Header.Machine.At = nil
	got, err := Run(tr, Options{Tmigr: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tmigr.Mismatches) != 0 {
		t.Errorf("undeclared partition under 7.3: mismatches %+v", got.Tmigr.Mismatches)
	}
	var cpus []int
	for _, x := range got.Tmigr.Inferred {
		cpus = append(cpus, x.CPU)
		if x.Event != "tmigr_cpu_unavailable" || len(x.Causes) != 2 || x.Causes[1] != "an isolated cpuset partition made" {
			t.Errorf("inferred %+v", x)
		}
	}
	if len(cpus) != 7 || got.Tmigr.UndeterminedReasons[whyUndeclared] != 7 {
		t.Errorf("inferred CPUs %v, undetermined %v; want CPUs 9-15", cpus, got.Tmigr.UndeterminedReasons)
	}
	old, err := Run(tr, Options{Tmigr: true, Kernel: "6.12.118"})
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Tmigr.Inferred) != 0 || len(old.Tmigr.Mismatches) == 0 {
		t.Errorf("under 6.12: inferred %+v, %d mismatches", old.Tmigr.Inferred, len(old.Tmigr.Mismatches))
	}
}

// TestChangeBeforeTheWindow: a window cut from a recording after a
// change's availability events, but inside its window, cannot show them:
// the change's decisions are undetermined (operation cut by the
// recording), not "no tmigr_cpu_unavailable" mismatches.
func TestChangeBeforeTheWindow(t *testing.T) {
	const f = "vm16-1node-partition-busy-sleepers-7.3.txt"
	c := editTrace(t, f, func(l []string) []string {
		var out []string
		for i, s := range l {
			// The header, the guest's start marker, and the events
			// from line 3700 on: the partition's tmigr_cpu_unavailable
			// lines (3622-3634) are cut away.
			if strings.HasPrefix(s, "#") || strings.Contains(s, "tmigr-lab: start") || i+1 >= 3700 {
				out = append(out, s)
			}
		}
		return out
	})
	if len(c.Mismatches) != 0 {
		t.Errorf("mismatches %+v", c.Mismatches)
	}
	if c.UndeterminedReasons[whyPartial] < 7 {
		t.Errorf("undetermined %v: want the 7 CPUs of the partition cut by the recording", c.UndeterminedReasons)
	}
}
