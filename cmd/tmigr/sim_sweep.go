package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/sim/sweep"
)

// A sweep is tmigr sim with --seeds, --grid, --shard or -j: the flags
// are taken out of the command line, and each configuration is the rest
// of it with the configuration's values appended (a later flag wins;
// --set NAME=VALUE applies after the others), run by runSimContext as a
// run of its own with --json --quiet --seed S.

// sweepArgs are the sweep's own flags.
type sweepArgs struct {
	seeds, shard, jobs string
	grids              []string
	summarize, any     bool
}

// sweepValueFlags take a value; --summarize does not.
var sweepValueFlags = map[string]bool{"seeds": true, "grid": true, "shard": true, "j": true}

// splitSweepArgs takes the sweep's flags (-x v, --x v, -x=v, --x=v) out of
// args.
func splitSweepArgs(args []string) (sweepArgs, []string, error) {
	var sw sweepArgs
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" || !sweepValueFlags[name] && name != "summarize" {
			rest = append(rest, a)
			continue
		}
		sw.any = true
		if name == "summarize" {
			if hasVal {
				return sw, nil, fmt.Errorf("--summarize takes no value (the files follow it)")
			}
			sw.summarize = true
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return sw, nil, fmt.Errorf("flag needs an argument: -%s", name)
			}
			i++
			val = args[i]
		}
		switch name {
		case "seeds":
			sw.seeds = val
		case "grid":
			sw.grids = append(sw.grids, val)
		case "shard":
			sw.shard = val
		case "j":
			sw.jobs = val
		}
	}
	return sw, rest, nil
}

func isSweep(args []string) bool {
	sw, _, err := splitSweepArgs(args)
	return sw.any || err != nil
}

// flagValue returns the last value given to flag name in args.
func flagValue(args []string, name string) (string, bool) {
	val, found := "", false
	for i, a := range args {
		n, v, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		switch {
		case hasVal:
			val, found = v, true
		case i+1 < len(args):
			val, found = args[i+1], true
		}
	}
	return val, found
}

// boolFlag reports whether the boolean flag name is set in args (-name,
// --name, --name=true).
func boolFlag(args []string, name string) bool {
	on := false
	for _, a := range args {
		n, v, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			on = !hasVal || v != "false" && v != "0" && v != "f" && v != "F" && v != "FALSE" && v != "False"
		}
	}
	return on
}

// hasFlag says whether args set the flag name.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}

// noGrid are the flags a grid may not sweep: they choose the output, not
// the configuration.
var noGrid = map[string]string{
	"seed": "use --seeds", "json": "a sweep writes JSON", "quiet": "", "trace": "", "explain": "", "dry-run": "", "check": "",
	"threads": "the output does not depend on it",
}

func runSweep(args []string, stdout, stderr io.Writer) int {
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tmigr sim: "+format+"\n", a...)
		return 2
	}
	sw, base, err := splitSweepArgs(args)
	if err != nil {
		return bad("%v", err)
	}
	if sw.summarize {
		if sw.seeds != "" || sw.grids != nil || sw.shard != "" || sw.jobs != "" {
			return bad("--summarize reads a sweep's lines: it takes files (or stdin), not --seeds, --grid, --shard or -j")
		}
		return runSummarize(base, stdout, stderr)
	}
	if _, ok := flagValue(base, "trace"); ok {
		return bad("--trace cannot be used in a sweep: every run would write the one file")
	}
	if boolFlag(base, "explain") {
		return bad("--explain cannot be used in a sweep")
	}
	dry := boolFlag(base, "dry-run")
	var plan sweep.Plan
	if sw.seeds != "" {
		if _, ok := flagValue(base, "seed"); ok {
			return bad("give --seed or --seeds, not both")
		}
		if plan.Seeds, err = sweep.ParseSeeds(sw.seeds); err != nil {
			return bad("%v", err)
		}
	} else {
		s := uint64(1)
		if v, ok := flagValue(base, "seed"); ok {
			if s, err = strconv.ParseUint(v, 10, 64); err != nil {
				return bad("--seed %q is not a seed", v)
			}
		}
		plan.Seeds = []uint64{s}
	}
	seen := map[string]bool{}
	for _, g := range sw.grids {
		axes, err := sweep.ParseGrid(g)
		if err != nil {
			return bad("%v", err)
		}
		for _, a := range axes {
			if why, ok := noGrid[a.Name]; ok {
				if why == "" {
					why = "it chooses the output, not the configuration"
				}
				return bad("--grid cannot sweep %s: %s", a.Name, why)
			}
			if seen[a.Name] {
				return bad("--grid: %s is swept twice", a.Name)
			}
			seen[a.Name] = true
			plan.Axes = append(plan.Axes, a)
		}
	}
	n, err := plan.Len()
	if err != nil {
		return bad("%v", err)
	}
	opts := sweep.Options{Workers: runtime.GOMAXPROCS(0)}
	if sw.jobs != "" {
		if opts.Workers, err = strconv.Atoi(sw.jobs); err != nil || opts.Workers < 1 {
			return bad("-j %q: want a number of workers, at least 1", sw.jobs)
		}
	}
	if sw.shard != "" {
		if opts.Shard, err = sweep.ParseShard(sw.shard); err != nil {
			return bad("%v", err)
		}
	}
	quiet := boolFlag(base, "quiet")
	pointArgs := func(p sweep.Point, extra ...string) []string {
		a := append(append([]string(nil), base...), "--json", "--quiet", "--seed="+strconv.FormatUint(p.Seed, 10))
		if opts.Workers > 1 && !hasFlag(base, "threads") {
			// The workers already share the CPUs: one goroutine a run.
			a = append(a, "--threads=1")
		}
		for _, s := range p.Params {
			if strings.Contains(s.Name, ".") {
				a = append(a, "--set", s.Name+"="+s.Value)
			} else {
				a = append(a, "--"+s.Name+"="+s.Value)
			}
		}
		return append(a, extra...)
	}

	// Check every configuration before running any, and estimate the
	// sweep's length. The seed changes neither.
	lo, hi := opts.Shard.Range(n)
	var total time.Duration
	for c, ns := lo/len(plan.Seeds), len(plan.Seeds); c*ns < hi; c++ {
		i, last := max(lo, c*ns), min(hi, (c+1)*ns)
		p := plan.Point(i)
		var out, errb bytes.Buffer
		if code := runSimContext(context.Background(), pointArgs(p, "--dry-run"), &out, &errb); code != 0 {
			msg, _, _ := strings.Cut(strings.TrimSpace(errb.String()), "\n")
			return bad("configuration %d (%s): %s", i, describePoint(p), strings.TrimPrefix(msg, "tmigr sim: "))
		}
		var d dryRun
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			return bad("configuration %d: %v", i, err)
		}
		total += time.Duration(d.EstimateS*float64(time.Second)) * time.Duration(last-i)
	}
	wall := total / time.Duration(max(min(opts.Workers, hi-lo), 1))
	if dry {
		fmt.Fprintf(stdout, "tmigr sim: %d configurations are valid; this sweep may take about %v on %d workers\n",
			hi-lo, wall.Round(100*time.Millisecond), opts.Workers)
		return 0
	}
	if !quiet && wall > time.Minute {
		fmt.Fprintf(stderr, "tmigr sim: this sweep of %d runs may take about %v on %d workers; Ctrl-C stops it and writes what was done, marked partial\n",
			hi-lo, wall.Round(time.Second), opts.Workers)
	}

	ctx, stop := signalContext()
	defer stop()
	tty := !quiet && isTerminal(stderr)
	drawn := false
	if tty {
		opts.Progress = func(s sweep.Status) {
			eta := "-"
			if e := s.ETA(); e > 0 {
				eta = e.Round(time.Second).String()
			}
			fmt.Fprintf(stderr, "\rtmigr sim: %d/%d runs done, %d running, %.0f%%, ETA %s\033[K", s.Done, s.Total, s.Running, 100*s.Share, eta)
			drawn = true
		}
	}
	run := func(ctx context.Context, p sweep.Point, progress func(float64)) (json.RawMessage, error) {
		var out, errb bytes.Buffer
		code := runSimContext(context.WithValue(ctx, sweepProgressKey{}, progress), pointArgs(p), &out, &errb)
		if code != 0 && code != exitInterrupted {
			msg := strings.TrimPrefix(strings.TrimSpace(errb.String()), "tmigr sim: ")
			return nil, errors.New(msg)
		}
		// The wall time is the one field that is not a function of the
		// configuration.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(out.Bytes(), &fields); err != nil {
			return nil, fmt.Errorf("the run's JSON: %v", err)
		}
		delete(fields, "wall_s")
		return json.Marshal(fields)
	}
	err = sweep.Run(ctx, plan, opts, run, stdout)
	if drawn {
		fmt.Fprint(stderr, "\r\033[K")
	}
	switch {
	case errors.Is(err, sweep.ErrPartial):
		fmt.Fprintf(stderr, "tmigr sim: interrupted: the lines written are the runs started until then, the last ones partial, and a summary marked partial\n")
		return exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
		return 1
	}
	return 0
}

func describePoint(p sweep.Point) string {
	var parts []string
	for _, s := range p.Params {
		parts = append(parts, s.Name+"="+s.Value)
	}
	return strings.Join(append(parts, "seed "+strconv.FormatUint(p.Seed, 10)), " ")
}

// runSummarize is --summarize: the files (or stdin) are a sweep's lines,
// in any order.
func runSummarize(files []string, stdout, stderr io.Writer) int {
	var readers []io.Reader
	for _, name := range files {
		if strings.HasPrefix(name, "-") && name != "-" {
			fmt.Fprintf(stderr, "tmigr sim: --summarize takes only files (got %q)\n", name)
			return 2
		}
		if name == "-" {
			readers = append(readers, os.Stdin)
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr sim: %v\n", err)
			return 2
		}
		defer f.Close()
		// A file that does not end in a newline must not run into the next.
		readers = append(readers, f, strings.NewReader("\n"))
	}
	if len(readers) == 0 {
		readers = append(readers, os.Stdin)
	}
	if err := sweep.Summarize(io.MultiReader(readers...), stdout); err != nil {
		fmt.Fprintf(stderr, "tmigr sim: --summarize: %v\n", err)
		return 1
	}
	return 0
}
