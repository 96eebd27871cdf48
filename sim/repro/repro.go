// Package repro reproduces the published experiments behind tmigr (the
// seed posts) on the simulator: each runs a machine under each policy or
// kernel behaviour the post compares, prints the post's before/after table
// beside the simulated one, and then what explains the difference, read
// from the runs themselves (who expired whose timers, how many wakeups one
// interrupt did, where CPU time went).
//
// The costs are declared inputs of the cost model (sim.Costs, printed by
// tmigr sim --explain); where a number was calibrated to a post's figure,
// the experiment says which and to what.
package repro

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// Options tune a reproduction.
type Options struct {
	Seed uint64
	// Duration replaces the experiment's measured time (0: the post's).
	Duration time.Duration
	// Short runs a reduced version (fewer CPUs where the experiment
	// allows, 200 ms of warm-up and a short measurement, a smaller build)
	// for tests.
	Short bool
	// Check runs the hierarchy's invariant checker after every step.
	Check bool
	// Progress receives progress lines (nil: none).
	Progress io.Writer
	// Full prints every run's complete tool report after the table.
	Full bool
	// Set overrides parameters (NAME=VALUE) in every run.
	Set []string
	// Kernel is the kernel under test (zero: kernel.Newest): the model of
	// the experiments that run one kernel (hrtimer-soft, panic) and of
	// isolation's "after" run; isolation's "before" is 6.9-6.18's, and
	// kernbench compares the policies of the post (6.1-6.8 with and
	// without timer_migration, and the 6.9 hierarchy).
	Kernel kernel.Version
}

// kernel returns the model of the kernel under test.
func (o Options) kernel() kernel.Model {
	if o.Kernel == (kernel.Version{}) {
		return kernel.For(kernel.Newest)
	}
	return kernel.For(o.Kernel)
}

// Experiment is one reproduction.
type Experiment struct {
	Name  string
	Seeds string // the seed posts it reproduces
	Title string
	run   func(o Options) (*Outcome, error)
}

// Outcome is a reproduction's result: its runs and its report.
type Outcome struct {
	Experiment string
	Runs       []*sim.Result
	text       strings.Builder
}

func (o *Outcome) printf(format string, args ...any) { fmt.Fprintf(&o.text, format, args...) }

// WriteText prints the report: the table, then the explanation.
func (o *Outcome) WriteText(w io.Writer) error {
	_, err := io.WriteString(w, o.text.String())
	return err
}

// JSON is an outcome as JSON: the experiment's name and the sim JSON of
// each run.
type JSON struct {
	Experiment string        `json:"experiment"`
	Runs       []*report.Run `json:"runs"`
}

// JSON returns the outcome as JSON.
func (o *Outcome) JSON() JSON {
	runs := make([]*report.Run, len(o.Runs))
	for i, r := range o.Runs {
		runs[i] = r.Report()
	}
	return JSON{o.Experiment, runs}
}

var experiments = []*Experiment{
	{Name: "isolation", Seeds: "000, 001", Title: "isolated CPUs pulled into the migration hierarchy (oslat, 128 CPUs)", run: runIsolation},
	{Name: "hrtimer-soft", Seeds: "003", Title: "softirq-based hrtimer wakeups for non-RT sleepers (cyclictest + stress, PREEMPT_RT)", run: runHrtimerSoft},
	{Name: "kernbench", Seeds: "004", Title: "timer migration policies on a kernel build (2-socket quad-core)", run: runKernbench},
	{Name: "panic", Seeds: "002", Title: "a panicked CPU that busy-waits versus one that halts (KVM guest, 30 s)", run: runPanic},
}

// Experiments returns the reproductions in order.
func Experiments() []*Experiment { return append([]*Experiment(nil), experiments...) }

// Lookup returns the experiment called name.
func Lookup(name string) (*Experiment, error) {
	for _, e := range experiments {
		if e.Name == name {
			return e, nil
		}
	}
	names := make([]string, len(experiments))
	for i, e := range experiments {
		names[i] = e.Name
	}
	return nil, fmt.Errorf("unknown experiment %q (want %s)", name, strings.Join(names, ", "))
}

// Run runs the experiment.
func (e *Experiment) Run(o Options) (*Outcome, error) {
	for _, s := range o.Set {
		if _, _, ok := strings.Cut(s, "="); !ok {
			return nil, fmt.Errorf("bad setting %q: want NAME=VALUE", s)
		}
	}
	return e.run(o)
}

// machine is a run's inputs: the configuration, the housekeeping mix and
// the workload options, with the overrides applied.
type machine struct {
	cfg   sim.Config
	hk    *workload.Housekeeping
	wopts workload.Options
}

// newMachine prepares a run on platform with the options' overrides.
func newMachine(o Options, platform string, cfg sim.Config, params ...string) (*machine, error) {
	p, err := sim.PlatformByName(platform)
	if err != nil {
		return nil, err
	}
	mc := &machine{cfg: cfg, hk: workload.NewHousekeeping(), wopts: workload.DefaultOptions()}
	mc.cfg.Platform = platform
	mc.cfg.Costs = p.Costs
	mc.cfg.Seed = o.Seed
	mc.cfg.Check = o.Check
	mc.cfg.Progress = o.Progress
	if mc.cfg.Warmup == 0 {
		mc.cfg.Warmup = time.Second
		if o.Short {
			mc.cfg.Warmup = 200 * time.Millisecond
		}
	}
	ps := &sim.Params{}
	mc.cfg.Costs.Register(ps)
	mc.hk.Register(ps)
	mc.wopts.Register(ps)
	for _, s := range append(params, o.Set...) {
		if err := ps.SetAssignment(s); err != nil {
			return nil, err
		}
	}
	return mc, nil
}

func (mc *machine) run(w sim.Workload) (*sim.Result, error) {
	return sim.Run(mc.cfg, mc.hk, w)
}

// describe prints a machine's line.
func describe(c *sim.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d CPUs on %d node(s), HZ=%d", c.CPUs, max(c.Nodes, 1), c.HZ)
	if !c.Isolcpus.Empty() {
		fmt.Fprintf(&b, ", isolcpus=%s", c.Isolcpus)
	}
	if !c.NohzFull.Empty() {
		fmt.Fprintf(&b, ", nohz_full=%s", c.NohzFull)
	}
	if c.PreemptRT {
		b.WriteString(", PREEMPT_RT")
	}
	fmt.Fprintf(&b, ", platform %s", c.Platform)
	return b.String()
}

// remoteSummary lists, per handler CPU, whose timers it ran and of which
// classes, from the housekeeping mix's statistics; cpus selects the
// handlers (nil: all that ran a remote timer).
func remoteSummary(stats []workload.HKStat, include func(handler int) bool) []string {
	type agg struct {
		owner   int
		count   uint64
		classes []string
	}
	byHandler := map[int][]*agg{}
	var handlers []int
	for _, s := range stats {
		if s.Handler == s.Owner || (include != nil && !include(s.Handler)) {
			continue
		}
		list := byHandler[s.Handler]
		if list == nil {
			handlers = append(handlers, s.Handler)
		}
		var a *agg
		for _, x := range list {
			if x.owner == s.Owner {
				a = x
			}
		}
		if a == nil {
			a = &agg{owner: s.Owner}
			byHandler[s.Handler] = append(list, a)
		}
		a.count += s.Count
		c := fmt.Sprintf("%s %d", s.Class, s.Count)
		if s.Heavy > 0 {
			c += fmt.Sprintf(" (%d heavy, longest %d µs)", s.Heavy, s.MaxCost/1000)
		}
		a.classes = append(a.classes, c)
	}
	sort.Ints(handlers)
	var out []string
	for _, h := range handlers {
		for _, a := range byHandler[h] {
			out = append(out, fmt.Sprintf("CPU %d ran %d timers of CPU %d: %s", h, a.count, a.owner, strings.Join(a.classes, ", ")))
		}
	}
	return out
}
