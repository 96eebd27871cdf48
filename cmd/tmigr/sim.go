package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
	"github.com/tmigr/tmigr/viz"
)

func init() {
	register("sim", "simulate a machine running a workload on the timer core", runSim)
}

const simUsage = `usage: tmigr sim --cpus N [--nodes K] [--hz 250] [--isolcpus LIST] [--nohz-full LIST]
                [--isolated-partition LIST] [--kernel VERSION] [--policy P] --workload W
                [--duration D] [--at CHANGE]... [--seed S] [--json] [flags]

Simulates an N-CPU Linux machine on a virtual clock, running the real
timer core (wheels, migration hierarchy, hrtimers) under a workload, and
prints the answer first, who ran whose timers (the CPUs that ran other
CPUs' timers, the isolated ones among them, the worst latency). That run is
one history: which busy CPU of a group becomes its migrator depends on the
order they became active, which no configuration fixes; so beside it comes
what the kernel's rules determine whatever the order (package migrators):
per group with idle CPUs to pull from, whether it always has a migrator
and the candidates, the CPUs that may run other CPUs' timers and those
that never do (--json: "prediction"). Then the
report the real tool would print (oslat's, cyclictest's) and a per-CPU
migration summary: ticks, idle wakeups, busy share, and the timers
of other CPUs each CPU expired. The housekeeping timer mix (vmstat,
writeback, watchdogs, TCP, driver work, ...) runs on the housekeeping
CPUs in every run; --set hk.CLASS.enabled=false switches a class off.

The kernel (--kernel, a release such as 6.12 or 7.3.4; the default is the
newest modelled, %s) picks the rules (package kernel): pull-isolated from
6.19 (isolated CPUs excluded from the hierarchy), pull for 6.9-6.18
(isolated CPUs take part), push up to 6.8 (the 2009 push at enqueue), and
none for 6.1-6.8 with kernel.timer_migration=0. --policy overrides it. From
6.9 timer_migration=0 (--at '0s timer_migration=0') leaves the pull
hierarchy as it is and only keeps hrtimers on the CPU that starts them;
with it on, a sleeper started on a nohz_full CPU may be queued on a
housekeeping CPU (hrtimer.c's get_target_base).

Workloads:
%s

Costs are declared inputs: --explain prints every parameter with its value
and meaning (in the --params file format); --set NAME=VALUE and --params
FILE override them. The same --seed gives the same output, byte for byte.

Long runs show a rate and an ETA on stderr when it is a terminal (not
with --quiet), and warn first when they may take over a minute; Ctrl-C
stops a run and prints the report of what was simulated, marked partial
(exit status 130).

Sweeps: --seeds 1-100 runs the configuration once per seed, and
--grid 'NAME=V1,V2;NAME2=V1,V2' (repeatable) over the cross product of
values, where NAME is a flag above without its dashes (cpus, policy,
workload, ...) or a parameter of --set (cost.tick, hk.driver.period);
values split at commas outside parentheses, or at '|' when there is one
(--grid 'isolcpus=1-7,9-15|1-15'). -j N runs N at a time (default: the
CPUs). The output is one JSON line per run in configuration order, then a
summary line per configuration (each CPU's worst latency over the seeds:
median, p99, max; how often it pulled), the same whatever N. --shard I/N
runs the I-th of N slices (I from 0) without the summary; concatenated
shards piped to 'tmigr sim --summarize [FILE...]' give the whole sweep's
output, byte for byte.

flags:
`

// repeated is a flag that may be given several times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// simFlags are the flags sim and repro share.
type simFlags struct {
	set      repeated
	params   string
	platform string
}

func runSim(args []string, stdout, stderr io.Writer) int {
	if isSweep(args) {
		return runSweep(args, stdout, stderr)
	}
	ctx, stop := signalContext()
	defer stop()
	return runSimContext(ctx, args, stdout, stderr)
}

// runSimContext is one run of tmigr sim; ctx's end stops it (partial).
func runSimContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr sim", fmt.Sprintf(simUsage, kernel.Newest, indent(workload.Usage, "  ")), stdout, stderr)
	cpus := fs.Int("cpus", 0, "number of CPUs (1-8192)")
	nodes := fs.Int("nodes", 1, "number of NUMA nodes, CPUs in contiguous blocks")
	hz := fs.Int("hz", 250, "tick rate")
	isolcpus := fs.String("isolcpus", "", "isolcpus= (domain) list")
	nohzFull := fs.String("nohz-full", "", "nohz_full= list")
	partition := fs.String("isolated-partition", "", "CPUs of an isolated cpuset partition created after boot")
	kernelRel := fs.String("kernel", kernel.Newest.String(), "the kernel release whose rules to model (6.1 to "+kernel.Newest.Series()+")")
	policy := fs.String("policy", "", "override the kernel's timer migration policy: none, push, pull, pull-isolated")
	wl := fs.String("workload", "", "the workload (see above)")
	duration := fs.String("duration", "10s", "measured time (a Go duration, or seconds)")
	warmup := fs.String("warmup", "1s", "simulated time before the measurement starts (oslat's pre-heat)")
	seed := fs.Uint64("seed", 1, "random seed")
	asJSON := fs.Bool("json", false, "print one JSON object")
	check := fs.Bool("check", false, "run the hierarchy's invariant checker after every step (slow)")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	threads := fs.Int("threads", 0, "goroutines that run the quiet ticks of one run side by side (0: the CPUs available, at most 4);\nthe output is the same for any value")
	explain := fs.Bool("explain", false, "print the cost model and every parameter, then exit")
	preemptRT := fs.Bool("preempt-rt", false, "model a PREEMPT_RT kernel (softirqs in the ktimers thread)")
	sleepers := fs.String("sleepers", "by-policy", "PREEMPT_RT sleepers: by-policy (RT tasks hard, others soft; since 2017) or all-hard")
	trace := fs.String("trace", "", "write the hierarchy's tracepoints to FILE as ftrace lines (replaced only when the run succeeds)")
	var pics viz.Pictures
	fs.StringVar(&pics.Perfetto, "perfetto", "", "write the run as Perfetto / Chrome trace-event JSON to FILE (ui.perfetto.dev opens it)")
	fs.StringVar(&pics.HTML, "html", "", "write a self-contained HTML page of the run to FILE: hierarchy, migrators, who ran whose timers, latency")
	dryRun := fs.Bool("dry-run", false, "check the flags and the configuration, print the estimated wall time, and exit")
	var at repeated
	fs.Var(&at, "at", "change the machine while it runs: 'TIME offline CPU', 'TIME online CPU', 'TIME partition LIST|none'\nor 'TIME timer_migration=0|1' (a recording's at= field, element by element), TIME counted from boot,\nthe warm-up included, before the run's end (repeatable)")
	var sf simFlags
	sf.register(fs)
	fs.files("trace", "perfetto", "html")
	fs.words("policy", "pull-isolated", "pull", "push", "none")
	fs.words("kernel", "6.1", "6.12", "6.18", "6.19", "7.0", "7.2", "7.3")
	fs.words("sleepers", "by-policy", "all-hard")
	fs.words("workload", "oslat", "cyclictest", "idle", "kernbench:", "panic:")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	hk := workload.NewHousekeeping()
	wopts := workload.DefaultOptions()
	costs, ps, err := sf.costs(hk, &wopts)
	if err != nil {
		return fs.fail(err)
	}
	if *explain {
		return explainParams(stdout, sf.platform, ps)
	}
	if *nodes < 1 {
		// sim.Config reads 0 as 1 (the zero value); on the command line
		// it is a mistake like any other count below one.
		return fs.failf("--nodes must be at least 1 (got %d)", *nodes)
	}
	if *threads < 0 {
		return fs.failf("--threads must be at least 0 (got %d)", *threads)
	}
	cfg := sim.Config{CPUs: *cpus, Nodes: *nodes, HZ: *hz, Seed: *seed, Check: *check, Threads: *threads,
		PreemptRT: *preemptRT, Platform: sf.platform, Costs: costs}
	if cfg.Duration, err = parseSeconds("--duration", *duration); err != nil {
		return fs.fail(err)
	}
	if cfg.Warmup, err = parseSeconds("--warmup", *warmup); err != nil {
		return fs.fail(err)
	}
	if *cpus < 1 || *cpus > cpumask.MaxCPUs {
		return fs.failf("--cpus must be 1 to %d (got %d)", cpumask.MaxCPUs, *cpus)
	}
	for _, l := range []struct {
		flag, val string
		dst       *cpumask.Mask
	}{{"--isolcpus", *isolcpus, &cfg.Isolcpus}, {"--nohz-full", *nohzFull, &cfg.NohzFull}, {"--isolated-partition", *partition, &cfg.Partition}} {
		if *l.dst, err = parseCPUList(l.flag, l.val, *cpus); err != nil {
			return fs.fail(err)
		}
	}
	rel, err := parseKernelFlag(*kernelRel)
	if err != nil {
		return fs.failf("--kernel: %v", err)
	}
	km := kernel.For(rel.Version)
	cfg.Policy = km.Policy(true)
	cfg.ImbalancedNUMA = km.ImbalancedNUMA()
	// The trace names the release modelled, unless --policy models
	// another generation (its trace then names one of that generation).
	cfg.Release = rel.Version.String()
	if *policy != "" {
		if cfg.Policy, err = cpu.ParsePolicy(*policy); err != nil {
			return fs.failf("--policy: %v", err)
		}
		if cfg.Policy != km.Policy(true) {
			cfg.Release = ""
		}
	}
	switch *sleepers {
	case "by-policy":
		cfg.Sleepers = hrtimer.SleepersByPolicy
	case "all-hard":
		cfg.Sleepers = hrtimer.SleepersAllHard
	default:
		return fs.failf("--sleepers: unknown rule %q (want by-policy or all-hard)", *sleepers)
	}
	var changes []ftrace.Change
	for _, a := range at {
		act, err := parseAction(a, *cpus)
		if err != nil {
			return fs.fail(err)
		}
		if c, err := ftrace.ParseChange(a, *cpus); err == nil {
			changes = append(changes, c)
		}
		if act.Kind == sim.TimerMigration && act.At == 0 {
			// Written as the run starts: the boot value. (Up to 6.8,
			// push with the sysctl off is what the none policy models.)
			cfg.TimerMigrationOff = !act.On
		}
		cfg.Actions = append(cfg.Actions, act)
	}
	if *wl == "" {
		return fs.fail(errors.New("--workload is required (oslat, cyclictest, kernbench:JOBS, idle or panic:CPU)"))
	}
	if err := cfg.Validate(); err != nil {
		return fs.fail(err)
	}
	w, err := workload.Parse(*wl, &cfg, &wopts)
	if err != nil {
		return fs.fail(err)
	}
	if *dryRun {
		return printEstimate(stdout, &cfg, *asJSON)
	}
	if err := pics.Check(); err != nil {
		return fs.fail(err) // before the run, as --trace: its report is not lost
	}
	var out *outputFile
	progress := newRunProgress(ctx, stderr, &cfg, *quiet)
	if *trace != "" {
		// The trace is written at the end of the run, into a temporary
		// file that replaces FILE only if the run succeeds.
		if out, err = createOutput(*trace); err != nil {
			return fs.failf("--trace: %v", err)
		}
		defer out.abort()
		cfg.Trace = out
	}
	var picTrace bytes.Buffer // the pictures are drawn from the run's trace
	if pics.Any() {
		if cfg.Trace != nil {
			cfg.Trace = io.MultiWriter(cfg.Trace, &picTrace)
		} else {
			cfg.Trace = &picTrace
		}
	}
	res, err := sim.RunContext(ctx, cfg, progress.update, hk, w)
	progress.done(res)
	if err != nil && (res == nil || !res.Partial) {
		fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
		return 1
	}
	if out != nil {
		if err := out.commit(); err != nil {
			fmt.Fprintf(stderr, "tmigr sim: --trace: %v\n", err)
			return 1
		}
	}
	run := res.Report()
	if run.Summary, err = report.Summarize(run); err != nil {
		fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
		return 1
	}
	if pics.Any() {
		if err := pics.FromSim(res, picTrace.Bytes(), "tmigr sim "+strings.Join(args, " ")); err != nil {
			fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
			return 1
		}
	}
	pred, err := simPrediction(&cfg, km, w, changes)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr sim: predicting: %v\n", err)
		return 1
	}
	return printSim(res, run, pred, simPredictionText(&cfg, pred), *asJSON, stdout, stderr)
}

// simPrediction is what the kernel's rules determine about who may run
// other CPUs' timers on the simulated machine (package migrators), under
// the policy simulated: the workload's busy CPUs always active unless
// nohz_full, and under nohz_full the timekeeper; one phase per change of
// --at.
func simPrediction(cfg *sim.Config, km kernel.Model, w sim.Workload, changes []ftrace.Change) (*migrators.Timeline, error) {
	switch cfg.Policy {
	case cpu.Pull:
		km = km.With(kernel.PullHierarchy, true).With(kernel.ExcludeIsolated, false)
	case cpu.PullIsolated:
		km = km.With(kernel.PullHierarchy, true).With(kernel.ExcludeIsolated, true)
	default:
		km = km.With(kernel.PullHierarchy, false)
	}
	km = km.With(kernel.NUMABalancedTree, !cfg.ImbalancedNUMA)
	tk := -1
	if !cfg.NohzFull.Empty() {
		tk = cfg.Timekeeper()
	}
	return migrators.Over(migrators.Setup{NodeOf: cfg.NodeMap(), Nodes: max(cfg.Nodes, 1), Model: km,
		Domain: cfg.Isolcpus, NohzFull: cfg.NohzFull, Partition: cfg.Partition, Busy: workload.Busy(w), Timekeeper: tk}, changes)
}

// simPredictionText says the prediction as comment lines, to print
// beside the summary.
func simPredictionText(cfg *sim.Config, pred *migrators.Timeline) []string {
	out := []string{"# that is one history: which busy CPU of a group is its migrator depends on the order",
		"# they became active. What the kernel's rules determine, whatever the order:"}
	tk := -1
	if !cfg.NohzFull.Empty() {
		tk = cfg.Timekeeper()
	}
	for i, ph := range pred.Phases {
		isolated := cfg.Isolcpus.Or(cfg.NohzFull).Or(ph.Partition)
		indent := "#   "
		if len(pred.Phases) > 1 {
			when := "from the start"
			if i > 0 {
				when = "from " + ph.Change
			}
			out = append(out, indent+when+":")
			indent += "  "
		}
		for _, l := range ph.Prediction.Describe(isolated, tk) {
			out = append(out, indent+l)
		}
	}
	return out
}

// printSim prints a run's summary and report, or its JSON.
func printSim(res *sim.Result, run *report.Run, pred *migrators.Timeline, predText []string, asJSON bool, stdout, stderr io.Writer) int {
	if asJSON {
		b, err := json.Marshal(simOutput{schemaVersion, run, pred})
		if err != nil {
			fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return partialStatus(stderr, res)
	}
	text := res
	if res.Partial {
		// The mark comes first, before the summary it applies to too.
		fmt.Fprintf(stdout, "%s\n\n", res.PartialNote())
		r := *res
		r.Partial = false
		text = &r
	}
	if err := report.WriteSummary(stdout, run.Summary); err != nil {
		fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
		return 1
	}
	for _, l := range predText {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout)
	if err := text.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
		return 1
	}
	return partialStatus(stderr, res)
}

// parseCPUList reads a cpulist flag of a machine of n CPUs. "" is no CPU;
// a list that is not empty but selects no CPU ("0-7:0/2") is refused, as
// the user meant some.
func parseCPUList(flagName, s string, n int) (cpumask.Mask, error) {
	if s == "" {
		return cpumask.Mask{}, nil
	}
	m, err := cpumask.ParseFor(s, n)
	if err != nil {
		return m, fmt.Errorf("%s: %v", flagName, err)
	}
	if m.Empty() {
		return m, fmt.Errorf("%s: %q selects no CPU (leave the flag out for none)", flagName, s)
	}
	return m, nil
}

func (sf *simFlags) register(fs *flagSet) {
	fs.StringVar(&sf.platform, "platform", "server", "cost model: server, atom-e3825, zynq-7020, kvm-guest")
	fs.Var(&sf.set, "set", "override a parameter, NAME=VALUE (repeatable; see --explain)")
	fs.StringVar(&sf.params, "params", "", "read parameter overrides from FILE (NAME = VALUE lines)")
	fs.files("params")
	var names []string
	for _, p := range sim.Platforms() {
		names = append(names, p.Name)
	}
	fs.words("platform", names...)
}

// costs returns the platform's costs with the overrides applied, and the
// parameter set (costs, housekeeping mix, workload options) they came
// from.
func (sf *simFlags) costs(hk *workload.Housekeeping, wopts *workload.Options) (sim.Costs, *sim.Params, error) {
	p, err := sim.PlatformByName(sf.platform)
	if err != nil {
		return sim.Costs{}, nil, fmt.Errorf("--platform: %v", err)
	}
	costs := p.Costs
	ps := &sim.Params{}
	costs.Register(ps)
	if hk != nil {
		hk.Register(ps)
	}
	if wopts != nil {
		wopts.Register(ps)
	}
	if sf.params != "" {
		if err := ps.ReadFile(sf.params); err != nil {
			return sim.Costs{}, nil, fmt.Errorf("--params: %v", err)
		}
	}
	for _, s := range sf.set {
		if err := ps.SetAssignment(s); err != nil {
			return sim.Costs{}, nil, fmt.Errorf("--set: %v", err)
		}
	}
	return costs, ps, nil
}

func explainParams(w io.Writer, platform string, ps *sim.Params) int {
	p, _ := sim.PlatformByName(platform)
	fmt.Fprintf(w, "# tmigr simulator parameters, platform %s: %s\n# %s\n#\n", p.Name, p.Title, p.Note)
	fmt.Fprintf(w, "# Every value is a declared input. Durations are Go durations (1.5us, 2ms);\n")
	fmt.Fprintf(w, "# distributions are a duration, uniform(MIN,MAX) or lognormal(MEDIAN,SIGMA[,max=CAP]).\n\n")
	if err := ps.Explain(w); err != nil {
		return 1
	}
	return 0
}

// parseSeconds reads a Go duration, or a plain number of seconds (as
// oslat's -D reads "62").
func parseSeconds(flagName, s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) {
			return 0, fmt.Errorf("%s: %q is not a number of seconds", flagName, s)
		}
		if f < 0 || f > 1e7 {
			return 0, fmt.Errorf("%s: %q out of range", flagName, s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: bad duration %q (want e.g. 62s, 500ms, 2m or a number of seconds)", flagName, s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s: negative duration %q", flagName, s)
	}
	return d, nil
}

// parseAction reads one change of the machine, in the words of the machine
// line's at= field: "TIME offline CPU", "TIME online CPU", "TIME partition
// LIST|none" or "TIME timer_migration=0|1".
func parseAction(s string, cpus int) (sim.Action, error) {
	c, err := ftrace.ParseChange(s, cpus)
	if err != nil {
		return sim.Action{}, fmt.Errorf("--at %v", err)
	}
	a, err := sim.ActionOf(c, c.At)
	if err != nil {
		return sim.Action{}, fmt.Errorf("--at %q: %v", s, err)
	}
	return a, nil
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}
