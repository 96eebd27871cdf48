package explain

import (
	"fmt"
	"math/bits"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/groups"
	"github.com/tmigr/tmigr/hier"
)

// Groups.
//
// The kernel prints its groups as hashed pointers, stable within one boot.
// What a pointer is follows from the lines themselves: a CPU's per-CPU
// events name its level-0 group (parent=), its own walks name the groups
// of its path level by level (tmigr_group_set_cpu_active/inactive with
// their parent and childmask, tmigr_handle_remote with its lvl), and
// tmigr_handle_remote_cpu names the target's level-0 group. kgroups learns
// each CPU's path, each CPU's bit in its level-0 group and each group's
// bit in its parent from them, over the whole recording (the hierarchy
// only grows, and a pointer never names two groups within a boot).
//
// Names ("GRP0:1", the notation of the kernel's own comments) come from
// the tree hier builds for the machine (package groups, the tree and
// pointer binding the replay uses too): the group at level l of CPU c's
// path is the l-th of c's path there. The bits of CPUs that never change
// state (a busy isolated CPU) come from there too. When the kernel's lines
// contradict that tree (another node layout than the one assumed, say),
// the tree is dropped and groups are named by their pointers; the bits
// then come from the lines alone. Unlike the replay, which has a model to
// hold each line to and stops at the first contradiction, the explanation
// learns what the lines say first and binds afterwards, so that a tree it
// cannot use costs names, not the explanation.
type kgroups struct {
	topo *topology // nil: no tree (none could be built, or the kernel's differs)
	// why the tree was dropped, "" when it was not
	dropped string

	lvl      map[uint64]int
	parent   map[uint64]uint64 // a group's parent (0 at the top)
	path     []map[int]uint64  // per CPU: level -> group
	cpuBit   []uint8           // a CPU's bit in its level-0 group, 0 unknown
	groupBit map[uint64]uint8  // a group's bit in its parent
	numa     map[uint64]int    // a group's node as printed (numa=)
	numaLine map[uint64]int
	bound    groups.Binding // pointers named after the tree

	// A recording read as a stream is learned as it is read: the tree is
	// bound as each fact arrives (sync), and every answer the builder
	// gets is kept (memo) with the version of what was known then
	// (ver, raised by each new fact). An answer that a later fact would
	// change is found when it is asked again or at the end (verify): the
	// explanation built on it may differ from the whole recording's.
	tree       *topology // the tree before any line contradicted it
	ver        int
	dirtyCPU   map[int]bool
	dirtyGroup map[uint64]bool
	memo       map[query]answer
	masks      map[uint64]maskAnswer
	changed    string // the first answer a later fact changed, "" none
}

// query is one question the builder asked: op with its arguments.
type query struct {
	op  uint8
	ptr uint64
	n   int
}

const (
	qName uint8 = iota
	qAt
	qBitOfCPU
	qBitOfGroup
	qChild
)

// answer is what a query returned, at version ver.
type answer struct {
	s   string
	p   uint64
	n   int
	ok  bool
	ver int
}

type maskAnswer struct {
	m   cpumask.Mask
	ok  bool
	ver int
}

// topology is the tree hier builds for the machine, with the kernel's boot
// line for it.
type topology struct {
	*groups.Tree
	boot ftrace.Hierarchy
}

// maxLevel is the highest group level a line may name: 8192 CPUs in
// groups of 8 need 5 levels, 64 nodes 2 more.
const maxLevel = 15

func newTopology(nodeOf []int) (*topology, error) {
	t, err := groups.ForNodes(nodeOf)
	if err != nil {
		return nil, err
	}
	return &topology{Tree: t, boot: ftrace.Hierarchy{Levels: t.Levels, ChildrenPerGroup: 8, CrossnodeLevel: t.CrossnodeLevel}}, nil
}

func newKGroups(ncpus int, topo *topology) *kgroups {
	g := &kgroups{topo: topo, tree: topo, lvl: map[uint64]int{}, parent: map[uint64]uint64{},
		path: make([]map[int]uint64, ncpus), cpuBit: make([]uint8, ncpus), groupBit: map[uint64]uint8{},
		numa: map[uint64]int{}, numaLine: map[uint64]int{},
		dirtyCPU: map[int]bool{}, dirtyGroup: map[uint64]bool{}, memo: map[query]answer{}, masks: map[uint64]maskAnswer{}}
	for c := range g.path {
		g.path[c] = map[int]uint64{}
	}
	return g
}

// learn takes in what every line says about the groups. A contradiction
// among the lines themselves is an error: the recording mixes two boots, or
// is not what it claims.
func (g *kgroups) learn(evs []ftrace.Event) error {
	for _, e := range evs {
		if err := g.learnOne(e); err != nil {
			return &ftrace.LineError{Line: e.Line, Err: err}
		}
	}
	return nil
}

func (g *kgroups) learnOne(e ftrace.Event) error {
	switch p := e.Data.(type) {
	case ftrace.TmigrGroupSetCPUActive:
		return g.transition(e, ftrace.TmigrGroupAndCPU(p))
	case ftrace.TmigrGroupSetCPUInactive:
		return g.transition(e, ftrace.TmigrGroupAndCPU(p))
	case ftrace.TmigrHandleRemote:
		return g.onPath(e.CPU, p.Lvl, p.Group)
	case ftrace.TmigrHandleRemoteCPU:
		return g.onPath(p.CPU, 0, p.Parent)
	case ftrace.TmigrConnectCPUParent:
		if err := g.onPath(p.CPU, p.Lvl, p.Parent); err != nil {
			return err
		}
		if p.Groupmask > 0xff {
			return fmt.Errorf("groupmask=%x is beyond a group's 8 children", p.Groupmask)
		}
		return g.setCPUBit(p.CPU, uint8(p.Groupmask))
	case ftrace.TmigrConnectChildParent:
		if err := g.link(p.Group, p.Parent, p.Lvl-1); err != nil {
			return err
		}
		if p.Groupmask > 0xff {
			return fmt.Errorf("groupmask=%x is beyond a group's 8 children", p.Groupmask)
		}
		return g.setGroupBit(p.Group, uint8(p.Groupmask))
	case ftrace.TmigrUpdateEvents:
		if err := g.setLevel(p.Group, p.GroupLvl); err != nil {
			return err
		}
		if p.Child != 0 {
			return g.link(p.Child, p.Group, p.GroupLvl-1)
		}
	default:
		if cg, ok := ftrace.CPUGroupOf(p); ok {
			return g.onPath(cg.CPU, 0, cg.Parent)
		}
	}
	return nil
}

func (g *kgroups) transition(e ftrace.Event, t ftrace.TmigrGroupAndCPU) error {
	cpu := e.CPU
	if _, ok := g.numa[t.Group]; !ok {
		g.numa[t.Group], g.numaLine[t.Group] = t.Numa, e.Line
		g.ver++
		g.dirtyGroup[t.Group] = true
	}
	if err := g.onPath(cpu, t.Lvl, t.Group); err != nil {
		return err
	}
	if t.Childmask == 0 || t.Childmask > 0xff || t.Childmask&(t.Childmask-1) != 0 {
		return fmt.Errorf("childmask=%x is not one child's bit", t.Childmask)
	}
	if t.Migrator != 0xff && t.Migrator&(t.Migrator-1) != 0 {
		return fmt.Errorf("migrator=%x is neither one child's bit nor ff (none)", t.Migrator)
	}
	if t.Parent != 0 {
		if err := g.onPath(cpu, t.Lvl+1, t.Parent); err != nil {
			return err
		}
	} else if err := g.setLevel(t.Group, t.Lvl); err != nil {
		return err
	}
	if t.Lvl == 0 {
		return g.setCPUBit(cpu, uint8(t.Childmask))
	}
	if child, ok := g.path[cpu][t.Lvl-1]; ok {
		return g.setGroupBit(child, uint8(t.Childmask))
	}
	return nil
}

func (g *kgroups) onPath(cpu, lvl int, ptr uint64) error {
	if cpu < 0 || cpu >= len(g.path) {
		return fmt.Errorf("CPU %d beyond the machine's %d CPUs", cpu, len(g.path))
	}
	if lvl < 0 || lvl > maxLevel {
		return fmt.Errorf("group level %d", lvl)
	}
	if old, ok := g.path[cpu][lvl]; ok && old == ptr {
		// Known, and linked to its neighbours on the path when it was
		// learned (or they were).
		return nil
	}
	if ptr == 0 {
		return fmt.Errorf("a null group on the path of CPU %d", cpu)
	}
	old, ok := g.path[cpu][lvl]
	if ok && old != ptr {
		return fmt.Errorf("CPU %d's level-%d group is %016x here, %016x earlier", cpu, lvl, ptr, old)
	}
	if !ok {
		g.path[cpu][lvl] = ptr
		g.ver++
		g.dirtyCPU[cpu] = true
	}
	if err := g.setLevel(ptr, lvl); err != nil {
		return err
	}
	if lvl > 0 {
		if below, ok := g.path[cpu][lvl-1]; ok {
			return g.link(below, ptr, lvl-1)
		}
	}
	if above, ok := g.path[cpu][lvl+1]; ok {
		return g.link(ptr, above, lvl)
	}
	return nil
}

func (g *kgroups) setLevel(ptr uint64, lvl int) error {
	if ptr == 0 {
		return nil
	}
	old, ok := g.lvl[ptr]
	if ok && old != lvl {
		return fmt.Errorf("group %016x is at level %d here, %d earlier", ptr, lvl, old)
	}
	if !ok {
		g.lvl[ptr] = lvl
		g.ver++
	}
	return nil
}

func (g *kgroups) link(child, parent uint64, childLvl int) error {
	if child == 0 || parent == 0 {
		return nil
	}
	if err := g.setLevel(child, childLvl); err != nil {
		return err
	}
	if err := g.setLevel(parent, childLvl+1); err != nil {
		return err
	}
	old, ok := g.parent[child]
	if ok && old != parent {
		return fmt.Errorf("group %016x's parent is %016x here, %016x earlier", child, parent, old)
	}
	if !ok {
		g.parent[child] = parent
		g.ver++
	}
	return nil
}

func (g *kgroups) setCPUBit(cpu int, bit uint8) error {
	old := g.cpuBit[cpu]
	if err := oneBit(bit, old, old != 0, "group", func() string { return fmt.Sprintf("CPU %d", cpu) }); err != nil {
		return err
	}
	if old == 0 {
		g.cpuBit[cpu] = bit
		g.ver++
		g.dirtyCPU[cpu] = true
	}
	return nil
}

func (g *kgroups) setGroupBit(ptr uint64, bit uint8) error {
	old, ok := g.groupBit[ptr]
	if err := oneBit(bit, old, ok, "parent", func() string { return fmt.Sprintf("group %016x", ptr) }); err != nil {
		return err
	}
	if !ok {
		g.groupBit[ptr] = bit
		g.ver++
		g.dirtyGroup[ptr] = true
	}
	return nil
}

// oneBit checks a member's bit in its group (in): one bit, and the one
// learned before if known. who names the member, for the error only.
func oneBit(bit, old uint8, known bool, in string, who func() string) error {
	if bit == 0 || bit&(bit-1) != 0 {
		return fmt.Errorf("%s's bit %x is not one bit", who(), bit)
	}
	if known && old != bit {
		return fmt.Errorf("%s's bit in its %s is %x here, %x earlier", who(), in, bit, old)
	}
	return nil
}

// bind names the learned groups after the tree, or drops the tree at the
// first line that contradicts it.
func (g *kgroups) bind() {
	for c := range g.path {
		if !g.bindCPU(c) {
			return
		}
	}
	for _, ptr := range g.bound.Pointers() {
		if !g.checkGroup(ptr) {
			return
		}
	}
}

// sync binds what was learned since the last sync: the paths and bits of
// the CPUs, and the bits and nodes of the groups, that changed. Its
// contradictions are the ones bind finds, perhaps another first.
func (g *kgroups) sync() {
	if len(g.dirtyCPU) == 0 && len(g.dirtyGroup) == 0 {
		return
	}
	for c := range g.dirtyCPU {
		if !g.bindCPU(c) {
			break
		}
		for _, ptr := range g.path[c] {
			g.dirtyGroup[ptr] = true
		}
	}
	for ptr := range g.dirtyGroup {
		if _, ok := g.bound.ID(ptr); ok && !g.checkGroup(ptr) {
			break
		}
	}
	clear(g.dirtyCPU)
	clear(g.dirtyGroup)
}

// rebind binds the whole of what was learned afresh, as bind after learn
// would: the tree and the reason it was dropped are the whole
// recording's, whatever order the facts came in.
func (g *kgroups) rebind() {
	g.topo, g.dropped = g.tree, ""
	g.bound.Reset()
	g.bind()
	clear(g.dirtyCPU)
	clear(g.dirtyGroup)
	g.ver++
}

func (g *kgroups) fail(format string, args ...any) {
	g.dropped = fmt.Sprintf(format, args...)
	g.topo = nil
	g.bound.Reset()
	g.ver++
}

// bindCPU binds the groups of c's path; false when there is no tree (any
// longer).
func (g *kgroups) bindCPU(c int) bool {
	t := g.topo
	if t == nil {
		return false
	}
	if b := g.cpuBit[c]; b != 0 && b != t.CPUBit[c] {
		g.fail("CPU %d has bit %x in its group, %x in the tree tmigr builds for this machine", c, b, t.CPUBit[c])
		return false
	}
	for lvl := 0; lvl <= maxLevel; lvl++ {
		ptr, ok := g.path[c][lvl]
		if !ok {
			continue
		}
		if lvl >= len(t.Path[c]) {
			g.fail("CPU %d has a level-%d group, the tree tmigr builds has %d levels", c, lvl, len(t.Path[c]))
			return false
		}
		id := t.Path[c][lvl]
		if _, bound := g.bound.ID(ptr); !bound {
			g.ver++
		}
		if x := g.bound.Bind(ptr, id); x != nil {
			if x.Was != hier.NoGroup {
				g.fail("group %016x is on the paths of CPUs that share no %v in the tree tmigr builds", ptr, x.Was)
			} else {
				g.fail("%v has two pointers, %016x and %016x: the CPUs below it are not grouped as tmigr groups them", id, x.WasPtr, ptr)
			}
			return false
		}
	}
	return true
}

// checkGroup holds a bound group's bit and node to the tree's.
func (g *kgroups) checkGroup(ptr uint64) bool {
	t := g.topo
	if t == nil {
		return false
	}
	id, _ := g.bound.ID(ptr)
	if b, ok := g.groupBit[ptr]; ok && t.Info[id].Bit != b {
		g.fail("%v has bit %x in its parent, %x in the tree tmigr builds", id, b, t.Info[id].Bit)
		return false
	}
	if n, ok := g.numa[ptr]; ok && n != t.Info[id].Node {
		g.fail("line %d: %v is on node %d, on node %d in the tree tmigr builds", g.numaLine[ptr], id, n, t.Info[id].Node)
		return false
	}
	return true
}

// ask returns the answer to q, computing it with f when what is known has
// changed since it was last given; an answer that differs from the one
// given before is noted in changed.
func (g *kgroups) ask(q query, f func() answer) answer {
	a, seen := g.memo[q]
	if seen && a.ver == g.ver {
		return a
	}
	b := f()
	b.ver = g.ver
	if seen && g.changed == "" && (a.s != b.s || a.p != b.p || a.n != b.n || a.ok != b.ok) {
		g.changed = fmt.Sprintf("what the trace says of group %016x (or CPU %d) grew after it was used", q.ptr, q.n)
	}
	g.memo[q] = b
	return b
}

// verify asks every question again, of what is known now.
func (g *kgroups) verify() {
	g.ver++
	for q := range g.memo {
		switch q.op {
		case qName:
			g.name(q.ptr)
		case qAt:
			g.at(q.n, int(q.ptr))
		case qBitOfCPU:
			g.bitOfCPU(q.n)
		case qBitOfGroup:
			g.bitOfGroup(q.ptr)
		case qChild:
			g.child(q.ptr, uint8(q.n))
		}
	}
	for ptr := range g.masks {
		g.cpusOf(ptr)
	}
}

// name returns a group's name: "GRP0:1" after the tree, else by pointer.
func (g *kgroups) name(ptr uint64) string {
	return g.ask(query{op: qName, ptr: ptr}, func() answer { return answer{s: g.nameOf(ptr)} }).s
}

func (g *kgroups) nameOf(ptr uint64) string {
	if id, ok := g.bound.ID(ptr); ok {
		return id.String()
	}
	if l, ok := g.lvl[ptr]; ok {
		return fmt.Sprintf("the level-%d group %08x", l, uint32(ptr))
	}
	return fmt.Sprintf("group %08x", uint32(ptr))
}

// at returns the group at level lvl of cpu's path.
func (g *kgroups) at(cpu, lvl int) (uint64, bool) {
	a := g.ask(query{op: qAt, ptr: uint64(lvl), n: cpu}, func() answer {
		p, ok := g.atOf(cpu, lvl)
		return answer{p: p, ok: ok}
	})
	return a.p, a.ok
}

func (g *kgroups) atOf(cpu, lvl int) (uint64, bool) {
	if cpu < 0 || cpu >= len(g.path) {
		return 0, false
	}
	if p, ok := g.path[cpu][lvl]; ok {
		return p, true
	}
	if t := g.topo; t != nil && lvl < len(t.Path[cpu]) {
		return g.bound.Ptr(t.Path[cpu][lvl])
	}
	return 0, false
}

// bitOfCPU is cpu's bit in its level-0 group, 0 when unknown.
func (g *kgroups) bitOfCPU(cpu int) uint8 {
	return uint8(g.ask(query{op: qBitOfCPU, n: cpu}, func() answer { return answer{n: int(g.bitOfCPUOf(cpu))} }).n)
}

func (g *kgroups) bitOfCPUOf(cpu int) uint8 {
	if b := g.cpuBit[cpu]; b != 0 {
		return b
	}
	if g.topo != nil {
		return g.topo.CPUBit[cpu]
	}
	return 0
}

// bitOfGroup is a group's bit in its parent, 0 when unknown.
func (g *kgroups) bitOfGroup(ptr uint64) uint8 {
	return uint8(g.ask(query{op: qBitOfGroup, ptr: ptr}, func() answer { return answer{n: int(g.bitOfGroupOf(ptr))} }).n)
}

func (g *kgroups) bitOfGroupOf(ptr uint64) uint8 {
	if b, ok := g.groupBit[ptr]; ok {
		return b
	}
	if id, ok := g.bound.ID(ptr); ok {
		return g.topo.Info[id].Bit
	}
	return 0
}

// child names the child of group ptr with the given bit: a CPU at level
// 0 ("CPU 3"), a group above; ok is false when the trace and the tree do
// not tell.
func (g *kgroups) child(ptr uint64, bit uint8) (name string, cpu int, ok bool) {
	a := g.ask(query{op: qChild, ptr: ptr, n: int(bit)}, func() answer {
		s, c, ok := g.childOf(ptr, bit)
		return answer{s: s, n: c, ok: ok}
	})
	return a.s, a.n, a.ok
}

func (g *kgroups) childOf(ptr uint64, bit uint8) (name string, cpu int, ok bool) {
	lvl, known := g.lvl[ptr]
	if !known || bit == 0 {
		return "", -1, false
	}
	if lvl == 0 {
		for c := range g.path {
			if g.path[c][0] == ptr && g.bitOfCPUOf(c) == bit {
				return fmt.Sprintf("CPU %d", c), c, true
			}
		}
		if id, ok := g.bound.ID(ptr); ok {
			if _, c, ok := g.topo.Child(id, bit); ok && c >= 0 {
				return fmt.Sprintf("CPU %d", c), c, true
			}
		}
		return "", -1, false
	}
	for k, p := range g.parent {
		if p == ptr && g.bitOfGroupOf(k) == bit {
			return g.nameOf(k), -1, true
		}
	}
	if id, ok := g.bound.ID(ptr); ok {
		if k, _, ok := g.topo.Child(id, bit); ok && k != hier.NoGroup {
			return k.String(), -1, true
		}
	}
	return "", -1, false
}

// cpusOf returns the CPUs below a group, as far as known.
func (g *kgroups) cpusOf(ptr uint64) (cpumask.Mask, bool) {
	a, seen := g.masks[ptr]
	if seen && a.ver == g.ver {
		return a.m, a.ok
	}
	m, ok := g.cpusOfNow(ptr)
	if seen && g.changed == "" && (a.m != m || a.ok != ok) {
		g.changed = fmt.Sprintf("the CPUs below group %016x grew after they were used", ptr)
	}
	g.masks[ptr] = maskAnswer{m: m, ok: ok, ver: g.ver}
	return m, ok
}

func (g *kgroups) cpusOfNow(ptr uint64) (cpumask.Mask, bool) {
	if id, ok := g.bound.ID(ptr); ok {
		return g.topo.Info[id].Below, true
	}
	var m cpumask.Mask
	lvl, ok := g.lvl[ptr]
	if !ok {
		return m, false
	}
	for c := range g.path {
		if g.path[c][lvl] == ptr {
			m.Set(c)
		}
	}
	return m, false
}

// lowest returns the lowest bit of mask, 0 for none.
func lowest(mask uint8) uint8 {
	if mask == 0 {
		return 0
	}
	return 1 << bits.TrailingZeros8(mask)
}
