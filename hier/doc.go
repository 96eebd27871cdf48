// Package hier is Linux's timer-migration hierarchy (kernel/time/
// timer_migration.c): the "pull" model merged for 6.9, with the November
// 2025 exclusion of isolated CPUs as an option. It decides, for every CPU
// that goes idle, who will run its next global (non-pinned) timer-wheel
// timer, without moving the timer.
//
// # The idea
//
// Every CPU queues its timers on its own wheels: pinned ones on the LOCAL
// wheel, the others on the GLOBAL wheel. A busy CPU expires both. When a CPU
// goes idle it arms its clock-event device for its next local timer only,
// and publishes the expiry of its first global timer (if that comes first)
// in a hierarchy of groups. Some CPU that is still busy, the migrator, checks
// the hierarchy in its tick and, when a published event is due, runs the
// idle CPU's expired global timers itself ("pulls" them), so the idle CPU
// sleeps on. Timers are never moved at enqueue, which keeps arming cheap
// and lets idle CPUs and whole packages stay idle.
//
// # The hierarchy
//
// Groups have at most 8 children (ChildrenPerGroup). Level 0 groups hold
// CPUs, level 1 groups hold level-0 groups, and so on. Groups below the
// crossnode level hold members of one NUMA node only, so the common case
// never bounces a lock across nodes. For two nodes of 24 CPUs each (the
// kernel comment's example, Drawing of that machine):
//
//	LVL 2                            [GRP2:0]
//	                             GRP1:0 - GRP1:1
//
//	LVL 1             [GRP1:0]                      [GRP1:1]
//	              GRP0:0 - GRP0:2               GRP0:3 - GRP0:5
//
//	LVL 0   [GRP0:0]  [GRP0:1]  [GRP0:2]  [GRP0:3]  [GRP0:4]  [GRP0:5]
//	CPUS      0-7       8-15     16-23     24-31     32-39     40-47
//	NODE       0         0         0         1         1         1
//
// "GRPl:i" is the kernel comment's notation, made exact: l is the level and
// i the order in which the group was created within its level (GroupID).
// New sizes the tree once, as tmigr_init does, from the numbers of possible
// CPUs and nodes, assuming CPUs spread evenly; Prepare (the CPU-hotplug
// PREPARE callback) adds a CPU: it joins the newest group of its node with
// room at each level, creating groups as needed, and when the tree needs a
// new top the old top is connected below it. A CPU's or group's child bit
// in its parent is assigned in join order (bit 0 first). Groups are never
// destroyed.
//
// # Migrators and events
//
// Each group has a state word {active, migrator, seq}: the mask of its
// active children, the child that is its migrator (MigratorNone when no
// child is active) and a sequence counter. A CPU leaving idle (Activate)
// sets its bit in its level-0 group; if that group had no migrator the CPU
// becomes its migrator and, the group being newly active, goes on to set the
// group's bit one level up, and so on: it climbs exactly as long as it finds
// idle groups. It never displaces an existing migrator.
//
// A CPU going idle (Deactivate) clears its bit. If it was the migrator, the
// role passes to the lowest remaining active bit (the earliest-joined
// active child, not a search for the lowest CPU number); if no child is
// left the group is idle and the walk goes on to the parent. At every level
// it visits, the CPU's first global expiry is queued (the CPU's event in
// its level-0 group, each idle group's first event in its parent): the
// event ends up queued up to the first group that still has an active
// child, whose migrator handles it.
//
// When the last active CPU goes idle, nobody is left to pull: Deactivate
// then returns the first event of the whole (idle) hierarchy, and that CPU
// arms its own clock for it; it is the system-wide last resort. Deactivate
// and NewTimer return KtimeMax whenever some other CPU is active.
//
// A migrator's tick asks RequiresHandleRemote; its softirq runs
// HandleRemote, which dequeues due events in the groups it is migrator of
// (or that have no migrator) and runs the timers of the CPU each event names
// through the Expirer, then re-walks that CPU's next event up the tree.
//
// A CPU that wakes up sets its event's ignore flag and its groups' event
// flags without taking their locks; ignored events stay queued until the
// queue is next examined under its lock (lazy removal). Published expiries
// may therefore be early (a spurious remote check, harmless) but never
// late.
//
// # Locking
//
// Per group a mutex protects the event queue and the events in it; per CPU
// a mutex protects its idle/remote/wakeup bookkeeping. The order is: the
// CPU's timer-base locks (owned by the timer code, see Expirer), then the
// per-CPU lock, then group locks bottom-up (child before parent). The group
// state word is never locked: it is changed only by compare-and-swap of the
// whole 32-bit word, with seq incremented every time. Parent pointers are
// published once, atomically, after the group is set up; walkers load them
// once per step. Views and Check take every lock they need.
//
// # Propagation order and the sequence counter (R1, R2)
//
// (R1 to R10 are the races of docs/hierarchy.md, section 6, each with the
// kernel source it comes from.) State
// changes are made group by group, bottom-up, so two CPUs of one group can
// propagate in either order. Four CPUs, GRP0:0 = {0, 1},
// GRP0:1 = {2, 3}; CPU2 stays active throughout:
//
//	            [GRP1:0]  migrator=GRP0:1  active=GRP0:0,GRP0:1
//	           /        \
//	  [GRP0:0]            [GRP0:1] migrator=CPU2 active=CPU2
//	  migrator=CPU0
//	  active=CPU0
//	   /     \              /    \
//	CPU0    CPU1         CPU2    CPU3
//	active  idle         active  idle
//
//	1. CPU0 goes idle: GRP0:0 -> {active=, migrator=none}; CPU0 has
//	   read GRP1:0's word {GRP0:0|GRP0:1, GRP0:1, seq=s} and is about to
//	   clear GRP0:0 there.
//	2. CPU1 wakes: GRP0:0 -> {CPU1, CPU1}; it walks up and sets GRP0:0
//	   active in GRP1:0, which it already is: active and migrator are
//	   unchanged, but seq becomes s+1.
//	3. CPU0's compare-and-swap expects seq s and fails. It re-reads the
//	   child's state (GRP0:0 is active again) and leaves the bit set.
//
// Without seq the word CPU1 wrote would equal the one CPU0 read, CPU0's CAS
// would succeed and GRP1:0 would list GRP0:0 as idle although CPU1 runs.
// Hence: CAS the whole word, increment seq on every change, and re-read the
// child's state on every retry (R2: the kernel orders that re-read after a
// failed CAS with a barrier; Go's atomics are sequentially consistent).
//
// # A new timer against the last CPU going idle (R3)
//
// update_events reads the child's and the group's state under the group
// locks. Same machine; CPU2 is the only active CPU and has no timer:
//
//	CPU2 (Deactivate)                    CPU0 (idle, NewTimer T0)
//	-----------------                    ------------------------
//	CAS GRP0:1 idle, CAS GRP1:0 idle
//	lock GRP1:0
//	  top idle: hand back first event
//	  (none yet: KtimeMax)
//	unlock GRP1:0                        queue T0 in GRP0:0
//	                                     lock GRP0:0, GRP1:0
//	                                       read GRP1:0: idle
//	                                       queue GRP0:0's event, hand
//	                                       back T0: CPU0 arms for T0
//	                                     unlock
//
// Had CPU0 read GRP1:0's state before CPU2's CAS (without the lock), it
// would see "still active", queue its event without handing anything back,
// and nobody would wake for T0. With the lock, whoever takes it second sees
// the other's effect: if CPU0 comes first, CPU2 later finds T0 in the queue
// and arms for it itself.
//
// # The walk after a remote expiry (R4)
//
// CPU0 and CPU1 (both idle, GRP0:0) have events at the same time T; GRP0:0's
// event in GRP1:0 names CPU0. CPU2, the migrator, dequeues it at T and runs
// CPU0's timers. If it stopped there, CPU1's event would stay buried below
// CPU0's stale one. So it walks CPU0's path again (remote walk) even if CPU0
// has no new timer: CPU0's event leaves GRP0:0, CPU1's becomes first and is
// propagated to GRP1:0, where CPU2 finds it in the same pass. The walk is
// skipped only if CPU0 woke up (it then handles its own state) or went
// offline meanwhile.
//
// # The remote flag and the wakeup (R5, R7)
//
// While a CPU's timers are expired remotely its remote flag is set: nobody
// else expires them, and its own NewTimer does not walk (the expiring CPU
// walks afterwards). An idle last-resort CPU that wakes for its wakeup runs
// HandleRemote itself and may dequeue its own event; it then expires its own
// timers through the Expirer too (the kernel skipped that until a 2026
// livelock fix). HandleRemote stores the next expiry of the highest group
// handled as the CPU's wakeup, so an idle ex-migrator stops re-arming for
// timers that another CPU already ran.
//
// # Races the kernel loses
//
// Two interleavings leave an idle CPU's global timer unpublished: queued
// nowhere a migrator looks, with no idle CPU armed for it, so it runs only
// when some CPU of its branch wakes up for another reason. Both are in the
// kernel from 6.9 to the newest source read; the package reproduces them
// exactly (testdata/scenarios/kernel_races_found.txt replays them step by
// step), and TestStress, which found them, recognises them through test
// hooks at the places where they strike. They are the exceptions to
// invariant I7 of docs/hierarchy.md.
//
// Race A, sibling groups going idle together (three levels or more): the
// deactivation walk decides whether to go on from a group by its CAS, but
// updates the group's queue afterwards, under the lock.
//
//	CPU0 (GRP0:0 -> GRP1:0)              CPU8 (GRP0:1 -> GRP1:0)
//	-----------------------              -----------------------
//	CAS GRP0:0 idle
//	CAS GRP1:0: GRP0:1 still active,
//	  walk done after this level
//	                                     CAS GRP0:1 idle
//	                                     CAS GRP1:0 idle: go on
//	                                     lock GRP1:0, GRP2:0: queue
//	                                       GRP1:0's first event (GRP0:0's
//	                                       is not in GRP1:0 yet)
//	lock GRP0:0, GRP1:0: queue GRP0:0's
//	  event (an idle CPU's timer) in
//	  GRP1:0; GRP1:0 is idle now, but
//	  the walk is done: GRP2:0 never
//	  learns of it
//
// Race B, a new timer during a remote expiry of its CPU: the remote walk
// assumes the target's event is live (handle_remote_cpu claims only such a
// CPU), but the target may change meanwhile.
//
//	CPU1 (migrator, HandleRemote)        CPU0 (idle, event due)
//	-----------------------------        ----------------------
//	claim CPU0: remote = true
//	run CPU0's due timers
//	                                     wakes: Activate (event ignored)
//	                                     idles, no timer: Deactivate(max)
//	                                       (ignore stays set)
//	                                     irq arms a timer T: NewTimer(T)
//	                                       remote is set: return max,
//	                                       no walk, ignore still set
//	lock CPU0, read its next timer T
//	walk with nextexp T: the event is
//	ignored, so level 0 removes it
//
// # Availability and isolation
//
// A CPU takes part only while available: SetAvailable and ClearAvailable
// are the online/offline callbacks. An unavailable CPU neither pulls nor is
// pulled: its entry points return their argument or do nothing, and it
// handles its own global timers. Withdrawing the last active CPU returns a
// CPU the caller must wake, so a migrator remains.
//
// From 6.9 to 6.18 isolated CPUs (isolcpus, isolated cpusets) stay in the
// hierarchy: a busy isolated CPU becomes a permanent migrator and runs
// housekeeping CPUs' timers, which caused the oslat latency spikes that led
// to the 2025 change. With Options.ExcludeIsolated, InitIsolation and
// ExcludeIsolated withdraw isolated CPUs (isolcpus domain or isolated
// cpuset, unless nohz_full; never the nohz timekeeper) and a CPU that comes
// online isolated stays out.
//
// # Tracing
//
// Options.Tracer receives every timer_migration tracepoint at the kernel's
// places with the kernel's values; TextTracer prints them in the kernel's
// format.
//
// # Cost
//
// The entry points on the idle path (Activate, Deactivate, NewTimer,
// RequiresHandleRemote, HandleRemote, QuickCheck) allocate nothing: events
// are intrusive, queues are fixed arrays of at most 8 entries, groups are
// created only by Prepare.
//
// # Deviations from the kernel
//
// A Prepare that would need more levels than New sized fails before it
// creates any group (the kernel WARNs after creating them). A walker reads a
// child's groupmask only after loading a non-nil parent (the kernel reads it
// and then leaves the loop). timer_expire_remote runs also for the handling
// CPU itself, as the kernel does since d486b4934a8e (docs/hierarchy.md O7). Neither changes any decision.
package hier
