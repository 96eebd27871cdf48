package watch

import (
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// roles follows each group's migrator (see the package comment, rule 2).
// The tree is the kernel's layout for the machine (package hier: groups of
// 8 by node, each child's bit its join order, CPUs joining in ascending
// order at boot); the kernel's group pointers are bound to it by the CPUs
// whose paths the lines show: a tmigr_cpu_* line's parent is the CPU's
// level-0 group, a group line of level l printed by a CPU is the l-th group
// of its path and its parent the next. A busy CPU that never prints is
// still found its group's migrator: the others' lines print the group's
// migrator bit.
type roles struct {
	path     [][]int // path[cpu]: indexes in groups, level 0 first
	bit      []uint8 // each CPU's bit in its level-0 group
	groups   []hier.GroupInfo
	byPtr    map[uint64]int // kernel pointer -> index in groups
	migrator map[int]uint8  // index in groups -> the migrator child's bit (0xff none)
}

func newRoles(cpus int, groups []hier.GroupInfo) roles {
	r := roles{path: make([][]int, cpus), bit: make([]uint8, cpus), groups: groups,
		byPtr: map[uint64]int{}, migrator: map[int]uint8{}}
	byName := map[string]int{}
	for i, g := range groups {
		byName[g.Name] = i
	}
	for i, g := range groups {
		if g.Level != 0 {
			continue
		}
		for b, c := range g.CPUs {
			if c < 0 || c >= cpus {
				continue
			}
			r.bit[c] = 1 << b
			for j, ok := i, true; ok; j, ok = byName[groups[j].Parent] {
				r.path[c] = append(r.path[c], j)
			}
		}
	}
	return r
}

// bind names ptr the level-lvl group of cpu's path.
func (r *roles) bind(cpu, lvl int, ptr uint64) (int, bool) {
	if ptr == 0 || cpu < 0 || cpu >= len(r.path) || lvl < 0 || lvl >= len(r.path[cpu]) {
		return 0, false
	}
	g := r.path[cpu][lvl]
	r.byPtr[ptr] = g
	return g, true
}

// level0 takes a tmigr_cpu_* line's parent: cpu's level-0 group.
func (r *roles) level0(cpu int, parent uint64) { r.bind(cpu, 0, parent) }

// set takes a tmigr_group_set_cpu_active/inactive line printed by cpu: the
// group's migrator after the change.
func (r *roles) set(cpu int, t ftrace.TmigrGroupAndCPU) {
	g, ok := r.bind(cpu, t.Lvl, t.Group)
	if !ok {
		g, ok = r.byPtr[t.Group]
	}
	if ok {
		r.migrator[g] = t.Migrator
	}
	r.bind(cpu, t.Lvl+1, t.Parent)
}

// forget drops the migrators after lost events: the changes lost are
// unknown.
func (r *roles) forget() { clear(r.migrator) }

// of returns the names of the groups cpu is migrator of, from its level-0
// group up, as far as the stream has shown the migrators.
func (r *roles) of(cpu int) []string {
	out := []string{}
	if cpu < 0 || cpu >= len(r.path) {
		return out
	}
	bit := r.bit[cpu]
	for _, g := range r.path[cpu] {
		if m, ok := r.migrator[g]; !ok || m != bit {
			break
		}
		out = append(out, r.groups[g].Name)
		bit = r.groups[g].Groupmask
	}
	return out
}
