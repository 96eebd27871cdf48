package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Machine describes the simulated machine in the JSON of a run.
type Machine struct {
	CPUs              int    `json:"cpus"`
	Nodes             int    `json:"nodes"`
	HZ                int    `json:"hz"`
	Isolcpus          string `json:"isolcpus"`
	NohzFull          string `json:"nohz_full"`
	IsolatedPartition string `json:"isolated_partition"`
	PreemptRT         bool   `json:"preempt_rt"`
	Sleepers          string `json:"sleepers"`
	Platform          string `json:"platform"`
}

// Latency is a CPU's latency summary in µs.
type Latency struct {
	Min float64 `json:"min"`
	Avg float64 `json:"avg"`
	Max float64 `json:"max"`
}

// CPUCount is a count attributed to one CPU.
type CPUCount struct {
	CPU   int
	Count uint64
}

// CPUCounts marshals as a JSON object keyed by CPU number ("12"), in
// ascending CPU order.
type CPUCounts []CPUCount

// MarshalJSON implements json.Marshaler.
func (c CPUCounts) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, e := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(e.CPU), 10)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, e.Count, 10)
	}
	return append(b, '}'), nil
}

// String formats the counts as "0:12,32:3", or "-" when empty.
func (c CPUCounts) String() string {
	if len(c) == 0 {
		return "-"
	}
	var b strings.Builder
	for i, e := range c {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d", e.CPU, e.Count)
	}
	return b.String()
}

// CPU is one CPU's line of a run's results.
type CPU struct {
	CPU int `json:"cpu"`
	// LatencyUS is set for CPUs that ran a measuring workload (oslat,
	// cyclictest).
	LatencyUS *Latency `json:"latency_us,omitempty"`
	// Wakeups counts exits from idle.
	Wakeups uint64 `json:"wakeups"`
	// Ticks counts periodic tick interrupts.
	Ticks uint64 `json:"ticks"`
	// BusyPct is the share of the run the CPU ran a task or kernel code.
	BusyPct float64 `json:"busy_pct"`
	// RemoteExpired counts timers of other CPUs this CPU ran.
	RemoteExpired uint64    `json:"remote_expired"`
	RemoteFrom    CPUCounts `json:"remote_from"`
}

// Run is the JSON of one simulation run. Every field but WallS is a pure
// function of the inputs and the seed.
type Run struct {
	// Summary is the answer first: who ran whose timers, the isolated
	// CPUs among them, the worst latency (see Summarize). Set by the
	// caller; nil leaves it out.
	Summary   *Summary `json:"summary,omitempty"`
	Machine   Machine  `json:"machine"`
	Policy    string   `json:"policy"`
	DurationS float64  `json:"duration_s"`
	Seed      uint64   `json:"seed"`
	Events    uint64   `json:"events"`
	// WallS is the run's wall time, the one field a sweep's lines leave
	// out (so that they are a function of the configuration alone).
	WallS float64 `json:"wall_s,omitempty"`
	// Partial marks a run stopped before its end (an interrupt): it
	// reports the measurement up to where it stopped.
	Partial  bool  `json:"partial,omitempty"`
	CPUs     []CPU `json:"cpus"`
	Workload any   `json:"workload,omitempty"`
}

// Round rounds v to the given number of decimals, for JSON values that
// should not print float noise.
func Round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// WriteMigrationSummary prints the per-CPU migration summary that follows
// a tool's report: one line per CPU with its ticks, idle wakeups, busy
// share, and the timers of other CPUs it expired (and whose).
func WriteMigrationSummary(w io.Writer, r *Run) error {
	bw := bufio.NewWriter(w)
	m := r.Machine
	fmt.Fprintf(bw, "# tmigr sim: %d CPUs on %d node(s), HZ=%d, policy %s, %.3f s, seed %d, %d events\n",
		m.CPUs, m.Nodes, m.HZ, r.Policy, r.DurationS, r.Seed, r.Events)
	if m.Isolcpus != "" || m.NohzFull != "" || m.IsolatedPartition != "" {
		fmt.Fprintf(bw, "# isolcpus=%s nohz_full=%s isolated partition=%s\n",
			orDash(m.Isolcpus), orDash(m.NohzFull), orDash(m.IsolatedPartition))
	}
	fmt.Fprintf(bw, "# %5s %9s %9s %7s %9s %s\n", "CPU", "ticks", "wakeups", "busy%", "remote", "remote_from(cpu:timers)")
	for _, c := range r.CPUs {
		fmt.Fprintf(bw, "  %5d %9d %9d %7.2f %9d %s\n", c.CPU, c.Ticks, c.Wakeups, c.BusyPct, c.RemoteExpired, c.RemoteFrom)
	}
	return bw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
