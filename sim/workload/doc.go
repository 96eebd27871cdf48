// Package workload holds the simulator's workloads: the tools of the
// published experiments and the background every machine runs.
//
//   - Oslat: rt-tests' oslat, busy loops pinned to a CPU list, each gap a
//     latency sample, reported in oslat's exact format.
//   - Cyclictest: rt-tests' cyclictest (one SCHED_FIFO thread per CPU,
//     absolute clock_nanosleep) with seed 003's hrtimer stress load, in
//     cyclictest's format.
//   - Kernbench: a make -jN kernel build (lognormal compile jobs with
//     blocking reads, a writeback timer each, then a serial link), fitted to
//     seed 004's 2-socket quad-core.
//   - Panic: seed 002's panicked CPU, busy-waiting or halting.
//   - Idle: nothing.
//   - Housekeeping: the housekeeping timer mix of latency-anchors.md §6
//     (vmstat, writeback, watchdogs, TCP, a driver's occasional heavy work),
//     armed on the housekeeping CPUs with the kernel's periods, placement
//     and round_jiffies alignment, and the kernel threads' global timers
//     the recordings show (below).
//
// # The housekeeping mix, from recordings
//
// The kernel recordings of testdata/traces (idle QEMU guests, Linux 6.12
// to 7.3, with isolcpus= or nohz_full= CPUs; mix_test.go re-derives this
// table with go test ./sim/workload -run MixFromRecordings -v) show which
// CPUs arm global timers, the ones the migration hierarchy moves:
//
//	recording                        global arms/s per CPU   functions
//	                                 hk     isol   nohz_full
//	vm40 isolcpus=1-9,11-39 (6.12)   7.60   0      -        process_timeout, delayed_work_timer_fn
//	vm40 ... (6.19)                  3.99   0      -        the same
//	vm16x2 isolcpus=1-7,9-15 (6.12)  7.79   0.05   -        the same
//	vm16x2 ... (7.3)                 11.91  0      -        the same
//	vm16x2 ..., all busy (6.12)      3.20   0.17   -        the same
//	vm24 nohz_full=1-23 (6.12)       1.30   -      0.10     process_timeout, do_nocb_deferred_wakeup_timer
//	vm12 nohz_full=1-11 (6.12)       1.19   -      0.30     the same, pool_mayday_timeout
//
// Every housekeeping CPU arms global timers: process_timeout of the
// kernel threads that sleep in schedule_timeout there (rcu_preempt's
// force-quiescent-state waits, a few jiffies each during a grace period;
// kcompactd's 500 ms wait, one per node). The median, 7.6 arms/s per
// housekeeping CPU, is the class kthread (PerCPU, period 132 ms). The
// nohz_full CPUs arm some too, 0.2/s per CPU (median): kcompactd running
// there, and RCU's deferred wake-up of its no-callbacks kthreads; that is
// nohz_timers (PerNohzFull, 5 s). Their tick stopped, a housekeeping CPU
// pulls them (on the 24-CPU nohz_full=1-23 recording, CPU 0). Isolated
// CPUs arm almost none (0 to 0.17/s, a worker's delayed work): the mix
// gives them none. Pinned and deferrable timers do not migrate and are
// left to the device classes: mix_interrupt_randomness (pinned, on the
// CPU that took the interrupt), tcp_orphan_update (deferrable) and
// vmstat. clocksource_watchdog, re-armed with add_timer_on on the next
// online CPU every 0.5 s, visits every CPU, isolated ones included; one
// recording of seven shows it (a clocksource that must be verified), so
// its class is off by default (--set hk.clocksource_watchdog.enabled=true).
//
// With kthread on every housekeeping CPU, the simulated pullers of an
// isolcpus machine on 6.9-6.18 are the kernel's: the isolated migrator of
// every group that holds a housekeeping CPU (on the 40-CPU
// isolcpus=1-9,11-39 recording, the groups of CPUs 0 and 10; on seed 000's
// 128-CPU machine CPUs 1, 33, 65 and 97, of which 1 and 65 also run the
// node devices' heavy driver work).
//
// Parse reads the command line's workload syntax (Usage). Every tunable is
// a sim.Params entry, so tmigr sim --explain shows it.
package workload
