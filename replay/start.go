package replay

import (
	"math/bits"
	"slices"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// The start of the recording: what the first lines reveal of the state
// before them.

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
	state := make([]int, r.topo.NCPUs)
	own := make([]bool, r.topo.NCPUs)
	changed := make([]bool, r.topo.NCPUs)
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
			if r.opaque[c] = changed[c] && !own[c]; r.opaque[c] {
				r.opaqueCPUs = append(r.opaqueCPUs, c)
			}
		}
	}()
	// A CPU out of the hierarchy has no bit in any group and its tasks
	// say nothing of a hierarchy state: only while it is available is
	// what the trace shows of it evidence.
	avail := append([]bool(nil), r.avail0...)
	// A CPU that goes idle in the hierarchy while running a task stops
	// its tick while busy (nohz_full, whether or not the command line says
	// so): a task running on it is no evidence.
	taskIdle := make([]bool, r.topo.NCPUs)
	for _, ei := range r.x.having(kindsOf(kIdle)) {
		ev := &r.ev[ei]
		switch ev.Data.(type) {
		case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			if ev.PID != 0 && ev.CPU >= 0 && ev.CPU < len(taskIdle) {
				taskIdle[ev.CPU] = true
			}
		}
	}
	// Markers before the first other event were kept from before the
	// stretch the recording holds (a window keeps its recording's change
	// markers): the task that wrote one ran then, not within it.
	kept := 0
	for kept < len(r.ev) {
		if _, ok := r.ev[kept].Data.(ftrace.TracingMark); !ok {
			break
		}
		kept++
	}
	for i := range r.ev {
		ev := &r.ev[i]
		if i%settleEvery == 0 && !slices.Contains(own, false) {
			break // every CPU traces its transitions: none is opaque
		}
		if i < kept {
			continue
		}
		switch ev.Data.(type) {
		case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline:
			if ev.CPU >= 0 && ev.CPU < len(avail) {
				avail[ev.CPU] = true
			}
		case ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
			if ev.CPU >= 0 && ev.CPU < len(avail) {
				avail[ev.CPU] = false
			}
		}
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
			for _, c := range r.topo.Node(r.topo.CPUGroup[ev.CPU]).CPUs {
				s := idle
				if g.Active&r.topo.CPUBit[c] != 0 {
					s = active
				}
				if c == ev.CPU {
					state[c], own[c] = s, true
				} else if avail[c] || s == active {
					saw(c, s)
				}
			}
		default:
			if ev.PID != 0 && ev.Name != "" && ev.CPU >= 0 && ev.CPU < len(state) && avail[ev.CPU] && !r.nohzFull.Test(ev.CPU) && !taskIdle[ev.CPU] {
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
	for _, g := range r.topo.Groups {
		st[g] = gstate{0, hier.MigratorNone}
		*r.gk.at(g) = reasonBefore
		*r.gev.at(g) = reasonEvent
	}
	for c := range r.ek {
		r.ek[c], r.wk[c] = reasonEvent, reasonWakeup
	}
	knownGroups := map[hier.GroupID]bool{}
	// unknown counts the tree's groups not yet in knownGroups, unset the
	// CPUs whose state is not yet known: the look ends when both are 0.
	unknown, unset := len(r.topo.Groups), r.topo.NCPUs
	cpuState := make([]int, r.topo.NCPUs) // 0 unknown, 1 idle, 2 active
	for k, o := range r.ops {
		if unknown == 0 && unset == 0 {
			break
		}
		if cpuState[o.cpu] == 0 {
			switch o.kind {
			case opActivate, opNewTimer:
				cpuState[o.cpu] = 1
				unset--
			case opDeactivate:
				cpuState[o.cpu] = 2
				unset--
			}
		}
		if o.kind != opActivate && o.kind != opDeactivate || unknown == 0 {
			continue
		}
		for _, i := range o.groups {
			gl := r.groupLine(i)
			if knownGroups[gl.id] || gl.id == hier.NoGroup {
				continue
			}
			knownGroups[gl.id] = true
			if r.topo.Node(gl.id) != nil {
				unknown--
			}
			p := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl)
			if q, ok := r.casFirst(k, i, p); ok {
				p = q
			}
			st[gl.id] = p.s
			switch {
			case !p.bad && p.alt == 0:
				*r.gk.at(gl.id) = known
			case !p.bad:
				*r.gk.at(gl.id) = reasonMigrator // the active children are known
			}
		}
	}
	constant := r.constantCPUs(cpuState)
	for _, g := range r.topo.Groups {
		n := r.topo.Node(g)
		if knownGroups[g] || len(n.CPUs) == 0 {
			continue
		}
		s := gstate{0, hier.MigratorNone}
		for _, c := range n.CPUs {
			if cpuState[c] == 2 {
				s.active |= r.topo.CPUBit[c]
			}
		}
		s.migrator = lowest(s.active)
		st[g] = s
	}
	r.complete(st, knownGroups, reasonBefore)
	r.constantGroups(st, knownGroups, constant)
	// A CPU the states make active is in the hierarchy, though no line
	// showed it (complete() gave a group shown active by its parent its
	// lowest CPU, which of its CPUs being unknown), where the model's
	// kernel lets it in: a recording that begins while the group's CPUs
	// are busy and silent.
	for c := range r.avail0 {
		if !r.avail0[c] && r.m.h.CPU(c).Available && st[r.topo.CPUGroup[c]].active&r.topo.CPUBit[c] != 0 {
			r.avail0[c] = true
		}
	}
	for c := range r.ek {
		if st[r.topo.CPUGroup[c]].active&r.topo.CPUBit[c] != 0 || !r.avail0[c] {
			// An active CPU's event is ignored; one out of the hierarchy
			// has none there.
			r.ek[c] = known
		}
		if !r.avail0[c] {
			r.wk[c] = known
		}
	}
	// A CPU that may have lost its lines before it showed anything is
	// unknown, and so is everything above it.
	for c, l := range r.lostAtStart {
		if l && r.avail0[c] {
			r.setEvUnknown(c, reasonLost)
			r.wk[c] = reasonLost
			for _, g := range r.topo.Path[c] {
				*r.gk.at(g) = first(*r.gk.at(g), reasonLost)
			}
		}
	}
	// A group without an available CPU below it is idle and has no
	// event: known, whatever the recording shows of it.
	for _, g := range r.topo.Groups {
		if r.emptyGroup(g) {
			*r.gk.at(g), *r.gev.at(g) = known, known
		}
	}
	r.volatile()
	return r.m.seed(st, nil, r.avail0)
}

// eventless clears knowledge.late for the silent CPUs that the recording
// shows have no event that counts:
//
//  1. A group on the CPU's path printed its next expiry as KTIME_MAX
//     (tmigr_update_events' group_next_expiry): an idle CPU's event is
//     queued in its level-0 group and goes up with each group's first
//     event, and a silent CPU's state and event do not change, so that it
//     had none, or was active (its event ignored), or out.
//  2. A change of the machine line took it out before the recording's
//     first event: its timers and event went with it (timers_dead_cpu,
//     tmigr_cpu_offline).
func (r *replayer) eventless() {
	if !slices.Contains(r.late, true) {
		return // no CPU to clear
	}
	empty := map[hier.GroupID]bool{}
	for _, o := range r.ops {
		for _, i := range o.updates {
			if u, ok := r.ev[i].Data.(ftrace.TmigrUpdateEvents); ok && u.NextExpiry == hier.KtimeMax {
				if id, ok := r.gm.id(u.Group); ok {
					empty[id] = true
				}
			}
		}
	}
	for c, l := range r.late {
		if !l {
			continue
		}
		for _, k := range r.at {
			if k.leave.Test(c) && k.done < r.firstTS {
				r.late[c] = false
			}
		}
		for _, g := range r.topo.Path[c] {
			if empty[g] {
				r.late[c] = false
				break
			}
		}
		r.anyLate = r.anyLate || r.late[c]
	}
}

// emptyGroup reports whether no CPU below g was available when the
// recording began.
func (r *replayer) emptyGroup(g hier.GroupID) bool {
	n := r.topo.Node(g)
	for _, c := range n.CPUs {
		if r.avail0[c] {
			return false
		}
	}
	for _, k := range n.Kids {
		if !r.emptyGroup(k) {
			return false
		}
	}
	return true
}

// constantCPUs finds the CPUs the recording shows in one state throughout:
// available, with no transition of their own (no activation, deactivation,
// availability change, partial operation or lost events), and either
// idle (they publish a new timer or another CPU expires their timers) or
// active (busy, or a task runs on them, and not nohz_full, whose tick
// stops under a task). It sets their state in cpuState (1 idle, 2 active).
func (r *replayer) constantCPUs(cpuState []int) []bool {
	n := r.topo.NCPUs
	moves, idle, task := make([]bool, n), make([]bool, n), make([]bool, n)
	for _, o := range r.ops {
		switch o.kind {
		case opNewTimer:
			idle[o.cpu] = true
		case opRemote:
			for _, ti := range o.targets() {
				if x := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU; x >= 0 && x < n {
					idle[x] = true
				}
			}
		default:
			moves[o.cpu] = true
		}
	}
	for ei, tasks := 0, 0; ei < len(r.ev) && tasks < n; ei++ {
		ev := &r.ev[ei]
		if ev.PID != 0 && ev.CPU >= 0 && ev.CPU < n && !task[ev.CPU] {
			if _, ok := ev.Data.(ftrace.TracingMark); !ok {
				task[ev.CPU] = true
				tasks++ // all seen: the rest can add none
			}
		}
	}
	out := make([]bool, n)
	for c := range out {
		if !r.avail0[c] || moves[c] {
			continue
		}
		switch {
		case idle[c]:
			out[c], cpuState[c] = true, 1
		case (task[c] || r.busy.Test(c)) && !r.nohzFull.Test(c):
			out[c], cpuState[c] = true, 2
		}
	}
	return out
}

// whyMigrator is why a group whose active children are known, more than
// one, has an unknown migrator: the first of them to become active, before
// the recording.
const whyMigrator = "migrator from before the recording"

// constantGroups marks known the states of the groups the recording never
// shows in transition whose children are all in one state throughout
// (constant CPUs, groups without an available CPU, known groups): their
// active mask is then known, and so is their migrator when at most one
// child is active; with more, the migrator is unknown (whyMigrator).
func (r *replayer) constantGroups(st map[hier.GroupID]gstate, knownGroups map[hier.GroupID]bool, constant []bool) {
	for _, g := range r.topo.Groups {
		if knownGroups[g] {
			continue
		}
		n := r.topo.Node(g)
		ok := true
		for _, c := range n.CPUs {
			if r.avail0[c] && !constant[c] {
				ok = false
			}
		}
		for _, k := range n.Kids {
			if *r.gk.at(k) != known && *r.gk.at(k) != reasonMigrator {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch bits.OnesCount8(st[g].active) {
		case 0, 1:
			*r.gk.at(g) = known
		default:
			*r.gk.at(g) = reasonMigrator
		}
	}
}

// casFirst looks, for the first transition of a group, printed on line i
// by operation k, for the next operation of another CPU whose transition
// of that group left exactly the state k's read (p), printed before line i,
// within skewNS after it (two CPUs' stamps order their lines only beyond
// skewNS), or later by a CPU that printed nothing in between: a CPU's
// transition line follows its compare-and-swap in program order, and a
// vCPU descheduled between the two stamps the line late; a line of its
// own printed after line i would put its compare-and-swap after k's (as
// bridge's silent). Its compare-and-swap came first, and the group started
// from the state that one read. Replayed, it bridges to k's (preResync).
func (r *replayer) casFirst(k, i int, p prior) (prior, bool) {
	g, ts := r.groupLine(i).id, r.ev[i].TS
	next := map[int]bool{r.ops[k].cpu: true} // CPUs past their next operation
	for j := k + 1; j < len(r.ops) && j <= k+lookahead; j++ {
		q := r.ops[j]
		if next[q.cpu] {
			continue
		}
		next[q.cpu] = true
		if q.kind != opActivate && q.kind != opDeactivate {
			continue
		}
		for _, l := range q.groups {
			gl := r.groupLine(l)
			if gl.id != g {
				continue
			}
			if qp := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl); !qp.bad && p.admits(gl.after) && (r.ev[l].TS-ts <= skewNS || r.silent(q.cpu, i, l)) {
				return qp, true
			}
			break
		}
	}
	return prior{}, false
}
