package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/watch"
)

func init() {
	register("top", "watch live which CPU runs whose timers, and why", runTop)
}

const topUsage = `usage: tmigr top [-c CPULIST] [-d DURATION] [-p PERIOD] [-q] [--json]
                [--on-foreign isolated [--save FILE]] [--hrtimers] [--input FILE]

Watches this machine's timers live, through a tracefs instance of its own
(as tmigr record does; root needed), and prints a table per period, one
row per CPU: its class (housekeeping, isolated, nohz_full), whether it is
in the timer-migration hierarchy, the groups it is migrator of, its own
wheel timers and hrtimers that expired, the other CPUs' timers it ran
(count, rate, time spent in them, the top owners as CPU:count and the top
functions), and for an isolated or nohz_full CPU that ran another CPU's
timer, why, in one line (tmigr explain's chain, shortened).

--input reads a recording (tmigr record's, or any with a "# machine:"
line) instead, its periods cut by the trace's clock.

--on-foreign isolated stops at the first foreign timer on an isolated or
nohz_full CPU: it saves the last seconds of the trace around it to --save
and prints its explanation, then exits 2 (rtla's "threshold hit").

Exit status: 0 at the end of DURATION, Ctrl-C or the input; 2 when
--on-foreign hit, or for bad flags or input; 1 when the trace could not
be read or saved.

flags:
`

// topOnForeignExit is the exit status when --on-foreign hit.
const topOnForeignExit = 2

func runTop(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr top", topUsage, stdout, stderr)
	cpuList := fs.String("c", "", "report only these CPUs (a cpulist)")
	durFlag := fs.String("d", "", "stop after this long (a Go duration or seconds; default: until Ctrl-C or the input's end)")
	periodFlag := fs.String("p", "1s", "the period of a table (a Go duration or seconds)")
	quiet := fs.Bool("q", false, "print no table per period, only one for the whole run at the end")
	asJSON := fs.Bool("json", false, "print one JSON object per period, one per line")
	onForeign := fs.String("on-foreign", "", `"isolated": stop at the first foreign timer on an isolated or nohz_full CPU`)
	save := fs.String("save", "tmigr-top-foreign.txt", "with --on-foreign: where the trace around it is saved")
	lo := liveOptions{Recorder: "tmigr top"}
	lo.flags(fs)
	input := fs.String("input", "", "read a recording instead of this machine")
	fs.files("save", "input")
	fs.words("on-foreign", "isolated")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	var cpus cpumask.Mask
	var err error
	if *cpuList != "" {
		if cpus, err = cpumask.Parse(*cpuList); err != nil {
			return fs.failf("-c: %v", err)
		}
	}
	var dur time.Duration
	if *durFlag != "" {
		if dur, err = parseSeconds("-d", *durFlag); err != nil || dur <= 0 {
			return fs.failf("-d: want a positive duration, got %q", *durFlag)
		}
	}
	period, err := parseSeconds("-p", *periodFlag)
	if err != nil || period <= 0 {
		return fs.failf("-p: want a positive duration, got %q", *periodFlag)
	}
	if *onForeign != "" && *onForeign != "isolated" {
		return fs.failf(`--on-foreign: want "isolated", got %q`, *onForeign)
	}
	if *onForeign != "" {
		// Refuse an unwritable path before watching, not after the hit.
		if err := checkWritable(*save); err != nil {
			return fs.failf("--save: %v", err)
		}
	}
	if *quiet {
		period = 0
	}
	ctx, stop := signalContext()
	defer stop()
	st, err := openStream(*input, lo)
	if err != nil {
		return fs.fail(err)
	}
	defer st.Close()
	if dur > 0 && st.live {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}

	title := "tmigr top"
	var printErr error
	emit := func(p watch.Period) bool {
		if *asJSON {
			b, err := json.Marshal(topOutput{schemaVersion, p})
			if err == nil {
				_, err = fmt.Fprintf(stdout, "%s\n", b)
			}
			printErr = err
		} else {
			printErr = p.WriteText(stdout, title)
			if printErr == nil && period > 0 {
				_, printErr = fmt.Fprintln(stdout)
			}
		}
		return printErr == nil
	}
	var (
		hit      *ftrace.Event // the first foreign timer on an isolated CPU
		hitWhy   string
		hitSaved []ftrace.Event
		start    int64 = -1
	)
	f := &watch.Follow{Watcher: st.watcher, Reader: st.reader, Period: period, Live: st.live, CPUs: cpus,
		Lost: st.lost, OnPeriod: emit}
	f.OnEvent = func(ev *ftrace.Event) bool {
		if start < 0 {
			start = ev.TS
		}
		if dur > 0 && !st.live && ev.TS-start >= dur.Nanoseconds() {
			return false
		}
		if *onForeign == "" {
			return true
		}
		w := f.Watcher
		if hit == nil && w.ForeignOnIsolated() > 0 {
			e := *ev
			hit = &e
		}
		// Read on past the hit for the round's end (its walk, the
		// callback's exit), then stop.
		if hit != nil && ev.TS-hit.TS >= onForeignAfter {
			if x := w.Why(); x != nil {
				hitWhy = x.Why
			}
			hitSaved = w.Window()
			return false
		}
		return true
	}
	runErr := f.Run(ctx)
	if hit != nil && hitSaved == nil && f.Watcher != nil {
		// The input ended within onForeignAfter of the hit.
		if x := f.Watcher.Why(); x != nil {
			hitWhy = x.Why
		}
		hitSaved = f.Watcher.Window()
	}
	if printErr != nil {
		fmt.Fprintf(stderr, "tmigr top: %v\n", printErr)
		return 1
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "tmigr top: %v\n", runErr)
		return 1
	}
	if hit == nil {
		return 0
	}
	hdr := ftrace.Header{Machine: f.Watcher.Machine().Machine}
	if err := saveTrace(*save, hdr, hitSaved); err != nil {
		fmt.Fprintf(stderr, "tmigr top: --save: %v\n", err)
		return 1
	}
	if hitWhy == "" {
		hitWhy = fmt.Sprintf("CPU %d ran another CPU's timer at %s s (the trace saved does not hold enough to explain it)", hit.CPU, ftrace.FormatTS(hit.TS))
	}
	fmt.Fprintf(stdout, "tmigr top: foreign timer on an isolated CPU: %s\n", hitWhy)
	fmt.Fprintf(stdout, "tmigr top: the trace around it: %s (tmigr explain %s)\n", *save, *save)
	return topOnForeignExit
}

// onForeignAfter is how far past a hit --on-foreign reads, ns of trace
// time: past the end of the round that ran it (a round's callbacks take
// microseconds; its walk follows at once).
const onForeignAfter = 10e6

// saveTrace writes events as a trace file with the machine line,
// atomically.
func saveTrace(path string, hdr ftrace.Header, events []ftrace.Event) error {
	out, err := createOutput(path)
	if err != nil {
		return err
	}
	hdr.Entries, hdr.HasEntries = int64(len(events)), true
	hdr.Written = hdr.Entries
	if err := ftrace.WriteTrace(out, hdr, events); err != nil {
		out.abort()
		return err
	}
	return out.commit()
}
