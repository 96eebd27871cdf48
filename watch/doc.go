// Package watch follows a live stream of kernel trace events and says, per
// CPU and per period, whose timers each CPU ran: its own, or other CPUs'
// timers it pulled through the timer-migration hierarchy, with their owners,
// functions and the time spent in them, the CPU's class (housekeeping,
// isolated, nohz_full, out of the hierarchy) and the groups it is migrator
// of. It is what `tmigr top` prints and `tmigr exporter` exports.
//
// A Watcher reads no file and starts no goroutine: its driver feeds it
// events (Observe) in trace order and asks for a Period when one ends. It
// holds no kernel decision of its own; every attribution is one package
// replay or explain already makes:
//
//  1. Whose timer an expiry ran is replay.RemoteExpiry's reading of the
//     remote-expiry context (tmigr_handle_remote_cpu, 6.9+): inside a
//     remote expiry the timer is the target's, else the printing CPU's own.
//     A stream has no look-ahead, so the one rule RemoteExpiry takes from a
//     timer's later start (a pinned or deferrable timer armed before the
//     recording ends the round) is unused: such an expiry counts as foreign,
//     which the kernel never does, and explain names it an anomaly.
//  2. The migrator roles are read from tmigr_group_set_cpu_active and
//     tmigr_group_set_cpu_inactive: each prints the group's migrator (the
//     child's bit, 0xff for none) and the bit of the child that walked up.
//     A CPU is the migrator of its level-0 group when the group's migrator
//     is its bit, and of the group of level l+1 when it is the migrator of
//     its level-l group and that group's bit is the migrator of level l+1
//     (the walk of tmigr_active_up, kernel/time/timer_migration.c). A role
//     the stream has not shown yet is not claimed.
//  3. The class of a CPU is the machine's isolation (its command line),
//     and whether it is in the hierarchy is the kernel model's exclusion
//     (package kernel) until tmigr_cpu_available/unavailable say otherwise.
//  4. The explanation of a foreign timer on an isolated or nohz_full CPU is
//     package explain's, run on the events of the last seconds (Window).
package watch
