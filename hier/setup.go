package hier

import "fmt"

// Prepare is the CPUHP_TMIGR_PREPARE callback (tmigr_cpu_prepare): cpu joins
// the topology. CPUs join in the order Prepare is called, as the kernel
// brings them up; that order decides group membership, the groups' child
// bits and hence which child becomes migrator. Preparing a CPU twice does
// nothing (only the first online attempt sets up). Groups are created on
// demand and never destroyed; when a new top level is needed the old top
// group is connected below the new one and, if it is active, its activity
// is propagated up (docs/hierarchy.md T3). On a uniprocessor Prepare does nothing.
//
// Prepare must happen before any other call for cpu. It fails, leaving the
// hierarchy unchanged, when the hierarchy sized by New cannot hold the CPU
// (more levels would be needed: the sizing assumes CPUs spread evenly over
// nodes; the kernel WARNs and the CPU does not come up).
func (h *Hierarchy) Prepare(cpu int) error {
	if err := h.checkCPU(cpu); err != nil {
		return err
	}
	if h.levels == 0 {
		return nil
	}
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	t := &h.cpus[cpu]
	if t.tmgroup.Load() != nil {
		return nil
	}
	// The per-CPU data was initialised by New exactly as tmigr_cpu_prepare
	// does (event KtimeMax and ignored, remote false, wakeup KtimeMax).
	if err := h.addCPU(cpu); err != nil {
		return err
	}
	if t.groupmask == 0 {
		h.warn()
		return fmt.Errorf("hier: CPU %d: joined a full group", cpu)
	}
	return nil
}

// addCPU is tmigr_add_cpu (setupMu held): set up the CPU's chain of groups
// and, if that created a new root, connect the old root below it.
func (h *Hierarchy) addCPU(cpu int) error {
	oldRoot := h.root
	node := h.nodeOf[cpu]
	if err := h.setupGroups(cpu, node, nil, false); err != nil {
		return err
	}
	if oldRoot != nil && oldRoot != h.root {
		if h.imbalancedNUMA && h.root.level == oldRoot.level+1 {
			// Before 5eb579dfd46b the parentless groups of the level
			// below the new top, the old root, joined the new top as
			// they were, whatever their node.
			h.connectChildParent(oldRoot, h.root, true)
			if st := oldRoot.loadState(); st.active() != 0 {
				w := walk{childmask: oldRoot.groupmask, cpu: -1}
				h.walkActiveUp(&w, oldRoot, h.root)
			}
			return nil
		}
		return h.setupGroups(-1, oldRoot.node, oldRoot, true)
	}
	return nil
}

// findGroup is the search half of tmigr_get_group: the first group of the
// level (newest first: the kernel adds new groups at the head of the level
// list) that belongs to node, if below the crossnode level, and has room.
func (h *Hierarchy) findGroup(node, lvl int) *group {
	list := h.lists[lvl]
	for i := len(list) - 1; i >= 0; i-- {
		g := list[i]
		if lvl < h.crossnode && g.node != node {
			continue
		}
		if g.numChildren >= ChildrenPerGroup {
			continue
		}
		return g
	}
	return nil
}

// getGroup is tmigr_get_group: an existing group with room, or a new one.
func (h *Hierarchy) getGroup(node, lvl int) *group {
	if g := h.findGroup(node, lvl); g != nil {
		return g
	}
	g := &group{level: lvl, index: len(h.lists[lvl]), node: NoNode}
	if lvl < h.crossnode {
		g.node = node
	}
	g.state.Store(uint32(initState))
	g.nextExpiry.Store(KtimeMax)
	g.evt.expires = KtimeMax
	g.evt.ignore.Store(true)
	g.evt.ownerCPU = -1
	g.evt.ownerGroup = g
	h.lists[lvl] = append(h.lists[lvl], g)
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvGroupSet, Group: g.id(), Node: g.node})
	}
	return g
}

// stopClimb is the exit test of the setup loop: stop at a group that already
// has a parent, or when the level holds a single group, except that on a
// node mismatch the chain is unfolded up to the crossnode level so the tree
// stays node-balanced (5eb579dfd46b, docs/hierarchy.md T3).
func (h *Hierarchy) stopClimb(g *group, levelLen, lvl int, rootMismatch bool) bool {
	if g != nil && g.parent.Load() != nil {
		return true
	}
	return (!rootMismatch || lvl >= h.crossnode) && levelLen == 1
}

// fits runs the climb of setupGroups without creating anything and reports
// whether it stops below the level limit. The kernel WARNs and fails after
// creating the groups; checking first keeps a failed Prepare from leaving
// parentless groups behind (and from tracing their creation).
func (h *Hierarchy) fits(node, startLvl int, rootMismatch bool) bool {
	for i := startLvl; i < h.levels; i++ {
		g := h.findGroup(node, i)
		n := len(h.lists[i])
		if g == nil {
			n++
		}
		if h.stopClimb(g, n, i, rootMismatch) {
			return true
		}
	}
	return false
}

// setupGroups is tmigr_setup_groups. cpu >= 0 adds that CPU (start == nil);
// cpu < 0 connects start, the old root, below the new root (activate).
func (h *Hierarchy) setupGroups(cpu, node int, start *group, activate bool) error {
	stack := make([]*group, h.levels)
	startLvl := 0
	if start != nil {
		stack[start.level] = start
		startLvl = start.level + 1
	}
	// Since 5eb579dfd46b a CPU of another node than the root's unfolds its
	// chain up to the crossnode level; before it, it did not.
	rootMismatch := h.root != nil && h.root.node != node && !h.imbalancedNUMA
	if !h.fits(node, startLvl, rootMismatch) {
		h.warn()
		if cpu >= 0 {
			return fmt.Errorf("hier: CPU %d (node %d) needs more than the %d hierarchy levels sized for %d CPUs on %d nodes (the kernel assumes an even spread)",
				cpu, node, h.levels, h.ncpus, h.nnodes)
		}
		return fmt.Errorf("hier: connecting %v needs more than %d hierarchy levels", start.id(), h.levels)
	}

	i, top := startLvl, 0
	for ; i < h.levels; i++ {
		g := h.getGroup(node, i)
		top = i
		stack[i] = g
		if h.stopClimb(g, len(h.lists[i]), i, rootMismatch) {
			break
		}
	}

	// Connect top-down, so every group is fully set up before the pointer
	// that makes it reachable is published.
	for ; i >= startLvl; i-- {
		g := stack[i]
		if i == 0 {
			t := &h.cpus[cpu]
			t.groupmask = uint8(1) << g.numChildren // 0 if the group were full
			g.numChildren++
			t.tmgroup.Store(g)
			h.initRoot(g, activate)
			if h.tr != nil {
				h.tr.Trace(Event{Kind: EvConnectCPUParent, CPU: cpu, Parent: g.id(), Node: g.node, NumChildren: g.numChildren, Groupmask: t.groupmask})
			}
			continue
		}
		h.connectChildParent(stack[i-1], g, activate)
	}

	if activate {
		// The kernel does an atomic fetch-or of 0 for a full barrier; a Go
		// atomic load is sequentially consistent.
		st := start.loadState()
		if start.parent.Load() == nil {
			h.warn()
		}
		if st.active() != 0 {
			w := walk{childmask: start.groupmask, cpu: -1}
			h.walkActiveUp(&w, start, start.parent.Load())
		}
	}

	if len(h.lists[top]) == 1 {
		g := h.lists[top][0]
		if g.parent.Load() != nil || (h.root != nil && h.root.level > top) {
			h.warn()
		}
		h.root = g
	}
	return nil
}

// initRoot is tmigr_init_root: a group without parent that is not the root
// yet is a new top; its future bit in a yet-higher top is BIT(0), prepared
// now so it is visible before anything can walk through it.
func (h *Hierarchy) initRoot(g *group, activate bool) bool {
	if g.parent.Load() == nil && g != h.root {
		g.groupmask = 1
		if activate {
			h.warn()
		}
		return true
	}
	return false
}

// connectChildParent is tmigr_connect_child_parent.
func (h *Hierarchy) connectChildParent(child, parent *group, activate bool) {
	if h.initRoot(parent, activate) {
		// Slot 0 of a new top is reserved for the old root.
		parent.numChildren = 1
	}
	if parent.parent.Load() == nil && activate {
		// child is the old root (or a group unfolded above it): slot 0.
		if parent.numChildren != 2 {
			h.warn()
		}
		child.groupmask = 1
	} else {
		child.groupmask = uint8(1) << parent.numChildren
		parent.numChildren++
	}
	child.parent.Store(parent) // release: pairs with the walkers' load
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvConnectChildParent, Child: child.id(), Parent: parent.id(), Node: parent.node, NumChildren: parent.numChildren, Groupmask: child.groupmask})
	}
}
