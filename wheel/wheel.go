// Package wheel is one base of Linux's timer wheel (kernel/time/timer.c since
// 4.8), with the kernel's index arithmetic, expiry order and next-expiry
// bookkeeping reproduced exactly.
//
// # The wheel
//
// Time is counted in ticks ("jiffies"). A base has LVL_DEPTH levels of 64
// buckets; level n has a granularity of 8^n ticks, so each level's clock runs
// eight times slower than the one below it:
//
//	level  granularity  timeouts placed there (ticks from the base clock)
//	  0          1            0 –        62
//	  1          8           63 –       503
//	  2         64          504 –     4,031
//	  3        512        4,032 –    32,255
//	  4      4,096       32,256 –   258,047
//	  5     32,768      258,048 – 2,064,383
//	  6    262,144    2,064,384 – 16,515,071
//	  7  2,097,152   16,515,072 – 132,120,575   (the last level when HZ <= 100)
//	  8 16,777,216  132,120,576 – 1,056,964,607 (HZ > 100)
//
// A timer is never cascaded down: it stays in the bucket it was put in and
// fires when that bucket's time comes, which is why a timer in level n may be
// up to 8^n ticks late (at most 8/63, about 12.7%, of its timeout) and is
// never early. The bucket is chosen by rounding the expiry *up* to the level's
// granularity, always adding one granule, even when the expiry is already a
// multiple of it (calc_index):
//
//	q            = (expires >> 3n) + 1
//	bucketExpiry = q << 3n
//	index        = 64n + q mod 64
//
// The one exception is a timeout beyond the wheel's capacity (more than
// 12 days at HZ=1000, 48 at HZ=250): it is clamped and fires early.
//
// # A kernel corner reproduced on purpose
//
// Enqueue takes a new bucket as the base's next expiry only if it is
// strictly before the stored next_expiry, which on an empty base is the
// "nothing pending" value clk + NextTimerMaxDelta as of the last
// recalculation. A timeout near the wheel's capacity, armed on a base that
// has been empty while its clock was forwarded for hours, can land at or
// after that value: the base then believes nothing is pending, and the
// timer fires up to 2^30 ticks late. The kernel's timer.c behaves the same;
// wheel/testdata/sentinel.txt replays it.
//
// # Ownership
//
// Timers are intrusive: a Timer is a value the caller owns, linked into its
// bucket by pointers inside it, so arming, re-arming and cancelling an existing
// timer never allocates. A Base is a plain data structure with no lock and no
// clock; the caller (package cpu) holds the base's lock, supplies the current
// tick, and runs the expired timers' functions. Collect and NextExpired hand
// the expired timers out one at a time in the kernel's order (higher levels
// first at one clock value, last-in-first-out within a bucket), so the caller
// can drop its lock while a timer's function runs, exactly as the kernel's
// expire_timers does.
package wheel

import (
	"math/bits"
	"sync/atomic"
)

// Wheel geometry (kernel/time/timer.c).
const (
	LvlClkShift = 3                // each level's clock is 8 times slower
	LvlClkDiv   = 1 << LvlClkShift // 8
	LvlClkMask  = LvlClkDiv - 1
	LvlBits     = 6
	LvlSize     = 1 << LvlBits // buckets per level
	LvlMask     = LvlSize - 1

	// MaxDepth is the depth of a wheel for HZ > 100.
	MaxDepth     = 9
	maxWheelSize = LvlSize * MaxDepth

	// NextTimerMaxDelta is the distance the kernel puts next_expiry from
	// the base clock when no timer is pending.
	NextTimerMaxDelta = 1<<30 - 1
)

// Timer flag bits, laid out as the kernel's timer_list.flags: the CPU of the
// base the timer belongs to in the low bits, the user flags, and the index
// of the bucket the timer sits in at the top.
const (
	FlagCPUMask    uint32 = 0x0003FFFF
	FlagMigrating  uint32 = 0x00040000
	FlagBaseMask   uint32 = FlagCPUMask | FlagMigrating
	FlagDeferrable uint32 = 0x00080000
	FlagPinned     uint32 = 0x00100000
	FlagIRQSafe    uint32 = 0x00200000
	FlagInitMask   uint32 = FlagDeferrable | FlagPinned | FlagIRQSafe
	flagArrayShift        = 22
	flagArrayMask  uint32 = 0xFFC00000
)

// LvlShift returns the shift of level n's granularity (3n).
func LvlShift(n int) uint { return uint(n * LvlClkShift) }

// LvlGran returns level n's granularity in ticks (8^n).
func LvlGran(n int) uint64 { return 1 << LvlShift(n) }

// LvlStart returns the smallest timeout placed in level n >= 1: one level
// n-1 granule short of 64 granules, so that the +1 round-up of calc_index
// still fits in the level's 64 buckets.
func LvlStart(n int) uint64 { return (LvlSize - 1) << LvlShift(n-1) }

// DepthForHZ returns the number of levels the kernel uses at the given HZ:
// 9 above 100 Hz, 8 otherwise.
func DepthForHZ(hz int) int {
	if hz > 100 {
		return 9
	}
	return 8
}

// TimeoutCutoff returns the capacity of a wheel of the given depth
// (WHEEL_TIMEOUT_CUTOFF): a timeout at least this long is clamped.
func TimeoutCutoff(depth int) uint64 { return LvlStart(depth) }

// TimeoutMax returns the timeout a clamped timer gets (WHEEL_TIMEOUT_MAX).
func TimeoutMax(depth int) uint64 { return TimeoutCutoff(depth) - LvlGran(depth-1) }

// After reports whether tick a is after tick b, modulo wrap-around
// (time_after: the signed difference decides).
func After(a, b uint64) bool { return int64(b-a) < 0 }

// AfterEq reports whether a is after or equal to b, modulo wrap-around.
func AfterEq(a, b uint64) bool { return int64(a-b) >= 0 }

// Before reports whether a is before b, modulo wrap-around.
func Before(a, b uint64) bool { return After(b, a) }

// Timer is one wheel timer (the kernel's timer_list). Its zero value is a
// timer not armed on any base. The caller owns it and must not copy it while
// it is pending.
type Timer struct {
	next  *Timer
	pprev **Timer // nil: not pending

	expires uint64
	// flags is read without the base lock by the code that must find a
	// timer's base before locking it (the kernel's lock_timer_base), so it
	// is an atomic word; it is written only under the base lock.
	flags atomic.Uint32
	// shutdown is timer_shutdown's mark (the kernel clears the function
	// pointer): every later arm is ignored. Written and read under the
	// base lock by package cpu; the wheel only stores it.
	shutdown bool

	// Data belongs to the caller; the package never reads or writes it.
	// It says what the timer stands for: when the timer expires, the code
	// that runs expired timers hands it to its driver, which finds its
	// work there (hrtimer.Timer has the same word). The wheel calls
	// nothing: a timer has no function pointer.
	Data any
}

// Shutdown reports whether the timer was shut down (timer_shutdown): an
// arm is then ignored until the next setup. Read it under the lock of the
// timer's base.
func (t *Timer) Shutdown() bool { return t.shutdown }

// SetShutdown sets or clears the shut-down mark; call it under the lock of
// the timer's base, or before the timer is first armed.
func (t *Timer) SetShutdown(v bool) { t.shutdown = v }

// Pending reports whether the timer is linked into a base (armed, or
// collected for expiry and not yet handed out).
func (t *Timer) Pending() bool { return t.pprev != nil }

// Expires returns the tick the timer was last armed for.
func (t *Timer) Expires() uint64 { return t.expires }

// SetExpires stores a new expiry without moving the timer. The kernel does
// this in mod_timer when the new expiry maps to the bucket the timer already
// sits in.
func (t *Timer) SetExpires(e uint64) { t.expires = e }

// Flags returns the timer's flag word.
func (t *Timer) Flags() uint32 { return t.flags.Load() }

// SetFlags replaces the timer's flag word except the bucket index.
func (t *Timer) SetFlags(f uint32) { t.flags.Store(t.flags.Load()&flagArrayMask | f&^flagArrayMask) }

// CPU returns the CPU of the base the timer belongs to.
func (t *Timer) CPU() int { return int(t.flags.Load() & FlagCPUMask) }

// Index returns the bucket index the timer was last put in.
func (t *Timer) Index() int { return int(t.flags.Load() >> flagArrayShift) }

func (t *Timer) setIndex(idx int) {
	t.flags.Store(t.flags.Load()&^flagArrayMask | uint32(idx)<<flagArrayShift)
}

// Base is one timer wheel (the kernel's struct timer_base without its lock
// and CPU bookkeeping). Initialise it with Init before use.
//
// The fields every expiry reads (the clock, the next expiry, the pending
// bitmap, the collected lists) come first and the 4.5 KiB of bucket heads
// last: a softirq on a base then reads a few neighbouring cache lines and
// the buckets it collects, not lines at both ends of the base.
type Base struct {
	pending [MaxDepth]uint64 // bit i of word l: bucket 64l+i is non-empty

	clk        uint64 // the next tick to process; while expiring, one ahead
	nextExpiry uint64 // the earliest bucket expiry, if !recalc

	depth         int
	recalc        bool // a deletion emptied a bucket: nextExpiry may be early
	timersPending bool // reliable only when !recalc

	// IsIdle is the kernel's timer_base.is_idle: the NOHZ code set it when
	// the CPU stopped its tick. The wheel only stores it.
	IsIdle bool

	// The bucket lists collected for expiry at one clock value, highest
	// level last; expiring[nExpiring-1] is handed out first.
	expiring  [MaxDepth]*Timer
	nExpiring int

	vectors [maxWheelSize]*Timer
}

// Init empties the base and sets its geometry and clock, as
// timers_prepare_cpu does for a CPU coming up: clk = the current tick and
// no timer pending.
func (b *Base) Init(depth int, clk uint64) {
	if depth != 8 && depth != 9 {
		panic("wheel: depth must be 8 or 9")
	}
	*b = Base{depth: depth, clk: clk, nextExpiry: clk + NextTimerMaxDelta}
}

// Prepare readies the base of a CPU coming back online, as
// timers_prepare_cpu does (kernel/time/timer.c, 6.1 to 7.3): the clock to
// the current tick, no next expiry, not idle. It leaves the pending bitmap
// alone, as the kernel does: bits MigrateTo left behind mark empty buckets
// that the base's next recalculation still finds (see MigrateTo).
func (b *Base) Prepare(clk uint64) {
	b.clk, b.nextExpiry = clk, clk+NextTimerMaxDelta
	b.recalc, b.timersPending, b.IsIdle = false, false, false
}

// Depth returns the number of levels.
func (b *Base) Depth() int { return b.depth }

// Clk returns the base clock: the next tick to process (while timers
// expire, one ahead of the tick being processed).
func (b *Base) Clk() uint64 { return b.clk }

// NextExpiry returns the stored next_expiry, which is the earliest bucket
// expiry unless NeedsRecalc reports that a deletion may have left it early.
func (b *Base) NextExpiry() uint64 { return b.nextExpiry }

// NeedsRecalc reports whether next_expiry may be stale (early).
func (b *Base) NeedsRecalc() bool { return b.recalc }

// TimersPending reports whether any timer is pending; reliable only when
// NeedsRecalc is false (call Recalc first).
func (b *Base) TimersPending() bool { return b.timersPending }

// Index computes the bucket index and the bucket's expiry for a timer
// expiring at expires on a base whose clock is clk (calc_wheel_index).
func Index(expires, clk uint64, depth int) (idx int, bucketExpiry uint64) {
	delta := expires - clk
	for lvl := 0; lvl < depth-1; lvl++ {
		if delta < LvlStart(lvl+1) {
			return calcIndex(expires, lvl)
		}
	}
	if int64(delta) < 0 {
		// Already expired: the current level-0 bucket, due now.
		return int(clk & LvlMask), clk
	}
	if delta >= TimeoutCutoff(depth) {
		expires = clk + TimeoutMax(depth)
	}
	return calcIndex(expires, depth-1)
}

func calcIndex(expires uint64, lvl int) (int, uint64) {
	q := expires>>LvlShift(lvl) + 1
	return lvl*LvlSize + int(q&LvlMask), q << LvlShift(lvl)
}

// Level returns the level of bucket index idx.
func Level(idx int) int { return idx / LvlSize }

// Add arms t to expire at tick expires, placing it against the current base
// clock (internal_add_timer). t must not be pending. It returns the bucket
// index and bucket expiry (what the kernel's timer_start trace event prints)
// and whether the timer became the base's first event, in which case an idle
// CPU must be kicked to re-evaluate its sleep (trigger_dyntick_cpu).
func (b *Base) Add(t *Timer, expires uint64) (idx int, bucketExpiry uint64, first bool) {
	t.expires = expires
	idx, bucketExpiry = Index(expires, b.clk, b.depth)
	return idx, bucketExpiry, b.Enqueue(t, idx, bucketExpiry)
}

// Enqueue links t into bucket idx, whose expiry is bucketExpiry, as computed
// by Index against this base's current clock (enqueue_timer). Most callers
// want Add; mod_timer uses Enqueue to reuse an index it computed earlier. It
// reports whether the timer became the base's first event.
func (b *Base) Enqueue(t *Timer, idx int, bucketExpiry uint64) bool {
	head := &b.vectors[idx]
	t.next = *head
	if t.next != nil {
		t.next.pprev = &t.next
	}
	*head = t
	t.pprev = head
	b.pending[idx>>LvlBits] |= 1 << (uint(idx) & LvlMask)
	t.setIndex(idx)
	if Before(bucketExpiry, b.nextExpiry) {
		b.nextExpiry = bucketExpiry
		b.timersPending = true
		b.recalc = false
		return true
	}
	return false
}

// Detach unlinks t if it is pending on this base and reports whether it was
// (detach_if_pending). Emptying a bucket marks next_expiry for lazy
// recalculation: it may now be early, never late.
func (b *Base) Detach(t *Timer) bool {
	if t.pprev == nil {
		return false
	}
	idx := t.Index()
	if t.next == nil && t.pprev == &b.vectors[idx] {
		b.pending[idx>>LvlBits] &^= 1 << (uint(idx) & LvlMask)
		b.recalc = true
	}
	unlink(t)
	return true
}

func unlink(t *Timer) {
	*t.pprev = t.next
	if t.next != nil {
		t.next.pprev = t.pprev
	}
	t.next, t.pprev = nil, nil
}

// Forward moves the base clock towards basej without passing a pending
// bucket (__forward_timer_base): to basej if next_expiry is later, else to
// next_expiry. It never moves the clock back. The kernel forwards before
// every enqueue so that timers added to a base that was idle get the fine
// granularity they would have had on a busy CPU.
func (b *Base) Forward(basej uint64) {
	if !After(basej, b.clk) {
		return
	}
	if After(b.nextExpiry, basej) {
		b.clk = basej
	} else if !Before(b.nextExpiry, b.clk) {
		b.clk = b.nextExpiry
	}
}

// Recalc recomputes next_expiry from the pending buckets if a deletion made
// it stale (the lazy half of timer_recalc_next_expiry).
func (b *Base) Recalc() {
	if b.recalc {
		b.recalcNextExpiry()
	}
}

// recalcNextExpiry is timer_recalc_next_expiry: the earliest bucket expiry
// over all levels. A level's next bucket is found relative to that level's
// clock; the scan stops as soon as no higher level can expire before this
// level's next bucket, and a level clock with non-zero low bits is advanced
// by one when moving up, since the upper level's bucket for the current
// granule has already been passed.
func (b *Base) recalcNextExpiry() {
	next := b.clk + NextTimerMaxDelta
	clk := b.clk
	for lvl := 0; lvl < b.depth; lvl++ {
		lvlClk := clk & LvlClkMask
		if w := b.pending[lvl]; w != 0 {
			pos := uint64(bits.TrailingZeros64(bits.RotateLeft64(w, -int(clk&LvlMask))))
			if t := (clk + pos) << LvlShift(lvl); Before(t, next) {
				next = t
			}
			if pos <= (LvlClkDiv-lvlClk)&LvlClkMask {
				break
			}
		}
		clk >>= LvlClkShift
		if lvlClk != 0 {
			clk++
		}
	}
	b.nextExpiry = next
	b.recalc = false
	b.timersPending = next != b.clk+NextTimerMaxDelta
}

// NextTimerInterrupt returns the tick of the base's first pending bucket for
// the NOHZ code (next_timer_interrupt): it recalculates if needed and, when
// nothing is pending, moves next_expiry to basej + NextTimerMaxDelta so that
// an empty base never looks due and bases stay comparable.
func (b *Base) NextTimerInterrupt(basej uint64) uint64 {
	b.Recalc()
	if !b.timersPending {
		b.nextExpiry = basej + NextTimerMaxDelta
	}
	return b.nextExpiry
}

// Due reports whether the base has work at tick jiffies: the loop condition
// of __run_timers (jiffies at or after both the clock and next_expiry).
func (b *Base) Due(jiffies uint64) bool {
	return AfterEq(jiffies, b.clk) && AfterEq(jiffies, b.nextExpiry)
}

// Collect performs one round of __run_timers if the base is due at jiffies:
// it jumps the clock to next_expiry, moves every bucket that expires at that
// clock value (level 0 first, then each higher level whose granule boundary
// the clock sits on) to the expiry lists, advances the clock one past it, and
// recalculates next_expiry. It reports whether it ran; NextExpired then hands
// out the collected timers. The caller loops
//
//	for b.Collect(jiffies) {
//		for t := b.NextExpired(); t != nil; t = b.NextExpired() {
//			// mark t running, drop the lock, run what t.Data stands for, retake the lock
//		}
//	}
//
// A round may collect nothing when next_expiry was stale.
func (b *Base) Collect(jiffies uint64) bool {
	if b.nExpiring != 0 {
		panic("wheel: Collect before the previous round was handed out")
	}
	if !b.Due(jiffies) {
		return false
	}
	b.clk = b.nextExpiry
	clk := b.clk
	for lvl := 0; lvl < b.depth; lvl++ {
		idx := int(clk&LvlMask) + lvl*LvlSize
		if bit := uint64(1) << (uint(idx) & LvlMask); b.pending[lvl]&bit != 0 {
			b.pending[lvl] &^= bit
			// Move the whole bucket list (hlist_move_list); a bit that
			// MigrateTo left behind has an empty one.
			if b.vectors[idx] != nil {
				h := &b.expiring[b.nExpiring]
				*h = b.vectors[idx]
				(*h).pprev = h
				b.vectors[idx] = nil
				b.nExpiring++
			}
		}
		if clk&LvlClkMask != 0 {
			break
		}
		clk >>= LvlClkShift
	}
	b.clk++
	b.recalcNextExpiry()
	return true
}

// NextExpired unlinks and returns the next collected timer to run, or nil
// when the round is done: the highest collected level first, and within a
// bucket the most recently added timer first. The returned timer is no
// longer pending.
func (b *Base) NextExpired() *Timer {
	for b.nExpiring > 0 {
		if t := b.expiring[b.nExpiring-1]; t != nil {
			unlink(t)
			return t
		}
		b.nExpiring--
	}
	return nil
}

// MigrateTo moves every timer of b to dst (dst != b), as timers_dead_cpu does when a
// CPU goes offline: bucket by bucket from index 0, each timer taken from the
// head of its bucket, rewritten to belong to cpu and re-added against dst's
// clock (the caller forwards dst first). Pinned timers move too. It returns
// the number of timers moved and whether any became dst's first event.
//
// Like migrate_timer_list, which takes each timer off with detach_timer
// rather than detach_if_pending (kernel/time/timer.c, 6.1 to 7.3), it
// leaves b's pending bitmap as it was: every bucket that held a timer
// stays marked, empty. Prepare keeps the marks too, so a CPU that comes
// back online finds them at its base's next recalculation, as next
// expiries of buckets with no timer, until each is collected.
func (b *Base) MigrateTo(dst *Base, cpu int) (n int, first bool) {
	for idx := range b.vectors[:b.depth*LvlSize] {
		for t := b.vectors[idx]; t != nil; t = b.vectors[idx] {
			unlink(t)
			t.flags.Store(t.flags.Load()&^FlagBaseMask | uint32(cpu)&FlagCPUMask)
			if _, _, f := dst.Add(t, t.expires); f {
				first = true
			}
			n++
		}
	}
	return n, first
}

// Len returns the number of pending timers. It walks every bucket: for
// tests and diagnostics, not hot paths.
func (b *Base) Len() int {
	n := 0
	for _, h := range b.vectors {
		for t := h; t != nil; t = t.next {
			n++
		}
	}
	for _, h := range b.expiring[:b.nExpiring] {
		for t := h; t != nil; t = t.next {
			n++
		}
	}
	return n
}

// Each calls f for every timer in bucket idx, head first (the order in which
// they would expire). For tests and diagnostics.
func (b *Base) Each(idx int, f func(*Timer)) {
	for t := b.vectors[idx]; t != nil; t = t.next {
		f(t)
	}
}

// PendingBit reports whether bucket idx is marked non-empty.
func (b *Base) PendingBit(idx int) bool {
	return b.pending[idx>>LvlBits]&(1<<(uint(idx)&LvlMask)) != 0
}
