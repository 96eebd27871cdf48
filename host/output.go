package host

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
)

// WriteText prints the report: the machine line, the kernel and its
// model, the isolation, the hierarchy, the CPUs out of it and why, who may
// run other CPUs' timers by the kernel's rules, one simulated history,
// then the warnings and notes.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("# machine: %s\n\n", r.Machine.String())

	p("kernel %s: model %s, %s\n", r.Release.Raw, r.Policy, r.PolicyWhy)
	if r.Running != "" {
		p("  (the machine runs %s)\n", r.Running)
	}
	p("  switches: %s\n", switchList(r.Model))
	tm := "absent"
	if r.TimerMigration >= 0 {
		tm = fmt.Sprint(r.TimerMigration)
	}
	cfg := "no kernel config"
	if r.ConfigSource != "" {
		cfg = "config " + r.ConfigSource
	}
	rt := ""
	if r.PreemptRT {
		rt = ", PREEMPT_RT"
	}
	p("  timer_migration=%s, HZ=%d%s (%s)\n", tm, r.HZ, rt, cfg)

	p("\nCPUs: possible %s, online %s", dash(r.Possible), dash(r.Online))
	if !r.Present.Equal(r.Possible) {
		p(", present %s", dash(r.Present))
	}
	p("; %d node(s):", r.Nodes)
	for n, m := range r.NodeCPUs {
		p(" %d: %s", n, dash(m))
	}
	p("\n")
	p("isolation: isolcpus (domain) %s; nohz_full %s; managed_irq %s; isolated partitions %s",
		dash(r.Domain), dash(r.NohzFull), dash(r.ManagedIRQ), dash(r.Partition))
	if r.RcuNocbs != nil {
		p("; rcu_nocbs %s", dash(*r.RcuNocbs))
	}
	if r.IrqAffinity != nil {
		p("; irqaffinity %s", dash(*r.IrqAffinity))
	}
	p("; timekeeper CPU %d\n", r.Timekeeper)
	for _, pt := range r.Partitions {
		p("  partition %s: %s\n", pt.Path, pt.Effective)
	}

	p("\nhierarchy:\n")
	switch {
	case r.Hierarchy == nil:
		p("  none: %s\n", r.PolicyWhy)
	case r.BootLine == "":
		p("  none: the kernel builds none on a uniprocessor\n")
	default:
		p("%s\n%s", indent(r.BootLine), indent(strings.TrimRight(r.Picture, "\n")))
		p("\n")
	}
	if r.Hierarchy != nil {
		p("\nout of the hierarchy:\n")
		if len(r.Excluded) == 0 {
			p("  none\n")
		}
		for _, e := range r.Excluded {
			p("  %s: %s\n", e.CPUs, e.Why)
		}
		if len(r.Kept) > 0 {
			p("isolated, yet in the hierarchy:\n")
			for _, e := range r.Kept {
				p("  %s: %s\n", e.CPUs, e.Why)
			}
		}
		r.writeMigrators(b)
	}

	p("\nsimulation (one possible history):")
	switch {
	case r.Prediction != nil:
		r.writePrediction(b)
	case r.PredictionErr != "":
		p(" none: %s\n", r.PredictionErr)
	default:
		p(" not run\n")
	}

	if len(r.Warnings) > 0 {
		p("\nwarnings:\n")
		for _, w := range r.Warnings {
			p("  - %s\n", w)
		}
	}
	if len(r.Notes) > 0 {
		p("\nnotes:\n")
		for _, n := range r.Notes {
			p("  - %s\n", n)
		}
	}
	return b.Flush()
}

// writeMigrators prints what the kernel's rules determine about who runs
// whose timers (migrators.Prediction.Describe).
func (r *Report) writeMigrators(b *bufio.Writer) {
	m := r.Migrators
	if m == nil {
		return
	}
	fmt.Fprintf(b, "\nwho may run other CPUs' timers, by the kernel's rules, once the busy CPUs run and the others idle:\n")
	tk := -1
	if !r.NohzFull.Empty() {
		tk = r.Timekeeper
	}
	for _, l := range m.Describe(r.Domain.Or(r.NohzFull).Or(r.Partition), tk) {
		fmt.Fprintf(b, "  %s\n", l)
	}
}

func (r *Report) writePrediction(b *bufio.Writer) {
	pr := r.Prediction
	fmt.Fprintf(b, " %s for %.3g s (after %.3g s of warm-up, seed %d), model %s\n",
		pr.Workload, pr.Duration.Seconds(), pr.Warmup.Seconds(), pr.Seed, r.Policy)
	if len(pr.Pulls) == 0 {
		fmt.Fprintf(b, "  every CPU ran only its own timers\n")
	} else {
		fmt.Fprintf(b, "  who ran whose timers (handler: timers of owner CPUs, per second):\n")
		isolated := r.Domain.Or(r.NohzFull).Or(r.Partition)
		for i := 0; i < len(pr.Pulls); {
			j := i
			var sum uint64
			var parts []string
			for ; j < len(pr.Pulls) && pr.Pulls[j].Handler == pr.Pulls[i].Handler; j++ {
				sum += pr.Pulls[j].Count
				parts = append(parts, fmt.Sprintf("%d:%d", pr.Pulls[j].Owner, pr.Pulls[j].Count))
			}
			mark := ""
			if isolated.Test(pr.Pulls[i].Handler) {
				mark = " (isolated)"
			}
			fmt.Fprintf(b, "    CPU %d%s: %d (%.1f/s) from %s\n", pr.Pulls[i].Handler, mark, sum, pr.PerSecond(sum), strings.Join(parts, ","))
			i = j
		}
	}
	if pr.IsolatedPullers.Empty() {
		fmt.Fprintf(b, "  no isolated or nohz_full CPU ran another CPU's timers\n")
	} else {
		fmt.Fprintf(b, "  isolated or nohz_full CPUs that ran other CPUs' timers: %s\n", pr.IsolatedPullers)
	}
	if pr.WorstCPU >= 0 {
		fmt.Fprintf(b, "  worst latency on the isolated CPUs: %.0f us (CPU %d)\n", pr.WorstUS, pr.WorstCPU)
		if worst := worstCPUs(pr.Latency, 4); worst != "" {
			fmt.Fprintf(b, "  highest maxima: %s\n", worst)
		}
	} else if len(pr.Latency) == 0 {
		fmt.Fprintf(b, "  no latency measured (the workload measures none)\n")
	}
}

// worstCPUs names the n CPUs with the highest maxima.
func worstCPUs(lat map[int]float64, n int) string {
	cpus := make([]int, 0, len(lat))
	for c := range lat {
		cpus = append(cpus, c)
	}
	sort.Slice(cpus, func(i, j int) bool {
		a, b := lat[cpus[i]], lat[cpus[j]]
		return a > b || a == b && cpus[i] < cpus[j]
	})
	var parts []string
	for _, c := range cpus[:min(n, len(cpus))] {
		parts = append(parts, fmt.Sprintf("CPU %d %.0f us", c, lat[c]))
	}
	return strings.Join(parts, ", ")
}

func switchList(m kernel.Model) string {
	var parts []string
	for _, s := range m.Switches() {
		i := s.Info()
		parts = append(parts, fmt.Sprintf("%s (%s)", i.Name, i.Commit))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func dash(m cpumask.Mask) string {
	if m.Empty() {
		return "-"
	}
	return m.String()
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// JSON is the report as tmigr host --json prints it. CPU sets are
// cpulists ("" for none).
type JSON struct {
	Kernel         string         `json:"kernel"`
	Running        string         `json:"running,omitempty"`
	Model          string         `json:"model"`
	ModelWhy       string         `json:"model_why"`
	Switches       []string       `json:"switches"`
	TimerMigration *int           `json:"timer_migration"`
	HZ             int            `json:"hz"`
	HZKnown        bool           `json:"hz_known"`
	PreemptRT      bool           `json:"preempt_rt"`
	Config         string         `json:"config"`
	CPUs           string         `json:"cpus"`
	Present        string         `json:"present"`
	Online         string         `json:"online"`
	Nodes          []string       `json:"nodes"`
	Isolated       string         `json:"isolated"`
	NohzFull       string         `json:"nohz_full"`
	ManagedIRQ     string         `json:"managed_irq"`
	Partitions     string         `json:"partitions"`
	PartitionList  []JSONCPUs     `json:"partition_list"`
	RcuNocbs       *string        `json:"rcu_nocbs"`
	IrqAffinity    *string        `json:"irqaffinity"`
	Timekeeper     int            `json:"timekeeper"`
	Excluded       string         `json:"excluded"`
	ExcludedWhy    []JSONCPUs     `json:"excluded_why"`
	Kept           []JSONCPUs     `json:"kept"`
	BootLine       string         `json:"boot_line,omitempty"`
	Hierarchy      *hier.Topology `json:"hierarchy,omitempty"`
	// Prediction is what the kernel's rules determine (package
	// migrators); IsolatedHandlers the isolated or nohz_full CPUs among
	// its handlers.
	Prediction       *migrators.Prediction `json:"prediction"`
	IsolatedHandlers string                `json:"isolated_handlers"`
	Machine          string                `json:"machine"`
	// Simulation is one simulated run: one history of those the rules
	// allow.
	Simulation    *JSONPred `json:"simulation"`
	SimulationErr string    `json:"simulation_error,omitempty"`
	Warnings      []string  `json:"warnings"`
	Notes         []string  `json:"notes"`
}

// JSONCPUs is a cpulist with a reason or a name.
type JSONCPUs struct {
	CPUs string `json:"cpus"`
	Why  string `json:"why,omitempty"`
	Path string `json:"path,omitempty"`
}

// JSONPred is the simulation in the JSON.
type JSONPred struct {
	Workload        string             `json:"workload"`
	DurationS       float64            `json:"duration_s"`
	WarmupS         float64            `json:"warmup_s"`
	Seed            uint64             `json:"seed"`
	Pulls           []Pull             `json:"pulls"`
	IsolatedPullers string             `json:"isolated_pullers"`
	LatencyUS       map[string]float64 `json:"latency_us"`
	WorstCPU        *int               `json:"worst_isolated_cpu"`
	WorstUS         *float64           `json:"worst_isolated_us"`
}

// JSON returns the report's JSON object.
func (r *Report) JSON() *JSON {
	j := &JSON{
		Kernel: r.Release.Raw, Running: r.Running, Model: r.Policy.String(), ModelWhy: r.PolicyWhy,
		Switches: []string{}, HZ: r.HZ, HZKnown: r.HZKnown, PreemptRT: r.PreemptRT, Config: r.ConfigSource,
		CPUs: r.Possible.String(), Present: r.Present.String(), Online: r.Online.String(),
		Isolated: r.Domain.String(), NohzFull: r.NohzFull.String(), ManagedIRQ: r.ManagedIRQ.String(),
		Partitions: r.Partition.String(), PartitionList: []JSONCPUs{}, Timekeeper: r.Timekeeper,
		Excluded: r.Excludes().String(), ExcludedWhy: []JSONCPUs{}, Kept: []JSONCPUs{},
		BootLine: r.BootLine, Machine: "# machine: " + r.Machine.String(), SimulationErr: r.PredictionErr,
		Warnings: append([]string{}, r.Warnings...), Notes: append([]string{}, r.Notes...),
	}
	for _, s := range r.Model.Switches() {
		j.Switches = append(j.Switches, s.String())
	}
	if r.TimerMigration >= 0 {
		v := r.TimerMigration
		j.TimerMigration = &v
	}
	for _, m := range r.NodeCPUs {
		j.Nodes = append(j.Nodes, m.String())
	}
	for _, p := range r.Partitions {
		j.PartitionList = append(j.PartitionList, JSONCPUs{CPUs: p.Effective.String(), Path: p.Path})
	}
	for _, f := range []struct {
		src *cpumask.Mask
		dst **string
	}{{r.RcuNocbs, &j.RcuNocbs}, {r.IrqAffinity, &j.IrqAffinity}} {
		if f.src != nil {
			s := f.src.String()
			*f.dst = &s
		}
	}
	for _, e := range r.Excluded {
		j.ExcludedWhy = append(j.ExcludedWhy, JSONCPUs{CPUs: e.CPUs.String(), Why: e.Why})
	}
	for _, e := range r.Kept {
		j.Kept = append(j.Kept, JSONCPUs{CPUs: e.CPUs.String(), Why: e.Why})
	}
	if r.Hierarchy != nil && r.BootLine != "" {
		t := r.Hierarchy.Topology()
		j.Hierarchy = &t
	}
	j.Prediction, j.IsolatedHandlers = r.Migrators, r.IsolatedHandlers.String()
	if p := r.Prediction; p != nil {
		jp := &JSONPred{Workload: p.Workload, DurationS: p.Duration.Seconds(), WarmupS: p.Warmup.Seconds(), Seed: p.Seed,
			Pulls: append([]Pull{}, p.Pulls...), IsolatedPullers: p.IsolatedPullers.String(), LatencyUS: map[string]float64{}}
		for c, us := range p.Latency {
			jp.LatencyUS[fmt.Sprint(c)] = us
		}
		if p.WorstCPU >= 0 {
			c, us := p.WorstCPU, p.WorstUS
			jp.WorstCPU, jp.WorstUS = &c, &us
		}
		j.Simulation = jp
	}
	return j
}
