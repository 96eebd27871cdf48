package conformance

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/migrators"
	"github.com/tmigr/tmigr/replay"
)

// The prediction check: what the kernel's rules determine about who may
// pull (package migrators) against what the recording shows.
//
// The prediction is computed from the recording's machine line alone (its
// shape, kernel, command line, busy CPUs and run-time changes), one per
// configuration (at=). The check reads the recording's remote expiries as
// ExtractStructure does (the handler is the CPU that logs
// tmigr_handle_remote_cpu, the level that of its latest tmigr_handle_remote
// line) and requires of each pull of another CPU's timers that its handler
// be among the handlers of the configuration in effect and among the
// candidates of the group it pulled at.
//
// The prediction is of the steady state, in which a group with an
// always-active child has one of them as migrator. Before it, a CPU that
// held the role keeps it while it stays active and hands it on by the
// lowest bit (tmigr_active_up, tmigr_inactive_up): a busy loop started
// while the recording ran, or a partition that withdrew the migrator, leave
// the role with another CPU for a while. The check follows each group's
// migrator through the recording's tmigr_group_set_cpu_active and
// tmigr_group_set_cpu_inactive lines (group state after each change: its
// migrator's bit), mapped onto the model's groups by the CPU that walked
// and its child bit; a pull by another CPU at a group not yet seen with
// an always-active migrator in the current configuration is history, and
// is listed as such, not counted against the prediction.

// PredictionCheck is the prediction for a recording's machine and whether
// the recording keeps to it.
type PredictionCheck struct {
	// Handlers are the CPUs that may run other CPUs' timers (in some
	// configuration of the recording), Never the others.
	Handlers cpumask.Mask `json:"handlers"`
	Never    cpumask.Mask `json:"never"`
	// Always are the always-active CPUs at the start; Groups the groups'
	// candidates at the start.
	Always cpumask.Mask      `json:"always_active"`
	Groups []migrators.Group `json:"groups"`
	// Phases are the configurations after each change (at=), when there
	// are any.
	Phases []migrators.Phase `json:"phases,omitempty"`
	// Note says what the prediction is when there is no hierarchy.
	Note string `json:"note,omitempty"`

	// Pullers are the CPUs that ran another CPU's timers in the
	// recording (its own timers, a CPU woken for its own event, are left
	// out).
	Pullers cpumask.Mask `json:"pullers"`
	// History are the pulls by CPUs the steady state rules out, made at a
	// group not yet seen with an always-active migrator.
	History []CheckedPull `json:"history,omitempty"`
	// Contradictions are the pulls the rules rule out in the steady
	// state; Outside their handlers.
	Contradictions []CheckedPull `json:"contradictions,omitempty"`
	Outside        cpumask.Mask  `json:"outside"`
	// Unmapped says why the recording's groups could not be followed
	// (then no pull counts as history).
	Unmapped string `json:"unmapped,omitempty"`
	// OK: no contradiction.
	OK bool `json:"ok"`
}

// CheckedPull is a pull of the check: how often Handler ran Target's
// timers at Group (level Level; "" and -1 when the round's start was not
// recorded), and why it is listed.
type CheckedPull struct {
	Handler int    `json:"handler"`
	Target  int    `json:"target"`
	Level   int    `json:"level"`
	Group   string `json:"group,omitempty"`
	Count   int    `json:"count"`
	Why     string `json:"why"`
}

// CheckPrediction predicts the steady state of the recording's machine and
// checks the recording's pulls against it.
func CheckPrediction(t *replay.Trace) (*PredictionCheck, error) {
	m := t.Header.Machine
	if m == nil {
		return nil, fmt.Errorf("the trace has no \"# machine:\" line")
	}
	km, err := modelOf(m.Kernel)
	if err != nil {
		return nil, err
	}
	tl, err := migrators.ForMachine(m, km)
	if err != nil {
		return nil, err
	}
	start := tl.Start()
	c := &PredictionCheck{Handlers: tl.Handlers, Never: tl.Never, Always: start.Always, Groups: start.Groups}
	if !start.Hierarchy {
		c.Note = start.Why
	}
	if len(tl.Phases) > 1 {
		c.Phases = tl.Phases
	}
	c.follow(t.Events, tl, replay.ChangesStart(t.Events), changeBegins(m, tl))
	return c, nil
}

// changeBegins returns, for each phase of tl after the first, the time
// (from the start) its change may have begun taking effect: the previous
// change's time, made or refused, of any kind. A change's time says when
// it was done; its effects lie between the two (an isolated partition of
// busy vCPUs takes seconds under QEMU TCG), as the replay reads them
// (replay/changes.go).
func changeBegins(m *ftrace.Machine, tl *migrators.Timeline) []time.Duration {
	begins := make([]time.Duration, len(tl.Phases))
	for k := 1; k < len(tl.Phases); k++ {
		at := tl.Phases[k].At
		for _, l := range [][]ftrace.Change{m.At, m.Refused} {
			for _, ch := range l {
				if ch.At < at {
					begins[k] = max(begins[k], ch.At)
				}
			}
		}
	}
	return begins
}

// follow reads the recording's pulls and group states in order. Between
// a change's begin and its time the kernel may be in the configuration
// before it or after it: there a pull either allows is no contradiction.
func (c *PredictionCheck) follow(events []ftrace.Event, tl *migrators.Timeline, start int64, begins []time.Duration) {
	phase := 0
	p := tl.Phases[0].Prediction
	steady := map[string]bool{} // groups seen with an always-active migrator in this phase
	ptr := map[uint64]string{}  // the recording's group pointers, as model groups
	level := map[int]int{}      // by handler: the level of its latest round line
	type key struct {
		h, t, l int
		history bool
		why     string
	}
	counts := map[key]int{}
	unmapped := func(format string, args ...any) {
		if c.Unmapped == "" {
			c.Unmapped = fmt.Sprintf(format, args...)
		}
	}
	for i := range events {
		ev := &events[i]
		for phase+1 < len(tl.Phases) && ev.TS >= start+int64(tl.Phases[phase+1].At) {
			phase++
			p = tl.Phases[phase].Prediction
			clear(steady)
		}
		// The next configuration, where its change may have begun.
		var next *migrators.Prediction
		if phase+1 < len(tl.Phases) && ev.TS >= start+int64(begins[phase+1]) {
			next = tl.Phases[phase+1].Prediction
		}
		var gs *ftrace.TmigrGroupAndCPU
		switch d := ev.Data.(type) {
		case ftrace.TmigrGroupSetCPUActive:
			g := ftrace.TmigrGroupAndCPU(d)
			gs = &g
		case ftrace.TmigrGroupSetCPUInactive:
			g := ftrace.TmigrGroupAndCPU(d)
			gs = &g
		case ftrace.TmigrHandleRemote:
			level[ev.CPU] = d.Lvl
		case ftrace.TmigrHandleRemoteCPU:
			h, tg := ev.CPU, d.CPU
			if h == tg {
				continue
			}
			c.Pullers.Set(h)
			l, known := level[h]
			if !known {
				l = -1
			}
			path := p.Path(h)
			var g *migrators.Group
			if l >= 0 && l < len(path) {
				g = path[l]
			}
			if allows(p, h, l) {
				if g != nil && g.Always {
					steady[g.Name] = true // its migrator is an always-active child
				}
				continue
			}
			if next != nil && allows(next, h, l) {
				continue
			}
			k := key{h: h, t: tg, l: l}
			// History: some always-active group on the way is not yet
			// seen in its steady state.
			for _, pg := range path {
				if (g == nil || pg.Level <= g.Level) && pg.Always && !steady[pg.Name] && !pg.Candidates.Test(h) &&
					c.Unmapped == "" && p.Available.Test(h) {
					k.history = true
					k.why = fmt.Sprintf("before %s was seen with an always-active migrator", pg.Name)
					break
				}
			}
			if !k.history {
				switch {
				case !p.Available.Test(h):
					k.why = "the CPU is out of the hierarchy"
				case g != nil && !g.Candidates.Test(h):
					k.why = fmt.Sprintf("not a candidate migrator of %s (%s)", g.Name, g.Candidates)
				default:
					k.why = "not among the handlers"
				}
			}
			counts[k]++
		}
		if gs == nil || c.Unmapped != "" {
			continue
		}
		path := p.Path(ev.CPU)
		if gs.Lvl >= len(path) && next != nil {
			// A CPU its change brought back, in the change's window.
			path = next.Path(ev.CPU)
		}
		if gs.Lvl < 0 || gs.Lvl >= len(path) {
			unmapped("CPU %d changed a group of level %d, which the model does not have on its path", ev.CPU, gs.Lvl)
			continue
		}
		g := path[gs.Lvl]
		bit := -1
		for b, k := range g.Children {
			if gs.Lvl == 0 && k.CPU == ev.CPU || gs.Lvl > 0 && k.Group == path[gs.Lvl-1].Name {
				bit = b
			}
		}
		if bit < 0 || gs.Childmask != 1<<bit {
			unmapped("CPU %d walked %s with childmask %#x, the model's bit is %d", ev.CPU, g.Name, gs.Childmask, bit)
			continue
		}
		if name, ok := ptr[gs.Group]; ok && name != g.Name {
			unmapped("group %#x is %s and %s", gs.Group, name, g.Name)
			continue
		}
		ptr[gs.Group] = g.Name
		steady[g.Name] = false
		if gs.Migrator != 0xff && gs.Migrator != 0 {
			if b := bits.TrailingZeros8(gs.Migrator); b < len(g.Children) {
				steady[g.Name] = g.Children[b].Always
			}
		}
	}
	for k, n := range counts {
		cp := CheckedPull{Handler: k.h, Target: k.t, Level: k.l, Count: n, Why: k.why}
		if path := p.Path(k.h); k.l >= 0 && k.l < len(path) {
			cp.Group = path[k.l].Name
		}
		if k.history {
			c.History = append(c.History, cp)
		} else {
			c.Contradictions = append(c.Contradictions, cp)
			c.Outside.Set(k.h)
		}
	}
	for _, l := range [][]CheckedPull{c.History, c.Contradictions} {
		sort.Slice(l, func(i, j int) bool {
			a, b := l[i], l[j]
			if a.Handler != b.Handler {
				return a.Handler < b.Handler
			}
			if a.Level != b.Level {
				return a.Level < b.Level
			}
			return a.Target < b.Target
		})
	}
	c.OK = len(c.Contradictions) == 0
}

// Text is the check in a few lines, as lab compare prints it.
func (c *PredictionCheck) Text() string {
	var b strings.Builder
	list := func(m cpumask.Mask) string {
		if m.Empty() {
			return "none"
		}
		return m.String()
	}
	b.WriteString("  prediction (the kernel's rules, from the machine line")
	if len(c.Phases) > 1 {
		fmt.Fprintf(&b, ", over %d configurations: the start", len(c.Phases))
		for _, ph := range c.Phases[1:] {
			fmt.Fprintf(&b, ", from %s", ph.Change)
		}
	}
	b.WriteString("): ")
	if c.Note != "" {
		fmt.Fprintf(&b, "%s; ", c.Note)
	}
	fmt.Fprintf(&b, "CPUs that may run other CPUs' timers %s, never %s\n", list(c.Handlers), list(c.Never))
	var groups []string
	for _, g := range c.Groups {
		if g.Pulls() {
			kind := "when awake"
			if g.Always {
				kind = "always"
			}
			groups = append(groups, fmt.Sprintf("%s %s <- %s (%s)", g.Name, g.Candidates, g.From, kind))
		}
	}
	if len(groups) > 0 {
		fmt.Fprintf(&b, "  migrators that pull (candidates <- CPUs pulled from): %s\n", strings.Join(groups, "; "))
	}
	steady := c.Pullers
	for _, h := range c.History {
		steady.Clear(h.Handler)
	}
	steady = steady.Or(c.Outside)
	switch {
	case c.Pullers.Empty():
		b.WriteString("  check: no CPU ran another CPU's timers in the recording\n")
	case c.OK && steady.Empty():
		b.WriteString("  check: every pull came before the steady state\n")
	case c.OK:
		fmt.Fprintf(&b, "  check: the kernel's pullers %s, all among the candidates\n", list(steady))
	default:
		fmt.Fprintf(&b, "  check: CONTRADICTED: %s ran other CPUs' timers where the rules rule it out:\n", list(c.Outside))
		for _, p := range c.Contradictions {
			fmt.Fprintf(&b, "    %s\n", p.String())
		}
	}
	if len(c.History) > 0 {
		b.WriteString("  history (before the steady state, not counted):\n")
		for _, p := range c.History {
			fmt.Fprintf(&b, "    %s\n", p.String())
		}
	}
	if c.Unmapped != "" {
		fmt.Fprintf(&b, "  (the recording's groups could not be followed: %s)\n", c.Unmapped)
	}
	return b.String()
}

// String prints a checked pull: "CPU 0 ran CPU 2's timers 6 times at
// GRP0:0: before GRP0:0 was seen ...".
func (p CheckedPull) String() string {
	where := " (level unknown)"
	if p.Group != "" {
		where = " at " + p.Group
	} else if p.Level >= 0 {
		where = fmt.Sprintf(" at level %d", p.Level)
	}
	return fmt.Sprintf("CPU %d ran CPU %d's timers %s%s: %s", p.Handler, p.Target, timesOf(p.Count), where, p.Why)
}

func timesOf(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// allows reports whether prediction p lets CPU h run another CPU's timers
// at level l of its path (-1: unknown).
func allows(p *migrators.Prediction, h, l int) bool {
	if !p.Handlers.Test(h) {
		return false
	}
	path := p.Path(h)
	return l < 0 || l >= len(path) || path[l].Candidates.Test(h)
}
