package replay

import (
	"fmt"

	"github.com/tmigr/tmigr/hier"
)

// topology is the structure of the model's hierarchy once every CPU is
// prepared: what the replay needs to name groups and walk paths.
type topology struct {
	ncpus  int
	groups []hier.GroupID          // by level, then index
	info   map[hier.GroupID]*gnode // every group
	top    hier.GroupID
	cpuG   []hier.GroupID // each CPU's level-0 group
	cpuBit []uint8        // each CPU's bit in it
	path   [][]hier.GroupID
}

// gnode is one group of the topology.
type gnode struct {
	id     hier.GroupID
	node   int
	parent hier.GroupID // hier.NoGroup for the top
	bit    uint8        // its bit in the parent
	cpus   []int        // level 0: member CPUs in bit order
	kids   []hier.GroupID
}

func newTopology(h *hier.Hierarchy) (*topology, error) {
	n := h.CPUs()
	t := &topology{ncpus: n, info: map[hier.GroupID]*gnode{}, top: h.Root(),
		cpuG: make([]hier.GroupID, n), cpuBit: make([]uint8, n), path: make([][]hier.GroupID, n)}
	byName := map[string]hier.GroupID{}
	gis := h.Groups()
	for _, gi := range gis {
		byName[gi.Name] = gi.ID
	}
	for _, gi := range gis {
		g := &gnode{id: gi.ID, node: gi.Node, parent: hier.NoGroup, bit: gi.Groupmask, cpus: gi.CPUs}
		if gi.Parent != "" {
			g.parent = byName[gi.Parent]
		}
		for _, k := range gi.Children {
			g.kids = append(g.kids, byName[k])
		}
		t.info[gi.ID] = g
		t.groups = append(t.groups, gi.ID)
	}
	for c := 0; c < n; c++ {
		ci := h.CPU(c)
		if ci.Group == hier.NoGroup {
			return nil, fmt.Errorf("CPU %d is in no group", c)
		}
		t.cpuG[c], t.cpuBit[c] = ci.Group, ci.Groupmask
		for g := ci.Group; g != hier.NoGroup; g = t.info[g].parent {
			t.path[c] = append(t.path[c], g)
		}
	}
	return t, nil
}

// at returns the group of cpu's path at level lvl, or hier.NoGroup.
func (t *topology) at(cpu, lvl int) hier.GroupID {
	if cpu < 0 || cpu >= t.ncpus || lvl < 0 || lvl >= len(t.path[cpu]) {
		return hier.NoGroup
	}
	return t.path[cpu][lvl]
}

// cpusBelow returns the CPUs of g's subtree.
func (t *topology) cpusBelow(g hier.GroupID) []int {
	n := t.info[g]
	out := append([]int(nil), n.cpus...)
	for _, k := range n.kids {
		out = append(out, t.cpusBelow(k)...)
	}
	return out
}
