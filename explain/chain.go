package explain

import (
	"fmt"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// The chain of an expiry, step by step. Each step states what the trace
// shows, with its line, or that it cannot show it and why; the rules
// applied are the kernel's (kernel/time/timer.c, timer_migration.c):
//
//   - a timer is queued on the base of the CPU that arms it (add_timer_on
//     names another); TIMER_PINNED ones go to its local base, deferrable
//     ones to its deferrable base, the others to its global base;
//   - a CPU's timer softirq runs its own three bases, then, in the
//     hierarchy, tmigr_handle_remote: it walks its path while it is the
//     migrator of the group below (or the group has none: the last CPU
//     awake), and for every idle CPU whose event in a group's queue is
//     due, runs that CPU's global base (tmigr_handle_remote_cpu);
//   - an idle CPU publishes its first global event in its level-0 group;
//     a group without an active child passes its first event up;
//   - a child becoming active takes a group's migrator role only when the
//     group has none; a migrator going idle hands it to the lowest active
//     child;
//   - isolated (isolcpus domain) CPUs stay in the hierarchy until 6.19,
//     which takes them out, nohz_full CPUs and the nohz timekeeper
//     excepted (package kernel: exclude-isolated, 7dec062cfcf2).

// ownerSteps says whose timer it was and how it was armed. In a local
// softirq it decides the owner; ctx is the remote expiry it ran in, if
// any.
func (b *builder) ownerSteps(x *Expiry, p ftrace.TimerExpireEntry, ctx *remoteCtx) []Step {
	h, st := x.Handler, x.Start
	var out []Step
	add := func(s Step) {
		if s.Kind == "" {
			s.Kind = StepOwner
		}
		out = append(out, s)
	}
	if ctx == nil {
		c := &b.cpus[h]
		switch {
		case st != nil && st.Base != h:
			x.Owner, x.Kind = -1, UnknownOwner
			why := whyDisagree
			if c.lost != 0 {
				why = whyLost
			}
			add(Step{Line: st.Line, TS: st.TS, CPU: st.Base, Undetermined: why, Text: fmt.Sprintf(
				"its last timer_start (%s, line %d) queued it on CPU %d's base, yet it expired in CPU %d's own timer softirq, outside any remote round the recording shows, so whose base held it the trace does not tell",
				ftrace.FormatTS(st.TS)+" s", st.Line, st.Base, h)})
			return out
		case c.lost != 0:
			x.Owner, x.Kind = -1, UnknownOwner
			add(Step{Line: c.lost, TS: -1, CPU: h, Undetermined: whyLost, Text: fmt.Sprintf(
				"events of CPU %d were lost before it (line %d): it may have run in a remote round whose start is lost, so whose timer it was the trace does not tell", h, c.lost)})
			return out
		case st == nil && !c.printed && x.TS-b.firstTS <= b.tick:
			x.Owner, x.Kind = -1, UnknownOwner
			add(Step{TS: -1, CPU: h, Undetermined: whyPartial, Text: fmt.Sprintf(
				"the recording begins inside CPU %d's timer softirq: this may be the end of a remote round, so whose timer it was the trace does not tell", h)})
			return out
		}
		if st == nil {
			add(Step{TS: -1, CPU: h, Undetermined: whyUnarmed, Text: fmt.Sprintf(
				"it expired in CPU %d's own timer softirq, outside any remote round, so it sat on CPU %d's own base; its timer_start is not in the recording (it was armed before the recording began), so who armed it, and whether it is pinned or deferrable, the trace does not tell", h, h)})
			return out
		}
		add(Step{Line: st.Line, TS: st.TS, CPU: st.CPU, Text: armed(st, true, !b.pull)})
		if st.Flags&ftrace.TimerDeferrable != 0 {
			add(deferrable(st, p, b.tick))
		}
		return out
	}
	o := x.Owner
	if o == h {
		// A round of the hierarchy's last CPU awake, expiring its own
		// global base (remote-self-expiry, 7.1 and the stable kernels
		// that carry it).
		if st == nil {
			add(Step{TS: -1, CPU: h, Undetermined: whyUnarmed, Text: fmt.Sprintf(
				"it sat on CPU %d's own global base (its timer_start is before the recording)", h)})
		} else {
			add(Step{Line: st.Line, TS: st.TS, CPU: st.CPU, Text: armed(st, true, !b.pull)})
		}
		return out
	}
	if st == nil {
		add(Step{TS: -1, CPU: o, Text: fmt.Sprintf(
			"it was CPU %d's: its timer_start is not in the recording (it was armed before the recording began), but a remote round runs only the target's global base, so it was neither pinned nor deferrable", o)})
		return out
	}
	add(Step{Line: st.Line, TS: st.TS, CPU: st.CPU, Text: armed(st, false, !b.pull)})
	switch {
	case st.Base != o:
		why := whyDisagree
		if b.cpus[st.Base].lost != 0 || b.cpus[o].lost != 0 {
			why = whyLost
		}
		add(Step{Kind: StepAnomaly, Line: st.Line, TS: st.TS, CPU: st.Base, Undetermined: why, Text: fmt.Sprintf(
			"yet the round expires CPU %d's base, not CPU %d's: the lines that moved it are not in the trace", o, st.Base)})
	case st.Flags&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0:
		add(Step{Kind: StepAnomaly, Line: st.Line, TS: st.TS, CPU: o, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"a %s timer never migrates: it sits on CPU %d's %s base, and a remote round runs only the global base (timer_expire_remote), so the lines that re-armed it are not in the trace",
			flagWord(st.Flags), o, baseWord(st.Flags))})
	}
	return out
}

// armed describes a timer_start; own: the CPU ran its own timer; push:
// the kernel predates 6.9, whose mod_timer may queue a timer on another CPU.
func armed(st *Start, own, push bool) string {
	var b strings.Builder
	switch {
	case st.CPU != st.Base && push && st.Flags&ftrace.TimerPinned == 0:
		fmt.Fprintf(&b, "CPU %d armed it at %s (line %d) and the kernel queued it on CPU %d's base: before 6.9, mod_timer on an idle CPU queues a timer that is not pinned on a busy one (get_nohz_timer_target, push-at-enqueue)", st.CPU, ftrace.FormatTS(st.TS)+" s", st.Line, st.Base)
	case st.CPU != st.Base:
		fmt.Fprintf(&b, "CPU %d queued it on CPU %d's base at %s (line %d; add_timer_on names the CPU)", st.CPU, st.Base, ftrace.FormatTS(st.TS)+" s", st.Line)
	case own:
		fmt.Fprintf(&b, "CPU %d armed it itself at %s (line %d)", st.CPU, ftrace.FormatTS(st.TS)+" s", st.Line)
	default:
		fmt.Fprintf(&b, "CPU %d armed it at %s (line %d)", st.CPU, ftrace.FormatTS(st.TS)+" s", st.Line)
	}
	if st.HardIRQ {
		b.WriteString(" in hard interrupt context")
	}
	switch {
	case st.Flags&ftrace.TimerPinned != 0 && st.Flags&ftrace.TimerDeferrable != 0:
		b.WriteString(", pinned and deferrable: it never leaves that CPU")
	case st.Flags&ftrace.TimerPinned != 0:
		b.WriteString(", pinned: it stays on that CPU")
	case st.Flags&ftrace.TimerDeferrable != 0:
		b.WriteString(", deferrable: it stays on that CPU's deferrable base")
	case own:
		b.WriteString(", a global timer, which runs where it is queued while that CPU is awake")
	default:
		b.WriteString(", a global timer, which a migrator may run while its CPU is idle")
	}
	return b.String()
}

func flagWord(f ftrace.TimerFlags) string {
	if f&ftrace.TimerPinned != 0 {
		return "pinned"
	}
	return "deferrable"
}

func baseWord(f ftrace.TimerFlags) string {
	if f&ftrace.TimerDeferrable != 0 {
		return "deferrable"
	}
	return "local"
}

// deferrable says when a deferrable timer ran: at the CPU's next tick,
// since an idle CPU does not wake for it.
func deferrable(st *Start, p ftrace.TimerExpireEntry, tick int64) Step {
	s := Step{Kind: StepDeferrable, Line: st.Line, TS: st.TS, CPU: st.Base}
	if p.Now < st.Expires {
		s.Undetermined = whyDisagree
		s.Text = fmt.Sprintf("deferrable, yet it ran at jiffy %d, before its expiry at jiffy %d", p.Now, st.Expires)
		return s
	}
	late := p.Now - st.Expires
	if late == 0 {
		s.Text = "deferrable timers never migrate and run at the CPU's tick; it ran at the tick it expired at"
		return s
	}
	s.Text = fmt.Sprintf("deferrable timers never migrate and never wake an idle CPU: it ran at the CPU's next tick, jiffy %d, %d ticks (%s) after it expired", p.Now, late, fmtDur(int64(late)*tick))
	return s
}

// chain writes the decisions that brought a target's timers to the
// handler of a round, at its tmigr_handle_remote_cpu line.
func (b *builder) chain(e ftrace.Event, p ftrace.TmigrHandleRemoteCPU, r *round) []Step {
	h, t := e.CPU, p.CPU
	tc := &b.cpus[t]
	var out []Step
	add := func(s Step) { out = append(out, s) }

	// The owner was idle, and had published its event.
	if tc.out {
		add(Step{Kind: StepAnomaly, TS: -1, CPU: t, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"CPU %d had left the hierarchy, and a round skips such a CPU", t)})
	}
	switch tc.idle {
	case 1:
		add(Step{Kind: StepIdle, Line: tc.sinceLine, TS: tc.since, CPU: t, Text: fmt.Sprintf("CPU %d was idle since %s", t, ftrace.FormatTS(tc.since)+" s")})
	case 0:
		add(Step{Kind: StepIdle, Line: tc.sinceLine, TS: tc.since, CPU: t, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"the trace shows CPU %d active since %s (line %d), though a round expires only an idle CPU's event", t, ftrace.FormatTS(tc.since)+" s", tc.sinceLine)})
	default:
		s := Step{Kind: StepIdle, TS: -1, CPU: t, Undetermined: whyBefore, Text: fmt.Sprintf("CPU %d was idle (the round ran its timers), since before the recording began", t)}
		switch {
		case tc.lost != 0:
			s.Line, s.Undetermined = tc.lost, whyLost
			s.Text = fmt.Sprintf("CPU %d was idle (the round ran its timers); since when, events lost at line %d hide", t, tc.lost)
		case !b.isTraced(t):
			s.Undetermined = whyOpaque
			s.Text = fmt.Sprintf("CPU %d was idle (the round ran its timers); its own idle transitions are not in the trace", t)
		}
		add(s)
	}
	g0 := b.g.name(p.Parent)
	switch {
	case tc.evtKnown && tc.evt == ftrace.KtimeMax:
		add(Step{Kind: StepEvent, Line: tc.evtLine, TS: -1, CPU: t, Group: g0, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"it had published no global event in %s (line %d), yet the round found one", g0, tc.evtLine)})
	case tc.evtKnown:
		add(Step{Kind: StepEvent, Line: tc.evtLine, TS: tc.evt, CPU: t, Group: g0, Text: fmt.Sprintf(
			"it had published its first global event, due at %s, in %s", fmtKtime(tc.evt), g0)})
	default:
		why := whyEvent
		if tc.lost != 0 {
			why = whyLost
		}
		add(Step{Kind: StepEvent, TS: -1, CPU: t, Group: g0, Undetermined: why, Text: fmt.Sprintf(
			"it had published its event in %s before the recording shows it", g0)})
	}

	// The round, and where it found the event.
	if len(r.visits) == 0 {
		why := whyPartial
		if b.cpus[h].lost != 0 {
			why = whyLost
		}
		add(Step{Kind: StepRound, Line: e.Line, TS: e.TS, CPU: h, Undetermined: why, Text: fmt.Sprintf(
			"CPU %d expired them in a remote round whose start is not in the trace, so in which group it found the event the trace does not tell", h)})
		return out
	}
	found := r.visits[len(r.visits)-1]
	names := make([]string, len(r.visits))
	for i, v := range r.visits {
		names[i] = b.g.name(v.group)
	}
	fg := b.g.name(found.group)
	rs := Step{Kind: StepRound, Line: r.line, TS: r.ts, CPU: h, Group: fg, Text: fmt.Sprintf(
		"CPU %d's timer softirq walked the hierarchy at %s (tmigr_handle_remote: %s) and found the event due in %s", h, ftrace.FormatTS(r.ts)+" s", joinAnd(names), fg)}
	if r.partial {
		rs.Text += " (the round's start is not in the trace)"
	}
	add(rs)
	if tg, ok := b.g.at(t, found.lvl); ok && tg != found.group {
		add(Step{Kind: StepAnomaly, Line: found.line, TS: -1, CPU: t, Group: fg, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"%s is not on CPU %d's path (its level-%d group is %s)", fg, t, found.lvl, b.g.name(tg))})
	} else if !ok {
		add(Step{Kind: StepAnomaly, TS: -1, CPU: t, Group: fg, Undetermined: whyNoTree, Text: fmt.Sprintf(
			"whether %s holds CPU %d the trace does not tell", fg, t)})
	}
	for k := 1; k <= found.lvl; k++ {
		add(b.propagated(t, k, found.group))
	}

	// The handler's roles on its way up.
	for i, v := range r.visits {
		subj, bit := fmt.Sprintf("CPU %d", h), b.g.bitOfCPU(h)
		if v.lvl > 0 {
			below, ok := b.g.at(h, v.lvl-1)
			if i > 0 {
				below, ok = r.visits[i-1].group, true
			}
			if !ok {
				continue
			}
			subj, bit = b.g.name(below), b.g.bitOfGroup(below)
		}
		add(b.role(h, v.group, subj, bit, v.lvl == 0))
	}
	return out
}

// propagated says that the owner's group at level k-1 passed its event up.
func (b *builder) propagated(t, k int, found uint64) Step {
	child, ok := b.g.at(t, k-1)
	parent, pok := b.g.at(t, k)
	if !pok {
		parent = found
	}
	if !ok {
		return Step{Kind: StepPropagated, TS: -1, CPU: t, Undetermined: whyNoTree, Text: fmt.Sprintf(
			"CPU %d's level-%d group passed the event up (which group that is, the trace does not tell)", t, k-1)}
	}
	cn, pn := b.g.name(child), b.g.name(parent)
	gs := b.state(child)
	switch {
	case gs != nil && gs.known && gs.active == 0:
		s := Step{Kind: StepPropagated, Line: gs.since.line, TS: gs.since.ts, CPU: t, Group: cn, Text: fmt.Sprintf(
			"%s had no active child %s, so its first event went up into %s", cn, b.sinceText(gs.since), pn)}
		if !gs.since.exact {
			s.Undetermined = gs.since.undet
		}
		return s
	case gs != nil && gs.known:
		return Step{Kind: StepPropagated, Line: gs.line, TS: gs.ts, CPU: t, Group: cn, Undetermined: whyDisagree, Text: fmt.Sprintf(
			"%s's event was in %s, though the trace's last state of %s (line %d) has active children (%x)", cn, pn, cn, gs.line, gs.active)}
	}
	why := whyBefore
	if gs != nil {
		why = gs.unknown
	}
	return Step{Kind: StepPropagated, TS: -1, CPU: t, Group: cn, Undetermined: why, Text: fmt.Sprintf(
		"%s had no active child, so its first event went up into %s (the trace shows no state of %s before)", cn, pn, cn)}
}

// role says what made the handler's child subj walk group g: its
// migrator role, or the group having none.
func (b *builder) role(h int, g uint64, subj string, bit uint8, cpuLevel bool) Step {
	name := b.g.name(g)
	gs := b.state(g)
	s := Step{Kind: StepMigrator, TS: -1, CPU: h, Group: name}
	switch {
	case gs == nil || !gs.known:
		s.Undetermined = whyBefore
		if gs != nil {
			s.Undetermined = gs.unknown
		}
		s.Text = fmt.Sprintf("%s acted as %s's migrator (only a group's migrator, or the last CPU awake when it has none, walks it), but the trace shows no state of %s before", subj, name, name)
	case bit == 0:
		s.Undetermined = whyNoTree
		s.Text = fmt.Sprintf("%s walked %s; which child of it %s is, the trace does not tell", subj, name, subj)
	case gs.migrator == bit:
		s.Line, s.TS = gs.since.line, gs.since.ts
		s.Text = fmt.Sprintf("%s was %s's migrator %s", subj, name, b.sinceText(gs.since))
		if !gs.since.exact {
			s.Undetermined = gs.since.undet
		}
	case gs.migrator == noMigrator:
		s.Line, s.TS = gs.since.line, gs.since.ts
		s.Text = fmt.Sprintf("%s had no migrator %s, and %s walked it as the last CPU to go idle", name, b.sinceText(gs.since), subj)
		if c := &b.cpus[h]; cpuLevel && c.idle == 1 && c.wakeup != ftrace.KtimeMax {
			s.Text += fmt.Sprintf(", woken by its wakeup at %s (line %d)", fmtKtime(c.wakeup), c.wakeLine)
		}
		if !gs.since.exact {
			s.Undetermined = gs.since.undet
		}
	default:
		other, _, ok := b.g.child(g, gs.migrator)
		if !ok {
			other = fmt.Sprintf("child %x", gs.migrator)
		}
		s.Line, s.TS, s.Undetermined = gs.line, gs.ts, whyDisagree
		s.Text = fmt.Sprintf("%s walked %s, whose migrator was %s by the trace's last state of it (line %d)", subj, name, other, gs.line)
	}
	return s
}

func (b *builder) sinceText(s since) string {
	if s.exact {
		return fmt.Sprintf("since %s (%s)", ftrace.FormatTS(s.ts)+" s", b.why(s))
	}
	return fmt.Sprintf("since %s or before (%s)", ftrace.FormatTS(s.ts)+" s", b.why(s))
}

// selfChain is a round in which the handler expires its own event: the
// hierarchy's last CPU awake.
func (b *builder) selfChain(e ftrace.Event, p ftrace.TmigrHandleRemoteCPU) []Step {
	return []Step{{Kind: StepRound, Line: e.Line, TS: e.TS, CPU: e.CPU, Group: b.g.name(p.Parent), Text: fmt.Sprintf(
		"CPU %d's own remote round reached its own event in %s (line %d): the hierarchy's last CPU awake handles it itself", e.CPU, b.g.name(p.Parent), e.Line)}}
}

// isolationSteps say what the handler's isolation means on this kernel,
// and for a foreign timer on an isolated CPU before 6.19 what 6.19 would
// have done.
func (b *builder) isolationSteps(x *Expiry, ctx *remoteCtx) []Step {
	h := x.Handler
	rep := b.rep
	s := Step{Kind: StepIsolation, TS: -1, CPU: h}
	switch {
	case rep.NohzFull.Test(h):
		s.Text = fmt.Sprintf("CPU %d is nohz_full: nohz_full CPUs stay in the hierarchy on every kernel, 6.19's exclusion of isolated CPUs included", h)
		if x.Kind == Foreign {
			s.Text += ", and while its tick runs it is active and can be a migrator"
		}
		return []Step{s}
	case !rep.Isolated.Test(h):
		return nil
	case x.Kind != Foreign && b.exclude:
		s.Text = fmt.Sprintf("CPU %d is isolated (isolcpus domain) and, on %s (6.19 or later: exclude-isolated, 7dec062cfcf2), out of the hierarchy: it runs its own timers and no other CPU's", h, b.release)
		return []Step{s}
	case x.Kind != Foreign:
		s.Text = fmt.Sprintf("CPU %d is isolated (isolcpus domain), which keeps other CPUs' work away from it but not the timers on its own base", h)
		return []Step{s}
	case b.exclude && h == rep.Timekeeper:
		s.Text = fmt.Sprintf("CPU %d is isolated (isolcpus domain) but the nohz timekeeper, which stays in the hierarchy while nohz_full is in use", h)
		return []Step{s}
	case b.exclude:
		s.Kind, s.Undetermined = StepAnomaly, whyDisagree
		s.Text = fmt.Sprintf("CPU %d is isolated (isolcpus domain), and %s (6.19 or later: exclude-isolated, 7dec062cfcf2) takes isolated CPUs out of the hierarchy: it should not have pulled (did a cpuset partition change while recording?)", h, b.release)
		return []Step{s}
	}
	s.Text = fmt.Sprintf("CPU %d is isolated (isolcpus domain), yet on %s, as on every kernel from 6.9 to 6.18, an isolated CPU stays in the hierarchy and pulls like any other", h, b.release)
	if g0, ok := b.g.at(h, 0); ok {
		if gs := b.state(g0); gs != nil && gs.known && gs.active&b.g.bitOfCPU(h) != 0 && lowest(gs.active) == b.g.bitOfCPU(h) {
			s.Text += fmt.Sprintf("; busy, it is the lowest active CPU of %s", b.g.name(g0))
		}
	}
	return []Step{s, b.newerKernel(x, ctx)}
}

// newerKernel says what 6.19's exclusion of isolated CPUs would have done
// with a timer an isolated CPU pulled: the CPUs it keeps in the hierarchy
// that were active then would have pulled it, or, with none, its owner
// would have woken for it.
func (b *builder) newerKernel(x *Expiry, ctx *remoteCtx) Step {
	h, o := x.Handler, x.Owner
	s := Step{Kind: StepKernel, TS: -1, CPU: h}
	head := fmt.Sprintf("from 6.19 (exclude-isolated, 7dec062cfcf2) CPU %d would be out of the hierarchy (isolcpus domain)", h)
	var active, unknown cpumask.Mask
	for c := 0; c < b.rep.CPUs; c++ {
		if c == o || b.rep.Excluded.Test(c) {
			continue
		}
		g0, ok := b.g.at(c, 0)
		bit := b.g.bitOfCPU(c)
		gs := b.state(g0)
		switch {
		case !ok || bit == 0 || gs == nil || !gs.known:
			unknown.Set(c)
		case gs.active&bit != 0:
			active.Set(c)
		}
	}
	var below cpumask.Mask
	if ctx != nil && ctx.found != 0 {
		below, _ = b.g.cpusOf(ctx.found)
	}
	here := active.And(below)
	switch {
	case !active.Empty() && !here.Empty():
		s.Text = fmt.Sprintf("%s, and %s, active in %s, would have run it", head, cpusPhrase(here), b.g.name(ctx.found))
	case !unknown.Empty():
		s.Undetermined = whyBefore
		s.Text = fmt.Sprintf("%s; which CPU would have run the timer then, the trace does not tell (the state of %s is from before the recording)", head, cpusPhrase(unknown))
	case !active.Empty():
		s.Text = fmt.Sprintf("%s, and %s, active elsewhere in the hierarchy, would have run it from a group higher up", head, cpusPhrase(active))
	default:
		s.Text = fmt.Sprintf("%s, and with no other CPU of the hierarchy active, CPU %d, the last to go idle, would have woken for its own timer", head, o)
		if oc := &b.cpus[o]; oc.evtKnown && oc.evt != ftrace.KtimeMax {
			s.Text += " at " + fmtKtime(oc.evt)
		}
	}
	if b.rep.Excluded.Test(o) {
		// An excluded owner publishes nothing: it arms its own
		// timers for itself.
		s.Text = fmt.Sprintf("%s, and so would CPU %d, isolated too: it would have woken for its own timer", head, o)
		s.Undetermined = ""
	}
	return s
}

// sentence renders an expiry's chain.
func (b *builder) sentence(x *Expiry) string {
	parts := make([]string, 0, len(x.Steps))
	for _, s := range x.Steps {
		parts = append(parts, s.Text)
	}
	return x.headline() + ": " + strings.Join(parts, "; ")
}

// Brief is the why in one line, for a live view: the headline, then the
// steps that decide where the timer ran (an anomaly, the handler's role
// and what its isolation means on this kernel), without their asides in
// parentheses.
func (x *Expiry) Brief() string {
	var parts []string
	for _, s := range x.Steps {
		switch s.Kind {
		case StepAnomaly, StepMigrator, StepIsolation, StepDeferrable:
			parts = append(parts, withoutAsides(s.Text))
		}
	}
	if len(parts) == 0 {
		return x.headline()
	}
	return x.headline() + ": " + strings.Join(parts, "; ")
}

// withoutAsides drops the parenthesised asides of a step's text.
func withoutAsides(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	return strings.NewReplacer(" ,", ",", " ;", ";", " :", ":", " .", ".").Replace(out)
}

// headline says who ran whose timer, and when.
func (x *Expiry) headline() string {
	var head string
	switch x.Kind {
	case Foreign:
		head = fmt.Sprintf("CPU %d ran CPU %d's %s at %s", x.Handler, x.Owner, x.Function, ftrace.FormatTS(x.TS)+" s")
	case Own:
		head = fmt.Sprintf("CPU %d ran %s at %s, its own timer", x.Handler, x.Function, ftrace.FormatTS(x.TS)+" s")
	default:
		head = fmt.Sprintf("CPU %d ran %s at %s, a timer whose owner the trace does not tell", x.Handler, x.Function, ftrace.FormatTS(x.TS)+" s")
	}
	return head
}

// fmtDur prints a duration: "12 ms", "0.41 ms", "35 µs".
func fmtDur(ns int64) string {
	switch {
	case ns >= 10e6:
		return fmt.Sprintf("%d ms", (ns+5e5)/1e6)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%d µs", (ns+500)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
