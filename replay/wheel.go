package replay

import (
	"fmt"
	"sort"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/wheel"
)

// The wheel check.
//
// For every timer_start the kernel printed the bucket index and bucket
// expiry it chose; we recompute both with wheel.Index from the timer's
// expiry and the base clock. The base clock is not in the trace, so it is
// reconstructed the way __mod_timer moves it:
//
//   - jiffies at the time of the event is expires - timeout;
//   - once the base expired a tick (timer_expire_entry prints it as
//     baseclk), the clock is one ahead of it, in the timer functions and
//     after them, until jiffies passes it; else it is at most jiffies;
//   - __mod_timer forwards the clock to jiffies, or only up to the base's
//     next_expiry when an overdue timer is still pending there. That is
//     common on the deferrable base of a CPU that slept: deferrable timers
//     do not wake it, and when it wakes the softirq expires them one clock
//     value at a time while their functions re-arm timers.
//
// next_expiry needs the base's pending timers. Timers started during the
// recording are tracked with the bucket the kernel printed. Timers armed
// before the recording began reveal themselves when they are cancelled or
// expire; an expiry also reveals their bucket (the baseclk it expired at),
// so a first pass finds them and counts them pending from the start. A
// timer that was only ever cancelled leaves its base's next_expiry unknown
// until then: a start whose bucket a lagging clock could explain is then
// undetermined, not matched and not a mismatch. Events lost in a CPU's
// buffer ("[LOST n EVENTS]") leave its bases' pending timers unknown from
// then on: a start there that any clock up to jiffies could explain is
// undetermined ("events lost").

// whyEarlyNext is why a start is undetermined when a next_expiry left
// early by a cancelled timer may have held the base clock back.
const whyEarlyNext = "base clock held back by the next_expiry of a cancelled timer"

// whyHeldBack is why a start is undetermined when a timer armed before the
// recording may have held the base clock back.
const (
	whyHeldBack  = "base clock held back by a timer armed before the recording"
	whyEmptyPass = "base clock moved on by a timer softirq that expired nothing"
	// whyRanBefore: __run_timers leaves the base clock one past the
	// jiffy it ran, and a base's softirq of the recording's first jiffy
	// may have run before the recording began.
	whyRanBefore = "base clock one past a tick run before the recording"
	// whyJiffiesMoved: timer_start prints the jiffies it reads after
	// __mod_timer (or add_timer_on) forwarded the base clock with an
	// earlier read; a vCPU stalled in between sees jiffies move on.
	whyJiffiesMoved = "jiffies moved between the base clock's forward and the printed start"
)

type baseKey struct {
	cpu int
	idx int // cpu.BaseLocal, BaseGlobal, BaseDef
}

func baseOfFlags(f ftrace.TimerFlags) int {
	switch {
	case f&ftrace.TimerDeferrable != 0:
		return 2
	case f&ftrace.TimerPinned != 0:
		return 0
	}
	return 1
}

// wheelBase is what we know of one kernel timer base.
type wheelBase struct {
	pending  map[uint64]uint64 // timer -> bucket expiry
	unknown  map[uint64]bool   // pending since before the trace, bucket unknown
	expiring bool              // a timer function of this base is running
	baseclk  uint64            // the tick being expired, or last expired
	ran      bool              // baseclk is known: the base expired a timer
	// lost: the CPU's buffer lost events (a start, cancel or expiry may
	// be missing): its pending timers, and so its clock, are unknown.
	lost bool
	// early is the earliest bucket pending when the base's next_expiry
	// was last recalculated or enqueued since (hasEarly): the kernel
	// lowers next_expiry at every enqueue, but a cancel
	// (detach_if_pending) only flags it for recalculation, which
	// __run_timers and get_next_timer_interrupt do (timer.c). Until then
	// next_expiry may be as early as that bucket, whose timer left, and
	// __forward_timer_base stops the clock there when it is due: a timer softirq that runs late (deferred to
	// ksoftirqd behind a busy task) leaves it so for ticks. A pass of
	// __run_timers that expires nothing prints nothing, so it is only a
	// lower bound of the clock.
	early    uint64
	hasEarly bool
	// earlyUnknown: a timer of unknown bucket (pending since before the
	// recording) was cancelled from this base since the last
	// recalculation, and next_expiry may still be its bucket, whatever
	// that was. cancels counts the cancels of such timers whose base is
	// not known either (CheckWheel's strayCancels) up to that
	// recalculation: a later one may have been this base's.
	earlyUnknown bool
	cancels      int
}

// recalc is the kernel recalculating the base's next_expiry
// (timer_recalc_next_expiry): it is the first pending bucket, and stays so,
// lowered by each enqueue, until the next recalculation, however many
// timers a cancel takes off meanwhile.
func (b *wheelBase) recalc(strayCancels int) {
	b.early, b.hasEarly = b.nextExpiry()
	b.earlyUnknown, b.cancels = false, strayCancels
}

func (b *wheelBase) nextExpiry() (uint64, bool) {
	var next uint64
	ok := false
	for _, e := range b.pending {
		if !ok || wheel.Before(e, next) {
			next, ok = e, true
		}
	}
	return next, ok
}

type timerInfo struct {
	base  baseKey
	known bool // base known
}

// CheckWheel runs the wheel check over a trace recorded at hz.
func CheckWheel(t *Trace, hz int) Counts { return checkWheel(newFacts(t), hz) }

func checkWheel(f *facts, hz int) Counts {
	t := f.t
	depth := wheel.DepthForHZ(hz)
	c := f.t.counts()
	bases := map[baseKey]*wheelBase{}
	getBase := func(k baseKey) *wheelBase {
		b := bases[k]
		if b == nil {
			b = &wheelBase{pending: map[uint64]uint64{}, unknown: map[uint64]bool{}}
			bases[k] = b
		}
		return b
	}
	where := map[uint64]baseKey{} // pending timer -> its base
	seedPreexisting(t, f.index(), getBase, where)
	last := map[uint64]baseKey{} // timer -> the base it was last queued on
	for tm, k := range where {
		last[tm] = k
	}

	// running[cpu] is the base whose timer function runs on that CPU;
	// remote[cpu] the CPU whose global timers it is expiring remotely.
	running := map[int]baseKey{}
	runningTimer := map[int]uint64{}
	remote := f.remoteExpiry()
	seen := newSeenJiffies()
	strayCancels := 0 // cancels of timers of unknown base and bucket
	startJ := firstJiffies(t, f.index())

	for i := range t.Events {
		ev := &t.Events[i]
		owner, isRemote := remote.Observe(ev)
		switch p := ev.Data.(type) {
		case ftrace.Lost, ftrace.BufferStarted:
			// The lines this CPU printed in the gap are gone: timers
			// started, cancelled or expired on its bases.
			for idx := range 3 {
				getBase(baseKey{ev.CPU, idx}).lost = true
			}
		case ftrace.TimerCancel:
			if k, ok := where[p.Timer]; ok {
				b := getBase(k)
				switch {
				case k == anywhere:
					strayCancels++ // on some base (see cancels)
				case b.unknown[p.Timer]:
					b.earlyUnknown = true // see early
				}
				delete(b.pending, p.Timer)
				delete(b.unknown, p.Timer)
				delete(where, p.Timer)
			}
		case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
			// get_next_timer_interrupt recalculated the CPU's
			// next_expiry values before it printed these.
			if cg, ok := ftrace.CPUGroupOf(p); ok && cg.CPU == ev.CPU {
				for idx := range 3 {
					getBase(baseKey{ev.CPU, idx}).recalc(strayCancels)
				}
			}
		case ftrace.TimerExpireEntry:
			k, ok := expiringBase(owner, isRemote, p.Timer, last)
			if ok {
				b := getBase(k)
				b.expiring, b.baseclk, b.ran = true, p.BaseClk, true
				delete(b.pending, p.Timer)
				delete(b.unknown, p.Timer)
				// __run_timers took the whole bucket of this tick off
				// the wheel (collect_expired_timers) before running its
				// first timer: the others wait on a list, no longer
				// pending for next_expiry, until their own turn.
				for tm, be := range b.pending {
					if be == p.BaseClk {
						delete(b.pending, tm)
					}
				}
				b.recalc(strayCancels) // __run_timers recalculated next_expiry
				running[ev.CPU] = k
				runningTimer[ev.CPU] = p.Timer
			}
			delete(where, p.Timer)
		case ftrace.TimerExpireExit:
			if k, ok := running[ev.CPU]; ok && runningTimer[ev.CPU] == p.Timer {
				getBase(k).expiring = false
				delete(running, ev.CPU)
			}
		case ftrace.TimerStart:
			k := baseKey{p.CPU, baseOfFlags(p.Flags)}
			b := getBase(k)
			floor, hasFloor := seen.before(ev)
			elsewhere := len(getBase(anywhere).unknown) > 0 || b.cancels < strayCancels
			be := checkStart(&c, ev, p, b, elsewhere, depth, floor, hasFloor, startJ)
			if !p.NoBucketExpiry {
				be = p.BucketExpiry
			}
			b.pending[p.Timer] = be
			if !b.hasEarly || wheel.Before(be, b.early) {
				b.early, b.hasEarly = be, true
			}
			where[p.Timer] = k
			last[p.Timer] = k
		}
		seen.observe(ev)
	}
	return c
}

// checkStart compares one timer_start with our wheel and returns the
// bucket expiry our wheel gives it. Linux 6.1 prints no bucket_expiry:
// the bucket index alone is compared then.
//
// floor, when hasFloor, is the most jiffies known to have been read before
// the start began (seenJiffies): the forward may have read as few.
//
// startJ is the first jiffies the trace shows: the recording began at
// that jiffy or before.
func checkStart(c *Counts, ev *ftrace.Event, p ftrace.TimerStart, b *wheelBase, unknownElsewhere bool, depth int, floor uint64, hasFloor bool, startJ uint64) uint64 {
	jiffies := p.Now()
	clk := b.forwarded(jiffies)
	lower := clk // the lowest clock the kernel could have had
	if len(b.unknown) > 0 || unknownElsewhere || b.earlyUnknown {
		// A timer of unknown bucket may cap the clock lower still (or
		// the next_expiry a cancelled one left), but never below the
		// clock an expiry left in this jiffy.
		lower = 0
		if b.ran && wheel.After(b.baseclk+1, jiffies) {
			lower = b.baseclk + 1
		}
	}
	idx, be := wheel.Index(p.Expires, clk, depth)
	if idx == p.Idx && (be == p.BucketExpiry || p.NoBucketExpiry) {
		c.match(ev.Line)
		return be
	}
	if lower != clk && explainable(p, lower, clk, depth) {
		c.undeterminedBy(ev.Line, reasonHeldBack)
		return be
	}
	if b.hasEarly && wheel.Before(b.early, clk) && !wheel.After(b.early, jiffies) && explainable(p, b.early, clk, depth) {
		c.undeterminedBy(ev.Line, reasonEarlyNext)
		return be
	}
	if next, ok := b.nextExpiry(); b.hasEarly && !wheel.After(b.early, jiffies) && (!ok || wheel.After(next, jiffies)) &&
		explainable(p, clk, jiffies+1, depth) {
		// A next_expiry due by jiffies, left by a timer cancelled
		// since (no pending timer is due), raises the timer softirq
		// (run_local_timers), whose __run_timers counts the clock up a
		// tick per pass over the empty buckets and prints nothing: the
		// clock may have gone on up to jiffies+1.
		c.undeterminedBy(ev.Line, reasonEmptyPass)
		return be
	}
	if !b.ran && !wheel.After(jiffies, startJ) && explainable(p, clk, jiffies+1, depth) {
		// The base's softirq of this jiffy may have run before the
		// recording began, its lines unrecorded, leaving the clock at
		// jiffies+1 (7.2 kernel/time/timer.c, __run_timers).
		c.undeterminedBy(ev.Line, reasonRanBefore)
		return be
	}
	if b.lost && explainable(p, 0, later(clk, jiffies), depth) {
		// A lost start may hold the clock back, a lost cancel or expiry
		// may have let it run up to jiffies.
		c.undeterminedBy(ev.Line, reasonLost)
		return be
	}
	if hasFloor && wheel.Before(floor, jiffies) && explainable(p, b.forwarded(floor), clk, depth) {
		// The forward read jiffies somewhere between the floor and
		// what the line printed.
		c.undeterminedBy(ev.Line, reasonJiffiesMoved)
		return be
	}
	kernel := fmt.Sprintf("idx=%d bucket_expiry=%d", p.Idx, p.BucketExpiry)
	if p.NoBucketExpiry {
		kernel = fmt.Sprintf("idx=%d", p.Idx)
	}
	c.mismatch(Mismatch{
		Line:   ev.Line,
		Event:  "timer_start",
		Kernel: kernel,
		Model:  fmt.Sprintf("idx=%d bucket_expiry=%d (base clock %d)", idx, be, clk),
	})
	return be
}

// forwarded is the base clock __mod_timer leaves when it reads jiffies.
func (b *wheelBase) forwarded(jiffies uint64) uint64 {
	clk := jiffies
	// __run_timers leaves the clock one ahead of the last tick it
	// expired (it counts base->clk up before it runs a tick's timers),
	// during the callbacks and after them: within that tick's jiffy the
	// clock is ahead of jiffies, and __forward_timer_base never moves it
	// back.
	if b.ran && wheel.After(b.baseclk+1, jiffies) {
		clk = b.baseclk + 1
	}
	if next, ok := b.nextExpiry(); ok && !wheel.After(next, jiffies) {
		// __forward_timer_base: an overdue bucket caps the clock. The
		// clock never passed a pending bucket, so it stops at next,
		// unless an expiry already took it one ahead of the tick it
		// expired.
		clk = next
		if b.ran && wheel.Before(next, b.baseclk+1) {
			clk = b.baseclk + 1
		}
	}
	return clk
}

// seenJiffies bounds from below the jiffies a CPU reads: no fewer than it
// read itself before (its lines are in program order), nor than another
// CPU printed clearly before the CPU's previous line was stamped (what a
// stalled CPU does between two lines happened after the first).
type seenJiffies struct {
	own  map[int]uint64 // CPU -> the most jiffies it printed
	prev []stamp        // by CPU: its previous line's stamp (observe takes every line, so not a map)
	ts   []int64        // every line that printed jiffies, in order
	most []uint64       // the most jiffies printed up to ts[i]
}

// stamp is a CPU's previous line's stamp, if it has printed one.
type stamp struct {
	ts  int64
	has bool
}

func newSeenJiffies() *seenJiffies {
	return &seenJiffies{own: map[int]uint64{}}
}

// before returns the floor for the line ev, before it is observed.
func (s *seenJiffies) before(ev *ftrace.Event) (uint64, bool) {
	floor, ok := s.own[ev.CPU]
	if c := ev.CPU; c >= 0 && c < len(s.prev) && s.prev[c].has {
		t := s.prev[c].ts
		k := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] >= t-skewNS })
		if k > 0 && (!ok || wheel.After(s.most[k-1], floor)) {
			floor, ok = s.most[k-1], true
		}
	}
	return floor, ok
}

// observe takes every line in the trace's order.
func (s *seenJiffies) observe(ev *ftrace.Event) {
	if c := ev.CPU; c >= 0 {
		for c >= len(s.prev) {
			s.prev = append(s.prev, stamp{})
		}
		s.prev[c] = stamp{ev.TS, true}
	}
	var j uint64
	switch p := ev.Data.(type) {
	case ftrace.TimerStart:
		j = p.Now()
	case ftrace.TimerExpireEntry:
		j = p.Now
	default:
		return
	}
	if o, ok := s.own[ev.CPU]; !ok || wheel.After(j, o) {
		s.own[ev.CPU] = j
	}
	m := j
	if n := len(s.most); n > 0 && wheel.After(s.most[n-1], m) {
		m = s.most[n-1]
	}
	s.ts, s.most = append(s.ts, ev.TS), append(s.most, m)
}

// explainable reports whether some base clock in [lo, hi] gives the
// kernel's bucket. For a timer not yet due only the level depends on the
// clock, so checking the clock at each level boundary is enough; one
// already due goes to the clock's own level-0 bucket (calc_wheel_index:
// idx = clk & LVL_MASK, bucket_expiry = clk), which only that clock gives.
func explainable(p ftrace.TimerStart, lo, hi uint64, depth int) bool {
	try := func(clk uint64) bool {
		idx, be := wheel.Index(p.Expires, clk, depth)
		return idx == p.Idx && (be == p.BucketExpiry || p.NoBucketExpiry)
	}
	if try(lo) || try(hi) {
		return true
	}
	due := p.BucketExpiry
	if p.NoBucketExpiry {
		// The first clock from lo whose level-0 slot is the index.
		due = lo + (uint64(p.Idx)-lo)&wheel.LvlMask
	}
	if !wheel.Before(due, lo) && !wheel.After(due, hi) && try(due) {
		return true
	}
	for lvl := 1; lvl < depth; lvl++ {
		for _, d := range []uint64{wheel.LvlStart(lvl) - 1, wheel.LvlStart(lvl)} {
			clk := p.Expires - d
			if !wheel.Before(clk, lo) && !wheel.After(clk, hi) && try(clk) {
				return true
			}
		}
	}
	return false
}

// expiringBase finds the base of a timer whose function starts: in a remote
// expiry the global base of the CPU whose timers run (RemoteExpiry), else the timer's own base
// as its last start named it, else a later start's (timers armed before the
// trace), else unknown.
func expiringBase(owner int, remote bool, timer uint64, last map[uint64]baseKey) (baseKey, bool) {
	if remote {
		return baseKey{owner, 1}, true
	}
	if k, ok := last[timer]; ok {
		return k, true
	}
	return baseKey{}, false
}

// seedPreexisting finds the timers that were pending when the recording
// began (their first event is a cancel or an expiry, not a start) and adds
// them to their bases: with the bucket their expiry reveals, or as unknown.
// Their base comes from the next start of the same timer, which keeps the
// flags, on the CPU the expiry ran on when that start happens inside the
// timer's own function (a running timer stays on its base).
func seedPreexisting(t *Trace, x *eventIndex, getBase func(baseKey) *wheelBase, where map[uint64]baseKey) {
	seen := map[uint64]bool{}
	type pre struct {
		bucket   uint64
		revealed bool
		cpu      int
	}
	found := map[uint64]*pre{}
	for _, i := range x.having(kindsOf(kTimer)) {
		ev := &t.Events[i]
		switch p := ev.Data.(type) {
		case ftrace.TimerInit:
			seen[p.Timer] = true
		case ftrace.TimerStart:
			if pr := found[p.Timer]; pr != nil && !seen[p.Timer] {
				k := baseKey{p.CPU, baseOfFlags(p.Flags)}
				if pr.revealed && pr.cpu != p.CPU {
					// Re-armed elsewhere: the base it expired on is
					// not named; keep the type, trust the expiry CPU.
					k.cpu = pr.cpu
				}
				b := getBase(k)
				if pr.revealed {
					b.pending[p.Timer] = pr.bucket
				} else {
					b.unknown[p.Timer] = true
				}
				where[p.Timer] = k
			}
			seen[p.Timer] = true
		case ftrace.TimerCancel, ftrace.TimerExpireEntry:
			tm := timerOf(p)
			if seen[tm] || found[tm] != nil {
				continue
			}
			pr := &pre{cpu: ev.CPU}
			if e, ok := p.(ftrace.TimerExpireEntry); ok {
				pr.bucket, pr.revealed = e.BaseClk, true
			} else if e, ok := expiringCancel(t.Events, i, ftrace.TimerCancel{Timer: tm}); ok {
				// The cancel that detaches a timer for its expiry.
				pr.bucket, pr.revealed = e.BaseClk, true
			}
			found[tm] = pr
		}
	}
	// A timer pending at the start whose base the trace never names may
	// sit on any base until it goes.
	for tm := range found {
		if _, ok := where[tm]; !ok {
			getBase(anywhere).unknown[tm] = true
			where[tm] = anywhere
		}
	}
}

// anywhere stands for "some base": timers armed before the recording whose
// base the trace does not name.
var anywhere = baseKey{-1, -1}

// nextOnCPU returns the payload of the first event after events[i] on the
// same CPU, or nil.
func nextOnCPU(events []ftrace.Event, i int) ftrace.Payload {
	for ei := i + 1; ei < len(events); ei++ {
		ev := &events[ei]
		if ev.CPU == events[i].CPU {
			return ev.Data
		}
	}
	return nil
}

func timerOf(p ftrace.Payload) uint64 {
	switch p := p.(type) {
	case ftrace.TimerCancel:
		return p.Timer
	case ftrace.TimerExpireEntry:
		return p.Timer
	}
	return 0
}
