package lab

import (
	"bytes"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
)

// The recordings in testdata/traces were made with "tmigr lab record"
// (testdata/traces/README.md has the command lines). They are checked here
// as the recorder promises them: readable by ftrace to the end, with the
// machine line, the kernel's boot line, every event the header announces
// and none lost, and every timer_start reproduced by the wheel.

// labTraces returns the recordings testdata/traces/README.md lists as made
// by the recorder (the older ones there were made by hand before it).
func labTraces(t *testing.T) []string {
	dir := filepath.Join("..", "testdata", "traces")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, l := range strings.Split(string(readme), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(l, "| "), ".txt | `"); ok && !strings.Contains(name, " ") {
			files = append(files, filepath.Join(dir, name+".txt"))
		}
	}
	if len(files) == 0 {
		t.Fatal("testdata/traces/README.md lists no recordings")
	}
	return files
}

// bootLine is tmigr_init's sizing, as docs/hierarchy.md T1 gives it: levels for the
// CPUs of a node (rounded up), in steps of 8 (3 bits), plus levels for
// the nodes; the crossnode level is the first above the per-node ones.
func bootLine(cpus, nodes int) ftrace.Hierarchy {
	order := func(n int) int { return bits.Len(uint(n - 1)) } // order_base_2
	perNode := (cpus + nodes - 1) / nodes
	cpuLvl := (order(perNode) + 2) / 3
	nodeLvl := (order(nodes) + 2) / 3
	return ftrace.Hierarchy{Levels: cpuLvl + nodeLvl, ChildrenPerGroup: 8, CrossnodeLevel: cpuLvl}
}

func TestLabTraces(t *testing.T) {
	for _, f := range labTraces(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r := ftrace.NewReader(bytes.NewReader(data))
			var events []ftrace.Event
			for {
				ev, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				events = append(events, ev)
			}
			h := r.Header()
			m := h.Machine
			if m == nil {
				t.Fatal("no machine line")
			}
			if !strings.HasPrefix(string(data), "# machine: ") {
				t.Error("the machine line is not the first")
			}
			if !strings.HasPrefix(m.Kernel, kernelSeries+".") || m.HZ != 250 || !strings.HasPrefix(m.Note, "QEMU TCG") {
				t.Errorf("machine %+v", *m)
			}
			if h.CPUs != m.CPUs {
				t.Errorf("the trace has %d CPUs, the machine %d", h.CPUs, m.CPUs)
			}
			if h.Hierarchy == nil {
				t.Fatal("no boot line")
			}
			if want := bootLine(m.CPUs, m.Nodes); *h.Hierarchy != want {
				t.Errorf("boot line %+v, the formula gives %+v", *h.Hierarchy, want)
			}
			if !h.HasEntries || h.Entries != h.Written || int64(len(events)) != h.Entries {
				t.Errorf("%d events, header %d/%d", len(events), h.Entries, h.Written)
			}
			if st := r.Stats(); st.Lost != 0 || st.LostUnknown != 0 || len(st.Skipped) != 0 {
				t.Errorf("lost %d (+%d), skipped %v", st.Lost, st.LostUnknown, st.Skipped)
			}
			if iso, err := m.Isolation(); err != nil || len(iso.Warnings) != 0 {
				t.Errorf("isolation: %v %v", err, iso.Warnings)
			}
			counts := map[string]int{}
			for _, ev := range events {
				counts[ev.Name]++
			}
			for _, name := range []string{"timer_start", "timer_expire_entry", "tmigr_update_events"} {
				if counts[name] == 0 {
					t.Errorf("no %s events: %v", name, counts)
				}
			}
			strict := strings.Contains(m.Note, "PREEMPT_RT")
			asked := strict || strings.Contains(readmeFlags(t)[filepath.Base(f)], "--hrtimers")
			if hr := counts["hrtimer_start"] > 0; hr != asked {
				t.Errorf("hrtimer events %v on a kernel that is PREEMPT_RT %v, recorded with --hrtimers %v", hr, strict, asked)
			}

			tr, err := replay.Read(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			c := replay.CheckWheel(tr, m.HZ)
			if c.Checked == 0 || c.Matched != c.Checked || c.Undetermined != 0 {
				t.Errorf("wheel: %d/%d matched, %d undetermined: %v", c.Matched, c.Checked, c.Undetermined, c.Mismatches)
			}
			t.Logf("%d events, wheel %d/%d", len(events), c.Matched, c.Checked)
		})
	}
}

// TestLabTraceRTSleepers: on PREEMPT_RT the kernel arms a SCHED_FIFO task's
// sleep timer for hard interrupt expiry and any other task's for the
// softirq (docs/hrtimer.md H7). The trace shows the soft ones without
// a SOFT bit: on RT, a mode without HARD is what makes an hrtimer soft.
func TestLabTraceRTSleepers(t *testing.T) {
	found := false
	for _, f := range labTraces(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := ftrace.NewReader(bytes.NewReader(data))
		var hard, soft [cpumask.MaxCPUs / 64]int // wakeups per CPU, first 128 CPUs
		var fifo cpumask.Mask
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			m := r.Header().Machine
			if !strings.Contains(m.Note, "PREEMPT_RT") {
				break
			}
			if fifo.Empty() {
				for _, part := range strings.Split(m.Note, "; ") {
					if l, ok := strings.CutPrefix(part, "fifo-sleepers="); ok {
						fifo = cpumask.MustParse(l)
					}
				}
			}
			if p, ok := ev.Data.(ftrace.HrtimerStart); ok && p.Function == "hrtimer_wakeup" && strings.HasPrefix(ev.Task, "tmigr-guest") && ev.CPU < len(hard) {
				if p.Mode.Hard() {
					hard[ev.CPU]++
				} else {
					soft[ev.CPU]++
				}
			}
		}
		m := r.Header().Machine
		if m == nil || !strings.Contains(m.Note, "PREEMPT_RT") {
			continue
		}
		found = true
		if fifo.Empty() {
			t.Fatalf("%s: an rt recording without SCHED_FIFO sleepers", f)
		}
		for c := m.Sleepers.First(); c >= 0; c = m.Sleepers.Next(c) {
			want, other := soft[c], hard[c]
			if fifo.Test(c) {
				want, other = hard[c], soft[c]
			}
			if want == 0 || other != 0 {
				t.Errorf("%s: sleeper on CPU %d (SCHED_FIFO %v): %d hard and %d soft wakeups", filepath.Base(f), c, fifo.Test(c), hard[c], soft[c])
			}
		}
	}
	if !found {
		t.Fatal("no PREEMPT_RT recording in testdata/traces")
	}
}
