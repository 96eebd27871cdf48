package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/sim/repro"
)

func init() {
	register("repro", "reproduce a published experiment on the simulator", runRepro)
}

const reproUsage = `usage: tmigr repro NAME [--kernel VERSION] [--json] [--seed S] [--duration D] [--short] [--check] [--full]

Runs a published experiment (a seed post) on the simulator under each
policy or kernel behaviour the post compares, prints the post's
before/after table beside the simulated one, and then what explains it.

Experiments:
`

func runRepro(args []string, stdout, stderr io.Writer) int {
	var b strings.Builder
	b.WriteString(reproUsage)
	var names []string
	for _, e := range repro.Experiments() {
		fmt.Fprintf(&b, "  %-13s seed posts %-8s %s\n", e.Name, e.Seeds, e.Title)
		names = append(names, e.Name)
	}
	b.WriteString("\nflags:\n")
	fs := newFlagSet("tmigr repro", b.String(), stdout, stderr)
	asJSON := fs.Bool("json", false, `print {"experiment":NAME,"runs":[the sim JSON of each run]}`)
	seed := fs.Uint64("seed", 1, "random seed")
	duration := fs.String("duration", "", "measured time per run instead of the post's (kernbench always builds to the end)")
	short := fs.Bool("short", false, "a reduced run: fewer CPUs where the experiment allows, 2 s, a small build")
	check := fs.Bool("check", false, "run the hierarchy's invariant checker after every step (slow)")
	full := fs.Bool("full", false, "also print every run's complete tool report and migration summary")
	quiet := fs.Bool("quiet", false, "no progress line on stderr")
	kernelRel := fs.String("kernel", kernel.Newest.String(), "the kernel under test (isolation's after run, hrtimer-soft, panic; kernbench compares the post's policies)")
	var set repeated
	fs.Var(&set, "set", "override a parameter in every run, NAME=VALUE (repeatable; see tmigr sim --explain)")
	// The experiment's name may come before or after the flags.
	fs.operands("the experiment's NAME", 1, 1, completion{kind: completeWords, words: names})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	name := fs.Arg(0)
	e, err := repro.Lookup(name)
	if err != nil {
		return fs.fail(err)
	}
	o := repro.Options{Seed: *seed, Short: *short, Check: *check, Full: *full, Set: set}
	rel, err := parseKernelFlag(*kernelRel)
	if err != nil {
		return fs.failf("--kernel: %v", err)
	}
	o.Kernel = rel.Version
	if *duration != "" {
		if o.Duration, err = parseSeconds("--duration", *duration); err != nil {
			return fs.fail(err)
		}
		if o.Duration <= 0 {
			return fs.failf("--duration must be positive (got %v)", o.Duration)
		}
	}
	o.Progress = progressWriter(stderr, *quiet)
	start := time.Now()
	out, err := e.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr repro %s: %v\n", name, err)
		return 1
	}
	if *asJSON {
		b, err := json.Marshal(reproOutput{schemaVersion, out.JSON()})
		if err != nil {
			fmt.Fprintf(stderr, "tmigr repro: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else if err := out.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "tmigr repro: %v\n", err)
		return 1
	}
	if !*quiet {
		var events uint64
		for _, r := range out.Runs {
			events += r.Events
		}
		el := time.Since(start)
		fmt.Fprintf(stderr, "tmigr repro %s: %d runs, %d events in %.2f s of wall time (%.1f M events/s)\n",
			name, len(out.Runs), events, el.Seconds(), float64(events)/el.Seconds()/1e6)
	}
	return 0
}

// progressWriter returns where the simulator's progress line goes: stderr
// if it is a terminal, which the line's carriage returns redraw in place;
// nil otherwise (a log or a pipe would get every redraw, one after the
// other), or with --quiet. The closing summary is printed either way.
func progressWriter(stderr io.Writer, quiet bool) io.Writer {
	if quiet || !isTerminal(stderr) {
		return nil
	}
	return stderr
}
