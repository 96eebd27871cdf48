package replay

import (
	"github.com/tmigr/tmigr/hier"
)

// What the replay knows of the model's state: whether each part of it
// is the kernel's (see the package documentation).

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
	activeKnown := r.gk[g] == "" || r.gk[g] == whyMigrator
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
