// Package tick is one CPU's tick, NOHZ idle and interrupt protocol: the
// kernel's kernel/time/tick-sched.c, with the glue by which the tick and the
// clock event device reach the timer code (run_local_timers, the timer
// softirq, hrtimer_interrupt and the hrtimer softirq). It is written once
// and driven by all three drivers: the simulator's CPUs, the runtime's
// workers and, for the part a recording shows, the replay.
//
// The package is pure, like the rest of the core: every method takes the
// time (ns) from its driver, starts no goroutine, does no I/O and allocates
// nothing. A CPU's methods are the events a driver sees; each returns a
// Ready, a value that says what the driver must do before it calls again,
// in the manner of etcd raft's Ready (rawnode.go): the tick core decides,
// the driver carries out. No function of the driver is called from here.
//
// # Events and the kernel functions they stand for
//
//	CPU.Online          timers_prepare_cpu, tmigr_cpu_prepare/available, hrtimers_cpu_starting
//	CPU.Offline         tmigr_cpu_unavailable, timers_dead_cpu, hrtimers_cpu_dying
//	CPU.Tick            tick_sched_timer / tick_nohz_handler: update_process_times'
//	                    run_local_timers (tmigr_requires_handle_remote)
//	CPU.TimerSoftirq    run_timer_softirq (its cpu.Pass: __run_timer_base per base,
//	                    then tmigr_handle_remote / timer_expire_remote)
//	CPU.HrtimerInterrupt hrtimer_interrupt (its hrtimer.Pass), ended by EndPass
//	CPU.HrtimerSoftirq  hrtimer_run_softirq, ended by EndPass
//	CPU.EndPass         the end of either pass: the retry loop, tick_program_event
//	CPU.Retrigger       retrigger_next_event (the hrtimer retrigger IPI)
//	CPU.Idle            do_idle: tick_nohz_idle_enter, tick_nohz_idle_stop_tick
//	CPU.StopTick        tick_nohz_next_event + tick_nohz_stop_tick
//	                    (get_next_timer_interrupt, timer_base_try_to_set_idle)
//	CPU.IdleExit        tick_nohz_idle_exit (tick_nohz_restart_sched_tick,
//	                    timer_clear_idle; __tick_nohz_full_update_tick on nohz_full)
//	CPU.FullUpdate      tick_nohz_irq_exit on a nohz_full CPU: tick_nohz_full_update_tick
//	CPU.Restart         tick_nohz_restart_sched_tick
//
// A wake-up IPI (trigger_dyntick_cpu: a timer queued first on an idle base)
// is an interrupt like any other: the kernel's handler does nothing about
// the tick; the idle loop, going round when the interrupt ends, re-evaluates
// the sleep. So a driver delivers it by calling Idle at the end of the
// interrupt.
//
// # The driver's duties
//
// After every call, before the next call on the same CPU:
//
//  1. Tick. Call CPU.Tick when Ready.Tick comes: at every instant of the
//     Grid while the tick runs (Stopped false: a driver may instead sweep
//     all its ticking CPUs at each grid instant), at the NOHZ wakeup while
//     it is stopped (Never: not at all). When TickSet, this call started,
//     stopped or re-armed the tick: re-arm the CPU's tick timer.
//  2. Device. When Ready.Program, arm the CPU's clock event device for
//     DeviceAt (Never: disarm). When it fires, call HrtimerInterrupt; run
//     the pass's callbacks (Pass.Next, then Pass.Done with the callback's
//     result) and call EndPass with a fresh clock reading; while EndPass
//     says retry, run the callbacks again and end again. A driver whose
//     device register other goroutines also program (the runtime, through
//     hrtimer.CPUBase.Device) arms from the register, which holds every
//     programming in its order, a Ready's DeviceAt included.
//  3. Softirqs. Run what Ready.Softirq raised: TimerSoftirq (call
//     TimerSoftirq and run its cpu.Pass until Next returns nil, each timer's
//     work as its Data word says), HrtimerSoftirq (HrtimerSoftirq, its
//     callbacks, EndPass). On a non-RT kernel on the way out of the
//     interrupt, timer first; on PREEMPT_RT in the CPU's ktimers thread.
//  4. IPIs. Ready.Retrigger: call that CPU's Retrigger and carry out its
//     Ready there. Ready.Activate: make that CPU leave idle (a work item on
//     it, tmigr_trigger_active), which calls its IdleExit. Ready.Kick:
//     interrupt that CPU, which then calls Idle.
//  5. Idle. When the CPU runs out of tasks, call Idle; at the end of every
//     interrupt that leaves it idle, call Idle again (the idle loop goes
//     round). Before switching an idle CPU to a task, call IdleExit (alone:
//     the task is the only runnable one). At the end of an interrupt on a
//     nohz_full CPU running a task, call FullUpdate (not if the interrupt
//     came in idle: the idle loop exits afterwards, through IdleExit).
//  6. Hotplug. Call Offline on the dying CPU (after IdleExit, as the
//     hotplug thread runs there), then carry out its IPIs; Online on the
//     returning one.
//  7. Time. Every call takes the driver's clock in ns, never decreasing for
//     one CPU. One goroutine drives a CPU at a time; CPUs of a machine may
//     be driven concurrently.
//
// # Idle entry and exit
//
//	running a task               the idle loop
//	──────────────┐
//	              │ Idle ──► next := get_next_timer_interrupt
//	              │          next at most a tick away? ── yes ──► tick kept, base untouched
//	              │            │ no
//	              │          timer_base_try_to_set_idle (tmigr_cpu_deactivate)
//	              │          base idle? ── no ──► tick kept (tmigr_cpu_activate undoes it)
//	              │            │ yes
//	              │          tick stopped, NOHZ wakeup armed for next
//	              │            │
//	              │          interrupt (NOHZ wakeup, device, IPI)
//	              │            ├── nothing to run: Idle again: re-arm for the
//	              │            │   next event (tmigr_cpu_new_timer)
//	              │            ▼ a task to run
//	◄─────────────┴───────── IdleExit: a stopped tick restarts (timer_clear_idle,
//	                         tmigr_cpu_active); a nohz_full CPU with one task
//	                         keeps it stopped, re-armed, and stays idle in the
//	                         hierarchy
//
// # The hrtimer pass loop
//
//	device fires ──► HrtimerInterrupt(now) ──► pass p (hard bases)
//	                        │
//	           ┌────────────▼────────────┐
//	           │ for t := p.Next(); ...  │  run t's callback, p.Done(t, action)
//	           └────────────┬────────────┘
//	                        ▼
//	            EndPass(p, fresh now) ── retry (next event already past,
//	                        │             at most twice) ──► back to Next
//	                        ▼
//	            Ready: Program/DeviceAt (expires_next, or the hang delay
//	            after three passes: Hang), Softirq & HrtimerSoftirq if a
//	            pass found soft timers due ──► HrtimerSoftirq(now): the same
//	            loop over the soft bases, whose EndPass reprograms for the
//	            next soft timer
//
// # Three drifts this package settles
//
// The runtime and the simulator each had their own copy of this protocol,
// and they had drifted apart; the kernel decides each, and
// tick/testdata/drivers.txt runs the same events through both drivers:
//
//   - Whether the next event is more than a tick away is asked before the
//     timer base is set idle: tick_nohz_next_event returns 0 (timer_expires
//     = 0) for an event at most TICK_NSEC away on a CPU whose tick runs, and
//     tick_nohz_idle_stop_tick then retains the tick without calling
//     tick_nohz_stop_tick, so timer_base_try_to_set_idle and
//     tmigr_cpu_deactivate never run (the simulator's behaviour; the runtime
//     left the hierarchy and came straight back).
//   - The timer base's idle mark is cleared, and the CPU made active in the
//     hierarchy, only when a stopped tick restarts: timer_clear_idle is
//     called from tick_nohz_restart_sched_tick, which tick_nohz_idle_exit
//     reaches only with TS_FLAG_STOPPED (the simulator's; the runtime always
//     called it, harmlessly since the base was not idle).
//   - The device is armed as the pass left it: hrtimer_interrupt itself
//     programs expires_next (tick_program_event), or the hang delay; the
//     pass's Effect reports that programming (the simulator applied it; the
//     runtime re-read the register, which holds the same value).
//
// And one between the simulator and the kernel: a nohz_full CPU leaving
// idle to run a single task keeps its tick stopped and stays idle in the
// hierarchy (tick_nohz_idle_exit → tick_nohz_idle_update_tick →
// __tick_nohz_full_update_tick → tick_nohz_full_stop_tick), as the 24-CPU
// nohz_full recording shows: no tmigr_cpu_active per wakeup.
//
// # What is not modelled
//
// High-resolution mode only (hrtimer.Config.LowRes is refused): the tick is
// the driver's timer beside the hrtimer queue rather than an hrtimer of its
// own (the kernel's sched_timer), so it does not appear among the CPU's
// hrtimers. The timekeeping CPU's limit on its sleep
// (timekeeping_max_deferment), the tick dependencies other than a second
// task (RCU, perf, posix CPU timers) and the idle governor's prediction
// (tick_nohz_get_sleep_length) are not.
package tick
