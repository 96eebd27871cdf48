package hier

import (
	"fmt"
	"math/bits"
)

// InvariantError reports a broken invariant: I1 to I19 of
// docs/hierarchy.md, section 7.
type InvariantError struct {
	Invariant int     // n of In in docs/hierarchy.md
	Where     string  // the group ("GRP0:1") or CPU ("cpu5")
	Group     GroupID // for invariant 7: the group whose event is missing or late; else NoGroup
	Detail    string
}

func (e *InvariantError) Error() string {
	return fmt.Sprintf("hier: invariant %d (%s) broken at %s: %s", e.Invariant, invariantNames[e.Invariant], e.Where, e.Detail)
}

var invariantNames = map[int]string{
	1:  "structure",
	2:  "node locality and height",
	3:  "migrator vs active",
	4:  "active bits",
	5:  "migrator chain",
	6:  "root activity",
	7:  "no lost global event",
	11: "next_expiry not late",
	13: "unavailable CPUs",
	18: "available mask",
}

func broken(inv int, where, format string, args ...any) error {
	return &InvariantError{Invariant: inv, Where: where, Group: NoGroup, Detail: fmt.Sprintf(format, args...)}
}

// Check verifies the invariants of docs/hierarchy.md that must hold on a
// quiescent hierarchy (no call in progress): I1-I6, I7 (for the events the
// hierarchy knows: every idle CPU's published event, and its idle
// ancestors' events, queued up to the first active group or the top, none
// later than the CPU's), I11, I13 and I18. It returns the first violation found as an
// *InvariantError naming the group or CPU, or nil.
//
// Invariant I8 (the last CPU to go idle is handed the earliest event) is a
// property of call results and is checked by the tests that make the calls.
func (h *Hierarchy) Check() error {
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	h.availMu.Lock()
	defer h.availMu.Unlock()
	// Lock everything, bottom-up: CPUs, then groups level by level.
	for i := range h.cpus {
		h.cpus[i].mu.Lock()
		defer h.cpus[i].mu.Unlock()
	}
	for _, list := range h.lists {
		for _, g := range list {
			g.mu.Lock()
			defer g.mu.Unlock()
		}
	}
	kids := h.childrenLocked()

	// 18, 13 and the CPU half of 1.
	for i := range h.cpus {
		t := &h.cpus[i]
		where := fmt.Sprintf("cpu%d", i)
		avail := t.available.Load()
		if h.availMask.Test(i) != avail {
			return broken(18, where, "available mask bit %v, available flag %v", h.availMask.Test(i), avail)
		}
		g := t.tmgroup.Load()
		if g == nil {
			if avail {
				return broken(1, where, "available but in no level-0 group")
			}
			continue
		}
		if g.level != 0 {
			return broken(1, where, "joined %v, which is not a level-0 group", g.id())
		}
		if bits.OnesCount8(t.groupmask) != 1 {
			return broken(1, where, "groupmask %#x is not one-hot", t.groupmask)
		}
		if t.remote.Load() {
			return broken(13, where, "remote expiry flag set on a quiescent hierarchy")
		}
		if !avail && !t.evt.ignore.Load() && t.evt.expires != KtimeMax {
			return broken(13, where, "unavailable, but its event (expiry %s) is not ignored", fmtTime(t.evt.expires))
		}
	}

	// 1, 2, 3, 4 per group.
	roots := 0
	height := 0
	for _, list := range h.lists {
		for _, g := range list {
			where := g.id().String()
			height = max(height, g.level+1)
			p := g.parent.Load()
			if p == nil {
				roots++
			} else if p.level != g.level+1 {
				return broken(1, where, "parent %v is not one level up", p.id())
			}
			k := kids[g]
			if len(k) > ChildrenPerGroup || g.numChildren > ChildrenPerGroup {
				return broken(1, where, "%d children (%d accounted), more than %d", len(k), g.numChildren, ChildrenPerGroup)
			}
			var masks uint8
			for _, c := range k {
				if bits.OnesCount8(c.mask) != 1 || masks&c.mask != 0 {
					return broken(1, where, "child %s has groupmask %#x, not a distinct one-hot bit", c.name(), c.mask)
				}
				masks |= c.mask
				// (Before 5eb579dfd46b a group could hold another
				// node's old root: ImbalancedNUMA.)
				if g.level < h.crossnode && !h.imbalancedNUMA {
					node := 0
					if c.g != nil {
						node = c.g.node
					} else {
						node = h.nodeOf[c.cpu]
					}
					if node != g.node {
						return broken(2, where, "on node %d below the crossnode level %d, but child %s is on node %d", g.node, h.crossnode, c.name(), node)
					}
				}
			}
			for i := 0; i < g.events.n; i++ {
				e := g.events.e[i]
				ok := false
				for _, c := range k {
					if (c.g != nil && e == &c.g.evt) || (c.g == nil && e == &h.cpus[c.cpu].evt) {
						ok = true
					}
				}
				if !ok || !e.queued {
					return broken(1, where, "queue holds %v, which is not a child's event", eventInfo(e))
				}
				if i > 0 && g.events.e[i-1].expires > e.expires {
					return broken(1, where, "queue out of order at %v", eventInfo(e))
				}
			}

			s := g.loadState()
			active, migrator := s.active(), s.migrator()
			if (migrator == MigratorNone) != (active == 0) {
				return broken(3, where, "active=%#x but migrator=%s", active, fmtMigrator(migrator))
			}
			if migrator != MigratorNone && (bits.OnesCount8(migrator) != 1 || active&migrator == 0) {
				return broken(3, where, "migrator %#x is not an active child (active=%#x)", migrator, active)
			}
			if active&^masks != 0 {
				return broken(4, where, "active bits %#x name no child (children %#x)", active&^masks, masks)
			}
			for _, c := range k {
				set := active&c.mask != 0
				var want bool
				if c.g != nil {
					want = c.g.loadState().active() != 0
				} else {
					t := &h.cpus[c.cpu]
					want = t.available.Load() && !t.idle.Load()
				}
				if set != want {
					return broken(4, where, "active bit of %s is %v, but %s is %s", c.name(), set, c.name(), activity(want))
				}
			}

			// 11: next_expiry is never later than the first non-ignored event.
			ne := g.nextExpiry.Load()
			for i := 0; i < g.events.n; i++ {
				if e := g.events.e[i]; !e.ignore.Load() {
					if ne > e.expires {
						return broken(11, where, "next_expiry %s is later than the first non-ignored event %v", fmtTime(ne), eventInfo(e))
					}
					break
				}
			}
		}
	}
	if height > h.levels {
		return broken(2, "top", "%d levels, more than the %d sized", height, h.levels)
	}
	if len(h.lists) > 0 && len(h.lists[0]) > 0 {
		if roots != 1 || h.root == nil || h.root.parent.Load() != nil {
			return broken(1, "top", "%d groups without parent; tmigr_root %v", roots, h.rootName())
		}
	}
	if h.root == nil {
		return nil
	}

	// 5 and 6: from the root, the chain of migrators ends at one active
	// CPU; the root is active exactly when some available CPU is active.
	anyActive := false
	for i := range h.cpus {
		t := &h.cpus[i]
		if t.tmgroup.Load() != nil && t.available.Load() && !t.idle.Load() {
			anyActive = true
		}
	}
	rs := h.root.loadState()
	if anyActive != (rs.active() != 0) {
		return broken(6, h.root.id().String(), "root active=%#x, but an available CPU is active: %v", rs.active(), anyActive)
	}
	for g := h.root; g != nil && g.loadState().migrator() != MigratorNone; {
		m := g.loadState().migrator()
		var next *group
		for _, c := range kids[g] {
			if c.mask != m {
				continue
			}
			if c.g != nil {
				if c.g.loadState().active() == 0 {
					return broken(5, g.id().String(), "migrator %s is inactive", c.name())
				}
				next = c.g
			} else if t := &h.cpus[c.cpu]; !t.available.Load() || t.idle.Load() {
				return broken(5, g.id().String(), "migrator %s is not an active CPU", c.name())
			}
		}
		g = next
	}

	// 7: every idle available CPU's published event is queued up to the
	// first active group or the top, with no group event on the way later
	// than it.
	for i := range h.cpus {
		t := &h.cpus[i]
		g := t.tmgroup.Load()
		if g == nil || !t.available.Load() || !t.idle.Load() || t.evt.ignore.Load() || t.evt.expires == KtimeMax {
			continue
		}
		exp := t.evt.expires
		where := fmt.Sprintf("cpu%d", i)
		if !t.evt.queued {
			return broken(7, where, "idle with event %s not queued in %v", fmtTime(exp), g.id())
		}
		for c := g; c.loadState().active() == 0; {
			p := c.parent.Load()
			if p == nil {
				break
			}
			if !c.evt.queued || c.evt.ignore.Load() || c.evt.expires > exp {
				err := broken(7, where, "event %s: idle %v has group event %v in %v (queued %v)", fmtTime(exp), c.id(), eventInfo(&c.evt), p.id(), c.evt.queued)
				err.(*InvariantError).Group = c.id()
				return err
			}
			c = p
		}
	}
	return nil
}

func (c child) name() string {
	if c.g != nil {
		return c.g.id().String()
	}
	return fmt.Sprintf("cpu%d", c.cpu)
}

func activity(active bool) string {
	if active {
		return "active"
	}
	return "not active"
}

func (h *Hierarchy) rootName() string {
	if h.root == nil {
		return "none"
	}
	return h.root.id().String()
}
