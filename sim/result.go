package sim

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/report"
)

// CPUResult is what one CPU did during the measurement window.
type CPUResult struct {
	CPU     int
	Wakeups uint64 // idle exits
	Ticks   uint64 // tick interrupts
	BusyNs  int64  // time running a task or kernel code
	// Expired counts the wheel timers this CPU ran, RemoteExpired those
	// of them that belonged to another CPU, by owner in RemoteFrom.
	Expired       uint64
	RemoteExpired uint64
	RemoteFrom    report.CPUCounts
}

// GroupMigrator names the CPU that was migrator of a group at the end.
type GroupMigrator struct {
	Group string
	Level int
	CPU   int // -1: the group had no active child
}

// Result is the outcome of a run.
type Result struct {
	Config   Config
	Duration int64 // the measured time, ns
	Events   uint64
	Wall     time.Duration
	CPUs     []CPUResult
	// Workloads are the workloads' results, in the order given to Run;
	// entries are nil for workloads that report nothing.
	Workloads     []WorkloadResult
	WorkloadNames []string
	// Migrators are the group migrators at the end of the run, by level
	// and group.
	Migrators []GroupMigrator
	// GroupCPUs are the member CPUs of each level-0 group.
	GroupCPUs []GroupMembers
	BootLine  string
	// Partial marks a run stopped early through RunContext's context: the
	// measurement ends where the run stopped (Duration), and the
	// workloads report what they saw up to there.
	Partial bool
}

// GroupMembers lists a level-0 group's CPUs.
type GroupMembers struct {
	Group string
	CPUs  []int
}

func (m *Machine) result() *Result {
	r := &Result{Config: m.cfg, Duration: m.end - m.start, Events: m.nEvents, Wall: m.wall,
		Partial: m.watch != nil && m.watch.stopped}
	for i := range m.cpus {
		c := &m.cpus[i]
		rem := append([]remoteCount(nil), c.remoteFrom...)
		sort.Slice(rem, func(a, b int) bool { return rem[a].owner < rem[b].owner })
		cr := CPUResult{CPU: i, Wakeups: c.wakeups, Ticks: c.ticks, BusyNs: c.busyNs,
			Expired: c.expiredHere, RemoteExpired: c.remoteExpired}
		for _, e := range rem {
			cr.RemoteFrom = append(cr.RemoteFrom, report.CPUCount{CPU: e.owner, Count: e.n})
		}
		r.CPUs = append(r.CPUs, cr)
	}
	for _, w := range m.workloads {
		r.WorkloadNames = append(r.WorkloadNames, w.Name())
		r.Workloads = append(r.Workloads, w.Result(m))
	}
	if m.h != nil {
		r.BootLine = m.h.BootLine()
		gs := m.h.Groups()
		r.Migrators = migrators(gs)
		for _, g := range gs {
			if g.Level == 0 {
				r.GroupCPUs = append(r.GroupCPUs, GroupMembers{g.Name, g.CPUs})
			}
		}
	}
	return r
}

// migrators resolves each group's migrator down to a CPU.
func migrators(gs []hier.GroupInfo) []GroupMigrator {
	cpus := hier.MigratorCPUs(gs)
	out := make([]GroupMigrator, 0, len(gs))
	for i := range gs {
		out = append(out, GroupMigrator{Group: gs[i].Name, Level: gs[i].Level, CPU: cpus[i]})
	}
	return out
}

// Report returns the run's JSON object.
func (r *Result) Report() *report.Run {
	c := &r.Config
	run := &report.Run{
		Machine: report.Machine{
			CPUs: c.CPUs, Nodes: max(c.Nodes, 1), HZ: c.HZ,
			Isolcpus: c.Isolcpus.String(), NohzFull: c.NohzFull.String(), IsolatedPartition: c.Partition.String(),
			PreemptRT: c.PreemptRT, Sleepers: c.Sleepers.String(), Platform: c.Platform,
		},
		Policy:    c.Policy.String(),
		DurationS: report.Round(float64(r.Duration)/1e9, 6),
		Seed:      c.Seed,
		Events:    r.Events,
		WallS:     report.Round(r.Wall.Seconds(), 3),
		Partial:   r.Partial,
	}
	lat := map[int][3]float64{}
	workload := map[string]any{}
	for i, w := range r.Workloads {
		if w == nil {
			continue
		}
		for cpu, l := range w.Latency() {
			lat[cpu] = l
		}
		if j := w.JSON(); j != nil {
			workload[r.WorkloadNames[i]] = j
		}
	}
	if len(workload) > 0 {
		run.Workload = workload
	}
	for _, cr := range r.CPUs {
		out := report.CPU{
			CPU: cr.CPU, Wakeups: cr.Wakeups, Ticks: cr.Ticks,
			BusyPct:       report.Round(100*float64(cr.BusyNs)/float64(max(r.Duration, 1)), 3),
			RemoteExpired: cr.RemoteExpired, RemoteFrom: cr.RemoteFrom,
		}
		if out.RemoteFrom == nil {
			out.RemoteFrom = report.CPUCounts{}
		}
		if l, ok := lat[cr.CPU]; ok {
			out.LatencyUS = &report.Latency{Min: report.Round(l[0], 3), Avg: report.Round(l[1], 3), Max: report.Round(l[2], 3)}
		}
		run.CPUs = append(run.CPUs, out)
	}
	return run
}

// PartialNote is the line that marks the report of a run stopped before
// its end.
func (r *Result) PartialNote() string {
	return fmt.Sprintf("# PARTIAL: the run was stopped; the measurement covers %.3f s of the %v asked for",
		float64(r.Duration)/1e9, r.Config.Duration)
}

// WriteText prints the workloads' reports (the tools' own formats), then
// the per-CPU migration summary.
func (r *Result) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if r.Partial {
		fmt.Fprintf(bw, "%s\n\n", r.PartialNote())
	}
	for _, wr := range r.Workloads {
		if wr == nil {
			continue
		}
		if err := wr.WriteText(bw); err != nil {
			return err
		}
	}
	if err := report.WriteMigrationSummary(bw, r.Report()); err != nil {
		return err
	}
	return bw.Flush()
}

// Workload returns the result of the workload called name, or nil.
func (r *Result) Workload(name string) WorkloadResult {
	for i, n := range r.WorkloadNames {
		if n == name {
			return r.Workloads[i]
		}
	}
	return nil
}
