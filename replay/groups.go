package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/groups"
	"github.com/tmigr/tmigr/hier"
)

// Group identity.
//
// The kernel prints groups as hashed pointers, stable within one boot. Every
// walk climbs the path of one CPU, so a line about the group of level l in
// an operation of CPU c names the l-th group of c's path in our topology
// (package groups): the level-0 group of a CPU from the parent field of its
// per-CPU events, the upper groups from the walks (group_set_cpu_* lines
// and their parent fields, update_events with their child, handle_remote
// lines). A pointer that would name two groups, a group named by two
// pointers (a groups.Conflict), or a level, node or child bit the kernel
// printed differently from our topology is a contradiction: the kernel
// built another tree than ours. The first one is reported as a mismatch of
// the topology check and the tmigr check stops, since nothing after it
// could be compared.

// groupMap maps the kernel's group pointers to our groups.
type groupMap struct {
	topo *groups.Tree
	b    groups.Binding
	err  *Mismatch // the first contradiction
	// hot holds pointers id found bound, by a hash of the pointer: the
	// replay looks a group's pointer up for nearly every line it reads,
	// and a pointer once bound stays bound to its group.
	hot [64]hotGroup
}

// hotGroup is a pointer found bound, and its group.
type hotGroup struct {
	ptr uint64
	id  hier.GroupID
}

func (m *groupMap) bind(line int, ptr uint64, id hier.GroupID, what string) {
	if m.err != nil {
		return
	}
	if ptr == 0 || id == hier.NoGroup {
		if (ptr == 0) != (id == hier.NoGroup) {
			m.fail(line, fmt.Sprintf("%s=%016x", what, ptr), fmt.Sprintf("%s %v", what, id))
		}
		return
	}
	h := m.slot(ptr)
	if h.ptr == ptr && h.id == id {
		return // bound already
	}
	c := m.b.Bind(ptr, id)
	if c == nil {
		h.ptr, h.id = ptr, id
		return
	}
	if c.Was != hier.NoGroup {
		m.fail(line, fmt.Sprintf("%s=%016x, which named %v before", what, ptr, c.Was), fmt.Sprintf("%s %v", what, id))
	} else {
		m.fail(line, fmt.Sprintf("%s=%016x, but %v was %016x before", what, ptr, id, c.WasPtr), fmt.Sprintf("%s %v", what, id))
	}
}

func (m *groupMap) fail(line int, kernel, model string) {
	if m.err == nil {
		m.err = &Mismatch{Line: line, Event: "topology", Kernel: kernel, Model: model}
	}
}

// check compares a value the kernel printed about a group with ours.
func (m *groupMap) check(line int, what string, kernel, model int) {
	if kernel != model && m.err == nil {
		m.fail(line, fmt.Sprintf("%s=%d", what, kernel), fmt.Sprintf("%s=%d", what, model))
	}
}

// slot returns the place of ptr in hot.
func (m *groupMap) slot(ptr uint64) *hotGroup {
	return &m.hot[(ptr^ptr>>6^ptr>>12)%uint64(len(m.hot))]
}

// id returns our group for a pointer, hier.NoGroup for 0 or an unknown one.
func (m *groupMap) id(ptr uint64) (hier.GroupID, bool) {
	if ptr == 0 {
		return hier.NoGroup, true
	}
	h := m.slot(ptr)
	if h.ptr == ptr {
		return h.id, true
	}
	id, ok := m.b.ID(ptr)
	if ok {
		h.ptr, h.id = ptr, id
	}
	return id, ok
}

// mapGroups binds every group pointer of the trace's operations.
func mapGroups(t *Trace, x *eventIndex, topo *groups.Tree, ops []*op) *groupMap {
	m := &groupMap{topo: topo}
	ev := t.Events
	cpuOK := func(line, cpu int) bool {
		if cpu < 0 || cpu >= topo.NCPUs {
			m.fail(line, fmt.Sprintf("cpu=%d", cpu), fmt.Sprintf("%d CPUs", topo.NCPUs))
			return false
		}
		return true
	}
	// groupLine binds a group printed at level lvl on cpu's path, with its
	// parent and node.
	groupLine := func(e *ftrace.Event, cpu int, g ftrace.TmigrGroupAndCPU) {
		id := topo.At(cpu, g.Lvl)
		if id == hier.NoGroup {
			m.fail(e.Line, fmt.Sprintf("group at lvl=%d on the path of CPU %d", g.Lvl, cpu), fmt.Sprintf("%d levels above CPU %d", len(topo.Path[cpu]), cpu))
			return
		}
		n := topo.Node(id)
		m.bind(e.Line, g.Group, id, "group")
		m.bind(e.Line, g.Parent, n.Parent, "parent")
		m.check(e.Line, "numa", g.Numa, n.Node)
		m.check(e.Line, "childmask", int(g.Childmask), int(topo.PathBit(cpu, g.Lvl)))
	}
	updateLine := func(e *ftrace.Event, cpu int, u ftrace.TmigrUpdateEvents) {
		id := topo.At(cpu, u.GroupLvl)
		if id == hier.NoGroup {
			m.fail(e.Line, fmt.Sprintf("group at group_lvl=%d on the path of CPU %d", u.GroupLvl, cpu), fmt.Sprintf("%d levels above CPU %d", len(topo.Path[cpu]), cpu))
			return
		}
		m.bind(e.Line, u.Group, id, "group")
		m.bind(e.Line, u.Child, topo.At(cpu, u.GroupLvl-1), "child")
	}
	// A trace from boot shows the groups being created, GRPl:i being the
	// i-th of level l, and connected.
	created := map[int]int{}
	for _, i := range x.having(kindsOf(kTopo)) {
		e := &ev[i]
		switch p := e.Data.(type) {
		case ftrace.TmigrGroupSet:
			id := hier.GroupID{Level: p.Lvl, Index: created[p.Lvl]}
			created[p.Lvl]++
			n := topo.Node(id)
			if n == nil {
				m.fail(e.Line, fmt.Sprintf("group_set lvl=%d, group %d of its level", p.Lvl, id.Index+1), "no such group")
				return m
			}
			m.bind(e.Line, p.Group, id, "group")
			m.check(e.Line, "numa", p.Numa, n.Node)
		case ftrace.TmigrConnectCPUParent:
			if !cpuOK(e.Line, p.CPU) {
				return m
			}
			id := topo.CPUGroup[p.CPU]
			m.bind(e.Line, p.Parent, id, "parent")
			m.check(e.Line, "lvl", p.Lvl, id.Level)
			m.check(e.Line, "numa", p.Numa, topo.Node(id).Node)
			m.check(e.Line, "groupmask", int(p.Groupmask), int(topo.CPUBit[p.CPU]))
		case ftrace.TmigrConnectChildParent:
			id, ok := m.id(p.Group)
			if !ok {
				m.fail(e.Line, fmt.Sprintf("group=%016x connected before it was created", p.Group), "every group created first")
				return m
			}
			n := topo.Node(id)
			if n == nil || n.Parent == hier.NoGroup {
				m.fail(e.Line, fmt.Sprintf("parent=%016x", p.Parent), fmt.Sprintf("%v has no parent", id))
				return m
			}
			m.bind(e.Line, p.Parent, n.Parent, "parent")
			m.check(e.Line, "lvl", p.Lvl, n.Parent.Level)
			m.check(e.Line, "numa", p.Numa, topo.Node(n.Parent).Node)
			m.check(e.Line, "groupmask", int(p.Groupmask), int(n.Bit))
		}
		if m.err != nil {
			return m
		}
	}
	for _, o := range ops {
		if !cpuOK(ev[o.first()].Line, o.cpu) {
			break
		}
		// Whose path the update lines follow: the CPU's own, or in a
		// round the target's. The updates an operation cut by the
		// recording starts with may be either: they bind nothing.
		walker := o.cpu
		if o.kind == opPartial {
			walker = -1
		}
		for _, i := range o.lines {
			e := &ev[i]
			switch p := e.Data.(type) {
			case ftrace.TmigrGroupSetCPUActive:
				walker = o.cpu
				groupLine(e, o.cpu, ftrace.TmigrGroupAndCPU(p))
			case ftrace.TmigrGroupSetCPUInactive:
				walker = o.cpu
				groupLine(e, o.cpu, ftrace.TmigrGroupAndCPU(p))
			case ftrace.TmigrUpdateEvents:
				if walker >= 0 {
					updateLine(e, walker, p)
				}
			case ftrace.TmigrHandleRemote:
				walker = o.cpu
				id := topo.At(o.cpu, p.Lvl)
				if id == hier.NoGroup {
					m.fail(e.Line, fmt.Sprintf("lvl=%d", p.Lvl), fmt.Sprintf("%d levels above CPU %d", len(topo.Path[o.cpu]), o.cpu))
					break
				}
				m.bind(e.Line, p.Group, id, "group")
			case ftrace.TmigrHandleRemoteCPU:
				if cpuOK(e.Line, p.CPU) {
					walker = p.CPU
					m.bind(e.Line, p.Parent, topo.CPUGroup[p.CPU], "parent")
				}
			default:
				if cg, ok := ftrace.CPUGroupOf(p); ok && cpuOK(e.Line, cg.CPU) {
					if cg.CPU != o.cpu {
						m.fail(e.Line, fmt.Sprintf("%s for cpu=%d printed by CPU %d", p.Name(), cg.CPU, o.cpu), "an entry point runs on the CPU it names")
					}
					m.bind(e.Line, cg.Parent, topo.CPUGroup[cg.CPU], "parent")
				}
			}
		}
		if m.err != nil {
			break
		}
	}
	return m
}
