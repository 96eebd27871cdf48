package hier

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
)

// GroupInfo is a snapshot of one group, for views, checks and tests.
type GroupInfo struct {
	ID          GroupID `json:"-"`
	Name        string  `json:"name"` // "GRPl:i"
	Level       int     `json:"level"`
	Index       int     `json:"index"` // creation order within the level
	Node        int     `json:"node"`  // NoNode (-1) at and above the crossnode level
	Parent      string  `json:"parent,omitempty"`
	Groupmask   uint8   `json:"groupmask"` // this group's bit in its parent
	NumChildren int     `json:"num_children"`
	// Children are the child groups' names (level > 0), CPUs the member
	// CPUs (level 0), both in child-bit order (bit 0 first: join order).
	Children []string `json:"children,omitempty"`
	CPUs     []int    `json:"cpus,omitempty"`

	// State, not part of the JSON topology.
	Active     uint8       `json:"-"`
	Migrator   uint8       `json:"-"` // MigratorNone if none
	Seq        uint16      `json:"-"`
	NextExpiry int64       `json:"-"`
	Events     []EventInfo `json:"-"` // queue order
}

// EventInfo is a snapshot of a queued event.
type EventInfo struct {
	Owner   string // "cpu5" for a CPU event, the group's name for a group event
	CPU     int    // the CPU whose timer the event stands for
	Expires int64
	Ignore  bool
}

// String formats an event as in the scenario files: "cpu5@900",
// "GRP0:1@900(cpu5)", with "!" in front of an ignored one.
func (e EventInfo) String() string {
	var b strings.Builder
	if e.Ignore {
		b.WriteByte('!')
	}
	b.WriteString(e.Owner)
	b.WriteByte('@')
	b.WriteString(fmtTime(e.Expires))
	if !strings.HasPrefix(e.Owner, "cpu") {
		b.WriteString("(cpu" + strconv.Itoa(e.CPU) + ")")
	}
	return b.String()
}

// CPUInfo is a snapshot of one CPU's hierarchy state.
type CPUInfo struct {
	CPU       int
	Group     GroupID // NoGroup until prepared
	Groupmask uint8
	Online    bool // between SetAvailable and ClearAvailable
	Available bool
	Idle      bool
	Remote    bool
	Wakeup    int64
	// The CPU's event: expiry, ignore flag, and whether it is queued.
	EvtExpires int64
	EvtIgnore  bool
	EvtQueued  bool
}

// Topology is the JSON view of the hierarchy's structure.
type Topology struct {
	CPUs           int         `json:"cpus"`
	Nodes          int         `json:"nodes"`
	Levels         int         `json:"levels"`
	CrossnodeLevel int         `json:"crossnode_level"`
	Root           string      `json:"root,omitempty"`
	Groups         []GroupInfo `json:"groups"`
}

// Groups returns a snapshot of every group, by level then index.
func (h *Hierarchy) Groups() []GroupInfo {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	return h.groupsLocked()
}

func (h *Hierarchy) groupsLocked() []GroupInfo {
	var out []GroupInfo
	kids := h.childrenLocked()
	for _, list := range h.lists {
		for _, g := range list {
			gi := GroupInfo{
				ID: g.id(), Name: g.id().String(), Level: g.level, Index: g.index, Node: g.node,
				Groupmask: g.groupmask, NumChildren: g.numChildren,
			}
			if p := g.parent.Load(); p != nil {
				gi.Parent = p.id().String()
			}
			for _, c := range kids[g] {
				if c.cpu >= 0 {
					gi.CPUs = append(gi.CPUs, c.cpu)
				} else {
					gi.Children = append(gi.Children, c.g.id().String())
				}
			}
			s := g.loadState()
			gi.Active, gi.Migrator, gi.Seq = s.active(), s.migrator(), s.seq()
			g.mu.Lock()
			gi.NextExpiry = g.nextExpiry.Load()
			for i := 0; i < g.events.n; i++ {
				gi.Events = append(gi.Events, eventInfo(g.events.e[i]))
			}
			g.mu.Unlock()
			out = append(out, gi)
		}
	}
	return out
}

// Queue returns the events queued in group id, in queue order: the Events
// Groups reports for it, without a snapshot of every other group. Nil for
// no such group.
func (h *Hierarchy) Queue(id GroupID) []EventInfo {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	if id.Level < 0 || id.Level >= len(h.lists) || id.Index < 0 || id.Index >= len(h.lists[id.Level]) {
		return nil
	}
	g := h.lists[id.Level][id.Index]
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []EventInfo
	for i := 0; i < g.events.n; i++ {
		out = append(out, eventInfo(g.events.e[i]))
	}
	return out
}

func eventInfo(e *event) EventInfo {
	ei := EventInfo{CPU: e.cpu, Expires: e.expires, Ignore: e.ignore.Load()}
	if e.ownerGroup != nil {
		ei.Owner = e.ownerGroup.id().String()
	} else {
		ei.Owner = "cpu" + strconv.Itoa(e.ownerCPU)
	}
	return ei
}

// child is a member of a group: a CPU (cpu >= 0) or a group.
type child struct {
	cpu  int
	g    *group
	mask uint8
}

// childrenLocked maps every group to its members in child-bit order.
func (h *Hierarchy) childrenLocked() map[*group][]child {
	kids := make(map[*group][]child)
	for _, list := range h.lists {
		for _, g := range list {
			if p := g.parent.Load(); p != nil {
				kids[p] = append(kids[p], child{cpu: -1, g: g, mask: g.groupmask})
			}
		}
	}
	for i := range h.cpus {
		t := &h.cpus[i]
		if g := t.tmgroup.Load(); g != nil {
			kids[g] = append(kids[g], child{cpu: i, mask: t.groupmask})
		}
	}
	for _, k := range kids {
		sort.SliceStable(k, func(a, b int) bool { return k[a].mask < k[b].mask })
	}
	return kids
}

// CPU returns a snapshot of cpu's state.
func (h *Hierarchy) CPU(cpu int) CPUInfo {
	t := h.tmc(cpu)
	if t == nil {
		return CPUInfo{CPU: cpu, Group: NoGroup, Wakeup: KtimeMax, EvtExpires: KtimeMax}
	}
	h.hotplugMu.Lock()
	online := h.online.Test(cpu)
	h.hotplugMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	ci := CPUInfo{
		CPU: cpu, Group: t.parentID(), Groupmask: t.groupmask, Online: online,
		Available: t.available.Load(), Idle: t.idle.Load(), Remote: t.remote.Load(), Wakeup: t.wakeup.Load(),
		EvtIgnore: t.evt.ignore.Load(),
	}
	// expires and queued belong to the group lock.
	if g := t.tmgroup.Load(); g != nil {
		g.mu.Lock()
		ci.EvtExpires, ci.EvtQueued = t.evt.expires, t.evt.queued
		g.mu.Unlock()
	} else {
		ci.EvtExpires = t.evt.expires
	}
	return ci
}

// Root returns the top group (tmigr_root), or NoGroup before any CPU was
// prepared.
func (h *Hierarchy) Root() GroupID {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	if h.root == nil {
		return NoGroup
	}
	return h.root.id()
}

// Topology returns the structure: sizes and every group with its node,
// parent and children.
func (h *Hierarchy) Topology() Topology {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	t := Topology{CPUs: h.ncpus, Nodes: h.nnodes, Levels: h.levels, CrossnodeLevel: h.crossnode, Groups: h.groupsLocked()}
	if t.Groups == nil {
		t.Groups = []GroupInfo{}
	}
	if h.root != nil {
		t.Root = h.root.id().String()
	}
	return t
}

// Drawing draws the hierarchy in the style of the kernel's header comment:
// one line per level from the top down, every group centred over the
// level-0 groups below it with its children's names underneath, and under
// the level-0 groups their CPUs and NUMA node:
//
//	LVL 1          [GRP1:0]
//	           GRP0:0 - GRP0:1
//
//	LVL 0  [GRP0:0]  [GRP0:1]
//	CPUS     0-7       8-15
//	NODE      0         0
//
// Groups appear in tree order, children in child-bit (join) order.
func (h *Hierarchy) Drawing() string {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	if len(h.lists) == 0 || len(h.lists[0]) == 0 {
		return ""
	}
	kids := h.childrenLocked()

	// Roots in creation order (one once setup is complete), then
	// depth-first: the level-0 groups in drawing order.
	var roots []*group
	for l := len(h.lists) - 1; l >= 0; l-- {
		for _, g := range h.lists[l] {
			if g.parent.Load() == nil {
				roots = append(roots, g)
			}
		}
	}
	type span struct{ lo, hi int } // columns, hi exclusive
	spans := make(map[*group]span)
	var leaves []*group
	var cells []struct{ name, cpus, node string }
	col := 0
	var place func(g *group)
	place = func(g *group) {
		if g.level == 0 {
			var m cpumask.Mask
			for _, c := range kids[g] {
				m.Set(c.cpu)
			}
			cell := struct{ name, cpus, node string }{"[" + g.id().String() + "]", m.String(), strconv.Itoa(g.node)}
			w := max(len(cell.name), len(cell.cpus), len(cell.node)) + 2
			spans[g] = span{col, col + w}
			col += w
			leaves = append(leaves, g)
			cells = append(cells, cell)
			return
		}
		lo := col
		for _, c := range kids[g] {
			place(c.g)
		}
		if col == lo { // a group with no members yet
			col += len(g.id().String()) + 4
		}
		spans[g] = span{lo, col}
	}
	for _, r := range roots {
		place(r)
	}

	const margin = 7 // "LVL 0  "
	var b strings.Builder
	line := make([]byte, 0, margin+col)
	put := func(s string, sp span) {
		pos := margin + sp.lo + (sp.hi-sp.lo-len(s))/2
		for len(line) < pos+len(s) {
			line = append(line, ' ')
		}
		if pos < len(line) && line[pos] != ' ' { // collision: shift right by one
			pos++
			for len(line) < pos+len(s) {
				line = append(line, ' ')
			}
		}
		copy(line[pos:], s)
	}
	flush := func() {
		b.WriteString(strings.TrimRight(string(line), " "))
		b.WriteByte('\n')
		line = line[:0]
	}
	top := 0
	for l := range h.lists {
		if len(h.lists[l]) > 0 {
			top = l
		}
	}
	for l := top; l >= 0; l-- {
		line = append(line, fmt.Sprintf("%-*s", margin, "LVL "+strconv.Itoa(l))...)
		var groups []*group
		for _, r := range roots {
			collect(r, l, kids, &groups)
		}
		for _, g := range groups {
			put("["+g.id().String()+"]", spans[g])
		}
		flush()
		if l == 0 {
			break
		}
		for _, g := range groups {
			s := childNames(kids[g])
			if sp := spans[g]; len(s) > sp.hi-sp.lo {
				s = strconv.Itoa(len(kids[g])) + " children"
			}
			put(s, spans[g])
		}
		flush()
		b.WriteByte('\n')
	}
	line = append(line, "CPUS   "...)
	for i, g := range leaves {
		put(cells[i].cpus, spans[g])
	}
	flush()
	line = append(line, "NODE   "...)
	for i, g := range leaves {
		put(cells[i].node, spans[g])
	}
	flush()
	return b.String()
}

// DrawingWidth is the widest Drawing that Picture returns; wider machines
// get the Outline.
const DrawingWidth = 160

// Picture returns the Drawing when it fits in DrawingWidth columns, else the
// Outline: a drawing of a machine of thousands of CPUs is one line of
// thousands of columns.
func (h *Hierarchy) Picture() string {
	d := h.Drawing()
	for l := range strings.SplitSeq(d, "\n") {
		if len(l) > DrawingWidth {
			return h.Outline()
		}
	}
	return d
}

// Outline lists the hierarchy as an indented tree, one line per group of
// level 1 and above, with its node and CPUs, and the level-0 groups below
// it on the same line:
//
//	GRP2:0 node - CPUs 0-127
//	  GRP1:0 node 0 CPUs 0-63: GRP0:0 0-7, GRP0:1 8-15, ...
//
// A machine whose hierarchy has a single level is one level-0 group.
func (h *Hierarchy) Outline() string {
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	if len(h.lists) == 0 || len(h.lists[0]) == 0 {
		return ""
	}
	kids := h.childrenLocked()
	cpus := make(map[*group]cpumask.Mask)
	var under func(g *group) cpumask.Mask
	under = func(g *group) cpumask.Mask {
		if m, ok := cpus[g]; ok {
			return m
		}
		var m cpumask.Mask
		for _, c := range kids[g] {
			if c.g == nil {
				m.Set(c.cpu)
			} else {
				m = m.Or(under(c.g))
			}
		}
		cpus[g] = m
		return m
	}
	node := func(g *group) string {
		if g.node == NoNode {
			return "-"
		}
		return strconv.Itoa(g.node)
	}
	var b strings.Builder
	var walk func(g *group, depth int)
	walk = func(g *group, depth int) {
		fmt.Fprintf(&b, "%s%s node %s CPUs %s", strings.Repeat("  ", depth), g.id(), node(g), under(g))
		if g.level == 1 {
			b.WriteString(":")
			for i, c := range kids[g] {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, " %s %s", c.g.id(), under(c.g))
			}
		}
		b.WriteByte('\n')
		if g.level > 1 {
			for _, c := range kids[g] {
				walk(c.g, depth+1)
			}
		}
	}
	for l := len(h.lists) - 1; l >= 0; l-- {
		for _, g := range h.lists[l] {
			if g.parent.Load() == nil {
				walk(g, 0)
			}
		}
	}
	return b.String()
}

// collect appends the groups of level l below (and including) g, in tree
// order.
func collect(g *group, l int, kids map[*group][]child, out *[]*group) {
	if g.level == l {
		*out = append(*out, g)
		return
	}
	for _, c := range kids[g] {
		if c.g != nil {
			collect(c.g, l, kids, out)
		}
	}
}

// childNames is "GRP0:0 - GRP0:2" for children with consecutive indexes,
// else a comma-separated list.
func childNames(k []child) string {
	if len(k) == 0 {
		return ""
	}
	consecutive := true
	for i := 1; i < len(k); i++ {
		if k[i].g.index != k[i-1].g.index+1 {
			consecutive = false
		}
	}
	if len(k) == 1 {
		return k[0].g.id().String()
	}
	if consecutive {
		return k[0].g.id().String() + " - " + k[len(k)-1].g.id().String()
	}
	names := make([]string, len(k))
	for i, c := range k {
		names[i] = c.g.id().String()
	}
	return strings.Join(names, ", ")
}

// State renders the whole dynamic state as the scenario files show it: the
// groups in tree order, indented by depth, each with its state and event
// queue, and under each level-0 group its CPUs:
//
//	GRP1:0 active=0x2 migrator=0x2 seq=4 next=max events=[!GRP0:0@900(cpu1)]
//	  GRP0:0 active=0x0 migrator=none seq=3 next=900 events=[cpu1@900]
//	    cpu0 idle wakeup=max
//	    cpu1 idle wakeup=max evt=900
//
// A CPU line shows "active", "idle" or "unavailable", its wakeup, its event
// if queued ("!" marks an ignored one) and "remote" while being expired.
func (h *Hierarchy) State() string {
	h.hotplugMu.Lock()
	online := h.online
	h.hotplugMu.Unlock()
	h.setupMu.Lock()
	defer h.setupMu.Unlock()
	kids := h.childrenLocked()
	var b strings.Builder
	var roots []*group
	for l := len(h.lists) - 1; l >= 0; l-- {
		for _, g := range h.lists[l] {
			if g.parent.Load() == nil {
				roots = append(roots, g)
			}
		}
	}
	var show func(g *group, depth int)
	show = func(g *group, depth int) {
		ind := strings.Repeat("  ", depth)
		s := g.loadState()
		g.mu.Lock()
		fmt.Fprintf(&b, "%s%s active=%#x migrator=%s seq=%d next=%s events=[", ind, g.id(), s.active(), fmtMigrator(s.migrator()), s.seq(), fmtTime(g.nextExpiry.Load()))
		for i := 0; i < g.events.n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(eventInfo(g.events.e[i]).String())
		}
		g.mu.Unlock()
		b.WriteString("]\n")
		for _, c := range kids[g] {
			if c.g != nil {
				show(c.g, depth+1)
				continue
			}
			// No per-CPU lock: State may be called while a walk holding
			// one is paused (tests). The fields read are atomics, and the
			// event's expiry belongs to the group lock.
			t := &h.cpus[c.cpu]
			st := "active"
			switch {
			case !t.available.Load() && online.Test(c.cpu):
				st = "unavailable"
			case !t.available.Load():
				st = "offline"
			case t.idle.Load():
				st = "idle"
			}
			fmt.Fprintf(&b, "%s  cpu%d %s wakeup=%s", ind, c.cpu, st, fmtTime(t.wakeup.Load()))
			g.mu.Lock()
			if t.evt.queued {
				b.WriteString(" evt=")
				if t.evt.ignore.Load() {
					b.WriteByte('!')
				}
				b.WriteString(fmtTime(t.evt.expires))
			}
			g.mu.Unlock()
			if t.remote.Load() {
				b.WriteString(" remote")
			}
			b.WriteByte('\n')
		}
	}
	for _, r := range roots {
		show(r, 0)
	}
	return b.String()
}

func fmtTime(t int64) string {
	if t == KtimeMax {
		return "max"
	}
	return strconv.FormatInt(t, 10)
}

func fmtMigrator(m uint8) string {
	if m == MigratorNone {
		return "none"
	}
	return fmt.Sprintf("%#x", m)
}

// MigratorCPUs resolves each group's migrator down to a CPU: a group's
// migrator is one of its children, and a child group's duty is carried by
// its own migrator, down to a CPU of level 0. It returns, index for index
// with gs (a View's groups), that CPU, or -1 for a group without a
// migrator (every child idle).
func MigratorCPUs(gs []GroupInfo) []int {
	byName := make(map[string]*GroupInfo, len(gs))
	for i := range gs {
		byName[gs[i].Name] = &gs[i]
	}
	resolve := func(g *GroupInfo) int {
		for g != nil {
			if g.Migrator == MigratorNone || g.Migrator == 0 {
				return -1
			}
			bit := bits.TrailingZeros8(g.Migrator)
			if g.Level == 0 {
				if bit < len(g.CPUs) {
					return g.CPUs[bit]
				}
				return -1
			}
			if bit >= len(g.Children) {
				return -1
			}
			g = byName[g.Children[bit]]
		}
		return -1
	}
	out := make([]int, len(gs))
	for i := range gs {
		out[i] = resolve(&gs[i])
	}
	return out
}
