package replay

import (
	"sort"

	"github.com/tmigr/tmigr/ftrace"
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
// N − B·TICK_NSEC for the smallest pending bucket B of that CPU: a lower
// bound of off, equal to it when B is the first timer (a timer armed before
// the recording may be earlier). off is the largest bound given twice.
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

	events []ftrace.Event
	perCPU map[int][]jobs // by event index
	cpuMax map[int][]uint64
	cpuMin map[int][]uint64
	all    []jobs // by timestamp
	allMax []uint64
	allMin []uint64
}

// tickNS is TICK_NSEC for hz.
func tickNS(hz int) int64 { return (1_000_000_000 + int64(hz)/2) / int64(hz) }

// ns converts a jiffies value.
func (c *clock) ns(j uint64) int64 { return int64(j)*c.tick + c.off }

func newClock(t *Trace, hz int) *clock {
	c := &clock{tick: tickNS(hz), events: t.Events, perCPU: map[int][]jobs{}}
	type pend struct {
		cpu    int
		bucket uint64
	}
	pending := map[uint64]pend{} // global timers by pointer
	remote := NewRemoteExpiry()
	votes := map[int64]int{}
	vote := func(cpu int, n int64) {
		if n == ftrace.KtimeMax {
			return
		}
		var min uint64
		found := false
		for _, p := range pending {
			if p.cpu == cpu && (!found || p.bucket < min) {
				min, found = p.bucket, true
			}
		}
		if found {
			votes[n-int64(min)*c.tick]++
		}
	}
	for i, ev := range t.Events {
		target, inRemote := remote.Target(ev.CPU)
		remote.Observe(&t.Events[i])
		switch p := ev.Data.(type) {
		case ftrace.TimerStart:
			c.observe(i, ev, p.Now())
			if p.Flags&(ftrace.TimerPinned|ftrace.TimerDeferrable) == 0 {
				pending[p.Timer] = pend{p.CPU, p.BucketExpiry}
			} else {
				delete(pending, p.Timer)
			}
		case ftrace.TimerExpireEntry:
			c.observe(i, ev, p.Now)
			delete(pending, p.Timer)
		case ftrace.TimerCancel:
			delete(pending, p.Timer)
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
	// could come from a timer whose cancellation the trace lacks, so it
	// takes two.
	n := 0
	for _, v := range votes {
		n += v
	}
	for off, v := range votes {
		if (v >= 2 || n == 1) && (!c.known || off > c.off) {
			c.off, c.known = off, true
		}
	}
	for cpu, l := range c.perCPU {
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
		if c.cpuMax == nil {
			c.cpuMax, c.cpuMin = map[int][]uint64{}, map[int][]uint64{}
		}
		c.cpuMax[cpu], c.cpuMin[cpu] = mx, mn
	}
	sort.SliceStable(c.all, func(a, b int) bool { return c.all[a].ts < c.all[b].ts })
	c.allMax = make([]uint64, len(c.all))
	c.allMin = make([]uint64, len(c.all))
	for i := range c.all {
		c.allMax[i] = c.all[i].j
		if i > 0 && c.allMax[i-1] > c.allMax[i] {
			c.allMax[i] = c.allMax[i-1]
		}
	}
	for i := len(c.all) - 1; i >= 0; i-- {
		c.allMin[i] = c.all[i].j
		if i+1 < len(c.all) && c.allMin[i+1] < c.allMin[i] {
			c.allMin[i] = c.allMin[i+1]
		}
	}
	return c
}

func (c *clock) observe(i int, ev ftrace.Event, j uint64) {
	o := jobs{idx: i, ts: ev.TS, j: j}
	c.perCPU[ev.CPU] = append(c.perCPU[ev.CPU], o)
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
	if l := c.perCPU[cpu]; len(l) > 0 {
		k := sort.Search(len(l), func(k int) bool { return l[k].idx >= i })
		if k > 0 {
			upd(c.cpuMax[cpu][k-1], true)
		}
		if k < len(l) {
			upd(c.cpuMin[cpu][k], false)
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
