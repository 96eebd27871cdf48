package explain

import (
	"errors"
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/kernel/cmdline"
	"github.com/tmigr/tmigr/replay"
)

// builder follows a recording line by line, keeping what the trace has
// shown so far about every CPU and group, and writes the chain of each
// expiry it explains from that state at the moment the kernel decided.
type builder struct {
	rep  *Report
	win  window
	g    *kgroups
	tick int64 // ns per jiffy; the longest a softirq's lines may pause

	release     string // "Linux 6.12.118"
	kernelKnown bool
	pull        bool // the kernel has the pull hierarchy (6.9+)
	exclude     bool // ... and excludes isolated CPUs from it (6.19+)
	special     cpumask.Mask

	cpus   []cpuState
	remote *replay.RemoteExpiry // whose timers each expiry runs
	gs     map[uint64]*groupState
	timers map[uint64]Start // a timer's latest timer_start
	ran    map[uint64]ranAt // a timer's latest expiry
	traced []bool           // the CPU prints per-CPU tmigr lines somewhere
	tmigr  bool             // the recording holds timer_migration events
	// opaque holds the groups whose state changed without a line saying
	// so, somewhere in the recording: a CPU below them does not trace its
	// transitions (the 6.18 host recordings' CPU 1), so their printed
	// state is never the whole truth.
	opaque  map[uint64]bool
	seeds   []uint64         // the groups found so, before their ancestors
	last    map[uint64]uint8 // each group's active children, in the order its transitions take effect
	skip    map[int]bool     // transitions taken in earlier, by their index
	firstTS int64

	// whole is set when all of the recording is known before the first
	// step (Build): its groups, the CPUs that trace their transitions,
	// the opaque groups. A stream learns them as it reads, and the
	// builder notes where an answer it used may differ from the whole
	// recording's (unstable): the groups' (kgroups.changed), a CPU taken
	// as untraced that traces later (untraced), a group's state read
	// before it was found opaque (groupState.early), a timer armed
	// before the recording whose remote expiry its next timer_start
	// would have ruled out (pending: the rule of replay.RemoteExpiry
	// that looks ahead). o and sum are what the report keeps.
	whole    bool
	o        Options
	sum      tally
	untraced []bool
	pending  map[uint64]bool
	unstable string
}

// cpuState is what the trace has shown of one CPU.
type cpuState struct {
	idle      int8 // -1 unknown, 0 active, 1 idle (its own tmigr lines)
	since     int64
	sinceLine int
	evt       int64 // its published first global event, ns
	evtLine   int
	evtKnown  bool
	wakeup    int64
	wakeLine  int
	out       bool // left the hierarchy (tmigr_cpu_unavailable/offline)
	lost      int  // the line of a loss not yet followed by a tmigr line of this CPU
	printed   bool // some line of this CPU came before
	round     *round
	ctx       *remoteCtx
	open      map[uint64]counted // timer -> an expiry awaiting its exit
}

// round is one tmigr_handle_remote walk of a CPU.
type round struct {
	line    int
	ts      int64
	last    int64 // the time of its latest line
	partial bool  // its start is not in the trace
	visits  []visit
}

type visit struct {
	lvl   int
	group uint64
	line  int
}

// remoteCtx is the expiry of one target's timers inside a round: from
// tmigr_handle_remote_cpu to the target's walk (tmigr_update_events) or
// the round's next line.
type remoteCtx struct {
	target int
	line   int
	last   int64  // the time of its latest line
	found  uint64 // the group whose queue held the target's event, 0 unknown
	steps  []Step
}

// ranAt is where a timer last ran.
type ranAt struct {
	line           int
	ts             int64
	handler, owner int
}

// groupState is a group's state as its latest transition printed it.
type groupState struct {
	known            bool
	active, migrator uint8
	line             int
	ts               int64
	since            since  // of the migrator role (or of having none)
	unknown          string // when !known: why not (whyBefore, whyLost)
	seen             bool   // a transition was seen
	// A stream's: the transitions taken in since the group was found
	// opaque (two make its state the whole recording's: see finish), and
	// whether a chain read its state before then.
	opaqueSteps int
	early       bool
}

// since is when a migrator took its role, as far as the trace shows.
type since struct {
	ts    int64
	line  int
	exact bool   // the role began at ts; else it began then or before
	undet string // why exact is false
	// The rule that gave it, which why words: the transition of child
	// bit cm of group, and the line of the group's state before it. It
	// is worded only when a chain uses it.
	rule  rule
	group uint64
	cm    uint8
	prev  int
}

// rule names what gave a group its migrator, as transition found it.
type rule uint8

const (
	ruleLastIdle    rule = iota // the last active child went idle
	ruleTook                    // a child became active in a group without a migrator
	ruleLowest                  // handed to the lowest active child
	ruleHanded                  // handed to another than the lowest
	ruleMissed                  // a transition is missing
	ruleFirstLowest             // first shown; perhaps taken over as the lowest
	ruleFirst                   // first shown
	ruleAfterLost               // shown again after lost events
)

// why words the rule that gave the role.
func (b *builder) why(s since) string {
	who, _, ok := b.g.child(s.group, s.cm)
	if !ok {
		who = "its child " + fmt.Sprintf("%x", s.cm)
	}
	name := b.g.name(s.group)
	switch s.rule {
	case ruleLastIdle:
		return fmt.Sprintf("%s, its last active child, went idle", who)
	case ruleTook:
		return fmt.Sprintf("%s became active while %s had no active child, and took the role", who, name)
	case ruleLowest:
		return fmt.Sprintf("the lowest active child when %s went idle", who)
	case ruleHanded:
		return fmt.Sprintf("handed the role when %s went idle, though not the lowest active child", who)
	case ruleMissed:
		return fmt.Sprintf("the trace misses the transition that gave it the role (the previous state of %s, line %d, named another)", name, s.prev)
	case ruleFirstLowest:
		return fmt.Sprintf("it was the migrator already, or took over as the lowest active child when %s went idle; the recording shows %s first there", who, name)
	case ruleFirst:
		return fmt.Sprintf("it was the migrator already when the recording first shows %s", name)
	}
	return fmt.Sprintf("it was the migrator when %s's state reappears after lost events", name)
}

const noMigrator = 0xff // TMIGR_NONE

// errWhole is newBuilder's answer to a stream whose machine only the
// whole recording tells: the number of CPUs is the highest it names.
var errWhole = errors.New("the number of CPUs needs the whole recording")

// newBuilder sets the builder up for a recording with header hdr: evs
// holds all of its events, or is nil for a stream, whose events take
// tells the builder one at a time.
func newBuilder(evs []ftrace.Event, hdr ftrace.Header, o Options) (*builder, error) {
	rep := &Report{Timekeeper: -1, Undetermined: map[string]int{}}
	b := &builder{rep: rep, gs: map[uint64]*groupState{}, timers: map[uint64]Start{}, ran: map[uint64]ranAt{},
		opaque: map[uint64]bool{}, last: map[uint64]uint8{}, skip: map[int]bool{},
		pending: map[uint64]bool{}, whole: evs != nil, o: o}
	m := hdr.Machine
	if m != nil {
		rep.Machine = m.String()
	}

	// The machine.
	n := o.CPUs
	switch {
	case n > 0:
	case m != nil:
		n = m.CPUs
	case hdr.CPUs > 0:
		n = hdr.CPUs
		rep.Notes = append(rep.Notes, fmt.Sprintf("no \"# machine:\" line: %d CPUs, from the header; give the possible CPUs with --cpus", n))
	case evs == nil:
		return nil, errWhole
	default:
		n = highestCPU(evs) + 1
		rep.Notes = append(rep.Notes, fmt.Sprintf("the recording does not say how many CPUs the machine has: %d assumed (the highest it names); give them with --cpus", n))
	}
	if n < 1 || n > cpumask.MaxCPUs {
		return nil, fmt.Errorf("%d CPUs: the machine must have 1 to %d", n, cpumask.MaxCPUs)
	}
	rep.CPUs = n
	if err := checkCPUs(evs, n); err != nil {
		return nil, err
	}
	nodes := o.NodeCPUs
	if nodes == nil && m != nil && m.CPUs == n {
		nodes = m.NodeCPUs
	}
	nodeOf, err := nodeMap(nodes, n)
	if err != nil {
		return nil, err
	}
	hz := o.HZ
	if hz == 0 && m != nil {
		hz = m.HZ
	}
	b.tick = 10e6 // HZ=100, the slowest tick
	if hz > 0 {
		b.tick = 1e9 / int64(hz)
	}

	// The kernel's rules.
	rel := o.Kernel
	if rel == "" && m != nil {
		rel = m.Kernel
	}
	v := kernel.V(6, 12, 0)
	if rel != "" {
		r, err := kernel.ParseRelease(rel)
		if err != nil {
			return nil, err
		}
		v, b.kernelKnown = r.Version, true
		rep.Kernel = rel
		b.release = "Linux " + rel
	} else {
		b.release = "this kernel"
		rep.Notes = append(rep.Notes, "the recording does not name its kernel release: read with the rules of 6.9 to 6.18 (isolated CPUs stay in the hierarchy); give it with --kernel")
	}
	rep.Model = kernel.For(v)
	b.pull = rep.Model.Has(kernel.PullHierarchy)
	b.exclude = rep.Model.Has(kernel.ExcludeIsolated)

	// Isolation.
	line := o.Cmdline
	if line == "" && m != nil {
		line = m.Cmdline
	}
	if line == "" && m == nil {
		rep.Notes = append(rep.Notes, "no \"# machine:\" line: which CPUs are isolated is unknown; give the kernel's isolcpus= and nohz_full= with --cmdline")
	}
	iso, err := cmdline.ParseIsolation(line, n)
	if err != nil {
		return nil, err
	}
	for _, w := range iso.Warnings {
		rep.Notes = append(rep.Notes, "the kernel's command line: "+w)
	}
	rep.Isolated, rep.NohzFull = iso.Domain, iso.NohzFull
	rep.Excluded = iso.Domain.AndNot(iso.NohzFull)
	if !iso.NohzFull.Empty() && !iso.NohzFull.Test(0) {
		// The boot CPU keeps the timekeeping duty under nohz_full, and
		// with it its place in the hierarchy.
		rep.Timekeeper = 0
		rep.Excluded.Clear(0)
	}
	b.special = iso.Domain.Or(iso.NohzFull)

	// The groups.
	topo, err := newTopology(nodeOf)
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no hierarchy for this machine (%v): groups are named by their pointers", err))
		topo = nil
	}
	if topo != nil && hdr.Hierarchy != nil && *hdr.Hierarchy != topo.boot {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the kernel's %q differs from tmigr's %q for this machine: groups are named by their pointers; give its nodes with --node-cpus", hdr.Hierarchy.String(), topo.boot.String()))
		topo = nil
	}
	b.g = newKGroups(n, topo)
	b.cpus = make([]cpuState, n)
	b.traced = make([]bool, n)
	b.untraced = make([]bool, n)
	for c := range b.cpus {
		b.cpus[c] = cpuState{idle: -1, open: map[uint64]counted{}}
	}
	if evs == nil {
		b.remote = replay.NewRemoteExpiry(nil)
		b.win.ev = make([]ftrace.Event, 1<<12)
		return b, nil
	}
	b.remote = replay.NewRemoteExpiry(evs)
	b.win = window{ev: evs, end: len(evs)}
	b.firstTS = evs[0].TS
	if err := b.g.learn(evs); err != nil {
		return nil, err
	}
	b.g.bind()
	for _, e := range evs {
		b.survey(&e)
	}
	// Which groups are opaque, before the first step.
	for i := range evs {
		b.order(i)
	}
	clear(b.last)
	clear(b.skip)
	return b, nil
}

// take adds the next event of a stream to the window, and learns what it
// says of the machine; false when it is one the whole recording must be
// read for (a CPU beyond the machine's, lines that contradict each other:
// errors whose order the whole recording decides).
func (b *builder) take(e ftrace.Event) bool {
	if c, ok := payloadCPU(e.Data); e.CPU >= len(b.cpus) || ok && (c < 0 || c >= len(b.cpus)) {
		return false
	}
	if b.win.end == 0 {
		b.firstTS = e.TS
	}
	if err := b.g.learnOne(e); err != nil {
		return false
	}
	b.g.sync()
	b.survey(&e)
	b.win.push(e)
	return true
}

// survey takes in what the builder learns of the recording as a whole.
func (b *builder) survey(e *ftrace.Event) {
	if cg, ok := ftrace.CPUGroupOf(e.Data); ok && !b.traced[cg.CPU] {
		b.traced[cg.CPU] = true
		if b.untraced[cg.CPU] {
			b.unsure(fmt.Sprintf("CPU %d was taken as not tracing its transitions before line %d", cg.CPU, e.Line))
		}
	}
	if isTmigr(e.Data) {
		b.tmigr = true
	}
}

// isTraced says whether CPU c prints its per-CPU tmigr lines.
func (b *builder) isTraced(c int) bool {
	if !b.traced[c] {
		b.untraced[c] = true
	}
	return b.traced[c]
}

func (b *builder) unsure(why string) {
	if b.unstable == "" {
		b.unstable = why
	}
}

// finish writes what only the end of the recording tells, and for a
// stream, checks the answers the steps used against it.
func (b *builder) finish() {
	rep := b.rep
	if !b.whole {
		b.g.rebind()
		b.g.verify()
		if b.g.changed != "" {
			b.unsure(b.g.changed)
		}
		for _, g := range b.seeds {
			for ; g != 0; g = b.g.parent[g] {
				b.opaque[g] = true
			}
		}
		// A group found opaque late had its state taken in as though
		// it were not, until two transitions after: the read of an
		// opaque group's state then is the whole recording's.
		for g := range b.opaque {
			if gs := b.gs[g]; gs != nil && gs.early {
				b.unsure(fmt.Sprintf("group %016x's state was read before it was found opaque", g))
			}
		}
	}
	if b.g.dropped != "" {
		rep.Notes = append(rep.Notes, "the kernel's groups are not the ones tmigr builds for this machine ("+b.g.dropped+"): groups are named by their pointers; give its nodes with --node-cpus")
	}
	if !b.tmigr {
		if b.pull {
			rep.Notes = append(rep.Notes, "the recording holds no timer_migration events: the hierarchy's decisions cannot be shown (enable events/timer_migration as well as events/timer)")
		} else {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s predates the pull hierarchy (6.9): every timer runs on the CPU whose base it is queued on", b.release))
		}
	}
	b.summarise()
}

// transitionOf returns a group transition's fields.
func transitionOf(e *ftrace.Event) (t ftrace.TmigrGroupAndCPU, activate, ok bool) {
	switch p := e.Data.(type) {
	case ftrace.TmigrGroupSetCPUActive:
		return ftrace.TmigrGroupAndCPU(p), true, true
	case ftrace.TmigrGroupSetCPUInactive:
		return ftrace.TmigrGroupAndCPU(p), false, true
	}
	return t, false, false
}

// follows reports whether transition t, printed by its child cm, leads
// from a group whose active children were prev: it changes cm's bit
// alone.
func follows(prev uint8, t ftrace.TmigrGroupAndCPU, activate bool) bool {
	want := prev &^ uint8(t.Childmask)
	if activate {
		want = prev | uint8(t.Childmask)
	}
	return t.Active == want
}

// swapWindow is how far apart two CPUs' lines about one group may be
// printed in the wrong order: a CPU's line trails its compare-and-swap,
// and the per-CPU buffers are merged by the lines' times.
const swapWindow = 1e6

// order puts every group's transitions in the order their
// compare-and-swaps took effect; it is called for each event in turn, and
// looks ahead swapWindow. Two CPUs' transitions of one group printed the
// wrong way round show as a state that does not follow from the one
// before, followed by one that does not follow from it either, though
// both follow in the other order: the second is then taken in first. It
// returns the index of that second transition (-1 for none) and whether
// the event i is one taken in earlier. A state that no such swap explains
// changed unseen, and the group (with every group above it) is opaque.
func (b *builder) order(i int) (first int, skip bool) {
	e := b.win.at(i)
	switch e.Data.(type) {
	case ftrace.Lost, ftrace.BufferStarted:
		// What the lost lines changed starts afresh.
		for lvl := 0; lvl <= maxLevel; lvl++ {
			if g, ok := b.g.at(e.CPU, lvl); ok {
				delete(b.last, g)
			}
		}
	}
	t, act, ok := transitionOf(e)
	if !ok {
		return -1, false
	}
	if b.skip[i] {
		delete(b.skip, i)
		return -1, true
	}
	prev, seen := b.last[t.Group]
	b.last[t.Group] = t.Active
	if !seen || follows(prev, t, act) {
		return -1, false
	}
	for j := i + 1; j < b.win.end && b.win.at(j).TS-e.TS <= swapWindow; j++ {
		f := b.win.at(j)
		u, uact, ok := transitionOf(f)
		if !ok || u.Group != t.Group {
			continue
		}
		if f.CPU != e.CPU && follows(prev, u, uact) && follows(u.Active, t, act) {
			b.skip[j] = true
			return j, false
		}
		break
	}
	if !b.opaque[t.Group] {
		b.seeds = append(b.seeds, t.Group)
	}
	for g := t.Group; g != 0 && !b.opaque[g]; g = b.g.parent[g] {
		b.opaque[g] = true
	}
	return -1, false
}

func highestCPU(evs []ftrace.Event) int {
	hi := 0
	for _, e := range evs {
		hi = max(hi, e.CPU)
		if c, ok := payloadCPU(e.Data); ok {
			hi = max(hi, c)
		}
	}
	return min(hi, cpumask.MaxCPUs-1)
}

// payloadCPU is the CPU a payload names, if any.
func payloadCPU(p ftrace.Payload) (int, bool) {
	switch p := p.(type) {
	case ftrace.TimerStart:
		return p.CPU, true
	case ftrace.TmigrHandleRemoteCPU:
		return p.CPU, true
	case ftrace.TmigrConnectCPUParent:
		return p.CPU, true
	case ftrace.TimerBaseIdle:
		return p.CPU, true
	}
	if cg, ok := ftrace.CPUGroupOf(p); ok {
		return cg.CPU, true
	}
	return 0, false
}

func checkCPUs(evs []ftrace.Event, n int) error {
	for _, e := range evs {
		c, ok := payloadCPU(e.Data)
		if e.CPU >= n || ok && (c < 0 || c >= n) {
			if !ok || e.CPU >= n {
				c = e.CPU
			}
			return &ftrace.LineError{Line: e.Line, Err: fmt.Errorf("CPU %d beyond the machine's CPUs 0-%d: give its possible CPUs with --cpus", c, n-1)}
		}
	}
	return nil
}

// nodeMap returns the node of every CPU; nil lists mean one node.
func nodeMap(nodes []cpumask.Mask, n int) ([]int, error) {
	nodeOf := make([]int, n)
	if nodes == nil {
		return nodeOf, nil
	}
	all := cpumask.Range(0, n-1)
	var seen cpumask.Mask
	for i, m := range nodes {
		if !m.Subset(&all) {
			return nil, fmt.Errorf("node %d holds CPUs %s beyond the %d CPUs", i, m.AndNot(all), n)
		}
		if m.Intersects(&seen) {
			return nil, fmt.Errorf("CPUs %s are on node %d and an earlier node", m.And(seen), i)
		}
		seen = seen.Or(m)
		for c := m.First(); c >= 0; c = m.Next(c) {
			nodeOf[c] = i
		}
	}
	if missing := all.AndNot(seen); !missing.Empty() {
		return nil, fmt.Errorf("CPUs %s are on no node", missing)
	}
	return nodeOf, nil
}

func isTmigr(p ftrace.Payload) bool {
	switch p.(type) {
	case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive, ftrace.TmigrHandleRemote,
		ftrace.TmigrHandleRemoteCPU, ftrace.TmigrUpdateEvents, ftrace.TmigrGroupSet,
		ftrace.TmigrConnectChildParent, ftrace.TmigrConnectCPUParent:
		return true
	}
	_, ok := ftrace.CPUGroupOf(p)
	return ok
}

// run follows a recording held whole.
func (b *builder) run() {
	for i := range b.win.end {
		b.step(i)
	}
}

// step follows the recording's event i.
func (b *builder) step(i int) {
	first, skip := b.order(i)
	e := b.win.at(i)
	c := &b.cpus[e.CPU]
	_, remote := b.remote.Observe(e)
	switch p := e.Data.(type) {
	case ftrace.TimerInit:
		delete(b.pending, p.Timer)
	case ftrace.TimerStart:
		if b.pending[p.Timer] && p.Flags&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0 {
			b.unsure(fmt.Sprintf("line %d shows a timer armed before the recording pinned or deferrable after it expired in a remote round", e.Line))
		}
		delete(b.pending, p.Timer)
		b.timers[p.Timer] = Start{Line: e.Line, TS: e.TS, CPU: e.CPU, Base: p.CPU, Flags: p.Flags, Expires: p.Expires, HardIRQ: e.Flags.HardIRQ()}
	case ftrace.TimerExpireEntry:
		b.expire(e, p, remote)
	case ftrace.TimerExpireExit:
		if x, ok := c.open[p.Timer]; ok {
			delete(c.open, p.Timer)
			b.exited(x, e.TS-x.ts)
		}
	case ftrace.TmigrCPUIdle:
		b.endRound(c)
		c.idle, c.since, c.sinceLine = 1, e.TS, e.Line
		c.evt, c.evtLine, c.evtKnown = p.NextEvt, e.Line, true
		c.wakeup, c.wakeLine = p.Wakeup, e.Line
	case ftrace.TmigrCPUNewTimerIdle:
		b.endRound(c)
		c.evt, c.evtLine, c.evtKnown = p.NextEvt, e.Line, true
		c.wakeup, c.wakeLine = p.Wakeup, e.Line
	case ftrace.TmigrCPUActive:
		b.endRound(c)
		c.idle, c.since, c.sinceLine = 0, e.TS, e.Line
	case ftrace.TmigrCPUNewTimer:
		b.endRound(c)
	case ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
		b.endRound(c)
		c.out = true
	case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline:
		b.endRound(c)
		c.out = false
	case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive:
		b.endRound(c)
		if skip {
			break
		}
		if first >= 0 {
			f := b.win.at(first)
			t, act, _ := transitionOf(f)
			b.transition(f, t, act)
		}
		t, act, _ := transitionOf(e)
		b.transition(e, t, act)
	case ftrace.TmigrUpdateEvents:
		c.ctx = nil
	case ftrace.TmigrHandleRemote:
		c.ctx = nil
		if p.Lvl == 0 || c.round == nil {
			c.round = &round{line: e.Line, ts: e.TS, partial: p.Lvl != 0}
		}
		c.round.last = e.TS
		c.round.visits = append(c.round.visits, visit{lvl: p.Lvl, group: p.Group, line: e.Line})
	case ftrace.TmigrHandleRemoteCPU:
		b.remoteCPU(e, p)
	case ftrace.Lost, ftrace.BufferStarted:
		b.lost(e)
	}
	if isTmigr(e.Data) {
		c.lost = 0
	}
	c.printed = true
}

func (b *builder) endRound(c *cpuState) {
	c.round, c.ctx = nil, nil
}

// lost forgets what the lost events of a CPU may have changed: its own
// state, the groups of its path, its round.
func (b *builder) lost(e *ftrace.Event) {
	c := &b.cpus[e.CPU]
	c.lost = e.Line
	c.idle, c.evtKnown = -1, false
	b.endRound(c)
	for lvl := 0; lvl <= maxLevel; lvl++ {
		ptr, ok := b.g.at(e.CPU, lvl)
		if !ok {
			break
		}
		gs := b.group(ptr)
		gs.known, gs.unknown = false, whyLost
	}
}

// state is a group's state for a chain to read; nil before any line
// showed it.
func (b *builder) state(ptr uint64) *groupState {
	gs := b.gs[ptr]
	if gs != nil && gs.opaqueSteps < 2 {
		gs.early = true
	}
	return gs
}

func (b *builder) group(ptr uint64) *groupState {
	gs := b.gs[ptr]
	if gs == nil {
		gs = &groupState{unknown: whyBefore}
		b.gs[ptr] = gs
	}
	return gs
}

// transition takes in a group's new state, and when its migrator took the
// role: the kernel's rules (tmigr_active_up, tmigr_inactive_up) are that a
// child becoming active takes the role only in a group without a migrator,
// and a migrator going idle hands it to the lowest active child, or to
// none when it was the last.
func (b *builder) transition(e *ftrace.Event, t ftrace.TmigrGroupAndCPU, activate bool) {
	gs := b.group(t.Group)
	cm := uint8(t.Childmask)
	m := t.Migrator
	s := since{ts: e.TS, line: e.Line, exact: true, group: t.Group, cm: cm}
	switch {
	case m == noMigrator:
		s.rule = ruleLastIdle
	case activate && m == cm:
		s.rule = ruleTook
	case gs.known && gs.migrator == m:
		s = gs.since
	case gs.known && !activate && gs.migrator == cm:
		s.rule = ruleLowest
		if m != lowest(t.Active) {
			s.rule = ruleHanded
		}
	case gs.known:
		s.exact, s.undet = false, whyDisagree
		s.rule, s.prev = ruleMissed, gs.line
	default:
		s.exact, s.undet = false, gs.unknown
		if !gs.seen {
			s.undet = whyFirst
		}
		s.rule = ruleFirst
		if !activate && m == lowest(t.Active) {
			s.rule = ruleFirstLowest
		}
		if gs.unknown == whyLost {
			s.rule = ruleAfterLost
		}
	}
	gs.known, gs.seen, gs.unknown = true, true, ""
	gs.active, gs.migrator, gs.line, gs.ts, gs.since = t.Active, m, e.Line, e.TS, s
	if b.opaque[t.Group] {
		gs.known, gs.unknown = false, whyOpaque
		gs.opaqueSteps++
	}
}

// remoteCPU starts the expiry of a target's timers inside a round, and
// writes the chain of decisions that brought them to the handler.
func (b *builder) remoteCPU(e *ftrace.Event, p ftrace.TmigrHandleRemoteCPU) {
	c := &b.cpus[e.CPU]
	r := c.round
	if r == nil {
		r = &round{line: e.Line, ts: e.TS, partial: true}
		c.round = r
	}
	r.last = e.TS
	x := &remoteCtx{target: p.CPU, line: e.Line, last: e.TS}
	if n := len(r.visits); n > 0 {
		x.found = r.visits[n-1].group
	}
	if p.CPU != e.CPU {
		x.steps = b.chain(*e, p, r)
	} else {
		x.steps = b.selfChain(*e, p)
	}
	c.ctx = x
}

// expire explains one timer_expire_entry, if it is foreign or on an
// isolated or nohz_full CPU; remote says whether it runs inside the
// remote expiry the CPU's round started (replay.RemoteExpiry).
func (b *builder) expire(e *ftrace.Event, p ftrace.TimerExpireEntry, remote bool) {
	h := e.CPU
	c := &b.cpus[h]
	b.rep.Expiries++
	x := Expiry{Line: e.Line, TS: e.TS, Handler: h, Owner: h, Function: p.Function, Timer: p.Timer, Kind: Own, Duration: -1}
	if st, ok := b.timers[p.Timer]; ok {
		x.Start = &st
	}
	st := x.Start
	if remote && st == nil && !b.whole {
		b.pending[p.Timer] = true
	}
	ctx := c.ctx
	if !remote {
		// A softirq of its own after the round, whose end the trace
		// need not print (an idle top, or a target that woke, prints
		// no walk).
		ctx = nil
	}
	if ctx != nil {
		ctx.last = e.TS
		if c.round != nil {
			c.round.last = e.TS
		}
		x.Owner = ctx.target
		if x.Owner != h {
			x.Kind = Foreign
		}
		x.Steps = append(b.ownerSteps(&x, p, ctx), ctx.steps...)
	} else {
		c.round, c.ctx = nil, nil
		x.Steps = b.ownerSteps(&x, p, nil)
	}
	prev, hadRun := b.ran[p.Timer]
	b.ran[p.Timer] = ranAt{line: e.Line, ts: e.TS, handler: h, owner: x.Owner}
	if hadRun && st != nil && x.Kind == Own && st.CPU == h && prev.handler == h && prev.owner >= 0 && prev.owner != h && st.Line > prev.line {
		x.Steps = append(x.Steps, Step{Kind: StepOwner, Line: prev.line, TS: prev.ts, CPU: prev.owner, Text: fmt.Sprintf(
			"it came from CPU %d: CPU %d ran it for CPU %d at %s (line %d), and when it was re-armed on CPU %d it was queued there, since a timer is queued on the CPU that arms it",
			prev.owner, h, prev.owner, ftrace.FormatTS(prev.ts)+" s", prev.line, h)})
	}
	listed := x.Kind == Foreign || b.special.Test(h) ||
		x.Kind == UnknownOwner && st != nil && st.Base != h
	if !listed {
		return
	}
	x.Steps = append(x.Steps, b.isolationSteps(&x, ctx)...)
	x.Why = b.sentence(&x)
	for _, s := range x.Steps {
		if s.Undetermined != "" {
			b.rep.Undetermined[s.Undetermined]++
		}
	}
	at := b.count(&x)
	at.ts = x.TS
	if b.keep(x.Handler) {
		at.event = len(b.rep.Events)
		b.rep.Events = append(b.rep.Events, x)
	}
	c.open[p.Timer] = at
}

// keep says whether Report.Events keeps the next expiry handler h ran
// (Options.Events).
func (b *builder) keep(h int) bool {
	if b.o.Events == 0 {
		return true
	}
	if !b.o.EventCPUs.Empty() && !b.o.EventCPUs.Test(h) {
		return false
	}
	return len(b.rep.Events) < b.o.Events
}
