package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
)

func init() {
	register("topo", "draw the timer-migration hierarchy of a machine", runTopo)
}

const topoUsage = `usage: tmigr topo --cpus N [--nodes K | --node-cpus LIST;LIST;...] [--json]

Builds the timer-migration hierarchy Linux builds for a machine of N
possible CPUs: sized as tmigr_init sizes it, with every CPU brought up in
ascending order, and prints the boot log line and a drawing of the groups
(one line per level, the CPUs and NUMA node under each level-0 group), or
with --json the groups with their level, node (-1 above the crossnode
level), parent and children.

The CPUs are spread over --nodes K nodes (default 1) in contiguous blocks
whose sizes differ by at most one: CPU c is on node c*K/N (rounded
down), so 9 CPUs on 2 nodes are 0-4 and 5-8, as tmigr sim and tmigr lab
record place them. --node-cpus gives each node's CPUs instead, node 0
first, as cpulists separated by ';' (quote it for the shell); together
the lists must hold each CPU 0..N-1 exactly once.

flags:
`

// runTopo is the topo command.
func runTopo(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr topo", topoUsage, stdout, stderr)
	cpus := fs.Int("cpus", 0, "number of possible CPUs (1-8192)")
	nodes := fs.Int("nodes", 0, "number of NUMA nodes, CPUs in contiguous blocks (default 1)")
	nodeCPUs := fs.String("node-cpus", "", "each node's CPUs as cpulists, node 0 first, separated by ';'")
	asJSON := fs.Bool("json", false, "print the hierarchy as JSON")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	if *nodes == 0 && fs.isSet("nodes") {
		return fs.failf("--nodes must be at least 1 (got 0)")
	}
	nodeOf, err := topoNodes(*cpus, *nodes, *nodeCPUs)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr topo: %v\n", err)
		return 2
	}
	h, err := hier.New(hier.Options{NodeOf: nodeOf, Nodes: max(*nodes, 0)})
	if err != nil {
		fmt.Fprintf(stderr, "tmigr topo: %v\n", err)
		return 2
	}
	for c := 0; c < *cpus; c++ {
		if err := h.Prepare(c); err != nil {
			// The kernel would WARN and fail to bring the CPU up.
			fmt.Fprintf(stderr, "tmigr topo: %v\n", err)
			return 1
		}
	}
	if err := h.Check(); err != nil {
		fmt.Fprintf(stderr, "tmigr topo: %v\n", err)
		return 1
	}
	if *asJSON {
		b, err := json.MarshalIndent(topoOutput{schemaVersion, h.Topology()}, "", "  ")
		if err != nil {
			fmt.Fprintf(stderr, "tmigr topo: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if line := h.BootLine(); line != "" {
		fmt.Fprintln(stdout, line)
		fmt.Fprint(stdout, h.Picture())
	} else {
		fmt.Fprintln(stdout, "No timer migration hierarchy: the kernel builds none on a uniprocessor.")
	}
	return 0
}

// topoNodes returns the node of every CPU from the flags.
func topoNodes(cpus, nodes int, nodeCPUs string) ([]int, error) {
	switch {
	case cpus <= 0:
		return nil, fmt.Errorf("--cpus must be at least 1 (got %d)", cpus)
	case cpus > cpumask.MaxCPUs:
		return nil, fmt.Errorf("--cpus %d: at most %d CPUs are supported", cpus, cpumask.MaxCPUs)
	case nodes != 0 && nodeCPUs != "":
		return nil, errors.New("give either --nodes or --node-cpus, not both")
	case nodes < 0:
		return nil, fmt.Errorf("--nodes must be at least 1 (got %d)", nodes)
	case nodes > cpus:
		return nil, fmt.Errorf("--nodes %d: more nodes than the %d CPUs", nodes, cpus)
	case nodes > hier.MaxNodes:
		return nil, fmt.Errorf("--nodes %d: at most %d nodes are supported", nodes, hier.MaxNodes)
	}
	nodeOf := make([]int, cpus)
	if nodeCPUs == "" {
		if nodes == 0 {
			nodes = 1
		}
		for c := range nodeOf {
			nodeOf[c] = c * nodes / cpus
		}
		return nodeOf, nil
	}
	lists := strings.Split(nodeCPUs, ";")
	if len(lists) > hier.MaxNodes {
		return nil, fmt.Errorf("--node-cpus: %d nodes, at most %d are supported", len(lists), hier.MaxNodes)
	}
	var seen cpumask.Mask
	for node, l := range lists {
		m, err := cpumask.ParseFor(strings.TrimSpace(l), cpus)
		if err != nil {
			return nil, fmt.Errorf("--node-cpus: node %d: %v", node, err)
		}
		if m.Empty() {
			return nil, fmt.Errorf("--node-cpus: node %d has no CPUs", node)
		}
		if dup := m.And(seen); !dup.Empty() {
			return nil, fmt.Errorf("--node-cpus: CPUs %s are listed on more than one node (again on node %d)", dup, node)
		}
		seen = seen.Or(m)
		for c := m.First(); c >= 0; c = m.Next(c) {
			nodeOf[c] = node
		}
	}
	if missing := cpumask.Range(0, cpus-1).AndNot(seen); !missing.Empty() {
		return nil, fmt.Errorf("--node-cpus: CPUs %s are on no node (the lists must partition 0-%d)", missing, cpus-1)
	}
	return nodeOf, nil
}
