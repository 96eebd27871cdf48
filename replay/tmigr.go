package replay

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
)

// Why a decision is undetermined: the texts of the reasons (reasons.go), as
// counted in Counts.UndeterminedReasons.
const (
	whyBefore    = "state from before the recording"
	whyFirst     = "first transition of the group"
	whyEvent     = "event from before the recording"
	whyWakeup    = "wakeup from before the recording"
	whyOpaque    = "CPU whose transitions are not traced"
	whyNow       = "now between two jiffies"
	whyNoClock   = "no jiffies to ns mapping"
	whyRefetch   = "re-fetched expiry not in the trace"
	whyLost      = "events lost"
	whyMissing   = "operation missing from the trace"
	whyRace      = "new timer during a remote expiry of its CPU"
	whyPartial   = "operation cut by the recording"
	whyDiverged  = "earlier mismatch"
	whyOrder     = "round before or after a walk, order not printed"
	whyOffline   = "CPU offline"
	whyClaim     = "round read its wakeup before a claim reset it, order not printed"
	whyClaimRead = "claim read the wakeup before its CPU's round wrote it, order not printed"
	whyLate      = "event of a CPU silent in the recording, due after its end"
)

// CheckTmigr replays the hierarchy's inputs of a trace through package hier
// on the machine s describes and compares every decision (see the package
// documentation). The error is for a trace the replay cannot model at all
// (a shape hier rejects).
func CheckTmigr(t *Trace, s Shape) (Counts, error) {
	return CheckTmigrWith(t, s, TmigrOptions{})
}

// TmigrOptions modifies the tmigr check.
type TmigrOptions struct {
	// Invariants runs the hierarchy's invariant checker (hier.Check) after
	// every operation the replay drives, at quiescent points: a broken
	// invariant stops the check with an error naming the trace line.
	Invariants bool
}

// CheckTmigrWith is CheckTmigr with options.
func CheckTmigrWith(t *Trace, s Shape, o TmigrOptions) (Counts, error) {
	return checkTmigr(newFacts(t), s, o)
}

func checkTmigr(f *facts, s Shape, o TmigrOptions) (Counts, error) {
	t := f.t
	km, err := s.model()
	if err != nil {
		return Counts{}, err
	}
	if !km.Has(kernel.PullHierarchy) {
		return noHierarchy(t), nil
	}
	opts, err := s.hierOptions()
	if err != nil {
		return Counts{}, err
	}
	r, err := newReplayer(f, s, opts)
	if err != nil {
		return Counts{}, err
	}
	r.invariants = o.Invariants
	r.run()
	if r.invErr != nil {
		return r.c, r.invErr
	}
	return r.c, nil
}

// noHierarchy is the tmigr check under a kernel without the hierarchy
// (before 7ee988770326, 6.9): it prints no timer_migration event, so every
// one the trace holds is a decision that model contradicts. A recording of
// such a kernel holds none, and the check has nothing to decide.
func noHierarchy(t *Trace) Counts {
	c := t.counts()
	for ei := range t.Events {
		ev := &t.Events[ei]
		if ev.Data != nil && ftrace.IsTmigr(ev.Data) {
			c.mismatch(Mismatch{Line: ev.Line, Event: ev.Name, Kernel: "printed",
				Model: "no timer-migration hierarchy before 6.9 (7ee988770326): never printed"})
		}
	}
	return c
}

func newReplayer(f *facts, s Shape, opts hier.Options) (*replayer, error) {
	t := f.t
	r := &replayer{ev: t.Events, x: f.index(), c: t.counts(), rec: &recorder{}, members: members{nohzFull: opts.Isolation.NohzFull, busy: s.Busy}}
	km, err := s.model()
	if err != nil {
		return nil, err
	}
	r.km = km
	r.iso = opts.Isolation
	if err := r.planChanges(s, t); err != nil {
		return nil, err
	}
	r.boot = startsAtBoot(t.Events)
	r.startTS = firstEventTS(t.Events)
	m, err := newModel(opts, r.rec, r.boot)
	if err != nil {
		return nil, err
	}
	r.m, r.topo = m, m.topo
	r.gk, r.gev, r.seen, r.startTie = sized[reason](r.topo), sized[reason](r.topo), sized[bool](r.topo), sized[bool](r.topo)
	r.exclude = opts.ExcludeIsolated
	r.rec.onUpdate = r.onUpdate
	r.rec.onActive = func(g hier.GroupID) { *r.gev.at(g) = known }
	r.rec.onCAS = r.onCAS
	r.rec.onRemote = r.onRemote
	r.rec.onPoint = r.onPoint
	r.later, r.lastRound, r.tiedBefore = map[int][2]int64{}, map[int]roundWrite{}, map[int]int{}
	r.rec.onRemoteCPU = func(cpu int) reason {
		// The target's wakeup is reset to KTIME_MAX: known from now on.
		why := r.wk[cpu]
		r.wk[cpu] = known
		return why
	}
	n := s.CPUs
	r.ek, r.wk, r.opaque, r.qpos = make([]reason, n), make([]reason, n), make([]bool, n), make([]bool, n)
	r.evSet, r.evBefore = make([]bool, n), make([]reason, n)
	r.late = make([]bool, n)
	// The recording ends at its last event (a window's markers may lie
	// beyond it); a claim comes up to a jiffy after the event it claims
	// (the migrator's next tick), and its line after that.
	for i := len(t.Events) - 1; i >= 0; i-- {
		if _, mark := t.Events[i].Data.(ftrace.TracingMark); !mark {
			r.lateFrom = t.Events[i].TS - int64(time.Second)/int64(s.HZ)
			break
		}
	}

	if h := t.Header.Hierarchy; h != nil {
		r.check(0, "boot line", known, h.String(), m.h.BootLine())
	}
	if m.topo == nil {
		return r, nil // a uniprocessor: no hierarchy, nothing to replay
	}
	r.ops = splitOps(t.Events)
	r.done = make([]bool, len(r.ops))
	r.walked = make([]bool, len(r.ops))
	r.clk = f.clock(s.HZ)
	r.gm = mapGroups(t, r.x, r.topo, r.ops)
	if r.gm.err != nil {
		r.c.mismatch(*r.gm.err)
		r.ops = nil
		return r, nil
	}
	r.orderTies(r.ops)
	r.findLost()
	if r.boot {
		// Every CPU joins the hierarchy in the recording.
		r.avail0 = make([]bool, n)
	} else {
		ms := r.findMembers()
		r.avail0 = r.checkMembers(ms)
		r.eventless()
		r.lostAtStart = make([]bool, n)
		for c, m := range ms {
			r.lostAtStart[c] = m.lost && m.in < 0
		}
	}
	r.findOpaque()
	r.wheel = wheelNext(t.Events, f.index(), r.ops, f.preexisting(r.clk), r.clk, r.boot, f.lastJiffies())
	if r.boot {
		// Everything is known: no group is active, no CPU has an event or
		// a wakeup, and the groups' first transitions start from that.
		for _, g := range r.topo.Groups {
			*r.seen.at(g) = true
		}
		return r, nil
	}
	if err := r.seedStart(); err != nil {
		return nil, err
	}
	return r, nil
}

// startsAtBoot reports whether the trace begins with the hierarchy's
// creation: its first tmigr line creates a group. The whole state is then
// known from the start.
func startsAtBoot(events []ftrace.Event) bool {
	for ei := range events {
		ev := &events[ei]
		switch ev.Data.(type) {
		case ftrace.TmigrGroupSet:
			return true
		case ftrace.Lost, ftrace.BufferStarted:
			return false
		}
		if ftrace.IsTmigr(ev.Data) {
			return false
		}
	}
	return false
}

// check counts one comparison.
func (r *replayer) check(line int, event string, why reason, kernel, model string) {
	switch {
	case why != known:
		r.c.undeterminedBy(line, why)
	case kernel == model:
		r.c.match(line)
	default:
		r.c.mismatch(Mismatch{Line: line, Event: event, Kernel: kernel, Model: model})
	}
}

// decide counts one comparison whose outcome is ok, with the two sides
// described for a mismatch.
func (r *replayer) decide(line int, event string, why reason, ok bool, kernel, model string) {
	switch {
	case why != known:
		r.c.undeterminedBy(line, why)
	case ok:
		r.c.match(line)
	default:
		r.c.mismatch(Mismatch{Line: line, Event: event, Kernel: kernel, Model: model})
	}
}

// checkNS is check of two times (nanoseconds, or KTIME_MAX), formatted
// only for a mismatch.
// lateWhy is why, or reasonLate where why is known and the kernel's value,
// lower than the model's, lies at lateFrom or later: it may be the event
// of a silent CPU (knowledge.late), which the model leaves out.
func (r *replayer) lateWhy(why reason, kernel, model int64) reason {
	if why == known && r.anyLate && kernel < model && kernel >= r.lateFrom {
		return reasonLate
	}
	return why
}

func (r *replayer) checkNS(line int, event string, why reason, kernel, model int64) {
	k, m := "", ""
	if why == known && kernel != model {
		k, m = fmtNS(kernel), fmtNS(model)
	}
	r.decide(line, event, why, kernel == model, k, m)
}

func fmtNS(v int64) string {
	if v == hier.KtimeMax {
		return "max"
	}
	return strconv.FormatInt(v, 10)
}

func lowest(m uint8) uint8 {
	if m == 0 {
		return hier.MigratorNone
	}
	return 1 << bits.TrailingZeros8(m)
}
