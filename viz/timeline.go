package viz

import (
	"sort"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/report"
)

// Timeline is what a recording shows of the timer-migration hierarchy:
// each CPU's state over time, each group's migrator over time, and every
// timer expiry with its owner. Times are nanoseconds of the trace clock.
type Timeline struct {
	// Machine is the recording's "# machine:" line, nil without one.
	Machine *ftrace.Machine
	// Kernel is the kernel release ("" if unknown), HZ its tick rate (0 if
	// unknown: wheel lateness is then left out).
	Kernel string
	HZ     int
	// Start and End are the times of the first and the last event.
	Start, End int64
	// Events counts the events read.
	Events int
	// CPUs holds every CPU of the machine (or every CPU the trace names).
	CPUs []CPU
	// Groups is the hierarchy, by level then index. FromMachine tells
	// whether it was built from the machine line with the kernel's own
	// rules (every group and CPU present, named as tmigr topo names them)
	// or pieced together from the trace's group pointers (only what the
	// trace shows, named by level and lowest CPU).
	Groups      []Group
	FromMachine bool
	// Expiries are the timer expiries in trace order.
	Expiries []Expiry
	// Lost are the kernel's lost-events and buffer-started markers.
	Lost []Lost
	// Warnings say where the trace contradicts itself or the machine's
	// hierarchy, or lost what a picture would show.
	Warnings []string
}

// CPU is one CPU of the timeline.
type CPU struct {
	CPU  int
	Node int // -1 if unknown
	// Isolated (isolcpus= domain list or an isolated cpuset partition) and
	// NohzFull come from the recording's command line; see
	// SetPartition for partitions.
	Isolated, NohzFull bool
	// Excluded is set when the kernel keeps the CPU out of the hierarchy:
	// an isolated CPU on a kernel of 6.19 or later (commit 7dec062cfcf2),
	// or a CPU the trace shows leaving it (tmigr_cpu_unavailable) and not
	// coming back.
	Excluded bool
	// Group is the index of its level-0 group in Timeline.Groups, -1 if
	// unknown.
	Group int
	// States are its hierarchy states, in time order, not overlapping.
	// Stretches the trace does not show are absent.
	States []StateSpan
	// Roles are the stretches during which it was migrator of one group
	// or more.
	Roles []RoleSpan
}

// Class is the CPU's isolation class, as report.Class names it.
func (c *CPU) Class() string { return report.ClassOf(c.Isolated, c.NohzFull) }

// State is a CPU's state in the hierarchy.
type State uint8

const (
	Unknown State = iota
	// Active: the CPU is active in its group (tmigr_cpu_active, or its bit
	// in the group's active mask).
	Active
	// Idle: the CPU went idle in the hierarchy (tmigr_cpu_idle, or it
	// printed tmigr_cpu_new_timer*, which only an idle CPU does).
	Idle
	// Inactive: only the group's active mask shows the CPU, without its
	// bit: idle, or out of the hierarchy.
	Inactive
	// Available: the CPU joined the hierarchy (tmigr_cpu_available); its
	// activity is not shown yet.
	Available
	// Unavailable: the CPU left the hierarchy (tmigr_cpu_unavailable):
	// offline, or excluded as isolated.
	Unavailable
)

var stateNames = [...]string{"unknown", "active", "idle", "inactive", "available", "unavailable"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state?"
}

// StateSpan is a stretch of time in one state.
type StateSpan struct {
	Start, End int64
	State      State
	// Inferred: the stretch ends at the first event that showed the CPU's
	// state and reaches back to where the CPU's record begins (the trace's
	// start, a lost-events marker): the CPU printed nothing in between, and
	// every change of state prints.
	Inferred bool
}

// RoleSpan is a stretch during which a CPU was migrator of Groups
// (indices into Timeline.Groups, lowest level first).
type RoleSpan struct {
	Start, End int64
	Groups     []int
}

// Group is one group of the hierarchy.
type Group struct {
	Name   string // "GRP0:1"
	Level  int
	Node   int // NUMA node, -1 at and above the crossnode level
	Parent int // index in Timeline.Groups, -1 for the top (or unknown)
	// Children are the group's children by child bit (bit i is
	// Children[i]); a bit the trace never showed has CPU and Group -1.
	Children []Child
	// CPUs are the CPUs below the group, in the tree's order.
	CPUs []int
	// Migrators is the group's migrator over time. Stretches the trace
	// does not show are absent.
	Migrators []MigratorSpan
}

// Child is a CPU (CPU >= 0) or a group (Group >= 0).
type Child struct {
	CPU, Group int
}

// MigratorSpan is a stretch of time during which a group's migrator was
// child bit Child (-1: none, the group had no active child), whose duty a
// CPU carried out (CPU, -1 when none or not shown).
type MigratorSpan struct {
	Start, End int64
	Child      int
	CPU        int
}

// TimerKind tells wheel timers from hrtimers.
type TimerKind uint8

const (
	Wheel   TimerKind = iota // a timer_list of the timer wheel
	HRTimer                  // an hrtimer
)

// OwnerSource says how an expiry's owner was found.
type OwnerSource uint8

const (
	// OwnerLocal: the handler's own timer: no remote expiry was under way
	// and the trace holds no timer_start naming another base.
	OwnerLocal OwnerSource = iota
	// OwnerRemote: it expired inside the handler's tmigr_handle_remote_cpu
	// for the owner.
	OwnerRemote
	// OwnerStart: its timer_start named the owner's base (cpu=).
	OwnerStart
)

var ownerSources = [...]string{"local", "tmigr_handle_remote_cpu", "timer_start"}

func (o OwnerSource) String() string {
	if int(o) < len(ownerSources) {
		return ownerSources[o]
	}
	return "?"
}

// Expiry is one timer that expired.
type Expiry struct {
	Kind     TimerKind
	Timer    uint64 // the timer's (hashed) pointer
	Function string
	Handler  int // the CPU that ran it
	Owner    int // the CPU whose base held it (the handler for hrtimers)
	From     OwnerSource
	QueuedBy int // the CPU that printed its timer_start / hrtimer_start, -1 if not in the trace
	Start    int64
	End      int64 // the expire_exit's time, -1 if the trace has none
	// Due is when it was due (jiffies for wheel timers, ns for hrtimers)
	// and Now the time its expire_entry printed (same unit); HasDue is
	// false when its start is not in the trace. Bucket is a wheel timer's
	// bucket_expiry: the wheel runs it no earlier than that.
	Due, Now, Bucket int64
	HasDue           bool
	Line             int // the expire_entry's line, 0 if not read from a file
}

// Remote reports whether another CPU than its owner ran the timer.
func (e *Expiry) Remote() bool { return e.Owner != e.Handler }

// Late returns how late the timer ran in ns: for hrtimers now - expires;
// for wheel timers (now - expires) jiffies at hz. ok is false when its
// start is not in the trace or hz is unknown.
func (e *Expiry) Late(hz int) (ns int64, ok bool) {
	if !e.HasDue {
		return 0, false
	}
	if e.Kind == HRTimer {
		return e.Now - e.Due, true
	}
	if hz <= 0 {
		return 0, false
	}
	return (e.Now - e.Due) * (1_000_000_000 / int64(hz)), true
}

// Lost is a marker of events the kernel did not record.
type Lost struct {
	CPU   int
	TS    int64
	Count int64 // events lost, -1 unknown; 0 for a "buffer started" marker
	Line  int
}

// Window is a stretch of the trace [From, To) in ns; a zero To reaches to
// the end.
type Window struct {
	From, To int64
}

// Contains reports whether t lies in the window.
func (w Window) Contains(t int64) bool { return t >= w.From && (w.To == 0 || t < w.To) }

// All is the window of the whole trace.
var All = Window{From: -1 << 63}

// Pulls returns how often each CPU ran another CPU's timers in the window
// (by the time each started), as report pulls (most first).
func (tl *Timeline) Pulls(w Window) []report.Pull {
	type pair struct{ h, o int }
	n := map[pair]uint64{}
	for i := range tl.Expiries {
		if e := &tl.Expiries[i]; e.Remote() && w.Contains(e.Start) {
			n[pair{e.Handler, e.Owner}]++
		}
	}
	out := make([]report.Pull, 0, len(n))
	for k, c := range n {
		out = append(out, report.Pull{Handler: k.h, Owner: k.o, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Handler != out[j].Handler {
			return out[i].Handler < out[j].Handler
		}
		return out[i].Owner < out[j].Owner
	})
	return out
}

// Masks returns the isolated and nohz_full CPUs.
func (tl *Timeline) Masks() (isolated, nohzFull cpumask.Mask) {
	for i := range tl.CPUs {
		if tl.CPUs[i].Isolated {
			isolated.Set(i)
		}
		if tl.CPUs[i].NohzFull {
			nohzFull.Set(i)
		}
	}
	return isolated, nohzFull
}

// Summary returns the answer the timeline gives in the window: who ran
// whose timers, with the per-CPU maximum latencies of maxUS (nil for
// none).
func (tl *Timeline) Summary(w Window, maxUS map[int]float64) *report.Summary {
	iso, nohz := tl.Masks()
	return report.NewSummary(tl.Pulls(w), iso, nohz, maxUS)
}

// SetPartition marks the CPUs of m as isolated, as an isolated cpuset
// partition does (the machine line does not carry partitions); on kernels
// that exclude isolated CPUs they are marked excluded as well.
func (tl *Timeline) SetPartition(m cpumask.Mask) {
	excl := excludesIsolated(tl.Kernel)
	for c := m.First(); c >= 0 && c < len(tl.CPUs); c = m.Next(c) {
		tl.CPUs[c].Isolated = true
		if excl && !tl.CPUs[c].NohzFull {
			tl.CPUs[c].Excluded = true
		}
	}
}
