package replay

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// Remote rounds.
//
// A round is one tmigr_handle_remote call, at the end of a timer softirq:
// its lines are one tmigr_handle_remote per group the walk visited and one
// tmigr_handle_remote_cpu per CPU whose global timers it ran, each followed
// by that CPU's timer lines and the update_events of its walk. The model's
// HandleRemote asks the Expirer to run the target's timers and then for the
// target's next global expiry: the first answer is "what the kernel did
// meanwhile" (operations of other CPUs that the trace shows between the
// tmigr_handle_remote_cpu line and the round's next line are replayed right
// there, as they happened while the handler ran the timers with no lock
// held), the second is the nextevt of the level-0 tmigr_update_events the
// kernel printed for that target.

// round is a remote round being replayed.
type round struct {
	idx     int // op index
	o       *op
	used    []bool       // kernel targets matched to the model's
	cur     int          // the kernel target of the model's current expiry, -1
	why     reason       // why the round is undetermined, beyond its start
	lo, hi  int64        // now lies in [lo, hi] (ns)
	amb     map[int]bool // CPUs with an event between lo and hi
	walked  []int        // targets whose events the model walked up again
	nested  bool         // operations of other CPUs were replayed inside it
	entered int          // groups the model's round entered so far
	unseen  []unseen     // rounds replayed before an unprinted walk
	wWhy    reason       // why the handler's wakeup afterwards may differ
}

// q0Reason is qReason for the level-0 group a round handles: an idle CPU's
// event from before the recording does not count when the trace shows it
// was not due at that round (see notDueYet). Its value may still be the
// group's next expiry, which the handler keeps as its wakeup.
func (r *replayer) q0Reason(g hier.GroupID, s gstate, idx int, rd *round) reason {
	n := r.topo.Node(g)
	activeKnown := *r.gk.at(g) == known
	for _, c := range n.CPUs {
		if activeKnown && s.active&r.topo.CPUBit[c] != 0 {
			continue
		}
		if r.ek[c] == reasonEvent && activeKnown && r.notDueYet(c, idx) {
			if rd != nil {
				rd.wWhy = first(rd.wWhy, reasonEvent)
			}
			continue
		}
		if r.ek[c] != known {
			return r.ek[c]
		}
	}
	return known
}

// notDueYet reports whether the trace shows that cpu's event, unknown
// since before the recording, was not due at the round r.ops[idx]: a later
// round of a CPU of the same group handled that group (its walk went on to
// the parent, which it does only once no due event is left) without
// expiring cpu, and cpu's event cannot have changed from this round to that
// one (no operation of cpu, no remote expiry of it, this round's included,
// no lost events). Its now was no earlier: the same handler later, or a
// line further than the clock skew. Had the event been due here, it would
// have been due there. The model holds no event for such a CPU, so it
// expires nothing either.
func (r *replayer) notDueYet(cpu, idx int) bool {
	if r.witness == nil {
		r.findWitnesses()
	}
	o := r.ops[idx]
	ts := r.ev[o.key()].TS
	for _, j := range r.witness[cpu] {
		if j <= idx {
			continue
		}
		for _, c := range r.changes[cpu] {
			// A change at the round itself (it expired cpu) counts.
			if c >= idx && c <= j {
				return false
			}
		}
		if r.ops[j].cpu == o.cpu || r.ev[r.ops[j].key()].TS > ts+skewNS {
			return true
		}
	}
	return false
}

// findWitnesses lists, per CPU, the operations that may change its event
// (r.changes) and the rounds that show its event was not due (r.witness),
// as op indexes in order.
func (r *replayer) findWitnesses() {
	r.witness, r.changes = map[int][]int{}, map[int][]int{}
	for j, o := range r.ops {
		switch o.kind {
		case opNewTimer:
			if !o.walked && o.nextevt == hier.KtimeMax {
				continue
			}
			r.changes[o.cpu] = append(r.changes[o.cpu], j)
		case opRemote:
			targets := map[int]bool{}
			for _, ti := range o.targets() {
				x := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU
				targets[x] = true
				r.changes[x] = append(r.changes[x], j)
			}
			if len(o.levels()) < 2 {
				continue // did not show that it handled its group
			}
			for _, x := range r.topo.Node(r.topo.CPUGroup[o.cpu]).CPUs {
				if x != o.cpu && !targets[x] {
					r.witness[x] = append(r.witness[x], j)
				}
			}
		default:
			r.changes[o.cpu] = append(r.changes[o.cpu], j)
		}
	}
}

// roundDeps returns why what a round of h reads may differ from the
// kernel's: the states of the groups up its path while its branch is their
// migrator, their queues, and h's wakeup if h is not the migrator of its
// own group (the fast exit). With rd, it also notes the queued events that
// now decides about.
func (r *replayer) roundDeps(h int, rd *round, idx int) reason {
	st := r.m.current()
	g0 := r.topo.CPUGroup[h]
	why := *r.gk.at(g0)
	if m := st.at(g0).migrator; m != r.topo.CPUBit[h] && m != hier.MigratorNone {
		why = first(why, r.wk[h])
	}
	for k, g := range r.topo.Path[h] {
		bit := r.topo.PathBit(h, k)
		if *r.gk.at(g) == reasonMigrator && r.topo.Node(g).Parent == hier.NoGroup && r.qReason(g, *st.at(g)) == known && !live(r.m.h.Queue(g)) {
			// Whichever active child is the top's migrator, the visit
			// finds nothing to expire and goes no further.
			continue
		}
		why = first(why, *r.gk.at(g))
		if m := st.at(g).migrator; m != bit && m != hier.MigratorNone {
			break
		}
		if k == 0 {
			why = first(why, r.q0Reason(g, *st.at(g), idx, rd))
		} else {
			why = first(why, r.qReason(g, *st.at(g)))
		}
		if rd != nil {
			for _, e := range r.m.h.Queue(g) {
				if !e.Ignore {
					rd.note(e.CPU, e.Expires)
				}
			}
		}
	}
	return why
}

// live reports whether a queue holds an event that is not ignored.
func live(q []hier.EventInfo) bool {
	for _, e := range q {
		if !e.Ignore {
			return true
		}
	}
	return false
}

// expirer implements hier.Expirer for the replay.
type expirer struct{ r *replayer }

func (x expirer) ExpireRemote(handler, target int) { x.r.expireRemote(handler, target) }
func (x expirer) LockBases(int)                    {}
func (x expirer) UnlockBases(int)                  {}
func (x expirer) NextGlobalRemote(target int, basej uint64, now int64) int64 {
	return x.r.nextGlobalRemote(target)
}

const (
	minNS = -1 << 63
	maxNS = 1<<63 - 1
)

// runRemote replays one round.
// bridgeRoundEntry replays first, where the round's entry shows it, the
// other CPUs' operations that made the round's CPU the migrator of its
// group. tmigr_handle_remote (kernel/time/timer_migration.c, 6.9+) goes
// on to tmigr_handle_remote_up, which prints tmigr_handle_remote, only if
// the CPU is the migrator of its group, the group has none, or the CPU's
// wakeup is set; where the model's state allows none of these, another
// CPU's compare-and-swap came first, its line printed after the round's (a
// CPU's trace line trails its compare-and-swap), and bridge finds it as
// preResync does for walks. With the wakeup set the round's line proves
// nothing, but what the round wrote does: a round that does not enter its
// group writes KTIME_MAX to the CPU's wakeup (tmigr_handle_remote_up
// returns before it sets firstexp), so a wakeup other than KTIME_MAX
// printed by the CPU's next operation, an activation, says it entered.
func (r *replayer) bridgeRoundEntry(o *op) {
	if len(o.levels()) == 0 {
		return
	}
	h := o.cpu
	g := r.topo.CPUGroup[h]
	enters := r.roundEnters(h, 0)
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.state(g)
		if enters(cur) || *r.gk.at(g) != known || r.wk[h] != known {
			return
		}
		if r.m.h.CPU(h).Wakeup != hier.KtimeMax && !r.roundLeftWakeup(o) {
			return
		}
		j, split := r.bridge(o, g, cur, enters, false, -1)
		if j < 0 {
			return
		}
		r.execBridged(j, split, o, g)
	}
}

// claimOrder puts, before round o, the events of one expiry that the
// round claims in the model's queues in the order the kernel claimed them,
// where one of them at least sits at a place from before the recording
// (qpos): timerqueue_add puts an event after those of its expiry already
// queued, so their order is the order they were queued in, which the
// recording does not hold, and the round's claims print it. The model is
// seeded again with its states and its events in that order; the
// round's claims then follow the kernel's, which decided nothing, and
// claimOrder reports whether it changed the order (the round is then
// undetermined: an event from before the recording). The model cannot be
// replaced inside a walk or another round, which go on in it.
func (r *replayer) claimOrder(o *op) bool {
	if !slices.Contains(r.qpos, true) || r.inWalk > 0 || len(r.walks) > 0 || len(r.rounds) > 0 || len(r.splits) > 0 || len(r.waits) > 0 {
		return false
	}
	rank := map[int]int{}
	for k, i := range o.targets() {
		c := r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU).CPU
		if _, ok := rank[c]; !ok {
			rank[c] = k
		}
	}
	if len(rank) < 2 {
		return false
	}
	old := r.snapshot()
	evts := slices.Clone(old.evts)
	changed := false
	for a := 0; a < len(evts); {
		b := a + 1
		for b < len(evts) && evts[b].expires == evts[a].expires {
			b++
		}
		// The run's events the round claims, at their places in it.
		var at []int
		unplaced := false
		for k := a; k < b; k++ {
			if _, ok := rank[evts[k].cpu]; ok {
				at = append(at, k)
				unplaced = unplaced || r.qpos[evts[k].cpu]
			}
		}
		if len(at) >= 2 && unplaced {
			claimed := make([]seedEvt, len(at))
			for k, x := range at {
				claimed[k] = evts[x]
			}
			slices.SortStableFunc(claimed, func(x, y seedEvt) int { return rank[x.cpu] - rank[y.cpu] })
			for k, x := range at {
				if evts[x] != claimed[k] {
					evts[x], changed = claimed[k], true
				}
			}
		}
		a = b
	}
	if !changed {
		return false
	}
	r.reseed(old, old.st, evts, reasonEvent)
	return true
}

// queuedExpiries returns the expiry of each CPU's event queued in its
// level-0 group, read from the group queues: a round replayed inside a
// walk must not read a CPU's own state, whose lock the walking CPU holds.
func (r *replayer) queuedExpiries() map[int]int64 {
	out := make(map[int]int64, r.topo.NCPUs)
	for _, g := range r.topo.Groups {
		if g.Level != 0 {
			continue
		}
		for _, e := range r.m.h.Queue(g) {
			if c, ok := ownerCPU(e.Owner); ok {
				out[c] = e.Expires
			}
		}
	}
	return out
}

// swappedTies reports whether the kernel's and the model's targets kt and
// mt of one round differ only in the order of CPUs whose events had one
// expiry before it (posExp), one of them at least at a place in the
// queues from before the recording (unplaced): timerqueue_add puts an
// event after those of its expiry already queued, so the order of such
// events is the order they were queued in, which the recording does not
// hold.
func swappedTies(kt, mt []int, posExp map[int]int64, unplaced []bool) bool {
	if len(kt) != len(mt) || len(posExp) == 0 {
		return false
	}
	for i := 0; i < len(kt); {
		if kt[i] == mt[i] {
			i++
			continue
		}
		// The run of positions where they differ must hold the same
		// CPUs, all of one expiry, one at least of unknown place.
		j := i
		a, b := []int{}, []int{}
		for j < len(kt) && kt[j] != mt[j] {
			a, b = append(a, kt[j]), append(b, mt[j])
			j++
		}
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			return false
		}
		placedBefore := false
		for _, c := range a {
			if c < 0 || c >= len(unplaced) || posExp[c] != posExp[a[0]] {
				return false
			}
			placedBefore = placedBefore || unplaced[c]
		}
		if !placedBefore {
			return false
		}
		i = j
	}
	return true
}

// roundLeftWakeup reports whether round o's CPU's next operation is an
// activation whose tmigr_cpu_active prints a wakeup other than KTIME_MAX:
// the wakeup the round wrote at its end (nothing else of that CPU runs
// in between without a line).
func (r *replayer) roundLeftWakeup(o *op) bool {
	for j := o.idx + 1; j < len(r.ops) && j <= o.idx+lookahead; j++ {
		a := r.ops[j]
		if a.cpu != o.cpu {
			continue
		}
		if a.kind != opActivate {
			return false
		}
		p, ok := r.ev[a.first()].Data.(ftrace.TmigrCPUActive)
		return ok && p.Wakeup != hier.KtimeMax
	}
	return false
}

// claimedJustBefore reports whether another CPU's round claimed the CPU
// of round o, printing a wakeup that was set, shortly before o's first
// line or within skewNS after it (o read its wakeup before printing that
// line, and two CPUs' stamps order their lines only beyond skewNS):
// tmigr_handle_remote_cpu prints the target's wakeup and only then,
// under the same lock, resets it to KTIME_MAX, while the target's own
// tmigr_handle_remote reads it without the lock. A round that read it
// between the two entered although, replayed after the claim, it finds
// KTIME_MAX and returns: which came first no line prints, and the model,
// which applies the claim whole, can only replay the later order. The
// round then decides nothing else (its CPU is not the migrator, and its
// final write leaves the wakeup KTIME_MAX as the claim did).
func (r *replayer) claimedJustBefore(o *op) bool {
	ts := r.ev[o.first()].TS
	for j := max(0, o.idx-lookahead); j < o.idx; j++ {
		p := r.ops[j]
		if p.kind != opRemote || p.cpu == o.cpu {
			continue
		}
		for _, i := range p.targets() {
			c := ftrace.TmigrCPUGroup(r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU))
			if c.CPU == o.cpu && c.Wakeup != hier.KtimeMax && ts >= r.ev[i].TS-skewNS && ts-r.ev[i].TS <= bridgeNS {
				return true
			}
		}
	}
	return false
}

func (r *replayer) runRemote(idx int, o *op) {
	h := o.cpu
	rd := &round{idx: idx, o: o, used: make([]bool, len(o.targets())), cur: -1, lo: minNS, hi: maxNS}
	why := known
	// Without the clock, now is anywhere: a round that finds no event
	// queued in the groups it handles decides nothing that depends on it;
	// one that finds an event is undetermined (below).
	if r.clk.known {
		lo, hi, hasLo, hasHi := r.clk.bounds(o.first(), h)
		if hasLo {
			rd.lo = r.clk.ns(lo)
		}
		if hasHi {
			rd.hi = r.clk.ns(hi)
		}
		if rd.hi < rd.lo {
			rd.hi = rd.lo // inconsistent observations: trust the earlier
		}
	}

	r.bridgeRoundEntry(o)
	if r.claimOrder(o) {
		why = reasonEvent
	}
	why = first(why, r.roundDeps(h, rd, idx))
	now := rd.nowFor(r)
	basej := uint64(0)
	if r.clk.known {
		basej = uint64((now - r.clk.off) / r.clk.tick)
	}
	// Where an event's place in the queues is the kernel's from before
	// the recording (qpos), the CPUs' event expiries before the round.
	var posExp map[int]int64
	var unplaced []bool
	if slices.Contains(r.qpos, true) {
		posExp = r.queuedExpiries()
		unplaced = slices.Clone(r.qpos)
	}
	r.lastRound[h] = roundWrite{last: o.last(), before: r.m.h.CPU(h).Wakeup}
	r.rounds = append(r.rounds, rd)
	ml := r.collect(func() { r.m.h.HandleRemote(h, now, basej, expirer{r}) })
	r.rounds = r.rounds[:len(r.rounds)-1]
	defer r.resumeWaits(rd)
	defer r.resumeSplits(o)
	why = first(why, rd.why)
	if rd.nested {
		// Operations replayed inside the round may have left state it
		// read afterwards unknown.
		why = first(why, r.roundDeps(h, nil, idx))
	}
	// A walk after a remote expiry that reaches an idle top updates the
	// top's queue but prints nothing (and does not report it): if what it
	// propagated was unknown, so is the event it left there.
	if top := r.topo.Top; r.m.state(top).active == 0 {
		for _, x := range rd.walked {
			if p := r.topo.Path[x]; len(p) >= 2 {
				ch := p[len(p)-2]
				*r.gev.at(ch) = first(*r.gev.at(ch), r.qIdle(ch))
			}
		}
	}

	// Rounds replayed inside it before a walk it did not print: had they
	// come after, would they have read another value?
	for _, u := range rd.unseen {
		if r.wroteSince(u.cpu, u.j) {
			continue // its wakeup was written again meanwhile
		}
		if u.across {
			// Only where after the walk gives the kernel's value, and
			// before did not: a value neither gives stays a mismatch.
			if a, ok := r.predictRound(u.j); ok && a == u.kx && u.before != u.kx {
				r.wk[u.cpu] = first(r.wk[u.cpu], reasonOrder)
			}
			continue
		}
		if a, ok := r.predictRound(u.j); !ok || a != u.before {
			r.wk[u.cpu] = first(r.wk[u.cpu], reasonOrder)
		}
	}
	var kl, ml0 []string
	for _, i := range o.levels() {
		id, _ := r.gm.id(r.ev[i].Data.(ftrace.TmigrHandleRemote).Group)
		kl = append(kl, id.String())
	}
	for _, l := range only(ml, hier.EvHandleRemote) {
		ml0 = append(ml0, l.group.String())
	}
	if len(ml) == 0 && len(o.levels()) > 0 && len(o.targets()) == 0 && r.claimedJustBefore(o) {
		why = first(why, reasonClaim)
	}
	var kt, mt []int
	for _, i := range o.targets() {
		kt = append(kt, r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU).CPU)
	}
	for _, l := range only(ml, hier.EvHandleRemoteCPU) {
		mt = append(mt, l.cpu)
	}
	kernel := fmt.Sprintf("groups=%s cpus=%s", strings.Join(kl, ","), fmtCPUs(kt))
	model := fmt.Sprintf("groups=%s cpus=%s", strings.Join(ml0, ","), fmtCPUs(mt))
	if kernel != model && strings.Join(kl, ",") == strings.Join(ml0, ",") && swappedTies(kt, mt, posExp, unplaced) {
		why = first(why, reasonEvent)
	}
	for _, c := range kt {
		r.qpos[c] = false // expired: queued afresh from now on
	}
	if why == known && len(rd.amb) > 0 {
		// Where now lies between the bounds decides whether an event is
		// due: the round is undetermined, unless the kernel and the model
		// differ on something now does not explain.
		if kernel == model || strings.Join(kl, ",") == strings.Join(ml0, ",") &&
			fmtCPUs(rd.without(kt)) == fmtCPUs(rd.without(mt)) {
			why = reasonNow
			if !r.clk.known {
				why = reasonNoClock
			}
		}
	}
	if o.cut && kernel != model && strings.HasPrefix(strings.Join(ml0, ","), strings.Join(kl, ",")) &&
		strings.HasPrefix(fmtCPUs(mt), fmtCPUs(kt)) {
		why = first(why, reasonPartial) // the recording ended in the round
	}
	r.check(r.ev[o.first()].Line, "tmigr_handle_remote", why, kernel, model)
	// h's wakeup is now the next expiry of the highest group it handled.
	r.wk[h] = first(why, rd.wWhy)
	if c, ok := r.later[idx]; ok {
		// Replayed after a walk it may have come before (orderUnseen):
		// where that gives the kernel's value, and before would not
		// have, which came first is not in the trace; where it does not,
		// neither order explains the kernel, and the check says so.
		if a := r.m.h.CPU(h).Wakeup; a != c[0] && a == c[1] {
			r.wk[h] = first(r.wk[h], reasonOrder)
		}
	}
	if kernel != model {
		// The model expired other CPUs than the kernel: their events,
		// wakeups and everything above them may differ now.
		w := first(why, reasonDiverged)
		for _, c := range append(kt, mt...) {
			r.setEvUnknown(c, w)
			r.wk[c] = w
		}
	}
	r.volatile()
}

func fmtCPUs(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}

// note records an event the round may dequeue; an event due at some but
// not all of the possible values of now makes its CPU ambiguous.
func (rd *round) note(cpu int, expires int64) {
	if rd.ambiguous(expires) {
		if rd.amb == nil {
			rd.amb = map[int]bool{}
		}
		rd.amb[cpu] = true
	}
}

// without returns cs without the ambiguous CPUs.
func (rd *round) without(cs []int) []int {
	var out []int
	for _, c := range cs {
		if !rd.amb[c] {
			out = append(out, c)
		}
	}
	return out
}

// nowFor picks the value of now to replay the round with: the earliest
// within the bounds the trace gives at which every event the kernel
// expired was due, as far as the model knows those events (before any
// event at all when the trace bounds now from above only). A round whose
// decision hinges on that choice is undetermined anyway; the choice keeps
// the model in step with the kernel for what follows.
func (rd *round) nowFor(r *replayer) int64 {
	now := rd.lo
	exp := map[int]int64{}
	for k, i := range rd.o.targets() {
		x := r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU).CPU
		e, ok := exp[x]
		if !ok {
			ci := r.m.h.CPU(x)
			if ci.EvtIgnore || !ci.EvtQueued || r.ek[x] != known {
				continue // only a known event tells when now was
			}
			e = ci.EvtExpires
		}
		if e > now && e <= rd.hi {
			now = e
		}
		if n, ok := r.refetched(rd.o, k); ok {
			exp[x] = n
		}
	}
	if now == minNS {
		return 0 // before every event
	}
	return now
}

// refetched returns the nextevt of the level-0 update the kernel printed
// after expiring its k-th target.
func (r *replayer) refetched(o *op, k int) (int64, bool) {
	ti := o.targets()[k]
	target := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU
	for _, i := range o.lines {
		if i <= ti {
			continue
		}
		switch p := r.ev[i].Data.(type) {
		case ftrace.TmigrUpdateEvents:
			if id, ok := r.gm.id(p.Group); p.Child == 0 && ok && id == r.topo.CPUGroup[target] {
				return p.NextEvt, true
			}
		case ftrace.TmigrHandleRemoteCPU, ftrace.TmigrHandleRemote:
			return 0, false
		}
	}
	return 0, false
}

// ambiguous reports whether an event at expires is due at some but not all
// of the possible values of now.
func (rd *round) ambiguous(expires int64) bool {
	return rd.lo < rd.hi && expires > rd.lo && expires <= rd.hi
}

// expireRemote is the model's timer_expire_remote: match the kernel's
// target, check the wakeup it printed, and replay what other CPUs did while
// the kernel ran the target's timers.
func (r *replayer) expireRemote(handler, target int) {
	rd := r.rounds[len(r.rounds)-1]
	rd.cur = -1
	for k, i := range rd.o.targets() {
		if !rd.used[k] && r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU).CPU == target {
			rd.used[k], rd.cur = true, k
			break
		}
	}
	if rd.cur < 0 {
		return
	}
	ti := rd.o.targets()[rd.cur]
	// The wakeup the kernel printed for the target, before its reset.
	if ls := only(r.rec.lines, hier.EvHandleRemoteCPU); len(ls) > 0 {
		ml := ls[len(ls)-1]
		kw := r.ev[ti].Data.(ftrace.TmigrHandleRemoteCPU).Wakeup
		why := ml.why
		if kw != ml.wakeup && r.claimReadBefore(target, ti, kw) {
			why = first(why, reasonClaimRead)
		}
		r.checkNS(r.ev[ti].Line, "tmigr_handle_remote_cpu wakeup", why, kw, ml.wakeup)
	}
	// The window: up to the round's next line, or to the handler's next
	// operation.
	end := rd.o.lineAfter(ti)
	if end < 0 {
		end = len(r.ev)
	}
	own := map[int]bool{} // the handler's operations inside a callback
	if end == len(r.ev) {
		for j := rd.idx + 1; j < len(r.ops); j++ {
			if r.ops[j].cpu != handler {
				continue
			}
			end = r.ops[j].key()
			// On a nohz_full CPU an interrupt's exit may stop the tick,
			// and so deactivate the CPU in the hierarchy, while a
			// callback of the expiry runs (tick_irq_exit,
			// kernel/softirq.c; the callback runs with interrupts on):
			// an operation of the handler wholly inside a callback ran
			// in the window, which ends at that callback's exit.
			if x := r.callbackAround(handler, ti, r.ops[j]); x >= 0 && r.ops[j].kind != opRemote {
				own[j] = true
				end = x
				continue
			}
			break
		}
	}
	// The target's timers ran as the handler's timer lines after the
	// target's line show (cancel, expiry entry, callback, exit); the
	// handler's first other line outside a callback comes after the
	// expiry, but for an interrupt between a timer's cancel and its
	// entry, and the walk that follows (which prints nothing at an idle
	// top) takes no time to speak of. Another claim of the target, its
	// own included, comes after the expiry's end: it is printed only
	// once the target's remote flag is clear (RemoteExpiry's rule 4).
	inCallback, detached := false, false
	for i := ti + 1; i < end; i++ {
		ev := &r.ev[i]
		if c, ok := ev.Data.(ftrace.TmigrHandleRemoteCPU); ok && c.CPU == target {
			end = r.roundStart(ev.CPU, i)
			break
		}
		if _, ok := ev.Data.(ftrace.TmigrCPUNewTimer); ok && ev.CPU == target {
			// The target walked for a new timer: tmigr_new_timer
			// returns before printing while the target's remote flag
			// is set (7.2 kernel/time/timer_migration.c), so the
			// expiry had ended, as before another claim.
			end = i
			break
		}
		if ev.CPU != handler {
			continue
		}
		switch ev.Data.(type) {
		case ftrace.TimerExpireEntry:
			inCallback, detached = true, false
			continue
		case ftrace.TimerExpireExit:
			inCallback = false
			continue
		case ftrace.TimerCancel:
			detached = true
			continue
		}
		if detached && (ev.Flags.HardIRQ() || ev.Flags.NMI() || isRearm(ev)) {
			// An interrupt (and its way out, 7.1+'s deferred rearm)
			// between a timer's detach and its callback: expire_timers
			// is in the middle of the bucket.
			continue
		}
		if !inCallback {
			end = i
			break
		}
	}
	end = r.endWhileAwake(rd, target, ti, end)
	// Operations of other CPUs that began since the round started and
	// before its next line ran, as far as the trace can tell, while the
	// handler was between its dequeue and its walk: replay them here.
	_, printed := r.refetched(rd.o, rd.cur)
	ups := r.walkUpdates(rd.o, rd.cur)
	deferred := map[int]bool{} // CPUs with an operation replayed after the round
	// The CPUs of the rounds and walks this round is replayed inside are
	// busy with them: their next operations come after (a CPU's lines are
	// in program order).
	busy := r.busyCPUs(handler, 0)
	defer r.putSet(busy)
	// A CPU the kernel claimed before this target, which the model has
	// not yet (the two queues hold events of one expiry in different
	// orders: swappedTies), had its expiry and walk done when its
	// operations after that claim ran: they wait for the model's claim,
	// after the round (tmigr_handle_remote_cpu holds the target's lock
	// for its walk).
	claimedAt := map[int]int{}
	for k, i := range rd.o.targets()[:rd.cur] {
		if !rd.used[k] {
			claimedAt[r.ev[i].Data.(ftrace.TmigrHandleRemoteCPU).CPU] = i
		}
	}
	for j := rd.idx + 1; j < len(r.ops) && r.ops[j].key() < end; j++ {
		if c := r.ops[j].cpu; r.done[j] || c == handler && !own[j] || c != handler && busy[c] || deferred[c] {
			continue
		}
		if i, ok := claimedAt[r.ops[j].cpu]; ok && r.ops[j].key() > i {
			deferred[r.ops[j].cpu] = true
			continue
		}
		p := r.ops[j]
		if r.afterHandlerIdle(p, rd) {
			// It ran after the handler went idle, which the handler
			// does only after its round: replayed after the round,
			// and so is what its CPU did next.
			deferred[p.cpu] = true
			continue
		}
		across := false
		if p.kind == opRemote && len(p.targets()) == 0 && !printed {
			// The walk that follows prints nothing: whether p read the
			// queues before or after it, its result says (orderUnseen).
			if before, ok := r.predictRound(j); ok {
				if kx, ok := r.wakeupAfter(j); ok && kx != before {
					r.later[j] = [2]int64{before, kx}
					// Replayed after the round, and so is what its CPU
					// did next.
					deferred[p.cpu] = true
					continue
				}
				rd.unseen = append(rd.unseen, unseen{j: j, cpu: p.cpu, before: before})
			}
		} else if p.kind == opRemote && len(p.targets()) == 0 && r.readsAcross(p, ups) {
			across = true
		}
		rd.nested = true
		if at := r.waitLine(p, rd); at >= 0 {
			r.execWaiting(j, rd, at)
		} else {
			r.exec(j)
		}
		if across {
			// Replayed before the walk's update; its lock order with
			// p's read is not printed (readsAcross).
			if kx, ok := r.wakeupAfter(j); ok {
				rd.unseen = append(rd.unseen, unseen{j: j, cpu: p.cpu, before: r.m.h.CPU(p.cpu).Wakeup, kx: kx, across: true})
			}
		}
	}
}

// afterHandlerIdle reports whether operation p printed a state of a group
// on the path of the handler of round rd, a CPU active in the hierarchy,
// without the handler's bit at that level: a state after the handler went
// idle in the hierarchy, which it does not do during its round. A CPU
// leaves the hierarchy's active CPUs when its tick stops
// (tick_nohz_stop_tick, 6.9+ kernel/time/tick-sched.c): on its way into
// idle, or on a nohz_full CPU also at an interrupt's exit. The round runs
// in the timer softirq, which neither sleeps nor is preempted but on
// PREEMPT_RT, where it runs in the CPU's timer thread (ktimers/N) and a
// callback may block: so the rule holds for a handler neither nohz_full
// nor running its round in that thread. Its bit is then set in its
// level-0 group, and its group's in each group above, while the round
// runs; the model's state of the level-0 group says whether it is active,
// where that state is known.
func (r *replayer) afterHandlerIdle(p *op, rd *round) bool {
	handler := rd.o.cpu
	if r.nohzFull.Test(handler) || strings.HasPrefix(r.ev[rd.o.first()].Task, "ktimers/") {
		return false
	}
	g0 := r.topo.At(handler, 0)
	if g0 == hier.NoGroup || *r.gk.at(g0) != known || r.m.state(g0).active&r.topo.CPUBit[handler] == 0 {
		return false
	}
	for _, i := range p.groups {
		gl := r.groupLine(i)
		if gl.id == hier.NoGroup || r.topo.At(handler, gl.lvl) != gl.id {
			continue
		}
		if gl.after.active&r.topo.PathBit(handler, gl.lvl) == 0 {
			return true
		}
	}
	return false
}

// endWhileAwake moves the end of the k-th remote expiry of round rd, to
// target, whose line is ti, into the target's last active stretch before
// end (to its next deactivation, if that comes before end) when the walk
// after it printed nothing although it would have printed at the target's
// level-0 group (not the top): the handler found the target awake when it
// relocked it (tmigr_handle_remote_cpu walks only for an idle target), so
// the expiry ended while the target was active, and its last active
// stretch in the window will do for the model, which walks or not by the
// same rule.
func (r *replayer) endWhileAwake(rd *round, target, ti, end int) int {
	if _, printed := r.refetched(rd.o, rd.cur); printed {
		return end
	}
	atTop := r.topo.CPUGroup[target] == r.topo.Top
	for j := sort.Search(len(r.ops), func(j int) bool { return r.ops[j].key() >= end }) - 1; j > rd.idx && r.ops[j].key() > ti; j-- {
		if p := r.ops[j]; p.cpu == target && p.kind == opActivate {
			if atTop && !r.othersActive(p, target) {
				// At an idle top the walk prints nothing either
				// way.
				return end
			}
			for k := j + 1; k < len(r.ops) && r.ops[k].key() < end; k++ {
				if q := r.ops[k]; q.cpu == target && q.kind == opDeactivate {
					return q.key()
				}
			}
			return end
		}
	}
	return end
}

// othersActive reports whether activation p of target, at the top level
// group, printed that group active with another child besides target:
// a walk of the target's event there, had the handler found it idle,
// would have printed its update, the top not being idle.
func (r *replayer) othersActive(p *op, target int) bool {
	if len(p.groups) == 0 {
		return false
	}
	gl := r.groupLine(p.groups[0])
	return gl.id == r.topo.Top && gl.after.active&^r.topo.CPUBit[target] != 0
}

// claimReadBefore reports whether the claim at line ti may have read its
// target's wakeup before the target's own round wrote it: the target's
// latest round replayed printed its last line before the claim, the
// target printed nothing since, and the kernel's value kw is the one that
// round found. tmigr_handle_remote writes the CPU's wakeup at its very end,
// after its last line, and a claim reads it under the CPU's lock: which
// came first no line prints (the claim resets it to KTIME_MAX either way).
func (r *replayer) claimReadBefore(target, ti int, kw int64) bool {
	w, ok := r.lastRound[target]
	return ok && w.last < ti && w.before == kw && r.silent(target, w.last, ti)
}

// isRearm reports whether ev is hrtimer_rearm, printed on an interrupt's
// way out.
func isRearm(ev *ftrace.Event) bool {
	_, ok := ev.Data.(ftrace.HrtimerRearm)
	return ok
}

// roundStart returns the first line of cpu's round that printed line i.
func (r *replayer) roundStart(cpu, i int) int {
	// A round's key is its first line: it is among the last operations
	// that begin by i.
	j := sort.Search(len(r.ops), func(j int) bool { return r.ops[j].key() > i }) - 1
	for ; j >= 0; j-- {
		o := r.ops[j]
		if o.cpu == cpu && o.kind == opRemote && o.first() <= i && o.last() >= i {
			return o.first()
		}
		if o.cpu == cpu {
			break // its operation before the round's: not in one
		}
	}
	return i
}

// A round of another CPU that the trace shows during a remote expiry whose
// walk printed nothing (the top was idle: tmigr_update_events skips its
// line after a remote expiry there) read the groups' queues before or
// after that walk requeued the target's event: the trace does not show
// which. Its result, its CPU's wakeup (the next expiry of the highest
// group it handled), is printed by that CPU's next line that prints its
// stored wakeup, or by the next claim of it. The replay runs it in the
// expiry's window (before the walk) unless the kernel's value is not what
// it reads there, and then after the round. Where the two orders give
// different values, the decision that prints it is undetermined
// (whyOrder), the candidates named in its reason's count; a kernel value
// that neither gives is a mismatch.
type unseen struct {
	j      int // the round
	cpu    int
	before int64
	// A round whose read the walk printed an update of, before the
	// round's next line (readsAcross): replayed before the walk, the
	// value it left is before; kx is the kernel's, as printed next.
	kx     int64
	across bool
}

// walkUpdates returns the lines of the event updates the walk after the
// k-th expiry of round o printed, by group.
func (r *replayer) walkUpdates(o *op, k int) map[hier.GroupID]int {
	ups := map[hier.GroupID]int{}
	for _, i := range o.lines {
		if i <= o.targets()[k] {
			continue
		}
		p, ok := r.ev[i].Data.(ftrace.TmigrUpdateEvents)
		if !ok {
			break
		}
		if id, ok := r.gm.id(p.Group); ok {
			ups[id] = i
		}
	}
	return ups
}

// readsAcross reports whether round p read the queue of a group whose
// update by the walk (its line in ups) the trace does not order with the
// read: tmigr_handle_remote_up prints tmigr_handle_remote before it takes
// the group's lock, tmigr_update_events prints under it, so an update
// printed after p's line for the group and before p's next line (or with
// no next line of p) may have come before or after p's read.
func (r *replayer) readsAcross(p *op, ups map[hier.GroupID]int) bool {
	for _, li := range p.levels() {
		g, ok := r.gm.id(r.ev[li].Data.(ftrace.TmigrHandleRemote).Group)
		if !ok {
			continue
		}
		u, ok := ups[g]
		if !ok || u < li {
			continue
		}
		next := len(r.ev)
		for _, i := range p.lines {
			if i > li {
				next = i
				break
			}
		}
		if u < next {
			return true
		}
	}
	return false
}

// wroteSince reports whether an operation of cpu after op j was replayed.
func (r *replayer) wroteSince(cpu, j int) bool {
	for k := j + 1; k < len(r.ops); k++ {
		if r.ops[k].cpu == cpu && r.done[k] {
			return true
		}
	}
	return false
}

// predictRound returns the wakeup round j, which expires nothing, would
// leave if it ran now: the first event of the highest group it handles
// (tmigr_handle_remote_up), its wakeup unchanged if it takes the fast exit,
// KTIME_MAX if it handles no group. The events due at its now it dequeued
// (tmigr_next_expired_groupevt) and claimed none of (it printed no claim):
// they are not first. Where the trace cannot tell whether an event was
// due, there is no prediction.
func (r *replayer) predictRound(j int) (int64, bool) {
	o := r.ops[j]
	cpu := o.cpu
	path := r.topo.Path[cpu]
	if len(path) == 0 {
		return 0, false
	}
	lo, hi := int64(minNS), int64(maxNS)
	if r.clk.known {
		l, h, hasLo, hasHi := r.clk.bounds(o.first(), cpu)
		if hasLo {
			lo = r.clk.ns(l)
		}
		if hasHi {
			hi = r.clk.ns(h)
		}
	}
	st := r.m.current()
	bit := r.topo.CPUBit[cpu]
	if m := st.at(path[0]).migrator; m != bit && m != hier.MigratorNone {
		if w := r.m.h.CPU(cpu).Wakeup; w == hier.KtimeMax {
			return w, true
		}
		return hier.KtimeMax, true
	}
	first := int64(hier.KtimeMax)
	for k, g := range path {
		if k > 0 {
			bit = r.topo.Node(path[k-1]).Bit
		}
		if m := st.at(g).migrator; m != bit && m != hier.MigratorNone {
			break
		}
		first = hier.KtimeMax
		for _, e := range r.m.h.Queue(g) {
			switch {
			case e.Ignore || e.Expires <= lo:
				// Skipped, or due and dequeued.
			case e.Expires <= hi:
				return 0, false // due or not, now decides
			case e.Expires < first:
				first = e.Expires
			}
		}
	}
	return first, true
}

// wakeupAfter returns the stored wakeup of the CPU of round j as the trace
// next prints it, if nothing wrote it in between: its next tmigr_cpu_active
// or tmigr_cpu_new_timer (the value before it is changed), its next
// tmigr_cpu_new_timer_idle that did not walk, or another CPU's claim of it.
// A tmigr_cpu_new_timer_idle that did not walk and prints KTIME_MAX for a
// timer to hand over tells nothing: while another CPU expires this one's
// timers (its remote flag set), tmigr_new_timer returns KTIME_MAX with no
// line and no walk, and tmigr_cpu_new_timer stores that (6.9+
// kernel/time/timer_migration.c).
func (r *replayer) wakeupAfter(j int) (int64, bool) {
	i := r.wakeupLine(j)
	if i < 0 {
		return 0, false
	}
	switch p := r.ev[i].Data.(type) {
	case ftrace.TmigrHandleRemoteCPU:
		return p.Wakeup, true
	case ftrace.TmigrCPUActive:
		return p.Wakeup, true
	case ftrace.TmigrCPUNewTimer:
		return p.Wakeup, true
	case ftrace.TmigrCPUNewTimerIdle:
		return p.Wakeup, p.Wakeup != hier.KtimeMax || p.NextEvt == hier.KtimeMax
	}
	return 0, false
}

// wakeupLine returns the index of the line after operation j's last that
// next speaks of its CPU's stored wakeup, or -1: another CPU's claim of it,
// or the CPU's next tmigr line (which wakeupAfter and enteredTop read); -1
// where the CPU's buffer lost events first, or the trace ends.
func (r *replayer) wakeupLine(j int) int {
	o := r.ops[j]
	for i := o.last() + 1; i < len(r.ev); i++ {
		ev := &r.ev[i]
		switch p := ev.Data.(type) {
		case ftrace.TmigrHandleRemoteCPU:
			if p.CPU == o.cpu {
				return i
			}
			continue
		case ftrace.Lost, ftrace.BufferStarted:
			if ev.CPU == o.cpu {
				return -1
			}
			continue
		}
		if ev.CPU == o.cpu && ev.Data != nil && ftrace.IsTmigr(ev.Data) {
			return i
		}
	}
	return -1
}

// onRemote is called when the model's round enters a group: hier's
// tmigr_handle_remote_up prints tmigr_handle_remote before it checks the
// migrator and takes the group's lock, and holds no lock there. When the
// round's next line is a claim (tmigr_handle_remote_cpu prints the target's
// wakeup, read under the target's lock, before it resets it) whose wakeup
// is not the model's, or the model's is unknown, and the target's own
// operations the trace shows wholly between the two lines are pending,
// those came first: the target's round read its wakeup (its fast exit)
// and wrote it at its end. They are replayed here, before the dequeue and
// the claim; if they do not explain the printed wakeup, the claim's check
// says so.
func (r *replayer) onRemote() {
	if len(r.rounds) == 0 {
		return
	}
	rd := r.rounds[len(r.rounds)-1]
	k := rd.entered
	rd.entered++
	if k >= len(rd.o.levels()) {
		return
	}
	li := rd.o.levels()[k]
	if w := r.starting; w != nil && w.o == rd.o && k > 0 && li > w.at {
		r.wait(w)
	}
	if k > 0 {
		r.nestedInRound(rd, rd.o.levels()[k-1], li)
	}
	r.bridgeRoundStop(rd, k, li)
	r.bridgeRoundOn(rd, k, li)
	r.updateBeforeRead(rd, k, li)
	end := rd.o.lineAfter(li)
	if end < 0 {
		return
	}
	p, ok := r.ev[end].Data.(ftrace.TmigrHandleRemoteCPU)
	if !ok || p.CPU == rd.o.cpu || r.wk[p.CPU] == known && r.m.h.CPU(p.CPU).Wakeup == p.Wakeup {
		return
	}
	for j := rd.idx + 1; j < len(r.ops) && r.ops[j].key() < end; j++ {
		o := r.ops[j]
		if r.done[j] || o.cpu != p.CPU {
			continue
		}
		if o.last() >= end {
			break
		}
		rd.nested = true
		r.exec(j)
	}
}

// bridgeRoundStop replays, before round rd's check of its level k (line
// li), the transition of another CPU that made that group's migrator
// another child, where the kernel's round stopped there: in
// tmigr_handle_remote_up a round prints a level's line and only then
// checks that its child is the group's migrator (or that the group has
// none); failing, it returns without a line more, and only that ends a
// walk below the top with nothing claimed after the line. The
// transition's CPU printed it after the round's line, but made it first:
// the round's CPU printed nothing in between (a vCPU descheduled between
// the round's line and its check). An activation the round was replayed
// before (roundBeforeTiedActivation) runs there in the same way.
func (r *replayer) bridgeRoundStop(rd *round, k, li int) {
	o := rd.o
	if o.cut || k != len(o.levels())-1 || o.last() != li {
		return
	}
	h := o.cpu
	g := r.topo.At(h, k)
	if g == hier.NoGroup || r.topo.Node(g) == nil {
		return
	}
	top := r.topo.Node(g).Parent == hier.NoGroup
	if a, ok := r.tiedBefore[rd.idx]; ok && k == 0 {
		// The tied activation's compare-and-swap came before this
		// check where the round stopped here: below the top by its
		// lines, at the top by the wakeup it left (KTIME_MAX, nothing
		// handled, unless its CPU's next activation prints another).
		if !r.done[a] && (!top || !r.roundLeftWakeup(o)) {
			rd.nested = true
			r.exec(a)
		}
		return
	}
	if top || *r.gk.at(g) != known {
		return
	}
	enters := r.roundEnters(h, k)
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.state(g)
		if !enters(cur) {
			return
		}
		j, split := r.bridge(o, g, cur, func(s gstate) bool { return !enters(s) }, false, -1)
		if j < 0 || !r.silent(h, li, r.ops[j].first()) {
			return
		}
		rd.nested = true
		r.execBridged(j, split, o, g)
	}
}

// bridgeRoundOn is bridgeRoundStop's converse: where the kernel's round
// went on past its level k (it printed the next level's line) but the
// model's group there has another child as migrator, the transition of
// another CPU that left the group without one came before the round's
// check, though printed after the round's line: that CPU printed nothing
// in between (a vCPU descheduled between its compare-and-swap and its
// line). A deactivation whose later levels were printed after the round's
// is replayed up to that compare-and-swap (splitsAt), the rest after the
// round.
//
// A round whose last line is its level-0 line in the top group shows
// whether it handled that group by the wakeup it wrote (enteredTop); there
// the transition may also have come first because the round's CPU printed
// nothing between its line and the transition's (its check, after its
// line, came later).
func (r *replayer) bridgeRoundOn(rd *round, k, li int) {
	o := rd.o
	top := k+1 >= len(o.levels())
	if top && !r.enteredTop(rd, k, li) {
		return
	}
	h := o.cpu
	g := r.topo.At(h, k)
	if g == hier.NoGroup || r.topo.Node(g) == nil || *r.gk.at(g) != known {
		return
	}
	enters := r.roundEnters(h, k)
	for tries := 0; tries < lookahead; tries++ {
		cur := r.m.state(g)
		if enters(cur) {
			return
		}
		j, split := r.bridge(o, g, cur, enters, false, -1)
		if j < 0 && top {
			r.aheadOfTopCheck(rd, g, li, enters)
			return
		}
		if j < 0 || !r.silent(r.ops[j].cpu, li, r.ops[j].first()) && !(top && r.silent(h, li, r.ops[j].first())) {
			return
		}
		rd.nested = true
		r.execBridged(j, split, o, g)
	}
}

// aheadOfTopCheck replays, before round rd's check of the top group g
// (its line li), the next transition of g by another CPU, one that leaves
// g where the round enters, with that CPU's operations pending before it
// (its own round, which changes no state): the round entered
// (enteredTop), so its check came after that compare-and-swap, and the
// round's CPU printed nothing between its line and the transition's.
func (r *replayer) aheadOfTopCheck(rd *round, g hier.GroupID, li int, enters func(gstate) bool) {
	h := rd.o.cpu
	for j := rd.idx + 1; j < len(r.ops) && j <= rd.idx+lookahead; j++ {
		p := r.ops[j]
		if r.done[j] || p.cpu == h || len(p.groups) == 0 {
			continue
		}
		gl := r.groupLine(p.groups[0])
		if gl.id != g {
			continue
		}
		pr := priorOf(gl.activate, gl.after, gl.childmask, gl.lvl)
		if !enters(gl.after) || pr.bad || !pr.admits(r.m.state(g)) || !r.silent(h, li, p.first()) {
			return
		}
		for k := range j {
			if !r.done[k] && r.ops[k].cpu == p.cpu && (k < rd.idx || len(r.ops[k].groups) > 0) {
				return // an earlier operation of its CPU changes groups, or waits
			}
		}
		for k := rd.idx + 1; k <= j; k++ {
			if !r.done[k] && r.ops[k].cpu == p.cpu {
				rd.nested = true
				r.exec(k)
			}
		}
		return
	}
}

// enteredTop reports whether round rd, whose last line li is its level-k
// line, handled that group, the top one, at level 0: a round that stops at
// its level-0 check writes its CPU's wakeup KTIME_MAX (tmigr_handle_remote's
// firstexp), one that handles the top writes the top's next expiry, and the
// CPU's next tmigr_cpu_active or tmigr_cpu_new_timer, which print the
// stored wakeup, says which. A claim of the CPU before that line tells
// nothing: it may have read the wakeup before the round's write, and it
// resets it. (A round that handles level 0 below the top prints its
// parent's line.)
func (r *replayer) enteredTop(rd *round, k, li int) bool {
	o := rd.o
	if k != 0 || o.cut || o.last() != li || r.topo.At(o.cpu, 0) != r.topo.Top {
		return false
	}
	i := r.wakeupLine(rd.idx)
	if i < 0 {
		return false
	}
	switch p := r.ev[i].Data.(type) {
	case ftrace.TmigrCPUActive:
		return p.Wakeup != hier.KtimeMax
	case ftrace.TmigrCPUNewTimer:
		return p.Wakeup != hier.KtimeMax
	}
	return false
}

// roundEnters returns whether a round of cpu h handles its level-k group
// in a given state: its child there is the migrator, or the group has
// none (tmigr_check_migrator).
func (r *replayer) roundEnters(h, k int) func(gstate) bool {
	child := r.topo.PathBit(h, k)
	return func(s gstate) bool { return s.migrator == child || s.migrator == hier.MigratorNone }
}

// execBridged replays operation j, which bridge returned for operation o
// and group g: whole, or, split, up to its compare-and-swap of g, resumed
// when o ends.
func (r *replayer) execBridged(j int, split bool, o *op, g hier.GroupID) {
	if split {
		r.split(j, o, g, false)
		return
	}
	r.exec(j)
}

// roundBeforeTiedActivation returns the round to replay before activation
// i, or -1: the next pending operation, another CPU's round, printed its
// first line within skewNS after i's transition of that CPU's group, and
// only from the state before that transition could it enter (the CPU not
// the migrator after it, its wakeup KTIME_MAX): tmigr_handle_remote's
// first check read the group before the activation's compare-and-swap.
// The activation then runs inside the round, before its check of the
// group, where the round stopped there (bridgeRoundStop), else after it.
func (r *replayer) roundBeforeTiedActivation(i int) int {
	a := r.ops[i]
	if a.kind != opActivate || len(a.groups) == 0 {
		return -1
	}
	k := i + 1
	for k < len(r.ops) && r.done[k] {
		k++
	}
	if k == len(r.ops) {
		return -1
	}
	o := r.ops[k]
	if o.kind != opRemote || o.cpu == a.cpu || len(o.levels()) == 0 || r.ev[o.first()].TS-r.ev[a.key()].TS > skewNS {
		return -1
	}
	h := o.cpu
	g, bit := r.topo.CPUGroup[h], r.topo.CPUBit[h]
	if *r.gk.at(g) != known || r.wk[h] != known || r.m.h.CPU(h).Wakeup != hier.KtimeMax {
		return -1
	}
	enters := func(s gstate) bool { return s.migrator == bit || s.migrator == hier.MigratorNone }
	for _, x := range a.groups {
		if gl := r.groupLine(x); gl.id == g {
			if enters(r.m.state(g)) && !enters(gl.after) {
				return k
			}
			return -1
		}
	}
	return -1
}

// updateBeforeRead replays, before round rd's read of its level k's queue
// (line li), the walk of another CPU whose event update of that group,
// printed after the round's line for the level below (after li at level
// 0) and before its next line after li, queued the event of the CPU the
// round claims next: tmigr_handle_remote_up prints a level's line before
// it takes the group's lock, and the update held it first (7.2
// kernel/time/timer_migration.c). Replayed whole at its place in the
// trace, the round would have read every level before that walk.
func (r *replayer) updateBeforeRead(rd *round, k, li int) {
	o := rd.o
	end := o.lineAfter(li)
	if end < 0 {
		return
	}
	claim, ok := r.ev[end].Data.(ftrace.TmigrHandleRemoteCPU)
	if !ok || claim.CPU == o.cpu {
		return
	}
	g := r.topo.At(o.cpu, k)
	if g == hier.NoGroup {
		return
	}
	from := li
	if k > 0 {
		from = o.levels()[k-1]
	}
	busy := r.busyCPUs(o.cpu, len(r.ops))
	defer r.putSet(busy)
	for j := rd.idx + 1; j < len(r.ops) && r.ops[j].key() < end; j++ {
		p := r.ops[j]
		if r.done[j] || busy[p.cpu] {
			continue
		}
		busy[p.cpu] = true // only a CPU's next operation
		if p.kind != opDeactivate && p.kind != opNewTimer || p.last() >= end {
			continue
		}
		for _, u := range p.lines {
			up, ok := r.ev[u].Data.(ftrace.TmigrUpdateEvents)
			if !ok || u < from || up.ChildEvtCPU != claim.CPU || up.Child == 0 {
				continue
			}
			if id, ok := r.gm.id(up.Group); ok && id == g {
				rd.nested = true
				r.exec(j)
				return
			}
		}
	}
}

// nestedInRound replays the operations of the round's own CPU printed
// wholly between two of its levels' lines, prev and li: they ran inside the
// round, before its check of the upper level (an interrupt's exit on a
// nohz_full CPU stops or restarts the tick: splitOps). Other CPUs'
// operations printed before each of them, since prev, came first.
func (r *replayer) nestedInRound(rd *round, prev, li int) {
	h := rd.o.cpu
	busy := r.busyCPUs(h, 0)
	defer r.putSet(busy)
	for j := rd.idx + 1; j < len(r.ops) && r.ops[j].key() < li; j++ {
		o := r.ops[j]
		if r.done[j] || o.cpu != h || o.first() < prev || o.last() > li {
			continue
		}
		for x := rd.idx + 1; x < j; x++ {
			if p := r.ops[x]; !r.done[x] && !busy[p.cpu] && p.key() > prev {
				rd.nested = true
				r.exec(x)
			}
		}
		rd.nested = true
		r.exec(j)
	}
}

// nextGlobalRemote answers fetch_next_timer_interrupt_remote for the
// current target from the kernel's walk after the expiry.
func (r *replayer) nextGlobalRemote(target int) int64 {
	rd := r.rounds[len(r.rounds)-1]
	if rd.cur >= 0 {
		rd.walked = append(rd.walked, target)
		if n, ok := r.refetched(rd.o, rd.cur); ok {
			r.ek[target] = known
			rd.note(target, n)
			return n
		}
	}
	if rd.cur >= 0 {
		if j, ok := r.wheel[rd.o.targets()[rd.cur]]; ok {
			r.ek[target] = known
			if j == 0 {
				return hier.KtimeMax
			}
			n := r.clk.ns(j)
			if rd.lo == rd.hi && n < rd.lo {
				n = rd.lo // an overdue timer is reported at now
			}
			rd.note(target, n)
			return n
		}
	}
	r.setEvUnknown(target, reasonRefetch)
	rd.why = first(rd.why, reasonRefetch)
	return hier.KtimeMax
}

// wheelNext answers what the target of each remote expiry has as its next
// global timer once its timers ran: the earliest bucket among its pending
// global timers, if strictly before its first pinned one (a local timer
// wins ties: the target wakes up for it anyway), in jiffies; 0 for none.
// The kernel prints that value in the level-0 update of its walk, except at
// an idle top, where the walk of a remote expiry prints nothing (a
// single-level hierarchy whose last CPU handles its own wakeup); then the
// timer lines tell, if they hold every timer that can matter. In a trace
// from boot they hold every timer. Otherwise a timer armed before the
// recording (pre, see preexisting) that may still sit on the target's bases
// at that moment and may be due no later than the answer leaves it
// unanswered, and so does an answer of none or one beyond the recording's
// last jiffy end (a timer that outlives the recording shows no line at
// all).
func wheelNext(events []ftrace.Event, x *eventIndex, ops []*op, pre []preTimer, clk *clock, boot bool, end uint64) map[int]uint64 {
	// The answer for a target line is read at the handler's next tmigr
	// line: its timers ran in between.
	at := map[int][]int{} // event index -> target lines answered there
	for _, o := range ops {
		if o.kind != opRemote {
			continue
		}
		for _, ti := range o.targets() {
			end := len(events) - 1
			for i := ti + 1; i < len(events); i++ {
				if events[i].CPU == o.cpu && ftrace.IsTmigr(events[i].Data) {
					end = i
					break
				}
			}
			at[end] = append(at[end], ti)
		}
	}
	type pend struct {
		cpu    int
		bucket uint64
		pinned bool
	}
	pending := map[uint64]pend{}
	started := map[uint64]bool{}
	out := map[int]uint64{}
	// blocked reports whether a timer from before the recording may change
	// the answer g (0: none) for cpu at event index i.
	blocked := func(cpu, i int, g uint64) bool {
		if boot {
			return false
		}
		if g == 0 || wheel.After(g, end) {
			return true
		}
		for _, p := range pre {
			if !p.mayHold(i, cpu) {
				continue
			}
			earliest := p.bucket
			if !p.revealed {
				earliest = p.atJ - 1
			}
			if !wheel.After(earliest, g) {
				return true
			}
		}
		return false
	}
	// The loop reads the timer events and those where targets' answers
	// are read (at), in order: the others change nothing.
	stops := make([]int, 0, len(at))
	for i := range at {
		stops = append(stops, i)
	}
	slices.Sort(stops)
	for _, i := range union(x.having(kindsOf(kTimer)), stops) {
		ev := &events[i]
		for _, ti := range at[i] {
			cpu := events[ti].Data.(ftrace.TmigrHandleRemoteCPU).CPU
			var g, l uint64
			for _, p := range pending {
				switch {
				case p.cpu != cpu:
				case p.pinned:
					if l == 0 || p.bucket < l {
						l = p.bucket
					}
				case g == 0 || p.bucket < g:
					g = p.bucket
				}
			}
			if g != 0 && l != 0 && l <= g {
				g = 0
			}
			if !blocked(cpu, i, g) {
				out[ti] = g
			}
		}
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			started[p.Timer] = true
			if p.Flags&ftrace.TimerDeferrable != 0 {
				delete(pending, p.Timer)
			} else {
				pending[p.Timer] = pend{p.CPU, p.BucketExpiry, p.Flags&ftrace.TimerPinned != 0}
			}
		case ftrace.TimerCancel, ftrace.TimerExpireEntry:
			tm := timerOf(p)
			if !started[tm] && boot {
				return nil
			}
			delete(pending, tm)
		}
	}
	return out
}

// callbackAround returns the index of the timer_expire_exit that ends the
// callback of the handler's expiry (begun after its claim, line ti) around
// operation o of the handler, or -1 if o does not lie wholly inside one.
func (r *replayer) callbackAround(handler, ti int, o *op) int {
	in := false
	for i := ti + 1; i < len(r.ev); i++ {
		ev := &r.ev[i]
		if ev.CPU != handler {
			continue
		}
		if i >= o.first() && !in {
			return -1
		}
		switch ev.Data.(type) {
		case ftrace.TimerExpireEntry:
			in = true
		case ftrace.TimerExpireExit:
			if i > o.last() {
				return i
			}
			in = false
		}
	}
	return -1
}

// A round replayed inside another's remote expiry (expireRemote) may reach
// a level whose line its CPU printed after the outer round's line for its
// own next level. tmigr_handle_remote_up prints a level's line, then
// checks the migrator; the outer round's check of its current level came
// before that line of its own, and the inner round's work at the later
// level (its CPU's operations between the two levels, its check there)
// after the inner one's: the inner round, on its own goroutine, waits at
// that level's entry, where it holds no lock, for the outer round to end.
// Found where a claimed CPU's own round ran inside the expiry of its
// timers, and its CPU became active between its two levels only after the
// outer round had seen the level-0 group without a migrator and gone up
// (7.3).
type roundWait struct {
	o     *op    // the waiting round
	outer *round // the round it waits for
	at    int    // the outer round's next level line, printed first
	handoff
}

// waitLine returns, for operation p to replay inside the expiry of round
// outer, the line of outer's next level if p is a round that printed a
// later level of its own after it (p waits there), or -1.
func (r *replayer) waitLine(p *op, outer *round) int {
	if p.kind != opRemote || outer.entered >= len(outer.o.levels()) || len(p.levels()) < 2 {
		return -1
	}
	at := outer.o.levels()[outer.entered]
	for _, l := range p.levels()[1:] {
		if l > at {
			return at
		}
	}
	return -1
}

// execWaiting replays round j, which may wait for round outer (waitLine's
// line at), on a goroutine of its own: it returns when the round ended or
// waits.
func (r *replayer) execWaiting(j int, outer *round, at int) {
	w := &roundWait{o: r.ops[j], outer: outer, at: at, handoff: newHandoff()}
	r.starting = w
	r.launch(&w.handoff, func() { r.exec(j) })
	r.starting = nil
	if !w.ended {
		r.waits = append(r.waits, w)
	}
}

// wait is the waiting round's side, at its level's entry.
func (r *replayer) wait(w *roundWait) {
	r.starting = nil
	r.park(&w.handoff)
}

// resumeWaits lets the rounds waiting for round rd, which has ended, go
// on, each to its end.
func (r *replayer) resumeWaits(rd *round) {
	for k := 0; k < len(r.waits); {
		w := r.waits[k]
		if w.outer != rd {
			k++
			continue
		}
		r.waits = slices.Delete(r.waits, k, k+1)
		r.wake(&w.handoff)
		r.checkInvariants()
	}
}
