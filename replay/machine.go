package replay

import (
	"errors"
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/kernel/cmdline"
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
	// Busy lists the CPUs that ran a busy loop throughout (the machine
	// line's busy=): a kernel that keeps such a CPU in the hierarchy has it
	// active there, unless it is nohz_full.
	Busy cpumask.Mask
	// At lists the changes made while the trace was recorded (the machine
	// line's at=): isolated partitions, hotplug, timer_migration.
	At []ftrace.Change
}

// shapeOf combines the trace's "# machine:" line with the overrides in o.
func shapeOf(t *Trace, o Options) (Shape, error) {
	var s Shape
	if m := t.Header.Machine; m != nil {
		s = Shape{CPUs: m.CPUs, Nodes: m.Nodes, NodeCPUs: m.NodeCPUs, HZ: m.HZ, Kernel: m.Kernel, Cmdline: m.Cmdline,
			Busy: m.Busy, At: m.At}
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
	if o.Cmdline != "" {
		if s.Cmdline != o.Cmdline && t.Header.Machine != nil {
			if err := sameIsolation(s.Cmdline, o.Cmdline, s.CPUs); err != nil {
				return s, err
			}
		}
		s.Cmdline = o.Cmdline
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

// sameIsolation checks that the command line given isolates the CPUs
// that the trace's machine line does (the same words need not be: the
// machine line keeps the isolation parameters alone, and isolcpus=nohz,1-3
// is nohz_full=1-3's kind).
func sameIsolation(trace, given string, cpus int) error {
	a, err := cmdline.ParseIsolation(trace, cpus)
	if err != nil {
		return fmt.Errorf("the machine line's command line: %v", err)
	}
	b, err := cmdline.ParseIsolation(given, cpus)
	if err != nil {
		return fmt.Errorf("--cmdline: %v", err)
	}
	if !a.Domain.Equal(b.Domain) || !a.NohzFull.Equal(b.NohzFull) {
		return fmt.Errorf("--cmdline %q isolates CPUs %s (nohz_full %s), the trace's machine line %q CPUs %s (nohz_full %s): "+
			"the recording is of the machine its line describes; leave --cmdline out",
			given, dashMask(b.Domain), dashMask(b.NohzFull), trace, dashMask(a.Domain), dashMask(a.NohzFull))
	}
	return nil
}

func dashMask(m cpumask.Mask) string {
	if m.Empty() {
		return "none"
	}
	return m.String()
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

// DefaultKernel is the model of a trace whose kernel is unknown: 6.9 to
// 6.18's hierarchy, isolated CPUs kept in it, which is what every recording
// without a release ran.
var DefaultKernel = kernel.V(6, 18, 0)

// model returns the kernel model of the trace's release (see package
// kernel): its switches decide the hierarchy's generation (the exclusion of
// isolated CPUs from 6.19, 7dec062cfcf2) and what the availability events
// must show.
func (s *Shape) model() (kernel.Model, error) {
	if s.Kernel == "" {
		return kernel.For(DefaultKernel), nil
	}
	rel, err := kernel.ParseRelease(s.Kernel)
	if err != nil {
		return kernel.Model{}, err
	}
	return kernel.For(rel.Version), nil
}

// isolation returns the command line's isolation with the partition given
// (the CPUs of isolated cpuset partitions in effect), as the model's
// hierarchy reads it.
func (s *Shape) isolation(km kernel.Model, partition cpumask.Mask) (hier.Isolation, error) {
	iso, err := cmdline.ParseIsolation(s.Cmdline, s.CPUs)
	if err != nil {
		return hier.Isolation{}, fmt.Errorf("command line: %v", err)
	}
	// The boot CPU keeps the timekeeping duty under nohz_full.
	return km.Isolation(iso.Domain, iso.NohzFull, partition, kernel.Timekeeper(iso.NohzFull)), nil
}

// hierOptions returns the options of a hierarchy that models the trace's
// kernel on this machine, as it booted (partitions made at run time come
// later, see changes.go).
func (s *Shape) hierOptions() (hier.Options, error) {
	km, err := s.model()
	if err != nil {
		return hier.Options{}, err
	}
	iso, err := s.isolation(km, cpumask.Mask{})
	if err != nil {
		return hier.Options{}, err
	}
	return hier.Options{NodeOf: s.nodeOf(), Nodes: s.Nodes, ExcludeIsolated: km.Has(kernel.ExcludeIsolated),
		ImbalancedNUMA: km.ImbalancedNUMA(), Isolation: iso}, nil
}
