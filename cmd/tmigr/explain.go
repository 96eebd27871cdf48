package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/viz"
)

func init() {
	register("explain", "say why each timer of a recording ran on the CPU it ran on", runExplain)
}

const explainUsage = `usage: tmigr explain [flags] FILE...

Reads kernel recordings of the timer and timer_migration trace events
(the kernel's tracefs text, whole or per CPU; trace-cmd's trace.dat,
versions 6 and 7, and its report text; any of them gzip'd; "-" reads
standard input) and explains every timer that
expired on a CPU other than the one it was queued on, and every timer
that expired on an isolated or nohz_full CPU: whose timer it was and how
it was armed, the owner's idle period and the event it published, the
handler's remote round, the migrator role that made it walk each group
and how it got the role, and what the kernel version's isolation rules
say (before 6.19 an isolated CPU stays in the hierarchy and pulls; from
6.19 it is excluded, nohz_full CPUs and the timekeeper excepted).

It prints, per file, a summary per CPU (foreign timers by owner and
function, their count and the time spent in them, timer_expire_entry to
timer_expire_exit), the links the trace cannot determine by reason (state
from before the recording, lost events, a CPU whose transitions are not
traced), then the events. The machine comes from the file's "# machine:"
line; the flags supply or override it. Long explanations are wrapped to
the terminal (--width).

Exit status: 0 when every file was explained, 2 for bad flags or a file
that cannot be read, 1 when a picture (--perfetto, --html) cannot be
written.

flags:
`

func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr explain", explainUsage, stdout, stderr)
	asJSON := fs.Bool("json", false, `print one JSON object: {"files": [{"file", "foreign": [...], "events": [...], ...}]}`)
	cpuList := fs.String("cpu", "", "explain only the expiries these CPUs ran (a cpulist)")
	events := fs.Int("events", 100, "the most events printed per file (0: all)")
	kern := fs.String("kernel", "", "the kernel release whose rules apply (default: the recording's)")
	cmdline := fs.String("cmdline", "", `the kernel command line's isolation ("isolcpus=1-7 nohz_full=1-7"), for recordings without a "# machine:" line`)
	cpus := fs.Int("cpus", 0, `number of possible CPUs, for recordings without a "# machine:" line`)
	nodes := fs.Int("nodes", 0, "number of NUMA nodes, CPUs in contiguous blocks")
	nodeCPUs := fs.String("node-cpus", "", "each node's CPUs as cpulists, node 0 first, separated by ';'")
	hz := fs.Int("hz", 0, `tick rate (CONFIG_HZ), for recordings without a "# machine:" line`)
	width := fs.Int("width", 0, "wrap the text at this many columns; 0: never (default: the terminal's width, else $COLUMNS, else 100)")
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
	for _, n := range []struct {
		name string
		v    int
	}{{"hz", *hz}, {"cpus", *cpus}, {"nodes", *nodes}} {
		if n.v < 0 || n.v == 0 && fs.isSet(n.name) {
			return fs.failf("--%s must be at least 1 (got %d)", n.name, n.v)
		}
	}
	if *width < 0 {
		return fs.failf("--width must be 0 (never wrap) or more (got %d)", *width)
	}
	if *events < 0 {
		return fs.failf("--events must be 0 (all) or more (got %d)", *events)
	}
	if *kern != "" {
		if _, err := parseKernelFlag(*kern); err != nil {
			return fs.failf("--kernel: %v", err)
		}
	}
	opts := explain.Options{Kernel: *kern, Cmdline: *cmdline, CPUs: *cpus, HZ: *hz}
	var err error
	if opts.NodeCPUs, err = nodeLists(*cpus, *nodes, *nodeCPUs); err != nil {
		return fs.fail(err)
	}
	var only cpumask.Mask
	if *cpuList != "" {
		if only, err = cpumask.Parse(*cpuList); err != nil {
			return fs.failf("--cpu: %v", err)
		}
	}
	stdin := 0
	for _, f := range fs.Args() {
		if f == "-" {
			if stdin++; stdin > 1 {
				return fs.failf("standard input (-) given twice")
			}
		}
	}
	if !*asJSON {
		// The text prints the first events only: the report need not
		// hold the rest.
		opts.Events, opts.EventCPUs = *events, only
	}
	var reps []*explain.Report
	for _, f := range fs.Args() {
		if !pics.Any() {
			// One pass over the recording: what it holds does not grow
			// with the recording's length. Pictures need it whole.
			r, err := explain.ExplainFile(f, opts)
			if err != nil {
				return fs.fail(err)
			}
			reps = append(reps, r)
			continue
		}
		evs, hdr, err := explain.ReadFile(f)
		if err != nil {
			return fs.fail(err)
		}
		r, err := explain.Build(evs, hdr, opts)
		if err != nil {
			return fs.fail(fmt.Errorf("%s: %w", f, err))
		}
		r.File = f
		// As in replay: a trace the pictures cannot be drawn from is bad
		// input (2), a picture not written the run's failure (1).
		tl, err := viz.FromEvents(hdr, evs)
		if err != nil {
			return fs.fail(fmt.Errorf("%s: %w", f, err))
		}
		if err := pics.Write(tl, viz.Extras{Title: f}); err != nil {
			fmt.Fprintf(stderr, "tmigr explain: %v\n", err)
			return 1
		}
		reps = append(reps, r)
	}
	if *asJSON {
		out := explainOutput{SchemaVersion: schemaVersion, Files: []explain.JSON{}}
		for _, r := range reps {
			j := r.JSON()
			if !only.Empty() {
				j = onlyCPUs(j, only)
			}
			out.Files = append(out.Files, j)
		}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return fs.fail(err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	var text bytes.Buffer
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(&text)
		}
		if err := r.WriteText(&text, explain.TextOptions{MaxEvents: *events, CPUs: only}); err != nil {
			return fs.fail(err)
		}
	}
	w := *width
	if !fs.isSet("width") {
		w = textWidth(stdout)
	}
	if _, err := stdout.Write(wrapText(text.Bytes(), w)); err != nil {
		fmt.Fprintf(stderr, "tmigr explain: %v\n", err)
		return 1
	}
	return 0
}

// nodeLists turns --nodes or --node-cpus into the nodes' CPU lists (nil:
// from the recording).
func nodeLists(cpus, nodes int, lists string) ([]cpumask.Mask, error) {
	switch {
	case lists != "" && nodes != 0:
		return nil, fmt.Errorf("give either --nodes or --node-cpus, not both")
	case lists != "":
		var out []cpumask.Mask
		for i, l := range strings.Split(lists, ";") {
			m, err := cpumask.Parse(strings.TrimSpace(l))
			if err != nil {
				return nil, fmt.Errorf("--node-cpus: node %d: %v", i, err)
			}
			out = append(out, m)
		}
		return out, nil
	case nodes > 0:
		if cpus == 0 {
			return nil, fmt.Errorf("--nodes needs --cpus, to split the CPUs into blocks")
		}
		if nodes > cpus {
			return nil, fmt.Errorf("--nodes %d for %d CPUs", nodes, cpus)
		}
		out := make([]cpumask.Mask, nodes)
		for c := 0; c < cpus; c++ {
			out[c*nodes/cpus].Set(c)
		}
		return out, nil
	}
	return nil, nil
}

// onlyCPUs keeps the foreign timers and events of some handler CPUs.
func onlyCPUs(j explain.JSON, only cpumask.Mask) explain.JSON {
	f, e := []explain.PullJSON{}, []explain.EventJSON{}
	for _, p := range j.Foreign {
		if only.Test(p.Handler) {
			f = append(f, p)
		}
	}
	for _, x := range j.Events {
		if only.Test(x.Handler) {
			e = append(e, x)
		}
	}
	j.Foreign, j.Events = f, e
	return j
}
