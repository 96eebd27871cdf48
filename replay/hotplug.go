package replay

import (
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// CPUs going online and offline (tmigr_cpu_available, tmigr_cpu_unavailable).

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
	r.availability(c, up, ev)
	ci := r.m.h.CPU(c)
	why := known
	if ci.Available != !up {
		// The kernel's CPU was in the other state: a hotplug transition is
		// missing. Bring the model there first.
		why = reasonOffline
		r.silently(func() {
			if up {
				_, _ = r.m.h.ClearAvailable(c)
			} else {
				r.m.forceIn(c)
				_ = r.m.h.SetAvailable(c, false)
			}
		})
		for _, g := range r.topo.Path[c] {
			*r.gk.at(g) = first(*r.gk.at(g), why)
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
		r.ek[c] = first(why, known)
		r.volatile()
		return
	}
	var glBuf [8]kgroup
	gls := r.groupLines(glBuf[:0], o)
	resynced := first(why, r.preResync(o, gls))
	var pwBuf [8]reason
	pathWhy := r.pathWhy(pwBuf[:0], c, resynced)
	ml := r.collect(func() { _, _ = r.m.h.ClearAvailable(c) })
	r.compareGroups(o, gls, only(ml, hier.EvGroupSetCPUInactive), hier.EvGroupSetCPUInactive, resynced, pathWhy)
	model := "no line"
	if a := only(ml, hier.EvCPUUnavailable); len(a) == 1 {
		model = fmtNS(a[0].wakeup)
	}
	r.check(ev.Line, ev.Name+" wakeup", resynced, fmtNS(printed), model)
	r.ek[c], r.wk[c] = known, known
	if r.exclude && r.m.boot && !r.keyOn && r.iso.IsIsolated(c) {
		// The late initcall of the 2025 kernels withdraws the isolated
		// CPUs one by one; once all are out, the static key is on.
		out := true
		for x := 0; x < r.topo.NCPUs; x++ {
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

// availability decides whether the model expected the kernel to move cpu
// into (up) or out of the hierarchy at this event. In a trace from boot,
// CPUs come up as they are brought online (no decision), and before the
// late initcall of a kernel that excludes isolated CPUs has run, an
// isolated CPU leaving is that initcall's work, which the model must
// expect; every other move is a change of the machine line's at=
// (changes.go).
func (r *replayer) availability(cpu int, up bool, ev ftrace.Event) {
	if r.boot && up && !r.broughtUp.Test(cpu) {
		r.broughtUp.Set(cpu)
		return
	}
	if r.boot && !r.keyOn && !up {
		if r.exclude && r.iso.IsIsolated(cpu) {
			out := r.km.Excluded(r.iso, cpumask.Range(0, r.topo.NCPUs-1))
			r.decide(ev.Line, "availability", known, out.Test(cpu), "", "")
			return
		}
	}
	r.explainAvailability(cpu, up, ev.TS, ev.Line, ev.Name)
}
