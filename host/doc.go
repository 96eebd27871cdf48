// Package host reads a Linux machine's CPU-isolation setup and says what
// its kernel will do to timers: the driver behind tmigr host.
//
// It works in three steps, each usable alone:
//
//  1. Read (or ReadTar) collects the files below into a Snapshot, from the
//     running machine (root "/") or a copy of another one. Save and SaveTar
//     write a snapshot, so a user can send theirs.
//  2. Parse turns the files into a Host: each file parsed, absent ones
//     marked absent, malformed ones an error naming the file.
//  3. Analyze derives what the kernel does: the model of its release
//     (package kernel), the isolation it set up, the hierarchy it builds
//     (package hier), the CPUs out of it and why, who may run other CPUs'
//     timers once the busy CPUs run (package migrators: the candidates the
//     kernel's rules allow), and one possible history: the machine
//     simulated (package sim) under that model with a workload. It adds
//     warnings where the setup likely does not do what its author meant.
//
// # The files
//
// Paths are relative to the machine's root:
//
//	proc/sys/kernel/osrelease        the release: selects the model
//	proc/cmdline                     isolcpus= (flags nohz, domain, managed_irq), nohz_full=,
//	                                 rcu_nocbs=, irqaffinity=, nohz=; the kernel's part ends at " -- "
//	proc/sys/kernel/timer_migration  0 or 1; absent without SMP or NO_HZ_COMMON
//	sys/devices/system/cpu/{possible,present,online}
//	sys/devices/system/cpu/isolated  the domain-isolated CPUs as the kernel has them
//	sys/devices/system/cpu/nohz_full absent without CONFIG_NO_HZ_FULL; "(null)" when unused
//	sys/devices/system/cpu/cpuN/cpu_capacity   when the architecture has it
//	sys/devices/system/node/possible, nodeN/cpulist   absent without NUMA
//	sys/fs/cgroup/...                cgroup v2: every cpuset.cpus.partition with its
//	                                 cpuset.cpus.effective, the root's cpuset.cpus.isolated and
//	                                 cgroup.controllers (sys/fs/cgroup/unified on hybrid systems);
//	                                 cgroup v1 cpuset hierarchies: each cpuset's cpus,
//	                                 cpu_exclusive and sched_load_balance
//	sys/kernel/realtime              1 on PREEMPT_RT kernels
//	proc/config.gz, boot/config-RELEASE   HZ, NO_HZ_FULL, NO_HZ_COMMON, SMP, CPU_ISOLATION,
//	                                 PREEMPT_RT, BROKEN
//
// None of these names a person or holds a secret: a kernel command line can
// (a root= UUID, an init's arguments), so the "# machine:" line keeps only
// its isolation parameters; a saved snapshot keeps the file as it is.
//
// # What the kernel does with the command line
//
// The parameters act as kernel/sched/isolation.c makes them act (package
// kernel/cmdline has the rules), and two build options can void
// them: without CONFIG_CPU_ISOLATION isolcpus= and nohz_full= do nothing;
// without CONFIG_NO_HZ_FULL housekeeping_setup refuses any parameter that
// asks for nohz ("Housekeeping: nohz unsupported. Build with
// CONFIG_NO_HZ_FULL") and returns before setting anything, so
// isolcpus=nohz,domain,1-7 then isolates nothing at all, not even the
// domain. Where the kernel reports the result (sys/devices/system/cpu/
// isolated and nohz_full, the cgroup root's cpuset.cpus.isolated), the
// kernel's word wins over our reading of the command line, with a warning
// when they differ.
//
// # The steady state
//
// Report.Migrators is what the kernel's rules determine (package
// migrators) once the workload runs: its busy CPUs active for good (a busy
// nohz_full CPU is idle there, its tick stopped; under nohz_full the
// timekeeper never is), every other CPU idle but for transients. A group
// with an always-active child always has a migrator, one of those
// children; which one depends on the order in which they became active
// (an existing migrator is never displaced), so the report names the
// candidates, not one CPU. On 6.9 to 6.18 the busy isolated CPUs of a
// group with housekeeping CPUs are its candidates, and one of them runs
// their timers. The simulation (Report.Prediction) is one history among
// those the rules allow, and depends on the timers the housekeeping CPUs
// happen to arm.
package host
