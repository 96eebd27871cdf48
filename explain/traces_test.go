package explain

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

const tracesDir = "../testdata/traces"

// oracle is a reading of a recording independent of the builder: the
// foreign expiries and, for each, whether the handler was the migrator of
// the groups its round walked, from the group states as printed, with the
// CPUs' bits computed from the machine's shape (groups of 8 consecutive
// CPUs of a node, numbered in CPU order) rather than from package hier.
type oracle struct {
	m        *ftrace.Machine
	h        *ftrace.Hierarchy // the boot line, nil without one
	iso      cmdline.Isolation
	foreign  []oForeign
	remoteTo map[int]int // handler -> remote expiries of other CPUs it ran
}

type oForeign struct {
	line, handler, owner int
	function             string
	// groups is the handler's round up to the group that held the event:
	// pointer and level, lowest first.
	groups []uint64
	// migrator[k]: the handler's branch was the migrator of groups[k] by
	// the group's last printed state (or it had none); known[k]: a state
	// was printed before.
	migrator, known []bool
}

// level0 returns the index of a CPU's level-0 group and its bit there:
// level-0 groups hold the CPUs of one node, eight at most, unless the boot
// line says level 0 already spans nodes (crossnode level 0: a machine of
// eight CPUs or fewer on several nodes), where they hold eight CPUs in
// CPU order.
func level0(m *ftrace.Machine, h *ftrace.Hierarchy, cpu int) (index int, bit uint8) {
	if h != nil && h.CrossnodeLevel == 0 {
		return cpu / 8, 1 << (cpu % 8)
	}
	for n := 0; n < len(m.NodeCPUs); n++ {
		first := m.NodeCPUs[n].First()
		if !m.NodeCPUs[n].Test(cpu) {
			index += (m.NodeCPUs[n].Weight() + 7) / 8
			continue
		}
		k := cpu - first
		return index + k/8, 1 << (k % 8)
	}
	return -1, 0
}

func readOracle(t *testing.T, path string) *oracle {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := ftrace.NewReader(f)
	var evs []ftrace.Event
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		evs = append(evs, ev)
	}
	o := &oracle{m: r.Header().Machine, h: r.Header().Hierarchy, remoteTo: map[int]int{}}
	if o.m == nil {
		t.Fatalf("%s: no machine line", path)
	}
	if o.iso, err = o.m.Isolation(); err != nil {
		t.Fatal(err)
	}
	type gstate struct{ active, migrator uint8 }
	state := map[uint64]gstate{}
	// Groups whose active mask changes in a bit other than the printing
	// child's: some CPU below them does not trace its transitions, and
	// their printed state is not the whole truth.
	unseen := map[uint64]bool{}
	prevActive := map[uint64]uint8{}
	for _, e := range evs {
		var g ftrace.TmigrGroupAndCPU
		var act bool
		switch p := e.Data.(type) {
		case ftrace.TmigrGroupSetCPUActive:
			g, act = ftrace.TmigrGroupAndCPU(p), true
		case ftrace.TmigrGroupSetCPUInactive:
			g = ftrace.TmigrGroupAndCPU(p)
		default:
			continue
		}
		if prev, ok := prevActive[g.Group]; ok {
			want := prev &^ uint8(g.Childmask)
			if act {
				want = prev | uint8(g.Childmask)
			}
			if want != g.Active {
				unseen[g.Group] = true
			}
		}
		prevActive[g.Group] = g.Active
	}
	bitIn := map[uint64]uint8{}               // a group's bit in its parent, from the lines
	lvl0 := map[int]uint64{}                  // a CPU's level-0 group pointer, from its lines
	target := map[int]int{}                   // handler -> target of its remote expiry in progress
	claimer := map[int]int{}                  // handler -> the task that claimed the target
	walk := map[int][]uint64{}                // handler -> groups of its round so far
	started := map[uint64]ftrace.TimerStart{} // a timer's last timer_start
	// nonGlobal: expiries (by index) of a timer armed before the recording
	// whose next timer_start shows it pinned or deferrable: it sat on a
	// base timer_expire_remote never runs.
	nonGlobal := map[int]bool{}
	nextFlags := map[uint64]ftrace.TimerFlags{}
	for i := len(evs) - 1; i >= 0; i-- {
		switch p := evs[i].Data.(type) {
		case ftrace.TimerInit:
			delete(nextFlags, p.Timer)
		case ftrace.TimerStart:
			nextFlags[p.Timer] = p.Flags
		case ftrace.TimerExpireEntry:
			f, ok := nextFlags[p.Timer]
			nonGlobal[i] = ok && f&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0
		}
	}
	for i, e := range evs {
		if _, ok := target[e.CPU]; ok && e.PID == claimer[e.CPU] && e.Flags != "" &&
			!e.Flags.SoftIRQ() && !e.Flags.HardIRQ() && !e.Flags.NMI() {
			// The task that claimed the target, out of softirq
			// context: its softirq, and the expiry in it, are over (a
			// task that preempts a PREEMPT_RT timer thread is another).
			delete(target, e.CPU)
		}
		if _, round := e.Data.(ftrace.TmigrHandleRemoteCPU); !round && e.Data != nil && ftrace.IsTmigr(e.Data) {
			// The walk after the expiry, the next level, or the CPU's
			// own idle path once its softirq is over (a target that
			// woke meanwhile gets no walk): the expiry is over.
			delete(target, e.CPU)
		}
		switch p := e.Data.(type) {
		case ftrace.TimerStart:
			started[p.Timer] = p
		case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive:
			var g ftrace.TmigrGroupAndCPU
			if a, ok := p.(ftrace.TmigrGroupSetCPUActive); ok {
				g = ftrace.TmigrGroupAndCPU(a)
			} else {
				g = ftrace.TmigrGroupAndCPU(p.(ftrace.TmigrGroupSetCPUInactive))
			}
			state[g.Group] = gstate{g.Active, g.Migrator}
			if g.Lvl == 0 {
				lvl0[e.CPU] = g.Group
			} else if c, ok := lvl0[e.CPU]; ok && g.Lvl == 1 {
				bitIn[c] = uint8(g.Childmask)
			}
			delete(target, e.CPU)
			delete(walk, e.CPU)
		case ftrace.TmigrHandleRemote:
			if p.Lvl == 0 {
				walk[e.CPU] = nil
			}
			walk[e.CPU] = append(walk[e.CPU], p.Group)
			delete(target, e.CPU)
		case ftrace.TmigrHandleRemoteCPU:
			target[e.CPU] = p.CPU
			claimer[e.CPU] = e.PID
		case ftrace.HrtimerExpireEntry:
			if e.PID == claimer[e.CPU] && e.Flags.SoftIRQ() && !e.Flags.HardIRQ() {
				// HRTIMER_SOFTIRQ runs once the timer softirq has
				// returned (handle_softirqs runs the vectors in bit
				// order).
				delete(target, e.CPU)
			}
		case ftrace.TimerExpireEntry:
			tg, ok := target[e.CPU]
			if st, known := started[p.Timer]; ok && (known && st.CPU != tg || !known && nonGlobal[i] || e.PID != claimer[e.CPU]) {
				// A remote expiry runs only the target's bases
				// (timer_expire_remote): a timer queued on another CPU
				// ends the round, and this is a softirq of the CPU's
				// own (on 7.3, its deferrable timers after a round that
				// expired nothing); so is one another task printed (a
				// remote expiry runs in its handler's call stack).
				delete(target, e.CPU)
				continue
			}
			if !ok || tg == e.CPU {
				continue
			}
			o.remoteTo[e.CPU]++
			x := oForeign{line: e.Line, handler: e.CPU, owner: tg, function: p.Function, groups: walk[e.CPU]}
			for k, g := range x.groups {
				var want uint8
				if k == 0 {
					_, want = level0(o.m, o.h, e.CPU)
				} else {
					want = bitIn[x.groups[k-1]]
				}
				s, known := state[g]
				known = known && !unseen[g]
				x.known = append(x.known, known)
				x.migrator = append(x.migrator, known && want != 0 && (s.migrator == want || s.migrator == 0xff))
			}
			o.foreign = append(o.foreign, x)
		}
	}
	return o
}

// groupName names a group pointer of the oracle's round after the shape:
// level 0 from the handler's CPU, level 1 the node's group on 2-level
// machines of whole nodes.
func (o *oracle) groupName(x oForeign, k int) string {
	if k == 0 {
		i, _ := level0(o.m, o.h, x.handler)
		return fmt.Sprintf("GRP0:%d", i)
	}
	return ""
}

func explainFile(t *testing.T, path string) *Report {
	t.Helper()
	rep, err := ExplainFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// On the 6.12 isolcpus recordings an isolated CPU runs a housekeeping
// CPU's timers: every foreign expiry the oracle finds is in the report,
// with its owner and function, and its why names the owner, the function
// and the group; where the trace printed the group's state, the handler
// was its migrator (or it had none) and the why says so.
func TestIsolatedCPUsPullOn612(t *testing.T) {
	for _, tc := range []struct {
		file           string
		handler, owner int // the pull the issue names
	}{
		{"vm16-2node-isol-busy-sleepers.txt", 1, 0},
		{"vm40-1node-isol-busy.txt", 8, 10},
		{"vm16-2node-isol-busy.txt", 1, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(tracesDir, tc.file)
			o := readOracle(t, path)
			rep := explainFile(t, path)
			if !strings.HasPrefix(o.m.Kernel, "6.12.") || o.iso.Domain.Empty() {
				t.Fatalf("not a 6.12 isolcpus recording: %s %q", o.m.Kernel, o.m.Cmdline)
			}
			byLine := map[int]*Expiry{}
			nForeign := 0
			for i := range rep.Events {
				x := &rep.Events[i]
				byLine[x.Line] = x
				if x.Kind == Foreign {
					nForeign++
				}
			}
			if nForeign != len(o.foreign) {
				t.Errorf("%d foreign expiries, the oracle finds %d", nForeign, len(o.foreign))
			}
			named, verified := false, 0
			for _, f := range o.foreign {
				x := byLine[f.line]
				if x == nil || x.Kind != Foreign || x.Handler != f.handler || x.Owner != f.owner || x.Function != f.function {
					t.Errorf("line %d: CPU %d ran CPU %d's %s; the report has %+v", f.line, f.handler, f.owner, f.function, x)
					continue
				}
				head := fmt.Sprintf("CPU %d ran CPU %d's %s at ", f.handler, f.owner, f.function)
				if !strings.HasPrefix(x.Why, head) {
					t.Errorf("line %d: why %q does not start with %q", f.line, x.Why, head)
				}
				if len(f.groups) == 0 {
					t.Errorf("line %d: no round before the expiry", f.line)
					continue
				}
				g0 := o.groupName(f, 0)
				if !strings.Contains(x.Why, g0) {
					t.Errorf("line %d: why names no %s: %s", f.line, g0, x.Why)
				}
				if f.known[0] {
					if !f.migrator[0] {
						t.Errorf("line %d: the trace's state of %s does not make CPU %d its migrator", f.line, g0, f.handler)
					} else if want := fmt.Sprintf("CPU %d was %s's migrator since ", f.handler, g0); len(f.groups) >= 1 && !strings.Contains(x.Why, want) && !strings.Contains(x.Why, g0+" had no migrator") {
						t.Errorf("line %d: why lacks %q: %s", f.line, want, x.Why)
					} else {
						verified++
					}
				}
				iso := o.iso.Domain.Test(f.handler) && !o.iso.NohzFull.Test(f.handler)
				if iso && !strings.Contains(x.Why, fmt.Sprintf("CPU %d is isolated (isolcpus domain)", f.handler)) {
					t.Errorf("line %d: why does not say CPU %d is isolated: %s", f.line, f.handler, x.Why)
				}
				if iso && !strings.Contains(x.Why, fmt.Sprintf("from 6.19 (exclude-isolated, 7dec062cfcf2) CPU %d would be out of the hierarchy", f.handler)) {
					t.Errorf("line %d: why does not say what 6.19 does: %s", f.line, x.Why)
				}
				if f.handler == tc.handler && f.owner == tc.owner && iso && !o.iso.Domain.Test(f.owner) {
					named = true
				}
			}
			if !named {
				t.Errorf("no foreign expiry of housekeeping CPU %d's timers on isolated CPU %d", tc.owner, tc.handler)
			}
			if verified == 0 {
				t.Errorf("no foreign expiry whose migrator the trace's states confirm")
			}
			// The summary counts the same pulls.
			want := map[[2]int]int{}
			for _, f := range o.foreign {
				want[[2]int{f.handler, f.owner}]++
			}
			got := map[[2]int]int{}
			for _, p := range rep.Pulls {
				got[[2]int{p.Handler, p.Owner}] += p.Count
				if p.Why == "" {
					t.Errorf("pull %+v without a why", p)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("pulls by handler and owner %v, the oracle's %v", got, want)
			}
		})
	}
}

// On Linux 7.2 with isolcpus=1-3 the isolated CPUs are out of the
// hierarchy: no CPU runs another's timers, and what an isolated CPU runs
// is its own.
func TestIsolatedCPUsPullNothingOn72(t *testing.T) {
	path := filepath.Join(tracesDir, "vm4-1node-isol-busy-sleeper-7.2.txt")
	o := readOracle(t, path)
	if !strings.HasPrefix(o.m.Kernel, "7.") || o.iso.Domain.String() != "1-3" {
		t.Fatalf("not a 7.x isolcpus=1-3 recording: %s %q", o.m.Kernel, o.m.Cmdline)
	}
	if len(o.foreign) != 0 {
		t.Fatalf("the recording itself has foreign expiries: %+v", o.foreign)
	}
	rep := explainFile(t, path)
	if len(rep.Pulls) != 0 {
		t.Errorf("pulls on 7.2: %+v", rep.Pulls)
	}
	if !rep.Excluded.Equal(o.iso.Domain) {
		t.Errorf("excluded %s, want %s", rep.Excluded, o.iso.Domain)
	}
	onIsolated := 0
	for _, x := range rep.Events {
		if x.Kind == Foreign {
			t.Errorf("line %d: foreign expiry on 7.2: %s", x.Line, x.Why)
		}
		if !o.iso.Domain.Test(x.Handler) {
			continue
		}
		onIsolated++
		if x.Kind != Own || !strings.Contains(x.Why, "its own timer") || !strings.Contains(x.Why, "out of the hierarchy") {
			t.Errorf("line %d: %s", x.Line, x.Why)
		}
	}
	if onIsolated == 0 {
		t.Error("no expiry on an isolated CPU explained")
	}
}

var reasons = map[string]bool{whyBefore: true, whyFirst: true, whyEvent: true, whyOpaque: true, whyLost: true,
	whyPartial: true, whyUnarmed: true, whyDisagree: true, whyNoTree: true}

// Every recording explains: every event has a chain and a why, every
// undetermined link a known reason, counted; the JSON never has an empty
// why; the foreign expiries are the oracle's, and wherever the trace
// printed the states of the groups a round walked, the handler's branch
// was their migrator. No recording contradicts the kernel's rules.
func TestEveryRecording(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(tracesDir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rep := explainFile(t, f)
			o := readOracle(t, f)
			counted := map[string]int{}
			foreign := 0
			for _, x := range rep.Events {
				if x.Why == "" || len(x.Steps) == 0 {
					t.Errorf("line %d: no why", x.Line)
				}
				for _, s := range x.Steps {
					if s.Text == "" {
						t.Errorf("line %d: a %s step without text", x.Line, s.Kind)
					}
					if s.Undetermined != "" {
						if !reasons[s.Undetermined] {
							t.Errorf("line %d: unknown reason %q", x.Line, s.Undetermined)
						}
						counted[s.Undetermined]++
					}
					if s.Kind == StepAnomaly || s.Undetermined == whyDisagree {
						t.Errorf("line %d: the recording contradicts the kernel's rules: %s", x.Line, s.Text)
					}
				}
				if x.Kind == Foreign {
					foreign++
				}
				special := rep.Isolated.Test(x.Handler) || rep.NohzFull.Test(x.Handler)
				if x.Kind != Foreign && !special {
					t.Errorf("line %d: a %s expiry on housekeeping CPU %d listed", x.Line, x.Kind, x.Handler)
				}
			}
			if fmt.Sprint(counted) != fmt.Sprint(rep.Undetermined) {
				t.Errorf("undetermined %v, the steps hold %v", rep.Undetermined, counted)
			}
			if foreign != len(o.foreign) {
				t.Errorf("%d foreign expiries, the oracle finds %d", foreign, len(o.foreign))
			}
			for _, f := range o.foreign {
				for k := range f.groups {
					if f.known[k] && !f.migrator[k] && k == 0 {
						t.Errorf("line %d: CPU %d walked a group it was not the migrator of", f.line, f.handler)
					}
				}
			}
			b, err := json.Marshal(rep.JSON())
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				Foreign []struct{ Why string } `json:"foreign"`
				Events  []struct{ Why string } `json:"events"`
			}
			if err := json.Unmarshal(b, &j); err != nil {
				t.Fatal(err)
			}
			for _, p := range append(j.Foreign, j.Events...) {
				if p.Why == "" {
					t.Error("an empty why in the JSON")
				}
			}
		})
	}
}

// A recording with no "# machine:" line is explained with what the flags
// give, and says what it lacks.
func TestWithoutMachineLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(tracesDir, "vm16-2node-isol-busy-sleepers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	text = text[strings.IndexByte(text, '\n')+1:] // the machine line goes
	rep, err := ExplainText(strings.NewReader(text), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kernel != "" || !rep.Isolated.Empty() || len(rep.Notes) < 2 {
		t.Errorf("kernel %q isolated %s notes %q", rep.Kernel, rep.Isolated, rep.Notes)
	}
	// One node assumed, the kernel's numa=1 groups contradict it: named
	// by pointers, the pulls still found.
	if len(rep.Pulls) == 0 {
		t.Error("no pulls without the machine line")
	}
	nodes := []cpumask.Mask{cpumask.Range(0, 7), cpumask.Range(8, 15)}
	rep, err = ExplainText(strings.NewReader(text), Options{Kernel: "6.12.118", Cmdline: "isolcpus=1-7,9-15", NodeCPUs: nodes})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Isolated.String() != "1-7,9-15" || len(rep.Pulls) == 0 || !strings.Contains(rep.Pulls[0].Why, "GRP0:0") {
		t.Errorf("with the flags: isolated %s pulls %+v", rep.Isolated, rep.Pulls)
	}
}
