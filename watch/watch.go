package watch

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/replay"
)

// Classes of a CPU, as Period.CPUs reports them.
const (
	Housekeeping = "housekeeping"
	Isolated     = "isolated"  // isolcpus domain, or an isolated cpuset partition
	NohzFull     = "nohz_full" // nohz_full, not domain-isolated
	IsolatedNohz = "isolated,nohz_full"
)

// Machine is what a Watcher knows of the machine the events come from.
type Machine struct {
	// Machine is the recording's "# machine:" line: its CPUs, nodes,
	// kernel release and command line.
	Machine *ftrace.Machine
	// Model is the kernel's rules (package kernel), for the release.
	Model kernel.Model
	// Partition are the CPUs of isolated cpuset partitions when the
	// stream starts (their later changes show as tmigr_cpu_unavailable).
	Partition cpumask.Mask
}

// Watcher follows a stream of trace events (see the package comment).
type Watcher struct {
	m        Machine
	remote   *replay.RemoteExpiry
	isolated cpumask.Mask // domain-isolated or in a partition
	nohzFull cpumask.Mask
	roles    roles

	cpus   []cpuState
	total  []Totals // since New
	first  int64    // the first event's time, ns; -1 before it
	last   int64    // the latest event's time, ns
	start  int64    // the current period's start, ns
	events uint64   // events observed since New
	lost   uint64   // events the stream lost since New
	// lostCounted: the total a Follow's Lost reported so far.
	lostCounted uint64
	foreignIso  uint64 // foreign timers on isolated and nohz_full CPUs since New
	// byFunction counts the foreign timers since New by handler, owner
	// and callback, when TrackFunctions asked for it.
	byFunction map[Foreign]uint64
	window     *window
	pending    []pendingWhy // foreign expiries on isolated CPUs this period
}

// Totals are one CPU's counts since the Watcher began: what an exporter
// exports as counters.
type Totals struct {
	Own      uint64 // its own wheel timers expired
	HRTimers uint64 // hrtimers expired on it
	Foreign  uint64 // other CPUs' wheel timers it ran
	// ForeignNS is the time spent in those callbacks, ns, for those whose
	// timer_expire_exit the stream held.
	ForeignNS int64
}

// cpuState is one CPU in the current period.
type cpuState struct {
	// start are the CPU's totals when the period began: the period's
	// counts are the totals' growth since.
	start     Totals
	owners    map[int]uint64
	functions map[string]uint64
	// running: the foreign callback in progress (its entry's time), 0
	// for none; timer is its timer.
	running int64
	timer   uint64
	// available: in the hierarchy.
	available bool
}

// ForRecording returns a Watcher for the machine of a recording's header:
// its "# machine:" line, whose release names the kernel's model.
func ForRecording(h ftrace.Header) (*Watcher, error) {
	if h.Machine == nil {
		return nil, errors.New(`watch: the recording has no "# machine:" line (tmigr record writes one)`)
	}
	rel, err := kernel.ParseRelease(h.Machine.Kernel)
	if err != nil {
		return nil, fmt.Errorf("watch: machine line: kernel: %v", err)
	}
	return New(Machine{Machine: h.Machine, Model: kernel.For(rel.Version)})
}

// New returns a Watcher for a machine.
func New(m Machine) (*Watcher, error) {
	if m.Machine == nil || m.Machine.CPUs <= 0 {
		return nil, fmt.Errorf("watch: no machine")
	}
	iso, err := m.Machine.Isolation()
	if err != nil {
		return nil, fmt.Errorf("watch: command line: %v", err)
	}
	n := m.Machine.CPUs
	w := &Watcher{
		m:        m,
		remote:   replay.NewRemoteExpiry(nil),
		isolated: iso.Domain.Or(m.Partition),
		nohzFull: iso.NohzFull,
		cpus:     make([]cpuState, n),
		total:    make([]Totals, n),
		first:    -1,
		window:   newWindow(DefaultWindow),
	}
	// The tree as the kernel lays it out: groups exist for every possible
	// CPU, excluded or not, so it is built without the exclusion.
	nodeOf := make([]int, n)
	for c := range nodeOf {
		nodeOf[c] = max(m.Machine.Node(c), 0)
	}
	var groups []hier.GroupInfo
	if m.Model.Has(kernel.PullHierarchy) {
		h, err := migrators.Build(migrators.Setup{NodeOf: nodeOf, Nodes: m.Machine.Nodes,
			Model: m.Model.With(kernel.ExcludeIsolated, false), Timekeeper: -1})
		if err != nil {
			return nil, fmt.Errorf("watch: %v", err)
		}
		groups = h.Groups()
	}
	w.roles = newRoles(n, groups)
	excluded := m.Model.Excluded(m.Model.Isolation(iso.Domain, iso.NohzFull, m.Partition, kernel.Timekeeper(iso.NohzFull)), cpumask.Range(0, n-1))
	for c := range w.cpus {
		w.cpus[c].available = m.Model.Has(kernel.PullHierarchy) && !excluded.Test(c)
	}
	w.resetPeriod()
	return w, nil
}

func (w *Watcher) resetPeriod() {
	for c := range w.cpus {
		s := &w.cpus[c]
		s.start = w.total[c]
		if s.owners == nil {
			s.owners, s.functions = map[int]uint64{}, map[string]uint64{}
		}
		clear(s.owners)
		clear(s.functions)
	}
	w.pending = w.pending[:0]
}

// Class returns cpu's class.
func (w *Watcher) Class(cpu int) string {
	switch iso, nohz := w.isolated.Test(cpu), w.nohzFull.Test(cpu); {
	case iso && nohz:
		return IsolatedNohz
	case iso:
		return Isolated
	case nohz:
		return NohzFull
	}
	return Housekeeping
}

// Observe takes the stream's next event, in trace order.
func (w *Watcher) Observe(ev *ftrace.Event) {
	w.events++
	if w.first < 0 {
		w.first, w.start = ev.TS, ev.TS
	}
	w.last = max(w.last, ev.TS)
	w.window.add(ev)
	if l, ok := ev.Data.(ftrace.Lost); ok {
		w.lost += uint64(max(l.Count, 0))
		w.roles.forget()
		return
	}
	if ev.CPU < 0 || ev.CPU >= len(w.cpus) {
		return
	}
	base, remote := w.remote.Observe(ev)
	s := &w.cpus[ev.CPU]
	switch d := ev.Data.(type) {
	case ftrace.TimerExpireEntry:
		if !remote {
			w.total[ev.CPU].Own++
			return
		}
		w.total[ev.CPU].Foreign++
		s.owners[base]++
		s.functions[d.Function]++
		s.running, s.timer = ev.TS, d.Timer
		if w.byFunction != nil {
			w.byFunction[Foreign{Handler: ev.CPU, Owner: base, Function: d.Function}]++
		}
		if w.isolated.Test(ev.CPU) || w.nohzFull.Test(ev.CPU) {
			w.pending = append(w.pending, pendingWhy{cpu: ev.CPU, line: ev.Line, ts: ev.TS})
			w.foreignIso++
		}
	case ftrace.TimerExpireExit:
		if s.running != 0 && s.timer == d.Timer {
			ns := ev.TS - s.running
			w.total[ev.CPU].ForeignNS += ns
			s.running = 0
		}
	case ftrace.HrtimerExpireEntry:
		w.total[ev.CPU].HRTimers++
	case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline:
		w.cpus[cpuOf(ev)].available = true
	case ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
		w.cpus[cpuOf(ev)].available = false
	case ftrace.TmigrGroupSetCPUActive:
		w.roles.set(ev.CPU, ftrace.TmigrGroupAndCPU(d))
	case ftrace.TmigrGroupSetCPUInactive:
		w.roles.set(ev.CPU, ftrace.TmigrGroupAndCPU(d))
	case ftrace.TmigrCPUIdle:
		w.roles.level0(ev.CPU, d.Parent)
	case ftrace.TmigrCPUActive:
		w.roles.level0(ev.CPU, d.Parent)
	}
}

// cpuOf is the CPU a tmigr_cpu_* availability line is about (the line's
// cpu=, within range), else the CPU that printed it.
func cpuOf(ev *ftrace.Event) int {
	var c int
	switch d := ev.Data.(type) {
	case ftrace.TmigrCPUAvailable:
		c = d.CPU
	case ftrace.TmigrCPUUnavailable:
		c = d.CPU
	case ftrace.TmigrCPUOnline:
		c = d.CPU
	case ftrace.TmigrCPUOffline:
		c = d.CPU
	default:
		return ev.CPU
	}
	if c < 0 {
		return ev.CPU
	}
	return c
}

// Lost adds events a stream lost without a marker line (a tracefs
// instance's per-CPU overrun counters).
func (w *Watcher) Lost(n uint64) { w.lost += n }

// OwnerCount is how many of a CPU's foreign timers were one CPU's.
type OwnerCount struct {
	Owner int    `json:"owner"`
	Count uint64 `json:"count"`
}

// FuncCount is how many of a CPU's foreign timers ran one callback.
type FuncCount struct {
	Function string `json:"function"`
	Count    uint64 `json:"count"`
}

// CPU is one CPU's line of a Period.
type CPU struct {
	CPU   int    `json:"cpu"`
	Class string `json:"class"`
	// InHierarchy: the CPU is available in the timer-migration hierarchy
	// (false on a kernel without one, before 6.9).
	InHierarchy bool `json:"in_hierarchy"`
	// MigratorOf are the groups it is migrator of ("GRP0:0"), from its
	// level-0 group up, as far as the stream has shown.
	MigratorOf []string `json:"migrator_of"`
	// Own and HRTimers are its own wheel timers and hrtimers that expired
	// in the period; Foreign the other CPUs' wheel timers it ran, per
	// second in ForeignRate, ForeignNS the ns spent in them.
	Own         uint64  `json:"own"`
	HRTimers    uint64  `json:"hrtimers"`
	Foreign     uint64  `json:"foreign"`
	ForeignRate float64 `json:"foreign_per_s"`
	ForeignNS   int64   `json:"foreign_ns"`
	// Owners and Functions are its foreign timers' most frequent owners
	// and callbacks (at most TopN each).
	Owners    []OwnerCount `json:"owners"`
	Functions []FuncCount  `json:"functions"`
	// Why is the latest explanation of a foreign timer it ran, for an
	// isolated or nohz_full CPU, in one line; "" for none.
	Why string `json:"why,omitempty"`
}

// Period is what happened in one period of the stream.
type Period struct {
	// Start and End are the trace times of the period, ns.
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Events is the number of events observed since the stream began,
	// Lost the number it lost.
	Events uint64 `json:"events"`
	Lost   uint64 `json:"lost"`
	CPUs   []CPU  `json:"cpus"`
	// ForeignOnIsolated is the number of foreign timers the isolated and
	// nohz_full CPUs ran in the period.
	ForeignOnIsolated uint64 `json:"foreign_on_isolated"`
}

// TopN is how many owners and functions a Period names per CPU.
const TopN = 3

// End closes the current period at trace time now (ns) and returns it;
// the next period starts there. cpus selects the CPUs reported (empty:
// all). A foreign timer on an isolated or nohz_full CPU gets its
// explanation, the latest one per CPU (see Window).
func (w *Watcher) End(now int64, cpus cpumask.Mask) Period {
	if now < w.start {
		now = w.start
	}
	p := Period{Start: w.start, End: now, Events: w.events, Lost: w.lost}
	why := w.explain()
	secs := float64(now-w.start) / 1e9
	for c := range w.cpus {
		if !cpus.Empty() && !cpus.Test(c) {
			continue
		}
		s := &w.cpus[c]
		t, p0 := w.total[c], s.start
		line := CPU{
			CPU: c, Class: w.Class(c), InHierarchy: s.available, MigratorOf: w.roles.of(c),
			Own: t.Own - p0.Own, HRTimers: t.HRTimers - p0.HRTimers, Foreign: t.Foreign - p0.Foreign, ForeignNS: t.ForeignNS - p0.ForeignNS,
			Owners:    top(s.owners, func(k int, n uint64) OwnerCount { return OwnerCount{k, n} }),
			Functions: top(s.functions, func(k string, n uint64) FuncCount { return FuncCount{k, n} }),
			Why:       why[c],
		}
		if secs > 0 {
			line.ForeignRate = float64(line.Foreign) / secs
		}
		if line.Class != Housekeeping {
			p.ForeignOnIsolated += line.Foreign
		}
		p.CPUs = append(p.CPUs, line)
	}
	w.start = now
	w.resetPeriod()
	return p
}

// Totals returns each CPU's counts since the Watcher began, indexed by
// CPU, with the events observed and lost.
func (w *Watcher) Totals() (cpus []Totals, events, lost uint64) {
	return slices.Clone(w.total), w.events, w.lost
}

// Foreign names the foreign timers of one handler, owner and callback.
type Foreign struct {
	Handler, Owner int
	Function       string
}

// TrackFunctions makes the Watcher count foreign timers by handler, owner
// and callback from now on (ByFunction): as many keys as the machine has
// callbacks, which is why it is asked for.
func (w *Watcher) TrackFunctions() {
	if w.byFunction == nil {
		w.byFunction = map[Foreign]uint64{}
	}
}

// ByFunction returns the counts TrackFunctions asked for, since then.
func (w *Watcher) ByFunction() map[Foreign]uint64 { return maps.Clone(w.byFunction) }

// ForeignOnIsolated is the number of foreign timers the isolated and
// nohz_full CPUs ran since the Watcher began.
func (w *Watcher) ForeignOnIsolated() uint64 { return w.foreignIso }

// Machine is the machine the Watcher was made for.
func (w *Watcher) Machine() Machine { return w.m }

// Roles returns the groups cpu is migrator of, as far as the stream has
// shown.
func (w *Watcher) Roles(cpu int) []string {
	if cpu < 0 || cpu >= len(w.cpus) {
		return nil
	}
	return w.roles.of(cpu)
}

// Available reports whether cpu is in the hierarchy.
func (w *Watcher) Available(cpu int) bool {
	return cpu >= 0 && cpu < len(w.cpus) && w.cpus[cpu].available
}

// CPUs is the number of possible CPUs.
func (w *Watcher) CPUs() int { return len(w.cpus) }

// top returns the TopN most frequent keys of m, the most frequent first,
// ties by key.
func top[K cmp.Ordered, C any](m map[K]uint64, mk func(K, uint64) C) []C {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := []C{}
	for _, k := range keys[:min(len(keys), TopN)] {
		out = append(out, mk(k, m[k]))
	}
	return out
}
