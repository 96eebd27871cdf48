package host

import (
	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
)

// Role is who expires whose global timers in the steady state of the
// setup: the busy CPUs active, every other CPU idle with a timer pending.
type Role struct {
	// Group is the group whose idle children's events Handler expires;
	// Handler is its migrator (-1: no CPU of the whole hierarchy is active,
	// so the last CPU to go idle wakes for the first event of all).
	Group   string
	Level   int
	Handler int
	// Owners are the idle CPUs below those children.
	Owners cpumask.Mask
}

// hierarchy builds the hierarchy as the kernel does (sized for the
// possible CPUs and nodes, the present CPUs brought up in ascending order,
// the online ones available, isolated ones excluded by the model) and
// brings it to the steady state of the default workload: the busy CPUs
// (and, under nohz_full, the timekeeper) active, the others idle with a
// timer pending. A busy nohz_full CPU is idle there: its tick stops. The
// roles read off it do not depend on the timer mix, unlike the prediction.
func (r *Report) hierarchy() {
	if r.Policy != cpu.Pull && r.Policy != cpu.PullIsolated {
		return
	}
	exclude := r.Policy == cpu.PullIsolated
	iso := hier.Isolation{Domain: r.Domain, NohzFull: r.NohzFull, Timekeeper: -1}
	if exclude {
		iso.CpusetIsolated = r.Partition
	}
	if !r.NohzFull.Empty() {
		iso.Timekeeper = r.Timekeeper
	}
	h, err := hier.New(hier.Options{NodeOf: r.NodeOf, Nodes: r.Nodes, ExcludeIsolated: exclude, Isolation: iso})
	if err != nil {
		r.notef("no hierarchy drawn: %v", err)
		return
	}
	for c := r.Present.First(); c >= 0; c = r.Present.Next(c) {
		if err := h.Prepare(c); err != nil {
			r.warnf("the kernel cannot bring CPU %d up into its hierarchy (it WARNs): %v", c, err)
		}
	}
	for c := r.Online.First(); c >= 0; c = r.Online.Next(c) {
		_ = h.SetAvailable(c, false) // prepared above, or already warned about
	}
	h.InitIsolation(nil)
	if exclude && !r.Partition.Empty() {
		h.ExcludeIsolated(r.Domain.Or(r.Partition), nil)
	}
	r.Hierarchy, r.BootLine = h, h.BootLine()
	if r.BootLine == "" {
		return
	}
	r.Picture = h.Picture()

	busy := r.Domain.Or(r.NohzFull).Or(r.Partition).And(r.Online)
	for c := r.Online.First(); c >= 0; c = r.Online.Next(c) {
		stopsTick := !busy.Test(c) || r.NohzFull.Test(c)
		if stopsTick && !(c == r.Timekeeper && !r.NohzFull.Empty()) {
			h.Deactivate(c, int64(1e12)+int64(c))
		}
	}
	r.Roles = roles(h)
	isolated := r.Domain.Or(r.NohzFull).Or(r.Partition)
	for _, ro := range r.Roles {
		if ro.Handler >= 0 && isolated.Test(ro.Handler) {
			r.IsolatedMigrators.Set(ro.Handler)
		}
	}
}

// roles reads who expires whose events off the hierarchy's state.
func roles(h *hier.Hierarchy) []Role {
	gs := h.Groups()
	byName := make(map[string]*hier.GroupInfo, len(gs))
	for i := range gs {
		byName[gs[i].Name] = &gs[i]
	}
	available := h.Available()
	var under func(g *hier.GroupInfo) cpumask.Mask
	under = func(g *hier.GroupInfo) cpumask.Mask {
		var m cpumask.Mask
		for _, c := range g.CPUs {
			m.Set(c)
		}
		for _, ch := range g.Children {
			if cg := byName[ch]; cg != nil {
				m = m.Or(under(cg))
			}
		}
		return m.And(available)
	}
	migrators := hier.MigratorCPUs(gs)
	var out []Role
	for i := range gs {
		g := &gs[i]
		var owners cpumask.Mask
		for bit := 0; bit < g.NumChildren; bit++ {
			if g.Active&(1<<bit) != 0 {
				continue
			}
			if g.Level == 0 && bit < len(g.CPUs) && available.Test(g.CPUs[bit]) {
				owners.Set(g.CPUs[bit])
			}
			if g.Level > 0 && bit < len(g.Children) {
				if cg := byName[g.Children[bit]]; cg != nil {
					owners = owners.Or(under(cg))
				}
			}
		}
		if owners.Empty() {
			continue
		}
		handler := migrators[i]
		if handler < 0 && g.Parent != "" {
			continue // the group is idle: its event goes up
		}
		out = append(out, Role{Group: g.Name, Level: g.Level, Handler: handler, Owners: owners})
	}
	return out
}
