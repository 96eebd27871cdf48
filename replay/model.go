package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/groups"
	"github.com/tmigr/tmigr/hier"
)

// mline is one tracepoint our hierarchy emitted, with the fields the
// replay compares.
type mline struct {
	kind             hier.EventKind
	group, parent    hier.GroupID
	child            hier.GroupID
	active, migrator uint8
	childmask        uint8
	cpu              int
	wakeup, nextevt  int64
	why              reason // handle_remote_cpu: why the target's wakeup may differ from the kernel's
}

// recorder is the hierarchy's Tracer: it keeps the lines of the operation
// being replayed and tells the knowledge bookkeeping about event updates
// while they happen (a walk propagates bottom-up, each step from what the
// previous one left).
type recorder struct {
	on          bool
	lines       []mline
	onUpdate    func(child, group hier.GroupID)
	onActive    func(group hier.GroupID)
	onRemoteCPU func(cpu int) reason
	// onCAS is called after every group transition, right after its
	// compare-and-swap (no group lock held), once the line is recorded.
	onCAS func()
	// onRemote is called when a round enters a group (tmigr_handle_remote:
	// no lock held), once the line is recorded.
	onRemote func()
	// onPoint is called at hier's interleaving points (hier.Interleave).
	onPoint func(p hier.Point, cpu int, g hier.GroupID)
	// states is every group's state as the hierarchy's transitions left
	// it (nil: not known, read it whole): every compare-and-swap of a
	// group's state is followed by its tracepoint, which carries the new
	// state, so the model need not read the whole hierarchy after each.
	states *groupStates
}

// groupStates is the state of each group (the zero state for a group
// not in the hierarchy), in a table by level and index: the replay reads
// it for nearly every line.
type groupStates = byGroup[gstate]

// interleave implements hier.Interleave.
func (r *recorder) interleave(p hier.Point, cpu int, g hier.GroupID, _ int) {
	if r.onPoint != nil {
		r.onPoint(p, cpu, g)
	}
}

// Trace implements hier.Tracer.
func (r *recorder) Trace(e hier.Event) {
	switch e.Kind {
	case hier.EvGroupSetCPUActive, hier.EvGroupSetCPUInactive:
		if r.states != nil {
			*r.states.at(e.Group) = gstate{e.Active, e.Migrator}
		}
	case hier.EvGroupSet, hier.EvConnectChildParent, hier.EvConnectCPUParent:
		// The hierarchy grows: read it whole again.
		r.states = nil
	}
	if !r.on {
		return
	}
	l := mline{kind: e.Kind, cpu: e.CPU, wakeup: e.Wakeup, nextevt: e.NextEvt}
	switch e.Kind {
	case hier.EvGroupSet, hier.EvConnectChildParent, hier.EvConnectCPUParent:
		return
	case hier.EvHandleRemote:
		l = mline{kind: e.Kind, group: e.Group}
	case hier.EvHandleRemoteCPU:
		if r.onRemoteCPU != nil {
			l.why = r.onRemoteCPU(e.CPU)
		}
	case hier.EvGroupSetCPUActive, hier.EvGroupSetCPUInactive:
		l = mline{kind: e.Kind, group: e.Group, parent: e.Parent, active: e.Active, migrator: e.Migrator, childmask: e.Childmask}
	case hier.EvUpdateEvents:
		l = mline{kind: e.Kind, group: e.Group, child: e.Child, nextevt: e.NextEvt, active: e.GroupActive}
	}
	r.lines = append(r.lines, l)
	switch e.Kind {
	case hier.EvGroupSetCPUActive:
		if r.onActive != nil {
			r.onActive(e.Group)
		}
	case hier.EvUpdateEvents:
		if r.onUpdate != nil {
			r.onUpdate(e.Child, e.Group)
		}
	}
	if (e.Kind == hier.EvGroupSetCPUActive || e.Kind == hier.EvGroupSetCPUInactive) && r.onCAS != nil {
		r.onCAS()
	}
	if e.Kind == hier.EvHandleRemote && r.onRemote != nil {
		r.onRemote()
	}
}

// gstate is a group's state word without its sequence counter.
type gstate struct{ active, migrator uint8 }

func (s gstate) String() string {
	return fmt.Sprintf("active=%x migrator=%x", s.active, s.migrator)
}

// model is our hierarchy, as the replay drives it.
type model struct {
	opts hier.Options
	h    *hier.Hierarchy
	rec  *recorder
	topo *groups.Tree
	boot bool
	// statesOf is the hierarchy rec.states describes.
	statesOf *hier.Hierarchy
}

// newModel builds the hierarchy of the trace's machine with every CPU
// prepared in ascending order, as the kernel brings them up, idle, with no
// event, and available unless boot (a trace that starts at boot brings
// them online itself).
func newModel(opts hier.Options, rec *recorder, boot bool) (*model, error) {
	m := &model{opts: opts, rec: rec, boot: boot}
	// Not at boot: every CPU online, the model's isolation leaving out
	// whom it excludes (nil). At boot: none yet.
	var avail []bool
	if boot {
		avail = make([]bool, len(opts.NodeOf))
	}
	if err := m.fresh(avail); err != nil {
		return nil, err
	}
	if m.h.Levels() > 0 {
		t, err := groups.NewTree(m.h)
		if err != nil {
			return nil, err
		}
		m.topo = t
	}
	return m, nil
}

// fresh replaces the hierarchy by a new one whose available CPUs are idle
// and have no event: those of avail, or with nil every CPU the model's
// isolation lets in.
func (m *model) fresh(avail []bool) error {
	if m.opts.ExcludeIsolated {
		// A CPU the kernel showed in although the model excludes it
		// (a mismatch already counted) joins: the model follows the
		// kernel's membership from then on.
		for c, a := range avail {
			if a && m.opts.Isolation.IsIsolated(c) {
				m.opts.Isolation.Domain.Clear(c)
				m.opts.Isolation.CpusetIsolated.Clear(c)
			}
		}
	}
	o := m.opts
	o.Tracer = m.rec
	o.Interleave = m.rec.interleave
	h, err := hier.New(o)
	if err != nil {
		return err
	}
	for c := 0; c < h.CPUs(); c++ {
		if err := h.Prepare(c); err != nil {
			return err
		}
	}
	// With the 2025 exclusion, isolated CPUs are out after the late
	// initcall: in a trace that starts later, switch the key on first, so
	// that the online callbacks leave them out. A trace from boot shows
	// them join and leave.
	if !m.boot {
		h.InitIsolation(nil)
	}
	for c := 0; c < h.CPUs(); c++ {
		if avail == nil || avail[c] {
			if err := h.SetAvailable(c, true); err != nil {
				return err
			}
		}
	}
	m.h = h
	return nil
}

// states returns every group's state, a map of the caller's own.
func (m *model) states() map[hier.GroupID]gstate {
	cur := m.current()
	s := map[hier.GroupID]gstate{}
	for _, gi := range m.h.Groups() {
		s[gi.ID] = *cur.at(gi.ID)
	}
	return s
}

// state returns group g's state now.
func (m *model) state(g hier.GroupID) gstate {
	return *m.current().at(g)
}

// current is the recorder's table of the groups' states, read from the
// hierarchy when it was replaced. A table read before stays as it was:
// the new one is made afresh.
func (m *model) current() *groupStates {
	if m.rec.states == nil || m.statesOf != m.h {
		s := sized[gstate](m.topo)
		for _, gi := range m.h.Groups() {
			*s.at(gi.ID) = gstate{gi.Active, gi.Migrator}
		}
		m.rec.states, m.statesOf = &s, m.h
	}
	return m.rec.states
}

// seedEvt is an idle CPU's published event.
type seedEvt struct {
	cpu     int
	expires int64
}

// seed replaces the hierarchy by one in the given state (with the given
// CPUs available), reached through
// the public entry points only: CPUs are activated top-down along the
// migrator chains (an activation takes the migrator role exactly in the
// groups that had none, so the first CPU activated below a group becomes
// its migrator), then the idle CPUs publish their events with NewTimer, in
// the given order (which decides the order of equal expiries). The states
// must be consistent: a group is active in its parent exactly when it has
// an active child, and its migrator is one of its active children.
func (m *model) seed(st map[hier.GroupID]gstate, evts []seedEvt, avail []bool) error {
	on := m.rec.on
	m.rec.on = false
	defer func() { m.rec.on = on }()
	if err := m.fresh(avail); err != nil {
		return err
	}
	var realize func(g hier.GroupID) error
	realize = func(g hier.GroupID) error {
		s := st[g]
		if s.active == 0 {
			return nil
		}
		n := m.topo.Node(g)
		for pass := 0; pass < 2; pass++ {
			// The migrator's branch first, then the other active ones.
			if len(n.CPUs) > 0 {
				for _, c := range n.CPUs {
					b := m.topo.CPUBit[c]
					if s.active&b != 0 && (b == s.migrator) == (pass == 0) {
						m.h.Activate(c)
					}
				}
				continue
			}
			for _, k := range n.Kids {
				b := m.topo.Node(k).Bit
				if s.active&b != 0 && (b == s.migrator) == (pass == 0) {
					if err := realize(k); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	if err := realize(m.topo.Top); err != nil {
		return err
	}
	for _, e := range evts {
		m.h.NewTimer(e.cpu, e.expires)
	}
	got := m.states()
	for g, want := range st {
		if got[g] != want {
			return fmt.Errorf("replay: seeding %v gave %v, want %v", g, got[g], want)
		}
	}
	return nil
}

// setIsolation gives the model a new isolation setup (a cpuset partition
// change), kept for the hierarchies a resynchronisation builds.
func (m *model) setIsolation(iso hier.Isolation) {
	m.opts.Isolation = iso
	_ = m.h.SetIsolation(iso)
}

// forceIn lets cpu into the model's hierarchy although the model's
// isolation excludes it: the kernel showed it in (a mismatch already
// counted), and the rest of the recording is compared on the kernel's
// terms.
func (m *model) forceIn(cpu int) {
	if !m.opts.Isolation.IsIsolated(cpu) {
		return
	}
	m.opts.Isolation.Domain.Clear(cpu)
	m.opts.Isolation.CpusetIsolated.Clear(cpu)
	_ = m.h.SetIsolation(m.opts.Isolation)
}
