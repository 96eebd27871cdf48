package viz

import (
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// ReadFile reads an ftrace text file and builds its timeline.
func ReadFile(path string) (*Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tl, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tl, nil
}

// Read reads ftrace text (package ftrace's Reader: the kernel's trace file,
// trace-cmd report, what tmigr sim --trace writes) and builds its
// timeline with FromEvents. The first malformed line is the error.
func Read(r io.Reader) (*Timeline, error) { return read(r, true) }

func read(r io.Reader, warnSorted bool) (*Timeline, error) {
	rd := ftrace.NewReader(r)
	var events []ftrace.Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	return fromEvents(rd.Header(), events, warnSorted)
}

// FromEvents builds the timeline of a whole recording. Events out of time
// order are sorted by timestamp first (stably, so each CPU's events keep
// their order), and a warning names the first line out of order: the
// kernel's own trace file is in time order, but per-CPU files put one
// after the other are not, nor is what tmigr sim --trace writes, which
// prints the events of one CPU's interrupt as a block.
func FromEvents(hdr ftrace.Header, events []ftrace.Event) (*Timeline, error) {
	return fromEvents(hdr, events, true)
}

// fromEvents is FromEvents; warnSorted tells whether sorting is worth a
// warning (not for the simulator's own trace, where it is expected and
// exact).
func fromEvents(hdr ftrace.Header, events []ftrace.Event, warnSorted bool) (*Timeline, error) {
	sorted := true
	var first ftrace.Event
	for i := 1; i < len(events); i++ {
		if events[i].TS < events[i-1].TS {
			sorted, first = false, events[i]
			break
		}
	}
	if !sorted {
		events = slices.Clone(events)
		sort.SliceStable(events, func(i, j int) bool { return events[i].TS < events[j].TS })
	}
	tl, err := Build(hdr, slices.Values(events))
	if err != nil {
		return nil, err
	}
	if !sorted && warnSorted {
		tl.Warnings = append([]string{fmt.Sprintf("line %d: the trace is out of time order from here (%s at %s s): its events were sorted by timestamp",
			first.Line, eventName(first), ftrace.FormatTS(first.TS))}, tl.Warnings...)
	}
	return tl, nil
}

// Build derives the timeline of a recording from its header and its
// events in trace order. It reads:
//
//   - CPU states from tmigr_cpu_active (active), tmigr_cpu_idle and
//     tmigr_cpu_new_timer[_idle] (idle), tmigr_cpu_available/unavailable
//     (and their pre-2025 names online/offline), and, for CPUs that print
//     nothing (a busy isolated CPU never goes idle), the active masks of
//     their level-0 group's tmigr_group_set_cpu_active/inactive lines;
//   - each group's migrator from those lines, resolved down to the CPU that
//     does the duty (a level-1 group's migrator is a level-0 group, whose
//     migrator is a CPU);
//   - expiries from timer_expire_entry/exit and hrtimer_expire_entry/exit:
//     a wheel timer's owner is the CPU of the tmigr_handle_remote_cpu under
//     way on the handler (the kernel prints it before expiring that CPU's
//     timers, and the handler's next tmigr line ends it), else the base its
//     timer_start named (cpu=), else the handler itself;
//   - lost-events and buffer-started markers: what the CPU was doing there
//     becomes unknown.
//
// The error is for a trace that cannot be pictured: events out of time
// order (FromEvents sorts them), a CPU beyond the machine. Contradictions
// a picture survives are Warnings.
func Build(hdr ftrace.Header, events iter.Seq[ftrace.Event]) (*Timeline, error) {
	b := &builder{
		tl:     &Timeline{Machine: hdr.Machine},
		ptrs:   map[uint64]int{},
		grpPtr: map[int]uint64{},
		starts: map[uint64]wheelStart{},
		hrs:    map[uint64]hrStart{},
		warn:   map[string]*warning{},
	}
	if err := b.setup(hdr); err != nil {
		return nil, err
	}
	var err error
	events(func(ev ftrace.Event) bool {
		err = b.event(ev)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	b.finish()
	return b.tl, nil
}

type builder struct {
	tl    *Timeline
	model bool    // groups from the machine line
	ncpu  int     // the machine's CPUs, 0 without a machine line
	paths [][]int // per CPU: its groups by level, -1 where unknown
	// ptrs binds the trace's group pointers to groups; grpPtr the reverse.
	ptrs   map[uint64]int
	grpPtr map[int]uint64
	cpus   []cpuState
	grps   []groupState
	starts map[uint64]wheelStart
	hrs    map[uint64]hrStart
	dirty  []int // CPUs whose migrator roles changed in this event
	seen   bool
	last   int64
	line   int
	warn   map[string]*warning
	order  []string
}

type cpuState struct {
	state     State
	known     bool
	spanStart int64
	since     int64 // where the CPU's record begins, for inferring back
	noInfer   bool  // it lost events since: nothing can be inferred back
	ctx       int   // owner of the remote expiry under way, -1 for none
	wheel     int   // the open wheel expiry, -1 for none
	hr        []int // the open hrtimer expiries, innermost last
	roles     []int // groups it is migrator of, sorted
	roleSpan  []int // the groups of its open RoleSpan
	roleStart int64
}

type groupState struct {
	bit              int  // the migrator's child bit; -1 none; unknownBit
	cpu              int  // the CPU the duty resolves to, -1
	open             bool // a MigratorSpan is open
	spanBit, spanCPU int
	spanStart        int64
}

const unknownBit = -2

type wheelStart struct {
	base, by        int
	expires, bucket uint64
}

type hrStart struct {
	by      int
	expires int64
}

type warning struct {
	first string
	n     int
}

// warnf records a warning of a kind; only the first of each kind is kept
// in words, the others are counted.
func (b *builder) warnf(kind, format string, args ...any) {
	w := b.warn[kind]
	if w == nil {
		w = &warning{first: fmt.Sprintf(format, args...)}
		b.warn[kind] = w
		b.order = append(b.order, kind)
	}
	w.n++
}

func (b *builder) setup(hdr ftrace.Header) error {
	tl := b.tl
	n := hdr.CPUs
	if m := hdr.Machine; m != nil {
		if err := m.Validate(); err != nil {
			return err
		}
		b.ncpu, n = m.CPUs, m.CPUs
		tl.Kernel, tl.HZ = m.Kernel, m.HZ
	}
	if n < 0 || n > cpumask.MaxCPUs {
		return fmt.Errorf("header: %d CPUs (at most %d)", n, cpumask.MaxCPUs)
	}
	if n > 0 {
		b.ensure(n - 1)
	}
	m := hdr.Machine
	if m == nil {
		return nil
	}
	iso, err := m.Isolation()
	if err != nil {
		b.warnf("cmdline", "machine: command line: %v", err)
	}
	for _, w := range iso.Warnings {
		b.warnf("cmdline:"+w, "machine: the kernel would log %q", w)
	}
	excl := excludesIsolated(m.Kernel)
	for c := range tl.CPUs {
		cp := &tl.CPUs[c]
		cp.Node = m.Node(c)
		cp.Isolated, cp.NohzFull = iso.Domain.Test(c), iso.NohzFull.Test(c)
		cp.Excluded = excl && cp.Isolated && !cp.NohzFull
	}
	if m.CPUs > 1 {
		groups, paths, err := machineTopology(m)
		if err != nil {
			b.warnf("topology", "the machine's hierarchy cannot be built (%v): groups are pieced together from the trace", err)
		} else {
			tl.Groups, b.paths, b.model, tl.FromMachine = groups, paths, true, true
			b.grps = make([]groupState, len(groups))
			for i := range b.grps {
				b.grps[i] = groupState{bit: unknownBit, cpu: -1}
			}
			for c, p := range paths {
				if len(p) > 0 {
					tl.CPUs[c].Group = p[0]
				}
			}
		}
	}
	return nil
}

// excludesIsolated tells whether a kernel release keeps isolated CPUs out
// of the hierarchy: 6.19 and later (commit 7dec062cfcf2). Unknown releases
// do not.
func excludesIsolated(release string) bool {
	major, rest, ok := strings.Cut(release, ".")
	if !ok {
		return false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(rest[:i])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > 6 || maj == 6 && mnr >= 19
}

// ensure makes room for CPUs up to cpu.
func (b *builder) ensure(cpu int) {
	tl := b.tl
	for len(tl.CPUs) <= cpu {
		c := len(tl.CPUs)
		tl.CPUs = append(tl.CPUs, CPU{CPU: c, Node: -1, Group: -1})
		b.cpus = append(b.cpus, cpuState{ctx: -1, wheel: -1, since: tl.Start})
		if !b.model {
			b.paths = append(b.paths, nil)
		}
	}
}

// cpu checks a CPU number an event names.
func (b *builder) cpu(c int, what string) error {
	limit := b.ncpu
	if limit == 0 {
		limit = cpumask.MaxCPUs
	}
	if c < 0 || c >= limit {
		if b.ncpu > 0 {
			return fmt.Errorf("line %d: %s names CPU %d, but the machine has %d CPUs", b.line, what, c, b.ncpu)
		}
		return fmt.Errorf("line %d: %s names CPU %d (at most %d)", b.line, what, c, cpumask.MaxCPUs)
	}
	b.ensure(c)
	return nil
}

func (b *builder) event(ev ftrace.Event) error {
	b.line = ev.Line
	if !b.seen {
		b.seen = true
		b.tl.Start, b.last = ev.TS, ev.TS
		for i := range b.cpus {
			b.cpus[i].since = ev.TS
		}
	}
	if ev.TS < b.last {
		return fmt.Errorf("line %d: %s at %s s comes after an event at %s s: the trace is out of time order",
			ev.Line, eventName(ev), ftrace.FormatTS(ev.TS), ftrace.FormatTS(b.last))
	}
	b.last = ev.TS
	b.tl.Events++
	if err := b.cpu(ev.CPU, eventName(ev)); err != nil {
		return err
	}
	ts, h := ev.TS, ev.CPU
	if _, remote := ev.Data.(ftrace.TmigrHandleRemoteCPU); !remote && ev.Data != nil && strings.HasPrefix(ev.Data.Name(), "tmigr_") {
		b.cpus[h].ctx = -1 // the handler's next tmigr line ends a remote expiry
	}
	var err error
	switch p := ev.Data.(type) {
	case ftrace.TmigrCPUActive:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Active, Idle, ts)
	case ftrace.TmigrCPUIdle:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Idle, Active, ts)
	case ftrace.TmigrCPUNewTimer:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Idle, Idle, ts)
	case ftrace.TmigrCPUNewTimerIdle:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Idle, Idle, ts)
	case ftrace.TmigrCPUAvailable:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Available, Unavailable, ts)
	case ftrace.TmigrCPUOnline:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Available, Unavailable, ts)
	case ftrace.TmigrCPUUnavailable:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Unavailable, Unknown, ts)
	case ftrace.TmigrCPUOffline:
		err = b.cpuEvent(cpuRef{p.CPU, p.Parent}, Unavailable, Unknown, ts)
	case ftrace.TmigrHandleRemoteCPU:
		if err = b.cpu(p.CPU, ev.Name); err == nil {
			b.level0(p.CPU, p.Parent)
			b.cpus[h].ctx = p.CPU
		}
	case ftrace.TmigrGroupSetCPUActive:
		b.groupEvent(h, ftrace.TmigrGroupAndCPU(p), ts)
	case ftrace.TmigrGroupSetCPUInactive:
		b.groupEvent(h, ftrace.TmigrGroupAndCPU(p), ts)
	case ftrace.TmigrHandleRemote:
		b.group(h, p.Lvl, p.Group, noNuma)
	case ftrace.TmigrConnectCPUParent:
		if err = b.cpu(p.CPU, ev.Name); err == nil {
			if g := b.group(p.CPU, 0, p.Parent, p.Numa); g >= 0 {
				b.link(g, bitIndex(p.Groupmask), Child{CPU: p.CPU, Group: -1}, ts)
			}
		}
	case ftrace.TmigrConnectChildParent:
		b.connectChild(p, ts)
	case ftrace.TimerStart:
		b.starts[p.Timer] = wheelStart{base: p.CPU, by: h, expires: p.Expires, bucket: p.BucketExpiry}
	case ftrace.TimerExpireEntry:
		b.wheelEntry(ev, p)
	case ftrace.TimerExpireExit:
		c := &b.cpus[h]
		if c.wheel >= 0 && b.tl.Expiries[c.wheel].Timer == p.Timer {
			b.tl.Expiries[c.wheel].End = ts
			c.wheel = -1
		}
	case ftrace.HrtimerStart:
		b.hrs[p.Hrtimer] = hrStart{by: h, expires: p.Expires}
	case ftrace.HrtimerExpireEntry:
		e := Expiry{Kind: HRTimer, Timer: p.Hrtimer, Function: p.Function, Handler: h, Owner: h,
			QueuedBy: -1, Start: ts, End: -1, Now: p.Now, Line: ev.Line}
		if st, ok := b.hrs[p.Hrtimer]; ok {
			e.QueuedBy, e.Due, e.HasDue = st.by, st.expires, true
			delete(b.hrs, p.Hrtimer)
		}
		b.cpus[h].hr = append(b.cpus[h].hr, len(b.tl.Expiries))
		b.tl.Expiries = append(b.tl.Expiries, e)
	case ftrace.HrtimerExpireExit:
		c := &b.cpus[h]
		for i := len(c.hr) - 1; i >= 0; i-- {
			if b.tl.Expiries[c.hr[i]].Timer == p.Hrtimer {
				b.tl.Expiries[c.hr[i]].End = ts
				c.hr = c.hr[:i]
				break
			}
		}
	case ftrace.Lost:
		b.lost(h, ts, p.Count, ev.Line)
		b.warnf("lost", "line %d: CPU %d lost %s at %s s: what it did there is not shown", ev.Line, h, lostCount(p.Count), ftrace.FormatTS(ts))
	case ftrace.BufferStarted:
		b.lost(h, ts, 0, ev.Line)
		b.warnf("buffer", "line %d: CPU %d's buffer starts at %s s: its earlier events were overwritten", ev.Line, h, ftrace.FormatTS(ts))
	}
	b.flushRoles(ts)
	return err
}

func lostCount(n int64) string {
	if n < 0 {
		return "events"
	}
	return strconv.FormatInt(n, 10) + " events"
}

func eventName(ev ftrace.Event) string {
	if ev.Name != "" {
		return ev.Name
	}
	if ev.Data != nil {
		if _, ok := ev.Data.(ftrace.Lost); ok {
			return "lost-events marker"
		}
		return "buffer-started marker"
	}
	return "event"
}

// cpuRef is the part of the per-CPU tmigr events the timeline reads.
type cpuRef struct {
	CPU    int
	Parent uint64
}

// cpuEvent handles a per-CPU tmigr event: the CPU's level-0 group, and its
// new state (prior is the state it must have had before; Unknown for
// none).
func (b *builder) cpuEvent(p cpuRef, s, prior State, ts int64) error {
	if err := b.cpu(p.CPU, "a tmigr event"); err != nil {
		return err
	}
	b.level0(p.CPU, p.Parent)
	b.setState(p.CPU, s, prior, ts)
	return nil
}

// level0 binds a CPU's level-0 group pointer.
func (b *builder) level0(cpu int, ptr uint64) {
	if g := b.group(cpu, 0, ptr, noNuma); g >= 0 && b.tl.CPUs[cpu].Group < 0 {
		b.tl.CPUs[cpu].Group = g
	}
}

// setState moves a CPU to state s at ts. If its state was not known, the
// stretch back to where its record begins is prior (the CPU printed
// nothing in between; every change of state prints).
func (b *builder) setState(cpu int, s, prior State, ts int64) {
	c := &b.cpus[cpu]
	if !c.known {
		if prior != Unknown && ts > c.since && !c.noInfer {
			b.addState(cpu, StateSpan{Start: c.since, End: ts, State: prior, Inferred: true})
		}
		c.known, c.state, c.spanStart, c.noInfer = true, s, ts, false
		return
	}
	if s != c.state {
		b.addState(cpu, StateSpan{Start: c.spanStart, End: ts, State: c.state})
		c.state, c.spanStart = s, ts
	}
}

func (b *builder) addState(cpu int, sp StateSpan) {
	if sp.End <= sp.Start {
		return
	}
	st := &b.tl.CPUs[cpu].States
	if n := len(*st); n > 0 && (*st)[n-1].End == sp.Start && (*st)[n-1].State == sp.State && (*st)[n-1].Inferred == sp.Inferred {
		(*st)[n-1].End = sp.End
		return
	}
	*st = append(*st, sp)
}

// forget makes a CPU's state unknown from ts.
func (b *builder) forget(cpu int, ts int64) {
	c := &b.cpus[cpu]
	if c.known {
		b.addState(cpu, StateSpan{Start: c.spanStart, End: ts, State: c.state})
	}
	c.known, c.since = false, ts
}

// lost handles a lost-events marker (count != 0: the events were lost
// somewhere before the CPU's next event, so nothing is inferred back from
// it) or a buffer-started one (count 0: the CPU's record begins here).
func (b *builder) lost(cpu int, ts, count int64, line int) {
	b.tl.Lost = append(b.tl.Lost, Lost{CPU: cpu, TS: ts, Count: count, Line: line})
	b.forget(cpu, ts)
	c := &b.cpus[cpu]
	c.noInfer = count != 0
	c.ctx, c.wheel, c.hr = -1, -1, c.hr[:0]
	// A walk of this CPU may have changed its groups unseen.
	if cpu < len(b.paths) {
		for _, g := range b.paths[cpu] {
			if g >= 0 {
				b.setMigrator(g, unknownBit, ts)
			}
		}
	}
}

// noNuma stands for a line that prints no numa= for the group.
const noNuma = -2

// group returns the group of level lvl on cpu's path that the trace calls
// ptr, binding the pointer; -1 when there is none. numa is the node the
// line prints for it, noNuma for none.
func (b *builder) group(cpu, lvl int, ptr uint64, numa int) int {
	if ptr == 0 || lvl < 0 || lvl >= 64 || cpu < 0 || cpu >= len(b.paths) {
		return -1
	}
	path := b.paths[cpu]
	if b.model {
		if lvl >= len(path) {
			b.warnf("level", "line %d: the trace names a group of level %d above CPU %d, whose path in the machine's hierarchy has %d levels", b.line, lvl, cpu, len(path))
			return -1
		}
		g := path[lvl]
		if old, ok := b.ptrs[ptr]; ok && old != g {
			b.warnf("ptr", "line %d: group pointer %016x named %s before and now %s: the kernel built another hierarchy than the machine line implies", b.line, ptr, b.tl.Groups[old].Name, b.tl.Groups[g].Name)
			return old
		}
		if old, ok := b.grpPtr[g]; ok && old != ptr {
			b.warnf("ptr", "line %d: %s was group pointer %016x before and is %016x now: the kernel built another hierarchy than the machine line implies", b.line, b.tl.Groups[g].Name, old, ptr)
			return g
		}
		if numa != noNuma && b.tl.Groups[g].Node != numa {
			b.warnf("numa", "line %d: %s printed numa=%d, the machine's hierarchy has node %d", b.line, b.tl.Groups[g].Name, numa, b.tl.Groups[g].Node)
		}
		b.ptrs[ptr], b.grpPtr[g] = g, ptr
		return g
	}
	g, ok := b.ptrs[ptr]
	if ok && b.tl.Groups[g].Level != lvl {
		b.warnf("ptr", "line %d: group pointer %016x was of level %d before and is of level %d now", b.line, ptr, b.tl.Groups[g].Level, lvl)
		return -1
	}
	if !ok {
		g = len(b.tl.Groups)
		node := numa
		if node == noNuma {
			node = -1
		}
		b.tl.Groups = append(b.tl.Groups, Group{Level: lvl, Node: node, Parent: -1})
		b.grps = append(b.grps, groupState{bit: unknownBit, cpu: -1})
		b.ptrs[ptr], b.grpPtr[g] = g, ptr
	}
	for len(path) <= lvl {
		path = append(path, -1)
	}
	switch path[lvl] {
	case -1:
		path[lvl] = g
	case g:
	default:
		b.warnf("path", "line %d: CPU %d's group of level %d was %016x before and is %016x now", b.line, cpu, lvl, b.grpPtr[path[lvl]], ptr)
	}
	b.paths[cpu] = path
	// Link along the path as far as it is known.
	if lvl > 0 && path[lvl-1] >= 0 {
		b.setParent(path[lvl-1], g)
	}
	if lvl+1 < len(path) && path[lvl+1] >= 0 {
		b.setParent(g, path[lvl+1])
	}
	return g
}

// setParent links a group pieced together from the trace to its parent.
func (b *builder) setParent(g, parent int) {
	gr := &b.tl.Groups[g]
	switch gr.Parent {
	case -1:
		gr.Parent = parent
		b.refresh(parent, b.last)
	case parent:
	default:
		b.warnf("parent", "line %d: group %016x has two parents, %016x and %016x", b.line, b.grpPtr[g], b.grpPtr[gr.Parent], b.grpPtr[parent])
	}
}

// link records a group's child at bit i, as the trace shows it.
func (b *builder) link(g, i int, ch Child, ts int64) {
	if i < 0 || i >= 32 {
		return
	}
	gr := &b.tl.Groups[g]
	old := gr.child(i)
	switch {
	case old == ch:
		return
	case old.CPU < 0 && old.Group < 0 && !b.model:
		gr.setChild(i, ch)
		b.refresh(g, ts)
	default:
		b.warnf("child", "line %d: child bit %d of group %s is %s in the trace, %s before", b.line, i, b.nameOf(g), b.childName(ch), b.childName(old))
	}
}

func (b *builder) nameOf(g int) string {
	if b.model {
		return b.tl.Groups[g].Name
	}
	return fmt.Sprintf("%016x", b.grpPtr[g])
}

func (b *builder) childName(ch Child) string {
	switch {
	case ch.CPU >= 0:
		return "CPU " + strconv.Itoa(ch.CPU)
	case ch.Group >= 0:
		return "group " + b.nameOf(ch.Group)
	}
	return "unknown"
}

// groupEvent handles tmigr_group_set_cpu_active/inactive printed by cpu's
// walk.
func (b *builder) groupEvent(cpu int, p ftrace.TmigrGroupAndCPU, ts int64) {
	g := b.group(cpu, p.Lvl, p.Group, p.Numa)
	if g < 0 {
		return
	}
	if p.Parent != 0 {
		b.group(cpu, p.Lvl+1, p.Parent, noNuma)
	}
	// The walking child: the CPU itself at level 0, else its group below.
	bit := bitIndex(p.Childmask)
	if p.Childmask&(p.Childmask-1) == 0 {
		if p.Lvl == 0 {
			b.link(g, bit, Child{CPU: cpu, Group: -1}, ts)
		} else if path := b.paths[cpu]; p.Lvl-1 < len(path) && path[p.Lvl-1] >= 0 {
			b.link(g, bit, Child{CPU: -1, Group: path[p.Lvl-1]}, ts)
		}
	}
	mig := -1
	if p.Migrator != 0xff {
		mig = bitIndex(uint32(p.Migrator))
	}
	b.setMigrator(g, mig, ts)
	if p.Lvl == 0 {
		// The active mask shows the CPUs that print nothing.
		// The walking CPU itself is in the middle of a change its own
		// tmigr_cpu_active/idle line shows.
		for i, ch := range b.tl.Groups[g].Children {
			if ch.CPU < 0 || ch.CPU == cpu || ch.CPU >= len(b.cpus) || b.cpus[ch.CPU].known {
				continue
			}
			s := Inactive
			if p.Active&(1<<i) != 0 {
				s = Active
			}
			b.setState(ch.CPU, s, s, ts)
		}
	}
}

// connectChild handles tmigr_connect_child_parent: a group joined its
// parent (boot, or a new top level).
func (b *builder) connectChild(p ftrace.TmigrConnectChildParent, ts int64) {
	g, ok := b.ptrs[p.Group]
	if !ok {
		return // a group the trace has not placed yet
	}
	cpu := b.cpuBelow(g)
	if cpu < 0 {
		return
	}
	if pg := b.group(cpu, p.Lvl, p.Parent, p.Numa); pg >= 0 {
		b.link(pg, bitIndex(p.Groupmask), Child{CPU: -1, Group: g}, ts)
	}
}

// cpuBelow returns a CPU whose path holds g, or -1.
func (b *builder) cpuBelow(g int) int {
	lvl := b.tl.Groups[g].Level
	for c, p := range b.paths {
		if lvl < len(p) && p[lvl] == g {
			return c
		}
	}
	return -1
}

// setMigrator sets a group's migrator bit (-1 none, unknownBit).
func (b *builder) setMigrator(g, bit int, ts int64) {
	if b.grps[g].bit == bit {
		return
	}
	b.grps[g].bit = bit
	b.refresh(g, ts)
}

// resolve returns the CPU doing g's migrator duty, -1 for none or unknown.
func (b *builder) resolve(g int) int {
	bit := b.grps[g].bit
	if bit < 0 {
		return -1
	}
	ch := b.tl.Groups[g].child(bit)
	switch {
	case ch.CPU >= 0:
		return ch.CPU
	case ch.Group >= 0:
		return b.grps[ch.Group].cpu
	}
	return -1
}

// refresh brings g's migrator span and the roles of the CPUs up to date,
// and those of its parents, whose duty resolves through g.
func (b *builder) refresh(g int, ts int64) {
	for steps := 0; g >= 0 && steps <= len(b.grps); steps++ {
		gs := &b.grps[g]
		cpu := b.resolve(g)
		if gs.open && (gs.spanBit != gs.bit || gs.spanCPU != cpu) {
			if ts > gs.spanStart {
				b.tl.Groups[g].Migrators = append(b.tl.Groups[g].Migrators,
					MigratorSpan{Start: gs.spanStart, End: ts, Child: gs.spanBit, CPU: gs.spanCPU})
			}
			gs.open = false
		}
		if !gs.open && gs.bit != unknownBit {
			gs.open, gs.spanBit, gs.spanCPU, gs.spanStart = true, gs.bit, cpu, ts
		}
		if cpu == gs.cpu {
			return
		}
		if old := gs.cpu; old >= 0 {
			b.setRole(old, g, false)
		}
		gs.cpu = cpu
		if cpu >= 0 {
			b.setRole(cpu, g, true)
		}
		g = b.tl.Groups[g].Parent
	}
}

// setRole adds or removes g from a CPU's migrator roles.
func (b *builder) setRole(cpu, g int, on bool) {
	if cpu >= len(b.cpus) {
		return
	}
	c := &b.cpus[cpu]
	i, found := slices.BinarySearch(c.roles, g)
	switch {
	case on && !found:
		c.roles = slices.Insert(c.roles, i, g)
	case !on && found:
		c.roles = slices.Delete(c.roles, i, i+1)
	default:
		return
	}
	b.dirty = append(b.dirty, cpu)
}

// flushRoles closes and opens the role spans of the CPUs whose roles
// changed.
func (b *builder) flushRoles(ts int64) {
	for _, cpu := range b.dirty {
		c := &b.cpus[cpu]
		if slices.Equal(c.roles, c.roleSpan) {
			continue
		}
		if len(c.roleSpan) > 0 && ts > c.roleStart {
			b.tl.CPUs[cpu].Roles = append(b.tl.CPUs[cpu].Roles, RoleSpan{Start: c.roleStart, End: ts, Groups: c.roleSpan})
		}
		c.roleSpan, c.roleStart = slices.Clone(c.roles), ts
	}
	b.dirty = b.dirty[:0]
}

// wheelEntry handles timer_expire_entry.
func (b *builder) wheelEntry(ev ftrace.Event, p ftrace.TimerExpireEntry) {
	h := ev.CPU
	c := &b.cpus[h]
	c.wheel = -1 // an entry without its exit (the simulator prints none)
	e := Expiry{Kind: Wheel, Timer: p.Timer, Function: p.Function, Handler: h, Owner: h, From: OwnerLocal,
		QueuedBy: -1, Start: ev.TS, End: -1, Now: int64(p.Now), Line: ev.Line}
	if st, ok := b.starts[p.Timer]; ok {
		e.QueuedBy, e.Due, e.Bucket, e.HasDue = st.by, int64(st.expires), int64(st.bucket), true
		if st.base < cpumask.MaxCPUs {
			e.Owner, e.From = st.base, OwnerStart
		}
		delete(b.starts, p.Timer)
	}
	if c.ctx >= 0 && e.From == OwnerStart && e.Owner == h && c.ctx != h {
		// A remote expiry runs only the target's bases: the handler's own
		// timer is a softirq of its own after the round, whose end the
		// trace does not print (on 7.3, deferrable timers after a round
		// that expired nothing).
		c.ctx = -1
	}
	if c.ctx >= 0 {
		if e.From == OwnerStart && e.Owner != c.ctx {
			b.warnf("owner", "line %d: %s ran on CPU %d while it expired CPU %d's timers, but its timer_start queued it on CPU %d; counted as CPU %d's",
				ev.Line, p.Function, h, c.ctx, e.Owner, c.ctx)
		}
		e.Owner, e.From = c.ctx, OwnerRemote
	}
	if e.Owner >= len(b.tl.CPUs) {
		if err := b.cpu(e.Owner, "timer_start"); err != nil {
			b.warnf("ownercpu", "line %d: %v; counted as CPU %d's own", ev.Line, err, h)
			e.Owner, e.From = h, OwnerLocal
		}
	}
	c = &b.cpus[h]
	c.wheel = len(b.tl.Expiries)
	b.tl.Expiries = append(b.tl.Expiries, e)
}

func (b *builder) finish() {
	tl := b.tl
	tl.End = b.last
	for cpu := range b.cpus {
		c := &b.cpus[cpu]
		if c.known {
			b.addState(cpu, StateSpan{Start: c.spanStart, End: tl.End, State: c.state})
			if c.state == Unavailable {
				tl.CPUs[cpu].Excluded = true
			}
		}
		if len(c.roleSpan) > 0 && tl.End > c.roleStart {
			tl.CPUs[cpu].Roles = append(tl.CPUs[cpu].Roles, RoleSpan{Start: c.roleStart, End: tl.End, Groups: c.roleSpan})
		}
	}
	for g := range b.grps {
		if gs := &b.grps[g]; gs.open && tl.End > gs.spanStart {
			tl.Groups[g].Migrators = append(tl.Groups[g].Migrators,
				MigratorSpan{Start: gs.spanStart, End: tl.End, Child: gs.spanBit, CPU: gs.spanCPU})
		}
	}
	if !b.model {
		b.learnedCPUs()
		nameLearned(tl.Groups)
		b.sortLearned()
		for c, p := range b.paths {
			if len(p) > 0 && p[0] >= 0 {
				tl.CPUs[c].Group = p[0]
			}
		}
	}
	for _, k := range b.order {
		w := b.warn[k]
		if w.n > 1 {
			tl.Warnings = append(tl.Warnings, fmt.Sprintf("%s (and %d more like it)", w.first, w.n-1))
		} else {
			tl.Warnings = append(tl.Warnings, w.first)
		}
	}
}

// learnedCPUs sets the CPUs of groups pieced together from the trace:
// those whose path holds them (a group's child bits show only the children
// that walked through it).
func (b *builder) learnedCPUs() {
	for i := range b.tl.Groups {
		b.tl.Groups[i].CPUs = nil
	}
	for c, p := range b.paths {
		for _, g := range p {
			if g >= 0 {
				b.tl.Groups[g].CPUs = append(b.tl.Groups[g].CPUs, c)
			}
		}
	}
}

// sortLearned orders groups pieced together from the trace by level and
// name, renumbering every index that points at them.
func (b *builder) sortLearned() {
	tl := b.tl
	order := make([]int, len(tl.Groups))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, c := &tl.Groups[order[i]], &tl.Groups[order[j]]
		if a.Level != c.Level {
			return a.Level < c.Level
		}
		return groupIndex(a.Name) < groupIndex(c.Name)
	})
	newIdx := make([]int, len(order))
	for n, old := range order {
		newIdx[old] = n
	}
	re := func(i int) int {
		if i < 0 {
			return i
		}
		return newIdx[i]
	}
	groups := make([]Group, len(order))
	for n, old := range order {
		g := tl.Groups[old]
		g.Parent = re(g.Parent)
		g.Children = slices.Clone(g.Children)
		for k := range g.Children {
			g.Children[k].Group = re(g.Children[k].Group)
		}
		groups[n] = g
	}
	tl.Groups = groups
	for c := range tl.CPUs {
		for k := range tl.CPUs[c].Roles {
			gs := tl.CPUs[c].Roles[k].Groups
			for i := range gs {
				gs[i] = re(gs[i])
			}
			sort.Ints(gs)
		}
	}
	for c, p := range b.paths {
		for i := range p {
			p[i] = re(p[i])
		}
		b.paths[c] = p
	}
}

func groupIndex(name string) int {
	_, idx, _ := strings.Cut(name, ":")
	n, _ := strconv.Atoi(idx)
	return n
}
