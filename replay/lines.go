package replay

import (
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// The kernel's lines of an operation, as the replay reads them.

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
	ev := &r.ev[i]
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
		id = r.topo.At(ev.CPU, g.Lvl)
	}
	return kgroup{line: ev.Line, id: id, lvl: g.Lvl, activate: act,
		after: gstate{g.Active, g.Migrator}, childmask: uint8(g.Childmask)}
}

// groupLines appends the group lines of o (groupLine of each of o.groups)
// to buf: a walk's resynchronisation and comparison read each several
// times, and decoding it once reads its event once.
func (r *replayer) groupLines(buf []kgroup, o *op) []kgroup {
	for _, i := range o.groups {
		buf = append(buf, r.groupLine(i))
	}
	return buf
}

// prior is a group's state before a transition, inferred from the state
// the transition printed.
type prior struct {
	s   gstate
	alt uint8 // another possible migrator, 0 if none
	// set is a bit that may already have been set in s.active, 0 if
	// none: an activation above level 0 whose child's bit another CPU's
	// deactivation had not cleared yet.
	set uint8
	bad bool // no consistent state leads to the printed one
}

// priorOf inverts one transition of a group of level lvl. Activation: the
// child's bit is added (or-ed in: tmigr_active_up, 6.9+, sets it whether
// or not it was set) and it becomes migrator only if there was none.
// Above level 0 the bit may still be set (with the child still the
// migrator, or another): a deactivation of another CPU
// of the child group cleared the child's last bit, and the activation
// found the child idle and climbed here, before that deactivation's walk
// cleared the child's bit here (tmigr_inactive_up reads the child's state
// again at its compare-and-swap, and then leaves the bit). At level 0
// the bit is the CPU's own, cleared by its own deactivation before.
// Deactivation: the child's bit
// is cleared (unless the child group became active again meanwhile, which
// leaves the state as it was), and if it was the migrator the lowest
// remaining bit takes over; so when the printed migrator is that lowest bit
// the old one may have been either.
func priorOf(activate bool, after gstate, m uint8, lvl int) prior {
	if activate {
		p := prior{s: gstate{after.active &^ m, after.migrator}}
		if after.migrator == m {
			p.s.migrator = hier.MigratorNone
			if lvl > 0 {
				// Or the bit was still set with the child still the
				// migrator: the deactivation below that cleared the
				// child's last bit had not reached this level.
				p.set, p.alt = m, m
			}
		} else if lvl > 0 {
			// A migrator was there: the bit may have been set too.
			p.set = m
		}
		// With no migrator before, no bit was set, unless the child was
		// still the migrator (above).
		p.bad = after.active&m == 0 || p.alt != m && (p.s.migrator == hier.MigratorNone) != (p.s.active == 0)
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
	return (s.active == p.s.active || p.set != 0 && s.active == p.s.active|p.set) && (s.migrator == p.s.migrator || p.alt != 0 && s.migrator == p.alt)
}
