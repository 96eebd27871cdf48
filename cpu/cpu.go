// Package cpu is the per-CPU timer code of the kernel (kernel/time/timer.c):
// each CPU's three timer-wheel bases, the choice of base for a timer, the
// timer API (mod_timer and friends), the tick and softirq that run expired
// timers, the NOHZ computation of a CPU's next event, and the glue to the
// migration hierarchy (package hier) that lets an idle CPU's global timers be
// expired by a busy one.
//
// # Bases
//
// Since Linux 6.9 every CPU has three wheels:
//
//	LOCAL   pinned timers: always expire on this CPU
//	GLOBAL  ordinary timers: expire here while the CPU is busy; while it is
//	        idle a busy CPU (the migrator) may expire them remotely
//	DEF     deferrable timers: never wake an idle CPU
//
// A timer's base follows from its flags (get_timer_cpu_base): DEF if
// deferrable, whatever the pinned bit says, else LOCAL if pinned, else
// GLOBAL. A timer is always queued on the CPU that arms it; a specific CPU
// needs AddOn, which pins the timer.
//
// # Time
//
// The wheels count ticks ("jiffies"); the hierarchy counts nanoseconds.
// Every value handed to the hierarchy is derived from a tick J with one
// Snapshot {J: basej, M: basem} of the last tick update:
//
//	ns = basem + (J - basej) * TickNsec
//
// and a value handed back is turned into a tick by rounding down. The
// package never reads a clock: every entry point takes the tick or the
// snapshot from its driver.
//
// # Expiry
//
// Expired timers leave the package as a Pass, the timer softirq of one CPU,
// which the driver steps through: Next hands out one expired timer at a
// time, its base lock dropped and the timer marked running, and the driver
// runs whatever the timer stands for (its Data word) before asking for the
// next. No function of the driver is called from inside the package.
//
// # Policies
//
// The kernel generation being modelled is an option (Policy): no migration
// at all (6.1-6.8 with timer_migration=0), the 2009 push at enqueue, the
// 2024 pull hierarchy, and the pull hierarchy with isolated CPUs excluded
// (2025, the default). kernel.timer_migration is a switch of its own
// (SetTimerMigration), whose meaning changed with 6.9; package kernel maps
// a release onto both.
//
// # Concurrency
//
// Each base has its own lock, and several bases of one CPU are always locked
// in index order, as in the kernel. Lock order across packages: timer bases,
// then the hierarchy's per-CPU lock, then its group locks. A timer's function
// runs with no lock held; the base remembers the running timer so that a
// concurrent delete can tell (TryToDelSync returns -1) and a re-arm from
// elsewhere leaves it on its base.
package cpu

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// Base indices, in lock order.
const (
	BaseLocal  = 0
	BaseGlobal = 1
	BaseDef    = 2
	NumBases   = 3
)

// KtimeMax is the hierarchy's "no event".
const KtimeMax = hier.KtimeMax

// Timer flags a caller passes to Setup.
const (
	Deferrable = wheel.FlagDeferrable
	Pinned     = wheel.FlagPinned
	IRQSafe    = wheel.FlagIRQSafe
)

// Policy selects the kernel generation whose timer placement is modelled.
type Policy int

const (
	// PullIsolated is the hierarchy with isolated CPUs excluded (Linux 6.19).
	PullIsolated Policy = iota
	// Pull is the hierarchy of Linux 6.9–6.18: isolated CPUs take part.
	Pull
	// Push is the 2009 rule (up to 6.8): a non-pinned timer armed on an
	// idle CPU is queued on a busy CPU chosen by get_nohz_timer_target, and
	// every CPU expires only its own timers.
	Push
	// None is Linux 6.1-6.8 with kernel.timer_migration=0 (Push with the
	// sysctl off): every timer and hrtimer expires on the CPU it was queued
	// on, and an idle CPU wakes for its own global timers. (From 6.9,
	// timer_migration=0 leaves the pull hierarchy as it is and only keeps
	// hrtimers local: Set.SetTimerMigration.)
	None
)

var policyNames = [...]string{PullIsolated: "pull-isolated", Pull: "pull", Push: "push", None: "none"}

func (p Policy) String() string {
	if p >= 0 && int(p) < len(policyNames) {
		return policyNames[p]
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy returns the policy of the given name: none, push, pull or
// pull-isolated.
func ParsePolicy(s string) (Policy, error) {
	for p, n := range policyNames {
		if n == s {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q (want none, push, pull or pull-isolated)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Policy) UnmarshalText(b []byte) error {
	q, err := ParsePolicy(string(b))
	*p = q
	return err
}

// Hierarchical reports whether the policy uses the migration hierarchy.
func (p Policy) Hierarchical() bool { return p == Pull || p == PullIsolated }

// TickNsec returns the length of a tick at hz, rounded as the kernel's
// TICK_NSEC: (10^9 + hz/2) / hz.
func TickNsec(hz int) int64 { return (1e9 + int64(hz)/2) / int64(hz) }

// InitialJiffies returns the tick count a 64-bit kernel starts from:
// -300·HZ truncated to 32 bits, so that 32-bit jiffies wrap five minutes
// after boot.
func InitialJiffies(hz int) uint64 { return uint64(uint32(-300 * int32(hz))) }

// Config describes the machine whose timer code a Set runs.
type Config struct {
	// NodeOf is the NUMA node of each possible CPU; its length is the
	// number of possible CPUs.
	NodeOf []int
	// HZ is the tick rate.
	HZ int
	// Policy selects the placement and expiry model.
	Policy Policy
	// Isolation is the housekeeping setup (isolcpus, nohz_full, isolated
	// cpuset partitions, the timekeeping CPU).
	Isolation hier.Isolation
	// Tracer receives the hierarchy's trace events; nil for none.
	Tracer hier.Tracer
	// TimerMigrationOff is kernel.timer_migration=0 at boot (see
	// Set.SetTimerMigration).
	TimerMigrationOff bool
	// ImbalancedNUMA builds the hierarchy as kernels before 5eb579dfd46b
	// did (hier.Options.ImbalancedNUMA).
	ImbalancedNUMA bool
}

// Snapshot is one reading of the last jiffies update, as the kernel's
// get_jiffies_update returns it: J the jiffies (basej), M the monotonic
// time in ns at which that jiffy began (basem). Everything a CPU hands the
// hierarchy during one operation is converted with one snapshot.
type Snapshot struct {
	J uint64
	M int64
}

// Set is the timer code of one machine: the bases of every possible CPU
// and, under a hierarchical policy, the migration hierarchy they share.
type Set struct {
	cpus     []CPU
	h        *hier.Hierarchy // nil unless the policy is hierarchical
	policy   Policy
	depth    int
	tickNsec int64
	nodeOf   []int
	// next is every base's next expiry, NumBases per CPU (base.next).
	next []atomic.Uint64
	// passes holds each CPU's timer softirq, reused from one run to the
	// next; side by side, not in CPU, whose bases make it some 14 KiB.
	passes []Pass

	// hk holds the housekeeping masks the push policy looks for targets in;
	// SetIsolation replaces it while timers are armed.
	hk atomic.Pointer[housekeeping]
	// migrationOff is kernel.timer_migration=0: the static key
	// timers_migration_enabled off.
	migrationOff atomic.Bool
}

// housekeeping is the part of the isolation setup the timer code reads:
// timer is the HK_TYPE_KERNEL_NOISE mask (CPUs not in nohz_full), domain the
// HK_TYPE_DOMAIN one (CPUs neither in isolcpus nor in an isolated cpuset
// partition, whose scheduler domains the push policy walks).
type housekeeping struct {
	timer, domain cpumask.Mask
}

func newHousekeeping(n int, iso *hier.Isolation) *housekeeping {
	all := cpumask.Range(0, n-1)
	return &housekeeping{
		timer:  all.AndNot(iso.NohzFull),
		domain: all.AndNot(iso.Domain).AndNot(iso.CpusetIsolated),
	}
}

// CPU is one CPU's timer state.
type CPU struct {
	id    int
	bases [NumBases]base

	// busy is the negation of the scheduler's idle_cpu(): the CPU runs a
	// task. Only the push policy reads it.
	busy atomic.Bool
	// online: the CPU's bases were prepared and not torn down. The push
	// policy reads it from other CPUs without a lock.
	online atomic.Bool
}

// base is one of a CPU's timer bases (struct timer_base). The lock and the
// bookkeeping come before the wheel, whose own hot fields
// come first (wheel.Base): a softirq's pass locks the base, reads running
// and the wheel's clock and pending bitmap, and publishes next, all within
// the base's first few cache lines.
type base struct {
	mu      sync.Mutex
	running *wheel.Timer
	// next mirrors w.NextExpiry for the tick's lockless check
	// (run_local_timers reads next_expiry with READ_ONCE). It points into
	// Set.next, where the three bases of a CPU sit side by side and the
	// CPUs follow each other: the tick of every CPU reads one cache line
	// per few CPUs instead of one line per base, each several KiB apart
	// (a simulator ticks thousands of CPUs in a row).
	next *atomic.Uint64
	cpu  int
	idx  int
	w    wheel.Base
}

func (b *base) publish() { b.next.Store(b.w.NextExpiry()) }

// New returns the timer code of a machine with every CPU offline; bring
// CPUs up with Online.
func New(c Config) (*Set, error) {
	n := len(c.NodeOf)
	if n < 1 || n > cpumask.MaxCPUs {
		return nil, fmt.Errorf("cpu: %d CPUs: want 1 to %d", n, cpumask.MaxCPUs)
	}
	if c.HZ < 1 || c.HZ > 10000 {
		return nil, fmt.Errorf("cpu: HZ %d outside 1..10000", c.HZ)
	}
	if int(c.Policy) < 0 || int(c.Policy) >= len(policyNames) {
		return nil, fmt.Errorf("cpu: unknown policy %d", int(c.Policy))
	}
	s := &Set{
		cpus:     make([]CPU, n),
		policy:   c.Policy,
		depth:    wheel.DepthForHZ(c.HZ),
		tickNsec: TickNsec(c.HZ),
		nodeOf:   append([]int(nil), c.NodeOf...),
		next:     make([]atomic.Uint64, n*NumBases),
		passes:   make([]Pass, n),
	}
	s.hk.Store(newHousekeeping(n, &c.Isolation))
	s.migrationOff.Store(c.TimerMigrationOff)
	for i := range s.cpus {
		cp := &s.cpus[i]
		cp.id = i
		s.passes[i] = Pass{s: s, cpu: i}
		for j := range cp.bases {
			cp.bases[j].cpu, cp.bases[j].idx = i, j
			cp.bases[j].next = &s.next[i*NumBases+j]
		}
	}
	if c.Policy.Hierarchical() {
		h, err := hier.New(hier.Options{
			NodeOf:          c.NodeOf,
			ExcludeIsolated: c.Policy == PullIsolated,
			ImbalancedNUMA:  c.ImbalancedNUMA,
			Isolation:       c.Isolation,
			Tracer:          c.Tracer,
		})
		if err != nil {
			return nil, err
		}
		s.h = h
	}
	return s, nil
}

// Hierarchy returns the migration hierarchy, or nil under a policy without
// one.
func (s *Set) Hierarchy() *hier.Hierarchy { return s.h }

// Policy returns the policy the set models.
func (s *Set) Policy() Policy { return s.policy }

// NumCPUs returns the number of possible CPUs.
func (s *Set) NumCPUs() int { return len(s.cpus) }

// TickNsec returns the tick length in nanoseconds.
func (s *Set) TickNsec() int64 { return s.tickNsec }

// Online brings cpu up at tick jiffies: its bases' clocks are set to
// jiffies (timers_prepare_cpu; their timers moved away when it went down,
// their pending bitmaps stay as Offline left them), it joins the hierarchy on its
// first online (tmigr_cpu_prepare) and becomes available to it, active since
// a CPU coming up is running the hotplug thread.
func (s *Set) Online(cpu int, jiffies uint64) error {
	cp := s.cpu(cpu)
	if cp.online.Load() {
		return fmt.Errorf("cpu: CPU %d is already online", cpu)
	}
	for i := range cp.bases {
		b := &cp.bases[i]
		b.mu.Lock()
		if b.w.Depth() == 0 {
			b.w.Init(s.depth, jiffies) // first time up
		} else {
			b.w.Prepare(jiffies) // back up: see wheel.Base.Prepare
		}
		b.running = nil
		b.publish()
		b.mu.Unlock()
	}
	cp.online.Store(true)
	cp.busy.Store(true)
	if s.h != nil {
		if err := s.h.Prepare(cpu); err != nil {
			return err
		}
		if err := s.h.SetAvailable(cpu, false); err != nil {
			return err
		}
	}
	return nil
}

// Offline takes cpu down: it leaves the hierarchy (tmigr_cpu_unavailable),
// then every timer of its three bases moves to the same base of CPU to,
// re-bucketed against that base's clock forwarded to jiffies
// (timers_dead_cpu). It returns the CPU the hierarchy needs forced active
// (-1 if none) and whether CPU to must re-evaluate its next event because it
// received a new first timer while idle.
func (s *Set) Offline(cpu, to int, jiffies uint64) (trigger int, kick bool, err error) {
	cp, dst := s.cpu(cpu), s.cpu(to)
	if !cp.online.Load() {
		return -1, false, fmt.Errorf("cpu: CPU %d is not online", cpu)
	}
	if cpu == to || !dst.online.Load() {
		return -1, false, fmt.Errorf("cpu: cannot move CPU %d's timers to CPU %d", cpu, to)
	}
	trigger = -1
	if s.h != nil {
		if trigger, err = s.h.ClearAvailable(cpu); err != nil {
			return -1, false, err
		}
	}
	cp.online.Store(false)
	cp.busy.Store(false)
	for i := range cp.bases {
		nb, ob := &dst.bases[i], &cp.bases[i]
		nb.mu.Lock()
		ob.mu.Lock()
		nb.w.Forward(jiffies)
		_, first := ob.w.MigrateTo(&nb.w, to)
		ob.running = nil
		if first && i != BaseDef && nb.w.IsIdle {
			kick = true
		}
		ob.publish()
		nb.publish()
		ob.mu.Unlock()
		nb.mu.Unlock()
	}
	return trigger, kick, nil
}

// IsOnline reports whether cpu is online.
func (s *Set) IsOnline(cpu int) bool { return s.cpu(cpu).online.Load() }

// SetBusy records whether cpu runs a task (the scheduler's !idle_cpu()).
// The push policy queues timers armed on idle CPUs on busy ones.
func (s *Set) SetBusy(cpu int, busy bool) { s.cpu(cpu).busy.Store(busy) }

func (s *Set) cpu(cpu int) *CPU {
	if uint(cpu) >= uint(len(s.cpus)) {
		s.badCPU(cpu)
	}
	return &s.cpus[cpu]
}

// badCPU panics for a CPU out of range (apart from cpu, so that cpu is
// inlined: the tick of every CPU calls it).
//
//go:noinline
func (s *Set) badCPU(cpu int) {
	panic(fmt.Sprintf("cpu: CPU %d out of range 0..%d", cpu, len(s.cpus)-1))
}

// baseIndex is get_timer_cpu_base's choice: DEF for deferrable timers
// whatever their pinned bit, else LOCAL for pinned, else GLOBAL.
func baseIndex(flags uint32) int {
	switch {
	case flags&wheel.FlagDeferrable != 0:
		return BaseDef
	case flags&wheel.FlagPinned != 0:
		return BaseLocal
	}
	return BaseGlobal
}

// BaseOf returns the base index a timer with these flags belongs to.
func BaseOf(flags uint32) int { return baseIndex(flags) }

// Setup prepares a timer (timer_setup) with its flags, a combination of
// Deferrable, Pinned and IRQSafe; a shut-down timer can be armed again.
// What the timer stands for goes in its Data word, which the driver reads
// when the timer expires. The timer must not be pending.
func Setup(t *wheel.Timer, flags uint32) {
	if t.Pending() {
		panic("cpu: Setup of a pending timer")
	}
	t.SetShutdown(false)
	t.SetFlags(flags & wheel.FlagInitMask)
}

// lockTimerBase finds and locks the base a timer belongs to
// (lock_timer_base): the flags name it, and a timer being moved between
// CPUs is marked migrating until it has arrived.
func (s *Set) lockTimerBase(t *wheel.Timer) *base {
	for {
		f := t.Flags()
		if f&wheel.FlagMigrating == 0 {
			b := &s.cpus[int(f&wheel.FlagCPUMask)].bases[baseIndex(f)]
			b.mu.Lock()
			if t.Flags() == f {
				return b
			}
			b.mu.Unlock()
		}
		runtime.Gosched()
	}
}

// kick decides whether enqueueing a new first timer on base b must wake
// its CPU (trigger_dyntick_cpu): only a non-deferrable timer on a base whose
// CPU has stopped its tick.
func kick(b *base, t *wheel.Timer, first bool) int {
	if first && b.w.IsIdle && t.Flags()&wheel.FlagDeferrable == 0 {
		return b.cpu
	}
	return -1
}

// ModOpt modifies Mod as the kernel's mod_timer variants do.
type ModOpt uint8

const (
	// ModPendingOnly is mod_timer_pending: an inactive timer stays
	// inactive.
	ModPendingOnly ModOpt = 1 << iota
	// ModReduce is timer_reduce: a pending timer only ever moves earlier.
	ModReduce
	// ModNotPending skips the same-expiry shortcut (add_timer).
	ModNotPending
)

// Mod arms t to expire at tick expires from CPU this at tick jiffies
// (__mod_timer). It returns 1 if the timer was pending, else 0, and the CPU
// that must be woken to re-evaluate its sleep, or -1.
//
// The timer is queued on CPU this, except that a timer whose function is
// running stays on its base (a timer is serialised against itself), and
// that under the push policy a non-pinned timer armed on an idle CPU goes to
// a busy one. A pending timer whose new expiry falls into the bucket it
// already sits in only has its expiry updated. A shut-down timer is
// ignored.
func (s *Set) Mod(this int, t *wheel.Timer, expires, jiffies uint64, opts ModOpt) (ret, kickCPU int) {
	kickCPU = -1
	b := s.lockTimerBase(t)
	if t.Shutdown() {
		b.mu.Unlock()
		return 0, -1
	}
	b.w.Forward(jiffies)
	idx, clk := -1, uint64(0)
	var bucketExpiry uint64
	if opts&ModNotPending == 0 && t.Pending() {
		diff := int64(t.Expires() - expires)
		if diff == 0 || (opts&ModReduce != 0 && diff <= 0) {
			b.mu.Unlock()
			return 1, -1
		}
		clk = b.w.Clk()
		idx, bucketExpiry = wheel.Index(expires, clk, s.depth)
		if idx == t.Index() {
			if opts&ModReduce == 0 || wheel.After(t.Expires(), expires) {
				t.SetExpires(expires)
			}
			b.publish()
			b.mu.Unlock()
			return 1, -1
		}
	}
	if b.w.Detach(t) {
		ret = 1
	} else if opts&ModPendingOnly != 0 {
		b.publish()
		b.mu.Unlock()
		return 0, -1
	}
	target := s.targetCPU(this, t.Flags())
	nb := &s.cpus[target].bases[baseIndex(t.Flags())]
	if nb != b && b.running != t {
		// Move the timer: mark it migrating so lockTimerBase waits, switch
		// locks, then name the new CPU in its flags.
		t.SetFlags(t.Flags() | wheel.FlagMigrating)
		b.publish()
		b.mu.Unlock()
		b = nb
		b.mu.Lock()
		t.SetFlags(t.Flags()&^wheel.FlagBaseMask | uint32(target))
		b.w.Forward(jiffies)
	}
	var first bool
	if idx >= 0 && clk == b.w.Clk() {
		t.SetExpires(expires)
		first = b.w.Enqueue(t, idx, bucketExpiry)
	} else {
		_, _, first = b.w.Add(t, expires)
	}
	kickCPU = kick(b, t, first)
	b.publish()
	b.mu.Unlock()
	return ret, kickCPU
}

// targetCPU is the CPU a timer armed on CPU this is queued on: this CPU
// since the pull model, or under the push policy with timer_migration on
// the get_nohz_timer_target choice for a non-pinned timer.
func (s *Set) targetCPU(this int, flags uint32) int {
	if s.policy != Push || flags&wheel.FlagPinned != 0 || s.migrationOff.Load() {
		return this
	}
	return s.NohzTimerTarget(this)
}

// SetTimerMigration writes kernel.timer_migration (timers_update_migration:
// the static key timers_migration_enabled follows it, NOHZ being active).
// What it changes depends on the kernel (docs/kernels.md K4): up to 6.8
// (Push) it switches the push at enqueue of wheel timers and hrtimers on
// or off, Push with the sysctl off being what None models; from 6.9
// (b2cf7507e186) the wheel never reads it, and it only decides whether a
// non-pinned hrtimer may go to another CPU (HrtimerTarget): the pull
// hierarchy migrates wheel timers whatever its value.
func (s *Set) SetTimerMigration(on bool) { s.migrationOff.Store(!on) }

// TimerMigration reports kernel.timer_migration.
func (s *Set) TimerMigration() bool { return !s.migrationOff.Load() }

// HrtimerTarget is hrtimer.c's get_target_base for a start on CPU this:
// with timer_migration on and the timer not pinned, get_nohz_timer_target's
// CPU, else this CPU, on every kernel generation. The hrtimer code then
// keeps the timer here if it would be the first to expire on the target
// (hrtimer_check_target; hrtimer.CPUBase.StartOn does that). Not modelled:
// 7.1's hrtimer_prefer_local (3288cd486376), which also keeps a timer that
// is the first on this CPU.
func (s *Set) HrtimerTarget(this int, pinned bool) int {
	if pinned || s.migrationOff.Load() || s.policy == None {
		return this
	}
	return s.NohzTimerTarget(this)
}

// NohzTimerTarget is get_nohz_timer_target: the CPU itself if it is a
// housekeeping CPU and busy; else the first busy housekeeping CPU, searching
// the scheduler domains from the smallest: the CPU's NUMA node, then the
// machine (CPUs isolated from the scheduler domains have none); else the
// CPU itself if it is housekeeping, else the first online housekeeping CPU.
// The model has no SMT or cache-sharing domains.
func (s *Set) NohzTimerTarget(this int) int {
	hk := s.hk.Load()
	def := -1
	if hk.timer.Test(this) {
		if s.cpus[this].busy.Load() {
			return this
		}
		def = this
	}
	if hk.domain.Test(this) {
		node := s.nodeOf[this]
		for pass := 0; pass < 2; pass++ {
			for c := hk.domain.First(); c >= 0; c = hk.domain.Next(c) {
				if c == this || !hk.timer.Test(c) || (pass == 0 && s.nodeOf[c] != node) {
					continue
				}
				if cp := &s.cpus[c]; cp.online.Load() && cp.busy.Load() {
					return c
				}
			}
		}
	}
	if def < 0 {
		for c := hk.timer.First(); c >= 0; c = hk.timer.Next(c) {
			if s.cpus[c].online.Load() {
				return c
			}
		}
		def = this
	}
	return def
}

// AddOn arms t on CPU cpu at tick expires (add_timer_on): the timer is
// pinned to that CPU. It returns the CPU to wake, or -1. A pending timer is
// left alone (the kernel warns).
func (s *Set) AddOn(t *wheel.Timer, cpu int, expires, jiffies uint64) (kickCPU int) {
	t.SetFlags(t.Flags() | wheel.FlagPinned)
	b := s.lockTimerBase(t)
	if t.Pending() || t.Shutdown() {
		b.mu.Unlock()
		return -1
	}
	nb := &s.cpus[cpu].bases[baseIndex(t.Flags())]
	if nb != b {
		// Unlike mod_timer, add_timer_on has no running-timer check: a
		// timer re-armed on another CPU from its own function moves at
		// once (clocksource_watchdog hops so from CPU to CPU; the
		// recordings show it, e.g. testdata/traces
		// vm12-1node-nohzfull-busy.txt line 1706).
		t.SetFlags(t.Flags() | wheel.FlagMigrating)
		b.mu.Unlock()
		b = nb
		b.mu.Lock()
		t.SetFlags(t.Flags()&^wheel.FlagBaseMask | uint32(cpu))
	}
	b.w.Forward(jiffies)
	_, _, first := b.w.Add(t, expires)
	kickCPU = kick(b, t, first)
	b.publish()
	b.mu.Unlock()
	return kickCPU
}

// Del cancels t (timer_delete) and reports whether it was pending. It does
// not wait for a running function.
func (s *Set) Del(t *wheel.Timer) bool {
	b := s.lockTimerBase(t)
	ok := b.w.Detach(t)
	b.publish()
	b.mu.Unlock()
	return ok
}

// TryToDelSync cancels t unless its function is running right now
// (try_to_del_timer_sync): -1 while it runs, else 1 if it was pending, 0 if
// not.
func (s *Set) TryToDelSync(t *wheel.Timer) int { return s.tryToDel(t, false) }

// Shutdown cancels t and makes every later arm a no-op until Setup
// (timer_shutdown). It returns -1 if the function is running, else whether
// the timer was pending.
func (s *Set) Shutdown(t *wheel.Timer) int { return s.tryToDel(t, true) }

func (s *Set) tryToDel(t *wheel.Timer, shutdown bool) int {
	b := s.lockTimerBase(t)
	defer b.mu.Unlock()
	if shutdown {
		t.SetShutdown(true)
	}
	if b.running == t {
		return -1
	}
	ok := b.w.Detach(t)
	b.publish()
	if ok {
		return 1
	}
	return 0
}

// Running reports whether t's function is running now.
func (s *Set) Running(t *wheel.Timer) bool {
	b := s.lockTimerBase(t)
	defer b.mu.Unlock()
	return b.running == t
}

// Pending reports whether t is pending.
func (s *Set) Pending(t *wheel.Timer) bool {
	b := s.lockTimerBase(t)
	defer b.mu.Unlock()
	return t.Pending()
}

// Tick is the timer part of the tick on CPU cpu (run_local_timers without
// the hrtimers) at the snapshot of the tick update: it reports whether the
// timer softirq must run, because a base is due or, checked last, because
// the hierarchy has remote timers due for this CPU to expire.
func (s *Set) Tick(cpu int, snap Snapshot) bool {
	s.cpu(cpu) // the range check
	next := s.next[cpu*NumBases : cpu*NumBases+NumBases]
	for i := range next {
		if wheel.AfterEq(snap.J, next[i].Load()) {
			return true
		}
	}
	return s.h != nil && s.h.RequiresHandleRemote(cpu, snap.M)
}

// LockBases implements hier.Fetcher: it locks target's LOCAL and GLOBAL
// bases, in that order.
func (s *Set) LockBases(target int) {
	cp := &s.cpus[target]
	cp.bases[BaseLocal].mu.Lock()
	cp.bases[BaseGlobal].mu.Lock()
}

// UnlockBases implements hier.Fetcher.
func (s *Set) UnlockBases(target int) {
	cp := &s.cpus[target]
	cp.bases[BaseGlobal].mu.Unlock()
	cp.bases[BaseLocal].mu.Unlock()
}

// NextGlobalRemote implements hier.Fetcher: target's next global event as
// fetch_next_timer_interrupt_remote computes it, with the caller's
// snapshot; target's bases must be locked.
func (s *Set) NextGlobalRemote(target int, basej uint64, now int64) int64 {
	cp := &s.cpus[target]
	ev := s.fetchNext(cp, Snapshot{basej, now})
	return ev.Global
}

// Events is the kernel's struct timer_events: a CPU's next local and next
// global wheel event in ns (KtimeMax for none), and the earlier of the two
// in ticks.
type Events struct {
	Local, Global int64
	Next          uint64
}

// NextEvents is fetch_next_timer_interrupt for cpu at snap, without the
// side effects of the NOHZ paths: what the CPU would hand the hierarchy if
// it went idle now. Global is the nextevt argument of tmigr_cpu_deactivate
// and tmigr_cpu_new_timer (the kernel prints it in tmigr_cpu_idle and
// tmigr_cpu_new_timer_idle) when Next is more than a tick away. The replay's
// nextevt check takes that value from the tick's idle path (NextEvent,
// TryToSetIdle) and reads this one only to explain a difference.
func (s *Set) NextEvents(cpu int, snap Snapshot) Events {
	cp := s.cpu(cpu)
	s.LockBases(cpu)
	defer s.UnlockBases(cpu)
	return s.fetchNext(cp, snap)
}

// fetchNext is fetch_next_timer_interrupt: the CPU's next local and next
// global event. Ties go to the local wheel; an event at most one tick away
// (or missed) is reported as local only (and copied to global if the global
// wheel was first, for remote callers, who must not lose it); otherwise
// global is set only if the global wheel is strictly first and non-empty.
// The LOCAL and GLOBAL bases must be locked.
func (s *Set) fetchNext(cp *CPU, snap Snapshot) Events {
	basej, basem := snap.J, snap.M
	lb, gb := &cp.bases[BaseLocal], &cp.bases[BaseGlobal]
	nl := lb.w.NextTimerInterrupt(basej)
	ng := gb.w.NextTimerInterrupt(basej)
	lb.publish()
	gb.publish()
	ev := Events{Local: KtimeMax, Global: KtimeMax}
	localFirst := !wheel.After(nl, ng)
	ev.Next = ng
	if localFirst {
		ev.Next = nl
	}
	if !wheel.After(ev.Next, basej+1) {
		if wheel.Before(ev.Next, basej) {
			ev.Next = basej
		}
		ev.Local = basem + int64(ev.Next-basej)*s.tickNsec
		if !localFirst {
			ev.Global = ev.Local
		}
		return ev
	}
	if !localFirst && gb.w.TimersPending() {
		ev.Global = basem + int64(ng-basej)*s.tickNsec
	}
	if lb.w.TimersPending() {
		ev.Local = basem + int64(nl-basej)*s.tickNsec
	}
	return ev
}

// idlePath says which hierarchy call __get_next_timer_interrupt makes.
type idlePath int

const (
	pathPredict idlePath = iota // get_next_timer_interrupt
	pathStop                    // timer_base_try_to_set_idle
)

// nextInterrupt is __get_next_timer_interrupt: the CPU's next wheel event in
// ns (min of its own local event and, when it is the last CPU to go idle,
// the hierarchy's first event), with the NOHZ side effects of the chosen
// path. It returns the event and whether the base is now idle.
func (s *Set) nextInterrupt(cpu int, snap Snapshot, path idlePath) (int64, bool) {
	cp := s.cpu(cpu)
	if !cp.online.Load() {
		return KtimeMax, true
	}
	basej := snap.J
	lb, gb := &cp.bases[BaseLocal], &cp.bases[BaseGlobal]
	lb.mu.Lock()
	gb.mu.Lock()
	ev := s.fetchNext(cp, snap)
	idlePossible := wheel.After(ev.Next, basej+1)
	wasIdle := lb.w.IsIdle
	if idlePossible {
		s.useTmigr(cpu, snap, &ev, path, wasIdle)
	}
	lb.w.Forward(basej)
	gb.w.Forward(basej)
	idle := wasIdle
	if path == pathStop {
		if !lb.w.IsIdle && wheel.After(ev.Next, basej+1) {
			lb.w.IsIdle = true
			if s.timerHKExcludes(cpu) {
				gb.w.IsIdle = true
			}
		}
		idle = lb.w.IsIdle
		if !idle && idlePossible && s.h != nil {
			// Undo the deactivation: an active base must not sit
			// under an inactive hierarchy.
			s.h.Activate(cpu)
		}
	}
	gb.mu.Unlock()
	lb.mu.Unlock()
	return ev.Local, idle
}

// timerHKExcludes reports whether cpu is nohz_full (not timer
// housekeeping): its GLOBAL base is marked idle with the LOCAL one, so that
// a global timer queued while it runs a task with the tick stopped kicks it.
func (s *Set) timerHKExcludes(cpu int) bool { return !s.hk.Load().timer.Test(cpu) }

// useTmigr is timer_use_tmigr: hand the first global event to the
// hierarchy, or without a hierarchy keep it as this CPU's own event, and
// when the result comes before the local event wake for it instead.
func (s *Set) useTmigr(cpu int, snap Snapshot, ev *Events, path idlePath, baseIdle bool) {
	var next int64
	switch {
	case s.h == nil:
		// No migration: the CPU expires its own global timers, so its
		// next event is the earlier of both wheels.
		next = ev.Global
	case baseIdle:
		next = s.h.NewTimer(cpu, ev.Global)
	case path == pathStop:
		next = s.h.Deactivate(cpu, ev.Global)
	default:
		next = s.h.QuickCheck(cpu, ev.Global)
	}
	if next < ev.Local {
		if next < snap.M {
			next = snap.M
		}
		ev.Next = snap.J + uint64((next-snap.M)/s.tickNsec)
		ev.Local = next
	}
}

// NextEvent is get_next_timer_interrupt: the CPU's next wheel event in ns,
// for the idle code to predict its sleep. On a CPU whose base is already
// idle it publishes a new first global timer to the hierarchy
// (tmigr_cpu_new_timer).
func (s *Set) NextEvent(cpu int, snap Snapshot) int64 {
	t, _ := s.nextInterrupt(cpu, snap, pathPredict)
	return t
}

// TryToSetIdle is timer_base_try_to_set_idle, called when the CPU stops its
// tick: if the next event is more than a tick away the bases are marked
// idle and the CPU leaves the hierarchy (tmigr_cpu_deactivate). It returns
// the event to arm (KtimeMax if the base was already idle) and whether the
// base is idle.
func (s *Set) TryToSetIdle(cpu int, snap Snapshot) (int64, bool) {
	cp := s.cpu(cpu)
	cp.bases[BaseLocal].mu.Lock()
	already := cp.bases[BaseLocal].w.IsIdle
	cp.bases[BaseLocal].mu.Unlock()
	if already {
		return KtimeMax, true
	}
	return s.nextInterrupt(cpu, snap, pathStop)
}

// ClearIdle is timer_clear_idle, called when the CPU leaves idle or
// restarts its tick: the bases are no longer idle and the CPU becomes
// active in the hierarchy.
func (s *Set) ClearIdle(cpu int) {
	cp := s.cpu(cpu)
	lb, gb := &cp.bases[BaseLocal], &cp.bases[BaseGlobal]
	lb.mu.Lock()
	was := lb.w.IsIdle
	lb.w.IsIdle = false
	lb.mu.Unlock()
	gb.mu.Lock()
	gb.w.IsIdle = false
	gb.mu.Unlock()
	if was && s.h != nil {
		s.h.Activate(cpu)
	}
}

// BaseIdle reports whether cpu's timer base is marked idle.
func (s *Set) BaseIdle(cpu int) bool {
	b := &s.cpu(cpu).bases[BaseLocal]
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.IsIdle
}

// NextDeferrable returns the tick of cpu's first deferrable timer, or false
// if none: deferrable timers never wake an idle CPU, but a driver showing a
// CPU's state wants to know.
func (s *Set) NextDeferrable(cpu int, basej uint64) (uint64, bool) {
	b := &s.cpu(cpu).bases[BaseDef]
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.w.NextTimerInterrupt(basej)
	b.publish()
	return n, b.w.TimersPending()
}

// InitIsolation is the hierarchy's late initcall (tmigr_init_isolation):
// once every boot CPU is online, the CPUs isolated from the scheduler
// domains leave the hierarchy under the pull-isolated policy. It returns the
// CPUs the driver must force active.
func (s *Set) InitIsolation() []int {
	if s.h == nil {
		return nil
	}
	return s.h.InitIsolation(s.BaseIdle)
}

// SetIsolation replaces the isolation setup at run time, as a cpuset
// partition change does: the housekeeping masks the push policy chooses
// targets from, and the hierarchy's isolation predicate. Under the
// pull-isolated policy the caller then runs ExcludeIsolated with the
// complete excluded set.
func (s *Set) SetIsolation(iso hier.Isolation) error {
	if s.h != nil {
		if err := s.h.SetIsolation(iso); err != nil {
			return err
		}
	}
	s.hk.Store(newHousekeeping(len(s.cpus), &iso))
	return nil
}

// ExcludeIsolated changes the set of isolated CPUs at run time
// (tmigr_isolated_exclude_cpumask) under the pull-isolated policy; it
// returns the CPUs the driver must force active. Under other policies it
// does nothing.
func (s *Set) ExcludeIsolated(e cpumask.Mask) []int {
	if s.h == nil || s.policy != PullIsolated {
		return nil
	}
	return s.h.ExcludeIsolated(e, s.BaseIdle)
}

// Len returns the number of pending timers on cpu's base i. It walks the
// wheel: for tests and diagnostics.
func (s *Set) Len(cpu, i int) int {
	b := &s.cpu(cpu).bases[i]
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Len()
}

// ToTick converts a time in ns to the tick at or before it, relative to the
// snapshot; times before snap.M give snap.J.
func (s *Set) ToTick(t int64, snap Snapshot) uint64 {
	if t <= snap.M {
		return snap.J
	}
	if t == math.MaxInt64 {
		return snap.J + wheel.NextTimerMaxDelta
	}
	return snap.J + uint64((t-snap.M)/s.tickNsec)
}

// Restore queues t, with flags, on CPU cpu's base for them in bucket idx
// whose expiry is bucketExpiry, for a timer armed at tick expires, after
// forwarding the base to jiffies: the kernel's placement as a recording
// prints it (timer_start's idx and bucket_expiry). The replay rebuilds a
// recorded machine's timer bases with it, so that its tick's idle path
// reads the kernel's own buckets; a pending t is moved. No CPU is kicked and no
// hierarchy entry point runs.
func (s *Set) Restore(t *wheel.Timer, cpu int, flags uint32, expires, jiffies uint64, idx int, bucketExpiry uint64) {
	s.Del(t)
	t.SetShutdown(false)
	t.SetFlags(flags&wheel.FlagInitMask | uint32(cpu))
	b := &s.cpu(cpu).bases[baseIndex(t.Flags())]
	b.mu.Lock()
	// The kernel's softirq recalculates a base's next expiry whenever it
	// comes due, so a deletion never holds the clock back for long; the
	// replay runs no softirq, so it recalculates before forwarding.
	b.w.Recalc()
	b.w.Forward(jiffies)
	t.SetExpires(expires)
	b.w.Enqueue(t, idx, bucketExpiry)
	b.publish()
	b.mu.Unlock()
}
