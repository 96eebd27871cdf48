package viz

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// The hierarchy of a timeline.
//
// With a "# machine:" line the groups are those the kernel builds for that
// machine (hier, CPUs prepared in order as at boot), and a group pointer of
// the trace is bound to our group by its place: an event of CPU c about the
// group of level l names the l-th group of c's path. Without one, groups are
// pieced together from the pointers themselves: a CPU's level-0 group is the
// parent its per-CPU events print, an upper group the parent a walk prints
// for the group below, and a child bit the childmask of the walk's line.

// machineTopology returns the groups the kernel builds for m, and each
// CPU's path (group indices, level 0 first).
func machineTopology(m *ftrace.Machine) ([]Group, [][]int, error) {
	nodeOf := make([]int, m.CPUs)
	for c := range nodeOf {
		nodeOf[c] = m.Node(c)
	}
	h, err := hier.New(hier.Options{NodeOf: nodeOf, Nodes: m.Nodes})
	if err != nil {
		return nil, nil, err
	}
	for c := 0; c < m.CPUs; c++ {
		if err := h.Prepare(c); err != nil {
			return nil, nil, err
		}
	}
	gis := h.Groups()
	index := make(map[string]int, len(gis))
	for i, gi := range gis {
		index[gi.Name] = i
	}
	groups := make([]Group, len(gis))
	for i, gi := range gis {
		g := &groups[i]
		*g = Group{Name: gi.Name, Level: gi.Level, Node: gi.Node, Parent: -1}
		if gi.Parent != "" {
			g.Parent = index[gi.Parent]
		}
	}
	for i, gi := range gis {
		if p := groups[i].Parent; p >= 0 {
			groups[p].setChild(bitIndex(uint32(gi.Groupmask)), Child{CPU: -1, Group: i})
		}
	}
	paths := make([][]int, m.CPUs)
	for c := 0; c < m.CPUs; c++ {
		ci := h.CPU(c)
		if ci.Group == hier.NoGroup {
			continue // a uniprocessor: no hierarchy
		}
		g := index[ci.Group.String()]
		groups[g].setChild(bitIndex(uint32(ci.Groupmask)), Child{CPU: c, Group: -1})
		for ; g >= 0; g = groups[g].Parent {
			paths[c] = append(paths[c], g)
		}
	}
	fillCPUs(groups)
	return groups, paths, nil
}

// bitIndex is the index of the lowest set bit of a one-bit mask, -1 for 0.
func bitIndex(mask uint32) int {
	if mask == 0 {
		return -1
	}
	return bits.TrailingZeros32(mask)
}

// setChild records child at bit i (ignored outside 0..31).
func (g *Group) setChild(i int, ch Child) {
	if i < 0 || i >= 32 {
		return
	}
	for len(g.Children) <= i {
		g.Children = append(g.Children, Child{CPU: -1, Group: -1})
	}
	g.Children[i] = ch
}

// child returns the child at bit i, or a child of -1s.
func (g *Group) child(i int) Child {
	if i < 0 || i >= len(g.Children) {
		return Child{CPU: -1, Group: -1}
	}
	return g.Children[i]
}

// fillCPUs sets every group's CPUs, in the tree's order (child bit order,
// depth first).
func fillCPUs(groups []Group) {
	done := make([]bool, len(groups))
	var fill func(i int, depth int) []int
	fill = func(i int, depth int) []int {
		g := &groups[i]
		if done[i] || depth > len(groups) {
			return g.CPUs
		}
		done[i] = true
		g.CPUs = nil
		for _, ch := range g.Children {
			switch {
			case ch.CPU >= 0:
				g.CPUs = append(g.CPUs, ch.CPU)
			case ch.Group >= 0 && ch.Group != i:
				g.CPUs = append(g.CPUs, fill(ch.Group, depth+1)...)
			}
		}
		return g.CPUs
	}
	for i := range groups {
		fill(i, 0)
	}
}

// nameLearned names groups pieced together from a trace GRPl:i, i by the
// lowest CPU below them (groups without a CPU last, by pointer order of
// appearance).
func nameLearned(groups []Group) {
	byLevel := map[int][]int{}
	for i := range groups {
		byLevel[groups[i].Level] = append(byLevel[groups[i].Level], i)
	}
	for lvl, list := range byLevel {
		sort.SliceStable(list, func(a, b int) bool {
			return lowestCPU(&groups[list[a]]) < lowestCPU(&groups[list[b]])
		})
		for k, i := range list {
			groups[i].Name = "GRP" + strconv.Itoa(lvl) + ":" + strconv.Itoa(k)
		}
	}
}

func lowestCPU(g *Group) int {
	lo := int(^uint(0) >> 1)
	for _, c := range g.CPUs {
		lo = min(lo, c)
	}
	return lo
}

// Describe names a group with its CPUs: "GRP0:1 (CPUs 8-15)".
func (g *Group) Describe() string {
	if len(g.CPUs) == 0 {
		return g.Name
	}
	return fmt.Sprintf("%s (%s)", g.Name, cpusText(g.CPUs))
}

// cpusText prints CPUs as "CPU 3" or "CPUs 0-7,16".
func cpusText(cpus []int) string {
	s := append([]int(nil), cpus...)
	sort.Ints(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] <= s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if s[j] != s[i] {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(s[j]))
		}
		i = j + 1
	}
	if len(s) == 1 {
		return "CPU " + b.String()
	}
	return "CPUs " + b.String()
}
