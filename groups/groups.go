// Package groups is the timer-migration hierarchy as a tree of names, and
// the binding of the kernel's group pointers to it.
//
// The kernel prints its groups as hashed pointers, stable within one boot;
// tmigr names them as the kernel's own comments do ("GRP0:1"). A reader of
// a recording (the replay, the explanation) needs the tree tmigr builds
// for the recorded machine, the path of groups above each CPU and each
// member's bit in its group, to say which pointer is which group: a line
// about the group of level l in an operation of CPU c names the l-th group
// of c's path. Tree is that tree; Binding is the one-to-one map between
// pointers and groups that such lines build, which refuses a pointer that
// would name two groups and a group named by two pointers (the kernel
// built another tree, or the recording mixes two boots). What each reader
// does about a conflict is its own: the replay reports a topology mismatch
// and stops comparing, the explanation names the groups by their pointers.
package groups

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
)

// Tree is the structure of a hierarchy once every CPU is prepared.
type Tree struct {
	NCPUs int
	// Levels and CrossnodeLevel are the hierarchy's, as the kernel's boot
	// line prints them.
	Levels, CrossnodeLevel int
	Groups                 []hier.GroupID // by level, then index
	Info                   map[hier.GroupID]*Group
	Top                    hier.GroupID
	CPUGroup               []hier.GroupID // each CPU's level-0 group
	CPUBit                 []uint8        // each CPU's bit in it
	Path                   [][]hier.GroupID

	byLevel [][]*Group // Info by level and index, for Node
}

// Group is one group of the tree.
type Group struct {
	ID     hier.GroupID
	Node   int          // hier.NoNode at and above the crossnode level
	Parent hier.GroupID // hier.NoGroup for the top
	Bit    uint8        // its bit in the parent
	CPUs   []int        // level 0: member CPUs in bit order
	Kids   []hier.GroupID
	Below  cpumask.Mask // the CPUs of its subtree
}

// NewTree reads the tree of h, every CPU of which must be prepared.
func NewTree(h *hier.Hierarchy) (*Tree, error) {
	n := h.CPUs()
	t := &Tree{NCPUs: n, Levels: h.Levels(), CrossnodeLevel: h.CrossnodeLevel(), Info: map[hier.GroupID]*Group{}, Top: h.Root(),
		CPUGroup: make([]hier.GroupID, n), CPUBit: make([]uint8, n), Path: make([][]hier.GroupID, n)}
	byName := map[string]hier.GroupID{}
	gis := h.Groups()
	for _, gi := range gis {
		byName[gi.Name] = gi.ID
	}
	for _, gi := range gis {
		g := &Group{ID: gi.ID, Node: gi.Node, Parent: hier.NoGroup, Bit: gi.Groupmask, CPUs: gi.CPUs}
		if gi.Parent != "" {
			g.Parent = byName[gi.Parent]
		}
		for _, k := range gi.Children {
			g.Kids = append(g.Kids, byName[k])
		}
		t.Info[gi.ID] = g
		t.Groups = append(t.Groups, gi.ID)
		for gi.ID.Level >= len(t.byLevel) {
			t.byLevel = append(t.byLevel, nil)
		}
		l := &t.byLevel[gi.ID.Level]
		for gi.ID.Index >= len(*l) {
			*l = append(*l, nil)
		}
		(*l)[gi.ID.Index] = g
	}
	for c := 0; c < n; c++ {
		ci := h.CPU(c)
		if ci.Group == hier.NoGroup {
			return nil, fmt.Errorf("CPU %d is in no group", c)
		}
		t.CPUGroup[c], t.CPUBit[c] = ci.Group, ci.Groupmask
		for g := ci.Group; g != hier.NoGroup; g = t.Info[g].Parent {
			t.Path[c] = append(t.Path[c], g)
			t.Info[g].Below.Set(c)
		}
	}
	return t, nil
}

// ForNodes builds the tree tmigr builds for a machine whose CPU c is on
// node nodeOf[c], every CPU in the hierarchy.
func ForNodes(nodeOf []int) (*Tree, error) {
	h, err := hier.New(hier.Options{NodeOf: nodeOf})
	if err != nil {
		return nil, err
	}
	for c := range nodeOf {
		if err := h.Prepare(c); err != nil {
			return nil, err
		}
	}
	return NewTree(h)
}

// Node returns Info[id], nil for none, without a map lookup: a replay
// reads the tree for nearly every line.
func (t *Tree) Node(id hier.GroupID) *Group {
	if id.Level < 0 || id.Level >= len(t.byLevel) || id.Index < 0 || id.Index >= len(t.byLevel[id.Level]) {
		return nil
	}
	return t.byLevel[id.Level][id.Index]
}

// At returns the group of cpu's path at level lvl, or hier.NoGroup.
func (t *Tree) At(cpu, lvl int) hier.GroupID {
	if cpu < 0 || cpu >= t.NCPUs || lvl < 0 || lvl >= len(t.Path[cpu]) {
		return hier.NoGroup
	}
	return t.Path[cpu][lvl]
}

// PathBit returns the bit that stands for cpu's path in its group at level
// lvl: the CPU's own at level 0, its level lvl-1 group's above (the
// childmask tmigr prints for that group). lvl must be on cpu's path.
func (t *Tree) PathBit(cpu, lvl int) uint8 {
	if lvl == 0 {
		return t.CPUBit[cpu]
	}
	return t.Node(t.At(cpu, lvl-1)).Bit
}

// CPUsBelow returns the CPUs of g's subtree: its own members in bit order,
// then each child group's, children in bit order.
func (t *Tree) CPUsBelow(g hier.GroupID) []int {
	n := t.Info[g]
	out := append([]int(nil), n.CPUs...)
	for _, k := range n.Kids {
		out = append(out, t.CPUsBelow(k)...)
	}
	return out
}

// Child returns the member of g with the given bit: a CPU (cpu >= 0) at
// level 0, a group (kid) above. ok is false when g has no such member.
func (t *Tree) Child(g hier.GroupID, bit uint8) (kid hier.GroupID, cpu int, ok bool) {
	n := t.Info[g]
	if n == nil {
		return hier.NoGroup, -1, false
	}
	for _, c := range n.CPUs {
		if t.CPUBit[c] == bit {
			return hier.NoGroup, c, true
		}
	}
	for _, k := range n.Kids {
		if t.Info[k].Bit == bit {
			return k, -1, true
		}
	}
	return hier.NoGroup, -1, false
}
