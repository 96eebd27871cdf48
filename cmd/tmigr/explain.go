package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/explain"
)

func init() {
	register("explain", "say why each timer of a recording ran on the CPU it ran on", runExplain)
}

const explainUsage = `usage: tmigr explain [flags] FILE...

Reads kernel recordings of the timer and timer_migration trace events
(tracefs text; "-" reads standard input) and explains every timer that
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
line; the flags supply or override it.

Exit status: 0 when every file was explained, 2 for bad flags or a file
that cannot be read.

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
	fs.operands("FILE", 1, -1, completion{kind: completeFile})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"hz", *hz}, {"cpus", *cpus}, {"nodes", *nodes}} {
		if n.v < 0 || n.v == 0 && fs.isSet(n.name) {
			return fs.failf("--%s must be at least 1 (got %d)", n.name, n.v)
		}
	}
	if *events < 0 {
		return fs.failf("--events must be 0 (all) or more (got %d)", *events)
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
	var reps []*explain.Report
	for _, f := range fs.Args() {
		r, err := explain.ExplainFile(f, opts)
		if err != nil {
			return fs.fail(err)
		}
		reps = append(reps, r)
	}
	if *asJSON {
		out := struct {
			Files []explain.JSON `json:"files"`
		}{}
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
	for i, r := range reps {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if err := r.WriteText(stdout, explain.TextOptions{MaxEvents: *events, CPUs: only}); err != nil {
			return fs.fail(err)
		}
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
