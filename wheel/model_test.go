package wheel

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tmigr/tmigr/internal/soak"
	"pgregory.net/rapid"
)

// The reference model of a pair of wheel bases (two CPUs sharing one
// jiffies counter). It keeps the timer state, a plain
// list of (timer, expires, armed-at clock) plus the bucket that ref_test.go
// computes for it, and the base's scalar bookkeeping (clk, next_expiry and
// the lazy-recalc flag) updated by the rules of docs/wheel.md W5–W9, with every
// "earliest bucket" found by brute force over the list instead of the
// bitmap scan. The expiry order at one clock value (higher levels first,
// newest first within a bucket) is a sort of that list, and the migration
// order (bucket index ascending, each bucket from its head) another.

type mstate int

const (
	mIdle      mstate = iota // not pending
	mInWheel                 // in a bucket
	mCollected               // moved to the expiry lists, not yet handed out
)

type mtimer struct {
	id    int
	w     *Timer
	base  int // index of the base it belongs to
	state mstate
	gen   int // bumped at every arm: (id, gen) fires at most once

	expires  uint64
	armClk   uint64 // the base clock the bucket was computed against
	armJ     uint64 // jiffies at arm time
	place    refPlace
	seq      uint64 // enqueue order, for LIFO within a bucket
	pinned   bool
	tickOnly bool // the wheel has run at every tick since the arm
	// fireJ is the jiffies at which a tickOnly timer must run.
	fireJ uint64
	// armedAfterRun: armed at armJ after its base had run at armJ (from
	// another base's callback), so a bucket due at armJ waits a tick.
	armedAfterRun bool
	// lostByQuirk: next_timer_interrupt moved next_expiry past this
	// timer's bucket while timers_pending was false (see sentinelQuirk).
	lostByQuirk bool
	// origBucket is the bucket chosen at arm time; place.bucket moves on by
	// whole revolutions of the level when the clock jumps over a bucket
	// lost by the quirk.
	origBucket uint64
}

type mbase struct {
	w       *Base
	cpu     int
	clk     uint64
	ne      uint64 // next_expiry
	recalc  bool
	pending bool // timers_pending
	prevClk uint64
	ranAt   uint64 // jiffies of the last completed run of the base
	// tainted: next_timer_interrupt moved next_expiry past a queued
	// bucket (the sentinel quirk) and no recalc has happened since.
	tainted bool
	round   []*mtimer
	// phantom holds the buckets marked pending with no timer: those a
	// migration left (migrate_timer_list's detach_timer keeps the bit).
	phantom map[int]bool
	// offline: the base's CPU is dead (its timers migrated) and has not
	// come back. timers_dead_cpu leaves its next_expiry as it was, so it
	// may be earlier than any bucket with no recalc pending; the kernel
	// neither runs nor queries nor arms a dead CPU's base, and neither does
	// the model until timers_prepare_cpu brings it back (online).
	offline bool
}

type model struct {
	t       *rapid.T
	depth   int
	jiffies uint64
	seq     uint64
	bases   [2]*mbase
	timers  []*mtimer
	fired   map[[2]int]int
	inRun   *mbase // the base whose expiry loop is running, if any
	// aims are ticks that are multiples of a level's granularity; timers
	// armed (at different times) to expire one tick before an aim share
	// its bucket expiry on different levels.
	aims []uint64
}

// Kernel quirk, reproduced by the wheel and by the model (see
// testdata/sentinel.txt): enqueue_timer updates next_expiry and sets
// timers_pending only when the new bucket is strictly before next_expiry.
// On an empty base next_expiry is the sentinel clk+NEXT_TIMER_MAX_DELTA
// computed at the last recalc, so a level-8 timer whose bucket is not
// before it (a timeout within a few ticks of the capacity, or any long one
// once the clock has moved on since) leaves timers_pending false with a
// timer queued. next_timer_interrupt then treats the base as empty and
// moves next_expiry to basej+NEXT_TIMER_MAX_DELTA, possibly past the bucket,
// and the timer runs late. docs/wheel.md's WI6 "equality when
// next_expiry_recalc is false" does not hold in that state; quirkStates
// and quirkLate count how often the random runs reach it. Worse, once
// next_expiry is past the bucket, __run_timers (or a forward) moves clk to
// next_expiry and so over the bucket, and the timer's slot only comes
// round again a full revolution of its level later (2^30 ticks on level 8):
// quirkPassed counts those.
var quirkStates, quirkLate, quirkPassed int

// coverage counts what the model test's cases exercised: the log shows it,
// and TestWheelModelCoverage asserts it for its fixed cases.
var coverage = map[string]int{}

// rollPassed moves the buckets of the lost timers the clock has jumped
// over to the next time their slot comes round: the kernel finds a timer
// by its slot, not by its expiry.
func (m *model) rollPassed(b *mbase) {
	for _, tm := range m.timers {
		if tm.state != mInWheel || m.bases[tm.base] != b || !refAfter(b.clk, tm.place.bucket) {
			continue
		}
		if !tm.lostByQuirk {
			m.fatalf("cpu%d clk %d passed t%d's bucket %d", b.cpu, b.clk, tm.id, tm.place.bucket)
		}
		for refAfter(b.clk, tm.place.bucket) {
			tm.place.bucket += 64 * refPow8(tm.place.lvl)
		}
		quirkPassed++
	}
}

// inQuirk reports whether the base is in that state, or has been made
// inconsistent by it until its next recalc.
func (m *model) inQuirk(b *mbase) bool {
	_, ok := m.bruteNext(b)
	return b.tainted || ok && !b.recalc && !b.pending
}

func newModel(t *rapid.T) *model {
	hz := rapid.SampledFrom([]int{1000, 100}).Draw(t, "hz")
	depth := DepthForHZ(hz)
	var start uint64
	switch rapid.IntRange(0, 3).Draw(t, "startKind") {
	case 0:
		start = 1<<32 - 300*uint64(hz) // the 64-bit INITIAL_JIFFIES
	case 1:
		start = math.MaxUint64 - 1000 // the 64-bit wrap, 1000 ticks away
	case 2:
		start = math.MaxUint64 - rapid.Uint64Range(0, 1<<31).Draw(t, "startOff")
	default:
		start = rapid.Uint64().Draw(t, "start")
	}
	m := &model{t: t, depth: depth, jiffies: start, fired: map[[2]int]int{}}
	for i := range m.bases {
		w := new(Base)
		w.Init(depth, start)
		m.bases[i] = &mbase{w: w, cpu: i * 3, clk: start, ne: start + NextTimerMaxDelta, prevClk: start, ranAt: start, phantom: map[int]bool{}}
	}
	n := rapid.IntRange(4, 24).Draw(t, "timers")
	for i := range n {
		tm := &mtimer{id: i, w: new(Timer), pinned: i%3 == 0}
		var f uint32
		if tm.pinned {
			f = FlagPinned
		}
		tm.w.SetFlags(f | uint32(m.bases[0].cpu))
		m.timers = append(m.timers, tm)
	}
	return m
}

func (m *model) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("jiffies %d: %s", m.jiffies, fmt.Sprintf(format, args...))
}

// --- the model's rules --------------------------------------------------

// bruteNext is the earliest bucket expiry of the base's bucketed timers.
func (m *model) bruteNext(b *mbase) (uint64, bool) {
	var min uint64
	found := false
	for _, tm := range m.timers {
		if tm.state == mInWheel && m.bases[tm.base] == b {
			if !found || refAfter(min, tm.place.bucket) {
				min, found = tm.place.bucket, true
			}
		}
	}
	return min, found
}

// atPhantom reports whether next is the next turn of one of the base's
// phantom buckets, earlier than its first timer: what a recalculation
// finds (nextInterrupt's model checks that it was the one to).
func (m *model) atPhantom(b *mbase, next uint64) bool {
	p, ok := m.phantomNext(b)
	if !ok || next != p {
		return false
	}
	min, real := m.bruteNext(b)
	return !real || refAfter(min, p)
}

// phantomNext is the earliest next turn of the base's phantom buckets.
func (m *model) phantomNext(b *mbase) (uint64, bool) {
	var min uint64
	found := false
	for idx := range b.phantom {
		if e := phantomExpiry(b.clk, idx); !found || refAfter(min, e) {
			min, found = e, true
		}
	}
	return min, found
}

// phantomExpiry is when a marked bucket with no timer next comes round
// from the clock clk: its slot's next turn at its level, each level's
// clock rounded up from the one below (the level clocks of
// timer_recalc_next_expiry).
func phantomExpiry(clk uint64, idx int) uint64 {
	lvl, slot := idx/LvlSize, uint64(idx%LvlSize)
	for range lvl {
		rem := clk & LvlClkMask
		clk >>= LvlClkShift
		if rem != 0 {
			clk++
		}
	}
	return (clk + (slot-clk)&LvlMask) << LvlShift(lvl)
}

// recalcNow is timer_recalc_next_expiry (W8) by brute force. As in the
// kernel, the result starts at the sentinel clk+NEXT_TIMER_MAX_DELTA and
// only an earlier bucket replaces it, and timers_pending is "the result is
// not the sentinel", so a lone bucket exactly at the sentinel (a timeout of
// CUTOFF−1 from a clock one past a level-8 boundary) reads as none.
func (m *model) recalcNow(b *mbase) {
	b.tainted = false
	b.ne, b.pending = b.clk+NextTimerMaxDelta, false
	if min, ok := m.bruteNext(b); ok && refAfter(b.ne, min) {
		b.ne, b.pending = min, true
	}
	// A phantom bucket reads as an event like any other.
	if min, ok := m.phantomNext(b); ok && refAfter(b.ne, min) {
		b.ne, b.pending = min, true
	}
	b.recalc = false
}

// forward is __forward_timer_base (W6).
func (m *model) forward(b *mbase, basej uint64) {
	if !refAfter(basej, b.clk) {
		return
	}
	if refAfter(b.ne, basej) {
		b.clk = basej
	} else {
		if refAfter(b.clk, b.ne) {
			m.fatalf("cpu%d: forward with next_expiry %d before clk %d (the kernel's WARN_ON_ONCE)", b.cpu, b.ne, b.clk)
		}
		b.clk = b.ne
	}
	m.rollPassed(b)
}

// enqueue is internal_add_timer (W4, W5); it reports "first".
func (m *model) enqueue(b *mbase, tm *mtimer, expires uint64) bool {
	tm.base = m.baseIndex(b)
	tm.state = mInWheel
	tm.expires = expires
	tm.armClk = b.clk
	tm.armJ = m.jiffies
	tm.place = refPlaceOf(expires, b.clk, m.depth)
	tm.origBucket = tm.place.bucket
	m.seq++
	tm.seq = m.seq
	tm.tickOnly = true
	tm.lostByQuirk = false
	// When it must run if the wheel keeps running every tick: at its bucket
	// if that is later than now; else at this jiffy if the base still has
	// to run for it, or at the next one.
	switch {
	case refAfter(tm.place.bucket, m.jiffies):
		tm.fireJ = tm.place.bucket
	case m.inRun == b || b.ranAt != m.jiffies:
		tm.fireJ = m.jiffies
	default:
		tm.fireJ = m.jiffies + 1
	}
	tm.armedAfterRun = m.inRun != b && b.ranAt == m.jiffies
	delete(b.phantom, tm.place.idx) // the mark is a timer's again
	if refAfter(b.ne, tm.place.bucket) {
		b.ne, b.pending, b.recalc = tm.place.bucket, true, false
		return true
	}
	return false
}

// detach is detach_if_pending (W10): emptying a bucket marks next_expiry
// stale. A collected timer is only dropped from its round.
func (m *model) detach(tm *mtimer) bool {
	switch tm.state {
	case mIdle:
		return false
	case mCollected:
		tm.state = mIdle
		coverage["detached while collected"]++
		return true
	}
	tm.state = mIdle
	b := m.bases[tm.base]
	for _, o := range m.timers {
		if o.state == mInWheel && o.base == tm.base && o.place.idx == tm.place.idx {
			return true
		}
	}
	b.recalc = true
	coverage["detach emptied a bucket"]++
	return true
}

// collect is one round of __run_timers (W7): the timers whose bucket is
// due at next_expiry, ordered by level (high first) and, within a bucket,
// newest first.
func (m *model) collect(b *mbase, j uint64) bool {
	if !(!refAfter(b.clk, j) && !refAfter(b.ne, j)) {
		return false
	}
	b.clk = b.ne
	m.rollPassed(b)
	// The marks at this clock value go, timers or not.
	for lvl, clk := 0, b.clk; lvl < m.depth; lvl++ {
		if b.phantom[lvl*LvlSize+int(clk&LvlMask)] {
			delete(b.phantom, lvl*LvlSize+int(clk&LvlMask))
			coverage["collected a phantom bucket"]++
		}
		if clk&LvlClkMask != 0 {
			break
		}
		clk >>= LvlClkShift
	}
	b.round = b.round[:0]
	for _, tm := range m.timers {
		if tm.state == mInWheel && m.bases[tm.base] == b && tm.place.bucket == b.clk {
			tm.state = mCollected
			b.round = append(b.round, tm)
		}
	}
	slices.SortFunc(b.round, func(x, y *mtimer) int {
		if c := cmp.Compare(y.place.lvl, x.place.lvl); c != 0 {
			return c
		}
		return cmp.Compare(y.seq, x.seq)
	})
	if len(b.round) == 0 {
		coverage["empty round"]++
	}
	if len(b.round) > 1 && b.round[0].place.lvl != b.round[len(b.round)-1].place.lvl {
		coverage["round over several levels"]++
	}
	if len(b.round) > 1 && b.round[0].place.idx == b.round[1].place.idx {
		coverage["round with a shared bucket"]++
	}
	b.clk++
	m.recalcNow(b)
	return true
}

// nextInterrupt is next_timer_interrupt (W9).
func (m *model) nextInterrupt(b *mbase, basej uint64) uint64 {
	if b.recalc {
		m.recalcNow(b)
	}
	if !b.pending {
		b.ne = basej + NextTimerMaxDelta
		for _, tm := range m.timers {
			if tm.state == mInWheel && m.bases[tm.base] == b && refAfter(b.ne, tm.place.bucket) {
				tm.tickOnly, tm.lostByQuirk = false, true
				b.tainted = true
				quirkLate++
			}
		}
	}
	return b.ne
}

func (m *model) baseIndex(b *mbase) int {
	if m.bases[0] == b {
		return 0
	}
	return 1
}

// --- driving both -------------------------------------------------------

// drawTimeout draws a timeout (a signed tick count) covering every part of
// the index calculation; it stays well inside 2^62.
func (m *model) drawTimeout(label string) uint64 {
	cutoff := TimeoutCutoff(m.depth)
	switch rapid.IntRange(0, 9).Draw(m.t, label+"Kind") {
	case 0, 1:
		return rapid.Uint64Range(0, 70).Draw(m.t, label)
	case 2:
		n := rapid.IntRange(1, m.depth-1).Draw(m.t, label+"Lvl")
		return LvlStart(n) + uint64(rapid.IntRange(-2, 2).Draw(m.t, label+"Off"))
	case 3:
		return cutoff + uint64(rapid.IntRange(-2, 2).Draw(m.t, label+"Off"))
	case 4:
		return -rapid.Uint64Range(1, 1<<40).Draw(m.t, label+"Back")
	case 5:
		return 1 << 40
	case 6:
		return rapid.Uint64Range(0, 4096).Draw(m.t, label)
	default:
		return rapid.Uint64Range(0, cutoff+cutoff/8).Draw(m.t, label)
	}
}

func (m *model) pickTimer(label string) *mtimer {
	return m.timers[rapid.IntRange(0, len(m.timers)-1).Draw(m.t, label)]
}

func (m *model) pickBase(label string) *mbase {
	return m.bases[rapid.IntRange(0, 1).Draw(m.t, label)]
}

// arm is what __mod_timer does with the wheel: forward the timer's base and
// detach it if pending, then forward the target base and add it there.
func (m *model) arm(tm *mtimer, b *mbase) {
	m.online(b)
	old := m.bases[tm.base]
	if tm.state != mIdle {
		m.forward(old, m.jiffies)
		old.w.Forward(m.jiffies)
		m.checkScalars(old, "forward before re-arm")
		want := m.detach(tm)
		if got := old.w.Detach(tm.w); got != want {
			m.fatalf("Detach(t%d) = %v, want %v", tm.id, got, want)
		}
	}
	m.forward(b, m.jiffies)
	b.w.Forward(m.jiffies)
	m.checkScalars(b, "forward before arm")

	ref := m.jiffies
	if rapid.Bool().Draw(m.t, "relToClk") {
		ref = b.clk // so that level and capacity edges are hit exactly
	}
	expires := ref + m.drawTimeout("timeout")
	m.armAt(tm, b, expires)
}

func (m *model) armAt(tm *mtimer, b *mbase, expires uint64) {
	tm.gen++
	tm.w.SetFlags(tm.w.Flags()&^FlagBaseMask | uint32(b.cpu))
	wantFirst := m.enqueue(b, tm, expires)
	idx, bucket, first := b.w.Add(tm.w, expires)
	if idx != tm.place.idx || bucket != tm.place.bucket || first != wantFirst {
		m.fatalf("cpu%d clk %d: Add(t%d, %d) = (idx %d, bucket %d, first %v), want (%d, %d, %v)",
			b.cpu, tm.armClk, tm.id, expires, idx, bucket, first, tm.place.idx, tm.place.bucket, wantFirst)
	}
	m.checkScalars(b, "add")
}

func (m *model) cancel(tm *mtimer) {
	b := m.bases[tm.base]
	want := m.detach(tm)
	if got := b.w.Detach(tm.w); got != want {
		m.fatalf("Detach(t%d) = %v, want %v", tm.id, got, want)
	}
	m.checkScalars(b, "detach")
}

// run is the timer softirq for one base at jiffies j: the Collect /
// NextExpired loop, with each expired timer's "function" possibly arming
// or cancelling timers, as callbacks do.
func (m *model) run(b *mbase, j uint64) {
	m.inRun = b
	defer func() { m.inRun = nil }()
	for {
		due := m.collect(b, j)
		if got := b.w.Collect(j); got != due {
			m.fatalf("cpu%d: Collect(%d) = %v, want %v (clk %d, next_expiry %d)", b.cpu, j, got, due, b.w.Clk(), b.w.NextExpiry())
		}
		if !due {
			break
		}
		m.checkScalars(b, "collect")
		c := b.clk - 1 // the clock value being processed
		for {
			var want *mtimer
			for len(b.round) > 0 && want == nil {
				if b.round[0].state == mCollected {
					want = b.round[0]
				}
				b.round = b.round[1:]
			}
			got := b.w.NextExpired()
			if want == nil && got == nil {
				break
			}
			if want == nil || got != want.w {
				m.fatalf("cpu%d at clk %d: NextExpired = %s, want %s", b.cpu, c, m.name(got), m.nameOf(want))
			}
			m.fire(want, b, c, j)
			m.callback(want, b)
		}
	}
	b.ranAt = j
	if b.w.Due(j) {
		m.fatalf("cpu%d: still due after running at %d", b.cpu, j)
	}
}

func (m *model) name(t *Timer) string {
	if t == nil {
		return "nil"
	}
	for _, tm := range m.timers {
		if tm.w == t {
			return fmt.Sprintf("t%d", tm.id)
		}
	}
	return "an unknown timer"
}

func (m *model) nameOf(tm *mtimer) string {
	if tm == nil {
		return "nil"
	}
	return fmt.Sprintf("t%d", tm.id)
}

// fire checks the per-timer guarantees WI1–WI4 of docs/wheel.md as the timer is
// handed out at clock value c, jiffies j.
func (m *model) fire(tm *mtimer, b *mbase, c, j uint64) {
	key := [2]int{tm.id, tm.gen}
	m.fired[key]++
	if m.fired[key] != 1 {
		m.fatalf("t%d (arm %d) ran %d times", tm.id, tm.gen, m.fired[key])
	}
	if tm.w.Pending() {
		m.fatalf("t%d still pending once handed out", tm.id)
	}
	tm.state = mIdle
	coverage[fmt.Sprintf("fired on level %d", tm.place.lvl)]++
	switch {
	case tm.place.clamped:
		coverage["fired clamped"]++
	case tm.place.expired:
		coverage["fired expired"]++
	}
	if tm.tickOnly {
		coverage["fired, run every tick"]++
	}
	if refAfter(tm.armClk, c) != refAfter(tm.armClk+(1<<63), c+(1<<63)) || c < tm.armClk {
		coverage["fired across the 64-bit wrap"]++
	}
	if len(b.round) > 0 {
		coverage["fired with more of its round to come"]++
	}
	if c != tm.place.bucket {
		m.fatalf("t%d ran at clk %d, its bucket expiry is %d", tm.id, c, tm.place.bucket)
	}
	if refAfter(c, j) {
		m.fatalf("t%d ran at clk %d, ahead of jiffies %d", tm.id, c, j)
	}
	p, g := tm.place, refPow8(tm.place.lvl)
	if tm.place.bucket != tm.origBucket {
		// Lost by the sentinel quirk and overtaken: late by whole
		// revolutions of its level, never early.
		if !tm.lostByQuirk || (c-tm.origBucket)%(64*g) != 0 || !refAfter(c, tm.origBucket) {
			m.fatalf("t%d ran at %d, armed for bucket %d", tm.id, c, tm.origBucket)
		}
		c = tm.origBucket // check the arm-time placement below
	}
	switch {
	case p.clamped:
		// WI4: early, within (armClk+MAX, armClk+CUTOFF].
		if d := c - tm.armClk; d <= refMax(m.depth) || d > refCutoff(m.depth) {
			m.fatalf("clamped t%d ran at armed clk+%d, want in (%d, %d]", tm.id, d, refMax(m.depth), refCutoff(m.depth))
		}
	case p.expired:
		if c != tm.armClk || !refAfter(c, tm.expires) {
			m.fatalf("expired t%d (expires %d) ran at %d, armed at clk %d", tm.id, tm.expires, c, tm.armClk)
		}
	default:
		// WI1–WI3: never early; at most one granule late.
		if !refAfter(c, tm.expires) {
			m.fatalf("t%d ran early: clk %d, expires %d", tm.id, c, tm.expires)
		}
		if c-tm.expires > g {
			m.fatalf("t%d on level %d ran %d late, more than a granule %d", tm.id, p.lvl, c-tm.expires, g)
		}
	}
	if tm.tickOnly && j != tm.fireJ {
		m.fatalf("t%d (level %d, bucket %d, armed at jiffies %d) ran at jiffies %d with the wheel run every tick, want %d",
			tm.id, p.lvl, p.bucket, tm.armJ, j, tm.fireJ)
	}
}

// callback is what an expired timer's function may do: nothing, re-arm
// itself, arm or cancel another timer (possibly one collected in the same
// round and not yet run).
func (m *model) callback(tm *mtimer, b *mbase) {
	switch rapid.IntRange(0, 7).Draw(m.t, "callback") {
	case 0:
		m.arm(tm, b)
	case 1:
		m.arm(m.pickTimer("cbTimer"), m.pickBase("cbBase"))
	case 2:
		m.cancel(m.pickTimer("cbCancel"))
	}
}

func (m *model) tick(n uint64) {
	for range n {
		m.jiffies++
		m.runUp()
	}
}

// runUp runs, at this jiffy, the bases that are up when its tick comes: a
// base a callback brings back online meanwhile first runs at the next.
func (m *model) runUp() {
	var up [2]bool
	for i, b := range m.bases {
		up[i] = !b.offline
	}
	for i, b := range m.bases {
		if up[i] {
			m.run(b, m.jiffies)
		}
	}
}

// idle is a NOHZ idle period on both CPUs: ask each base for its next
// event (and forward it, as __get_next_timer_interrupt does), sleep until
// that event, or longer (a late wakeup), then run the wheels once.
func (m *model) idle() {
	next := m.enterIdle()
	var to uint64
	switch rapid.IntRange(0, 5).Draw(m.t, "wake") {
	case 0, 1, 2: // at the event, like the programmed tick
		to = next
		if !refAfter(to, m.jiffies) {
			to = m.jiffies + 1
		}
	case 3:
		to = m.jiffies + rapid.Uint64Range(1, 1<<12).Draw(m.t, "sleep")
	case 4:
		to = m.jiffies + rapid.Uint64Range(1, 1<<34).Draw(m.t, "sleep")
	default: // just past the event
		to = next + rapid.Uint64Range(1, 1<<20).Draw(m.t, "late")
		if !refAfter(to, m.jiffies) {
			to = m.jiffies + 1
		}
	}
	m.wake(to)
}

// enterIdle asks both bases for their next event and forwards them, as the
// NOHZ code does when the CPUs stop their ticks; it returns the earliest.
func (m *model) enterIdle() uint64 {
	next := m.jiffies + NextTimerMaxDelta
	for _, b := range m.bases {
		if b.offline {
			continue
		}
		want := m.nextInterrupt(b, m.jiffies)
		got := b.w.NextTimerInterrupt(m.jiffies)
		if got != want {
			m.fatalf("cpu%d: NextTimerInterrupt(%d) = %d, want %d", b.cpu, m.jiffies, got, want)
		}
		// Against the brute-force minimum directly, too.
		if min, ok := m.bruteNext(b); !m.inQuirk(b) && !m.atPhantom(b, got) && (ok && got != min || !ok && got != m.jiffies+NextTimerMaxDelta) {
			m.fatalf("cpu%d: NextTimerInterrupt = %d, brute force says %d (any %v)", b.cpu, got, min, ok)
		}
		if refAfter(next, got) {
			next = got
		}
		m.forward(b, m.jiffies)
		b.w.Forward(m.jiffies)
		m.checkScalars(b, "forward on idle entry")
	}
	return next
}

// wake ends the idle period at jiffies to and runs both wheels once.
func (m *model) wake(to uint64) {
	for _, tm := range m.timers {
		tm.tickOnly = false
	}
	m.jiffies = to
	m.runUp()
}

// online is timers_prepare_cpu for a dead CPU's base coming back: clk at
// jiffies, next_expiry the sentinel, nothing pending (its pending bitmap as
// the migration left it). A base that is up is left alone.
func (m *model) online(b *mbase) {
	if !b.offline {
		return
	}
	b.w.Prepare(m.jiffies)
	if len(b.phantom) > 0 {
		coverage["online with phantom buckets"]++
	}
	b.clk, b.ne, b.recalc, b.pending = m.jiffies, m.jiffies+NextTimerMaxDelta, false, false
	b.prevClk = m.jiffies
	b.ranAt = m.jiffies // this jiffy's tick has passed it by
	b.offline = false
}

// migrate is timers_dead_cpu for src: forward dst, then move every timer.
func (m *model) migrate(src, dst *mbase) {
	m.forward(dst, m.jiffies)
	dst.w.Forward(m.jiffies)
	var moving []*mtimer
	for _, tm := range m.timers {
		if tm.state == mInWheel && m.bases[tm.base] == src {
			moving = append(moving, tm)
		}
	}
	// Bucket by bucket from index 0, each bucket from its head (newest).
	slices.SortFunc(moving, func(x, y *mtimer) int {
		if c := cmp.Compare(x.place.idx, y.place.idx); c != 0 {
			return c
		}
		return cmp.Compare(y.seq, x.seq)
	})
	wantFirst := false
	for _, tm := range moving {
		// detach_timer, not detach_if_pending: src's bit stays set, its
		// next_expiry untouched.
		src.phantom[tm.place.idx] = true
		tm.state = mIdle
		if m.enqueue(dst, tm, tm.expires) {
			wantFirst = true
		}
	}
	n, first := src.w.MigrateTo(dst.w, dst.cpu)
	if n > 1 {
		coverage["migrated several"]++
	}
	if n != len(moving) || first != wantFirst {
		m.fatalf("MigrateTo: (%d, %v), want (%d, %v)", n, first, len(moving), wantFirst)
	}
	if src.w.Len() != 0 {
		m.fatalf("cpu%d still holds %d timers after migrating", src.cpu, src.w.Len())
	}
	for _, tm := range moving {
		if tm.w.CPU() != dst.cpu || tm.w.Flags()&FlagMigrating != 0 || (tm.w.Flags()&FlagPinned != 0) != tm.pinned {
			m.fatalf("t%d flags %#x after migrating to cpu%d", tm.id, tm.w.Flags(), dst.cpu)
		}
	}
	m.checkScalars(src, "migrate (source)")
	m.checkScalars(dst, "migrate (destination)")
	src.offline = true
}

// --- checks -------------------------------------------------------------

// checkScalars compares the base's clock and next-expiry bookkeeping with
// the model, and checks the clock and next-expiry invariants (WI6–WI7).
func (m *model) checkScalars(b *mbase, after string) {
	w := b.w
	if w.Clk() != b.clk || w.NextExpiry() != b.ne || w.NeedsRecalc() != b.recalc {
		m.fatalf("cpu%d after %s: clk %d next_expiry %d recalc %v, want %d %d %v",
			b.cpu, after, w.Clk(), w.NextExpiry(), w.NeedsRecalc(), b.clk, b.ne, b.recalc)
	}
	if !b.recalc && w.TimersPending() != b.pending {
		m.fatalf("cpu%d after %s: timers_pending %v, want %v", b.cpu, after, w.TimersPending(), b.pending)
	}
	if refAfter(b.prevClk, w.Clk()) {
		m.fatalf("cpu%d after %s: clk moved back from %d to %d", b.cpu, after, b.prevClk, w.Clk())
	}
	b.prevClk = w.Clk()
	if refAfter(w.Clk(), m.jiffies+1) {
		m.fatalf("cpu%d after %s: clk %d beyond jiffies+1", b.cpu, after, w.Clk())
	}
	// Whatever the quirk did, next_expiry is never later than a bucket
	// that next_timer_interrupt did not skip.
	for _, tm := range m.timers {
		if tm.state == mInWheel && m.bases[tm.base] == b && !tm.lostByQuirk && refAfter(w.NextExpiry(), tm.place.bucket) {
			m.fatalf("cpu%d after %s: next_expiry %d later than t%d's bucket %d", b.cpu, after, w.NextExpiry(), tm.id, tm.place.bucket)
		}
	}
	min, ok := m.bruteNext(b)
	if m.inQuirk(b) {
		quirkStates++
		return
	}
	if ok && refAfter(w.NextExpiry(), min) {
		m.fatalf("cpu%d after %s: next_expiry %d later than the earliest bucket %d", b.cpu, after, w.NextExpiry(), min)
	}
	if m.atPhantom(b, w.NextExpiry()) {
		// A recalculation found a phantom bucket first: an event with
		// no timer (only a recalculation sees them; an enqueue or a
		// forward does not).
		coverage["next expiry at a phantom bucket"]++
		return
	}
	if !b.recalc && ok && w.NextExpiry() != min {
		m.fatalf("cpu%d after %s: next_expiry %d, earliest bucket %d, and no recalc pending", b.cpu, after, w.NextExpiry(), min)
	}
}

// checkAll compares everything observable with the model, bucket by
// bucket and timer by timer (WI5–WI8).
func (m *model) checkAll() {
	for bi, b := range m.bases {
		m.checkScalars(b, "op")
		n := 0
		for idx := range maxWheelSize {
			var want []*Timer
			for _, tm := range m.timers {
				if tm.state == mInWheel && tm.base == bi && tm.place.idx == idx {
					want = append(want, tm.w)
				}
			}
			slices.SortFunc(want, func(x, y *Timer) int { return cmp.Compare(m.seqOf(y), m.seqOf(x)) })
			var got []*Timer
			b.w.Each(idx, func(t *Timer) { got = append(got, t) })
			if !slices.Equal(got, want) {
				m.fatalf("cpu%d bucket %d holds %v, want %v (newest first)", b.cpu, idx, m.names(got), m.names(want))
			}
			if b.w.PendingBit(idx) != (len(want) > 0 || b.phantom[idx]) {
				m.fatalf("cpu%d bucket %d: pending bit %v with %d timers (phantom %v)", b.cpu, idx, b.w.PendingBit(idx), len(want), b.phantom[idx])
			}
			n += len(want)
			for _, tm := range want {
				// WI7: the clock never passed a pending bucket.
				if refAfter(b.w.Clk(), m.timerOf(tm).place.bucket) {
					m.fatalf("cpu%d clk %d passed t%d's bucket %d", b.cpu, b.w.Clk(), m.timerOf(tm).id, m.timerOf(tm).place.bucket)
				}
			}
		}
		if b.w.Len() != n {
			m.fatalf("cpu%d Len %d, want %d", b.cpu, b.w.Len(), n)
		}
	}
	for _, tm := range m.timers {
		if tm.w.Pending() != (tm.state != mIdle) {
			m.fatalf("t%d Pending %v, model state %d", tm.id, tm.w.Pending(), tm.state)
		}
		if tm.state == mInWheel && (tm.w.Index() != tm.place.idx || tm.w.Expires() != tm.expires || tm.w.CPU() != m.bases[tm.base].cpu) {
			m.fatalf("t%d: index %d expires %d cpu %d, want %d %d %d", tm.id, tm.w.Index(), tm.w.Expires(), tm.w.CPU(),
				tm.place.idx, tm.expires, m.bases[tm.base].cpu)
		}
	}
}

// checkRan checks WI8 after both bases ran at the current jiffies: no
// bucket that is due is left behind.
func (m *model) checkRan() {
	for _, tm := range m.timers {
		if tm.armedAfterRun && tm.armJ == m.jiffies {
			continue // due, but its base's run at this jiffy is over
		}
		if tm.state == mInWheel && !tm.lostByQuirk && !refAfter(tm.place.bucket, m.jiffies) {
			m.fatalf("t%d's bucket %d is due at jiffies %d but it did not run (cpu%d, expires %d, armed at jiffies %d clk %d, level %d; base clk %d next_expiry %d)",
				tm.id, tm.place.bucket, m.jiffies, m.bases[tm.base].cpu, tm.expires, tm.armJ, tm.armClk, tm.place.lvl, m.bases[tm.base].clk, m.bases[tm.base].ne)
		}
	}
}

func (m *model) timerOf(t *Timer) *mtimer {
	for _, tm := range m.timers {
		if tm.w == t {
			return tm
		}
	}
	m.fatalf("unknown timer in a bucket")
	return nil
}

func (m *model) seqOf(t *Timer) uint64 { return m.timerOf(t).seq }

func (m *model) names(ts []*Timer) []string {
	var s []string
	for _, t := range ts {
		s = append(s, m.name(t))
	}
	return s
}

// aimedArm arms a timer to expire one tick before an aim: a new aim one
// level-L granule boundary beyond the level's start, or an earlier aim that
// is still ahead. Every level up to L rounds T−1 up to T itself.
func (m *model) aimedArm(tm *mtimer, b *mbase) {
	m.online(b)
	if tm.state != mIdle {
		m.cancel(tm)
	}
	m.forward(b, m.jiffies)
	b.w.Forward(m.jiffies)
	var live []uint64
	for _, a := range m.aims {
		if refAfter(a-1, b.clk) && a-1-b.clk < refCutoff(m.depth) {
			live = append(live, a)
		}
	}
	m.aims = live
	var aim uint64
	if len(live) > 0 && rapid.Bool().Draw(m.t, "reuseAim") {
		aim = live[rapid.IntRange(0, len(live)-1).Draw(m.t, "aim")]
	} else {
		lvl := rapid.IntRange(1, m.depth-1).Draw(m.t, "aimLvl")
		g := refPow8(lvl)
		aim = (b.clk+LvlStart(lvl))/g*g + g
		m.aims = append(m.aims, aim)
	}
	m.armAt(tm, b, aim-1)
}

// ladder arms timers for one aim T−1 (T a level-L granule boundary) while
// sleeping the clock closer between arms, so that each lands a level or so
// lower and the round at T collects several levels.
func (m *model) ladder() {
	b := m.pickBase("base")
	m.online(b)
	lvl := rapid.IntRange(1, m.depth-1).Draw(m.t, "ladderLvl")
	m.forward(b, m.jiffies)
	b.w.Forward(m.jiffies)
	g := refPow8(lvl)
	aim := (b.clk+LvlStart(lvl))/g*g + g
	for range rapid.IntRange(2, 6).Draw(m.t, "rungs") {
		tm := m.pickTimer("rung")
		if tm.state != mIdle {
			m.cancel(tm)
		}
		m.forward(b, m.jiffies)
		b.w.Forward(m.jiffies)
		if !refAfter(aim-1, b.clk) {
			break
		}
		m.armAt(tm, b, aim-1)
		if left := aim - 1 - m.jiffies; refAfter(aim-1, m.jiffies) && left > 1 {
			m.enterIdle()
			m.wake(m.jiffies + rapid.Uint64Range(1, left-1).Draw(m.t, "closer"))
		}
	}
}

// wheelModel is one case of the model test: two bases and the model driven
// by a random sequence of arm / re-arm / cancel / tick / idle / next-event /
// recalc / migrate operations, comparing everything after each step. It
// adds the steps it ran to modelSteps.
func wheelModel(t *rapid.T) {
	m := newModel(t)
	steps := rapid.IntRange(20, 200).Draw(t, "steps")
	for range steps {
		switch op := rapid.IntRange(0, 13).Draw(t, "op"); op {
		case 0, 1, 2: // arm or re-arm (detach + add)
			m.arm(m.pickTimer("timer"), m.pickBase("base"))
		case 3: // several timers at one expiry: LIFO within a bucket
			b := m.pickBase("base")
			m.online(b)
			m.forward(b, m.jiffies)
			b.w.Forward(m.jiffies)
			expires := m.jiffies + m.drawTimeout("timeout")
			for range rapid.IntRange(2, 5).Draw(t, "burst") {
				tm := m.pickTimer("timer")
				if tm.state != mIdle {
					m.cancel(tm)
				}
				m.armAt(tm, b, expires)
			}
		case 4: // cancel
			m.cancel(m.pickTimer("timer"))
		case 5: // cancel a base's first timer: the lazy recalc
			b := m.pickBase("base")
			if min, ok := m.bruteNext(b); ok {
				for _, tm := range m.timers {
					if tm.state == mInWheel && m.bases[tm.base] == b && tm.place.bucket == min {
						m.cancel(tm)
					}
				}
			}
		case 6, 7: // run every tick for a while
			m.tick(rapid.Uint64Range(1, 2000).Draw(t, "ticks"))
			m.checkRan()
		case 8: // idle, then one run
			m.idle()
			m.checkRan()
		case 9: // recalc, then the next event
			b := m.pickBase("base")
			m.online(b)
			if b.recalc {
				m.recalcNow(b)
			}
			b.w.Recalc()
			m.checkScalars(b, "recalc")
			want := m.nextInterrupt(b, m.jiffies)
			if got := b.w.NextTimerInterrupt(m.jiffies); got != want {
				m.fatalf("cpu%d: NextTimerInterrupt = %d, want %d", b.cpu, got, want)
			}
			if min, ok := m.bruteNext(b); ok && !m.inQuirk(b) && want != min && !m.atPhantom(b, want) {
				m.fatalf("cpu%d: NextTimerInterrupt = %d, brute force says %d", b.cpu, want, min)
			}
		case 10: // CPU offline: migrate its timers to the other
			src := m.pickBase("src")
			dst := m.bases[1-m.baseIndex(src)]
			if !src.offline {
				m.online(dst) // the other CPU must be up to take them
				m.migrate(src, dst)
			}
		case 11: // a dead CPU comes back online
			m.online(m.pickBase("base"))
		case 12: // timers on several levels sharing one bucket expiry
			m.aimedArm(m.pickTimer("timer"), m.pickBase("base"))
		case 13:
			m.ladder()
		}
		m.checkAll()
		modelSteps++
	}
}

// modelSteps counts the steps wheelModel ran: the operations of the soak
// knob.
var modelSteps int64

// TestWheelAgainstModel runs wheelModel on random cases (rapid's seed,
// -rapid.checks of them, a fifth under -short) and logs what the cases
// reached. TMIGR_SOAK=N (package internal/soak) runs batches of cases until
// N steps have been checked. Which paths the generator reaches is asserted
// by TestWheelModelCoverage, on fixed cases.
func TestWheelAgainstModel(t *testing.T) {
	clear(coverage)
	modelSteps = 0
	soak.Run(t, func() int64 { return modelSteps }, func(t *testing.T) { rapid.Check(t, wheelModel) })
	logCoverage(t)
}

// coverageClasses are the paths the model test must reach: every one is
// reached, many times, by the fixed cases of TestWheelModelCoverage.
var coverageClasses = []string{
	"fired on level 0", "fired on level 1", "fired clamped", "fired expired",
	"fired across the 64-bit wrap", "fired, run every tick", "fired with more of its round to come",
	"detached while collected", "detach emptied a bucket", "empty round",
	"round over several levels", "round with a shared bucket", "migrated several",
	"collected a phantom bucket", "next expiry at a phantom bucket", "online with phantom buckets",
}

// coverageCases is how many fixed cases TestWheelModelCoverage runs, and
// coverageWords how many random words each case's input holds (more than a
// case can draw: a case that ran out would be skipped, and the test fails).
const coverageCases, coverageWords = 40, 1 << 15

// TestWheelModelCoverage runs wheelModel on fixed cases — inputs drawn from
// a PRNG with a fixed seed and replayed through rapid.MakeFuzz, so the same
// cases run every time whatever the flags (-short, -rapid.checks,
// -rapid.seed) — and asserts that they reach every coverage class. It
// cannot pass or fail by luck: a change to the generator or to the wheel
// that stops some class from being reached fails it every time.
func TestWheelModelCoverage(t *testing.T) {
	clear(coverage)
	run := rapid.MakeFuzz(wheelModel)
	r := rand.New(rand.NewPCG(2026, 14))
	input := make([]byte, 8*coverageWords)
	for i := range coverageCases {
		for j := 0; j < len(input); j += 8 {
			binary.LittleEndian.PutUint64(input[j:], r.Uint64())
		}
		done := false
		if !t.Run(fmt.Sprintf("case%d", i), func(t *testing.T) { run(t, input); done = true }) {
			return
		}
		if !done {
			t.Fatalf("case %d drew more than its %d words and was skipped", i, coverageWords)
		}
	}
	logCoverage(t)
	for _, k := range coverageClasses {
		if coverage[k] == 0 {
			t.Errorf("the fixed cases never reached %q", k)
		}
	}
}

// logCoverage logs the coverage counts and the sentinel quirk's.
func logCoverage(t *testing.T) {
	keys := make([]string, 0, len(coverage))
	for k := range coverage {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Logf("%-40s %d", k, coverage[k])
	}
	t.Logf("sentinel quirk: %d checks in the state, %d timers made late by it, %d overtaken by the clock", quirkStates, quirkLate, quirkPassed)
}
