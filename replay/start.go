package replay

import (
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
