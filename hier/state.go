package hier

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// KtimeMax is the kernel's KTIME_MAX: "no event". Deactivate and NewTimer
// return it when an active CPU takes care of the hierarchy; a CPU whose
// wakeup holds it has nothing to do for the hierarchy.
const KtimeMax int64 = math.MaxInt64

// ChildrenPerGroup is TMIGR_CHILDREN_PER_GROUP: the fan-out of every group,
// "established by experimentation". It must be a power of two no larger
// than 8, because the group state holds the children in 8-bit masks.
const ChildrenPerGroup = 8

// MigratorNone is TMIGR_NONE, the migrator value of a group without an
// active child.
const MigratorNone uint8 = 0xFF

// childBits is log2(ChildrenPerGroup), the levels-per-doubling divisor of
// the sizing formula.
const childBits = 3

// migrState is the group state word, union tmigr_state: the mask of active
// children in bits 0-7, the migrator's one-hot child mask (or MigratorNone)
// in bits 8-15 and a sequence counter in bits 16-31. It is only ever changed
// by a compare-and-swap of the whole word, and every change increments seq,
// so a CAS prepared from a stale read fails even if active and migrator
// happen to be back at the values it read (race R1 in the package doc).
type migrState uint32

// initState is the state of a new group: no active child, no migrator.
const initState = migrState(uint32(MigratorNone) << 8)

func (s migrState) active() uint8   { return uint8(s) }
func (s migrState) migrator() uint8 { return uint8(s >> 8) }
func (s migrState) seq() uint16     { return uint16(s >> 16) }

func makeState(active, migrator uint8, seq uint16) migrState {
	return migrState(uint32(active) | uint32(migrator)<<8 | uint32(seq)<<16)
}

// lowestBit returns the one-hot mask of the lowest set bit of m, or
// MigratorNone when m is 0: the kernel's find_first_bit over BIT_CNT bits,
// which picks the earliest-joined active child as the new migrator.
func lowestBit(m uint8) uint8 {
	if m == 0 {
		return MigratorNone
	}
	return 1 << bits.TrailingZeros8(m)
}

// event is struct tmigr_event. A CPU owns one (its cpuevt, queued in its
// level-0 group) and every group owns one (its groupevt, queued in its
// parent). The queue is intrusive: queueing never allocates.
//
// expires, cpu and queued are protected by the lock of the group whose queue
// the event is in (and, for a CPU event, also by the CPU's lock, which every
// writer holds). ignore is written without the group lock on the activation
// path, hence atomic.
type event struct {
	expires int64
	cpu     int // the CPU whose global timer this event stands for
	ignore  atomic.Bool
	queued  bool

	// Owner, for views: the CPU (cpuevt) or the group (groupevt).
	ownerCPU   int
	ownerGroup *group
}

// eventQueue is the timerqueue of one group: its children's events sorted
// by expiry, equal expiries in insertion order (FIFO), as the kernel's
// rb-tree timerqueue keeps them. A group has at most ChildrenPerGroup
// children and each child has exactly one event, so a fixed array replaces
// the tree: insertion and removal move at most 7 pointers.
type eventQueue struct {
	n int
	e [ChildrenPerGroup]*event
}

// add inserts ev after every queued event with an expiry <= ev.expires and
// reports whether ev became the first element (timerqueue_add).
func (q *eventQueue) add(ev *event) bool {
	if q.n == len(q.e) {
		panic("hier: more events queued than a group has children")
	}
	i := q.n
	for i > 0 && q.e[i-1].expires > ev.expires {
		q.e[i] = q.e[i-1]
		i--
	}
	q.e[i] = ev
	q.n++
	ev.queued = true
	return i == 0
}

// del removes ev and reports whether the queue is non-empty afterwards
// (timerqueue_del).
func (q *eventQueue) del(ev *event) bool {
	for i := 0; i < q.n; i++ {
		if q.e[i] == ev {
			copy(q.e[i:q.n-1], q.e[i+1:q.n])
			q.n--
			q.e[q.n] = nil
			break
		}
	}
	ev.queued = false
	return q.n > 0
}

// first returns the earliest event or nil (timerqueue_getnext).
func (q *eventQueue) first() *event {
	if q.n == 0 {
		return nil
	}
	return q.e[0]
}

// group is struct tmigr_group.
type group struct {
	mu    sync.Mutex    // protects events, evt of the children queued here, and this group's own evt writes
	state atomic.Uint32 // migrState

	// nextExpiry caches the expiry of the first non-ignored event in
	// events (KtimeMax if none). Written under mu, read without it by the
	// "is remote work due?" checks; it may be early (stale), never late.
	nextExpiry atomic.Int64

	// parent is nil for the top group. It is set once, before anybody can
	// walk through it, with release semantics; walkers load it once per step.
	parent atomic.Pointer[group]

	events eventQueue
	evt    event // groupevt, queued in parent.events while this group is idle

	// Setup data, written under Hierarchy.setupMu. groupmask is written
	// before parent is published and read by walkers only after they loaded
	// a non-nil parent.
	level, index, node int
	numChildren        int
	groupmask          uint8
}

func (g *group) id() GroupID { return GroupID{Level: g.level, Index: g.index} }

func (g *group) loadState() migrState { return migrState(g.state.Load()) }

// parentID returns the ID of g's parent, or NoGroup.
func (g *group) parentID() GroupID {
	if p := g.parent.Load(); p != nil {
		return p.id()
	}
	return NoGroup
}

// nextGroupEvt is tmigr_next_groupevt (g locked): it drops ignored events
// from the head of the queue ("lazy removal"), refreshes nextExpiry and
// returns the first non-ignored event, or nil.
func (g *group) nextGroupEvt() *event {
	g.nextExpiry.Store(KtimeMax)
	for g.events.n > 0 {
		e := g.events.e[0]
		if !e.ignore.Load() {
			g.nextExpiry.Store(e.expires)
			return e
		}
		if !g.events.del(e) {
			break
		}
	}
	return nil
}

// nextGroupEvtExpires is tmigr_next_groupevt_expires.
func (g *group) nextGroupEvtExpires() int64 {
	if e := g.nextGroupEvt(); e != nil {
		return e.expires
	}
	return KtimeMax
}

// nextExpiredGroupEvt is tmigr_next_expired_groupevt: the first event if it
// is due at now, removed from the queue (nextExpiry refreshed), else nil.
func (g *group) nextExpiredGroupEvt(now int64) *event {
	e := g.nextGroupEvt()
	if e == nil || now < e.expires {
		return nil
	}
	g.events.del(e)
	g.nextGroupEvt()
	return e
}

// checkMigrator is tmigr_check_migrator: childmask is the migrator of g, or
// g has none.
func checkMigrator(g *group, childmask uint8) bool {
	m := g.loadState().migrator()
	return m == childmask || m == MigratorNone
}

// checkLonely is tmigr_check_lonely: at most one active child.
func checkLonely(g *group) bool {
	return bits.OnesCount8(g.loadState().active()) <= 1
}

// tmcpu is struct tmigr_cpu, one per possible CPU.
type tmcpu struct {
	mu sync.Mutex // after the CPU's timer-base locks, before any group lock

	// available: the CPU takes part in the hierarchy (online and, with
	// isolation exclusion, not isolated). Written under mu by the CPU's
	// availability callbacks; read lock-free by its own entry points.
	available atomic.Bool
	// idle: the CPU is idle in the hierarchy. Written under mu; read
	// lock-free by the CPU itself.
	idle atomic.Bool
	// remote: another CPU (or this one, from its own softirq) is expiring
	// this CPU's global timers right now. Written and tested under mu;
	// atomic only so views can read it without the lock.
	remote atomic.Bool
	// groupmask: the one-hot bit in tmgroup, written before tmgroup is
	// published. (Beside the flags, so that what a busy CPU's tick reads,
	// mu's word to tmgroup, lies in 24 bytes and so within one cache line
	// at any of the CPUs' offsets: TestTmcpuLayout.)
	groupmask uint8

	tmgroup atomic.Pointer[group] // level-0 group; nil until prepared

	// wakeup: when this idle CPU must wake for hierarchy work (KtimeMax:
	// never). Written under mu, read lock-free on idle paths.
	wakeup atomic.Int64

	evt event // cpuevt
	cpu int

	// Keep neighbouring CPUs' hot fields off one cache line, and the size
	// a multiple of 32 bytes (TestTmcpuLayout).
	_ [72]byte
}

func (t *tmcpu) parentID() GroupID {
	if g := t.tmgroup.Load(); g != nil {
		return g.id()
	}
	return NoGroup
}

// walk is struct tmigr_walk, the state carried up the hierarchy by one walk.
// It lives on the walker's stack.
type walk struct {
	nextexp   int64  // the CPU's next global expiry handed in by the timer code
	firstexp  int64  // result: first event of an idle top / of the highest group handled
	evt       *event // the CPU event to queue at level 0
	childmask uint8  // groupmask of the child being propagated
	remote    bool   // the walk follows a remote expiry
	check     bool   // result of the requires-handle-remote walk
	sawIdle   bool   // the last event update found its group idle (for a test hook)
	basej     uint64 // jiffies of the last jiffies update
	now       int64  // monotonic time of the last jiffies update

	cpu int // CPU running the walk (for test hooks); -1 for setup
}
