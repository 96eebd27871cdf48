package conformance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// HierarchySince is the first kernel with the timer migration hierarchy
// (kernel/time/timer_migration.c, Linux 6.9). Before it, idle CPUs' timers
// were pushed to a busy CPU when they were queued (get_nohz_timer_target)
// and the kernel printed no "Timer migration:" line and no timer_migration
// events.
const HierarchySince = "6.9"

// HasHierarchy reports whether a kernel release ("6.1.192", "7.3.4") has
// the timer migration hierarchy. A release it cannot read is taken to have
// one (the recordings of this project are all 6.1 or later).
func HasHierarchy(release string) bool {
	return !versionBefore(release, HierarchySince)
}

// versionBefore reports whether release a is older than b, comparing
// "A.B[.C]" numerically; false when a is not such a version.
func versionBefore(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	if pa == nil || pb == nil {
		return false
	}
	for i := range 3 {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func versionParts(v string) []int {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return nil
	}
	out := make([]int, 3)
	for i, p := range parts {
		if i == 2 {
			p = strings.TrimRightFunc(p, func(r rune) bool { return r < '0' || r > '9' })
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil
		}
		out[i] = n
	}
	return out
}

// BootLine checks the kernel's boot line of a recording (its header)
// against the hierarchy that package hier builds for the machine the
// machine line describes, as "tmigr topo" prints it: the same number of
// levels, children per group and crossnode level. A kernel before 6.9 must
// print none. It returns what was found, for a report line; a difference
// is an error naming both lines, a finding about the model.
func BootLine(h *ftrace.Header) (string, error) {
	m := h.Machine
	if m == nil {
		return "", errors.New("the recording has no \"# machine:\" line")
	}
	kernel := ""
	if h.Hierarchy != nil {
		kernel = h.Hierarchy.String()
	}
	if !HasHierarchy(m.Kernel) {
		if kernel != "" {
			return "", fmt.Errorf("Linux %s printed the boot line %q, but the hierarchy came with %s", m.Kernel, kernel, HierarchySince)
		}
		return fmt.Sprintf("no timer migration hierarchy (Linux %s, before %s)", m.Kernel, HierarchySince), nil
	}
	nodeOf := make([]int, m.CPUs)
	for c := range nodeOf {
		nodeOf[c] = m.Node(c)
	}
	model, err := hier.New(hier.Options{NodeOf: nodeOf, Nodes: m.Nodes})
	if err != nil {
		return "", fmt.Errorf("the model's hierarchy: %v", err)
	}
	if want := model.BootLine(); kernel != want {
		return "", fmt.Errorf("the kernel's boot line %q differs from the model's %q", kernel, want)
	}
	if kernel == "" {
		kernel = "no timer migration hierarchy (one CPU)"
	}
	return kernel, nil
}
