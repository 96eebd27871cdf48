package replay

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// synth runs our hierarchy the way the kernel's timer code drives it and
// records what a kernel would print: the timer_migration tracepoints
// through a Tracer that writes ftrace events, and the timer lines that give
// the jiffies (a global timer per CPU, whose bucket the CPU publishes, and
// a pinned timer started around every remote round). Replaying the trace
// must reproduce every decision; since the trace starts at boot, nothing is
// undetermined.
type synth struct {
	shape  Shape
	h      *hier.Hierarchy
	rng    *rand.Rand
	tick   int64
	off    int64
	j      uint64 // jiffies
	ts     int64  // trace clock
	cur    int    // the CPU whose lines are being printed
	events []ftrace.Event
	ptr    map[hier.GroupID]uint64
	newAPI bool // tmigr_cpu_available rather than tmigr_cpu_online

	active []bool
	out    []bool   // withdrawn for good (isolated)
	global []uint64 // each CPU's global timer (jiffies), 0: none
	wake   []int64  // an idle CPU's wakeup for the hierarchy
	timers uint64   // timer pointers handed out
	at     []timedChange
}

func newSynth(t *testing.T, s Shape, seed int64) *synth {
	t.Helper()
	opts, err := s.hierOptions()
	if err != nil {
		t.Fatal(err)
	}
	y := &synth{shape: s, rng: rand.New(rand.NewSource(seed)), tick: tickNS(s.HZ),
		ptr: map[hier.GroupID]uint64{}, j: 4294892296 + 1500, ts: 11_000_000_000,
		active: make([]bool, s.CPUs), out: make([]bool, s.CPUs), global: make([]uint64, s.CPUs), wake: make([]int64, s.CPUs)}
	y.off = -int64(4294892296-76) * y.tick
	y.newAPI = opts.ExcludeIsolated
	opts.Tracer = y
	if y.h, err = hier.New(opts); err != nil {
		t.Fatal(err)
	}
	for c := range y.wake {
		y.wake[c] = hier.KtimeMax
	}
	return y
}

func (y *synth) ns(j uint64) int64 { return int64(j)*y.tick + y.off }

// line appends one event printed by the current CPU. Lines are further
// apart than the clock skew the replay allows between CPUs: the run is
// sequential, and its trace says so.
func (y *synth) line(p ftrace.Payload) {
	y.ts += skewNS + 1000
	task, pid := "<idle>", 0
	if y.cur >= 0 && y.cur < len(y.active) && y.active[y.cur] {
		task, pid = "sh", 300+y.cur
	}
	cpu := max(y.cur, 0)
	y.events = append(y.events, ftrace.Event{Task: task, PID: pid, CPU: cpu, Flags: "d..2.", TS: y.ts, Name: p.Name(), Data: p})
}

func (y *synth) p(g hier.GroupID) uint64 {
	if g == hier.NoGroup {
		return 0
	}
	v, ok := y.ptr[g]
	if !ok {
		v = uint64(y.rng.Uint32())<<4 | 1<<40
		y.ptr[g] = v
	}
	return v
}

// The Tracer: each event is printed as the kernel would print it, with
// pointers of its own and the hotplug names of the modelled generation.
func (y *synth) Trace(e hier.Event) {
	switch e.Kind {
	case hier.EvGroupSet:
		y.GroupSet(e.Group, e.Node)
	case hier.EvConnectChildParent:
		y.ConnectChildParent(e.Child, e.Parent, e.Node, e.NumChildren, e.Groupmask)
	case hier.EvConnectCPUParent:
		y.ConnectCPUParent(e.CPU, e.Parent, e.Node, e.NumChildren, e.Groupmask)
	case hier.EvGroupSetCPUActive:
		y.GroupSetCPUActive(e.Group, e.Parent, e.Node, e.Active, e.Migrator, e.Childmask)
	case hier.EvGroupSetCPUInactive:
		y.GroupSetCPUInactive(e.Group, e.Parent, e.Node, e.Active, e.Migrator, e.Childmask)
	case hier.EvCPUActive:
		y.CPUActive(e.CPU, e.Parent, e.Wakeup)
	case hier.EvCPUNewTimer:
		y.CPUNewTimer(e.CPU, e.Parent, e.Wakeup)
	case hier.EvCPUAvailable:
		y.CPUAvailable(e.CPU, e.Parent, e.Wakeup)
	case hier.EvCPUUnavailable:
		y.CPUUnavailable(e.CPU, e.Parent, e.Wakeup)
	case hier.EvHandleRemoteCPU:
		y.HandleRemoteCPU(e.CPU, e.Parent, e.Wakeup)
	case hier.EvCPUIdle:
		y.CPUIdle(e.CPU, e.Parent, e.NextEvt, e.Wakeup)
	case hier.EvCPUNewTimerIdle:
		y.CPUNewTimerIdle(e.CPU, e.Parent, e.NextEvt, e.Wakeup)
	case hier.EvUpdateEvents:
		y.UpdateEvents(e.Child, e.Group, e.ChildActive, e.GroupActive, e.NextEvt, e.NextExpiry, e.ChildEvtExpiry, e.ChildEvtCPU)
	case hier.EvHandleRemote:
		y.HandleRemote(e.Group)
	}
}

func (y *synth) GroupSet(g hier.GroupID, node int) {
	y.line(ftrace.TmigrGroupSet{Group: y.p(g), Lvl: g.Level, Numa: node})
}
func (y *synth) ConnectChildParent(child, parent hier.GroupID, node, n int, mask uint8) {
	y.line(ftrace.TmigrConnectChildParent{Group: y.p(child), Groupmask: uint32(mask), Parent: y.p(parent), Lvl: parent.Level, Numa: node, NumChildren: n})
}
func (y *synth) ConnectCPUParent(cpu int, parent hier.GroupID, node, n int, mask uint8) {
	y.line(ftrace.TmigrConnectCPUParent{CPU: cpu, Groupmask: uint32(mask), Parent: y.p(parent), Lvl: parent.Level, Numa: node, NumChildren: n})
}
func (y *synth) groupLine(active bool, g, parent hier.GroupID, node int, a, m, cm uint8) {
	v := ftrace.TmigrGroupAndCPU{Group: y.p(g), Lvl: g.Level, Numa: node, Active: a, Migrator: m, Parent: y.p(parent), Childmask: uint32(cm)}
	if active {
		y.line(ftrace.TmigrGroupSetCPUActive(v))
	} else {
		y.line(ftrace.TmigrGroupSetCPUInactive(v))
	}
}
func (y *synth) GroupSetCPUActive(g, parent hier.GroupID, node int, a, m, cm uint8) {
	y.groupLine(true, g, parent, node, a, m, cm)
}
func (y *synth) GroupSetCPUInactive(g, parent hier.GroupID, node int, a, m, cm uint8) {
	y.groupLine(false, g, parent, node, a, m, cm)
}
func (y *synth) cg(cpu int, parent hier.GroupID, wakeup int64) ftrace.TmigrCPUGroup {
	return ftrace.TmigrCPUGroup{CPU: cpu, Parent: y.p(parent), Wakeup: wakeup}
}
func (y *synth) CPUActive(cpu int, parent hier.GroupID, w int64) {
	y.line(ftrace.TmigrCPUActive(y.cg(cpu, parent, w)))
}
func (y *synth) CPUNewTimer(cpu int, parent hier.GroupID, w int64) {
	y.line(ftrace.TmigrCPUNewTimer(y.cg(cpu, parent, w)))
}
func (y *synth) CPUAvailable(cpu int, parent hier.GroupID, w int64) {
	if y.newAPI {
		y.line(ftrace.TmigrCPUAvailable(y.cg(cpu, parent, w)))
	} else {
		y.line(ftrace.TmigrCPUOnline(y.cg(cpu, parent, w)))
	}
}
func (y *synth) CPUUnavailable(cpu int, parent hier.GroupID, w int64) {
	if y.newAPI {
		y.line(ftrace.TmigrCPUUnavailable(y.cg(cpu, parent, w)))
	} else {
		y.line(ftrace.TmigrCPUOffline(y.cg(cpu, parent, w)))
	}
}
func (y *synth) HandleRemoteCPU(cpu int, parent hier.GroupID, w int64) {
	y.line(ftrace.TmigrHandleRemoteCPU(y.cg(cpu, parent, w)))
}
func (y *synth) CPUIdle(cpu int, parent hier.GroupID, next, w int64) {
	y.line(ftrace.TmigrCPUIdle{CPU: cpu, Parent: y.p(parent), NextEvt: next, Wakeup: w})
}
func (y *synth) CPUNewTimerIdle(cpu int, parent hier.GroupID, next, w int64) {
	y.line(ftrace.TmigrCPUNewTimerIdle{CPU: cpu, Parent: y.p(parent), NextEvt: next, Wakeup: w})
}
func (y *synth) UpdateEvents(child, g hier.GroupID, ca, ga uint8, next, nextExp, childExp int64, childCPU int) {
	y.line(ftrace.TmigrUpdateEvents{Child: y.p(child), Group: y.p(g), GroupLvl: g.Level, ChildActive: ca, GroupActive: ga,
		NextEvt: next, NextExpiry: nextExp, ChildEvtExpiry: childExp, ChildEvtCPU: childCPU})
}
func (y *synth) HandleRemote(g hier.GroupID) {
	y.line(ftrace.TmigrHandleRemote{Group: y.p(g), Lvl: g.Level})
}

// The timer code.

// arm gives cpu a global timer d jiffies ahead, printed by the current CPU.
func (y *synth) arm(cpu int, d uint64) {
	y.global[cpu] = y.j + d
	y.timers++
	y.line(ftrace.TimerStart{Timer: 0xabc000 + uint64(cpu), Function: "process_timeout", Expires: y.global[cpu],
		Timeout: int64(d), BucketExpiry: y.global[cpu], CPU: cpu})
}

// expire runs cpu's global timer if it is due, on the current CPU, and
// maybe re-arms it from its callback.
func (y *synth) expire(cpu int) {
	if y.global[cpu] == 0 || y.global[cpu] > y.j {
		return
	}
	tm := 0xabc000 + uint64(cpu)
	y.line(ftrace.TimerCancel{Timer: tm})
	y.line(ftrace.TimerExpireEntry{Timer: tm, Function: "process_timeout", Now: y.j, BaseClk: y.global[cpu]})
	y.global[cpu] = 0
	if y.rng.Intn(3) > 0 {
		y.arm(cpu, 2+uint64(y.rng.Intn(40)))
	}
	y.line(ftrace.TimerExpireExit{Timer: tm})
}

// nextGlobal is what the timer code hands to the hierarchy.
func (y *synth) nextGlobal(cpu int) int64 {
	if y.global[cpu] == 0 {
		return hier.KtimeMax
	}
	return y.ns(y.global[cpu])
}

func (y *synth) ExpireRemote(handler, target int) { y.expire(target) }
func (y *synth) LockBases(int)                    {}
func (y *synth) UnlockBases(int)                  {}
func (y *synth) NextGlobalRemote(target int, basej uint64, now int64) int64 {
	return y.nextGlobal(target)
}

// jiffiesLine prints a pinned timer's start on the current CPU: the trace's
// reading of jiffies.
func (y *synth) jiffiesLine() {
	y.line(ftrace.TimerStart{Timer: 0xdef000 + uint64(y.cur), Function: "tick_watch", Expires: y.j + 50,
		Timeout: 50, BucketExpiry: y.j + 50, CPU: y.cur, Flags: ftrace.TimerPinned})
}

// remote runs cpu's timer softirq: its own due global timer, then the
// hierarchy's round, with jiffies printed on both sides.
func (y *synth) remote(cpu int) {
	y.cur = cpu
	y.jiffiesLine()
	y.expire(cpu)
	y.h.HandleRemote(cpu, y.ns(y.j), y.j, y)
	y.jiffiesLine()
}

// idle takes cpu into idle: the tick stops if its next timer is more
// than a jiffy away; the last CPU to go is handed the first event and wakes
// up at once when that is due within a jiffy.
func (y *synth) idle(cpu int) {
	y.cur = cpu
	if y.global[cpu] != 0 && y.global[cpu] <= y.j+1 {
		return
	}
	y.active[cpu] = false
	w := y.h.Deactivate(cpu, y.nextGlobal(cpu))
	y.wake[cpu] = w
	if w != hier.KtimeMax && w <= y.ns(y.j+1) {
		y.wakeUp(cpu)
	}
}

func (y *synth) wakeUp(cpu int) {
	y.cur = cpu
	y.h.Activate(cpu)
	y.active[cpu] = true
	y.wake[cpu] = hier.KtimeMax
}

// boot prepares and onlines every CPU in order, as the kernel does, and
// withdraws the isolated ones when the kernel excludes them.
func (y *synth) boot(t *testing.T) {
	y.cur = 0
	for c := 0; c < y.shape.CPUs; c++ {
		if err := y.h.Prepare(c); err != nil {
			t.Fatal(err)
		}
	}
	for c := 0; c < y.shape.CPUs; c++ {
		y.cur = c
		y.active[c] = true
		if err := y.h.SetAvailable(c, false); err != nil {
			t.Fatal(err)
		}
	}
	// The 2025 kernels' late initcall withdraws the isolated CPUs, each
	// in a work item on itself; then the static key is on.
	iso := y.h.Isolation()
	if y.newAPI {
		for c := 0; c < y.shape.CPUs; c++ {
			if iso.IsIsolated(c) && (iso.NohzFull.Empty() || c != iso.Timekeeper) {
				y.cur = c
				if _, err := y.h.ClearAvailable(c); err != nil {
					t.Fatal(err)
				}
				y.active[c], y.out[c] = false, true
			}
		}
		y.cur = 0
		y.h.InitIsolation(nil)
	}
}

// run drives the machine for n jiffies of random work.
func (y *synth) run(n int) {
	cpus := y.shape.CPUs
	for step := 0; step < n; step++ {
		y.j++
		y.ts = (y.ts/y.tick + 1) * y.tick
		for _, c := range y.rng.Perm(cpus) {
			y.cur = c
			switch {
			case y.out[c]:
			case y.active[c]:
				y.remote(c)
				if y.rng.Intn(4) == 0 {
					y.idle(c)
				}
			case y.wake[c] <= y.ns(y.j):
				// Its hierarchy wakeup fired: the softirq runs the
				// round, the idle loop re-evaluates.
				y.remote(c)
				y.cur = c
				y.wake[c] = y.h.NewTimer(c, y.nextGlobal(c))
			case y.rng.Intn(8) == 0:
				y.wakeUp(c)
				if y.global[c] == 0 && y.rng.Intn(2) == 0 {
					y.arm(c, 2+uint64(y.rng.Intn(60)))
				}
			case y.rng.Intn(6) == 0:
				// An interrupt armed a timer on the idle CPU.
				if y.global[c] == 0 || y.rng.Intn(2) == 0 {
					y.arm(c, 2+uint64(y.rng.Intn(30)))
				}
				y.wake[c] = y.h.NewTimer(c, y.nextGlobal(c))
			}
		}
		if cpus > 2 && y.rng.Intn(200) == 0 {
			// A CPU goes offline and comes back.
			c := 1 + y.rng.Intn(cpus-1)
			if y.active[c] && !y.out[c] {
				y.cur = c
				trig, _ := y.h.ClearAvailable(c)
				y.changed(ftrace.Change{Kind: ftrace.ChangeOffline, CPU: c})
				if trig >= 0 && !y.active[trig] {
					y.wakeUp(trig)
				}
				y.cur = c
				_ = y.h.SetAvailable(c, false)
				y.changed(ftrace.Change{Kind: ftrace.ChangeOnline, CPU: c})
			}
		}
	}
}

// changed notes a change made to the machine now, for the machine line's
// at= (its time is when it was done, as the lab records it).
func (y *synth) changed(c ftrace.Change) {
	y.at = append(y.at, timedChange{y.ts, c})
}

type timedChange struct {
	ts int64
	c  ftrace.Change
}

// trace returns the recording as text and read back. The machine line
// lists the changes made since its first event.
func (y *synth) trace(t *testing.T) (*Trace, string) {
	t.Helper()
	s := y.shape
	m := &ftrace.Machine{CPUs: s.CPUs, Nodes: s.Nodes, NodeCPUs: s.NodeCPUs, Kernel: s.Kernel, HZ: s.HZ, Cmdline: s.Cmdline, Note: "synthetic"}
	if len(y.events) > 0 {
		for _, a := range y.at {
			if a.ts >= y.events[0].TS {
				a.c.At = time.Duration(a.ts - y.events[0].TS)
				m.At = append(m.At, a.c)
			}
		}
	}
	if m.NodeCPUs == nil {
		nodeOf := s.nodeOf()
		m.NodeCPUs = make([]cpumask.Mask, s.Nodes)
		for c, n := range nodeOf {
			m.NodeCPUs[n].Set(c)
		}
	}
	var buf bytes.Buffer
	if err := ftrace.WriteTrace(&buf, ftrace.Header{Machine: m}, y.events); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	tr, err := Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return tr, text
}

// synthShapes are machines of every kind the lab records, and more.
var synthShapes = []Shape{
	{CPUs: 2, Nodes: 1, HZ: 250, Kernel: "6.18.44"},
	{CPUs: 9, Nodes: 1, HZ: 250, Kernel: "6.12.117"},
	{CPUs: 16, Nodes: 2, HZ: 250, Kernel: "6.12.117"},
	{CPUs: 18, Nodes: 2, HZ: 1000, Kernel: "6.12.117"},
	{CPUs: 24, Nodes: 1, HZ: 250, Kernel: "6.12.117", Cmdline: "nohz_full=1-23"},
	{CPUs: 40, Nodes: 1, HZ: 100, Kernel: "6.19.0", Cmdline: "isolcpus=1-9,11-39"},
	{CPUs: 64, Nodes: 4, HZ: 300, Kernel: "6.12.117"},
}

// TestSynthetic: a trace our own hierarchy printed replays with every
// decision determined and matched, on machines of every shape. This checks
// the replay itself: its operations, group identities, time mapping,
// remote rounds and knowledge bookkeeping.
func TestSynthetic(t *testing.T) {
	for i, s := range synthShapes {
		t.Run(fmt.Sprintf("%dcpus-%dnodes-%s", s.CPUs, s.Nodes, s.Kernel), func(t *testing.T) {
			y := newSynth(t, s, int64(i+1))
			y.boot(t)
			y.run(300)
			tr, text := y.trace(t)
			c, err := CheckTmigr(tr, withAt(s, tr))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d lines: %d/%d matched, %d undetermined %v", len(y.events), c.Matched, c.Checked, c.Undetermined, c.UndeterminedReasons)
			if c.Checked < 200 || c.Matched != c.Checked {
				lines := strings.Split(text, "\n")
				for k, m := range c.Mismatches {
					if k == 5 {
						break
					}
					t.Errorf("line %d: %s: kernel %s, model %s\n\t%s", m.Line, m.Event, m.Kernel, m.Model, lines[m.Line-1])
				}
				t.Fatalf("%d/%d matched, %d undetermined %v, %d mismatches", c.Matched, c.Checked, c.Undetermined, c.UndeterminedReasons, len(c.Mismatches))
			}
		})
	}
}

// withAt returns s with the changes the trace's machine line lists.
func withAt(s Shape, tr *Trace) Shape {
	if m := tr.Header.Machine; m != nil {
		s.At = m.At
	}
	return s
}
