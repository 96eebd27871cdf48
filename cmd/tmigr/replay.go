package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/viz"
)

func init() {
	register("replay", "run recorded kernel traces through the model and print the agreement", runReplay)
}

const replayUsage = `usage: tmigr replay [flags] FILE...

Replays recordings of the timer and timer_migration events through the
model and prints, per file, how many kernel decisions it reproduces. A FILE
is the kernel's trace text (/sys/kernel/tracing/trace), trace-cmd report's
text, or a trace-cmd trace.dat, gzip-compressed or not; "-" reads standard
input. The checks:

  wheel    the bucket and bucket expiry of every timer_start;
  tmigr    the wakeup of every tmigr_cpu_idle and tmigr_cpu_new_timer_idle,
           the group states after every tmigr_group_set_cpu_active/inactive,
           the groups visited and CPUs expired by every remote round, the
           stored wakeups the per-CPU events print, and the kernel's boot
           line "Timer migration: ..." against ours;
  hrtimer  for traces with hrtimer events: the mode every sleeper
           (hrtimer_wakeup) starts with and the context, hard or soft, it
           expires in, against our sleeper rule for the task's policy (on
           PREEMPT_RT, SCHED_FIFO sleepers hard, others soft);
  placement the CPU every wheel timer (timer_start cpu=) and hrtimer (where
           it expires) was queued on, against the kernel's rule for the
           arming CPU: since 6.9 wheel timers stay where armed, up to 6.8
           get_nohz_timer_target() may push them, and hrtimers follow
           kernel.timer_migration (the machine line's at=) on every kernel;
  membership which CPUs are in the hierarchy (from 6.19 the isolated ones
           are out) and whether each availability event is one the model
           expects, part of tmigr.

A decision that depends on what the recording does not hold (state from
before it started, a jiffy the trace cannot pin) is counted undetermined,
with its reason, apart from matched and mismatched. The machine comes
from the file's "# machine:" line (tmigr record and tmigr lab write one);
the flags supply or override it, except --cmdline, which supplies the
isolation of a recording without one (trace-cmd's, a copy of tracefs)
and must agree with a machine line's.
Exit status 1 when a mismatch was found.

flags:
`

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr replay", replayUsage, stdout, stderr)
	wheel := fs.Bool("wheel", false, "check the timer wheel (default: every check)")
	tmigr := fs.Bool("tmigr", false, "check the migration hierarchy (default: every check)")
	hrt := fs.Bool("hrtimer", false, "check the sleepers' hard/soft modes (default: every check)")
	place := fs.Bool("placement", false, "check on which CPU every timer is queued when armed (default: every check)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	check := fs.Bool("check", false, "run the hierarchy's invariant checker after every replayed operation")
	hz := fs.Int("hz", 0, "tick rate (CONFIG_HZ), for traces without a \"# machine:\" line")
	cpus := fs.Int("cpus", 0, "number of possible CPUs, for traces without a \"# machine:\" line")
	nodes := fs.Int("nodes", 0, "number of NUMA nodes, CPUs in contiguous blocks")
	nodeCPUs := fs.String("node-cpus", "", "each node's CPUs as cpulists, node 0 first, separated by ';'")
	cmdline := fs.String("cmdline", "", `the kernel command line's isolation ("isolcpus=1-7 nohz_full=1-7"), for traces without a "# machine:" line (trace-cmd's, a copy of tracefs); one that isolates other CPUs than the machine line says is an error`)
	kernel := fs.String("kernel", "", "replay under the model of this kernel release instead of the trace's (e.g. 6.18.0: isolated CPUs kept in the hierarchy; 6.19 and later exclude them)")
	maxShow := fs.Int("show", 5, "mismatches to print per file and check")
	var pics viz.Pictures
	fs.StringVar(&pics.Perfetto, "perfetto", "", "write the recording as Perfetto / Chrome trace-event JSON to FILE (one trace file only)")
	fs.StringVar(&pics.HTML, "html", "", "write a self-contained HTML page of the recording to FILE (one trace file only)")
	fs.files("perfetto", "html")
	fs.operands("FILE", 1, -1, completion{kind: completeFile})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	if pics.Any() && fs.NArg() != 1 {
		return fs.failf("--perfetto and --html picture one trace file, not %d", fs.NArg())
	}
	if err := pics.Check(); err != nil {
		return fs.fail(err)
	}
	if *kernel != "" {
		if _, err := parseKernelFlag(*kernel); err != nil {
			return fs.failf("--kernel: %v", err)
		}
	}
	all := !*wheel && !*tmigr && !*hrt && !*place
	opts := replay.Options{Wheel: *wheel || all, Tmigr: *tmigr || all, Hrtimer: *hrt || all, Placement: *place || all,
		HZ: *hz, CPUs: *cpus, Nodes: *nodes, Kernel: *kernel, Cmdline: *cmdline, Check: *check}
	// 0 means "from the trace": given on the command line it is a
	// mistake, not a request for the trace's value.
	for _, n := range []struct {
		name string
		v    int
	}{{"hz", *hz}, {"cpus", *cpus}, {"nodes", *nodes}} {
		if n.v < 0 || n.v == 0 && fs.isSet(n.name) {
			return fs.failf("--%s must be at least 1 (got %d)", n.name, n.v)
		}
	}
	if *nodeCPUs != "" {
		if *nodes != 0 {
			return fs.failf("give either --nodes or --node-cpus, not both")
		}
		for i, l := range strings.Split(*nodeCPUs, ";") {
			m, err := cpumask.Parse(strings.TrimSpace(l))
			if err != nil {
				return fs.failf("--node-cpus: node %d: %v", i, err)
			}
			opts.NodeCPUs = append(opts.NodeCPUs, m)
		}
	}
	var results []*replay.Result
	status := 0
	for _, f := range fs.Args() {
		var r *replay.Result
		if !pics.Any() {
			// Read as a stream: a long recording is checked a segment at
			// a time, in memory bounded by the segment.
			var err error
			if r, err = replay.RunFile(f, opts); err != nil {
				fmt.Fprintf(stderr, "tmigr replay: %v\n", err)
				return 2
			}
		} else {
			tr, err := replay.ReadFile(f)
			if err != nil {
				fmt.Fprintf(stderr, "tmigr replay: %v\n", err)
				return 2
			}
			// A trace the pictures cannot be drawn from is bad input (2);
			// a picture that cannot be written after the work is the
			// run's failure (1), as in sim and explain.
			tl, err := viz.FromEvents(tr.Header, tr.Events)
			if err != nil {
				fmt.Fprintf(stderr, "tmigr replay: %s: %v\n", f, err)
				return 2
			}
			if err := pics.Write(tl, viz.Extras{Title: f}); err != nil {
				fmt.Fprintf(stderr, "tmigr replay: %s: %v\n", f, err)
				return 1
			}
			if r, err = replay.Run(tr, opts); err != nil {
				fmt.Fprintf(stderr, "tmigr replay: %s: %v\n", f, err)
				return 2
			}
		}
		if r.Mismatched() {
			status = 1
		}
		results = append(results, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if err := enc.Encode(replayOutput{schemaVersion, results}); err != nil {
			fmt.Fprintf(stderr, "tmigr replay: %v\n", err)
			return 2
		}
		return status
	}
	for _, r := range results {
		printResult(stdout, r, *maxShow)
	}
	return status
}

// printResult prints one file's outcome:
//
//	FILE: wheel 73/73, tmigr 1721/1791, hrtimer 826/830 matched
//	  tmigr: 70 undetermined: 55 event from before the recording, ...
//	  tmigr line 2445: tmigr_cpu_idle: kernel 15336000000, model max
func printResult(w io.Writer, r *replay.Result, maxShow int) {
	fmt.Fprintf(w, "%s:", r.File)
	for i, c := range r.Checks {
		sep := " "
		if i > 0 {
			sep = ", "
		}
		fmt.Fprintf(w, "%s%s %d/%d", sep, c.Name, c.Matched, c.Checked)
	}
	fmt.Fprintln(w, " matched")
	if s := r.Segmented; s != nil {
		fmt.Fprintf(w, "  checked in %d segments of %d events, each replayed with the %d events before and after it\n",
			s.Segments, s.Events, s.Margin)
	}
	for _, c := range r.Checks {
		if c.Undetermined > 0 {
			fmt.Fprintf(w, "  %s: %d undetermined: %s\n", c.Name, c.Undetermined, c.Reasons())
		}
		for _, x := range c.Inferred {
			fmt.Fprintf(w, "  %s line %d: inferred: CPU %d %s, which the machine line does not declare: %s\n", c.Name, x.Line, x.CPU, x.Event, strings.Join(x.Causes, " or "))
		}
		for i, m := range c.Mismatches {
			if i == maxShow {
				fmt.Fprintf(w, "  ... %d more %s mismatches\n", len(c.Mismatches)-i, c.Name)
				break
			}
			fmt.Fprintf(w, "  %s line %d: %s: kernel %s, model %s\n", c.Name, m.Line, m.Event, m.Kernel, m.Model)
		}
	}
}
