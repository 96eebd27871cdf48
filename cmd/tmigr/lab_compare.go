package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tmigr/tmigr/conformance"
	"github.com/tmigr/tmigr/replay"
)

func init() {
	registerLab("compare", "simulate a recording's machine and compare who pulls whose timers with the kernel", runLabCompare)
}

const labCompareUsage = `usage: tmigr lab compare [--json] [--timers recorded,mix] [flags] FILE...

Simulates the machine a recording's "# machine:" line describes (CPUs,
nodes, HZ, isolcpus=/nohz_full=, the policy of its kernel: pull for 6.12,
pull-isolated from 6.19, PREEMPT_RT, busy loops and periodic sleepers as
the guest ran them) and prints, side by side with the kernel's recording,
which CPUs expired other CPUs' timers and whose, per hierarchy level
(handler: target:count ...), with the agreement on the set of pulls
(handler, target, level): shared/union, per level, and weighted by count.

A simulation is one history. Then comes what the kernel's rules determine
from the machine line alone: per group, whether it always has a migrator
and its candidates; the CPUs that may run other CPUs' timers and those that
never do (one prediction per configuration of at=); and the check that every
CPU that ran another CPU's timers in the recording is among them (pulls made
before the steady state, while a CPU that was migrator when a busy loop
started still holds the role, are listed as history). --json has it as each
file's "prediction" object.

Both sides are read from their trace by the same code: the simulator writes
the kernel's tracepoints. The simulated timers come from
  recorded  the recording's own wheel timers, on the same CPUs, with the
            same flags and timeouts, at the same moments
  mix       the simulator's housekeeping timer mix (what "tmigr sim" runs)

flags:
`

func runLabCompare(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr lab compare", labCompareUsage, stdout, stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	timers := fs.String("timers", "recorded,mix", "the simulations to run: recorded, mix, or both (comma-separated)")
	seed := fs.Uint64("seed", 1, "the simulator's random seed")
	warmup := fs.Duration("warmup", 0, "simulated time before the recording's span (default 100ms)")
	duration := fs.Duration("duration", 0, "simulated span (default: the recording's)")
	check := fs.Bool("check", false, "run the hierarchy's invariant checker after every simulated step (slow)")
	simTrace := fs.String("sim-trace", "", "write each simulation's trace to PREFIX-SOURCE.txt (one FILE only)")
	fs.files("sim-trace")
	fs.operands("FILE", 1, -1, completion{kind: completeFile})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	o := conformance.CompareOptions{Seed: *seed, Warmup: *warmup, Duration: *duration, Check: *check}
	if *warmup < 0 || *duration < 0 {
		fmt.Fprintln(stderr, "tmigr lab compare: --warmup and --duration must not be negative")
		return 2
	}
	for _, s := range strings.Split(*timers, ",") {
		switch src := conformance.TimerSource(strings.TrimSpace(s)); src {
		case conformance.RecordedBackground, conformance.HousekeepingMix:
			o.Sources = append(o.Sources, src)
		default:
			fmt.Fprintf(stderr, "tmigr lab compare: --timers: unknown source %q (want recorded or mix)\n", s)
			return 2
		}
	}
	if *simTrace != "" {
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "tmigr lab compare: --sim-trace takes one FILE")
			return 2
		}
		o.SimTraces = map[conformance.TimerSource]io.Writer{}
		for _, src := range o.Sources {
			f, err := os.Create(*simTrace + "-" + string(src) + ".txt")
			if err != nil {
				fmt.Fprintf(stderr, "tmigr lab compare: %v\n", err)
				return 2
			}
			defer f.Close()
			o.SimTraces[src] = f
		}
	}
	var out []*conformance.Comparison
	for _, f := range fs.Args() {
		tr, err := replay.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr lab compare: %v\n", err)
			return 2
		}
		c, err := conformance.Compare(tr, o)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr lab compare: %s: %v\n", f, err)
			return 2
		}
		out = append(out, c)
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(labCompareOutput{schemaVersion, out}); err != nil {
			fmt.Fprintf(stderr, "tmigr lab compare: %v\n", err)
			return 2
		}
		return 0
	}
	for i, c := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := c.WriteText(stdout); err != nil {
			fmt.Fprintf(stderr, "tmigr lab compare: %v\n", err)
			return 2
		}
	}
	return 0
}
