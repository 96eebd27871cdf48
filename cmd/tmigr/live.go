package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tmigr/tmigr"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/live"
)

// liveCommands are the experiments of "tmigr live" (package live).
var liveCommands = &commandSet{
	path: "tmigr live", noun: "experiment", usage: "[flags]",
	doc: `Runs the runtime (package tmigr) on this machine's CPUs and measures it.
Each experiment compares, in one run, what the issue behind it is about;
it prints a table, or JSON with --json.`,
	more:  "Run 'tmigr live <experiment> -h' for its flags.",
	table: map[string]command{},
}

func init() {
	register("live", "experiments with the runtime on this machine", liveCommands.run)
	for _, e := range []struct {
		name, summary string
		run           func([]string, io.Writer, io.Writer) int
	}{
		{"lateness", "timers of random 1-50 ms on idle workers: tmigr wheel, tmigr hrtimer, time.AfterFunc (and cyclictest)", liveLateness},
		{"isolation", "a busy isolated worker beside a housekeeping one with global timers, pull vs pull-isolated", liveIsolation},
		{"idle", "CPU time and wake-up lateness of idle workers: halt, poll, haltpoll", liveIdle},
		{"softhard", "a hard 1 ms periodic hrtimer beside 50 sleepers on its worker, sleepers hard then soft", liveSoftHard},
		{"wakeups", "OS wake-ups of idle workers with a 100 ms timer each, without and with the hierarchy", liveWakeups},
	} {
		liveCommands.register(e.name, e.summary, e.run)
	}
}

// liveFlags are the flags every experiment has.
type liveFlags struct {
	*flagSet
	json  *bool
	cpus  *string
	hz    *int
	fifo  *int
	slack *time.Duration
}

func newLiveFlags(name, doc string, stdout, stderr io.Writer) *liveFlags {
	fs := newFlagSet("tmigr live "+name, "usage: tmigr live "+name+" [flags]\n\n"+doc+"\n\nflags:\n", stdout, stderr)
	fs.operands("", 0, 0, completion{})
	return &liveFlags{
		flagSet: fs,
		json:    fs.Bool("json", false, "print the results as JSON"),
		cpus:    fs.String("cpus", "", "CPUs to run workers on, a cpulist (default: the CPUs this process may use)"),
		hz:      fs.Int("hz", 1000, "tick rate of the timer wheels (1-10000)"),
		fifo:    fs.Int("fifo", 0, "run the workers SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE)"),
		slack:   fs.Duration("slack", 0, "timer slack of precise timers, as the kernel's timer_slack_ns (e.g. 50us; ignored with --fifo)"),
	}
}

// machine returns the machine the common flags give.
func (lf *liveFlags) machine() (live.Machine, error) {
	// The command owns its process: the workers get spare Ps (see
	// tmigr.Config.SpareProcs), as the published figures had.
	m := live.Machine{HZ: *lf.hz, Priority: *lf.fifo, Slack: *lf.slack, SpareProcs: true}
	if *lf.slack < 0 {
		return m, fmt.Errorf("--slack must not be negative (got %v)", *lf.slack)
	}
	if *lf.hz < 1 {
		// The runtime reads 0 as its default: on the command line it is
		// a mistake, and the report would name a rate it did not run at.
		return m, fmt.Errorf("--hz must be at least 1 (got %d)", *lf.hz)
	}
	if *lf.cpus != "" {
		var err error
		if m.CPUs, err = cpumask.Parse(*lf.cpus); err != nil {
			return m, fmt.Errorf("--cpus: %w", err)
		}
		if m.CPUs.Empty() {
			return m, fmt.Errorf("--cpus: %q selects no CPU", *lf.cpus)
		}
	}
	return m, nil
}

// result is what every experiment returns.
type result interface{ WriteText(io.Writer) error }

// emit prints an experiment's result, or its error; asJSON is the
// result as its --json output.
func (lf *liveFlags) emit(res result, asJSON func() any, err error) int {
	if err != nil {
		return lf.fail(err)
	}
	if *lf.json {
		enc := json.NewEncoder(lf.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(asJSON()); err != nil {
			return lf.fail(err)
		}
		return 0
	}
	if err := res.WriteText(lf.stdout); err != nil {
		return lf.fail(err)
	}
	return 0
}

func liveLateness(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("lateness", `Arms N timers of random 1-50 ms, one every half millisecond, each three
times: a tmigr wheel timer (global, AfterFuncOn) and a tmigr hrtimer (hard)
on the idle workers in turn, and a time.AfterFunc. Prints how late each
kind runs (from the arm to the function's start, minus the duration) as
cyclictest prints its threads, one per kind, with its histogram (--hist),
then a table of quantiles. Goal: hrtimer p99 under 100 us and at most 1/10
of std's.

With --cyclictest it runs rt-tests' cyclictest (Debian: apt-get install
rt-tests) over the same span, one thread per worker CPU at the workers'
scheduling class (--fifo), leaving power management as it is, and prints
its report and its quantiles beside ours: the system's own floor.

With --hogs N it starts N busy processes pinned to each worker CPU for the
run (SCHED_OTHER, nice 0): a loaded machine, on which a pinned worker's
thread waits for its CPU and the runtime's rescue of overdue timers
(tmigr.Stats.Rescues) runs them elsewhere.

With --rearm every timer is armed for an hour and then Reset to its
duration (its lateness counting from the Reset): a timeout re-armed by a
program, through Timer.Reset rather than a constructor.

A p99 is the 1% tail: with the default 5000 timers of each kind, their
50th-latest (about 3-5 s of arming).`, stdout, stderr)
	// 5000, not 1000: a p99 of 1000 samples is the 10th-latest, and on a
	// VM two or three of its wake-ups hundreds of µs late moved it by 2x
	// from run to run.
	n := lf.Int("timers", 5000, "timers of each kind")
	seed := lf.Uint64("seed", 1, "seed of the random durations")
	idle := lf.String("idle", tmigr.IdleMode(0).String(), "how idle workers wait: halt, poll or haltpoll (default: the runtime's)")
	hist := lf.Int("hist", 400, "1 us buckets of the histograms (cyclictest's -h); 0 for none")
	cyclictest := lf.Bool("cyclictest", false, "also run cyclictest (from PATH) over the same span")
	hogs := lf.Int("hogs", 0, "CPU hogs per worker CPU (0-16): busy processes pinned there, a loaded machine")
	rearm := lf.Bool("rearm", false, "arm every timer for an hour, then Reset it to its duration")
	lf.words("idle", "halt", "poll", "haltpoll")
	if rc, ok := lf.parse(args); !ok {
		return rc
	}
	m, err := lf.machine()
	if err != nil {
		return lf.fail(err)
	}
	o := live.LatenessOptions{Machine: m, Timers: *n, Seed: *seed, Hist: *hist, Hogs: *hogs, Rearm: *rearm}
	if o.Idle, err = tmigr.ParseIdleMode(*idle); err != nil {
		return lf.fail(err)
	}
	if *cyclictest {
		o.Cyclictest = "cyclictest"
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := live.Lateness(ctx, o)
	return lf.emit(res, func() any { return liveLatenessOutput{schemaVersion, res} }, err)
}

func liveIsolation(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("isolation", `Two workers: a housekeeping one, idle, whose four periodic global
timers (every 3, 5, 7 and 11 ms) each burn 200 us, and an isolated one
running an oslat-style busy loop that records the gaps between its clock
reads (calling Yield, where the worker's timers run). Under pull the busy
isolated worker is the hierarchy's migrator and runs the housekeeping
timers: 200 us gaps. Under pull-isolated it is out of the hierarchy and
runs none (the real-thread twin of seed 000). Uses the first two CPUs.`, stdout, stderr)
	dur := lf.Duration("duration", 3*time.Second, "length of each run")
	if rc, ok := lf.parse(args); !ok {
		return rc
	}
	m, err := lf.machine()
	if err != nil {
		return lf.fail(err)
	}
	res, err := live.Isolation(live.IsolationOptions{Machine: m, Duration: *dur})
	return lf.emit(res, func() any { return liveIsolationOutput{schemaVersion, res} }, err)
}

func liveIdle(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("idle", `Workers with nothing to do but a 1 ms periodic hard hrtimer on the first
one. For each idle mode (halt, poll, haltpoll) prints the CPU time the
workers' threads use (their per-thread CPU clocks: the getrusage
RUSAGE_THREAD account) as a share of the run, per worker and on average,
and how late the hrtimer runs. Goal: halt under 1% per idle worker, poll
near 100%, haltpoll between with a wake-up close to poll's.`, stdout, stderr)
	workers := lf.Int("workers", 0, "number of workers (default: one per CPU of --cpus)")
	dur := lf.Duration("duration", 2*time.Second, "length of each run")
	if rc, ok := lf.parse(args); !ok {
		return rc
	}
	m, err := lf.machine()
	if err != nil {
		return lf.fail(err)
	}
	res, err := live.Idle(live.IdleOptions{Machine: m, Workers: *workers, Duration: *dur})
	return lf.emit(res, func() any { return liveIdleOutput{schemaVersion, res} }, err)
}

func liveSoftHard(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("softhard", `One worker (the last CPU of --cpus) runs a hard 1 ms periodic hrtimer
and the hrtimers of N goroutines that sleep random 0-1 ms in a loop
(SleepOn), the sleepers hard, then soft. A hard sleeper's wake-up runs in
the interrupt pass, in expiry order among the hard timers; a soft one's in
the softirq pass after them (the real-thread twin of seed 003). Prints the
periodic timer's latency for each.`, stdout, stderr)
	n := lf.Int("sleepers", 50, "number of sleeping goroutines")
	dur := lf.Duration("duration", 3*time.Second, "length of each run")
	if rc, ok := lf.parse(args); !ok {
		return rc
	}
	m, err := lf.machine()
	if err != nil {
		return lf.fail(err)
	}
	res, err := live.SoftHard(live.SoftHardOptions{Machine: m, Sleepers: *n, Duration: *dur})
	return lf.emit(res, func() any { return liveSoftHardOutput{schemaVersion, res} }, err)
}

func liveWakeups(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("wakeups", `Idle workers, each with a 100 ms periodic global timer armed on it (in
step). Counts the workers' OS-level wake-ups per second (sleeps in the
kernel that ended, and voluntary context switches from procfs) without
timer migration (none) and with the hierarchy (pull), where the last
worker to go idle wakes for everyone's timers: why the hierarchy exists.`, stdout, stderr)
	workers := lf.Int("workers", 0, "number of workers (default: one per CPU of --cpus)")
	dur := lf.Duration("duration", 3*time.Second, "length of each run")
	if rc, ok := lf.parse(args); !ok {
		return rc
	}
	m, err := lf.machine()
	if err != nil {
		return lf.fail(err)
	}
	res, err := live.Wakeups(live.WakeupsOptions{Machine: m, Workers: *workers, Duration: *dur})
	return lf.emit(res, func() any { return liveWakeupsOutput{schemaVersion, res} }, err)
}
