package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
)

// Options supplies what a recording without a "# machine:" line does not
// say; a value set here overrides the recording's.
type Options struct {
	// Kernel is the release the rules are taken from ("6.12.118").
	Kernel string
	// Cmdline holds the isolation parameters of the kernel command line
	// ("isolcpus=1-7 nohz_full=1-7").
	Cmdline string
	// CPUs is the number of possible CPUs; NodeCPUs the CPUs of each NUMA
	// node (nil: one node).
	CPUs     int
	NodeCPUs []cpumask.Mask
	// HZ is CONFIG_HZ, the jiffy rate.
	HZ int

	// Events, above 0, is the most expiries Report.Events keeps, of the
	// CPUs in EventCPUs (all when empty): the ones a text report prints
	// (TextOptions.MaxEvents). The summaries count every expiry still,
	// so that what the report holds does not grow with the recording.
	Events    int
	EventCPUs cpumask.Mask
}

// Kind says whose timer an expiry ran.
type Kind string

const (
	// Foreign: the handler ran another CPU's timer, in a remote round of
	// the timer-migration hierarchy.
	Foreign Kind = "foreign"
	// Own: the handler ran a timer of its own base.
	Own Kind = "own"
	// UnknownOwner: the trace does not tell whose base the timer was on.
	UnknownOwner Kind = "unknown"
)

// Expiry is one timer callback the report explains: a foreign one, or any
// on an isolated or nohz_full CPU.
type Expiry struct {
	Line     int    // the timer_expire_entry line
	TS       int64  // its time, ns
	Handler  int    // the CPU that ran the callback
	Owner    int    // the CPU whose timer base held it; -1 unknown
	Function string // the callback ("process_timeout")
	Timer    uint64 // the timer_list pointer as printed
	Kind     Kind
	// Start is the timer's last timer_start before the expiry, nil when
	// the recording holds none (it was armed before the recording began).
	Start *Start
	// Duration is the time from timer_expire_entry to timer_expire_exit,
	// ns; -1 when the exit is not in the recording.
	Duration int64
	// Steps are the decisions that put the timer there, in order: whose
	// timer it was, the owner's state, the handler's round and roles in
	// the hierarchy, the isolation rules of the kernel version. Why is
	// their sentence.
	Steps []Step
	Why   string
}

// Start is a timer_start: where and how a timer was queued.
type Start struct {
	Line    int
	TS      int64
	CPU     int // the CPU that ran timer_start
	Base    int // the CPU whose base it was queued on (cpu=)
	Flags   ftrace.TimerFlags
	Expires uint64 // jiffies
	HardIRQ bool   // armed in hard interrupt context
}

// StepKind names what a step of the chain is about.
type StepKind string

const (
	StepOwner      StepKind = "owner"      // whose timer it was and how it was armed
	StepAnomaly    StepKind = "anomaly"    // something the kernel's rules do not allow, seen in the trace
	StepIdle       StepKind = "idle"       // the owner's idle period
	StepEvent      StepKind = "event"      // the owner's event, published in its group
	StepPropagated StepKind = "propagated" // the event went up through an idle group
	StepRound      StepKind = "round"      // the handler's remote round
	StepMigrator   StepKind = "migrator"   // a migrator role on the handler's path
	StepIsolation  StepKind = "isolation"  // what the handler's isolation means on this kernel
	StepKernel     StepKind = "kernel"     // what another kernel version would do
	StepDeferrable StepKind = "deferrable" // a deferrable timer waits for the tick
)

// Step is one decision of the chain: what the trace shows (or that it
// cannot show it, and why).
type Step struct {
	Kind  StepKind
	Line  int    // the trace line that shows it; 0 when none does
	TS    int64  // the time it took effect, ns; -1 when unknown
	CPU   int    // the CPU it is about; -1 none
	Group string // the group it is about ("GRP0:1"); "" none
	Text  string // the clause of the sentence
	// Undetermined is why the trace cannot tell this link, one of the
	// reasons Report.Undetermined counts; "" when it can.
	Undetermined string
}

// Pull is the foreign expiries of one handler, owner and function.
type Pull struct {
	Handler, Owner int
	Function       string
	Count          int
	Time           int64 // ns in the callbacks whose exit is in the recording
	First, Last    int64 // ns
	Why            string
}

// CPUSummary is what one CPU ran of the expiries the report explains.
type CPUSummary struct {
	CPU       int
	Role      string // "isolated (isolcpus domain)", "nohz_full", "housekeeping"
	Foreign   int
	Own       int
	Unknown   int
	Time      int64  // ns in its foreign callbacks
	Pulls     []Pull // its foreign timers by owner and function
	OwnByFunc []FuncCount
}

// FuncCount counts the callbacks of one function.
type FuncCount struct {
	Function string
	Count    int
	Time     int64 // ns
}

// Report is the explanation of one recording.
type Report struct {
	File    string
	Kernel  string // the release, "" unknown
	Model   kernel.Model
	Machine string // the recording's "# machine:" text, "" without one
	CPUs    int
	// Isolated is the isolcpus (domain) list, NohzFull the nohz_full one;
	// Excluded the CPUs the 6.19 rule takes out of the hierarchy on this
	// machine (domain-isolated, not nohz_full, not the timekeeper), whether
	// or not this kernel has the rule.
	Isolated, NohzFull, Excluded cpumask.Mask
	Timekeeper                   int // -1 without nohz_full
	Expiries                     int // timer_expire_entry lines read
	// Events are the expiries explained, in the order they ran; the
	// first Options.Events of them when that is set.
	Events       []Expiry
	Pulls        []Pull
	CPUSummaries []CPUSummary
	// Undetermined counts, by reason, the links of the chains the trace
	// cannot determine (the reasons of package replay, and "timer armed
	// before the recording").
	Undetermined map[string]int
	Notes        []string
}

// Reasons a link is undetermined; the first ones are package replay's
// words for the same gaps.
const (
	whyBefore   = "state from before the recording"
	whyFirst    = "first transition of the group"
	whyEvent    = "event from before the recording"
	whyOpaque   = "CPU whose transitions are not traced"
	whyLost     = "events lost"
	whyPartial  = "operation cut by the recording"
	whyUnarmed  = "timer armed before the recording"
	whyDisagree = "trace disagrees with itself"
	whyNoTree   = "groups not named by the trace"
)

// ExplainFile explains the recording at path ("-": standard input). It
// reads it as a stream, holding what the machine's state and a window of
// swapWindow need, not the recording (see stream.go).
func ExplainFile(path string, o Options) (*Report, error) {
	rep, err := explainPath(path, o)
	if err != nil {
		return nil, err
	}
	rep.File = path
	return rep, nil
}

// Explain reads a whole recording from r and explains it.
func Explain(r *ftrace.Reader, o Options) (*Report, error) {
	evs, hdr, err := readAll(r)
	if err != nil {
		return nil, err
	}
	return Build(evs, hdr, o)
}

// ExplainText is Explain of a recording held in memory.
func ExplainText(text io.Reader, o Options) (*Report, error) {
	return Explain(ftrace.NewReader(text), o)
}

// Build explains events read with package ftrace, in time order, with the
// header the Reader gave.
func Build(evs []ftrace.Event, hdr ftrace.Header, o Options) (*Report, error) {
	b, err := newBuilder(evs, hdr, o)
	if err != nil {
		return nil, err
	}
	b.run()
	b.finish()
	return b.rep, nil
}

// cpusPhrase is "CPU 3" or "CPUs 1-7,9-15".
func cpusPhrase(m cpumask.Mask) string {
	if m.Weight() == 1 {
		return fmt.Sprintf("CPU %d", m.First())
	}
	return "CPUs " + m.String()
}

// joinAnd joins "a", "b", "c" as "a, b and c".
func joinAnd(l []string) string {
	switch len(l) {
	case 0:
		return ""
	case 1:
		return l[0]
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}

// The switches the report's rules depend on.
const (
	kernelPull    = kernel.PullHierarchy
	kernelExclude = kernel.ExcludeIsolated
)
