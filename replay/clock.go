package replay

import (
	"sort"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
)

// Time.
//
// The hierarchy counts nanoseconds of CLOCK_MONOTONIC, but only at tick
// updates: every expiry handed to it is basem + (J - basej)·TICK_NSEC for a
// wheel expiry J (jiffies) and the (basej, basem) snapshot of the last
// jiffies update, and the `now` of a remote round is such a basem. So ns and
// jiffies are tied by ns(J) = J·TICK_NSEC + off for one constant off per
// boot, TICK_NSEC = (1e9 + HZ/2) / HZ. The trace's timestamps are the trace
// clock, which under QEMU TCG runs far from CLOCK_MONOTONIC; they are only
// used to order lines.
//
// off comes from the trace itself: when a CPU publishes its next global
// expiry N (tmigr_cpu_idle, tmigr_cpu_new_timer_idle, or the level-0
// tmigr_update_events of a remote walk for the CPU whose timers were just
// expired), N is ns(B) for the bucket expiry B of its first pending global
// timer, which the timer_start lines name. Each such line gives
// N − B·TICK_NSEC for the smallest pending bucket B of that CPU (a bucket
// being expired has left the wheel whole: queue): a lower
// bound of off, equal to it when B is the first timer (a timer armed before
// the recording may be earlier). off is the largest bound given by two
// distinct observations (the same expiry published again with the same
// first timer counts once). Where the trace holds hrtimer lines the tick
// gives off from above: its hrtimer expires on the grid at E, and the
// timer softirq it raises reads jiffies J no later than E's jiffy, so
// E − J·TICK_NSEC >= off, equal when the timekeeper had moved jiffies; the
// least such value seen twice is off where no two published expiries give
// it, and where it is above theirs, off is unknown. Taken alone (no
// published expiry at the same value) it stays a bound from above: a
// nextevt an offset up to maxStaleJiffies lower explains is undetermined
// (clock.upper, lowerOffExplains).
//
// A remote round's now is ns(J) for the jiffies J of its snapshot, taken
// just before its first tmigr_handle_remote line. The trace bounds J: every
// jiffies value read earlier (timer_start: expires − timeout; timer_expire_
// entry: now=) is a lower bound, every value read later an upper bound.
// Lines of the same CPU are in program order; lines of other CPUs count only
// when their timestamps are apart by more than skewNS, the clocks of two
// CPUs not being exactly in step. When the bounds differ and a decision of
// the round depends on where in between now lies, the round is
// undetermined.

// maxStaleJiffies is how many jiffies the jiffies a tick's softirq reads
// may lag the tick's own: a CPU whose tick finds jiffies not moved for
// MAX_STALLED_JIFFIES ticks moves them itself (tick_sched_do_timer,
// kernel/time/tick-sched.c, 6.1 to 7.3).
const maxStaleJiffies = 5

// skewNS is how far apart, in trace-clock ns, two lines of different CPUs
// must be for their order to be trusted.
const skewNS = 10_000

type jobs struct {
	idx int    // event index
	ts  int64  // trace clock
	j   uint64 // jiffies
}

// clock maps jiffies to the hierarchy's nanoseconds and bounds the jiffies
// of any point of the trace.
type clock struct {
	tick  int64
	off   int64
	known bool // off was found
	// upper: off is the ticks' bound alone, attained only where the
	// timekeeper had moved jiffies before a tick's softirq read them;
	// the true off may be up to maxStaleJiffies jiffies lower.
	upper bool

	events []ftrace.Event
	perCPU []cpuJobs // by CPU (bounds reads it for nearly every line: not a map)
	all    []jobs    // by timestamp
	allMax []uint64
	allMin []uint64
}

// tickNS is TICK_NSEC for hz.
func tickNS(hz int) int64 { return (1_000_000_000 + int64(hz)/2) / int64(hz) }

// ns converts a jiffies value.
func (c *clock) ns(j uint64) int64 { return int64(j)*c.tick + c.off }

// jiffyOf returns the jiffies whose ns is v, if the offset is known and v
// lies on its grid. Where off is the ticks' bound from above (upper), the
// true jiffies may be higher: the value is a lower bound.
func (c *clock) jiffyOf(v int64) (uint64, bool) {
	if !c.known || v == hier.KtimeMax || v < c.off || (v-c.off)%c.tick != 0 {
		return 0, false
	}
	return uint64((v - c.off) / c.tick), true
}

// cpuJobs are one CPU's observations, by event index, and the most and
// the least jiffies read up to and from each.
type cpuJobs struct {
	l        []jobs
	max, min []uint64
}

func newClock(t *Trace, hz int) *clock { return buildClock(t, hz, NewRemoteExpiry(t.Events)) }

// buildClock is newClock, reading whose timers each expiry runs with
// remote, fresh.
func buildClock(t *Trace, hz int, remote *RemoteExpiry) *clock {
	c := &clock{tick: tickNS(hz), events: t.Events}
	wq := newQueue() // the timers pending, and their buckets
	// votes counts, for each value of off, the distinct observations that
	// give it: a CPU that publishes the same expiry with the same first
	// timer again and again proves no more than it did once.
	type evidence struct {
		cpu    int
		n      int64
		bucket uint64
	}
	seen := map[evidence]bool{}
	votes := map[int64]int{}
	vote := func(cpu int, n int64) {
		if n == ftrace.KtimeMax {
			return
		}
		min, found := wq.first(cpu, baseOfFlags(0))
		if e := (evidence{cpu, n, min}); found && !seen[e] {
			seen[e] = true
			votes[n-int64(min)*c.tick]++
		}
	}
	// ticks counts the values E − J·TICK_NSEC of each tick: its hrtimer
	// expires on the grid at E, and the timer softirq it raises prints the
	// jiffies J it read (timer_expire_entry's now=).
	ticks := map[int64]int{}
	type tickRun struct {
		e, until int64
		hr       uint64
	}
	tickAt := map[int]tickRun{} // CPU -> the tick it runs: expiry, and trace time its jiffy ends
	hexp := map[uint64]int64{}  // tick hrtimer -> its expiry
	for i := range t.Events {
		ev := &t.Events[i]
		target, inRemote := remote.Target(ev.CPU)
		remote.Observe(&t.Events[i])
		switch p := ev.Data.(type) {
		case ftrace.HrtimerStart:
			if isTickHandler(p.Function) {
				hexp[p.Hrtimer] = p.Expires
				// The handler's restart: hrtimer_forward put the tick
				// on the first grid point after the handler's now
				// (tick_nohz_handler, tick_sched_timer, 6.1-7.3), read
				// after the expiry's. One more than a tick past the
				// expiry says the handler ran into a later jiffy, and
				// jiffies may have moved there (tick_sched_do_timer)
				// before its softirq read them: the jiffy that softirq
				// may read at most is the restart's less a tick.
				if k, ok := tickAt[ev.CPU]; ok && k.hr == p.Hrtimer && !(p.HasWasArmed && p.WasArmed) &&
					p.Expires-c.tick > k.e && (p.Expires-k.e)%c.tick == 0 {
					k.until += p.Expires - c.tick - k.e
					k.e = p.Expires - c.tick
					tickAt[ev.CPU] = k
				}
			}
		case ftrace.HrtimerExpireEntry:
			delete(tickAt, ev.CPU)
			if e, ok := hexp[p.Hrtimer]; ok && p.Now-e < c.tick {
				tickAt[ev.CPU] = tickRun{e, ev.TS + c.tick - (p.Now - e), p.Hrtimer}
			}
		case ftrace.TimerStart:
			c.observe(i, ev, p.Now())
			wq.start(p)
		case ftrace.TimerExpireEntry:
			// Only a softirq that read jiffies within the tick's own
			// jiffy (on PREEMPT_RT the timer thread may run ticks
			// later), by the trace clock's count of the time since.
			if k, ok := tickAt[ev.CPU]; ok && ev.Flags.SoftIRQ() && ev.TS < k.until {
				ticks[k.e-int64(p.Now)*c.tick]++
			}
			delete(tickAt, ev.CPU)
			c.observe(i, ev, p.Now)
			wq.expire(p, nil)
		case ftrace.TimerCancel:
			if x, ok := expiringCancel(t.Events, i, p); ok {
				wq.expire(x, nil)
			}
			wq.cancel(p.Timer)
		case ftrace.TmigrCPUIdle:
			vote(p.CPU, p.NextEvt)
		case ftrace.TmigrCPUNewTimerIdle:
			vote(p.CPU, p.NextEvt)
		case ftrace.TmigrUpdateEvents:
			// The walk after a remote expiry: the target's next
			// global expiry.
			if inRemote && p.Child == 0 {
				vote(target, p.NextEvt)
			}
		}
	}
	// Each vote is a lower bound of off: the smallest pending bucket is
	// never earlier than the first one. The true value is the largest
	// bound, reached whenever the first timer is known; one vote alone
	// could come from a timer whose cancellation the trace lacks, or from
	// a first timer armed before the recording, so it takes two distinct
	// observations (a recording cut from a longer one may show an idle CPU
	// publish one expiry whose first timer it does not hold).
	for off, v := range votes {
		if v >= 2 && (!c.known || off > c.off) {
			c.off, c.known = off, true
		}
	}
	// The tick, where the trace holds hrtimer lines, bounds it from above:
	// its softirq, when it reads jiffies within the jiffy of the tick's
	// expiry, reads that jiffy, or an earlier one when the timekeeper has
	// not moved them yet. The least bound, given twice, is off where the
	// published expiries give none. A bound below theirs is no bound: that
	// softirq read jiffies after the tick's jiffy had passed, though the
	// trace clock, which under TCG does not keep CLOCK_MONOTONIC's pace,
	// counts less than a jiffy since (a PREEMPT_RT timer thread that ran
	// late). A bound above theirs leaves off between the two: either the
	// first timers of the published expiries were armed before the
	// recording (their bound is not attained), or every softirq seen read
	// a jiffy the timekeeper had not moved yet (the tick's is not); both
	// have been recorded, in windows of longer recordings. The trace does
	// not tell which: off is unknown.
	low, lowN := int64(0), 0
	for off, n := range ticks {
		if c.known && off < c.off {
			continue
		}
		if lowN == 0 || off < low {
			low, lowN = off, n
		}
	}
	switch {
	case lowN < 2:
	case !c.known:
		// A published expiry at the same value bounds it from below
		// too; without one it is a bound from above.
		c.off, c.known, c.upper = low, true, votes[low] == 0
	case low != c.off:
		c.known = false
	}
	for cpu := range c.perCPU {
		l := c.perCPU[cpu].l
		mx := make([]uint64, len(l))
		mn := make([]uint64, len(l))
		for i := range l {
			mx[i] = l[i].j
			if i > 0 && mx[i-1] > mx[i] {
				mx[i] = mx[i-1]
			}
		}
		for i := len(l) - 1; i >= 0; i-- {
			mn[i] = l[i].j
			if i+1 < len(l) && mn[i+1] < mn[i] {
				mn[i] = mn[i+1]
			}
		}
		c.perCPU[cpu].max, c.perCPU[cpu].min = mx, mn
	}
	// A CPU whose trace clock stood still while jiffies ran on (a vCPU
	// whose sched_clock stalled under TCG: one busy CPU of a PREEMPT_RT
	// guest stamped its softirq's expiries of 14 jiffies with one time)
	// stamps its lines too early: such a line still bounds jiffies from
	// above at its stamp, but not from below, for other CPUs' lines.
	stale := map[int]bool{}
	for _, cj := range c.perCPU {
		l := cj.l
		for k := 1; k < len(l); k++ {
			a, b := l[k-1], l[k]
			if b.j >= a.j+2 && b.ts-a.ts < int64(b.j-a.j-1)*c.tick {
				stale[b.idx] = true
			}
		}
	}
	sort.SliceStable(c.all, func(a, b int) bool { return c.all[a].ts < c.all[b].ts })
	c.allMax = make([]uint64, len(c.all))
	c.allMin = make([]uint64, len(c.all))
	for i := len(c.all) - 1; i >= 0; i-- {
		c.allMin[i] = c.all[i].j
		if i+1 < len(c.all) && c.allMin[i+1] < c.allMin[i] {
			c.allMin[i] = c.allMin[i+1]
		}
	}
	// jiffies never go back: a line of another CPU stamped clearly
	// later that read fewer says one of the two clocks is off (a vCPU
	// stamped a jiffies update 4 ms before two other CPUs still read the
	// jiffies before it), so neither bounds the other's side.
	for i := range c.all {
		k := sort.Search(len(c.all), func(k int) bool { return c.all[k].ts > c.all[i].ts+skewNS })
		if k < len(c.all) && c.allMin[k] < c.all[i].j {
			stale[c.all[i].idx] = true
		}
	}
	for i := range c.all {
		if !stale[c.all[i].idx] {
			c.allMax[i] = c.all[i].j
		}
		if i > 0 && c.allMax[i-1] > c.allMax[i] {
			c.allMax[i] = c.allMax[i-1]
		}
	}
	return c
}

// isTickHandler reports whether an hrtimer function is the tick's.
func isTickHandler(f string) bool {
	return f == "tick_nohz_handler" || f == "tick_sched_timer" || f == "tick_nohz_highres_handler"
}

func (c *clock) observe(i int, ev *ftrace.Event, j uint64) {
	o := jobs{idx: i, ts: ev.TS, j: j}
	if ev.CPU >= 0 { // Run refuses a trace with another
		for ev.CPU >= len(c.perCPU) {
			c.perCPU = append(c.perCPU, cpuJobs{})
		}
		c.perCPU[ev.CPU].l = append(c.perCPU[ev.CPU].l, o)
	}
	c.all = append(c.all, o)
}

// bounds returns the jiffies lo <= J <= hi of the snapshot taken by cpu
// just before event i; hasLo and hasHi say whether the trace gives them.
func (c *clock) bounds(i, cpu int) (lo, hi uint64, hasLo, hasHi bool) {
	upd := func(v uint64, isLo bool) {
		if isLo {
			if !hasLo || v > lo {
				lo, hasLo = v, true
			}
		} else if !hasHi || v < hi {
			hi, hasHi = v, true
		}
	}
	if cpu >= 0 && cpu < len(c.perCPU) && len(c.perCPU[cpu].l) > 0 {
		cj := &c.perCPU[cpu]
		l := cj.l
		k := sort.Search(len(l), func(k int) bool { return l[k].idx >= i })
		if k > 0 {
			upd(cj.max[k-1], true)
		}
		if k < len(l) {
			upd(cj.min[k], false)
		}
	}
	ts := c.events[i].TS
	if n := len(c.all); n > 0 {
		k := sort.Search(n, func(k int) bool { return c.all[k].ts >= ts-skewNS })
		if k > 0 {
			upd(c.allMax[k-1], true)
		}
		k = sort.Search(n, func(k int) bool { return c.all[k].ts > ts+skewNS })
		if k < n {
			upd(c.allMin[k], false)
		}
	}
	return
}
