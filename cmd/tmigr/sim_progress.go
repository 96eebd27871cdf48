package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tmigr/tmigr/sim"
)

// exitInterrupted is the exit status of a command stopped by Ctrl-C
// (128 + SIGINT, as a shell reports it) after printing its partial
// report.
const exitInterrupted = 130

// isTerminal reports whether w is a terminal (a character device: a tty,
// or /dev/null, where drawing costs nothing).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runProgress is a run's progress on stderr: a warning before a long run,
// then, on a terminal, a line redrawn with the simulated time, the rate
// and the ETA. Inside a sweep it also reports the share done to the
// sweep (sweepProgress in the context).
type runProgress struct {
	w     io.Writer
	tty   bool
	sweep func(float64)
	drawn bool
}

func newRunProgress(ctx context.Context, stderr io.Writer, cfg *sim.Config, quiet bool) *runProgress {
	p := &runProgress{w: stderr, tty: !quiet && isTerminal(stderr)}
	p.sweep, _ = ctx.Value(sweepProgressKey{}).(func(float64))
	if e := sim.Estimate(*cfg); !quiet && e > time.Minute {
		fmt.Fprintf(stderr, "tmigr sim: this run may take about %v (%s); Ctrl-C stops it and prints what was simulated so far\n",
			e.Round(time.Second), estimateBasis(cfg))
	}
	return p
}

func estimateBasis(cfg *sim.Config) string {
	return fmt.Sprintf("%d CPUs x %.0f s simulated, at about %d µs a CPU-second on a 2-core machine",
		cfg.CPUs, (cfg.Warmup + cfg.Duration).Seconds(), sim.CPUSecondNs/1000)
}

func (p *runProgress) update(pr sim.Progress) {
	if p.sweep != nil {
		p.sweep(pr.Done())
	}
	if !p.tty {
		return
	}
	eta := "-"
	if e := pr.ETA(); e > 0 {
		eta = e.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\rtmigr sim: %.1f/%.1f s simulated (%.0f%%), %.2f s/s, %.1f M events/s, ETA %s\033[K",
		float64(pr.Now)/1e9, float64(pr.End)/1e9, 100*pr.Done(), pr.Rate(), float64(pr.Events)/pr.Wall.Seconds()/1e6, eta)
	p.drawn = true
}

// done clears the progress line and, for a run that took a while, leaves
// its figures.
func (p *runProgress) done(res *sim.Result) {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
	if p.tty && res != nil && res.Wall > time.Second {
		fmt.Fprintf(p.w, "tmigr sim: %.1f s simulated in %.1f s of wall time, %.2f M events/s\n",
			float64(res.Config.Warmup+res.Config.Duration)/1e9, res.Wall.Seconds(), float64(res.Events)/res.Wall.Seconds()/1e6)
	}
}

// partialStatus says on stderr that a stopped run's report is partial,
// and returns the exit status.
func partialStatus(stderr io.Writer, res *sim.Result) int {
	if !res.Partial {
		return 0
	}
	fmt.Fprintf(stderr, "tmigr sim: interrupted: the report covers %.3f s of the %v measurement asked for (marked partial)\n",
		float64(res.Duration)/1e9, res.Config.Duration)
	return exitInterrupted
}

// printEstimate is --dry-run's output: the configuration passed every
// check, and how long it may take.
func printEstimate(stdout io.Writer, cfg *sim.Config, asJSON bool) int {
	e := sim.Estimate(*cfg)
	if asJSON {
		b, _ := json.Marshal(dryRun{schemaVersion, true, cfg.CPUs, (cfg.Warmup + cfg.Duration).Seconds(), e.Seconds()})
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	fmt.Fprintf(stdout, "tmigr sim: the configuration is valid; it may take about %v (%s)\n", e.Round(100*time.Millisecond), estimateBasis(cfg))
	return 0
}

// sweepProgressKey carries a sweep's progress hook to its runs.
type sweepProgressKey struct{}
