package replay

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Why a decision is undetermined: the reasons, as counted in
// Counts.UndeterminedReasons.
const (
	whyBefore   = "state from before the recording"
	whyFirst    = "first transition of the group"
	whyEvent    = "event from before the recording"
	whyWakeup   = "wakeup from before the recording"
	whyOpaque   = "CPU whose transitions are not traced"
	whyNow      = "now between two jiffies"
	whyNoClock  = "no jiffies to ns mapping"
	whyRefetch  = "re-fetched expiry not in the trace"
	whyLost     = "events lost"
	whyMissing  = "operation missing from the trace"
	whyRace     = "new timer during a remote expiry of its CPU"
	whyPartial  = "operation cut by the recording"
	whyDiverged = "earlier mismatch"
	whyOffline  = "CPU offline"
)

// CheckTmigr replays the hierarchy's inputs of a trace through package hier
// on the machine s describes and compares every decision (see the package
// documentation). The error is for a trace the replay cannot model at all
// (a shape hier rejects).
func CheckTmigr(t *Trace, s Shape) (Counts, error) {
	return CheckTmigrWith(t, s, TmigrOptions{})
}

// TmigrOptions modifies the tmigr check.
type TmigrOptions struct {
	// Invariants runs the hierarchy's invariant checker (hier.Check) after
	// every operation the replay drives, at quiescent points: a broken
	// invariant stops the check with an error naming the trace line.
	Invariants bool
}

// CheckTmigrWith is CheckTmigr with options.
func CheckTmigrWith(t *Trace, s Shape, o TmigrOptions) (Counts, error) {
	opts, err := s.hierOptions()
	if err != nil {
		return Counts{}, err
	}
	r, err := newReplayer(t, s, opts)
	if err != nil {
		return Counts{}, err
	}
	r.invariants = o.Invariants
	r.run()
	if r.invErr != nil {
		return r.c, r.invErr
	}
	return r.c, nil
}

// replayer is the state of one tmigr check.
type replayer struct {
	// invariants: run hier.Check after every top-level model operation;
	// invErr is the first failure, depth the nesting of collect.
	invariants bool
	invErr     error
	depth      int
	line       int // the trace line of the operation being replayed

	ev   []ftrace.Event
	topo *topology
	gm   *groupMap
	ops  []*op
	done []bool
	clk  *clock
	rec  *recorder
	m    *model
	c    Counts

	// Knowledge: "" where the model's value is the kernel's, else why not.
	gk  map[hier.GroupID]string // a group's state word
	gev map[hier.GroupID]string // a group's event in its parent
	ek  []string                // a CPU's event
	wk  []string                // a CPU's wakeup
	// seen: the group's first transition was replayed (its state before
	// it was inferred from that very line).
	seen     map[hier.GroupID]bool
	opaque   []bool
	nohzFull cpumask.Mask

	rounds []*round // remote rounds in progress, innermost last

	boot    bool // the trace starts at the hierarchy's creation
	exclude bool // the kernel excludes isolated CPUs
	keyOn   bool // ... and its late initcall ran (boot traces)
	iso     hier.Isolation
	wheel   map[int]uint64 // boot traces: targets' next global timers (wheelNext)
	spans   map[int][][2]int64
	witness map[int][]int // notDueYet
	changes map[int][]int
}

func newReplayer(t *Trace, s Shape, opts hier.Options) (*replayer, error) {
	r := &replayer{ev: t.Events, rec: &recorder{}, nohzFull: opts.Isolation.NohzFull,
		gk: map[hier.GroupID]string{}, gev: map[hier.GroupID]string{}, seen: map[hier.GroupID]bool{}}
	r.boot = startsAtBoot(t.Events)
	m, err := newModel(opts, r.rec, r.boot)
	if err != nil {
		return nil, err
	}
	r.m, r.topo = m, m.topo
	r.exclude = opts.ExcludeIsolated
	r.iso = opts.Isolation
	r.rec.onUpdate = r.onUpdate
	r.rec.onActive = func(g hier.GroupID) { r.gev[g] = "" }
	r.rec.onRemoteCPU = func(cpu int) string {
		// The target's wakeup is reset to KTIME_MAX: known from now on.
		why := r.wk[cpu]
		r.wk[cpu] = ""
		return why
	}
	n := s.CPUs
	r.ek, r.wk, r.opaque = make([]string, n), make([]string, n), make([]bool, n)

	if h := t.Header.Hierarchy; h != nil {
		r.check(0, "boot line", "", h.String(), m.h.BootLine())
	}
	if m.topo == nil {
		return r, nil // a uniprocessor: no hierarchy, nothing to replay
	}
	r.ops = splitOps(t.Events)
	r.done = make([]bool, len(r.ops))
	r.clk = newClock(t, s.HZ)
	r.gm = mapGroups(t, r.topo, r.ops)
	if r.gm.err != nil {
		r.c.mismatch(*r.gm.err)
		r.ops = nil
		return r, nil
	}
	r.findOpaque()
	if r.boot {
		r.wheel = wheelNext(t.Events, r.ops)
		// Everything is known: no group is active, no CPU has an event or
		// a wakeup, and the groups' first transitions start from that.
		for _, g := range r.topo.groups {
			r.seen[g] = true
		}
		return r, nil
	}
	if err := r.seedStart(); err != nil {
		return nil, err
	}
	return r, nil
}

// startsAtBoot reports whether the trace begins with the hierarchy's
// creation: its first tmigr line creates a group. The whole state is then
// known from the start.
func startsAtBoot(events []ftrace.Event) bool {
	for _, ev := range events {
		switch ev.Data.(type) {
		case ftrace.TmigrGroupSet:
			return true
		case ftrace.Lost, ftrace.BufferStarted:
			return false
		}
		if strings.HasPrefix(ev.Name, "tmigr_") {
			return false
		}
	}
	return false
}

// check counts one comparison.
func (r *replayer) check(line int, event, why, kernel, model string) {
	switch {
	case why != "":
		r.c.undetermined(why)
	case kernel == model:
		r.c.match()
	default:
		r.c.mismatch(Mismatch{Line: line, Event: event, Kernel: kernel, Model: model})
	}
}

func first(whys ...string) string {
	for _, w := range whys {
		if w != "" {
			return w
		}
	}
	return ""
}

func fmtNS(v int64) string {
	if v == hier.KtimeMax {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

func lowest(m uint8) uint8 {
	if m == 0 {
		return hier.MigratorNone
	}
	return 1 << bits.TrailingZeros8(m)
}

// --- Knowledge -----------------------------------------------------------

// setEvUnknown records that cpu's event may differ from the kernel's; so may
// then every group event it was propagated into.
func (r *replayer) setEvUnknown(cpu int, why string) {
	if r.ek[cpu] == "" {
		r.ek[cpu] = why
	}
	for _, g := range r.topo.path[cpu] {
		if r.gev[g] == "" {
			r.gev[g] = why
		}
	}
}

// qIdle is why the events queued in an idle group g may differ from the
// kernel's: the first unknown event of its children.
func (r *replayer) qIdle(g hier.GroupID) string {
	n := r.topo.info[g]
	for _, c := range n.cpus {
		if r.ek[c] != "" {
			return r.ek[c]
		}
	}
	for _, k := range n.kids {
		if r.gev[k] != "" {
			return r.gev[k]
		}
	}
	return ""
}

// qReason is why the events queued in g may differ from the kernel's; the
// events of active children are ignored and do not count, where g's state
// is known.
func (r *replayer) qReason(g hier.GroupID, s gstate) string {
	n := r.topo.info[g]
	activeKnown := r.gk[g] == ""
	for _, c := range n.cpus {
		if activeKnown && s.active&r.topo.cpuBit[c] != 0 {
			continue
		}
		if r.ek[c] != "" {
			return r.ek[c]
		}
	}
	for _, k := range n.kids {
		if activeKnown && s.active&r.topo.info[k].bit != 0 {
			continue
		}
		if r.gev[k] != "" {
			return r.gev[k]
		}
	}
	return ""
}

// onUpdate follows the hierarchy's event updates as they happen: a child
// group's event was (re)computed from its queue.
func (r *replayer) onUpdate(child, g hier.GroupID) {
	if child != hier.NoGroup {
		r.gev[child] = r.qIdle(child)
	}
}

// volatile marks what opaque CPUs may change at any moment.
func (r *replayer) volatile() {
	for c, o := range r.opaque {
		if !o {
			continue
		}
		r.setEvUnknown(c, whyOpaque)
		r.wk[c] = whyOpaque
		for _, g := range r.topo.path[c] {
			r.gk[g] = whyOpaque
		}
	}
}

// --- Snapshots and resynchronisation ---------------------------------------

// gevt is a group's or CPU's event as far as decisions go: queued and not
// ignored, with its expiry and CPU; the zero value is "no event".
type gevt struct {
	live    bool
	expires int64
	cpu     int
}

type snapshot struct {
	st    map[hier.GroupID]gstate
	gevt  map[hier.GroupID]gevt
	cpus  []hier.CPUInfo
	evts  []seedEvt // the CPUs' live events in queue order
	idle  []bool
	wakes []int64
}

func (r *replayer) snapshot() snapshot {
	gis := r.m.h.Groups()
	s := snapshot{st: map[hier.GroupID]gstate{}, gevt: map[hier.GroupID]gevt{}}
	byName := map[string]hier.GroupID{}
	for _, gi := range gis {
		byName[gi.Name] = gi.ID
		s.st[gi.ID] = gstate{gi.Active, gi.Migrator}
	}
	for _, gi := range gis {
		for _, e := range gi.Events {
			if e.Ignore {
				continue
			}
			if g, ok := byName[e.Owner]; ok {
				s.gevt[g] = gevt{true, e.Expires, e.CPU}
			} else if c, err := strconv.Atoi(strings.TrimPrefix(e.Owner, "cpu")); err == nil {
				s.evts = append(s.evts, seedEvt{c, e.Expires})
			}
		}
	}
	for c := 0; c < r.topo.ncpus; c++ {
		ci := r.m.h.CPU(c)
		s.cpus = append(s.cpus, ci)
		s.idle = append(s.idle, ci.Idle)
		s.wakes = append(s.wakes, ci.Wakeup)
	}
	return s
}

// complete makes a set of group states consistent: a group is active in
// its parent exactly when it has an active child, and a migrator is an
// active child. Where a group and its parent disagree, the better known
// one wins: states the kernel printed or implied (keep) over states the
// model knows (gk "") over unknown ones; a parent that wins activates or
// idles the child (its lowest child, which one being unknown), a child that
// wins sets its bit in the parent. Groups changed are marked unknown with
// why unless they are in keep.
func (r *replayer) complete(st map[hier.GroupID]gstate, keep map[hier.GroupID]bool, why string) {
	rank := func(g hier.GroupID) int {
		switch {
		case keep[g]:
			return 2
		case r.gk[g] == "":
			return 1
		}
		return 0
	}
	ranks := map[hier.GroupID]int{}
	kidsOf := map[hier.GroupID]uint8{}
	for _, g := range r.topo.groups {
		ranks[g] = rank(g)
		// Only children that exist (and, at level 0, CPUs that are
		// available) can be active.
		n := r.topo.info[g]
		var kids uint8
		for _, c := range n.cpus {
			if r.m.h.CPU(c).Available {
				kids |= r.topo.cpuBit[c]
			}
		}
		for _, k := range n.kids {
			kids |= r.topo.info[k].bit
		}
		kidsOf[g] = kids
		s := st[g]
		s.active &= kids
		if s = valid(s); s != st[g] {
			st[g] = s
			r.gk[g] = first(r.gk[g], why)
		}
	}
	changed := func(g hier.GroupID, s gstate, rk int) {
		st[g] = valid(s)
		ranks[g] = rk
		if !keep[g] {
			r.gk[g] = first(r.gk[g], why)
		}
	}
	// Top-down: a better known parent decides whether its children are
	// active.
	for i := len(r.topo.groups) - 1; i >= 0; i-- {
		g := r.topo.groups[i]
		for _, k := range r.topo.info[g].kids {
			says := st[g].active&r.topo.info[k].bit != 0
			if says == (st[k].active != 0) || ranks[g] <= ranks[k] {
				continue
			}
			if says {
				low := lowest(kidsOf[k])
				if low == hier.MigratorNone {
					continue // no child can be active: the parent yields
				}
				changed(k, gstate{low, low}, ranks[g])
			} else {
				changed(k, gstate{0, hier.MigratorNone}, ranks[g])
			}
		}
	}
	// Bottom-up: the parent follows its children.
	for _, g := range r.topo.groups {
		n := r.topo.info[g]
		if n.parent == hier.NoGroup {
			continue
		}
		want := st[g].active != 0
		ps := st[n.parent]
		if (ps.active&n.bit != 0) == want {
			continue
		}
		if want {
			ps.active |= n.bit
		} else {
			ps.active &^= n.bit
		}
		changed(n.parent, ps, ranks[n.parent])
	}
}

// valid returns s with a migrator that is one of its active children (the
// lowest) or none when there is none.
func valid(s gstate) gstate {
	if s.active == 0 {
		s.migrator = hier.MigratorNone
	} else if s.migrator == hier.MigratorNone || s.active&s.migrator == 0 || bits.OnesCount8(s.migrator) != 1 {
		s.migrator = lowest(s.active)
	}
	return s
}

// resyncTo replaces the model by one whose group states are want (the
// kernel's, as printed or inferred) over the model's own for the other
// groups, completed to a consistent state. CPUs keep their events; a CPU
// that becomes idle has an unknown one.
func (r *replayer) resyncTo(want map[hier.GroupID]gstate, why string) {
	old := r.snapshot()
	st := map[hier.GroupID]gstate{}
	for g, s := range old.st {
		st[g] = s
	}
	keep := map[hier.GroupID]bool{}
	for g, s := range want {
		st[g] = s
		keep[g] = true
	}
	r.complete(st, keep, why)
	var evts []seedEvt
	for c := 0; c < r.topo.ncpus; c++ {
		idle := st[r.topo.cpuG[c]].active&r.topo.cpuBit[c] == 0
		switch {
		case idle && !old.idle[c]:
			r.setEvUnknown(c, why)
		case !idle && old.idle[c]:
			r.ek[c] = ""
		}
	}
	for _, e := range old.evts {
		if st[r.topo.cpuG[e.cpu]].active&r.topo.cpuBit[e.cpu] == 0 {
			evts = append(evts, e)
		}
	}
	avail := make([]bool, len(old.cpus))
	for c, ci := range old.cpus {
		avail[c] = ci.Available
	}
	if err := r.m.seed(st, evts, avail); err != nil {
		// complete() made the state consistent; should hier still not
		// reach it, start over from nothing known.
		for g := range st {
			st[g] = gstate{0, hier.MigratorNone}
			r.gk[g], r.gev[g] = why, why
		}
		for c := range r.ek {
			r.ek[c], r.wk[c] = why, why
		}
		if err := r.m.seed(st, nil, avail); err != nil {
			panic(err) // an idle hierarchy is always reachable
		}
	}
	nw := r.snapshot()
	for _, g := range r.topo.groups {
		if old.gevt[g] != nw.gevt[g] && r.gev[g] == "" {
			r.gev[g] = why
		}
	}
	for c := range nw.wakes {
		if nw.wakes[c] != old.wakes[c] && r.wk[c] == "" {
			r.wk[c] = why
		}
	}
}

// --- The start of the recording ------------------------------------------

// findOpaque finds CPUs whose transitions are not in the trace at all: CPUs
// that never print tmigr_cpu_active, tmigr_cpu_idle or a group transition
// of their own, although the trace shows them changing between idle and
// active. The evidence of a CPU's state besides its own lines: its bit in
// the group states other CPUs print, being the target of a remote expiry
// (it was idle), and running a task (a CPU that is not nohz_full leaves the
// idle loop, and so the hierarchy's idle state, before any task runs on
// it; a CPU the trace shows idle in the hierarchy under a task counts as
// nohz_full). (The 6.18 recordings have such a CPU: their CPU 1's idle-path
// tracepoints are all missing.) A CPU that does trace its transitions but
// is seen in a state they do not explain is not opaque: the operation that
// finds the contradiction resynchronises the model.
func (r *replayer) findOpaque() {
	const unknown, idle, active = 0, 1, 2
	state := make([]int, r.topo.ncpus)
	own := make([]bool, r.topo.ncpus)
	changed := make([]bool, r.topo.ncpus)
	saw := func(c, s int) {
		if c < 0 || c >= len(state) {
			return
		}
		if state[c] != unknown && state[c] != s {
			changed[c] = true
		}
		state[c] = s
	}
	defer func() {
		for c := range r.opaque {
			r.opaque[c] = changed[c] && !own[c]
		}
	}()
	// A CPU that goes idle in the hierarchy while running a task stops
	// its tick while busy (nohz_full, whether or not the command line says
	// so): a task running on it is no evidence.
	taskIdle := make([]bool, r.topo.ncpus)
	for _, ev := range r.ev {
		switch ev.Data.(type) {
		case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			if ev.PID != 0 && ev.CPU >= 0 && ev.CPU < len(taskIdle) {
				taskIdle[ev.CPU] = true
			}
		}
	}
	for _, ev := range r.ev {
		switch p := ev.Data.(type) {
		case ftrace.TmigrCPUActive, ftrace.TmigrCPUIdle:
			if ev.CPU >= 0 && ev.CPU < len(own) {
				own[ev.CPU] = true
			}
		case ftrace.TmigrCPUNewTimerIdle:
			saw(p.CPU, idle)
		case ftrace.TmigrHandleRemoteCPU:
			saw(p.CPU, idle)
		case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive:
			var g ftrace.TmigrGroupAndCPU
			if a, ok := p.(ftrace.TmigrGroupSetCPUActive); ok {
				g = ftrace.TmigrGroupAndCPU(a)
			} else {
				g = ftrace.TmigrGroupAndCPU(p.(ftrace.TmigrGroupSetCPUInactive))
			}
			if g.Lvl != 0 || ev.CPU < 0 || ev.CPU >= len(state) {
				break
			}
			// The CPU's own transition takes effect at this CAS (its
			// tmigr_cpu_active line comes before it, tmigr_cpu_idle
			// after), the others' bits are evidence.
			for _, c := range r.topo.info[r.topo.cpuG[ev.CPU]].cpus {
				s := idle
				if g.Active&r.topo.cpuBit[c] != 0 {
					s = active
				}
				if c == ev.CPU {
					state[c], own[c] = s, true
				} else {
					saw(c, s)
				}
			}
		default:
			if ev.PID != 0 && ev.Name != "" && ev.CPU >= 0 && ev.CPU < len(state) && !r.nohzFull.Test(ev.CPU) && !taskIdle[ev.CPU] {
				saw(ev.CPU, active)
			}
		}
	}
}

// seedStart builds the model in the state the recording starts from, as
// far as the trace reveals it: a group's state before its first transition
// follows from the state that transition printed; a CPU whose first
// operation is a deactivation was active, one whose first is an activation
// or a new timer was idle. Everything else is unknown.
func (r *replayer) seedStart() error {
	st := map[hier.GroupID]gstate{}
	for _, g := range r.topo.groups {
		st[g] = gstate{0, hier.MigratorNone}
		r.gk[g] = whyBefore
		r.gev[g] = whyEvent
	}
	for c := range r.ek {
		r.ek[c], r.wk[c] = whyEvent, whyWakeup
	}
	known := map[hier.GroupID]bool{}
	cpuState := make([]int, r.topo.ncpus) // 0 unknown, 1 idle, 2 active
	for _, o := range r.ops {
		if cpuState[o.cpu] == 0 {
			switch o.kind {
			case opActivate, opNewTimer:
				cpuState[o.cpu] = 1
			case opDeactivate:
				cpuState[o.cpu] = 2
			}
		}
		if o.kind != opActivate && o.kind != opDeactivate {
			continue
		}
		for _, i := range o.groups {
			gl := r.groupLine(i)
			if known[gl.id] || gl.id == hier.NoGroup {
				continue
			}
			known[gl.id] = true
			p := priorOf(gl.activate, gl.after, gl.childmask)
			st[gl.id] = p.s
			if !p.bad && p.alt == 0 {
				r.gk[gl.id] = ""
			}
		}
	}
	for _, g := range r.topo.groups {
		n := r.topo.info[g]
		if known[g] || len(n.cpus) == 0 {
			continue
		}
		s := gstate{0, hier.MigratorNone}
		for _, c := range n.cpus {
			if cpuState[c] == 2 {
				s.active |= r.topo.cpuBit[c]
			}
		}
		s.migrator = lowest(s.active)
		st[g] = s
	}
	r.complete(st, known, whyBefore)
	for c := range r.ek {
		if st[r.topo.cpuG[c]].active&r.topo.cpuBit[c] != 0 {
			r.ek[c] = "" // an active CPU's event is ignored
		}
	}
	r.volatile()
	avail := make([]bool, r.topo.ncpus)
	for c := range avail {
		avail[c] = true
	}
	return r.m.seed(st, nil, avail)
}

// --- Kernel lines --------------------------------------------------------

// kgroup is a group_set_cpu_* line.
type kgroup struct {
	line      int
	id        hier.GroupID
	lvl       int
	activate  bool
	after     gstate
	childmask uint8
}

func (r *replayer) groupLine(i int) kgroup {
	ev := r.ev[i]
	var g ftrace.TmigrGroupAndCPU
	act := false
	switch p := ev.Data.(type) {
	case ftrace.TmigrGroupSetCPUActive:
		g, act = ftrace.TmigrGroupAndCPU(p), true
	case ftrace.TmigrGroupSetCPUInactive:
		g = ftrace.TmigrGroupAndCPU(p)
	}
	id := hier.NoGroup
	if r.gm != nil {
		id, _ = r.gm.id(g.Group)
	} else {
		id = r.topo.at(ev.CPU, g.Lvl)
	}
	return kgroup{line: ev.Line, id: id, lvl: g.Lvl, activate: act,
		after: gstate{g.Active, g.Migrator}, childmask: uint8(g.Childmask)}
}

// prior is a group's state before a transition, inferred from the state
// the transition printed.
type prior struct {
	s   gstate
	alt uint8 // another possible migrator, 0 if none
	bad bool  // no consistent state leads to the printed one
}

// priorOf inverts one transition. Activation: the child's bit is added and
// it becomes migrator only if there was none. Deactivation: the child's bit
// is cleared (unless the child group became active again meanwhile, which
// leaves the state as it was), and if it was the migrator the lowest
// remaining bit takes over; so when the printed migrator is that lowest bit
// the old one may have been either.
func priorOf(activate bool, after gstate, m uint8) prior {
	if activate {
		p := prior{s: gstate{after.active &^ m, after.migrator}}
		if after.migrator == m {
			p.s.migrator = hier.MigratorNone
		}
		p.bad = after.active&m == 0 || (p.s.migrator == hier.MigratorNone) != (p.s.active == 0)
		return p
	}
	if after.active&m != 0 {
		return prior{s: after}
	}
	p := prior{s: gstate{after.active | m, after.migrator}}
	switch {
	case after.active == 0:
		p.s.migrator = m
		p.bad = after.migrator != hier.MigratorNone
	case after.migrator == lowest(after.active):
		p.alt = m
	case after.active&after.migrator == 0:
		p.bad = true
	}
	return p
}

func (p prior) admits(s gstate) bool {
	return s.active == p.s.active && (s.migrator == p.s.migrator || p.alt != 0 && s.migrator == p.alt)
}

// --- Running the operations ----------------------------------------------

func (r *replayer) run() {
	for i := range r.ops {
		if !r.done[i] {
			r.exec(i)
		}
	}
}

func (r *replayer) exec(i int) {
	r.done[i] = true
	o := r.ops[i]
	if len(o.lines) > 0 {
		r.line = r.ev[o.first()].Line
	}
	r.volatile()
	switch o.kind {
	case opActivate, opDeactivate:
		r.runWalk(o)
	case opNewTimer:
		r.runNewTimer(o)
	case opRemote:
		r.runRemote(i, o)
	case opPartial:
		r.runPartial(o, whyPartial)
	case opHotplug:
		r.runHotplug(o)
	case opLost:
		// Whatever the CPU did in the lost stretch is unknown: its
		// event, its wakeup and the groups on its path.
		r.setEvUnknown(o.cpu, whyLost)
		r.wk[o.cpu] = whyLost
		for _, g := range r.topo.path[o.cpu] {
			r.gk[g] = first(r.gk[g], whyLost)
		}
	}
}

// collect runs f with the recorder on and returns the lines our hierarchy
// printed. Operations replayed inside f (nested in a remote round) keep
// their own lines.
func (r *replayer) collect(f func()) []mline {
	saved, on := r.rec.lines, r.rec.on
	r.rec.lines, r.rec.on = nil, true
	r.depth++
	f()
	r.depth--
	got := r.rec.lines
	r.rec.lines, r.rec.on = saved, on
	if r.invariants && r.depth == 0 && r.invErr == nil {
		if err := r.m.h.Check(); err != nil {
			r.invErr = fmt.Errorf("near line %d: the model broke an invariant: %w", r.line, err)
		}
	}
	return got
}

// only returns the lines of ls of the given kind, in order.
func only(ls []mline, kind hier.EventKind) []mline {
	var out []mline
	for _, l := range ls {
		if l.kind == kind {
			out = append(out, l)
		}
	}
	return out
}

// preResync compares the model's states with the kernel's, as o's
// transitions imply they were just before o. Where they differ:
//
//   - another CPU's operation that the merged trace lists after o may have
//     changed the group first: if one of the next operations bridges the
//     gap (its transition leads from the model's state to the one o
//     found), it is replayed first;
//   - a group whose state is unknown (from before the recording, or
//     changed by a CPU whose transitions the trace lacks) is
//     resynchronised to the kernel's, and o is undetermined;
//   - otherwise the model's state is the kernel's as far as the trace
//     shows, and o's transitions are compared as they are: a difference is
//     a mismatch.
//
// It returns why o is undetermined ("" if nothing was unknown).
func (r *replayer) preResync(o *op) string {
	for tries := 0; ; tries++ {
		cur := r.m.states()
		bridged := false
		for _, i := range o.groups {
			gl := r.groupLine(i)
			p := priorOf(gl.activate, gl.after, gl.childmask)
			if gl.id == hier.NoGroup || p.bad || p.admits(cur[gl.id]) {
				continue
			}
			if j := r.bridge(o, gl.id, cur[gl.id], p); j >= 0 && tries < lookahead {
				r.exec(j)
				bridged = true
				break
			}
		}
		if !bridged {
			break
		}
	}
	cur := r.m.states()
	want := map[hier.GroupID]gstate{}
	why := ""
	for _, i := range o.groups {
		gl := r.groupLine(i)
		p := priorOf(gl.activate, gl.after, gl.childmask)
		// A transition no consistent state leads to, or one from a state
		// the model knows, is left to the comparison.
		if gl.id == hier.NoGroup || p.bad || p.admits(cur[gl.id]) || r.gk[gl.id] == "" {
			continue
		}
		want[gl.id] = p.s
		why = first(why, r.gk[gl.id])
	}
	if len(want) == 0 {
		return ""
	}
	r.resyncTo(want, why)
	return why
}

// A bridging transition is looked for among the next lookahead
// operations, within bridgeNS of trace time: a CPU's trace line can trail
// its compare-and-swap only as long as it took to print it.
const (
	lookahead = 32
	bridgeNS  = 1_000_000
)

// bridge returns the index of a pending operation of another CPU with a
// transition of group g from state cur to one that want admits, or -1. It
// must be the next operation of its CPU (a CPU's lines are in program
// order) and close in time to o.
func (r *replayer) bridge(o *op, g hier.GroupID, cur gstate, want prior) int {
	at := o.idx
	ts := r.ev[o.key()].TS
	blocked := map[int]bool{o.cpu: true} // CPUs with an earlier pending operation
	for j := at + 1; j < len(r.ops) && j <= at+lookahead; j++ {
		p := r.ops[j]
		if r.done[j] || blocked[p.cpu] {
			continue
		}
		blocked[p.cpu] = true
		if d := r.ev[p.key()].TS - ts; d > bridgeNS || d < -bridgeNS {
			break
		}
		if p.kind != opActivate && p.kind != opDeactivate && p.kind != opHotplug {
			continue
		}
		for _, i := range p.groups {
			gl := r.groupLine(i)
			if gl.id == g && priorOf(gl.activate, gl.after, gl.childmask).admits(cur) && want.admits(gl.after) {
				return j
			}
		}
	}
	return -1
}

// fmtGroup formats a group's state after a transition.
func fmtGroup(id hier.GroupID, s gstate) string {
	return fmt.Sprintf("%v active=%x migrator=%x", id, s.active, s.migrator)
}

// runWalk replays an activation or a deactivation.
func (r *replayer) runWalk(o *op) {
	c := o.cpu
	resynced := r.preResync(o)
	// The walk reads the states of the groups on c's path bottom-up.
	pathWhy := r.pathWhy(c, resynced)
	if o.kind == opDeactivate {
		r.ek[c] = "" // see below: known once the CPU deactivates
	}
	wBefore := r.wk[c]
	var ret int64
	ml := r.collect(func() {
		if o.kind == opActivate {
			r.m.h.Activate(c)
		} else {
			ret = r.m.h.Deactivate(c, o.nextevt)
		}
	})
	// The stored wakeup tmigr_cpu_active prints.
	if o.kind == opActivate {
		if a := only(ml, hier.EvCPUActive); len(a) == 1 {
			r.check(r.ev[o.first()].Line, "tmigr_cpu_active wakeup", wBefore, fmtNS(o.oldWakeup), fmtNS(a[0].wakeup))
		}
	}
	kind := hier.EvGroupSetCPUActive
	if o.kind == opDeactivate {
		kind = hier.EvGroupSetCPUInactive
	}
	mg := only(ml, kind)
	lastWhy := r.compareGroups(o, mg, kind, resynced, pathWhy)
	if o.kind == opActivate {
		r.ek[c], r.wk[c] = "", ""
		r.volatile()
		return
	}
	// The deactivation's result: the first event of the top group if the
	// walk left the whole hierarchy idle (then every idle CPU's event
	// counts), else KTIME_MAX.
	why := lastWhy
	if handback(o, r, mg) {
		why = first(why, r.qIdle(r.topo.top))
	}
	r.check(r.ev[o.last()].Line, "tmigr_cpu_idle", why, fmtNS(o.wakeup), fmtNS(ret))
	r.wk[c] = ""
	if ret != o.wakeup {
		r.wk[c] = first(why, whyDiverged)
	}
	r.volatile()
}

// compareGroups compares the group transitions of a walk, the kernel's
// with the model's, and then puts what the kernel printed in the model
// where it differs (after a mismatch or an undetermined replay): it is
// known from now on. It returns why the walk was undetermined.
func (r *replayer) compareGroups(o *op, mg []mline, kind hier.EventKind, resynced string, pathWhy []string) string {
	lastWhy := ""
	for k := 0; k < max(len(o.groups), len(mg)); k++ {
		why := resynced
		if k < len(pathWhy) {
			why = first(why, pathWhy[k])
		}
		line := r.ev[o.last()].Line
		kernel, model := "no transition", "no transition"
		if k < len(o.groups) {
			gl := r.groupLine(o.groups[k])
			line = gl.line
			kernel = fmtGroup(gl.id, gl.after)
			if !r.seen[gl.id] {
				why = first(why, whyFirst)
			}
		}
		if k < len(mg) {
			model = fmtGroup(mg[k].group, gstate{mg[k].active, mg[k].migrator})
			if k >= len(o.groups) && o.cut {
				why = first(why, whyPartial) // the recording ended first
			}
		}
		r.check(line, kind.String(), why, kernel, model)
		lastWhy = first(lastWhy, why)
	}
	fix := map[hier.GroupID]gstate{}
	post := r.m.states()
	for _, i := range o.groups {
		gl := r.groupLine(i)
		r.seen[gl.id] = true
		if gl.id != hier.NoGroup && post[gl.id] != gl.after {
			fix[gl.id] = gl.after
		}
	}
	if len(fix) > 0 {
		r.resyncTo(fix, first(lastWhy, whyDiverged))
	}
	for _, i := range o.groups {
		if gl := r.groupLine(i); gl.id != hier.NoGroup {
			r.gk[gl.id] = ""
		}
	}
	return lastWhy
}

// pathWhy returns, per level of cpu's path, why the states a walk reads up
// to that level may differ from the kernel's.
func (r *replayer) pathWhy(cpu int, why string) []string {
	out := make([]string, len(r.topo.path[cpu]))
	for k, g := range r.topo.path[cpu] {
		why = first(why, r.gk[g])
		out[k] = why
	}
	return out
}

// runHotplug replays a CPU coming online (tmigr_cpu_available, before
// 2025 tmigr_cpu_online) or going offline (its withdrawal walk and
// tmigr_cpu_unavailable or tmigr_cpu_offline); the isolation exclusion of
// the 2025 kernels uses the same callbacks.
func (r *replayer) runHotplug(o *op) {
	c := o.cpu
	ev := r.ev[o.last()]
	var up bool
	var printed int64
	switch p := ev.Data.(type) {
	case ftrace.TmigrCPUAvailable:
		up, printed = true, p.Wakeup
	case ftrace.TmigrCPUOnline:
		up, printed = true, p.Wakeup
	case ftrace.TmigrCPUUnavailable:
		printed = p.Wakeup
	case ftrace.TmigrCPUOffline:
		printed = p.Wakeup
	}
	ci := r.m.h.CPU(c)
	why := ""
	if ci.Available != !up {
		// The kernel's CPU was in the other state: a hotplug transition is
		// missing. Bring the model there first.
		why = whyOffline
		r.silently(func() {
			if up {
				_, _ = r.m.h.ClearAvailable(c)
			} else {
				_ = r.m.h.SetAvailable(c, false)
			}
		})
		for _, g := range r.topo.path[c] {
			r.gk[g] = first(r.gk[g], why)
		}
		r.setEvUnknown(c, why)
		r.wk[c] = why
	}
	if up {
		wWhy := first(why, r.wk[c])
		ml := r.collect(func() { _ = r.m.h.SetAvailable(c, true) })
		model := "no line"
		if a := only(ml, hier.EvCPUAvailable); len(a) == 1 {
			model = fmtNS(a[0].wakeup)
		}
		r.check(ev.Line, ev.Name+" wakeup", wWhy, fmtNS(printed), model)
		// An idle CPU joins with its event ignored (from its preparation
		// or its last activation).
		r.ek[c] = first(why, "")
		r.volatile()
		return
	}
	resynced := first(why, r.preResync(o))
	pathWhy := r.pathWhy(c, resynced)
	ml := r.collect(func() { _, _ = r.m.h.ClearAvailable(c) })
	r.compareGroups(o, only(ml, hier.EvGroupSetCPUInactive), hier.EvGroupSetCPUInactive, resynced, pathWhy)
	model := "no line"
	if a := only(ml, hier.EvCPUUnavailable); len(a) == 1 {
		model = fmtNS(a[0].wakeup)
	}
	r.check(ev.Line, ev.Name+" wakeup", resynced, fmtNS(printed), model)
	r.ek[c], r.wk[c] = "", ""
	if r.exclude && r.m.boot && !r.keyOn && r.iso.IsIsolated(c) {
		// The late initcall of the 2025 kernels withdraws the isolated
		// CPUs one by one; once all are out, the static key is on.
		out := true
		for x := 0; x < r.topo.ncpus; x++ {
			if r.iso.IsIsolated(x) && r.m.h.CPU(x).Available {
				out = false
			}
		}
		if out {
			r.silently(func() { r.m.h.InitIsolation(nil) })
			r.keyOn = true
		}
	}
	r.volatile()
}

// silently runs f on the model without recording its lines.
func (r *replayer) silently(f func()) {
	on := r.rec.on
	r.rec.on = false
	f()
	r.rec.on = on
}

// handback reports whether a deactivation (the kernel's or ours) left the
// top group idle, so that its result is the top's first event.
func handback(o *op, r *replayer, mg []mline) bool {
	if n := len(o.groups); n > 0 {
		gl := r.groupLine(o.groups[n-1])
		if gl.id == r.topo.top && gl.after.migrator == hier.MigratorNone {
			return true
		}
	}
	if n := len(mg); n > 0 && mg[n-1].group == r.topo.top && mg[n-1].migrator == hier.MigratorNone {
		return true
	}
	return false
}

// runNewTimer replays tmigr_cpu_new_timer: an idle CPU's first global
// timer may have changed.
func (r *replayer) runNewTimer(o *op) {
	c := o.cpu
	resynced := ""
	if ci := r.m.h.CPU(c); !ci.Idle {
		// The kernel calls it only on an idle CPU: its deactivation is
		// missing from the trace (the model's CPU follows the CPU's own
		// operations, so this is no model error).
		why := first(r.gk[r.topo.cpuG[c]], whyMissing)
		st := r.m.states()
		g0 := r.topo.cpuG[c]
		s := st[g0]
		s.active &^= r.topo.cpuBit[c]
		if s.active == 0 {
			s.migrator = hier.MigratorNone
		} else if s.migrator == r.topo.cpuBit[c] {
			s.migrator = lowest(s.active)
			r.gk[g0] = why
		}
		r.resyncTo(map[hier.GroupID]gstate{g0: s}, why)
		resynced = why
	}
	evWhy, wWhy := r.ek[c], r.wk[c]
	st := r.m.states()
	// The walk, if any, goes up to the first active group.
	pathWhy := resynced
	top := true
	for _, g := range r.topo.path[c] {
		pathWhy = first(pathWhy, r.gk[g])
		if st[g].active != 0 {
			top = false
			break
		}
	}
	if o.nextevt != hier.KtimeMax {
		r.ek[c] = ""
	}
	var ret int64
	ml := r.collect(func() { ret = r.m.h.NewTimer(c, o.nextevt) })
	walked := len(only(ml, hier.EvCPUNewTimer)) > 0
	if nt := only(ml, hier.EvCPUNewTimer); o.walked && walked {
		r.check(r.ev[o.first()].Line, "tmigr_cpu_new_timer wakeup", first(resynced, wWhy), fmtNS(o.oldWakeup), fmtNS(nt[0].wakeup))
	}
	// With no new expiry nothing is walked whatever the event was.
	why := resynced
	if o.nextevt != hier.KtimeMax {
		why = first(why, evWhy)
		// While another CPU expires c's timers, the kernel walks nothing
		// (that CPU walks afterwards). Replayed inside that round, the
		// model does the same; next to it, the order is unknown.
		if !r.inRemoteOf(c) && r.remoteNear(c, r.ev[o.last()].TS) {
			why = first(why, whyRace)
		}
	}
	if walked || o.walked {
		why = first(why, pathWhy)
		if top {
			why = first(why, r.qIdle(r.topo.top))
		}
	} else {
		why = first(why, wWhy)
	}
	r.check(r.ev[o.last()].Line, "tmigr_cpu_new_timer_idle", why,
		fmt.Sprintf("walk=%v wakeup=%s", o.walked, fmtNS(o.wakeup)),
		fmt.Sprintf("walk=%v wakeup=%s", walked, fmtNS(ret)))
	r.wk[c] = ""
	if ret != o.wakeup {
		r.wk[c] = first(why, whyDiverged)
	}
	r.volatile()
}

// inRemoteOf reports whether a round being replayed is expiring cpu.
func (r *replayer) inRemoteOf(cpu int) bool {
	for _, rd := range r.rounds {
		if rd.cur >= 0 && r.ev[rd.o.targets[rd.cur]].Data.(ftrace.TmigrHandleRemoteCPU).CPU == cpu {
			return true
		}
	}
	return false
}

// remoteNear reports whether the trace shows another CPU expiring cpu's
// timers around trace time ts: from its tmigr_handle_remote_cpu line to the
// last line of the walk that follows, give or take skewNS.
func (r *replayer) remoteNear(cpu int, ts int64) bool {
	if r.spans == nil {
		r.spans = map[int][][2]int64{}
		for _, o := range r.ops {
			for _, ti := range o.targets {
				x := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU
				end := r.ev[ti].TS
			walk:
				for _, i := range o.lines {
					if i <= ti {
						continue
					}
					switch r.ev[i].Data.(type) {
					case ftrace.TmigrUpdateEvents:
						end = r.ev[i].TS
					default:
						break walk
					}
				}
				r.spans[x] = append(r.spans[x], [2]int64{r.ev[ti].TS, end})
			}
		}
	}
	for _, sp := range r.spans[cpu] {
		if ts >= sp[0]-skewNS && ts <= sp[1]+skewNS {
			return true
		}
	}
	return false
}

// runPartial takes in what the lines of an incomplete operation reveal:
// the group states it printed. Everything else about its CPU is unknown.
func (r *replayer) runPartial(o *op, why string) {
	want := map[hier.GroupID]gstate{}
	for _, i := range o.groups {
		gl := r.groupLine(i)
		if gl.id != hier.NoGroup {
			want[gl.id] = gl.after
		}
	}
	r.setEvUnknown(o.cpu, why)
	r.wk[o.cpu] = why
	for _, g := range r.topo.path[o.cpu] {
		r.gk[g] = first(r.gk[g], why)
	}
	if len(want) > 0 {
		r.resyncTo(want, why)
		for g := range want {
			r.gk[g] = ""
			r.seen[g] = true
		}
	}
	// Its decisions cannot be replayed without their start: they count
	// as undetermined.
	round := false
	for _, i := range o.lines {
		switch p := r.ev[i].Data.(type) {
		case ftrace.TmigrHandleRemoteCPU:
			r.setEvUnknown(p.CPU, why)
			r.wk[p.CPU] = why
			round = true
		case ftrace.TmigrHandleRemote:
			round = true
		case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive, ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			r.c.undetermined(why)
		}
	}
	if round {
		r.c.undetermined(why)
	}
	r.volatile()
}
