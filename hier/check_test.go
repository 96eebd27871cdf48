package hier

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckCatches breaks one invariant at a time in a consistent
// hierarchy (16 CPUs, 2 nodes, some idle with events) and expects Check to
// name it.
func TestCheckCatches(t *testing.T) {
	setup := func(t *testing.T) *Hierarchy {
		h := newPrepared(t, 16, 2, Options{})
		for c := 0; c < 16; c++ {
			if err := h.SetAvailable(c, false); err != nil {
				t.Fatal(err)
			}
		}
		for c := 8; c < 16; c++ { // node 1 idle, CPU9 with an event
			next := KtimeMax
			if c == 9 {
				next = 5000
			}
			h.Deactivate(c, next)
		}
		h.Deactivate(3, 4000) // CPU3 idle with an event, GRP0:0 active
		mustCheck(t, h)
		return h
	}
	grp := func(h *Hierarchy, l, i int) *group { return h.lists[l][i] }
	cases := []struct {
		name      string
		invariant int
		where     string
		corrupt   func(h *Hierarchy)
	}{
		{"second root", 1, "top", func(h *Hierarchy) {
			g := &group{level: 0, index: len(h.lists[0])}
			g.state.Store(uint32(initState))
			h.lists[0] = append(h.lists[0], g)
		}},
		{"duplicate child bit", 1, "GRP0:0", func(h *Hierarchy) { h.cpus[1].groupmask = h.cpus[0].groupmask }},
		{"foreign event queued", 1, "GRP0:0", func(h *Hierarchy) { grp(h, 0, 0).events.add(&h.cpus[12].evt) }},
		{"node mix below crossnode", 2, "GRP0:1", func(h *Hierarchy) { h.nodeOf[12] = 0 }},
		{"migrator without active child", 3, "GRP0:1", func(h *Hierarchy) { grp(h, 0, 1).state.Store(uint32(makeState(0, 0x1, 7))) }},
		{"migrator not active", 3, "GRP0:0", func(h *Hierarchy) {
			s := grp(h, 0, 0).loadState()
			grp(h, 0, 0).state.Store(uint32(makeState(s.active(), 0x8, s.seq()))) // CPU3 is idle
		}},
		{"active CPU without its bit", 4, "GRP0:0", func(h *Hierarchy) {
			s := grp(h, 0, 0).loadState()
			grp(h, 0, 0).state.Store(uint32(makeState(s.active()&^0x4, s.migrator(), s.seq())))
		}},
		{"idle group marked active", 4, "GRP1:0", func(h *Hierarchy) {
			s := grp(h, 1, 0).loadState()
			grp(h, 1, 0).state.Store(uint32(makeState(s.active()|0x2, s.migrator(), s.seq())))
		}},
		{"idle CPU's event lost", 7, "cpu9", func(h *Hierarchy) {
			g := grp(h, 0, 1)
			g.events.del(&h.cpus[9].evt)
			g.nextExpiry.Store(KtimeMax)
			g.evt.expires = KtimeMax
		}},
		{"group event later than the CPU's", 7, "cpu9", func(h *Hierarchy) { grp(h, 0, 1).evt.expires = 6000 }},
		{"next_expiry late", 11, "GRP0:0", func(h *Hierarchy) { grp(h, 0, 0).nextExpiry.Store(4500) }},
		{"unavailable CPU with live event", 13, "cpu3", func(h *Hierarchy) { h.cpus[3].available.Store(false); h.availMask.Clear(3) }},
		{"remote left set", 13, "cpu4", func(h *Hierarchy) { h.cpus[4].remote.Store(true) }},
		{"available mask out of sync", 18, "cpu5", func(h *Hierarchy) { h.availMask.Clear(5) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t)
			tc.corrupt(h)
			err := h.Check()
			var ie *InvariantError
			if !errors.As(err, &ie) {
				t.Fatalf("Check() = %v, want invariant %d broken at %s", err, tc.invariant, tc.where)
			}
			if ie.Invariant != tc.invariant || ie.Where != tc.where {
				t.Fatalf("Check() = %v, want invariant %d broken at %s", err, tc.invariant, tc.where)
			}
			if !strings.Contains(err.Error(), tc.where) {
				t.Errorf("message %q does not name %s", err, tc.where)
			}
		})
	}
}
