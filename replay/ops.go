package replay

import (
	"sort"

	"github.com/tmigr/tmigr/ftrace"
)

// opKind is the hierarchy entry point an operation of the trace ran.
type opKind uint8

const (
	opActivate   opKind = iota // tmigr_cpu_activate
	opDeactivate               // tmigr_cpu_deactivate
	opNewTimer                 // tmigr_cpu_new_timer
	opRemote                   // tmigr_handle_remote (one timer softirq's round)
	opPartial                  // lines of an operation whose start is missing
	opHotplug                  // availability changes (online/offline)
	opLost                     // a marker: the CPU's buffer lost events here
)

var opNames = [...]string{"activate", "deactivate", "new_timer", "handle_remote", "partial", "hotplug", "lost"}

func (k opKind) String() string { return opNames[k] }

// op is one call of a hierarchy entry point as the trace shows it: the
// lines one CPU printed during that call. The kernel calls these entry
// points with interrupts off (the remote round runs in the timer softirq
// and no entry point nests in it), so the lines of one CPU never mix two
// operations.
type op struct {
	idx   int   // its index in the replay order
	cpu   int   // the CPU running it
	lines []int // indexes into Trace.Events, in order

	// Activate: tmigr_cpu_active's wakeup (the stored value before the
	// reset). NewTimer: the old wakeup printed by tmigr_cpu_new_timer.
	oldWakeup int64
	// Deactivate and NewTimer: the argument and the result.
	nextevt, wakeup int64
	kind            opKind
	// NewTimer: the kernel walked (printed tmigr_cpu_new_timer).
	walked bool
	// closed: the operation's last line was seen (tmigr_cpu_idle,
	// tmigr_cpu_new_timer_idle); rounds never close.
	closed bool
	// cut: the recording may have stopped in the middle of the operation
	// (it is its CPU's last, or lost events follow): lines may be missing
	// at its end.
	cut bool

	groups  []int // tmigr_group_set_cpu_{active,inactive}
	updates []int // tmigr_update_events
	// round: the lines only a remote round prints, nil for the other
	// operations (nearly all: an operation holds no room for them).
	round *roundLines
}

// roundLines are the lines of a remote round's levels and targets.
type roundLines struct {
	levels  []int // tmigr_handle_remote
	targets []int // tmigr_handle_remote_cpu
}

// levels returns the operation's tmigr_handle_remote lines.
func (o *op) levels() []int {
	if o.round == nil {
		return nil
	}
	return o.round.levels
}

// targets returns the operation's tmigr_handle_remote_cpu lines.
func (o *op) targets() []int {
	if o.round == nil {
		return nil
	}
	return o.round.targets
}

// roundOf returns o's round lines, made at the first.
func (o *op) roundOf() *roundLines {
	if o.round == nil {
		o.round = &roundLines{}
	}
	return o.round
}

func (o *op) first() int { return o.lines[0] }

// lineAfter returns o's first line after event index i, or -1.
func (o *op) lineAfter(i int) int {
	for _, x := range o.lines {
		if x > i {
			return x
		}
	}
	return -1
}

func (o *op) last() int { return o.lines[len(o.lines)-1] }

// key is where the operation takes effect for the other CPUs: an
// activation at its first group transition (tmigr_cpu_active is printed
// just before it), every other operation at its first line (a deactivation
// starts with its transition, a new timer and a remote round with the
// locked sections they print).
func (o *op) key() int {
	if o.kind == opActivate && len(o.groups) > 0 {
		return o.groups[0]
	}
	return o.lines[0]
}

// splitOps groups the tmigr lines of a trace into operations, ordered by
// their key.
//
// It makes two passes: the first finds which operation each line joins
// and in which of its lists, counting their lengths; the second fills the
// lists, each made at its exact size in one array for all (a recording
// holds an operation for every few lines, all kept to the end, and lists
// grown a line at a time would leave their copies behind).
func splitOps(events []ftrace.Event) []*op {
	// The operations, in the order they start, are allocated in blocks;
	// the list of them is made at its size at the end.
	var blocks [][]op
	n := 0
	var sizes opSizesTab
	owner := make([]int32, len(events)) // the operation a line joins, by its place in ops, +1; 0: none
	roles := make([]lineRole, len(events))
	var cur, round []*op // per CPU: the operation its lines go to; its last round (below)
	at := func(l []*op, cpu int) *op {
		if cpu < 0 || cpu >= len(l) {
			return nil
		}
		return l[cpu]
	}
	set := func(l *[]*op, cpu int, o *op) {
		if cpu < 0 {
			return // no reader makes one (Run refuses it)
		}
		for cpu >= len(*l) {
			*l = append(*l, nil)
		}
		(*l)[cpu] = o
	}
	add := func(o *op, i int, role lineRole) {
		owner[i], roles[i] = int32(o.idx+1), role
		sizes.at(o.idx).add(role, i)
	}
	start := func(kind opKind, cpu, i int, role lineRole) *op {
		if k := len(blocks); k == 0 || len(blocks[k-1]) == opBlock {
			blocks = append(blocks, make([]op, 0, opBlock))
		}
		b := &blocks[len(blocks)-1]
		*b = append(*b, op{kind: kind, cpu: cpu, idx: n})
		o := &(*b)[len(*b)-1]
		n++
		sizes.grow()
		add(o, i, role)
		set(&cur, cpu, o)
		return o
	}
	// open reports whether cpu's current operation is of kind and still
	// takes lines.
	open := func(cpu int, kinds ...opKind) *op {
		o := at(cur, cpu)
		if o == nil || o.closed {
			return nil
		}
		for _, k := range kinds {
			if o.kind == k {
				return o
			}
		}
		return nil
	}
	// join adds line i to o in role, or starts an operation of kind with
	// it when there is no o to join.
	join := func(o *op, kind opKind, cpu, i int, role lineRole) *op {
		if o == nil {
			return start(kind, cpu, i, role)
		}
		add(o, i, role)
		return o
	}
	// round is, per CPU, its last round while only activations and
	// deactivations of its own (and lines of other subsystems) have
	// followed it: on a nohz_full CPU an
	// interrupt's exit inside the round may stop or restart the tick, and
	// so deactivate or activate the CPU, before the round goes on a level
	// up (tick_irq_exit, kernel/softirq.c).
	for i := range events {
		ev := &events[i]
		cpu := ev.CPU
		switch ev.Data.(type) {
		case ftrace.TmigrCPUNewTimer, ftrace.TmigrCPUNewTimerIdle, ftrace.TmigrHandleRemoteCPU,
			ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline,
			ftrace.Lost, ftrace.BufferStarted:
			if at(cur, cpu) != at(round, cpu) {
				set(&round, cpu, nil) // the round is over
			}
		}
		switch p := ev.Data.(type) {
		case ftrace.TmigrCPUActive:
			o := start(opActivate, cpu, i, roleLine)
			o.oldWakeup = p.Wakeup
		case ftrace.TmigrGroupSetCPUActive:
			join(open(cpu, opActivate, opPartial), opPartial, cpu, i, roleGroup)
		case ftrace.TmigrGroupSetCPUInactive:
			join(open(cpu, opDeactivate), opDeactivate, cpu, i, roleGroup)
		case ftrace.TmigrUpdateEvents:
			o := open(cpu, opDeactivate, opNewTimer, opRemote, opPartial)
			if o != nil && o.kind == opNewTimer && !o.walked {
				o = nil
			}
			join(o, opPartial, cpu, i, roleUpdate)
		case ftrace.TmigrCPUIdle:
			o := join(open(cpu, opDeactivate), opPartial, cpu, i, roleLine)
			o.nextevt, o.wakeup, o.closed = p.NextEvt, p.Wakeup, true
		case ftrace.TmigrCPUNewTimer:
			o := start(opNewTimer, cpu, i, roleLine)
			o.walked, o.oldWakeup = true, p.Wakeup
		case ftrace.TmigrCPUNewTimerIdle:
			o := open(cpu, opNewTimer)
			if o != nil && !o.walked {
				o = nil
			}
			o = join(o, opNewTimer, cpu, i, roleLine)
			o.nextevt, o.wakeup, o.closed = p.NextEvt, p.Wakeup, true
		case ftrace.TmigrHandleRemote:
			// A round starts at level 0; a higher level without one is
			// the rest of a round the recording cut.
			o, kind := open(cpu, opRemote), opPartial
			if r := at(round, cpu); o == nil && r != nil && p.Lvl > 0 && nested(r, at(cur, cpu), &sizes) &&
				events[sizes.at(r.idx).lastLevel].Data.(ftrace.TmigrHandleRemote).Lvl == p.Lvl-1 {
				// The round goes on a level up after its CPU's
				// operations that ran inside it (runRemote replays
				// them there).
				o = r
				set(&cur, cpu, r)
			}
			if p.Lvl == 0 {
				o, kind = nil, opRemote
			}
			o = join(o, kind, cpu, i, roleLevel)
			if o.kind == opRemote {
				set(&round, cpu, o)
			}
		case ftrace.TmigrHandleRemoteCPU:
			join(open(cpu, opRemote, opPartial), opPartial, cpu, i, roleTarget)
		case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
			o := join(open(cpu, opDeactivate), opHotplug, cpu, i, roleLine)
			o.kind, o.closed = opHotplug, true
		case ftrace.Lost, ftrace.BufferStarted:
			o := start(opLost, cpu, i, roleLine)
			o.closed = true
		}
	}
	ops := make([]*op, 0, n)
	for _, b := range blocks {
		for k := range b {
			ops = append(ops, &b[k])
		}
	}
	// The last operation of a CPU, or one before lost events, may have
	// lost lines at its end.
	var last []*op
	for _, o := range ops {
		if o.kind == opLost {
			if p := at(last, o.cpu); p != nil {
				p.cut = true
			}
		}
		set(&last, o.cpu, o)
	}
	for _, o := range last {
		if o != nil {
			o.cut = true
		}
	}
	// A walking new timer without its last line, an activation without a
	// transition, and a deactivation without its last line that the
	// recording did not cut there lost their ends: replay them as partial.
	// A deactivation the recording cut after its first transitions made
	// those compare-and-swaps, and other CPUs' walks may have read them:
	// it is replayed as a deactivation, and what it did not print is
	// unknown (runWalk).
	for _, o := range ops {
		groups := sizes.at(o.idx).n[roleGroup]
		switch {
		case o.kind == opDeactivate && events[sizes.at(o.idx).firstGroup].Data.(ftrace.TmigrGroupSetCPUInactive).Lvl > 0:
			// A deactivation's walk starts at level 0: one whose first
			// line is above was cut at the start (a recording that
			// begins in its middle).
			o.kind = opPartial
		case o.kind == opDeactivate && !o.closed && !o.cut,
			o.kind == opNewTimer && !o.closed,
			o.kind == opActivate && groups == 0:
			o.kind = opPartial
		}
	}
	fillLines(ops, &sizes, owner, roles)
	sort.SliceStable(ops, func(a, b int) bool { return ops[a].key() < ops[b].key() })
	for i, o := range ops {
		o.idx = i
	}
	return ops
}

// lineRole is the list of its operation a line goes to, beside lines.
type lineRole uint8

const (
	roleLine   lineRole = iota // lines only
	roleGroup                  // groups
	roleUpdate                 // updates
	roleLevel                  // the round's levels
	roleTarget                 // the round's targets
	nRoles
)

// opSizes counts, while splitOps finds them, an operation's lines of each
// role, with what the split reads of its lists before they are made.
type opSizes struct {
	all        int32         // every line (the lines list)
	n          [nRoles]int32 // lines of each role (n[roleLine] unused)
	firstGroup int32         // its first group transition, -1
	lastLevel  int32         // its last tmigr_handle_remote line, -1
}

func (s *opSizes) add(role lineRole, i int) {
	if role == roleLine {
		s.all++
		return
	}
	s.n[role]++
	switch {
	case role == roleGroup && s.firstGroup < 0:
		s.firstGroup = int32(i)
	case role == roleLevel:
		s.lastLevel = int32(i)
	}
}

// opSizesTab holds the sizes of the operations, by their place in the
// order they start, in blocks: they are as many as the operations, and a
// slice grown one at a time would leave its copies behind.
type opSizesTab struct{ blocks [][]opSizes }

// grow adds the sizes of the next operation.
func (t *opSizesTab) grow() {
	n := len(t.blocks)
	if n == 0 || len(t.blocks[n-1]) == opBlock {
		t.blocks = append(t.blocks, make([]opSizes, 0, opBlock))
		n++
	}
	t.blocks[n-1] = append(t.blocks[n-1], opSizes{firstGroup: -1, lastLevel: -1})
}

// at returns the sizes of the k-th operation to start.
func (t *opSizesTab) at(k int) *opSizes { return &t.blocks[k/opBlock][k%opBlock] }

// fillLines makes the operations' lists of lines at the sizes counted,
// in one array, and fills them in the trace's order.
func fillLines(ops []*op, sizes *opSizesTab, owner []int32, roles []lineRole) {
	total := 0
	for k := range ops {
		sz := sizes.at(k)
		sz.all += sz.n[roleGroup] + sz.n[roleUpdate] + sz.n[roleLevel] + sz.n[roleTarget]
		total += int(sz.all) + int(sz.n[roleGroup]+sz.n[roleUpdate]+sz.n[roleLevel]+sz.n[roleTarget])
	}
	arr := make([]int, 0, total)
	take := func(n int32) []int {
		if n == 0 {
			return nil
		}
		l := arr[len(arr) : len(arr) : len(arr)+int(n)]
		arr = arr[:len(arr)+int(n)]
		return l
	}
	for k, o := range ops {
		sz := sizes.at(k)
		o.lines = take(sz.all)
		o.groups = take(sz.n[roleGroup])
		o.updates = take(sz.n[roleUpdate])
		if sz.n[roleLevel]+sz.n[roleTarget] > 0 {
			o.round = &roundLines{levels: take(sz.n[roleLevel]), targets: take(sz.n[roleTarget])}
		}
	}
	for i, k := range owner {
		if k == 0 {
			continue
		}
		o := ops[k-1]
		o.lines = append(o.lines, i)
		switch roles[i] {
		case roleGroup:
			o.groups = append(o.groups, i)
		case roleUpdate:
			o.updates = append(o.updates, i)
		case roleLevel:
			o.round.levels = append(o.round.levels, i)
		case roleTarget:
			o.round.targets = append(o.round.targets, i)
		}
	}
}

// nested reports whether o, the operation of round r's CPU after r, is
// one that an interrupt's exit inside the round may have run: a complete
// activation, deactivation or new timer (on a nohz_full CPU whose base is
// idle, tick_irq_exit re-evaluates the stopped tick, and so its next
// timer: tmigr_cpu_new_timer).
func nested(r, o *op, sizes *opSizesTab) bool {
	switch {
	case o == nil || o == r:
		return false
	case o.kind == opDeactivate, o.kind == opNewTimer:
		return o.closed
	case o.kind == opActivate:
		return sizes.at(o.idx).n[roleGroup] > 0
	}
	return false
}

// opBlock is how many operations splitOps allocates at once.
const opBlock = 1024
