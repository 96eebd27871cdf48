package conformance

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
)

func readTrace(t *testing.T, text string) *replay.Trace {
	t.Helper()
	tr, err := replay.Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

const structureTrace = `# machine: cpus=4 nodes=1 node-cpus=0-3 kernel=6.12.118 hz=250 cmdline="" busy=1 sleepers= (QEMU TCG)
# tracer: nop
#
          <idle>-0       [002] d.s1.    10.000000: tmigr_handle_remote_cpu: cpu=3 parent=00000000aaaa0000 wakeup=9223372036854775807
          <idle>-0       [001] ..s1.    10.100000: tmigr_handle_remote: group=00000000aaaa0000 lvl=0
          <idle>-0       [001] d.s1.    10.100010: tmigr_handle_remote_cpu: cpu=0 parent=00000000aaaa0000 wakeup=9223372036854775807
          <idle>-0       [001] d.s1.    10.100020: tmigr_handle_remote_cpu: cpu=2 parent=00000000aaaa0000 wakeup=9223372036854775807
          <idle>-0       [001] ..s1.    10.100030: tmigr_handle_remote: group=00000000bbbb0000 lvl=1
          <idle>-0       [001] d.s1.    10.100040: tmigr_handle_remote_cpu: cpu=3 parent=00000000cccc0000 wakeup=9223372036854775807
          <idle>-0       [001] ..s1.    10.200000: tmigr_handle_remote: group=00000000aaaa0000 lvl=0
          <idle>-0       [001] d.s1.    10.200010: tmigr_handle_remote_cpu: cpu=0 parent=00000000aaaa0000 wakeup=9223372036854775807
`

func TestExtractStructure(t *testing.T) {
	tr := readTrace(t, structureTrace)
	got := ExtractStructure(tr.Events, 0, 1<<62)
	want := Structure{
		{Handler: 2, Target: 3, Level: -1}: 1, // the round began before the recording
		{Handler: 1, Target: 0, Level: 0}:  2,
		{Handler: 1, Target: 2, Level: 0}:  1,
		{Handler: 1, Target: 3, Level: 1}:  1,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%+v: %d, want %d", p, got[p], n)
		}
	}
	if got.Total() != 5 {
		t.Errorf("total %d", got.Total())
	}
	// The window excludes the last round: only its level line is before.
	w := ExtractStructure(tr.Events, 10_000_000_000, 10_200_000_000)
	if w.Total() != 4 || w[Pull{1, 0, 0}] != 1 {
		t.Errorf("windowed %v", w)
	}
	sorted := got.Sorted()
	for i := 1; i < len(sorted); i++ {
		if !sorted[i-1].Pull.less(sorted[i].Pull) {
			t.Errorf("not sorted: %v", sorted)
		}
	}
}

// genStructure draws a structure over a few CPUs and levels.
func genStructure(t *rapid.T, label string) Structure {
	s := Structure{}
	n := rapid.IntRange(0, 12).Draw(t, label+"-n")
	for i := range n {
		p := Pull{
			Handler: rapid.IntRange(0, 5).Draw(t, label+"-h"+strconv.Itoa(i)),
			Target:  rapid.IntRange(0, 5).Draw(t, label+"-t"+strconv.Itoa(i)),
			Level:   rapid.IntRange(-1, 2).Draw(t, label+"-l"+strconv.Itoa(i)),
		}
		s[p] += rapid.IntRange(1, 50).Draw(t, label+"-c"+strconv.Itoa(i))
	}
	return s
}

// TestAgreeProperties checks Agree against a reference computed from
// plain sets.
func TestAgreeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genStructure(t, "a"), genStructure(t, "b")
		ag := Agree(a, b)
		union := map[Pull]bool{}
		shared := 0
		for p := range a {
			union[p] = true
			if b[p] > 0 {
				shared++
			}
		}
		for p := range b {
			union[p] = true
		}
		if ag.Shared != shared || ag.Union != len(union) {
			t.Fatalf("shared/union %d/%d, want %d/%d", ag.Shared, ag.Union, shared, len(union))
		}
		if len(union) == 0 && (ag.Pairs != 1 || ag.Weighted != 1) {
			t.Fatalf("two empty sides: %+v", ag)
		}
		if len(union) > 0 && ag.Pairs != float64(shared)/float64(len(union)) {
			t.Fatalf("pairs %v", ag.Pairs)
		}
		if ag.Weighted < 0 || ag.Weighted > 1+1e-9 || (shared == 0 && len(union) > 0 && ag.Weighted != 0) {
			t.Fatalf("weighted %v with %d shared", ag.Weighted, shared)
		}
		// Symmetry.
		if r := Agree(b, a); r.Shared != ag.Shared || r.Union != ag.Union || r.HandlersShared != ag.HandlersShared ||
			r.HandlersUnion != ag.HandlersUnion || abs(r.Weighted-ag.Weighted) > 1e-9 {
			t.Fatalf("not symmetric: %+v vs %+v", ag, r)
		}
		// The handlers figure: the same over the targets both sides have.
		ta, tb := map[int]bool{}, map[int]bool{}
		for p := range a {
			ta[p.Target] = true
		}
		for p := range b {
			tb[p.Target] = true
		}
		hs, hu := 0, 0
		for p := range union {
			if ta[p.Target] && tb[p.Target] {
				hu++
				if a[p] > 0 && b[p] > 0 {
					hs++
				}
			}
		}
		if ag.HandlersShared != hs || ag.HandlersUnion != hu {
			t.Fatalf("handlers %d/%d, want %d/%d", ag.HandlersShared, ag.HandlersUnion, hs, hu)
		}
		// Per level, the counts add up.
		s, u := 0, 0
		for _, l := range ag.Levels {
			s += l.Shared
			u += l.Union
		}
		if s != ag.Shared || u != ag.Union {
			t.Fatalf("levels add up to %d/%d", s, u)
		}
		// A structure agrees fully with itself and with a multiple of it.
		twice := Structure{}
		for p, n := range a {
			twice[p] = 2 * n
		}
		if self := Agree(a, twice); self.Pairs != 1 || abs(self.Weighted-1) > 1e-9 {
			t.Fatalf("a against twice a: %+v", self)
		}
	})
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// remoteLine is an oracle for the kernel's side, independent of package
// ftrace: the handler's CPU column and the target of each
// tmigr_handle_remote_cpu line, and the level of each round line.
var remoteLine = regexp.MustCompile(`\[(\d+)\] \S+ +[\d.]+: tmigr_handle_remote(_cpu)?: (?:cpu=(\d+)|group=\S+ lvl=(\d+))`)

func oracleStructure(t *testing.T, text string) Structure {
	t.Helper()
	s := Structure{}
	level := map[int]int{}
	for _, m := range remoteLine.FindAllStringSubmatch(text, -1) {
		h, _ := strconv.Atoi(m[1])
		if m[2] == "" {
			level[h], _ = strconv.Atoi(m[4])
			continue
		}
		l, ok := level[h]
		if !ok {
			l = -1
		}
		target, _ := strconv.Atoi(m[3])
		s[Pull{h, target, l}]++
	}
	return s
}

// TestCompareIsolcpus runs the compare on the isolcpus recordings: the
// kernel's side is what an independent reading of the file finds, and on
// the targets both sides pulled the simulator with the recording's
// background agrees on who pulled them and at which level: an isolated
// busy CPU, the migrator of its group, pulls the housekeeping CPUs' timers.
func TestCompareIsolcpus(t *testing.T) {
	for _, name := range []string{"vm40-1node-isol-busy.txt", "vm16-2node-isol-busy.txt"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "testdata", "traces", name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tr := readTrace(t, string(data))
			c, err := Compare(tr, CompareOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := oracleStructure(t, string(data))
			if len(want) == 0 {
				t.Fatal("the oracle found no remote expiry")
			}
			if got := c.Kernel.s; Agree(got, want).Pairs != 1 || got.Total() != want.Total() {
				t.Errorf("kernel side %v, the file says %v", got, want)
			}
			rec := c.Sim(RecordedBackground)
			if rec == nil || c.Sim(HousekeepingMix) == nil || len(c.Sims) != 2 {
				t.Fatalf("sims %+v", c.Sims)
			}
			a := rec.Agreement
			if a.HandlersUnion == 0 || a.HandlersShared != a.HandlersUnion {
				t.Errorf("handlers of the common targets %d/%d:\n%s", a.HandlersShared, a.HandlersUnion, text(t, c))
			}
			// Every pull of the simulation is by a busy, isolated CPU.
			m := tr.Header.Machine
			iso, _ := m.Isolation()
			for _, p := range rec.Pulls {
				if !m.Busy.Test(p.Handler) || !iso.Domain.Test(p.Handler) || iso.Domain.Test(p.Target) {
					t.Errorf("simulated pull %+v: want a busy isolated handler and a housekeeping target", p)
				}
			}
		})
	}
}

func text(t *testing.T, c *Comparison) string {
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCompareDeterministic: the same seed gives the same comparison, the
// invariant checker finds nothing, and the text names every side.
func TestCompareDeterministic(t *testing.T) {
	tr, err := replay.ReadFile(filepath.Join("..", "testdata", "traces", "vm9-1node-mixed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	o := CompareOptions{Seed: 7, Duration: 500 * time.Millisecond, Check: true}
	a, err := Compare(tr, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compare(tr, o)
	if err != nil {
		t.Fatal(err)
	}
	ta, tb := text(t, a), text(t, b)
	if ta != tb {
		t.Errorf("two runs differ:\n%s\n%s", ta, tb)
	}
	for _, want := range []string{"kernel", "sim (recorded background)", "sim (housekeeping mix)", "agreement", "policy pull"} {
		if !strings.Contains(ta, want) {
			t.Errorf("text lacks %q:\n%s", want, ta)
		}
	}
}

func TestCompareErrors(t *testing.T) {
	noMachine := readTrace(t, strings.Join(strings.Split(structureTrace, "\n")[1:], "\n"))
	if _, err := Compare(noMachine, CompareOptions{}); err == nil || !strings.Contains(err.Error(), "machine") {
		t.Errorf("no machine line: %v", err)
	}
	badNote := readTrace(t, strings.Replace(structureTrace, "(QEMU TCG)", "(QEMU TCG; fifo-sleepers=2)", 1))
	if _, err := Compare(badNote, CompareOptions{}); err == nil || !strings.Contains(err.Error(), "fifo-sleepers") {
		t.Errorf("fifo sleepers that do not sleep: %v", err)
	}
	tr := readTrace(t, structureTrace)
	if _, err := Compare(tr, CompareOptions{Sources: []TimerSource{"nope"}}); err == nil {
		t.Error("unknown source accepted")
	}
	if _, err := Compare(tr, CompareOptions{Warmup: -1}); err == nil {
		t.Error("negative warm-up accepted")
	}
	for rel, want := range map[string]string{"6.12.118": "pull", "6.19.0-rc3": "pull-isolated", "6.8.0": "push", "": "pull", "7.3.4": "pull-isolated"} {
		km, err := modelOf(rel)
		if p := km.Policy(true); err != nil || p.String() != want {
			t.Errorf("modelOf(%q).Policy = %v, %v; want %s", rel, p, err, want)
		}
	}
	if _, err := modelOf("six"); err == nil {
		t.Error("modelOf(six): no error")
	}
}

// TestRecordedBackground checks the background's reading of a recording:
// the active spans of each CPU.
func TestRecordedBackground(t *testing.T) {
	const trace = `# machine: cpus=3 nodes=1 node-cpus=0-2 kernel=6.12.118 hz=250 cmdline="" busy= sleepers= (QEMU TCG)
# tracer: nop
#
          <idle>-0       [000] d..4.    10.000000: tmigr_cpu_idle: cpu=0 parent=00000000aaaa0000 nextevt=9223372036854775807 wakeup=9223372036854775807
          <idle>-0       [000] dN.2.    10.100000: tmigr_cpu_active: cpu=0 parent=00000000aaaa0000 wakeup=9223372036854775807
          <idle>-0       [001] dN.2.    10.150000: tmigr_cpu_active: cpu=1 parent=00000000aaaa0000 wakeup=9223372036854775807
          <idle>-0       [000] d..4.    10.200000: tmigr_cpu_idle: cpu=0 parent=00000000aaaa0000 nextevt=9223372036854775807 wakeup=9223372036854775807
          <idle>-0       [002] d..4.    10.300000: tmigr_cpu_new_timer_idle: cpu=2 parent=00000000aaaa0000 nextevt=9223372036854775807 wakeup=9223372036854775807
`
	tr := readTrace(t, trace)
	r := newRecordedBackground(tr.Events, tr.Events[0].TS, tr.Events[len(tr.Events)-1].TS, 0, ftrace.Machine{}.Busy)
	got := r.activeSpans(3)
	ms := int64(time.Millisecond)
	t0 := tr.Events[0].TS
	want := [][]span{{{t0, t0}, {t0 + 100*ms, t0 + 200*ms}}, {{t0 + 150*ms, t0 + 300*ms}}, nil}
	for c := range want {
		if len(got[c]) != len(want[c]) {
			t.Fatalf("CPU %d: %v, want %v", c, got[c], want[c])
		}
		for i := range want[c] {
			if got[c][i] != want[c][i] {
				t.Errorf("CPU %d span %d: %v, want %v", c, i, got[c][i], want[c][i])
			}
		}
	}
}

// TestCompareAppliesChanges: the simulation of a recording made with a
// run-time change (the machine line's at=) makes the same change at the
// same moment: on 7.3 an isolated partition of 9-15 takes those CPUs out of
// the hierarchy (tmigr_cpu_unavailable in the simulator's trace), on 6.12
// it takes nobody out.
func TestCompareAppliesChanges(t *testing.T) {
	for _, c := range []struct {
		file string
		want int // CPUs the simulation takes out
	}{
		{"vm16-1node-partition-busy-sleepers-7.3.txt", 7},
		{"vm16-1node-partition-busy-sleepers-6.12.txt", 0},
	} {
		tr, err := replay.ReadFile(filepath.Join("..", "testdata", "traces", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		o := CompareOptions{Sources: []TimerSource{HousekeepingMix}, SimTraces: map[TimerSource]io.Writer{HousekeepingMix: &buf}}
		if _, err := Compare(tr, o); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(buf.String(), "tmigr_cpu_unavailable:"); got != c.want {
			t.Errorf("%s: the simulation took %d CPUs out of the hierarchy, want %d", c.file, got, c.want)
		}
	}
}

// TestCompareOnlineOfOnlineCPU: a machine line whose at= brings online a
// CPU that is online (the offline before it was refused by the kernel,
// refused=) is compared as the kernel ran it, the write a no-op; the
// simulator refuses to bring an online CPU online (campaign 20261226 draw
// 147: "CPU 1 is already online").
func TestCompareOnlineOfOnlineCPU(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "traces", "vm2-1node-busy-sleeper-7.3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "sleepers=0 (QEMU TCG;", `sleepers=0 at="100ms online 1" refused="50ms offline 1" (QEMU TCG;`, 1)
	tr, err := replay.Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compare(tr, CompareOptions{Seed: 1, Duration: 300 * time.Millisecond}); err != nil {
		t.Fatalf("compare: %v", err)
	}
}
