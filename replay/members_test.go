package replay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newKernelTraces are the recordings of kernels that exclude isolated
// CPUs (6.19 and later) in testdata/traces, with the isolated CPUs busy.
var newKernelTraces = []string{
	"vm4-1node-isol-busy-sleeper-7.2.txt",
	"vm16-2node-isol-busy-sleepers-7.3.txt",
	"vm40-1node-isol-busy-6.19.txt",
	"vm16-1node-partition-busy-sleepers-7.3.txt",
}

// replayFile runs the tmigr check of a recording under its own kernel, or
// under the one given.
func replayFile(t *testing.T, file, kernel string) Counts {
	t.Helper()
	tr, err := ReadFile(filepath.Join("../testdata/traces", file))
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(tr, Options{Kernel: kernel})
	if err != nil {
		t.Fatal(err)
	}
	c, err := CheckTmigr(tr, s)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return c
}

// TestExclusionTraces: on the kernels that exclude isolated CPUs, the
// replay knows those CPUs are out (they print nothing, and nothing depends
// on them), so nearly every decision is determined, none is a mismatch,
// and every undetermined one has a reason. The membership of the busy
// isolated CPUs is itself checked.
func TestExclusionTraces(t *testing.T) {
	var matched, checked int
	for _, f := range newKernelTraces {
		c := replayFile(t, f, "")
		t.Logf("%s: %d/%d matched, %d undetermined (%s)", f, c.Matched, c.Checked, c.Undetermined, sortedReasons(c.UndeterminedReasons))
		for i, m := range c.Mismatches {
			if i < 5 {
				t.Errorf("%s line %d: %s: kernel %s, model %s", f, m.Line, m.Event, m.Kernel, m.Model)
			}
		}
		n := 0
		for why, k := range c.UndeterminedReasons {
			if why == "" {
				t.Errorf("%s: %d undetermined without a reason", f, k)
			}
			n += k
		}
		if n != c.Undetermined {
			t.Errorf("%s: reasons count %d of %d undetermined", f, n, c.Undetermined)
		}
		if c.UndeterminedReasons[whyOpaque] > 0 {
			t.Errorf("%s: %d decisions undetermined for an untraced CPU: the excluded CPUs are known out", f, c.UndeterminedReasons[whyOpaque])
		}
		if c.Matched*100 < c.Checked*90 {
			t.Errorf("%s: %d of %d matched, under 90%%", f, c.Matched, c.Checked)
		}
		matched += c.Matched
		checked += c.Checked
	}
	if matched*100 < checked*95 {
		t.Errorf("%d of %d matched in all, under 95%%", matched, checked)
	}
}

// TestWrongModel: the check tells the kernels apart. A 6.19+ recording
// replayed under the 6.18 model has busy isolated CPUs that the model
// keeps in the hierarchy, active, but that no group state shows (and, with
// a run-time partition, CPUs that leave where the model keeps them); a
// 6.12 recording replayed under the 6.19 model shows CPUs in the hierarchy
// that the model excludes (and a partition that takes nobody out). Each
// mismatch names the line and both sides.
func TestWrongModel(t *testing.T) {
	for _, c := range []struct {
		file, kernel string
		event        string // the check that must find it
		cpu          string // in the kernel's side
	}{
		{"vm4-1node-isol-busy-sleeper-7.2.txt", "6.18.0", whyMembership, "CPU 1 out"},
		{"vm16-2node-isol-busy-sleepers-7.3.txt", "6.18.44", whyMembership, "CPU 9 out"},
		{"vm40-1node-isol-busy-6.19.txt", "6.12.118", whyMembership, "CPU 39 out"},
		{"vm16-1node-partition-busy-sleepers-7.3.txt", "6.18.0", "availability", "CPU 15 left"},
		{"vm16-2node-isol-busy-sleepers.txt", "6.19.0", whyMembership, "CPU 1 in"},
		{"vm40-1node-isol-busy.txt", "7.3.0", whyMembership, "CPU 15 in"},
		{"vm16-1node-partition-busy-sleepers-6.12.txt", "6.19.0", "availability", "CPU 9: no tmigr_cpu_unavailable"},
	} {
		got := replayFile(t, c.file, c.kernel)
		found := false
		for _, m := range got.Mismatches {
			if m.Line <= 0 || m.Kernel == "" || m.Model == "" {
				t.Errorf("%s under %s: mismatch %+v lacks its line or a side", c.file, c.kernel, m)
			}
			if m.Event == c.event && strings.HasPrefix(m.Kernel, c.cpu) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s under %s: no %s mismatch with kernel %q...: %d mismatches %v", c.file, c.kernel, c.event, c.cpu, len(got.Mismatches), got.Mismatches)
		}
		// Under its own kernel the same recording has none.
		if own := replayFile(t, c.file, ""); len(own.Mismatches) > 0 {
			t.Errorf("%s under its own kernel: %v", c.file, own.Mismatches)
		}
	}
}

// editTrace replays a recording (a path, or one relative to
// testdata/traces) with lines changed, dropped or added.
func editTrace(t *testing.T, file string, edit func(lines []string) []string) Counts {
	t.Helper()
	if !strings.Contains(file, "testdata/") {
		file = filepath.Join("../testdata/traces", file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	edited := edit(lines)
	// The header counts the entries: keep it in step.
	for i, l := range edited {
		if a, ok := strings.CutPrefix(l, "# entries-in-buffer/entries-written: "); ok {
			var n, w int
			var rest string
			if _, err := fmt.Sscanf(a, "%d/%d %s", &n, &w, &rest); err == nil {
				d := len(edited) - len(lines)
				edited[i] = strings.Replace(l, fmt.Sprintf("%d/%d", n, w), fmt.Sprintf("%d/%d", n+d, w+d), 1)
			}
			break
		}
	}
	tr, err := Read(strings.NewReader(strings.Join(edited, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := CheckTmigr(tr, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAvailabilityChecked: the availability events are held against the
// model's exclusion. Without CPU 12's withdrawal from the 7.3 partition
// the model misses it; a withdrawal the machine line does not explain (a
// housekeeping CPU's) is a mismatch too.
func TestAvailabilityChecked(t *testing.T) {
	const f = "vm16-1node-partition-busy-sleepers-7.3.txt"
	dropped := editTrace(t, f, func(l []string) []string {
		var out []string
		for _, s := range l {
			if strings.Contains(s, "[012]") && (strings.Contains(s, "tmigr_cpu_unavailable") ||
				strings.Contains(s, "41.922137: tmigr_group_set_cpu_inactive")) {
				continue
			}
			out = append(out, s)
		}
		return out
	})
	if !hasMismatch(dropped, "availability", "CPU 12: no tmigr_cpu_unavailable") {
		t.Errorf("a partition CPU that never left: %v", dropped.Mismatches)
	}
	added := editTrace(t, f, func(l []string) []string {
		var out []string
		for _, s := range l {
			out = append(out, s)
			if strings.Contains(s, "tmigr_cpu_unavailable: cpu=15 ") {
				out = append(out, strings.NewReplacer("kworker/15:0-110", "kworker/3:0-111", "[015]", "[003]", "cpu=15", "cpu=3", "defacbd8", "d8cd2d2e").Replace(s))
			}
		}
		return out
	})
	if !hasMismatch(added, "availability", "CPU 3 left the hierarchy") {
		t.Errorf("a housekeeping CPU that left: %v", added.Mismatches)
	}
}

func hasMismatch(c Counts, event, kernel string) bool {
	for _, m := range c.Mismatches {
		if m.Event == event && strings.HasPrefix(m.Kernel, kernel) {
			return true
		}
	}
	return false
}

// TestFindings: the lab's two recordings the replay got wrong (their
// README in the lab's testdata/traces/findings says where) now replay
// without a mismatch: the bucket being expired is off the wheel (the
// 6.19 partition), and a new timer after another CPU's remote expiry of
// its CPU, once that expiry's timer lines are over, walks (7.3).
func TestFindings(t *testing.T) {
	for _, f := range []string{
		"vm16-1node-partition-busy-sleepers-6.19-wheel-clock.txt",
		"vm4-1node-nohzfull-hrtimers-tm1-7.3-replay-walk.txt",
	} {
		tr, err := ReadFile(filepath.Join("../testdata/traces", f))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(tr, Options{Wheel: true, Tmigr: true, Hrtimer: true, Placement: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []*Counts{r.Wheel, r.Tmigr, r.Nextevt, r.Hrtimer, r.Placement} {
			if c == nil {
				continue
			}
			for _, m := range c.Mismatches {
				t.Errorf("%s line %d: %s: kernel %s, model %s", f, m.Line, m.Event, m.Kernel, m.Model)
			}
		}
	}
}

// TestChangeBeyondEnd: a change whose window ends after the recording's
// last event may show after it: the CPUs it moves are undetermined, not
// mismatches.
func TestChangeBeyondEnd(t *testing.T) {
	const f = "vm15-2node-isol-6.19-bucket-off-wheel-clock.txt"
	// The guest's start mark moves to 16.600000, after the first event
	// (16.486364), so that the change's window begins inside the
	// recording; the last event is at 17.368185, when the partition is
	// made.
	const mark = "     tmigr-guest-331     [009] ...1.    16.600000: tracing_mark_write: tmigr-lab: start"
	c := editTrace(t, f, func(l []string) []string {
		var out []string
		placed := false
		for _, s := range l {
			switch {
			case strings.Contains(s, "tmigr-lab: start"):
				continue
			case !placed && strings.Contains(s, "[009]") && strings.Contains(s, " 16.6"):
				out, placed = append(out, mark), true
			}
			out = append(out, strings.Replace(s, " sleepers=8 ", ` sleepers=8 at="0.768s partition 2,4,9-10" `, 1))
		}
		return out
	})
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	if n := c.UndeterminedReasons[whyPartial]; n < 4 {
		t.Errorf("%d decisions undetermined for %q, want the 4 CPUs the partition moves (%s)", n, whyPartial, c.Reasons())
	}
}

// TestMembershipFromChildEvent: nohz_full CPU 4 prints nothing in this
// window of a 5-CPU 7.2 guest, idle with a timer due after it; its event
// is the first of GRP0:2, which CPU 0's update of GRP1:0 after a remote
// expiry prints as child_evtcpu=4 (line 662). CPU 3's round was not GRP1:0's migrator
// and stored GRP0:2's next expiry, CPU 4's 5728000000, which its
// activation printed (line 680). A CPU named so is in the hierarchy;
// without the name, taken out as a silent CPU, it has no event, and the
// model's wakeup is CPU 3's own.
func TestMembershipFromChildEvent(t *testing.T) {
	const file = "vm5-3node-nohzfull-7.2-silent-cpu-named-by-child-event.txt"
	if c := replayWindow(t, file); c.Matched < 200 {
		t.Errorf("only %d decisions matched (%s)", c.Matched, c.Reasons())
	}
	c := editTrace(t, file, func(lines []string) []string {
		for i, l := range lines {
			lines[i] = strings.Replace(l, "child_evtcpu=4", "child_evtcpu=3", 1)
		}
		return lines
	})
	if len(c.Mismatches) == 0 || c.Mismatches[0].Line != 680 {
		t.Errorf("with CPU 4 never named: mismatches %+v, want the first at line 680", c.Mismatches)
	}
}

// TestMarkersKeptBeforeWindow: a window keeps its recording's start
// marker from before its first event (line 15, written by a task on CPU 3
// 0.7 s before the window). CPU 3 prints nothing in the window, but an
// update names it as the CPU of a child group's first event, so it is in
// the model; the marker is no sign of a task running on it within the
// window, which with its idle bit would make it a CPU whose transitions
// the trace does not show.
func TestMarkersKeptBeforeWindow(t *testing.T) {
	c := replayWindow(t, "vm7-3node-6.12-update-reads-late-activations.txt")
	if n := c.UndeterminedReasons[whyOpaque]; n != 0 || c.Matched < 700 {
		t.Errorf("%d matched, %d undetermined as opaque (%s)", c.Matched, n, c.Reasons())
	}
}
