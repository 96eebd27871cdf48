package replay

import (
	"errors"
	"fmt"
)

// A Check compares one kind of the kernel's decisions with the model's
// over a whole trace: the wheel's buckets, the hierarchy's decisions, the
// idle path's nextevt, the sleepers' hrtimer modes, the CPUs timers are
// queued on. Run is an orchestrator over a list of them.
type Check interface {
	// Name names the check in Result.Checks and in what the user sees:
	// "wheel", "tmigr", "nextevt", "hrtimer", "placement".
	Name() string
	// Run checks the trace in holds. Nil Counts and no error: the trace
	// holds nothing the check decides (the hrtimer check on a trace
	// without sleepers).
	Run(in *Input) (*Counts, error)
}

// Input is what the checks consume: the trace and the machine it was
// recorded on, as the trace's "# machine:" line and Options tell it.
type Input struct {
	Trace *Trace
	// Shape is the machine; ShapeErr why it could not be told, the error
	// of every check that needs it (the wheel check needs only HZ).
	Shape    Shape
	ShapeErr error
	// Invariants runs the hierarchy's invariant checker in the tmigr
	// check (TmigrOptions.Invariants).
	Invariants bool

	facts *facts // what the checks read alike, found once (factsOf)
}

// factsOf returns the facts of the trace in holds, found once for all the
// checks run on in.
func (in *Input) factsOf() *facts {
	if in.facts == nil || in.facts.t != in.Trace {
		in.facts = newFacts(in.Trace)
	}
	return in.facts
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name string
	*Counts
}

// Checks returns the checks o selects, in the order Run runs them and
// Result.Checks lists them.
func (o Options) Checks() []Check {
	var l []Check
	if o.Wheel {
		l = append(l, wheelCheck{})
	}
	if o.Tmigr {
		l = append(l, tmigrCheck{}, nextevtCheck{})
	}
	if o.Hrtimer {
		l = append(l, hrtimerCheck{})
	}
	if o.Placement {
		l = append(l, placementCheck{})
	}
	return l
}

type (
	wheelCheck     struct{}
	tmigrCheck     struct{}
	nextevtCheck   struct{}
	hrtimerCheck   struct{}
	placementCheck struct{}
)

func (wheelCheck) Name() string     { return "wheel" }
func (tmigrCheck) Name() string     { return "tmigr" }
func (nextevtCheck) Name() string   { return "nextevt" }
func (hrtimerCheck) Name() string   { return "hrtimer" }
func (placementCheck) Name() string { return "placement" }

func (wheelCheck) Run(in *Input) (*Counts, error) {
	c := checkWheel(in.factsOf(), in.Shape.HZ)
	return &c, nil
}

func (tmigrCheck) Run(in *Input) (*Counts, error) {
	return onMachine(in, func(f *facts, s Shape) (Counts, error) {
		return checkTmigr(f, s, TmigrOptions{Invariants: in.Invariants})
	})
}

func (nextevtCheck) Run(in *Input) (*Counts, error) {
	return onMachine(in, func(f *facts, s Shape) (Counts, error) {
		c, _, err := runNextevt(f, s)
		return c, err
	})
}

func (hrtimerCheck) Run(in *Input) (*Counts, error) {
	var l Load
	if m := in.Trace.Header.Machine; m != nil {
		var err error
		if l, err = LoadOf(m); err != nil {
			return nil, err
		}
	}
	return checkHrtimer(in.factsOf(), l)
}

func (placementCheck) Run(in *Input) (*Counts, error) { return onMachine(in, checkPlacement) }

// onMachine runs a check of the machine the trace was recorded on, which
// fails where the trace and Options do not tell the machine.
func onMachine(in *Input, check func(*facts, Shape) (Counts, error)) (*Counts, error) {
	if in.ShapeErr != nil {
		return nil, in.ShapeErr
	}
	c, err := check(in.factsOf(), in.Shape)
	return &c, err
}

// Run runs the checks o selects on a trace.
func Run(t *Trace, o Options) (*Result, error) {
	in := &Input{Trace: t, Invariants: o.Check}
	in.Shape, in.ShapeErr = shapeOf(t, o)
	if in.ShapeErr != nil && o.Tmigr {
		return nil, in.ShapeErr
	}
	if x := in.factsOf().index(); in.ShapeErr == nil && (x.minCPU < 0 || x.maxCPU >= in.Shape.CPUs) {
		// An event of a CPU the machine does not have would be dropped
		// by the checks without a word: the first one is named.
		for ei := range t.Events {
			ev := &t.Events[ei]
			if ev.CPU < 0 {
				return nil, fmt.Errorf("line %d: an event of CPU %d", ev.Line, ev.CPU)
			}
			if ev.CPU >= in.Shape.CPUs {
				return nil, fmt.Errorf("line %d: an event of CPU %d, beyond the machine's CPUs 0-%d: give its possible CPUs with --cpus", ev.Line, ev.CPU, in.Shape.CPUs-1)
			}
		}
	}
	if in.Shape.HZ <= 0 {
		return nil, errors.New("the trace has no \"# machine:\" line naming its HZ; give it with --hz")
	}
	r := &Result{File: t.File}
	for _, ch := range o.Checks() {
		c, err := ch.Run(in)
		if err != nil {
			return nil, err
		}
		if c != nil {
			r.add(ch.Name(), c.forJSON())
		}
	}
	return r, nil
}
