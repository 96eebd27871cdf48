package explain

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/replay"
)

// TextOptions chooses what WriteText prints.
type TextOptions struct {
	// MaxEvents is the most events printed (0: all).
	MaxEvents int
	// CPUs, when not empty, limits the summary and the events to expiries
	// these CPUs ran.
	CPUs cpumask.Mask
}

// WriteText prints the report: what the recording is and which rules its
// kernel follows, a summary per CPU (foreign timers by owner and function,
// with their count and time; the own timers of isolated CPUs), the
// undetermined links by reason, then every expiry with its chain.
func (r *Report) WriteText(w io.Writer, o TextOptions) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	name := r.File
	if name == "-" || name == "" {
		name = "(standard input)"
	}
	p("%s: %s\n", name, r.headline())
	p("  %s\n", r.rules())
	for _, n := range r.Notes {
		p("  note: %s\n", n)
	}
	shown := func(c int) bool { return o.CPUs.Empty() || o.CPUs.Test(c) }
	// The counts are the summaries': Events may keep only the first of
	// the expiries (Options.Events).
	var foreign, onIso, listed int
	for _, cs := range r.CPUSummaries {
		if !shown(cs.CPU) {
			continue
		}
		n := cs.Foreign + cs.Own + cs.Unknown
		foreign += cs.Foreign
		listed += n
		if r.Isolated.Test(cs.CPU) || r.NohzFull.Test(cs.CPU) {
			onIso += n
		}
	}
	p("  %d timer expiries: %d foreign, %d on isolated or nohz_full CPUs\n", r.Expiries, foreign, onIso)
	for _, cs := range r.CPUSummaries {
		if !shown(cs.CPU) {
			continue
		}
		p("\n  CPU %d, %s:", cs.CPU, cs.Role)
		var parts []string
		if cs.Foreign > 0 {
			parts = append(parts, fmt.Sprintf("%d foreign timer%s (%s in them)", cs.Foreign, plural(cs.Foreign), fmtDur(cs.Time)))
		}
		if cs.Own > 0 {
			parts = append(parts, fmt.Sprintf("%d of its own", cs.Own))
		}
		if cs.Unknown > 0 {
			parts = append(parts, fmt.Sprintf("%d whose owner is unknown", cs.Unknown))
		}
		p(" %s\n", strings.Join(parts, ", "))
		if len(cs.Pulls) > 0 {
			p("    %6s %10s  %-6s  %s\n", "count", "time", "owner", "function")
			for _, pl := range cs.Pulls {
				p("    %6d %10s  CPU %-2d  %s\n", pl.Count, fmtDur(pl.Time), pl.Owner, pl.Function)
			}
			p("    why (the first): %s\n", cs.Pulls[0].Why)
		}
		if len(cs.OwnByFunc) > 0 {
			var l []string
			for _, f := range cs.OwnByFunc {
				l = append(l, fmt.Sprintf("%s ×%d", f.Function, f.Count))
			}
			p("    its own: %s\n", strings.Join(l, ", "))
		}
	}
	if len(r.Undetermined) > 0 {
		c := replay.Counts{UndeterminedReasons: r.Undetermined}
		p("\n  undetermined links: %s\n", c.Reasons())
	}
	n := 0
	for _, x := range r.Events {
		if !shown(x.Handler) {
			continue
		}
		if n == 0 {
			p("\n  events:\n")
		}
		if o.MaxEvents > 0 && n == o.MaxEvents {
			break
		}
		n++
		p("    line %d: %s\n", x.Line, x.Why)
	}
	if n < listed {
		p("    ... %d more (--events 0 prints them all)\n", listed-n)
	}
	return bw.Flush()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// headline is "Linux 6.12.118, 16 CPUs on 2 nodes, isolcpus=1-7,9-15".
func (r *Report) headline() string {
	var l []string
	if r.Kernel != "" {
		l = append(l, "Linux "+r.Kernel)
	} else {
		l = append(l, "kernel unknown")
	}
	l = append(l, fmt.Sprintf("%d CPUs", r.CPUs))
	if !r.Isolated.Empty() {
		l = append(l, "isolcpus="+r.Isolated.String())
	}
	if !r.NohzFull.Empty() {
		l = append(l, "nohz_full="+r.NohzFull.String())
	}
	if r.Isolated.Empty() && r.NohzFull.Empty() {
		l = append(l, "no CPU isolated")
	}
	return strings.Join(l, ", ")
}

// rules says what the kernel does with the isolated CPUs.
func (r *Report) rules() string {
	switch {
	case !r.Model.Has(kernelPull):
		return "before 6.9: no pull hierarchy; a timer runs on the CPU whose base it is queued on"
	case r.Model.Has(kernelExclude) && !r.Excluded.Empty():
		return fmt.Sprintf("6.19 or later (exclude-isolated, 7dec062cfcf2): %s out of the timer-migration hierarchy; they run only their own timers", cpusAre(r.Excluded))
	case r.Model.Has(kernelExclude):
		return "6.19 or later: isolated CPUs would leave the timer-migration hierarchy; none is isolated here"
	case !r.Excluded.Empty():
		return fmt.Sprintf("6.9 to 6.18: isolated CPUs stay in the timer-migration hierarchy and pull; from 6.19 (exclude-isolated, 7dec062cfcf2) %s be out of it", cpusWould(r.Excluded))
	}
	return "6.9 to 6.18: every CPU is in the timer-migration hierarchy"
}

func cpusAre(m cpumask.Mask) string {
	if m.Weight() == 1 {
		return cpusPhrase(m) + " is"
	}
	return cpusPhrase(m) + " are"
}

func cpusWould(m cpumask.Mask) string { return cpusPhrase(m) + " would" }

// JSON is the report as "tmigr explain --json" prints it, one object per
// file.
type JSON struct {
	File         string         `json:"file"`
	Kernel       string         `json:"kernel"`
	Model        string         `json:"model"` // "pull" or "pull-isolated" (6.19+), "push" before 6.9
	CPUs         int            `json:"cpus"`
	Isolated     string         `json:"isolated"`
	NohzFull     string         `json:"nohz_full"`
	Excluded     string         `json:"excluded_from_6_19"`
	Expiries     int            `json:"expiries"`
	Foreign      []PullJSON     `json:"foreign"`
	Events       []EventJSON    `json:"events"`
	Undetermined map[string]int `json:"undetermined"`
	Notes        []string       `json:"notes"`
}

// PullJSON is one Pull.
type PullJSON struct {
	Handler  int    `json:"handler"`
	Owner    int    `json:"owner"`
	Function string `json:"function"`
	Count    int    `json:"count"`
	TimeNS   int64  `json:"time_ns"`
	FirstNS  int64  `json:"first_ns"`
	LastNS   int64  `json:"last_ns"`
	Why      string `json:"why"`
}

// EventJSON is one Expiry; owner is null when the trace does not tell it.
type EventJSON struct {
	Line       int        `json:"line"`
	TSNS       int64      `json:"ts_ns"`
	Handler    int        `json:"handler"`
	Owner      *int       `json:"owner"`
	Function   string     `json:"function"`
	Timer      string     `json:"timer"`
	Kind       Kind       `json:"kind"`
	Start      *StartJSON `json:"start"`
	DurationNS *int64     `json:"duration_ns"`
	Steps      []StepJSON `json:"steps"`
	Why        string     `json:"why"`
}

// StartJSON is one Start.
type StartJSON struct {
	Line    int    `json:"line"`
	TSNS    int64  `json:"ts_ns"`
	CPU     int    `json:"cpu"`
	Base    int    `json:"base"`
	Flags   string `json:"flags"`
	Expires uint64 `json:"expires"`
}

// StepJSON is one Step.
type StepJSON struct {
	Kind         StepKind `json:"kind"`
	Line         int      `json:"line,omitempty"`
	TSNS         *int64   `json:"ts_ns"`
	CPU          *int     `json:"cpu"`
	Group        string   `json:"group,omitempty"`
	Text         string   `json:"text"`
	Undetermined string   `json:"undetermined,omitempty"`
}

// JSON returns the report's JSON form.
func (r *Report) JSON() JSON {
	j := JSON{File: r.File, Kernel: r.Kernel, Model: r.Model.Policy(true).String(), CPUs: r.CPUs,
		Isolated: r.Isolated.String(), NohzFull: r.NohzFull.String(), Excluded: r.Excluded.String(),
		Expiries: r.Expiries, Foreign: []PullJSON{}, Events: []EventJSON{}, Undetermined: r.Undetermined, Notes: r.Notes}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	for _, p := range r.Pulls {
		j.Foreign = append(j.Foreign, PullJSON{p.Handler, p.Owner, p.Function, p.Count, p.Time, p.First, p.Last, p.Why})
	}
	for _, x := range r.Events {
		e := EventJSON{Line: x.Line, TSNS: x.TS, Handler: x.Handler, Function: x.Function,
			Timer: fmt.Sprintf("%016x", x.Timer), Kind: x.Kind, Steps: []StepJSON{}, Why: x.Why}
		if x.Owner >= 0 {
			o := x.Owner
			e.Owner = &o
		}
		if x.Duration >= 0 {
			d := x.Duration
			e.DurationNS = &d
		}
		if s := x.Start; s != nil {
			e.Start = &StartJSON{s.Line, s.TS, s.CPU, s.Base, s.Flags.String(), s.Expires}
		}
		for _, s := range x.Steps {
			sj := StepJSON{Kind: s.Kind, Line: s.Line, Group: s.Group, Text: s.Text, Undetermined: s.Undetermined}
			if s.TS >= 0 {
				ts := s.TS
				sj.TSNS = &ts
			}
			if s.CPU >= 0 {
				c := s.CPU
				sj.CPU = &c
			}
			e.Steps = append(e.Steps, sj)
		}
		j.Events = append(j.Events, e)
	}
	return j
}
