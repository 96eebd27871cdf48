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
//     and round_jiffies alignment.
//
// Parse reads the command line's workload syntax (Usage). Every tunable is
// a sim.Params entry, so tmigr sim --explain shows it.
package workload
