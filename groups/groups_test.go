package groups

import (
	"slices"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
)

// TestTree holds the tree to the hierarchy it is read from, on machines of
// one and several nodes.
func TestTree(t *testing.T) {
	for _, nodeOf := range [][]int{
		make([]int, 2),
		make([]int, 20),
		make([]int, 70),
		{0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
	} {
		tr, err := ForNodes(nodeOf)
		if err != nil {
			t.Fatal(err)
		}
		if tr.NCPUs != len(nodeOf) || len(tr.Path) != len(nodeOf) {
			t.Fatalf("%d CPUs: tree of %d", len(nodeOf), tr.NCPUs)
		}
		for _, g := range tr.Groups {
			if tr.Node(g) == nil || tr.Node(g) != tr.Info[g] {
				t.Errorf("%d CPUs: Node(%v) = %v, Info has %v", len(nodeOf), g, tr.Node(g), tr.Info[g])
			}
		}
		for _, g := range []hier.GroupID{hier.NoGroup, {Level: tr.Levels, Index: 0}, {Level: 0, Index: len(nodeOf)}, {Level: 0, Index: -1}} {
			if tr.Node(g) != nil {
				t.Errorf("%d CPUs: Node(%v) = %v, want none", len(nodeOf), g, tr.Node(g))
			}
		}
		for c := range nodeOf {
			path := tr.Path[c]
			if len(path) != tr.Levels || path[0] != tr.CPUGroup[c] || path[len(path)-1] != tr.Top {
				t.Errorf("CPU %d: path %v (levels %d, top %v)", c, path, tr.Levels, tr.Top)
			}
			for l, g := range path {
				n := tr.Info[g]
				if g.Level != l || tr.At(c, l) != g || !n.Below.Test(c) {
					t.Errorf("CPU %d: %v at level %d (At %v, below %s)", c, g, l, tr.At(c, l), n.Below)
				}
				if l < tr.CrossnodeLevel && n.Node != nodeOf[c] {
					t.Errorf("CPU %d on node %d is in %v of node %d", c, nodeOf[c], g, n.Node)
				}
				if l > 0 {
					if kid, cpu, ok := tr.Child(g, tr.Info[path[l-1]].Bit); !ok || kid != path[l-1] || cpu != -1 {
						t.Errorf("%v's child of bit %x: %v %d %v, want %v", g, tr.Info[path[l-1]].Bit, kid, cpu, ok, path[l-1])
					}
				}
			}
			for l := range path {
				// The bit of c's path at each level leads back down it.
				kid, cpu, ok := tr.Child(path[l], tr.PathBit(c, l))
				if !ok || l == 0 && cpu != c || l > 0 && kid != path[l-1] {
					t.Errorf("CPU %d: PathBit at level %d leads to %v %d %v", c, l, kid, cpu, ok)
				}
			}
			if kid, cpu, ok := tr.Child(path[0], tr.CPUBit[c]); !ok || cpu != c || kid != hier.NoGroup {
				t.Errorf("CPU %d: child of bit %x of %v is %v %d %v", c, tr.CPUBit[c], path[0], kid, cpu, ok)
			}
			if tr.At(c, len(path)) != hier.NoGroup || tr.At(c, -1) != hier.NoGroup {
				t.Errorf("CPU %d: a group beyond its path", c)
			}
		}
		for _, g := range tr.Groups {
			var m cpumask.Mask
			below := tr.CPUsBelow(g)
			for _, c := range below {
				m.Set(c)
			}
			if !m.Equal(tr.Info[g].Below) || len(below) != tr.Info[g].Below.Weight() {
				t.Errorf("%v: CPUsBelow %v, Below %s", g, below, tr.Info[g].Below)
			}
			if p := tr.Info[g].Parent; (p == hier.NoGroup) != (g == tr.Top) {
				t.Errorf("%v: parent %v, top %v", g, p, tr.Top)
			}
		}
	}
}

// TestTreeShape checks one machine against the kernel's rule: groups of
// eight CPUs, per node below the crossnode level (tmigr_setup_groups).
func TestTreeShape(t *testing.T) {
	nodeOf := make([]int, 16)
	for c := 8; c < 16; c++ {
		nodeOf[c] = 1
	}
	tr, err := ForNodes(nodeOf)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Levels != 2 || tr.CrossnodeLevel != 1 {
		t.Fatalf("levels %d crossnode %d, want 2 and 1", tr.Levels, tr.CrossnodeLevel)
	}
	g := tr.CPUGroup[9]
	if tr.Info[g].Below.String() != "8-15" || tr.Info[g].Node != 1 || tr.CPUBit[9] != 1<<1 {
		t.Errorf("CPU 9: group %v of CPUs %s on node %d, bit %x", g, tr.Info[g].Below, tr.Info[g].Node, tr.CPUBit[9])
	}
}

func TestBinding(t *testing.T) {
	a, b := hier.GroupID{Level: 0, Index: 0}, hier.GroupID{Level: 0, Index: 1}
	var m Binding
	if c := m.Bind(0x20, a); c != nil {
		t.Fatal(c)
	}
	if c := m.Bind(0x20, a); c != nil {
		t.Fatalf("the same binding again: %v", c)
	}
	if c := m.Bind(0x20, b); c == nil || c.Was != a || c.WasPtr != 0 || c.Error() != "group 0000000000000020 names GRP0:1 here, GRP0:0 earlier" {
		t.Errorf("a pointer for two groups: %+v", c)
	}
	if c := m.Bind(0x10, a); c == nil || c.Was != hier.NoGroup || c.WasPtr != 0x20 || c.Error() != "GRP0:0 is group 0000000000000010 here, 0000000000000020 earlier" {
		t.Errorf("two pointers for a group: %+v", c)
	}
	if id, ok := m.ID(0x10); ok {
		t.Errorf("a refused binding was kept: %v", id)
	}
	if c := m.Bind(0x10, b); c != nil {
		t.Fatal(c)
	}
	if p, ok := m.Ptr(b); !ok || p != 0x10 {
		t.Errorf("Ptr(%v) = %x %v", b, p, ok)
	}
	if got := m.Pointers(); !slices.Equal(got, []uint64{0x10, 0x20}) {
		t.Errorf("Pointers() = %x", got)
	}
	m.Reset()
	if _, ok := m.ID(0x20); ok || len(m.Pointers()) != 0 {
		t.Error("Reset kept a binding")
	}
	if c := m.Bind(0x20, b); c != nil {
		t.Errorf("after Reset: %v", c)
	}
}
