package viz

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

const ktimeMax = 1<<63 - 1

// A 4-CPU machine (one group, GRP0:0) with CPUs 1-3 isolated, and a
// script of its events.
func machine4(kernel string) ftrace.Header {
	m := &ftrace.Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)}, Kernel: kernel, HZ: 250,
		Cmdline: "isolcpus=1-3"}
	return ftrace.Header{CPUs: 4, Machine: m}
}

const grp0 = 0xffff888000000000

type script struct {
	events []ftrace.Event
	line   int
}

func (s *script) add(cpu int, ts int64, p ftrace.Payload) {
	s.line++
	s.events = append(s.events, ftrace.Event{Line: s.line, CPU: cpu, TS: ts, Name: p.Name(), Data: p})
}

// groupLine is a level-0 group line of the single group.
func groupLine(active bool, act, mig uint8, child uint32) ftrace.Payload {
	g := ftrace.TmigrGroupAndCPU{Group: grp0, Lvl: 0, Numa: 0, Active: act, Migrator: mig, Childmask: child}
	if active {
		return ftrace.TmigrGroupSetCPUActive(g)
	}
	return ftrace.TmigrGroupSetCPUInactive(g)
}

// CPU 0 goes idle at 1000 ns and hands GRP0:0 to CPU 1; CPU 1 runs two of
// CPU 0's timers at the same nanosecond (as the simulator prints them,
// with no expire_exit), then one of its own; CPU 0 wakes at 9000.
func pullScript() *script {
	s := &script{}
	s.add(2, 500, ftrace.TimerStart{Timer: 0x100, Function: "delayed_work_timer_fn", Expires: 200, BucketExpiry: 200, CPU: 2})
	s.add(0, 1000, groupLine(false, 0x0e, 0x02, 0x01))
	s.add(0, 1000, ftrace.TmigrCPUIdle{CPU: 0, Parent: grp0, NextEvt: 5000, Wakeup: ktimeMax})
	s.add(1, 5000, ftrace.TmigrHandleRemote{Group: grp0, Lvl: 0})
	s.add(1, 5000, ftrace.TmigrHandleRemoteCPU{CPU: 0, Parent: grp0, Wakeup: ktimeMax})
	s.add(1, 5000, ftrace.TimerExpireEntry{Timer: 0x40, Function: "vmstat_update", Now: 100, BaseClk: 100})
	s.add(1, 5000, ftrace.TimerExpireEntry{Timer: 0x80, Function: "writeout_period", Now: 100, BaseClk: 100})
	s.add(1, 5003, ftrace.TmigrUpdateEvents{Group: grp0, NextEvt: ktimeMax, NextExpiry: ktimeMax})
	s.add(1, 6000, ftrace.TimerExpireEntry{Timer: 0xc0, Function: "own_timer", Now: 101, BaseClk: 101})
	s.add(0, 9000, ftrace.TmigrCPUActive{CPU: 0, Parent: grp0, Wakeup: ktimeMax})
	s.add(0, 9000, groupLine(true, 0x0f, 0x02, 0x01))
	s.add(3, 10000, ftrace.TimerStart{Timer: 0x140, Function: "delayed_work_timer_fn", Expires: 300, BucketExpiry: 300, CPU: 3})
	return s
}

func TestBuildStatesRolesOwners(t *testing.T) {
	s := pullScript()
	tl, err := Build(machine4("6.12.118"), slices.Values(s.events))
	if err != nil {
		t.Fatal(err)
	}
	// CPU 0 printed tmigr_cpu_idle first: it was active before.
	want0 := []StateSpan{{500, 1000, Active, true}, {1000, 9000, Idle, false}, {9000, 10000, Active, false}}
	if got := tl.CPUs[0].States; !slices.Equal(got, want0) {
		t.Errorf("CPU 0 states %+v, want %+v", got, want0)
	}
	// CPUs 1-3 print nothing about their state: GRP0:0's mask shows them
	// active, and they were since the start.
	for c := 1; c <= 3; c++ {
		want := []StateSpan{{500, 1000, Active, true}, {1000, 10000, Active, false}}
		if got := tl.CPUs[c].States; !slices.Equal(got, want) {
			t.Errorf("CPU %d states %+v, want %+v", c, got, want)
		}
	}
	// GRP0:0's migrator: CPU 1 (bit 1) from the first line on.
	g := tl.Groups[0]
	if g.Name != "GRP0:0" || len(g.Migrators) != 1 || g.Migrators[0] != (MigratorSpan{Start: 1000, End: 10000, Child: 1, CPU: 1}) {
		t.Errorf("GRP0:0 %+v", g)
	}
	if r := tl.CPUs[1].Roles; len(r) != 1 || r[0].Start != 1000 || !slices.Equal(r[0].Groups, []int{0}) {
		t.Errorf("CPU 1 roles %+v", r)
	}
	// The two timers in the remote expiry are CPU 0's, the later one CPU 1's.
	var owners []int
	for _, e := range tl.Expiries {
		owners = append(owners, e.Owner)
	}
	if !slices.Equal(owners, []int{0, 0, 1}) || tl.Expiries[0].From != OwnerRemote || tl.Expiries[2].From != OwnerLocal {
		t.Errorf("owners %v, expiries %+v", owners, tl.Expiries)
	}
	if p := tl.Pulls(All); len(p) != 1 || p[0].Handler != 1 || p[0].Owner != 0 || p[0].Count != 2 {
		t.Errorf("pulls %+v", p)
	}
	if tl.Pulls(Window{From: 5001}) != nil && len(tl.Pulls(Window{From: 5001})) != 0 {
		t.Errorf("pulls after 5001: %+v", tl.Pulls(Window{From: 5001}))
	}
	// The summary: isolated CPU 1 ran CPU 0's timers.
	sum := tl.Summary(All, nil)
	if len(sum.Isolated) != 1 || sum.Isolated[0].CPU != 1 || sum.Isolated[0].Owners != "0" {
		t.Errorf("summary %+v", sum)
	}
	// The two expiries at the same nanosecond are drawn one after the
	// other, and the arrows bind as Perfetto binds them.
	var b bytes.Buffer
	if err := WritePerfetto(&b, tl); err != nil {
		t.Fatal(err)
	}
	im := importJSON(t, b.Bytes(), llround)
	if len(im.flowFrom) != 2 {
		t.Errorf("%d arrows, want 2", len(im.flowFrom))
	}
	sl := im.slices[track{cpuPID(1), cpuTID(1, tidTimers)}]
	if len(sl) != 3 || sl[1].start < sl[0].end || !strings.Contains(string(sl[1].ev.Args), "drawn") {
		t.Errorf("CPU 1's timer slices %+v", sl)
	}
}

// On 6.19 and later the isolated CPUs are excluded; a partition set later
// is isolated too.
func TestBuildExclusion(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		excl   bool
	}{{"6.12.118", false}, {"6.18.0", false}, {"6.19.0-rc3+", true}, {"7.0.13-200.fc44.x86_64", true}, {"weird", false}} {
		tl, err := Build(machine4(tc.kernel), slices.Values(pullScript().events))
		if err != nil {
			t.Fatal(err)
		}
		if tl.CPUs[0].Excluded || tl.CPUs[2].Excluded != tc.excl || !tl.CPUs[2].Isolated {
			t.Errorf("%s: CPU 0 excluded %v, CPU 2 excluded %v isolated %v", tc.kernel, tl.CPUs[0].Excluded, tl.CPUs[2].Excluded, tl.CPUs[2].Isolated)
		}
	}
	hdr := machine4("6.19.0")
	hdr.Machine.Cmdline = ""
	tl, err := Build(hdr, slices.Values(pullScript().events))
	if err != nil {
		t.Fatal(err)
	}
	tl.SetPartition(cpumask.Of(3))
	if !tl.CPUs[3].Isolated || !tl.CPUs[3].Excluded || tl.CPUs[2].Isolated {
		t.Errorf("partition: %+v", tl.CPUs)
	}
	if got := CPUTitle(&tl.CPUs[3]); got != "CPU 3 (isolated, excluded)" {
		t.Errorf("title %q", got)
	}
}

// A lost-events marker makes the CPU's state and its groups' migrators
// unknown until the trace shows them again.
func TestBuildLost(t *testing.T) {
	s := pullScript()
	ev := slices.Clone(s.events[:8]) // up to CPU 1's remote expiry
	ev = append(ev, ftrace.Event{Line: 100, CPU: 0, TS: 7000, Data: ftrace.Lost{Count: 12}})
	ev = append(ev, s.events[9:]...) // CPU 0 wakes at 9000
	tl, err := Build(machine4("6.12.118"), slices.Values(ev))
	if err != nil {
		t.Fatal(err)
	}
	// Idle until the loss; unknown until it shows its state again: the
	// events it lost may have changed it anywhere in between.
	want := []StateSpan{{500, 1000, Active, true}, {1000, 7000, Idle, false}, {9000, 10000, Active, false}}
	if st := tl.CPUs[0].States; !slices.Equal(st, want) {
		t.Errorf("CPU 0 states %+v, want %+v", st, want)
	}
	m := tl.Groups[0].Migrators
	if len(m) != 2 || m[0].End != 7000 || m[1].Start != 9000 {
		t.Errorf("GRP0:0 migrators %+v", m)
	}
	if len(tl.Lost) != 1 || len(tl.Warnings) != 1 || !strings.Contains(tl.Warnings[0], "CPU 0 lost 12 events") {
		t.Errorf("lost %+v, warnings %q", tl.Lost, tl.Warnings)
	}
	var b bytes.Buffer
	if err := WritePerfetto(&b, tl); err != nil {
		t.Fatal(err)
	}
	im := importJSON(t, b.Bytes(), llround)
	names := []string{}
	for _, sl := range im.slices[track{cpuPID(0), cpuTID(0, tidState)}] {
		names = append(names, sl.ev.Name)
	}
	if fmt.Sprint(names) != "[active (inferred) idle unknown active]" {
		t.Errorf("CPU 0's state slices %v", names)
	}
}

func TestBuildErrors(t *testing.T) {
	s := pullScript()
	// Out of time order: Build refuses, naming the line; FromEvents sorts.
	ev := slices.Clone(s.events)
	ev[5].TS = 4000
	if _, err := Build(machine4("6.12.118"), slices.Values(ev)); err == nil || !strings.Contains(err.Error(), "line 6: timer_expire_entry at 0.000004 s comes after an event at 0.000005 s") {
		t.Errorf("out of order: %v", err)
	}
	tl, err := FromEvents(machine4("6.12.118"), ev)
	if err != nil || len(tl.Warnings) == 0 || !strings.HasPrefix(tl.Warnings[0], "line 6: the trace is out of time order") {
		t.Errorf("FromEvents: %v, %q", err, tl.Warnings)
	}
	// A CPU beyond the machine.
	ev = slices.Clone(s.events)
	ev[4].Data = ftrace.TmigrHandleRemoteCPU{CPU: 7, Parent: grp0}
	if _, err := Build(machine4("6.12.118"), slices.Values(ev)); err == nil || !strings.Contains(err.Error(), "line 5: tmigr_handle_remote_cpu names CPU 7, but the machine has 4 CPUs") {
		t.Errorf("CPU beyond the machine: %v", err)
	}
	// A group pointer that names two groups: a warning, and the picture
	// goes on.
	ev = slices.Clone(s.events)
	ev[2].Data = ftrace.TmigrCPUIdle{CPU: 0, Parent: 0x1234, Wakeup: ktimeMax}
	tl, err = Build(machine4("6.12.118"), slices.Values(ev))
	if err != nil || len(tl.Warnings) == 0 || !strings.Contains(tl.Warnings[0], "another hierarchy than the machine line implies") {
		t.Errorf("two pointers: %v, %q", err, tl.Warnings)
	}
}

// Without a machine line the hierarchy is pieced together from the
// trace's pointers, and gives the same picture as far as the trace shows
// it.
func TestBuildWithoutMachine(t *testing.T) {
	for _, name := range []string{"vm16-2node-isol-busy-sleepers.txt", "vm64-4node-mixed.txt", "vm18-2node-mixed.txt"} {
		hdr, events := readTrace(t, name)
		model, err := FromEvents(hdr, events)
		if err != nil {
			t.Fatal(err)
		}
		hdr.Machine = nil
		learned, err := FromEvents(hdr, events)
		if err != nil {
			t.Fatal(err)
		}
		if learned.FromMachine || !model.FromMachine {
			t.Fatal("FromMachine")
		}
		if fmt.Sprint(learned.Pulls(All)) != fmt.Sprint(model.Pulls(All)) {
			t.Errorf("%s: pulls %v, with the machine %v", name, learned.Pulls(All), model.Pulls(All))
		}
		// Where the pieced-together picture shows something, the machine's
		// shows the same; it may show less (a CPU that never walks through
		// its group has no known child bit).
		for c := range model.CPUs {
			for _, at := range boundaries(learned.CPUs[c].States, model.CPUs[c].States, stateSpan) {
				l, m := stateAt(learned.CPUs[c].States, at), stateAt(model.CPUs[c].States, at)
				if l != Unknown && l != m && !(l == Idle && m == Inactive) {
					t.Errorf("%s: CPU %d at %d: %v, with the machine %v", name, c, at, l, m)
				}
			}
		}
		byName := map[string]*Group{}
		for i := range model.Groups {
			byName[model.Groups[i].Name] = &model.Groups[i]
		}
		for _, g := range learned.Groups {
			m := byName[g.Name]
			if m == nil || !isSubset(g.CPUs, m.CPUs) {
				t.Errorf("%s: learned %s with CPUs %v; the machine's: %+v", name, g.Name, g.CPUs, m)
				continue
			}
			for _, at := range boundaries(g.Migrators, m.Migrators, migratorSpan) {
				l, lok := migAt(g.Migrators, at)
				w, wok := migAt(m.Migrators, at)
				if lok && (!wok || l.Child != w.Child || l.CPU >= 0 && l.CPU != w.CPU) {
					t.Errorf("%s: %s at %d: migrator %+v, with the machine %+v", name, g.Name, at, l, w)
				}
			}
		}
		if len(learned.Warnings) != 0 || len(model.Warnings) != 0 {
			t.Errorf("%s: warnings %q %q", name, learned.Warnings, model.Warnings)
		}
	}
}

// boundaries returns the first and last nanosecond of every span of a and
// b.
func boundaries[S any](a, b []S, span func(S) (int64, int64)) []int64 {
	var out []int64
	for _, l := range [][]S{a, b} {
		for _, s := range l {
			from, to := span(s)
			out = append(out, from, to-1)
		}
	}
	return out
}

func stateSpan(s StateSpan) (int64, int64)       { return s.Start, s.End }
func migratorSpan(s MigratorSpan) (int64, int64) { return s.Start, s.End }

func stateAt(l []StateSpan, t int64) State {
	for _, s := range l {
		if s.Start <= t && t < s.End {
			return s.State
		}
	}
	return Unknown
}

func migAt(l []MigratorSpan, t int64) (MigratorSpan, bool) {
	for _, s := range l {
		if s.Start <= t && t < s.End {
			return s, true
		}
	}
	return MigratorSpan{}, false
}

func isSubset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// The simulator's own counters and the picture of its trace agree, in the
// measured window, pair by pair.
func TestBuildSimulatorAgrees(t *testing.T) {
	sr := simulated(t)
	tl, err := Read(bytes.NewReader(sr.trace))
	if err != nil {
		t.Fatal(err)
	}
	from := int64(sr.cfg.Warmup)
	got := tl.Pulls(Window{From: from, To: from + sr.res.Duration})
	var want []string
	for _, c := range sr.res.CPUs {
		for _, f := range c.RemoteFrom {
			want = append(want, fmt.Sprintf("%d<-%d:%d", c.CPU, f.CPU, f.Count))
		}
	}
	var have []string
	for _, p := range got {
		have = append(have, fmt.Sprintf("%d<-%d:%d", p.Handler, p.Owner, p.Count))
	}
	slices.Sort(want)
	slices.Sort(have)
	if len(want) == 0 || !slices.Equal(have, want) {
		t.Errorf("trace %v, simulator %v", have, want)
	}
}

// Where a timer's owner can be told both from the remote expiry under way
// and from its timer_start, the two agree on every recording.
func TestOwnersAgree(t *testing.T) {
	files, err := filepath.Glob(tracePath("*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatal(err, files)
	}
	both := 0
	for _, f := range files {
		hdr, events := readTrace(t, filepath.Base(f))
		tl, err := FromEvents(hdr, events)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tl.Warnings {
			t.Errorf("%s: %s", filepath.Base(f), w)
		}
		for _, e := range tl.Expiries {
			if e.From == OwnerRemote && e.HasDue {
				both++
			}
		}
	}
	if both == 0 {
		t.Error("no expiry had both a remote expiry and a timer_start")
	}
	t.Logf("%d expiries with both", both)
}
