package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Who is in the hierarchy when the recording starts.
//
// The kernel model says which CPUs are in: every online CPU before 6.19,
// and from 6.19 all but the isolated ones (package kernel, Model.Excluded).
// The trace says so too, by evidence: a CPU is in when it prints tmigr
// lines of its own, when its bit is set in a group state another CPU
// prints, when another CPU expires its timers remotely, or when an update
// of a group names it as the CPU of a child group's first event
// (child_evtcpu: an idle CPU with a timer queued, silent all along). A
// busy CPU that the model keeps in (and that is not nohz_full, whose tick
// stops under its task) is active there all the time, so its bit is set in
// every state its level-0 group prints: a printed state without it shows
// it out. A CPU that is neither busy nor seen is idle without events or
// out, which the trace cannot tell apart; it is taken as out (the 6.18
// inference: a CPU whose bit never appears in any group state and that
// never transitions is not in the hierarchy), and nothing depends on it.
//
// A CPU whose buffer lost events keeps the model's membership, its state
// unknown. Each CPU whose membership the trace shows gives one decision
// ("hierarchy membership"): the kernel's evidence against the model's
// expectation. Where they differ the model takes the kernel's membership
// from then on, so that the rest of the recording is compared on the
// kernel's terms; the mismatch has said that the model is wrong.

// membership is what the trace shows of one CPU before its first
// availability change.
type membership struct {
	in     int // index of the first event showing the CPU in the hierarchy, -1
	inWhat string
	out    int  // busy CPUs: index of the first state of its group printed without it, -1
	lost   bool // its buffer lost events meanwhile: its evidence may be gone
}

const whyMembership = "hierarchy membership"

// findMembers gathers the evidence of each CPU's membership from the start
// of the recording up to its first availability event.
func (r *replayer) findMembers() []membership {
	n := r.topo.NCPUs
	ms := make([]membership, n)
	stop := make([]bool, n) // its first availability event was reached
	for c := range ms {
		ms[c] = membership{in: -1, out: -1}
	}
	// in records line i as the first evidence that c is in, reporting
	// whether it is: the caller then says what it was (formatted only
	// then, once a CPU).
	in := func(c, i int) bool {
		if c >= 0 && c < n && !stop[c] && ms[c].in < 0 {
			ms[c].in = i
			return true
		}
		return false
	}
	// below caches, for each group, the CPUs below it and the only one of
	// them available in the model (-1 if none or several): the model does
	// not change during the pass.
	type kid struct {
		cpus []int
		only int
	}
	below := map[hier.GroupID]kid{}
	// settled reports whether nothing later in the recording can change
	// what c's evidence says (its lost events, which findLost found, are
	// all behind): the pass ends when every CPU is settled.
	settled := func(c, i int) bool {
		if stop[c] {
			return true
		}
		if ms[c].in < 0 || ms[c].out < 0 {
			return false
		}
		if !ms[c].lost {
			for _, w := range r.lostWin[c] {
				if w[1] > i {
					return false
				}
			}
		}
		return true
	}
	unsettled := n
	for i := range r.ev {
		ev := &r.ev[i]
		if i%settleEvery == 0 && unsettled > 0 {
			unsettled = 0
			for c := range n {
				if !settled(c, i) {
					unsettled++
				}
			}
			if unsettled == 0 {
				break
			}
		}
		switch p := ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			if ev.CPU >= 0 && ev.CPU < n && !stop[ev.CPU] {
				ms[ev.CPU].lost = true
			}
		case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUOffline:
			if ev.CPU >= 0 && ev.CPU < n {
				stop[ev.CPU] = true
			}
		case ftrace.TmigrHandleRemoteCPU:
			if in(p.CPU, i) {
				ms[p.CPU].inWhat = fmt.Sprintf("CPU %d expired its timers remotely", ev.CPU)
			}
		case ftrace.TmigrGroupSetCPUActive, ftrace.TmigrGroupSetCPUInactive:
			if in(ev.CPU, i) {
				ms[ev.CPU].inWhat = ev.Name + " of its own"
			}
			gl := r.groupLine(i)
			if gl.id == hier.NoGroup {
				break
			}
			n := r.topo.Node(gl.id)
			for _, c := range n.CPUs {
				if gl.after.active&r.topo.CPUBit[c] != 0 {
					if in(c, i) {
						ms[c].inWhat = fmt.Sprintf("its bit in %s", fmtGroup(gl.id, gl.after))
					}
				} else if !stop[c] && ms[c].out < 0 {
					ms[c].out = i
				}
			}
			// A child group shown idle has no active CPU below it; one
			// shown active has one, which, the only one below it the
			// model's kernel lets in (isolated CPUs are out from 6.19),
			// is in.
			for _, k := range n.Kids {
				kd, ok := below[k]
				if !ok {
					kd = kid{cpus: r.topo.CPUsBelow(k), only: -1}
					for _, c := range kd.cpus {
						if r.m.h.CPU(c).Available {
							if kd.only >= 0 {
								kd.only = -1
								break
							}
							kd.only = c
						}
					}
					below[k] = kd
				}
				if gl.after.active&r.topo.Node(k).Bit != 0 {
					if kd.only >= 0 && in(kd.only, i) {
						ms[kd.only].inWhat = fmt.Sprintf("its group's bit in %s", fmtGroup(gl.id, gl.after))
					}
					continue
				}
				for _, c := range kd.cpus {
					if !stop[c] && ms[c].out < 0 {
						ms[c].out = i
					}
				}
			}
		default:
			if ftrace.IsTmigr(ev.Data) && in(ev.CPU, i) {
				ms[ev.CPU].inWhat = ev.Name + " of its own"
			}
			// A child group's event that an update set (not ignored:
			// the printed nextevt is its expiry) names the CPU of the
			// first event below it (groupevt.cpu): that CPU is in, idle
			// with that event queued.
			if u, ok := p.(ftrace.TmigrUpdateEvents); ok && u.Child != 0 && u.NextEvt != hier.KtimeMax && u.ChildEvtExpiry == u.NextEvt && in(u.ChildEvtCPU, i) {
				ms[u.ChildEvtCPU].inWhat = fmt.Sprintf("the first event of a child group, updated by CPU %d (child_evtcpu)", ev.CPU)
			}
		}
	}
	return ms
}

// settleEvery is how often, in events, findMembers looks whether every
// CPU's evidence is settled.
const settleEvery = 4096

// checkMembers makes the start-of-recording membership decisions and
// returns which CPUs are available in the model from the start: the
// model's own choice where the trace agrees or shows nothing, the kernel's
// where it disagrees.
func (r *replayer) checkMembers(ms []membership) []bool {
	avail := make([]bool, r.topo.NCPUs)
	for c := range avail {
		modelIn := r.m.h.CPU(c).Available
		busy := r.busy.Test(c) && !r.nohzFull.Test(c)
		m := ms[c]
		model := r.memberText(c, modelIn, busy)
		// A change whose window began before the recording may have
		// moved the CPU already: where the model disagrees, the
		// recording does not show which side the CPU started on.
		moved := r.movedBeforeStart(c)
		switch {
		case m.in >= 0:
			why := known
			if moved && !modelIn {
				why = reasonPartial
			}
			r.decide(r.ev[m.in].Line, whyMembership, why, modelIn, fmt.Sprintf("CPU %d in the hierarchy (%s)", c, m.inWhat), model)
			avail[c] = true
		case busy && m.out >= 0:
			why := known
			if moved && modelIn {
				why = reasonPartial
			}
			gl := r.groupLine(m.out)
			r.decide(r.ev[m.out].Line, whyMembership, why, !modelIn,
				fmt.Sprintf("CPU %d out of the hierarchy (busy, yet not active below %s)", c, fmtGroup(gl.id, gl.after)), model)
			avail[c] = false
		case m.lost:
			// What showed it may be among the lost events: the model's
			// membership stands, and the CPU's state is unknown (seedStart).
			avail[c] = modelIn
			if busy && modelIn {
				r.decide(0, whyMembership, reasonLost, false, "", "")
			}
		default:
			// Nothing shows it in: idle without events, or out.
			avail[c] = false
			r.late[c] = modelIn
		}
	}
	return avail
}

// movedBeforeStart reports whether a change of the machine line whose
// window began before the recording's first event moves cpu.
func (r *replayer) movedBeforeStart(cpu int) bool {
	for _, k := range r.at {
		if k.begin < r.firstTS && k.diff.Test(cpu) {
			return true
		}
	}
	return false
}

// memberText is the model's expectation about cpu, in the words the
// membership check compares with the kernel's.
func (r *replayer) memberText(cpu int, in, busy bool) string {
	switch {
	case !in:
		why := r.km.ExcludedWhy(r.iso, cpu)
		if why == "" {
			why = "not online"
		}
		return fmt.Sprintf("CPU %d out of the hierarchy (%s)", cpu, why)
	case busy:
		return fmt.Sprintf("CPU %d in the hierarchy (busy: active in it)", cpu)
	}
	return fmt.Sprintf("CPU %d in the hierarchy", cpu)
}
