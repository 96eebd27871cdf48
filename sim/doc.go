// Package sim is tmigr's simulator: an N-CPU Linux machine on a virtual
// clock that runs the real timer core (packages cpu, hier, hrtimer) under
// a workload, so that what timer migration does on a machine of any shape
// and isolation setup can be seen in seconds.
//
// # What is modelled
//
// Each CPU runs a task or idles, as the kernel's does:
//
//	         wake (task queued)                 task blocks/sleeps/exits
//	idle  ------------------------>  running  ------------------------->  idle
//	loop   exit idle: restart the     a task   enter idle: get_next_timer_
//	       tick, timer_clear_idle,             interrupt; stop the tick if
//	       active in the hierarchy             the event is > 1 tick away
//	                                           (timer_base_try_to_set_idle,
//	                                           tmigr_cpu_deactivate) and arm
//	                                           the sched_timer for it
//
// The periodic tick (HZ) runs while a CPU is busy and while an idle CPU
// could not stop it; a nohz_full CPU running one task stops it too and is
// idle to the hierarchy then. An idle CPU with its tick stopped sleeps
// until its armed event (the NOHZ wakeup), an hrtimer on its clock event
// device, an IPI (a timer queued first on its idle base, a task to run) or
// a device interrupt. CPUs go offline and online, and cpuset partitions
// change, while the machine runs (Config.Actions).
//
// Kernel work on a CPU (interrupt entry, the tick handler, the timer
// softirq, every timer callback, pulling a remote CPU's timers, hrtimer
// expiries, wakeups, context switches) has a cost from the cost model
// (Costs, with named platforms) and is serialised: an interrupt that comes
// while the CPU is still busy with kernel code waits, and the task that
// runs there finishes its work that much later. A busy loop that measures
// (oslat) sees each unbroken stretch of kernel work as one long sample. On
// a PREEMPT_RT kernel the softirqs run in the ktimers thread, which
// real-time tasks preempt.
//
// # Time
//
// Time is a virtual nanosecond clock from boot. Ticks fall on a grid of
// TICK_NSEC; jiffies starts at INITIAL_JIFFIES at boot and counts the
// grid (tick.Grid), and the tick-update snapshot (cpu.Snapshot) the timer
// code is handed is always the last grid point: jiffies and the
// hierarchy's nanoseconds never disagree.
//
// # The kernel's part
//
// Each CPU's tick, NOHZ idle and interrupt protocol is package tick's: the
// simulator feeds every CPU's events to its tick.CPU (a tick, the idle loop,
// an idle exit, the clock event device firing, hotplug) and carries out the
// Ready it returns (arm the tick or the NOHZ wakeup, program the device,
// run the softirqs, send the IPIs). The simulator adds time, costs and the
// scheduler.
//
// # The engine
//
// A run is one goroutine draining an event queue ordered by (time,
// insertion order), so a seed determines a run completely (math/rand/v2
// PCG streams, seeded explicitly, one per user of randomness). The tick is
// not an event per CPU: at each grid instant one sweep ticks every CPU
// whose tick runs, which keeps a busy 4096-CPU machine (63 million ticks
// in 62 s at HZ=250) cheap; a CPU whose tick is stopped costs nothing
// until it wakes. The sweep first runs the quiet ticks (a busy CPU whose
// tick touches nothing but its own state), on up to Config.Threads
// goroutines side by side, then the others in CPU order (parallel.go);
// the output is the same for any number of goroutines. Re-armed events (a
// step stretched by interrupts, a re-programmed device) are invalidated
// by generation and skipped when they come up.
//
// Kernel costs are drawn from each CPU's own stream (seeded from the
// run's seed and the CPU number), a lognormal through an inverse-CDF
// table with exact tails (Dist.Sample in costs.go): one 64-bit number a
// draw. RunContext watches a run (a
// progress callback every ProgressEvery of wall time) and stops it when
// its context ends, the result then marked Partial; neither changes what
// is simulated. Package sim/sweep runs many configurations on many
// workers or machines.
//
// Each timer function runs from the timer softirq's expiry pass
// (cpu.Pass), which tells which CPU runs whose timer: that is where the
// per-CPU migration summary (remote expiries, by owner) comes from. With Config.Check the
// hierarchy's invariant checker runs after every step, with checks of the
// simulator's own consistency (a CPU with its tick stopped has an idle
// timer base, and the other way round).
//
// Workloads (package sim/workload) drive the machine through Machine and
// Exec: tasks with behaviours (TaskSpec), wheel timers (NewTimer, Mod,
// AddOn), device interrupts (DeviceIRQ), the panic controls (StopCPU,
// SetNoNohz).
package sim
