// Package replay drives tmigr's core from a recorded kernel trace and
// compares, event by event, what our model computes with what the kernel
// printed.
//
// Two checks exist. The wheel check recomputes the bucket of every
// timer_start with package wheel. The tmigr check feeds the traced inputs of
// the migration hierarchy (CPUs going idle and active, new timers on idle
// CPUs, remote expiry rounds) into package hier on the topology the trace
// describes and compares every decision.
//
// A recording starts in the middle of a running system: timers armed before
// it began, group states, and base clocks are not in it. What the trace
// cannot tell is reported as undetermined, apart from matched and
// mismatched; the replay never guesses.
package replay

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tmigr/tmigr/ftrace"
)

// Trace is a recording read into memory.
type Trace struct {
	File   string
	Header ftrace.Header
	Events []ftrace.Event
}

// ReadFile reads a whole ftrace text file.
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.File = path
	return t, nil
}

// Read reads a whole recording from r.
func Read(r io.Reader) (*Trace, error) {
	rd := ftrace.NewReader(r)
	t := &Trace{}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		t.Events = append(t.Events, ev)
	}
	t.Header = rd.Header()
	if len(t.Events) == 0 {
		return nil, errors.New("the trace holds no events")
	}
	return t, nil
}

// Counts is the outcome of one check over one trace.
type Counts struct {
	Checked      int        `json:"checked"`
	Matched      int        `json:"matched"`
	Undetermined int        `json:"undetermined"`
	Mismatches   []Mismatch `json:"mismatches,omitempty"`
}

// Mismatch is one kernel decision our model does not reproduce.
type Mismatch struct {
	Line   int    `json:"line"`
	Event  string `json:"event"`
	Kernel string `json:"kernel"`
	Model  string `json:"model"`
}

func (c *Counts) match()        { c.Checked++; c.Matched++ }
func (c *Counts) undetermined() { c.Checked++; c.Undetermined++ }
func (c *Counts) mismatch(m Mismatch) {
	c.Checked++
	c.Mismatches = append(c.Mismatches, m)
}

// Options selects the checks of Run and supplies what a trace without a
// "# machine:" line does not say.
type Options struct {
	Wheel, Tmigr bool
	// HZ overrides or supplies the tick rate (0: from the trace).
	HZ int
}

// Result is the outcome of the checks on one trace.
type Result struct {
	File  string  `json:"file"`
	Wheel *Counts `json:"wheel,omitempty"`
	Tmigr *Counts `json:"tmigr,omitempty"`
}

// Mismatched reports whether any check found a mismatch.
func (r *Result) Mismatched() bool {
	return r.Wheel != nil && len(r.Wheel.Mismatches) > 0 || r.Tmigr != nil && len(r.Tmigr.Mismatches) > 0
}

// Run runs the selected checks on a trace.
func Run(t *Trace, o Options) (*Result, error) {
	hz := o.HZ
	if hz == 0 && t.Header.Machine != nil {
		hz = t.Header.Machine.HZ
	}
	if hz <= 0 {
		return nil, errors.New("the trace has no \"# machine:\" line naming its HZ; give it with --hz")
	}
	r := &Result{File: t.File}
	if o.Wheel {
		c := CheckWheel(t, hz)
		r.Wheel = &c
	}
	return r, nil
}
