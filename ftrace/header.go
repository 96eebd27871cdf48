package ftrace

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// Header is what the lines around the events say about the recording.
type Header struct {
	// Tracer is the "# tracer: nop" line's tracer, "" without that line
	// (trace_pipe, trace-cmd report).
	Tracer string
	// Entries and Written are the "# entries-in-buffer/entries-written:
	// 403/403   #P:2" line's counts: the events the file holds and the
	// events the kernel wrote (more when the buffer overran). The Reader
	// checks at the end that the file held Entries events.
	Entries, Written int64
	HasEntries       bool
	// CPUs is the number of online CPUs, from "#P:" (or trace-cmd's
	// "cpus=N"); 0 when unknown.
	CPUs int
	// Machine is our "# machine:" line, nil without one.
	Machine *Machine
	// Hierarchy is the kernel's boot line "Timer migration: ...", nil
	// without one.
	Hierarchy *Hierarchy
	// Nanoseconds is set when timestamps carry nine decimals (trace-cmd
	// report of a nanosecond clock) instead of the kernel's six.
	Nanoseconds bool
}

// Hierarchy is the kernel's boot message on the timer migration hierarchy:
//
//	Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level
type Hierarchy struct {
	Levels           int // tmigr_hierarchy_levels
	ChildrenPerGroup int // TMIGR_CHILDREN_PER_GROUP, 8
	CrossnodeLevel   int // the lowest level whose groups span NUMA nodes
}

const hierarchyPrefix = "Timer migration: "

// String prints the boot message, without a dmesg time stamp.
func (h Hierarchy) String() string {
	return fmt.Sprintf("Timer migration: %d hierarchy levels; %d children per group; %d crossnode level",
		h.Levels, h.ChildrenPerGroup, h.CrossnodeLevel)
}

// Validate checks that the numbers describe a hierarchy the kernel builds.
func (h Hierarchy) Validate() error {
	switch {
	case h.Levels < 1:
		return fmt.Errorf("timer migration: %d hierarchy levels", h.Levels)
	case h.ChildrenPerGroup < 2 || h.ChildrenPerGroup > 32:
		return fmt.Errorf("timer migration: %d children per group", h.ChildrenPerGroup)
	case h.CrossnodeLevel < 0 || h.CrossnodeLevel > h.Levels:
		return fmt.Errorf("timer migration: crossnode level %d outside 0..%d", h.CrossnodeLevel, h.Levels)
	}
	return nil
}

// ParseHierarchy reads the boot message from a line that holds it anywhere
// (after a dmesg stamp "[    0.088118] ", a "# ", ...).
func ParseHierarchy(line string) (Hierarchy, error) {
	i := strings.Index(line, hierarchyPrefix)
	if i < 0 {
		return Hierarchy{}, errors.New("no \"Timer migration: \" message")
	}
	s := strings.TrimRight(line[i+len(hierarchyPrefix):], " ")
	var h Hierarchy
	var ok bool
	for _, part := range []struct {
		v    *int
		tail string
	}{
		{&h.Levels, " hierarchy levels; "},
		{&h.ChildrenPerGroup, " children per group; "},
		{&h.CrossnodeLevel, " crossnode level"},
	} {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		v, why := parseUint(s[:n], 1<<20)
		if why != "" {
			break
		}
		*part.v = int(v)
		if s, ok = strings.CutPrefix(s[n:], part.tail); !ok {
			break
		}
	}
	if !ok || s != "" {
		return Hierarchy{}, fmt.Errorf("malformed %q message %q", strings.TrimSuffix(hierarchyPrefix, " "), clip(line[i:]))
	}
	return h, h.Validate()
}

// Machine is our "# machine:" header line: what the recording ran on and
// what load it ran, so that a replay can build the same model.
//
//	# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="isolcpus=1-7,9-15" busy=1-7,9-15 sleepers= (QEMU TCG)
//
// cpus, nodes, node-cpus, kernel and hz are required; cmdline, busy and
// sleepers are absent from the first host recordings and then empty. at
// lists the changes made to the machine while it was recorded (see
// Change), and is absent when there were none:
//
//	# machine: cpus=16 ... busy=9-15 sleepers= at="1s partition 9-15; 2s timer_migration=0" (QEMU TCG)
//
// refused lists, in the same words, the changes tried that the kernel
// refused (an offline that failed: the prediction counts its moved
// tasks), and is absent when there were none.
type Machine struct {
	CPUs     int            // possible CPUs, numbered 0..CPUs-1
	Nodes    int            // NUMA nodes
	NodeCPUs []cpumask.Mask // the CPUs of each node (";"-separated cpulists); a partition of 0..CPUs-1
	Kernel   string         // the kernel release, "6.12.117"
	HZ       int            // CONFIG_HZ, the jiffy rate
	Cmdline  string         // the kernel command line's relevant part (quoted); see Isolation
	Busy     cpumask.Mask   // CPUs that ran a busy loop
	Sleepers cpumask.Mask   // CPUs that ran a periodic sleeper
	At       []Change       // changes made while it ran, in the order made
	// Refused are changes tried while it ran that the kernel refused
	// (a CPU's offline that failed), in the order tried. A refused
	// offline is not nothing: the kernel may have moved the CPU's tasks
	// away before it failed, and a task pinned there has its affinity
	// broken (select_fallback_rq, kernel/sched/core.c).
	Refused []Change
	Note    string // the trailing "(...)" note without the parentheses, "QEMU TCG"
}

const machinePrefix = "# machine: "

// String prints the line's text after "# machine: ". CPU lists are in the
// kernel's canonical cpulist form.
func (m *Machine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpus=%d nodes=%d node-cpus=", m.CPUs, m.Nodes)
	for i, n := range m.NodeCPUs {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(n.String())
	}
	fmt.Fprintf(&b, " kernel=%s hz=%d cmdline=%s busy=%s sleepers=%s",
		m.Kernel, m.HZ, strconv.Quote(m.Cmdline), m.Busy.String(), m.Sleepers.String())
	if len(m.At) > 0 {
		b.WriteString(" at=")
		b.WriteString(strconv.Quote(FormatChanges(m.At)))
	}
	if len(m.Refused) > 0 {
		b.WriteString(" refused=")
		b.WriteString(strconv.Quote(FormatChanges(m.Refused)))
	}
	if m.Note != "" {
		b.WriteString(" (")
		b.WriteString(m.Note)
		b.WriteByte(')')
	}
	return b.String()
}

// MachineError is a "# machine:" line that cannot be parsed or describes an
// impossible machine.
type MachineError struct {
	Field  string // "node-cpus"; "" for the line as a whole
	Reason string
}

func (e *MachineError) Error() string {
	if e.Field == "" {
		return "machine: " + e.Reason
	}
	return fmt.Sprintf("machine: field %q: %s", e.Field, e.Reason)
}

func machineErr(field, format string, args ...any) error {
	return &MachineError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ParseMachine reads the text of a "# machine:" line after the prefix (the
// prefix itself is accepted too) and validates it. Errors are *MachineError
// naming the field.
func ParseMachine(s string) (Machine, error) {
	s = strings.TrimPrefix(s, machinePrefix)
	var m Machine
	raw := map[string]string{}
	var order []string
	for s = strings.TrimLeft(s, " "); s != ""; s = strings.TrimLeft(s, " ") {
		if s[0] == '(' {
			if !strings.HasSuffix(s, ")") {
				return Machine{}, machineErr("", "note %q lacks its closing parenthesis", clip(s))
			}
			m.Note = s[1 : len(s)-1]
			break
		}
		eq := strings.IndexByte(s, '=')
		sp := strings.IndexByte(s, ' ')
		if eq < 0 || (sp >= 0 && sp < eq) {
			tok := s
			if sp >= 0 {
				tok = s[:sp]
			}
			return Machine{}, machineErr("", "%q is not key=value", clip(tok))
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return Machine{}, machineErr(key, "unterminated quoted value %s", clip(s))
			}
			if val, err = strconv.Unquote(q); err != nil {
				return Machine{}, machineErr(key, "bad quoted value %s", clip(q))
			}
			s = s[len(q):]
			if s != "" && s[0] != ' ' {
				return Machine{}, machineErr(key, "text %q after the quoted value", clip(s))
			}
		} else {
			end := strings.IndexByte(s, ' ')
			if end < 0 {
				end = len(s)
			}
			val, s = s[:end], s[end:]
		}
		if _, dup := raw[key]; dup {
			return Machine{}, machineErr(key, "appears twice")
		}
		raw[key] = val
		order = append(order, key)
	}
	for _, k := range order {
		switch k {
		case "cpus", "nodes", "node-cpus", "kernel", "hz", "cmdline", "busy", "sleepers", "at", "refused":
		default:
			return Machine{}, machineErr(k, "unknown field")
		}
	}
	for _, k := range []string{"cpus", "nodes", "node-cpus", "kernel", "hz"} {
		if _, ok := raw[k]; !ok {
			return Machine{}, machineErr(k, "missing")
		}
	}
	num := func(key string, lo, hi int) (int, error) {
		v, why := parseUint(raw[key], uint64(hi))
		if why == "" && int(v) < lo {
			why = "is out of range"
		}
		if why != "" {
			return 0, machineErr(key, "%q %s (want %d..%d)", raw[key], why, lo, hi)
		}
		return int(v), nil
	}
	var err error
	if m.CPUs, err = num("cpus", 1, cpumask.MaxCPUs); err != nil {
		return Machine{}, err
	}
	if m.Nodes, err = num("nodes", 1, maxNodes); err != nil {
		return Machine{}, err
	}
	if m.HZ, err = num("hz", 1, 100000); err != nil {
		return Machine{}, err
	}
	m.Kernel = raw["kernel"]
	m.Cmdline = raw["cmdline"]
	lists := strings.Split(raw["node-cpus"], ";")
	m.NodeCPUs = make([]cpumask.Mask, len(lists))
	for i, l := range lists {
		if m.NodeCPUs[i], err = cpumask.ParseFor(l, m.CPUs); err != nil {
			return Machine{}, machineErr("node-cpus", "node %d: %v", i, err)
		}
	}
	for _, f := range []struct {
		key string
		m   *cpumask.Mask
	}{{"busy", &m.Busy}, {"sleepers", &m.Sleepers}} {
		if *f.m, err = cpumask.ParseFor(raw[f.key], m.CPUs); err != nil {
			return Machine{}, machineErr(f.key, "%v", err)
		}
	}
	if at, ok := raw["at"]; ok {
		if m.At, err = ParseChanges(at, m.CPUs); err != nil {
			return Machine{}, machineErr("at", "%v", err)
		}
		if len(m.At) == 0 {
			return Machine{}, machineErr("at", "is empty (a machine without changes has no at=)")
		}
	}
	if refused, ok := raw["refused"]; ok {
		if m.Refused, err = ParseChanges(refused, m.CPUs); err != nil {
			return Machine{}, machineErr("refused", "%v", err)
		}
		if len(m.Refused) == 0 {
			return Machine{}, machineErr("refused", "is empty (a machine without refused changes has no refused=)")
		}
	}
	if err := m.Validate(); err != nil {
		return Machine{}, err
	}
	return m, nil
}

// maxNodes is the kernel's MAX_NUMNODES at its largest (NODES_SHIFT 10).
const maxNodes = 1024

// Validate checks that m describes a machine: CPU and node counts in range,
// node-cpus a partition of 0..CPUs-1 into Nodes lists (a node may hold no
// CPU: memory-only nodes exist), a kernel release without blanks, HZ > 0,
// and busy and sleeper CPUs that exist.
func (m *Machine) Validate() error {
	if m.CPUs < 1 || m.CPUs > cpumask.MaxCPUs {
		return machineErr("cpus", "%d is out of range (want 1..%d)", m.CPUs, cpumask.MaxCPUs)
	}
	if m.Nodes < 1 || m.Nodes > maxNodes {
		return machineErr("nodes", "%d is out of range (want 1..%d)", m.Nodes, maxNodes)
	}
	if len(m.NodeCPUs) != m.Nodes {
		return machineErr("node-cpus", "%d lists for %d nodes", len(m.NodeCPUs), m.Nodes)
	}
	all := cpumask.Range(0, m.CPUs-1)
	var seen cpumask.Mask
	for i := range m.NodeCPUs {
		n := &m.NodeCPUs[i]
		if !n.Subset(&all) {
			return machineErr("node-cpus", "node %d holds CPUs %s, beyond cpus=%d", i, n.AndNot(all), m.CPUs)
		}
		if n.Intersects(&seen) {
			return machineErr("node-cpus", "%s in node %d and an earlier node", cpusPhrase(n.And(seen)), i)
		}
		seen = seen.Or(*n)
	}
	if missing := all.AndNot(seen); !missing.Empty() {
		return machineErr("node-cpus", "%s in no node", cpusPhrase(missing))
	}
	if m.Kernel == "" || strings.ContainsAny(m.Kernel, " \t\n") {
		return machineErr("kernel", "%q is not a kernel release", m.Kernel)
	}
	if m.HZ < 1 {
		return machineErr("hz", "%d is not positive", m.HZ)
	}
	for _, f := range []struct {
		key string
		m   *cpumask.Mask
	}{{"busy", &m.Busy}, {"sleepers", &m.Sleepers}} {
		if !f.m.Subset(&all) {
			return machineErr(f.key, "holds CPUs %s, beyond cpus=%d", f.m.AndNot(all), m.CPUs)
		}
	}
	if strings.ContainsAny(m.Cmdline, "\n") {
		return machineErr("cmdline", "holds a newline")
	}
	if err := validateChanges(m.At, m.CPUs); err != nil {
		return machineErr("at", "%v", err)
	}
	if err := validateChanges(m.Refused, m.CPUs); err != nil {
		return machineErr("refused", "%v", err)
	}
	if strings.ContainsAny(m.Note, "\n") {
		return machineErr("", "note holds a newline")
	}
	return nil
}

// Node returns the NUMA node of cpu, or -1 for a CPU the machine lacks.
func (m *Machine) Node(cpu int) int {
	for i := range m.NodeCPUs {
		if m.NodeCPUs[i].Test(cpu) {
			return i
		}
	}
	return -1
}

// Isolation returns the CPU isolation that the kernel derives from Cmdline
// on this machine; see cmdline.ParseIsolation.
func (m *Machine) Isolation() (cmdline.Isolation, error) {
	return cmdline.ParseIsolation(m.Cmdline, m.CPUs)
}

// cpusPhrase names a set of CPUs for an error message: "CPU 15 is", "CPUs
// 8-9 are".
func cpusPhrase(m cpumask.Mask) string {
	if m.Weight() == 1 {
		return "CPU " + m.String() + " is"
	}
	return "CPUs " + m.String() + " are"
}

// ChangeKind is what a Change does.
type ChangeKind uint8

const (
	// ChangeOffline takes a CPU offline (its sysfs online file written 0).
	ChangeOffline ChangeKind = iota + 1
	// ChangeOnline brings a CPU back online.
	ChangeOnline
	// ChangePartition makes the isolated cpuset partition (cgroup v2,
	// cpuset.cpus.partition=isolated) the CPUs of Change.CPUs, creating it
	// or changing its CPUs; an empty set removes it ("partition none").
	ChangePartition
	// ChangeTimerMigration writes the kernel.timer_migration sysctl.
	ChangeTimerMigration
)

// Change is one change made to a machine while it was recorded: one
// element of the machine line's at= field. The words are those of "tmigr
// sim --at", so that what was done to a guest can be done to a simulated
// machine:
//
//	1s offline 3          CPU 3 taken offline 1 s into the recording
//	1.5s online 3         and brought back
//	500ms partition 9-15  an isolated cpuset partition of CPUs 9-15
//	2s partition none     the partition removed
//	2s timer_migration=0  the sysctl kernel.timer_migration written 0
//
// Elements are separated by "; " and listed in the order they were made, so
// their times never decrease. A time counts from the start of the recording
// (tracing switched on): Go duration syntax, or a number of seconds.
type Change struct {
	At   time.Duration // since the recording started; >= 0
	Kind ChangeKind
	CPU  int          // ChangeOffline, ChangeOnline: the CPU
	CPUs cpumask.Mask // ChangePartition: the partition's CPUs; empty for none
	On   bool         // ChangeTimerMigration: the value written (1 = on)
}

// String prints the change as the at= field holds it: "1s partition 9-15".
func (c Change) String() string {
	t := c.At.String()
	switch c.Kind {
	case ChangeOffline:
		return fmt.Sprintf("%s offline %d", t, c.CPU)
	case ChangeOnline:
		return fmt.Sprintf("%s online %d", t, c.CPU)
	case ChangePartition:
		if c.CPUs.Empty() {
			return t + " partition none"
		}
		return t + " partition " + c.CPUs.String()
	case ChangeTimerMigration:
		on := 0
		if c.On {
			on = 1
		}
		return fmt.Sprintf("%s timer_migration=%d", t, on)
	}
	return fmt.Sprintf("%s change-kind-%d", t, c.Kind)
}

// FormatChanges prints changes as the at= field holds them, "; "-separated.
func FormatChanges(cs []Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// maxChangeTime bounds a change's time: a day is far beyond any recording.
const maxChangeTime = 24 * time.Hour

// ParseChange reads one change, "TIME offline CPU", "TIME online CPU",
// "TIME partition LIST|none" or "TIME timer_migration=0|1", for a machine of
// cpus CPUs.
func ParseChange(s string, cpus int) (Change, error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return Change{}, fmt.Errorf("%q: want 'TIME offline CPU', 'TIME online CPU', 'TIME partition LIST|none' or 'TIME timer_migration=0|1'", s)
	}
	t, err := parseChangeTime(f[0])
	if err != nil {
		return Change{}, fmt.Errorf("%q: %v", s, err)
	}
	c := Change{At: t}
	switch {
	case f[1] == "offline" || f[1] == "online":
		if len(f) != 3 {
			return Change{}, fmt.Errorf("%q: want 'TIME %s CPU'", s, f[1])
		}
		n, why := parseUint(f[2], uint64(cpumask.MaxCPUs))
		if why != "" || int(n) >= cpus {
			return Change{}, fmt.Errorf("%q: %q is not a CPU of 0-%d", s, f[2], cpus-1)
		}
		c.Kind, c.CPU = ChangeOffline, int(n)
		if f[1] == "online" {
			c.Kind = ChangeOnline
		}
	case f[1] == "partition":
		if len(f) != 3 {
			return Change{}, fmt.Errorf("%q: want 'TIME partition LIST' or 'TIME partition none'", s)
		}
		c.Kind = ChangePartition
		if f[2] != "none" {
			if c.CPUs, err = cpumask.ParseFor(f[2], cpus); err != nil {
				return Change{}, fmt.Errorf("%q: %v", s, err)
			}
			if c.CPUs.Empty() {
				return Change{}, fmt.Errorf("%q: an empty partition: say 'partition none' to remove it", s)
			}
		}
	case strings.HasPrefix(f[1], "timer_migration="):
		if len(f) != 2 {
			return Change{}, fmt.Errorf("%q: want 'TIME timer_migration=0|1'", s)
		}
		c.Kind = ChangeTimerMigration
		switch v := strings.TrimPrefix(f[1], "timer_migration="); v {
		case "0":
		case "1":
			c.On = true
		default:
			return Change{}, fmt.Errorf("%q: timer_migration=%s: the sysctl takes 0 or 1", s, v)
		}
	default:
		return Change{}, fmt.Errorf("%q: unknown change %q (want offline, online, partition or timer_migration=)", s, f[1])
	}
	return c, nil
}

// parseChangeTime reads a Go duration ("1.5s", "500ms") or a number of
// seconds ("1.5").
func parseChangeTime(s string) (time.Duration, error) {
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil && s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '.') {
		if !(f >= 0 && f <= maxChangeTime.Seconds()) {
			return 0, fmt.Errorf("time %q is outside 0..%v", s, maxChangeTime)
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("time %q is not a duration (1.5s, 500ms) or a number of seconds", s)
		}
	}
	if d < 0 || d > maxChangeTime {
		return 0, fmt.Errorf("time %q is outside 0..%v", s, maxChangeTime)
	}
	return d, nil
}

// ParseChanges reads the at= field: changes separated by ";", for a machine
// of cpus CPUs, and checks them as Validate does. "" is no change.
func ParseChanges(s string, cpus int) ([]Change, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var cs []Change
	for i, part := range strings.Split(s, ";") {
		c, err := ParseChange(strings.TrimSpace(part), cpus)
		if err != nil {
			return nil, fmt.Errorf("change %d: %v", i+1, err)
		}
		cs = append(cs, c)
	}
	if err := validateChanges(cs, cpus); err != nil {
		return nil, err
	}
	return cs, nil
}

// validateChanges checks changes against a machine of cpus CPUs: known
// kinds, CPUs it has, times in order. It does not check that a CPU taken
// offline was online: the recorder reports what it did, and the kernel
// refuses what it cannot do.
func validateChanges(cs []Change, cpus int) error {
	all := cpumask.Range(0, cpus-1)
	for i, c := range cs {
		switch {
		case c.At < 0 || c.At > maxChangeTime:
			return fmt.Errorf("change %d (%s): time outside 0..%v", i+1, c, maxChangeTime)
		case i > 0 && c.At < cs[i-1].At:
			return fmt.Errorf("change %d (%s) is listed after a later one (%s): list them in the order made", i+1, c, cs[i-1])
		}
		switch c.Kind {
		case ChangeOffline, ChangeOnline:
			if c.CPU < 0 || c.CPU >= cpus {
				return fmt.Errorf("change %d (%s): CPU %d is not a CPU of 0-%d", i+1, c, c.CPU, cpus-1)
			}
		case ChangePartition:
			if !c.CPUs.Subset(&all) {
				return fmt.Errorf("change %d (%s): CPUs %s are beyond the %d CPUs", i+1, c, c.CPUs.AndNot(all), cpus)
			}
		case ChangeTimerMigration:
		default:
			return fmt.Errorf("change %d: unknown kind %d", i+1, c.Kind)
		}
	}
	return nil
}
