package replay

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// Trace is a recording read into memory.
type Trace struct {
	File   string
	Header ftrace.Header
	// Events are the recording's events, decoded: the checks read their
	// Data, never the text of their payloads, which is not kept (every
	// Payload is "", see ftrace.ReadAllData).
	Events []ftrace.Event

	// own is the lines whose decisions the checks count: a segment of a
	// longer recording counts those it owns (segment.go).
	own lineSpan
	// origin is, for a segment, its recording's ChangesStart: the time
	// the machine line's changes count from (hasOrigin).
	origin    int64
	hasOrigin bool
}

// changesStart returns the trace time the machine line's changes count
// from: ChangesStart of its events, or of its recording's for a segment.
func (t *Trace) changesStart() int64 {
	if t.hasOrigin {
		return t.origin
	}
	return ChangesStart(t.Events)
}

// counts returns the Counts of a check of t, which count the decisions of
// the lines t owns.
func (t *Trace) counts() Counts { return Counts{own: t.own} }

// lineSpan is the trace lines a segment of a recording owns (segment.go):
// from and up to, not including, to (0: no end), or where listed is not
// nil, those it lists, in order. The zero value is every line.
type lineSpan struct {
	from, to int
	listed   []int
}

func (s lineSpan) has(line int) bool {
	if s.listed != nil {
		_, ok := slices.BinarySearch(s.listed, line)
		return ok
	}
	return line >= s.from && (s.to == 0 || line < s.to)
}

// ReadFile reads a whole recording: tracefs or trace-cmd report text, or a
// trace.dat, gzip-compressed or not; "-" reads standard input (see
// ftrace.Open: events out of time order are sorted, as explain's are).
func ReadFile(path string) (*Trace, error) {
	rd, c, err := ftrace.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer c.Close()
	t, err := read(rd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.File = path
	return t, nil
}

// Read reads a whole recording from r, in any form ReadFile reads.
func Read(r io.Reader) (*Trace, error) {
	rd, c, err := ftrace.OpenReader(r, "")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return read(rd)
}

func read(rd *ftrace.Reader) (*Trace, error) {
	evs, err := ftrace.ReadAllData(rd)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, errors.New("the trace holds no events")
	}
	return &Trace{Header: rd.Header(), Events: evs}, nil
}

// Counts is the outcome of one check over one trace. Every decision
// checked is matched, undetermined (the trace does not hold what it depends
// on; UndeterminedReasons says what, so that no model error can hide there)
// or a mismatch.
type Counts struct {
	Checked             int            `json:"checked"`
	Matched             int            `json:"matched"`
	Undetermined        int            `json:"undetermined"`
	UndeterminedReasons map[string]int `json:"undetermined_reasons"`
	Mismatches          []Mismatch     `json:"mismatches"`
	// Inferred lists the changes of the machine that the trace shows and
	// its machine line does not declare, each one the kernel's rules allow
	// (the decisions they explain are undetermined, whyUndeclared).
	Inferred []Inference `json:"inferred,omitempty"`

	own lineSpan // the lines whose decisions are counted (Trace.own)
}

// Inference is one undeclared change of the machine the trace shows: what
// the kernel printed, and the changes its rules allow that explain it.
type Inference struct {
	Line  int    `json:"line"`
	CPU   int    `json:"cpu"`
	Event string `json:"event"`
	// Causes are the changes that explain it, as the kernel's rules allow
	// ("CPU hotplug", "an isolated cpuset partition"): which one it was,
	// the trace does not tell.
	Causes []string `json:"causes"`
}

// Mismatch is one kernel decision our model does not reproduce.
type Mismatch struct {
	Line   int    `json:"line"`
	Event  string `json:"event"`
	Kernel string `json:"kernel"`
	Model  string `json:"model"`
}

// match counts one decision, made at line, matched.
func (c *Counts) match(line int) {
	if c.own.has(line) {
		c.Checked++
		c.Matched++
	}
}

// infer lists one inference, made at its line, as the decisions are
// counted: where c owns the line.
func (c *Counts) infer(x Inference) {
	if c.own.has(x.Line) {
		c.Inferred = append(c.Inferred, x)
	}
}

// forJSON returns c with empty rather than nil maps and lists, so that the
// JSON form always has every key.
func (c Counts) forJSON() *Counts {
	if c.UndeterminedReasons == nil {
		c.UndeterminedReasons = map[string]int{}
	}
	if c.Mismatches == nil {
		c.Mismatches = []Mismatch{}
	}
	return &c
}

// Reasons lists the undetermined reasons, most frequent first (ties by
// name): "6 now between two jiffies, 3 state from before the recording".
func (c *Counts) Reasons() string {
	type kv struct {
		why string
		n   int
	}
	l := make([]kv, 0, len(c.UndeterminedReasons))
	for why, n := range c.UndeterminedReasons {
		l = append(l, kv{why, n})
	}
	sort.Slice(l, func(a, b int) bool { return l[a].n > l[b].n || l[a].n == l[b].n && l[a].why < l[b].why })
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = fmt.Sprintf("%d %s", e.n, e.why)
	}
	return strings.Join(s, ", ")
}

// undeterminedBy counts one decision, made at line, undetermined for the
// reason why.
func (c *Counts) undeterminedBy(line int, why reason) { c.undetermined(line, why.String()) }

// undetermined counts one decision, made at line, undetermined, by its
// reason's text.
func (c *Counts) undetermined(line int, why string) {
	if !c.own.has(line) {
		return
	}
	c.Checked++
	c.Undetermined++
	if c.UndeterminedReasons == nil {
		c.UndeterminedReasons = map[string]int{}
	}
	c.UndeterminedReasons[why]++
}
func (c *Counts) mismatch(m Mismatch) {
	if !c.own.has(m.Line) {
		return
	}
	c.Checked++
	c.Mismatches = append(c.Mismatches, m)
}

// Options selects the checks of Run and supplies what a trace without a
// "# machine:" line does not say; a value set here overrides the trace's.
type Options struct {
	Wheel, Tmigr bool
	// Hrtimer checks the expiry context of sleepers (hrtimer.go) when the
	// trace holds hrtimer_start events of sleepers.
	Hrtimer bool
	// Placement checks on which CPU every timer is queued when armed
	// (placement.go).
	Placement bool
	// HZ is the tick rate (0: from the trace).
	HZ int
	// CPUs and Nodes are the machine's possible CPUs and NUMA nodes (0:
	// from the trace); NodeCPUs the CPUs of each node (nil: from the
	// trace, or contiguous blocks).
	CPUs, Nodes int
	NodeCPUs    []cpumask.Mask
	// Kernel is the kernel release ("6.12.117"; "": from the trace), which
	// selects the hierarchy's generation.
	Kernel string
	// Cmdline is the kernel command line (its isolation parameters
	// matter: isolcpus=, nohz_full=), for a trace without a "# machine:"
	// line, one that trace-cmd or a copy of tracefs made ("": from the
	// trace). Unlike Kernel, which picks a model, it states a fact of the
	// machine recorded: one that isolates other CPUs than the trace's
	// machine line says is an error.
	Cmdline string
	// Check runs the hierarchy's invariant checker after every operation
	// of the tmigr check (see TmigrOptions.Invariants).
	Check bool
	// Segment and Margin are, for RunFile, the events a segment of a
	// longer recording owns and the events replayed before and after
	// them (0: DefaultSegment, DefaultMargin; see segment.go).
	Segment, Margin int
}

// Result is the outcome of the checks on one trace.
type Result struct {
	File string `json:"file"`
	// Checks are the checks run, in the order Options.Checks gives, each
	// with its Counts; a check with nothing to decide is left out.
	Checks []CheckResult `json:"-"`
	// Wheel, Tmigr, Nextevt, Hrtimer and Placement are the same Counts
	// as Checks holds, each under its check's name: the JSON form (one
	// key a check), and a field for a caller that wants one check. Nil
	// where the check was not run (Nextevt runs with Tmigr) or had
	// nothing to decide (Hrtimer on a trace without sleepers).
	Wheel     *Counts `json:"wheel,omitempty"`
	Tmigr     *Counts `json:"tmigr,omitempty"`
	Nextevt   *Counts `json:"nextevt,omitempty"`
	Hrtimer   *Counts `json:"hrtimer,omitempty"`
	Placement *Counts `json:"placement,omitempty"`
	// Segmented says how a recording longer than a segment was checked
	// (RunFile); nil for one checked whole.
	Segmented *Segmented `json:"segmented,omitempty"`
}

// Segmented is how a recording was checked a segment at a time
// (segment.go): in Segments segments, each owning Events events and
// replayed with the Margin events before and after them.
type Segmented struct {
	Segments int `json:"segments"`
	Events   int `json:"events"`
	Margin   int `json:"margin"`
}

// add appends a check's outcome to Checks and sets the field of its name.
func (r *Result) add(name string, c *Counts) {
	r.Checks = append(r.Checks, CheckResult{Name: name, Counts: c})
	fields := map[string]**Counts{"wheel": &r.Wheel, "tmigr": &r.Tmigr, "nextevt": &r.Nextevt, "hrtimer": &r.Hrtimer, "placement": &r.Placement}
	*fields[name] = c
}

// Check returns the Counts of the check called name, nil if it was not
// run or had nothing to decide.
func (r *Result) Check(name string) *Counts {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Counts
		}
	}
	return nil
}

// Mismatched reports whether any check found a mismatch.
func (r *Result) Mismatched() bool {
	for _, c := range r.Checks {
		if len(c.Mismatches) > 0 {
			return true
		}
	}
	return false
}
