package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/tmigr/tmigr/replay"
)

func init() {
	register("replay", "run recorded kernel traces through the model and print the agreement", runReplay)
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wheelOnly := fs.Bool("wheel", false, "check only the timer wheel (every timer_start's bucket)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	hz := fs.Int("hz", 0, "tick rate, for traces without a \"# machine:\" line")
	maxShow := fs.Int("show", 5, "mismatches to print per file and check")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tmigr replay [flags] FILE...")
		fmt.Fprintln(stderr, "\nReplays ftrace text recordings of the timer and timer_migration events through")
		fmt.Fprintln(stderr, "the model and prints, per file, how many kernel decisions it reproduces.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	opts := replay.Options{Wheel: true, Tmigr: !*wheelOnly, HZ: *hz}
	var results []*replay.Result
	status := 0
	for _, f := range fs.Args() {
		tr, err := replay.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr replay: %v\n", err)
			return 2
		}
		r, err := replay.Run(tr, opts)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr replay: %s: %v\n", f, err)
			return 2
		}
		if r.Mismatched() {
			status = 1
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(struct {
			Files []*replay.Result `json:"files"`
		}{results}); err != nil {
			fmt.Fprintf(stderr, "tmigr replay: %v\n", err)
			return 2
		}
		return status
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "%s:", r.File)
		sep := " "
		for _, c := range []struct {
			name string
			c    *replay.Counts
		}{{"wheel", r.Wheel}, {"tmigr", r.Tmigr}} {
			if c.c == nil {
				continue
			}
			fmt.Fprintf(stdout, "%s%s %d/%d", sep, c.name, c.c.Matched, c.c.Checked)
			if c.c.Undetermined > 0 {
				fmt.Fprintf(stdout, " (%d undetermined)", c.c.Undetermined)
			}
			sep = ", "
		}
		fmt.Fprintln(stdout, " matched")
		for _, c := range []struct {
			name string
			c    *replay.Counts
		}{{"wheel", r.Wheel}, {"tmigr", r.Tmigr}} {
			if c.c == nil {
				continue
			}
			for i, m := range c.c.Mismatches {
				if i == *maxShow {
					fmt.Fprintf(stdout, "  ... %d more %s mismatches\n", len(c.c.Mismatches)-i, c.name)
					break
				}
				fmt.Fprintf(stdout, "  %s line %d: %s: kernel %s, model %s\n", c.name, m.Line, m.Event, m.Kernel, m.Model)
			}
		}
	}
	return status
}
