// Package kernel knows which timer-migration rules a Linux release follows.
//
// The timer code changed its mind several times about where a timer that
// was not pinned to a CPU should run. Each change is a Switch named after
// the kernel commit that made it; Model tells which switches a release has,
// and Policy maps them onto the core's cpu.Policy. The package reads no
// file and imports no driver: callers (tmigr host, sim --kernel, replay)
// hand it a release string such as "6.12.118", "7.3.0-1-rt-amd64" or
// "6.19.0-tmigr-sim".
//
// # The rules, version by version
//
//	switch              commit        mainline  stable backports   what it does
//	push-at-enqueue     eea08f32adb3  2.6.31    -                  mod_timer moves a non-pinned timer armed on
//	                    (removed by b2cf7507e186 in 6.9)            an idle CPU to a busy one (get_nohz_timer_target)
//	pull-hierarchy      7ee988770326  6.9       -                  timers stay where armed; idle CPUs' global timers
//	                                                               are pulled by a migrator of the hierarchy
//	sysctl-hrtimer-only b2cf7507e186  6.9       -                  kernel.timer_migration no longer touches the wheel
//	add-timer-on-pinned aae55e9fb8fc  6.9       -                  add_timer_on marks its timer TIMER_PINNED (flags=P)
//	numa-balanced-tree  5eb579dfd46b  6.19      6.18.2             groups below the crossnode level hold one node only
//	exclude-isolated    7dec062cfcf2  6.19      -                  isolcpus (domain) CPUs and isolated cpuset partitions
//	                                                               leave the hierarchy (nohz_full and timekeeper stay)
//	partition-domain    0947d018cf57  7.0       -                  isolated partitions are part of HK_TYPE_DOMAIN
//	remote-self-expiry  d486b4934a8e  7.1       6.12.94, 6.18.36,  the migrator also expires its own global timers
//	                                            7.0.13             when it walks the hierarchy (livelock fix)
//	per-capacity        098cbaad8e57  7.2       -                  one hierarchy per CPU capacity, built only with
//	                                                               CONFIG_BROKEN and never under nohz_full
//	hrtimer-prefer-local 3288cd486376 7.1       -                  hrtimer_start keeps a timer first on its CPU there
//
// How each entry was established (kernel source and mail, read for this
// package; see also docs of hier and sim):
//
//   - push-at-enqueue: up to 6.8, __mod_timer asked get_target_base(), which
//     returned get_nohz_timer_target()'s CPU when the static key
//     timers_migration_enabled was on and the timer was not TIMER_PINNED.
//     b2cf7507e186 ("timers: Always queue timers on the local CPU", 6.9)
//     deleted get_target_base from timer.c and queues every timer on the
//     local base. The 2009 commit id is the 2.6.31 series of Arun R
//     Bharadwaj ("timers: Logic to move non pinned timers"); it was not
//     re-read here.
//   - pull-hierarchy: 7ee988770326 ("timers: Implement the hierarchical pull
//     model", v6.9-rc1) adds kernel/time/timer_migration.c.
//   - sysctl-hrtimer-only: timer_migration_handler only toggles the static
//     key timers_migration_enabled (timers_update_migration: on when the
//     sysctl is 1 and NOHZ is active). From 6.9 the only reader of that key
//     is get_target_base() in hrtimer.c: a non-pinned hrtimer may be queued
//     on get_nohz_timer_target()'s CPU. The wheel calls
//     tmigr_cpu_deactivate() from __get_next_timer_interrupt (through
//     timer_use_tmigr) and tmigr_handle_remote() from the timer softirq
//     when is_timers_nohz_active(), never looking at the sysctl; a 2026
//     documentation change says the same. So timer_migration=0 on 6.9+
//     keeps non-pinned hrtimers on the CPU that starts them and leaves the
//     pull hierarchy exactly as it is. Before 6.9 it switched off the push
//     for wheel timers and hrtimers alike: that is cpu.None.
//   - numa-balanced-tree: 5eb579dfd46b ("timers/migration: Fix imbalanced
//     NUMA trees", tip timers/core 1 Nov 2025, merged for 6.19); the 6.18.2
//     stable review carried it (with its dependency 6c181b5667ee). A 6.17.y
//     backport was pushed in December 2025 (release number not
//     established: 6.17 is treated as unfixed) and one was posted for
//     6.12.y in March 2026 (not known to be merged: 6.12 is treated as
//     unfixed). Package hier always builds the fixed tree. The old one
//     differs only when a node's first CPU comes up while an earlier node's
//     top group is still below the level under the crossnode level: with
//     interleaved CPU numbering, or a node much smaller than the average
//     (one of 8 CPUs where the others have 16 or more). Nodes of equal size
//     numbered in blocks, as on every machine we recorded, give the same
//     tree. hier builds the old tree with Options.ImbalancedNUMA
//     (Model.ImbalancedNUMA): the old root joined the new top as it was,
//     whatever its node.
//   - exclude-isolated: 7dec062cfcf2 ("timers/migration: Exclude isolated
//     cpus from hierarchy", tip 20 Nov 2025, in the timers-core-2025-11-30
//     pull for 6.19). The predicate: (not HK_TYPE_DOMAIN housekeeping, or
//     in an isolated cpuset partition) and HK_TYPE_KERNEL_NOISE
//     housekeeping, i.e. nohz_full CPUs stay; the nohz timekeeper stays
//     while nohz_full is in use; cpuset calls tmigr_isolated_exclude_cpumask
//     on every partition change.
//   - partition-domain: 0947d018cf57 ("timers/migration: Remove superfluous
//     cpuset isolation test", Feb 2026, so 7.0 by its date): HK_TYPE_DOMAIN
//     now includes isolated partitions, and the predicate drops the cpuset
//     test. The set of excluded CPUs is the same as on 6.19.
//   - remote-self-expiry: d486b4934a8e ("timers/migration: Fix livelock in
//     tmigr_handle_remote_up()", tip timers/urgent 4 Jun 2026,
//     CVE-2026-53180; stable 6.12.94, 6.18.36, 7.0.13). Package hier
//     implements the fixed walk only.
//   - per-capacity: 098cbaad8e57 ("timers/migration: Split per-capacity
//     hierarchies", May 2026, pulled for 7.2; the connect tracepoints print
//     capacity= from then on). tmigr_get_capacity() returns one capacity
//     for every CPU unless CONFIG_BROKEN is set, and always under
//     nohz_full ("Deactivate per-capacity hierarchies under nohz_full"); the
//     pull text says the split "won't be active before v7.3". Model.Has
//     reports that the code is there; whether a machine splits depends on
//     its config and capacities (see PerCapacityActive). No real build
//     splits: CONFIG_BROKEN has no prompt (init/Kconfig: "config BROKEN /
//     bool") and nothing selects it, and an arm64 guest of Debian's 7.3.4
//     with CPUs of two capacities printed capacity=1024 for all of them
//     (testdata/traces/README.md of the lab). The core models one
//     hierarchy, which is what every real 7.x kernel builds.
//   - hrtimer-prefer-local: 3288cd486376 ("hrtimer: Optimize for local
//     timers", sched/hrtick, 7.1) with its follow-up ("Honour the NOHZ full
//     restrictions"): a local timer that is the first on its CPU, or
//     pinned, stays there; otherwise a nohz_full CPU moves it, and a
//     housekeeping CPU keeps it unless its tick is stopped. Before, a
//     timer was moved to get_nohz_timer_target()'s CPU unless it would be
//     the first there (hrtimer_check_target). The results differ for a
//     timer first on a nohz_full CPU that is not first on the target: 7.1
//     keeps it, 6.x moved it. Not modelled (cpu.Set.HrtimerTarget has the
//     6.x rule); the replay's placement check admits both.
//
// # Mapping onto the core
//
// Policy gives the cpu.Policy of the wheel timers: push-at-enqueue is
// cpu.Push (cpu.None with timer_migration=0), pull-hierarchy is cpu.Pull,
// and with exclude-isolated cpu.PullIsolated, whatever timer_migration
// says. For package hier, Options.ExcludeIsolated is Has(ExcludeIsolated);
// an isolated partition goes into Isolation.CpusetIsolated (Isolation; on
// 7.0 it is part of HK_TYPE_DOMAIN instead, which excludes the same CPUs),
// and Excluded says which CPUs leave the hierarchy. ImbalancedNUMA is
// hier.Options.ImbalancedNUMA. kernel.timer_migration is a switch of the
// core of its own (cpu.Set.SetTimerMigration): up to 6.8 it turns the push
// at enqueue off (Push with it off is cpu.None), from 6.9 it only keeps
// hrtimers local (cpu.Set.HrtimerTarget). The behaviours the core does not
// model (the pre-fix remote walk, hrtimer_prefer_local) are listed by
// Unmodelled.
package kernel
