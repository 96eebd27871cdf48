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
func splitOps(events []ftrace.Event) []*op {
	var ops []*op
	cur := map[int]*op{} // per CPU, the operation its lines go to
	// The operations are allocated in blocks (a recording holds one for
	// every few lines, all kept to the end).
	var block []op
	start := func(kind opKind, cpu, i int) *op {
		if len(block) == cap(block) {
			block = make([]op, 0, opBlock)
		}
		block = append(block, op{kind: kind, cpu: cpu, lines: []int{i}})
		o := &block[len(block)-1]
		ops = append(ops, o)
		cur[cpu] = o
		return o
	}
	// open reports whether cpu's current operation is of kind and still
	// takes lines.
	open := func(cpu int, kinds ...opKind) *op {
		o := cur[cpu]
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
	// join adds line i to o, or starts an operation of kind with it when
	// there is no o to join.
	join := func(o *op, kind opKind, cpu, i int) *op {
		if o == nil {
			return start(kind, cpu, i)
		}
		o.lines = append(o.lines, i)
		return o
	}
	// round is, per CPU, its last round while only activations and
	// deactivations of its own (and lines of other subsystems) have
	// followed it: on a nohz_full CPU an
	// interrupt's exit inside the round may stop or restart the tick, and
	// so deactivate or activate the CPU, before the round goes on a level
	// up (tick_irq_exit, kernel/softirq.c).
	round := map[int]*op{}
	for i, ev := range events {
		cpu := ev.CPU
		switch ev.Data.(type) {
		case ftrace.TmigrCPUNewTimer, ftrace.TmigrCPUNewTimerIdle, ftrace.TmigrHandleRemoteCPU,
			ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline,
			ftrace.Lost, ftrace.BufferStarted:
			if cur[cpu] != round[cpu] {
				delete(round, cpu) // the round is over
			}
		}
		switch p := ev.Data.(type) {
		case ftrace.TmigrCPUActive:
			o := start(opActivate, cpu, i)
			o.oldWakeup = p.Wakeup
		case ftrace.TmigrGroupSetCPUActive:
			o := join(open(cpu, opActivate, opPartial), opPartial, cpu, i)
			o.groups = append(o.groups, i)
		case ftrace.TmigrGroupSetCPUInactive:
			o := join(open(cpu, opDeactivate), opDeactivate, cpu, i)
			o.groups = append(o.groups, i)
		case ftrace.TmigrUpdateEvents:
			o := open(cpu, opDeactivate, opNewTimer, opRemote, opPartial)
			if o != nil && o.kind == opNewTimer && !o.walked {
				o = nil
			}
			o = join(o, opPartial, cpu, i)
			o.updates = append(o.updates, i)
		case ftrace.TmigrCPUIdle:
			o := join(open(cpu, opDeactivate), opPartial, cpu, i)
			o.nextevt, o.wakeup, o.closed = p.NextEvt, p.Wakeup, true
		case ftrace.TmigrCPUNewTimer:
			o := start(opNewTimer, cpu, i)
			o.walked, o.oldWakeup = true, p.Wakeup
		case ftrace.TmigrCPUNewTimerIdle:
			o := open(cpu, opNewTimer)
			if o != nil && !o.walked {
				o = nil
			}
			o = join(o, opNewTimer, cpu, i)
			o.nextevt, o.wakeup, o.closed = p.NextEvt, p.Wakeup, true
		case ftrace.TmigrHandleRemote:
			// A round starts at level 0; a higher level without one is
			// the rest of a round the recording cut.
			o, kind := open(cpu, opRemote), opPartial
			if r := round[cpu]; o == nil && r != nil && p.Lvl > 0 && nested(events, r, cur[cpu]) &&
				events[r.levels()[len(r.levels())-1]].Data.(ftrace.TmigrHandleRemote).Lvl == p.Lvl-1 {
				// The round goes on a level up after its CPU's
				// operations that ran inside it (runRemote replays
				// them there).
				o, cur[cpu] = r, r
			}
			if p.Lvl == 0 {
				o, kind = nil, opRemote
			}
			o = join(o, kind, cpu, i)
			rl := o.roundOf()
			rl.levels = append(rl.levels, i)
			if o.kind == opRemote {
				round[cpu] = o
			}
		case ftrace.TmigrHandleRemoteCPU:
			o := join(open(cpu, opRemote, opPartial), opPartial, cpu, i)
			rl := o.roundOf()
			rl.targets = append(rl.targets, i)
		case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
			o := join(open(cpu, opDeactivate), opHotplug, cpu, i)
			o.kind, o.closed = opHotplug, true
		case ftrace.Lost, ftrace.BufferStarted:
			o := start(opLost, cpu, i)
			o.closed = true
		}
	}
	// A deactivation or a walking new timer without its last line, and an
	// activation without a transition, lost their ends: replay them as
	// partial. The last operation of a CPU, or one before lost events, may
	// have lost lines at its end.
	last := map[int]*op{}
	for _, o := range ops {
		if o.kind == opLost {
			if p := last[o.cpu]; p != nil {
				p.cut = true
			}
		}
		last[o.cpu] = o
		switch {
		case o.kind == opDeactivate && !o.closed,
			o.kind == opNewTimer && !o.closed,
			o.kind == opActivate && len(o.groups) == 0:
			o.kind = opPartial
		case o.kind == opDeactivate && events[o.groups[0]].Data.(ftrace.TmigrGroupSetCPUInactive).Lvl > 0:
			// A deactivation's walk starts at level 0: one whose first
			// line is above was cut at the start (a recording that
			// begins in its middle).
			o.kind = opPartial
		}
	}
	for _, o := range last {
		o.cut = true
	}
	var lines []int
	for _, o := range ops {
		lines = o.compact(lines)
	}
	sort.SliceStable(ops, func(a, b int) bool { return ops[a].key() < ops[b].key() })
	for i, o := range ops {
		o.idx = i
	}
	return ops
}

// nested reports whether o, the operation of round r's CPU after r, is
// one that an interrupt's exit inside the round may have run: a complete
// activation, deactivation or new timer (on a nohz_full CPU whose base is
// idle, tick_irq_exit re-evaluates the stopped tick, and so its next
// timer: tmigr_cpu_new_timer).
func nested(events []ftrace.Event, r, o *op) bool {
	switch {
	case o == nil || o == r:
		return false
	case o.kind == opDeactivate, o.kind == opNewTimer:
		return o.closed
	case o.kind == opActivate:
		return len(o.groups) > 0
	}
	return false
}

// opBlock is how many operations splitOps allocates at once.
const opBlock = 1024

// compact moves o's lists of lines, grown one line at a time, into block,
// the free part of an array shared by many operations (a new one when it
// is full), each list of its exact size: a recording holds an operation
// for every few lines, and the slack of their growth would outweigh the
// lines. It returns what is left of block.
func (o *op) compact(block []int) []int {
	n := len(o.lines) + len(o.groups) + len(o.updates) + len(o.levels()) + len(o.targets())
	if cap(block)-len(block) < n {
		block = make([]int, 0, max(n, opBlock*8))
	}
	take := func(l []int) []int {
		if l == nil {
			return nil
		}
		block = append(block, l...)
		return block[len(block)-len(l) : len(block) : len(block)]
	}
	o.lines = take(o.lines)
	o.groups = take(o.groups)
	o.updates = take(o.updates)
	if rl := o.round; rl != nil {
		rl.levels = take(rl.levels)
		rl.targets = take(rl.targets)
	}
	return block
}
