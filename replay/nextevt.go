package replay

import (
	"fmt"
	"sort"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/tick"
	"github.com/tmigr/tmigr/wheel"
)

// The nextevt check.
//
// When a CPU goes idle (tmigr_cpu_deactivate) or re-evaluates its sleep
// with its base already idle (tmigr_cpu_new_timer), the timer code hands
// the hierarchy its first global timer, nextevt, which the kernel prints in
// tmigr_cpu_idle and tmigr_cpu_new_timer_idle. The tmigr check takes the
// printed value as its input; this check holds it against our own tick and
// timer code, driven as a driver drives it: the recording's timer_start,
// timer_cancel and timer_expire_entry lines rebuild every CPU's LOCAL,
// GLOBAL and DEF bases in a cpu.Set, each timer in the bucket the kernel
// printed (cpu.Set.Restore), and at every such line the CPU's tick.CPU
// runs a round of its idle loop (tick.CPU.Idle, the kernel's
// tick_nohz_idle_stop_tick). The value compared is the one that round hands
// the hierarchy, as the hierarchy's Tracer reports it: for a tmigr_cpu_idle
// the tick must have found the next event more than a tick away
// (tick_nohz_next_event) and set the base idle (timer_base_try_to_set_idle,
// whose tmigr_cpu_deactivate carries nextevt); for a
// tmigr_cpu_new_timer_idle the base must have been idle already and the
// next event more than a jiffy away (__get_next_timer_interrupt's
// tmigr_cpu_new_timer). A round that hands nothing is a mismatch; so, on a
// nohz_full machine, is any such line of the timekeeper, whose tick.CPU
// never stops its tick in the idle loop (can_stop_idle_tick). nextevt
// itself is fetch_next_timer_interrupt's global event: KTIME_MAX when the
// global wheel is empty, when the local wheel's first timer is on the same
// jiffy or earlier, or for deferrable timers, which the DEF base keeps out.
//
// The trace shows a CPU's idle entries (tmigr_cpu_idle) but not all its
// exits, so the replay puts each CPU's tick where the line says the
// kernel's was: before a tmigr_cpu_idle, a CPU whose tick the model left
// stopped leaves idle first (tick.CPU.IdleExit: the kernel's tick restarted
// meanwhile, timer_clear_idle); before a tmigr_cpu_new_timer_idle, a CPU
// whose tick the model left running enters idle first (an idle entry before
// the recording, or one the model's own hierarchy turned back). The
// hierarchy under the ticks is a stand-in: what it answers (the wakeup, and
// the quick check's first event) is the tmigr check's to hold against the
// kernel, and a replica holding only this check's state would answer
// guesses. So the cpu.Set has one CPU more than the machine, which stays
// active: with it every answer is KTIME_MAX (another CPU is active), and
// the tick's decisions read only the CPU's own timers. The kernel's quick
// check (tmigr_quick_check) could only have brought its next event nearer
// and kept its tick running, which a printed tmigr_cpu_idle says it did
// not; a wakeup within a tick, turning the CPU back after the line
// (tmigr_cpu_activate), is what the next line's resynchronisation above
// covers.
//
// A CPU taken offline is taken down in the model at the first timer its
// migration moves (timers_dead_cpu prints each timer's cancel and its
// start on the CPU running it; see migrating) and brought up at its
// tmigr_cpu_online or tmigr_cpu_available: its bases keep the pending bits
// of the buckets the migration emptied, which its next recalculation finds
// (wheel.Base.MigrateTo). Such a bucket holds no timer, so no line shows
// its expiry: before a tmigr_cpu_idle, the CPU's own due buckets are
// expired (cpu.Set.RunBase), as its tick's softirq did while it ran, at
// the lowest jiffy the trace allows or, where that leaves such a bucket
// first that jiffies may have reached, at the bucket's (markedDue).
//
// The value does not depend on where in its jiffy the CPU's snapshot was
// taken: a line is printed only when the next event is more than a jiffy
// away, and then nextevt is ns(B) for the bucket expiry B of the first
// global timer, ns being the clock of clock.go; the round runs at the start
// of the lowest jiffy the trace allows, the strictest test of that. Where
// that clock's offset is not known, or a timer whose start the trace does
// not show (its first line is a cancel or an expiry, or such a line
// follows its expiry with no start between) may be pending on the CPU and
// could explain a difference, a difference is undetermined, not a
// mismatch; so is one on a CPU whose buffer lost events ("events lost": a
// timer line of that CPU may be missing), and one on a CPU that came back
// into the hierarchy without the recording showing it leave (it may hand
// over a bucket its timers left marked when they were moved away).

// The reasons of the nextevt check, beside whyLost.
const (
	whyTimeBase      = "time base unknown"
	whyPendingBeyond = "timer armed before the recording, pending beyond its end"
	whyDueBefore     = "timer due before the recording began"
	whyArmedBefore   = "timer armed before the recording"
	whyStartMissing  = "timer pending with no start in the trace"
	whyLeftUnseen    = "CPU left the hierarchy before the recording"
)

// CheckNextevt runs the nextevt check over a trace of the machine s.
func CheckNextevt(t *Trace, s Shape) (Counts, error) {
	c, _, err := runNextevt(newFacts(t), s)
	return c, err
}

// runNextevt is CheckNextevt, returning the machine it drove as well.
func runNextevt(f *facts, s Shape) (Counts, *idleMachine, error) {
	t := f.t
	c := f.t.counts()
	if s.CPUs <= 0 {
		return c, nil, fmt.Errorf("the trace does not say how many CPUs the machine has; give it with --cpus")
	}
	if s.CPUs >= cpumask.MaxCPUs {
		return c, nil, fmt.Errorf("the nextevt check models at most %d CPUs, not %d", cpumask.MaxCPUs-1, s.CPUs)
	}
	clk := f.clock(s.HZ)
	start := firstJiffies(t, f.index())
	m, err := newIdleMachine(s, clk, start)
	if err != nil {
		return c, nil, err
	}
	set := m.set
	pre := f.preexisting(clk)
	runs := &lazyRuns{t: t, cpus: s.CPUs, tick: clk.tick}
	end := f.lastJiffies()
	timers := map[uint64]*wheel.Timer{}
	// remoteRun holds the timers a remote expiry ran in the model until
	// their expiry lines come: one re-armed before is one the kernel's
	// expiry did not run (the recording may end first).
	remoteRun := map[*wheel.Timer]bool{}
	timer := func(p uint64) *wheel.Timer {
		tm := timers[p]
		if tm == nil {
			tm = new(wheel.Timer)
			timers[p] = tm
		}
		return tm
	}
	lost := make([]bool, s.CPUs) // CPUs whose buffer lost events
	// unseen: CPUs that came back into the hierarchy without the
	// recording showing them leave it (a recording that begins while a
	// CPU is offline; not the first onlining of a boot): see
	// reasonLeftUnseen in checkNextevt.
	unseen := make([]bool, s.CPUs)
	boot := startsAtBoot(t.Events)
	// A CPU the machine line says went offline before the first event
	// (a window cut from a longer recording) left where the recording
	// does not show, whether or not it is back.
	for _, ch := range s.At {
		if ch.Kind == ftrace.ChangeOffline && ch.CPU >= 0 && ch.CPU < s.CPUs && f.changesStart()+int64(ch.At) < firstEventTS(t.Events) {
			unseen[ch.CPU] = true
		}
	}
	var tickK int64              // the latest time a tick's expiry read (CLOCK_MONOTONIC)
	wq := newQueue()             // for the buckets an expiry takes off the wheel whole
	left := make([]bool, s.CPUs) // CPUs that left the hierarchy and have not come back
	// before is, per CPU, its last line before the idle-entry operation
	// in progress (-1: none): the snapshot of jiffies the operation hands
	// on was taken after it.
	before := make([]int, s.CPUs)
	for k := range before {
		before[k] = -1
	}
	for i := range t.Events {
		ev := &t.Events[i]
		if ev.CPU >= 0 && ev.CPU < s.CPUs {
			switch ev.Data.(type) {
			case ftrace.TmigrGroupSetCPUInactive, ftrace.TmigrUpdateEvents, ftrace.TmigrCPUNewTimer,
				ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			default:
				before[ev.CPU] = i
			}
		}
		// The snapshot's jiffies: the lowest the trace allows.
		lowest := func() uint64 {
			if lo, _, hasLo, _ := clk.bounds(i, ev.CPU); hasLo {
				return lo
			}
			return start
		}
		switch p := ev.Data.(type) {
		case ftrace.TmigrCPUOffline:
			if p.CPU >= 0 && p.CPU < s.CPUs {
				left[p.CPU] = true
			}
		case ftrace.TmigrCPUUnavailable:
			if p.CPU >= 0 && p.CPU < s.CPUs {
				left[p.CPU] = true
			}
		case ftrace.TmigrCPUOnline, ftrace.TmigrCPUAvailable:
			g := ftrace.TmigrCPUGroup{}
			if q, ok := p.(ftrace.TmigrCPUOnline); ok {
				g = ftrace.TmigrCPUGroup(q)
			} else {
				g = ftrace.TmigrCPUGroup(p.(ftrace.TmigrCPUAvailable))
			}
			if g.CPU < 0 || g.CPU >= s.CPUs {
				break
			}
			if !left[g.CPU] && !boot {
				unseen[g.CPU] = true
			}
			left[g.CPU] = false
			if !m.cpus[g.CPU].IsOnline() {
				// Back from a hotplug whose migration the model ran:
				// timers_prepare_cpu, which keeps the bases' pending
				// bitmaps (wheel.Base.Prepare).
				if _, err := m.cpus[g.CPU].Online(clk.ns(lowest())); err != nil {
					return c, nil, fmt.Errorf("line %d: %v", ev.Line, err)
				}
			}

		case ftrace.TmigrHandleRemoteCPU:
			// timer_expire_remote runs the claimed CPU's global base:
			// its due timers print their expiries next, and a due bucket
			// marked pending with no timer (wheel.Base.MigrateTo) goes
			// with them, printing nothing.
			if p.CPU >= 0 && p.CPU < s.CPUs && m.cpus[p.CPU].IsOnline() {
				j := lowest()
				pass := m.set.RunBase(p.CPU, cpu.BaseGlobal, cpu.Snapshot{J: j, M: clk.ns(j)})
				for tm := pass.Next(); tm != nil; tm = pass.Next() {
					remoteRun[tm] = true
				}
				// tmigr_handle_remote_cpu claims only a CPU whose event
				// is due at the round's now, and __run_timer_base reads
				// jiffies after that snapshot: jiffies had reached the
				// target's event, a bucket the trace may not bound. Its
				// run there collects the empty buckets up to it; a timer
				// due by then leaves with its own lines, which may come
				// after the target's next ones (the handler runs the base
				// after the claim's line).
				if b, ok := clk.jiffyOf(runs.get().handedBefore(p.CPU, i)); ok && wheel.Before(j, b) && !dueBy(timers, p.CPU, b) {
					pass := m.set.RunBase(p.CPU, cpu.BaseGlobal, cpu.Snapshot{J: b, M: clk.ns(b)})
					for tm := pass.Next(); tm != nil; tm = pass.Next() {
						remoteRun[tm] = true
					}
				}
			}
		case ftrace.Lost, ftrace.BufferStarted:
			if ev.CPU >= 0 && ev.CPU < s.CPUs {
				lost[ev.CPU] = true
			}
		case ftrace.HrtimerExpireEntry:
			if isTickHandler(p.Function) && p.Now > tickK {
				tickK = p.Now
			}
		case ftrace.TimerStart:
			if remoteRun[timers[p.Timer]] {
				// Re-armed with no expiry line since a remote expiry
				// ran it in the model: the kernel's did not.
				delete(remoteRun, timers[p.Timer])
				m.expiredUnseen++
			}
			if p.CPU >= s.CPUs {
				return c, nil, fmt.Errorf("line %d: timer_start on CPU %d of a %d-CPU machine", ev.Line, p.CPU, s.CPUs)
			}
			flags := uint32(p.Flags) & (cpu.Deferrable | cpu.Pinned)
			set.Restore(timer(p.Timer), p.CPU, flags, p.Expires, p.Now(), p.Idx, p.BucketExpiry)
			wq.start(p)
		case ftrace.TimerCancel:
			tm := timers[p.Timer]
			if tm != nil && migrating(t.Events, i, tm, left) && m.cpus[tm.CPU()].IsOnline() {
				// The first timer timers_dead_cpu moves: the CPU is
				// dead, and its timers go to this CPU's bases.
				if _, err := m.cpus[tm.CPU()].Offline(&m.cpus[ev.CPU], clk.ns(lowest())); err != nil {
					return c, nil, fmt.Errorf("line %d: %v", ev.Line, err)
				}
			}
			if tm != nil {
				set.Del(tm)
			}
			if x, ok := expiringCancel(t.Events, i, p); ok {
				// The timer's bucket left the wheel before this
				// line: another CPU computing its next event
				// meanwhile no longer sees it.
				wq.expire(x, func(tm uint64) { set.Del(timers[tm]) })
			}
			wq.cancel(p.Timer)
		case ftrace.TimerExpireEntry:
			if tm := timers[p.Timer]; tm != nil {
				set.Del(tm)
				delete(remoteRun, tm)
			}
			// The bucket's other timers left the wheel with it (queue).
			wq.expire(p, func(tm uint64) { set.Del(timers[tm]) })
		case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			kind, c0, printed := hier.EvCPUIdle, 0, int64(0)
			if q, ok := p.(ftrace.TmigrCPUIdle); ok {
				c0, printed = q.CPU, q.NextEvt
			} else {
				q := p.(ftrace.TmigrCPUNewTimerIdle)
				kind, c0, printed = hier.EvCPUNewTimerIdle, q.CPU, q.NextEvt
			}
			// The snapshot's jiffies: nextevt does not depend on it once
			// the next event is more than a jiffy away, which the kernel
			// printing the line says; the lowest the trace allows is the
			// strictest test of that. tick_nohz_next_event took it
			// (ts->last_jiffies) when the idle governor asked for the
			// sleep length, any time after the CPU's last line before
			// this operation: a vCPU stalled since reads later jiffies
			// in its lines.
			basej := lowest()
			if b := before[ev.CPU]; ev.CPU >= 0 && ev.CPU < s.CPUs && b >= 0 {
				if lo, _, hasLo, _ := clk.bounds(b+1, ev.CPU); hasLo && wheel.Before(lo, basej) {
					basej = lo
				}
			}
			late := markedDue{tickK: tickK, timers: timers}
			_, late.hi, _, late.hasHi = clk.bounds(i, ev.CPU)
			checkNextevt(&c, t.Events, i, kind, c0, printed, m, clk, basej, start, end, pre, runs, late,
				c0 >= 0 && c0 < len(lost) && lost[c0], c0 >= 0 && c0 < len(unseen) && unseen[c0])
		}
	}
	return c, m, nil
}

// dueBy reports whether a pending timer of CPU c's global base expires by
// jiffy b.
func dueBy(timers map[uint64]*wheel.Timer, c int, b uint64) bool {
	for _, tm := range timers {
		if tm.Pending() && tm.CPU() == c && tm.Flags()&(cpu.Pinned|cpu.Deferrable) == 0 && !wheel.After(tm.Expires(), b) {
			return true
		}
	}
	return false
}

// migrating reports whether the cancel at event i is migrate_timer_list's
// (timers_dead_cpu, kernel/time/timer.c): tm sits on the bases of a CPU
// that left the hierarchy and has not come back, another CPU prints the
// cancel, and that CPU's next line starts tm on its own bases at the same
// expiry. A pending timer re-armed by __mod_timer at its own expiry
// prints neither line (the early return for an unchanged pending timer),
// so the pattern is the migration's.
func migrating(evs []ftrace.Event, i int, tm *wheel.Timer, left []bool) bool {
	y := tm.CPU()
	if !tm.Pending() || y == evs[i].CPU || y >= len(left) || !left[y] {
		return false
	}
	st, ok := nextOnCPU(evs, i).(ftrace.TimerStart)
	return ok && st.Timer == evs[i].Data.(ftrace.TimerCancel).Timer && st.CPU == evs[i].CPU && st.Expires == tm.Expires()
}

// idleMachine is the recorded machine's tick and timer code as the nextevt
// check drives it: one tick.CPU per CPU over one cpu.Set, whose hierarchy
// has one CPU more that stays active (see above). It is the hierarchy's
// Tracer: what the CPUs hand it arrives in evs.
type idleMachine struct {
	set  *cpu.Set
	cpus []tick.CPU
	evs  []hier.Event
	// keeper is the CPU that never stops its tick in the idle loop (the
	// timekeeper under nohz_full: can_stop_idle_tick), or -1.
	keeper int
	// expiredUnseen counts the timers the softirq of a CPU going idle,
	// or a remote expiry, expired though no line had or did: none where
	// the lines tell every expiry. The tests hold it to that.
	expiredUnseen int
	// answered counts the rounds the stand-in hierarchy answered with an
	// event (a wakeup other than KTIME_MAX): none, while its extra CPU
	// stays active. The tests hold it to that.
	answered int
}

// Trace implements hier.Tracer.
func (m *idleMachine) Trace(e hier.Event) { m.evs = append(m.evs, e) }

// newIdleMachine boots the machine s at jiffy start with every CPU online
// and its tick running, on the tick grid of the clock clk.
func newIdleMachine(s Shape, clk *clock, start uint64) (*idleMachine, error) {
	m := &idleMachine{cpus: make([]tick.CPU, s.CPUs), keeper: -1}
	// The command line's nohz_full: its CPUs' GLOBAL base goes idle with
	// the LOCAL one, and the timekeeper keeps its tick.
	km, err := s.model()
	if err != nil {
		return nil, err
	}
	iso, err := s.isolation(km, cpumask.Mask{})
	if err != nil {
		return nil, err
	}
	if !iso.NohzFull.Empty() {
		m.keeper = iso.Timekeeper
	}
	// Every CPU on one node: which group a CPU is in does not change what
	// it hands the hierarchy, and the active CPU makes it answer KTIME_MAX
	// whatever the groups. Isolated CPUs stay in it (cpu.Pull): one that
	// the kernel keeps out prints none of these lines.
	set, err := cpu.New(cpu.Config{NodeOf: make([]int, s.CPUs+1), HZ: s.HZ, Policy: cpu.Pull, Tracer: m,
		Isolation: hier.Isolation{NohzFull: iso.NohzFull, Timekeeper: iso.Timekeeper}})
	if err != nil {
		return nil, err
	}
	m.set = set
	// The grid whose jiffy J begins at clk.ns(J): a round run at clk.ns(J)
	// takes the snapshot (J, clk.ns(J)).
	grid := tick.Grid{T0: clk.ns(0), J0: 0, TickNs: clk.tick}
	now := clk.ns(start)
	for i := range m.cpus {
		hr, err := hrtimer.NewCPUBase(i, hrtimer.Config{})
		if err != nil {
			return nil, err
		}
		if err := m.cpus[i].Init(tick.Config{CPU: i, Set: set, Hrtimer: hr, Grid: grid,
			NohzFull: iso.NohzFull.Test(i), Timekeeper: i == m.keeper}); err != nil {
			return nil, err
		}
		if _, err := m.cpus[i].Online(now); err != nil {
			return nil, err
		}
	}
	// The CPU that stays active: online, never idle.
	if err := set.Online(s.CPUs, start); err != nil {
		return nil, err
	}
	return m, nil
}

// handed runs a round of CPU c's idle loop at now in the state a line of
// kind says the kernel's CPU was in, and returns the nextevt the round
// handed the hierarchy in a line of that kind, if it did.
func (m *idleMachine) handed(c int, kind hier.EventKind, basej uint64, now int64) (int64, bool) {
	tc := &m.cpus[c]
	switch kind {
	case hier.EvCPUIdle:
		// The kernel's CPU was active, its tick running: if the model
		// left it stopped, the kernel's restarted since.
		if tc.Stopped() {
			tc.IdleExit(now, false)
		}
		// While active, its tick ran every jiffy and its softirq
		// expired every due bucket of its bases: timers, whose lines
		// came before this one, and buckets marked pending with no
		// timer (the marks a hotplug migration leaves,
		// wheel.Base.MigrateTo), which print nothing. Its remote
		// expiries are the hierarchy's, which the stand-in does not
		// know, and show in their lines.
		snap := cpu.Snapshot{J: basej, M: now}
		for i := range cpu.NumBases {
			p := m.set.RunBase(c, i, snap)
			for t := p.Next(); t != nil; t = p.Next() {
				m.expiredUnseen++
			}
		}
	case hier.EvCPUNewTimerIdle:
		// The kernel's CPU was idle, its tick stopped: if the model left
		// it running, the CPU entered idle where the model did not see it.
		if !tc.Stopped() {
			tc.Idle(now)
		}
	}
	m.evs = m.evs[:0]
	tc.Idle(now)
	for _, e := range m.evs {
		if e.Kind == kind && e.CPU == c {
			if e.Wakeup != cpu.KtimeMax {
				m.answered++
			}
			return e.NextEvt, true
		}
	}
	return 0, false
}

// checkNextevt checks one printed nextevt of CPU c against our tick and
// timer code.
func checkNextevt(cnt *Counts, evs []ftrace.Event, i int, kind hier.EventKind, c int, printed int64,
	m *idleMachine, clk *clock, basej, start, end uint64, pre []preTimer, runs *lazyRuns, late markedDue, lost, unseen bool) {
	ev := &evs[i]
	if c < 0 || c >= len(m.cpus) {
		cnt.mismatch(Mismatch{Line: ev.Line, Event: kind.String(), Kernel: fmt.Sprintf("cpu=%d", c), Model: "no such CPU"})
		return
	}
	if !clk.known {
		cnt.undeterminedBy(ev.Line, reasonTimeBase)
		return
	}
	model, idle := m.handed(c, kind, basej, clk.ns(basej))
	if idle && model == printed {
		cnt.match(ev.Line)
		return
	}
	if kind == hier.EvCPUIdle {
		// The snapshot at the lowest jiffy the trace allows left a
		// marked bucket with no timer first, or a jiffy away (the tick
		// kept); had jiffies reached it, the CPU's softirq collected it
		// before the line (see markedDue).
		next, stop := model, idle
		if !idle {
			next = m.set.NextEvents(c, cpu.Snapshot{J: basej, M: clk.ns(basej)}).Global
		}
		for range 8 {
			b, ok := late.collectable(c, next, clk)
			if !ok {
				break
			}
			if next, stop = m.handed(c, kind, b, clk.ns(b)); !stop {
				break
			}
			if next == printed {
				cnt.undeterminedBy(ev.Line, reasonNow)
				return
			}
		}
		if idle {
			model, idle = next, stop
		}
	}
	if !idle && c == m.keeper {
		// No timer explains it: this CPU keeps its tick whatever its
		// timers.
		cnt.mismatch(Mismatch{Line: ev.Line, Event: kind.String() + " nextevt", Kernel: fmtNS(printed),
			Model: fmt.Sprintf("tick kept, no %s: CPU %d keeps time for the nohz_full CPUs (can_stop_idle_tick)", kind, c)})
		return
	}
	if !idle {
		// Nothing handed over: what the CPU would have handed, for the
		// explanations below.
		model = m.set.NextEvents(c, cpu.Snapshot{J: basej, M: clk.ns(basej)}).Global
	}
	// A timer pending since before the recording began, which the model
	// does not hold, explains the kernel's value if it could be first:
	// global and due at the printed event, or local and due no later than
	// the model's global event (which makes nextevt KTIME_MAX). One that
	// outlives the recording shows no line at all, so it explains a
	// nextevt at the last jiffy the recording shows or later (that jiffy's
	// softirq may run after the last line). One that expires shows its bucket
	// (and its CPU); one that is cancelled does not, but it had not expired
	// by then, so its bucket is no earlier than the jiffy before, unless
	// it was a global timer of a CPU idle until then (overdueAtCancel).
	if lost {
		// Its buffer lost events: timers started or removed in the gap
		// are not in our bases.
		cnt.undeterminedBy(ev.Line, reasonLost)
		return
	}
	if printed != cpu.KtimeMax && printed >= clk.ns(end) && (model == cpu.KtimeMax || model > printed) {
		cnt.undeterminedBy(ev.Line, reasonPendingBeyond)
		return
	}
	if printed == cpu.KtimeMax && model != cpu.KtimeMax && (model >= clk.ns(end) || model > runs.get().stalledAt(c)-clk.tick) {
		// A local timer due no later than the model's global event, so
		// beyond the recording's end too, or beyond the time the
		// recording shows its CPU stop running (stalledFrom), whose
		// softirq alone runs it: fetch_next_timer_interrupt (6.9+)
		// leaves the global event KTIME_MAX when the local base comes
		// first.
		cnt.undeterminedBy(ev.Line, reasonPendingBeyond)
		return
	}
	if printed != cpu.KtimeMax && printed < clk.ns(start) && (model == cpu.KtimeMax || model > printed) {
		// Due before the first jiffy the trace shows, and pending on a
		// CPU whose lines the trace clock may put too late.
		cnt.undeterminedBy(ev.Line, reasonDueBefore)
		return
	}
	for _, p := range pre {
		if !p.mayHold(i, c) {
			continue
		}
		earliest := clk.ns(p.bucket) // the earliest event it can stand for
		if !p.revealed {
			earliest = clk.ns(p.atJ - 1)
		}
		if len(p.marked) > 0 {
			// An empty bucket: it explains its own expiry, where it
			// comes first.
			for _, b := range p.marked {
				if printed == clk.ns(b) && (model == cpu.KtimeMax || model > printed) {
					cnt.undeterminedBy(ev.Line, p.why())
					return
				}
			}
			continue
		}
		switch {
		case printed == cpu.KtimeMax && (model == cpu.KtimeMax || earliest <= model),
			printed != cpu.KtimeMax && (p.revealed && printed == earliest || !p.revealed && printed >= earliest),
			printed != cpu.KtimeMax && !p.revealed && (model == cpu.KtimeMax || model > printed) &&
				overdueAtCancel(evs, i, p.until, c, clk.tick):
			cnt.undeterminedBy(ev.Line, p.why())
			return
		}
	}
	if printed != cpu.KtimeMax && (model == cpu.KtimeMax || model > printed) && runs.get().pendingThrough(c, i, printed, clk) {
		// Due within the recording, but no run of c's bases from here
		// on would have expired it: it may be pending through the end.
		cnt.undeterminedBy(ev.Line, reasonPendingBeyond)
		return
	}
	if idle && clk.upper && lowerOffExplains(printed, model, clk, end, i, c, pre) {
		// The offset is the ticks' upper bound alone: one a few
		// jiffies lower, which the recording allows, explains it.
		cnt.undeterminedBy(ev.Line, reasonTimeBase)
		return
	}
	if unseen {
		// The CPU came back into the hierarchy, and the recording does
		// not show it leave: it went offline before the recording
		// began, or left in a stretch it does not show. Going offline,
		// timers_dead_cpu moved its timers to another CPU, and
		// migrate_timer_list's detach_timer left their buckets' bits
		// set; timers_prepare_cpu, back online, keeps the bitmaps
		// (kernel/time/timer.c, 6.9-7.3). So the CPU may hand over a
		// bucket marked before it left, or no longer hold a timer the
		// model holds: which, the recording does not tell.
		cnt.undeterminedBy(ev.Line, reasonLeftUnseen)
		return
	}
	got := fmtNS(model)
	if !idle {
		evs := m.set.NextEvents(c, cpu.Snapshot{J: basej, M: clk.ns(basej)})
		if kind == hier.EvCPUIdle {
			got = fmt.Sprintf("tick kept, no %s (tick_nohz_next_event, timer_base_try_to_set_idle): next wheel event at jiffy %d, snapshot at %d", kind, evs.Next, basej)
		} else {
			got = fmt.Sprintf("next event at jiffy %d, not more than a jiffy after %d: no %s", evs.Next, basej, kind)
		}
	}
	cnt.mismatch(Mismatch{Line: ev.Line, Event: kind.String() + " nextevt", Kernel: fmtNS(printed), Model: got})
}

// baseRuns is what the trace shows of each CPU's timer bases after a
// point: a timer armed before the recording that no line ever shows (no
// expiry, no cancel) may be pending through its end, due or not, unless
// the CPU later hands over a later first event (the timer would still
// come first), or a run of its bases at or past its jiffy would have
// expired it, printing its expiry. A timer softirq runs every base of its
// CPU (run_timer_softirq, 6.9+ kernel/time/timer.c), so an expiry line of
// that CPU with a later jiffies says its global base ran then; a remote
// round's claim of it (tmigr_handle_remote_cpu, whose now had reached the
// event the CPU last handed over) ran its global base too.
type baseRuns struct {
	// expiries: per CPU, its timer_expire_entry lines in order, and
	// the greatest jiffies printed from each on (suffix maximum).
	expiries [][]int
	maxNow   [][]uint64
	// claims: per CPU, the claims of it in order, with the event it
	// had last handed over before each.
	claims  [][]int
	claimed [][]int64
	// handed: per CPU, its tmigr_cpu_idle and tmigr_cpu_new_timer_idle
	// lines in order, with the event each handed over.
	handed    [][]int
	handedEvt [][]int64
	// stalled: per CPU, the time from which the recording shows it not
	// running (stalledFrom), KtimeMax for none.
	stalled []int64
}

// lazyRuns finds a trace's baseRuns when first asked (a pass over the
// whole recording, which a recording whose decisions stop before they
// read them never needs).
type lazyRuns struct {
	t    *Trace
	cpus int
	tick int64 // TICK_NSEC
	runs *baseRuns
}

func (l *lazyRuns) get() *baseRuns {
	if l.runs == nil {
		l.runs = baseRunsOf(l.t, l.cpus, l.tick)
	}
	return l.runs
}

func baseRunsOf(t *Trace, cpus int, tick int64) *baseRuns {
	b := &baseRuns{expiries: make([][]int, cpus), maxNow: make([][]uint64, cpus), claims: make([][]int, cpus), claimed: make([][]int64, cpus),
		handed: make([][]int, cpus), handedEvt: make([][]int64, cpus)}
	published := make([]int64, cpus)
	for k := range published {
		published[k] = hier.KtimeMax
	}
	for i := range t.Events {
		ev := &t.Events[i]
		switch p := ev.Data.(type) {
		case ftrace.TimerExpireEntry:
			if ev.CPU >= 0 && ev.CPU < cpus {
				b.expiries[ev.CPU] = append(b.expiries[ev.CPU], i)
				b.maxNow[ev.CPU] = append(b.maxNow[ev.CPU], p.Now)
			}
		case ftrace.TmigrCPUIdle:
			b.hand(i, p.CPU, p.NextEvt, published)
		case ftrace.TmigrCPUNewTimerIdle:
			b.hand(i, p.CPU, p.NextEvt, published)
		case ftrace.TmigrHandleRemoteCPU:
			if p.CPU >= 0 && p.CPU < cpus {
				b.claims[p.CPU] = append(b.claims[p.CPU], i)
				b.claimed[p.CPU] = append(b.claimed[p.CPU], published[p.CPU])
			}
		}
	}
	b.stalled = stalledFrom(t.Events, cpus, tick)
	for _, m := range b.maxNow {
		for k := len(m) - 2; k >= 0; k-- {
			if wheel.After(m[k+1], m[k]) {
				m[k] = m[k+1]
			}
		}
	}
	return b
}

// stalledFrom returns, per CPU, the CLOCK_MONOTONIC time from which the
// recording shows it not running, KtimeMax for none: the expiry of its
// tick hrtimer as last programmed, where neither that expiry nor any
// other line of the CPU follows while a later tick of another CPU shows
// the clock more than a tick past it. A running CPU takes its tick when
// the hrtimer is due (hrtimer_interrupt) and prints hrtimer_expire_entry;
// a vCPU its host does not run takes nothing (a TCG guest's whole machine
// stalls for hundreds of milliseconds at times), and the timers due on it
// meanwhile expire after the stall, beyond a recording that ends first.
// Only a recording of the hrtimer events shows it.
func stalledFrom(evs []ftrace.Event, cpus int, tick int64) []int64 {
	out := make([]int64, cpus)
	due, hr, last := make([]int64, cpus), make([]uint64, cpus), make([]int, cpus)
	gone := make([]bool, cpus) // out of the hierarchy, not back
	for c := range out {
		out[c], due[c], last[c] = hier.KtimeMax, hier.KtimeMax, -1
	}
	var ticks []int     // the tick expiries of all CPUs, in order
	var tickNow []int64 // ... and their now
	for i := range evs {
		ev := &evs[i]
		c := ev.CPU
		if c < 0 || c >= cpus {
			continue
		}
		last[c] = i
		switch p := ev.Data.(type) {
		case ftrace.HrtimerStart:
			if isTickHandler(p.Function) {
				due[c], hr[c] = p.Expires, p.Hrtimer
			}
		case ftrace.HrtimerCancel:
			if p.Hrtimer == hr[c] {
				due[c] = hier.KtimeMax
			}
		case ftrace.TmigrCPUOffline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUAvailable:
			// A CPU out of the hierarchy at the end may have gone
			// offline (6.19+ prints it unavailable), not stalled: its
			// tick stops and its timers move to a CPU that runs them
			// (tick_sched_timer_dying, timers_dead_cpu), with no line
			// of the tick's.
			if q, _ := ftrace.CPUGroupOf(p); q.CPU >= 0 && q.CPU < cpus {
				switch p.(type) {
				case ftrace.TmigrCPUOffline, ftrace.TmigrCPUUnavailable:
					gone[q.CPU] = true
				default:
					gone[q.CPU] = false
				}
			}
		case ftrace.HrtimerExpireEntry:
			if isTickHandler(p.Function) {
				if p.Hrtimer == hr[c] {
					due[c] = hier.KtimeMax
				}
				ticks, tickNow = append(ticks, i), append(tickNow, p.Now)
			}
		}
	}
	// The greatest now of the ticks from each on.
	for k := len(tickNow) - 2; k >= 0; k-- {
		tickNow[k] = max(tickNow[k], tickNow[k+1])
	}
	for c := range out {
		if gone[c] || due[c] == hier.KtimeMax {
			continue
		}
		k := sort.SearchInts(ticks, last[c]+1)
		if k < len(ticks) && tickNow[k] > due[c]+tick {
			out[c] = due[c]
		}
	}
	return out
}

// stalledAt is the time from which c is shown not running, KtimeMax for
// none.
func (b *baseRuns) stalledAt(c int) int64 {
	if c < 0 || c >= len(b.stalled) {
		return hier.KtimeMax
	}
	return b.stalled[c]
}

// handedBefore returns the event CPU c last handed over before event
// index i (KtimeMax if none): a claim of it says the round's now had
// reached it.
func (b *baseRuns) handedBefore(c, i int) int64 {
	if c < 0 || c >= len(b.handed) {
		return hier.KtimeMax
	}
	if k := sort.SearchInts(b.handed[c], i); k > 0 {
		return b.handedEvt[c][k-1]
	}
	return hier.KtimeMax
}

func (b *baseRuns) hand(i, c int, v int64, published []int64) {
	if c >= 0 && c < len(published) {
		published[c] = v
		b.handed[c] = append(b.handed[c], i)
		b.handedEvt[c] = append(b.handedEvt[c], v)
	}
}

// pendingThrough reports whether a timer of CPU c due at v (ns), which no
// line shows, may be pending from event index i through the end: c never
// hands over a later first event after i, no expiry line of c prints
// jiffies past v's (one at v's own jiffy may be a remote expiry c ran for
// another CPU after its own bases), and no claim of c comes when the
// event it had handed over was v or later.
func (b *baseRuns) pendingThrough(c, i int, v int64, clk *clock) bool {
	j, ok := clk.jiffyOf(v)
	if !ok || c < 0 || c >= len(b.expiries) {
		return false
	}
	h := b.handed[c]
	for k := sort.SearchInts(h, i+1); k < len(h); k++ {
		if b.handedEvt[c][k] > v {
			return false // KtimeMax too
		}
	}
	e := b.expiries[c]
	if k := sort.SearchInts(e, i+1); k < len(e) && wheel.After(b.maxNow[c][k], j) {
		return false
	}
	cl := b.claims[c]
	for k := sort.SearchInts(cl, i+1); k < len(cl); k++ {
		if b.claimed[c][k] != hier.KtimeMax && b.claimed[c][k] >= v {
			return false
		}
	}
	return true
}

// lowerOffExplains reports whether the kernel's printed nextevt is the
// model's value, or that of a timer pending since before the recording,
// under an offset 1 to maxStaleJiffies jiffies below clk's (clk.upper):
// every ns value the model computed is then that many ticks too high.
func lowerOffExplains(printed, model int64, clk *clock, end uint64, i, c int, pre []preTimer) bool {
	if printed == cpu.KtimeMax {
		return false // a KtimeMax does not move with the offset
	}
	for k := int64(1); k <= maxStaleJiffies; k++ {
		d := k * clk.tick
		if model != cpu.KtimeMax && printed == model-d {
			return true
		}
		if model != cpu.KtimeMax && model-d <= printed {
			continue // a timer before the recording would come after the model's
		}
		if printed >= clk.ns(end)-d {
			return true // pending beyond the recording's end
		}
		for _, p := range pre {
			if !p.mayHold(i, c) {
				continue
			}
			if p.revealed && printed == clk.ns(p.bucket)-d || !p.revealed && printed >= clk.ns(p.atJ-1)-d {
				return true
			}
		}
	}
	return false
}

// markedDue says whether jiffies may have reached a CPU's first marked
// bucket with no timer (a hotplug migration's mark, wheel.Base.MigrateTo)
// when the CPU's softirq last ran its bases before a tmigr_cpu_idle,
// although the snapshot at the lowest jiffy the trace allows leaves it
// pending. The kernel's CPU collects such a bucket and prints nothing
// (__run_timer_base, collect_expired_timers), so only its next nextevt
// shows it gone. It may have if a tick before the line read
// CLOCK_MONOTONIC at or past the bucket's jiffy (jiffies lag that clock,
// never lead it, tick_do_update_jiffies64) and no line of the trace
// keeps jiffies below it; no pending timer of the CPU's may be due by
// then, for its expiry would have printed a line.
type markedDue struct {
	tickK  int64 // the latest CLOCK_MONOTONIC a tick's expiry printed
	hi     uint64
	hasHi  bool // hi is an upper bound of jiffies at the line
	timers map[uint64]*wheel.Timer
}

// collectable returns the jiffy b of CPU c's first event, the nextevt
// model, when its bucket holds no timer and jiffies may have reached it.
func (d markedDue) collectable(c int, model int64, clk *clock) (uint64, bool) {
	if model == cpu.KtimeMax || model < clk.off || (model-clk.off)%clk.tick != 0 {
		return 0, false
	}
	b := uint64((model - clk.off) / clk.tick)
	if d.tickK < model || d.hasHi && wheel.After(b, d.hi) {
		return 0, false
	}
	for _, tm := range d.timers {
		if tm.Pending() && tm.CPU() == c && !wheel.After(bucketExpiry(tm), b) {
			return 0, false
		}
	}
	return b, true
}

// bucketExpiry is the expiry of the bucket a pending timer sits in:
// calc_index's, the expiry rounded up on the bucket's level.
func bucketExpiry(tm *wheel.Timer) uint64 {
	sh := wheel.LvlShift(wheel.Level(tm.Index()))
	return (tm.Expires()>>sh + 1) << sh
}

// preTimer is a timer pending where the trace does not show it started:
// its first line is a cancel or an expiry (it was pending when the
// recording began), or such a line follows its expiry or cancel with no
// start in between (its start is missing from the trace). It may sit on
// CPU cpu's bases (-1: any CPU's) after event index from (-1: since
// before the recording) until event index until.
type preTimer struct {
	from, until int
	cpu         int
	deferrable  bool
	bucket      uint64 // its bucket's expiry, if revealed (it expired)
	revealed    bool
	atJ         uint64 // not revealed: the jiffies when it was cancelled, at least
	// marked: the bucket a hotplug migration of it left marked on the
	// dead CPU, one of these (its level there is the arm's, unknown).
	marked []uint64
}

// migratedUnseen returns, for the cancel at event i of a timer the trace
// never showed started, the bucket it left marked where the cancel is
// migrate_timer_list's (timers_dead_cpu: a CPU has left the hierarchy and
// the cancelling CPU's next line starts the timer on its own base; only
// global timers, neither pinned nor deferrable, are handed over as the
// dead CPU's first event). detach_timer keeps the bucket's bit, and
// timers_prepare_cpu keeps the bitmap (kernel/time/timer.c): back online,
// the dead CPU may hand over that empty bucket's expiry, at whichever level
// the timer had been queued when it was armed (calc_index).
func migratedUnseen(evs []ftrace.Event, i int, tm uint64, left map[int]bool) (preTimer, bool) {
	st, ok := nextOnCPU(evs, i).(ftrace.TimerStart)
	if !ok || st.Timer != tm || st.CPU != evs[i].CPU || len(left) == 0 ||
		st.FlagsUnknown || st.Flags&(ftrace.TimerPinned|ftrace.TimerDeferrable) != 0 {
		return preTimer{}, false
	}
	dead := -1
	if len(left) == 1 {
		for c := range left {
			dead = c
		}
	}
	pt := preTimer{from: i, until: len(evs), cpu: dead}
	for lvl := 0; lvl < wheel.DepthForHZ(1000); lvl++ {
		s := wheel.LvlShift(lvl)
		pt.marked = append(pt.marked, ((st.Expires>>s)+1)<<s)
	}
	return pt, true
}

// overdueAtCancel reports whether a timer cancelled at event k, which the
// trace never shows started, may have been the global event that CPU c
// handed over at event i though it was due before the cancel's jiffy:
// c stayed idle from i until an activation a jiffy or less before the
// cancel, its bases running nowhere in between. An idle CPU's global
// timers run only in a migrator's remote round, which claims the CPU and
// prints it (tmigr_handle_remote_cpu), or in the CPU's own timer softirq
// once it is back, at its first tick (tick_nohz_idle_exit restarts the
// tick on the next jiffy; kernel/time/timer_migration.c and tick-sched.c,
// 6.9+): a migrator late past the event (its own tick late, a vCPU not
// run) leaves the timer pending, overdue, where a cancel in the woken
// CPU's first jiffy finds it.
func overdueAtCancel(evs []ftrace.Event, i, k, c int, tick int64) bool {
	if k >= len(evs) {
		return false
	}
	act := -1
	for j := i + 1; j < k; j++ {
		switch p := evs[j].Data.(type) {
		case ftrace.TmigrHandleRemoteCPU:
			if p.CPU == c {
				return false // claimed: its global base ran
			}
		case ftrace.TmigrCPUActive:
			if p.CPU == c && act < 0 {
				act = j
			}
		case ftrace.TimerExpireEntry:
			if evs[j].CPU == c {
				return false // its softirq ran its bases
			}
		}
	}
	return act >= 0 && evs[k].TS-evs[act].TS <= tick
}

// why is the reason of a decision the timer may explain.
func (p *preTimer) why() reason {
	if p.from >= 0 && len(p.marked) == 0 {
		return reasonStartMissing
	}
	return reasonArmedBefore
}

// mayHold reports whether the timer may be pending on cpu's global or
// local base at event index i.
func (p *preTimer) mayHold(i, cpu int) bool {
	return i > p.from && i < p.until && !p.deferrable && (p.cpu < 0 || p.cpu == cpu)
}

// preexisting finds the timers pending where the trace does not show
// them started. An expiry outside a remote round names the CPU whose base
// it sat on; the next start of the same timer tells whether it is
// deferrable (the flags stay with the timer).
func preexisting(t *Trace, clk *clock) []preTimer {
	return preexistingWith(t, clk, NewRemoteExpiry(t.Events))
}

// preexistingWith is preexisting, reading whose timers each expiry runs
// with remote, fresh.
func preexistingWith(t *Trace, clk *clock, remote *RemoteExpiry) []preTimer {
	started := map[uint64]bool{}  // on the wheel by a start the trace shows
	ended := map[uint64]int{}     // timer -> the line that took it off the wheel; no start since
	flagsOf := map[uint64][]int{} // timer -> its entries in out still waiting for a start's flags
	detaching := map[uint64]int{} // timer -> index in out (-1: a started one), cancelled for the expiry that follows
	var out []preTimer
	left := map[int]bool{} // CPUs that left the hierarchy and have not come back
	// unseen records a timer found pending with no start shown, at its
	// line i; from is where it may have been started since.
	unseen := func(tm uint64, i int, pt preTimer) int {
		pt.until = i
		flagsOf[tm] = append(flagsOf[tm], len(out))
		out = append(out, pt)
		return len(out) - 1
	}
	fromOf := func(tm uint64) int {
		if e, ok := ended[tm]; ok {
			return e
		}
		return -1
	}
	for i := range t.Events {
		ev := &t.Events[i]
		owner, _ := remote.Observe(&t.Events[i])
		switch p := ev.Data.(type) {
		case ftrace.TmigrCPUOffline:
			left[p.CPU] = true
		case ftrace.TmigrCPUUnavailable:
			left[p.CPU] = true
		case ftrace.TmigrCPUOnline:
			delete(left, p.CPU)
		case ftrace.TmigrCPUAvailable:
			delete(left, p.CPU)
		case ftrace.TimerStart:
			if !p.FlagsUnknown {
				// (A misread report's flags say nothing: it stays
				// possibly not deferrable.)
				for _, k := range flagsOf[p.Timer] {
					out[k].deferrable = p.Flags&ftrace.TimerDeferrable != 0
				}
			}
			delete(flagsOf, p.Timer)
			delete(ended, p.Timer)
			started[p.Timer] = true
		case ftrace.TimerCancel:
			e, expiring := expiringCancel(t.Events, i, p)
			if expiring {
				detaching[p.Timer] = -1
			}
			if !started[p.Timer] {
				from := fromOf(p.Timer)
				if expiring {
					// The cancel that detaches a timer for its expiry
					// (expire_timers): the expiry reveals its bucket,
					// and whose base it sat on (below).
					detaching[p.Timer] = unseen(p.Timer, i, preTimer{from: from, cpu: ev.CPU, bucket: e.BaseClk, revealed: true})
				} else {
					var j uint64
					if lo, _, ok, _ := clk.bounds(i, ev.CPU); ok {
						j = lo
					}
					unseen(p.Timer, i, preTimer{from: from, cpu: -1, atJ: j})
					if m, ok := migratedUnseen(t.Events, i, p.Timer, left); ok {
						out = append(out, m)
					}
				}
			}
			started[p.Timer] = false
			if !expiring {
				ended[p.Timer] = i
			}
		case ftrace.TimerExpireEntry:
			if k, ok := detaching[p.Timer]; ok {
				if k >= 0 {
					out[k].cpu = owner
				}
				delete(detaching, p.Timer)
			} else if !started[p.Timer] {
				unseen(p.Timer, i, preTimer{from: fromOf(p.Timer), cpu: owner, bucket: p.BaseClk, revealed: true})
			}
			started[p.Timer] = false
			ended[p.Timer] = i
		}
	}
	return out
}

// lastJiffies is the last jiffies value the trace shows (0 if none); x
// is its index.
func lastJiffies(t *Trace, x *eventIndex) uint64 {
	var j uint64
	for _, ei := range x.having(kindsOf(kTimer)) {
		ev := &t.Events[ei]
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			j = later(j, p.Now())
		case ftrace.TimerExpireEntry:
			j = later(j, p.Now)
		}
	}
	return j
}

// firstJiffies is the first jiffies value the trace shows (0 if none); x
// is its index.
func firstJiffies(t *Trace, x *eventIndex) uint64 {
	for _, ei := range x.having(kindsOf(kTimer)) {
		ev := &t.Events[ei]
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			return p.Now()
		case ftrace.TimerExpireEntry:
			return p.Now
		}
	}
	return 0
}

func later(a, b uint64) uint64 {
	if wheel.After(b, a) {
		return b
	}
	return a
}
