package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Shape describes the machine a trace was recorded on, as far as the
// replay needs it. A trace's "# machine:" line gives it; Options can supply
// or override each part (the --cpus, --nodes, --node-cpus, --hz and --kernel
// flags).
type Shape struct {
	CPUs     int            // possible CPUs, numbered 0..CPUs-1
	Nodes    int            // NUMA nodes
	NodeCPUs []cpumask.Mask // the CPUs of each node; nil: contiguous blocks
	HZ       int            // CONFIG_HZ
	Kernel   string         // release ("6.12.117"); "" if unknown
	Cmdline  string         // the isolation parameters of the command line
}

// shapeOf combines the trace's "# machine:" line with the overrides in o.
func shapeOf(t *Trace, o Options) (Shape, error) {
	var s Shape
	if m := t.Header.Machine; m != nil {
		s = Shape{CPUs: m.CPUs, Nodes: m.Nodes, NodeCPUs: m.NodeCPUs, HZ: m.HZ, Kernel: m.Kernel, Cmdline: m.Cmdline}
	}
	if o.CPUs > 0 {
		if o.CPUs != s.CPUs {
			s.NodeCPUs = nil // the trace's lists describe another machine
		}
		s.CPUs = o.CPUs
	}
	if o.Nodes > 0 {
		if o.Nodes != s.Nodes {
			s.NodeCPUs = nil
		}
		s.Nodes = o.Nodes
	}
	if o.NodeCPUs != nil {
		s.NodeCPUs = o.NodeCPUs
		s.Nodes = len(o.NodeCPUs)
	}
	if o.HZ > 0 {
		s.HZ = o.HZ
	}
	if o.Kernel != "" {
		s.Kernel = o.Kernel
	}
	if s.CPUs == 0 && t.Header.CPUs > 0 {
		s.CPUs = t.Header.CPUs // "#P:" counts online CPUs: the best we have
	}
	if s.Nodes == 0 {
		s.Nodes = 1
	}
	switch {
	case s.CPUs <= 0:
		return s, errors.New("the trace has no \"# machine:\" line naming its CPUs; give them with --cpus")
	case s.CPUs > cpumask.MaxCPUs:
		return s, fmt.Errorf("%d CPUs: at most %d are supported", s.CPUs, cpumask.MaxCPUs)
	case s.Nodes > hier.MaxNodes:
		return s, fmt.Errorf("%d nodes: at most %d are supported", s.Nodes, hier.MaxNodes)
	case s.Nodes > s.CPUs && s.NodeCPUs == nil:
		return s, fmt.Errorf("%d nodes for %d CPUs: give the nodes' CPUs with --node-cpus", s.Nodes, s.CPUs)
	}
	if s.NodeCPUs != nil {
		if len(s.NodeCPUs) != s.Nodes {
			return s, fmt.Errorf("%d node CPU lists for %d nodes", len(s.NodeCPUs), s.Nodes)
		}
		all := cpumask.Range(0, s.CPUs-1)
		var seen cpumask.Mask
		for i, n := range s.NodeCPUs {
			if !n.Subset(&all) {
				return s, fmt.Errorf("node %d holds CPUs %s beyond the %d CPUs", i, n.AndNot(all), s.CPUs)
			}
			if n.Intersects(&seen) {
				return s, fmt.Errorf("CPUs %s are on node %d and an earlier node", n.And(seen), i)
			}
			seen = seen.Or(n)
		}
		if missing := all.AndNot(seen); !missing.Empty() {
			return s, fmt.Errorf("CPUs %s are on no node", missing)
		}
	}
	return s, nil
}

// nodeOf returns the node of every CPU.
func (s *Shape) nodeOf() []int {
	nodeOf := make([]int, s.CPUs)
	if s.NodeCPUs == nil {
		for c := range nodeOf {
			nodeOf[c] = c * s.Nodes / s.CPUs
		}
		return nodeOf
	}
	for node, m := range s.NodeCPUs {
		for c := m.First(); c >= 0; c = m.Next(c) {
			nodeOf[c] = node
		}
	}
	return nodeOf
}

// excludeIsolated tells which kernel generation the trace comes from: the
// exclusion of isolated CPUs from the hierarchy (commit 7dec062cfcf2, merged
// for 6.19) is in kernels 6.19 and later. A trace whose kernel is unknown is
// replayed as 6.9 to 6.18, which is what every recording so far ran.
func (s *Shape) excludeIsolated() (bool, error) {
	if s.Kernel == "" {
		return false, nil
	}
	major, minor, err := kernelVersion(s.Kernel)
	if err != nil {
		return false, err
	}
	return major > 6 || major == 6 && minor >= 19, nil
}

// kernelVersion reads the major and minor numbers of a kernel release
// ("6.12.117", "6.19.0-rc3+", "7.0.13-200.fc44.x86_64").
func kernelVersion(rel string) (major, minor int, err error) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, fmt.Errorf("kernel release %q: no major.minor version", rel)
	}
	minorStr := parts[1]
	if i := strings.IndexFunc(minorStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorStr = minorStr[:i]
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(minorStr)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("kernel release %q: no major.minor version", rel)
	}
	return major, minor, nil
}

// hierOptions returns the options of a hierarchy that models the trace's
// kernel on this machine.
func (s *Shape) hierOptions() (hier.Options, error) {
	exclude, err := s.excludeIsolated()
	if err != nil {
		return hier.Options{}, err
	}
	o := hier.Options{NodeOf: s.nodeOf(), Nodes: s.Nodes, ExcludeIsolated: exclude}
	iso, err := ftrace.ParseIsolation(s.Cmdline, s.CPUs)
	if err != nil {
		return hier.Options{}, fmt.Errorf("command line: %v", err)
	}
	o.Isolation = hier.Isolation{Domain: iso.Domain, NohzFull: iso.NohzFull, Timekeeper: -1}
	if !iso.NohzFull.Empty() {
		// The boot CPU keeps the timekeeping duty under nohz_full.
		o.Isolation.Timekeeper = 0
		if iso.NohzFull.Test(0) {
			o.Isolation.Timekeeper = -1
		}
	}
	return o, nil
}
