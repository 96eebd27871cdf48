package replay

import (
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Operations the recording cut: what their lines reveal.

// runPartial takes in what the lines of an incomplete operation reveal:
// the group states it printed. Everything else about its CPU is unknown.
func (r *replayer) runPartial(o *op, why reason) {
	want := map[hier.GroupID]gstate{}
	for _, i := range o.groups {
		gl := r.groupLine(i)
		if gl.id != hier.NoGroup {
			want[gl.id] = gl.after
		}
	}
	r.setEvUnknown(o.cpu, why)
	r.wk[o.cpu] = why
	for _, g := range r.topo.Path[o.cpu] {
		*r.gk.at(g) = first(*r.gk.at(g), why)
	}
	if len(want) > 0 {
		r.resyncTo(want, why)
		for g := range want {
			*r.gk.at(g) = known
			*r.seen.at(g) = true
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
			r.c.undeterminedBy(r.ev[i].Line, why)
		}
	}
	if round {
		r.c.undeterminedBy(r.ev[o.first()].Line, why)
	}
	r.volatile()
}
