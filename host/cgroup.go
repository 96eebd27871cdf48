package host

import (
	"fmt"
	"strings"
)

// PartitionState is the content of a cgroup v2 cpuset.cpus.partition
// file: "member", "root", "isolated", or one of the last two followed by
// "invalid" and, since 6.1 or so, the reason in parentheses.
type PartitionState struct {
	Kind    string // "member", "root" or "isolated"
	Invalid bool
	Reason  string // why it is invalid, "" if not said
}

func (p PartitionState) String() string {
	s := p.Kind
	if p.Invalid {
		s += " invalid"
		if p.Reason != "" {
			s += " (" + p.Reason + ")"
		}
	}
	return s
}

// IsolatedValid reports whether the partition isolates its CPUs.
func (p PartitionState) IsolatedValid() bool { return p.Kind == "isolated" && !p.Invalid }

// ParsePartition reads a cpuset.cpus.partition file.
func ParsePartition(s string) (PartitionState, error) {
	body := strings.TrimSuffix(s, "\n")
	kind, rest, _ := strings.Cut(body, " ")
	switch kind {
	case "member", "root", "isolated":
	default:
		return PartitionState{}, fmt.Errorf("cpuset.cpus.partition %q: want member, root or isolated", clip(body))
	}
	p := PartitionState{Kind: kind}
	if rest == "" {
		return p, nil
	}
	tail, ok := strings.CutPrefix(rest, "invalid")
	if !ok || kind == "member" {
		return PartitionState{}, fmt.Errorf("cpuset.cpus.partition %q: want %q or %q after %s", clip(body), "invalid", "invalid (REASON)", kind)
	}
	p.Invalid = true
	if tail == "" {
		return p, nil
	}
	reason, ok := strings.CutPrefix(tail, " (")
	if !ok || !strings.HasSuffix(reason, ")") {
		return PartitionState{}, fmt.Errorf("cpuset.cpus.partition %q: the reason after invalid must be in parentheses", clip(body))
	}
	p.Reason = strings.TrimSuffix(reason, ")")
	if strings.ContainsAny(p.Reason, "\n") {
		return PartitionState{}, fmt.Errorf("cpuset.cpus.partition: several lines")
	}
	return p, nil
}

// parseFlag reads a cgroup v1 boolean file ("0" or "1").
func parseFlag(path, s string) (bool, error) {
	switch strings.TrimSuffix(s, "\n") {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is not 0 or 1", path, clip(s))
}
