// Package explain says, for a real kernel recording, why each timer ran on
// the CPU it ran on: every timer that expired on a CPU other than the one
// it was queued on, and every timer that expired on an isolated or
// nohz_full CPU, with the chain of the kernel's decisions that put it
// there, read from the kernel's own trace events.
//
//	CPU 1 ran CPU 0's process_timeout at 10.602352 s: CPU 0 armed it at
//	10.001576 s (line 60), a global timer, which a migrator may run while
//	its CPU is idle; CPU 0 was idle since 10.507065 s; it had published its
//	first global event, due at 10.496000 s (CLOCK_MONOTONIC), in GRP0:0;
//	CPU 1's timer softirq walked the hierarchy at 10.602012 s
//	(tmigr_handle_remote: GRP0:0) and found the event due in GRP0:0; CPU 1
//	was GRP0:0's migrator since 9.852044 s or before (...); CPU 1 is
//	isolated (isolcpus domain), yet on Linux 6.12.118, as on every kernel
//	from 6.9 to 6.18, an isolated CPU stays in the hierarchy and pulls like
//	any other; busy, it is the lowest active CPU of GRP0:0; from 6.19
//	(exclude-isolated, 7dec062cfcf2) CPU 1 would be out of the hierarchy
//	(isolcpus domain), and CPU 8, active elsewhere in the hierarchy, would
//	have run it from a group higher up
//
// # What a why is built from
//
// The recording is read with package ftrace, as typed values, in one pass
// in time order (the chain of an expiry is the state the trace has shown
// up to it):
//
//  1. The owner. A timer sits on the base of the CPU its last timer_start
//     names (cpu=, the CPU that ran timer_start unless add_timer_on named
//     another), on the local base when pinned, the deferrable one when
//     deferrable, else the global one. A CPU's timer softirq runs its own
//     bases; the only way another CPU's timer runs on it is a remote round
//     (below), which runs the target's global base alone: so a remote
//     expiry names its owner even when the timer_start is not in the
//     recording, and a remote expiry of a pinned or deferrable timer is an
//     anomaly. An expiry outside any round is the CPU's own.
//  2. The round. tmigr_handle_remote prints each group the handler's
//     softirq walks, lowest first; tmigr_handle_remote_cpu the target
//     whose event it found due, in the group walked last; the target's
//     timer_expire_entry lines follow, up to the target's walk
//     (tmigr_update_events) or the round's next line. A tick without a
//     line of the handler ends it too: the next expiries are a softirq of
//     its own (an idle top prints no walk).
//  3. The owner's state. tmigr_cpu_idle gives when it went idle and the
//     first global event it published in its level-0 group; a group with
//     no active child passes its first event up to its parent, which is
//     how a round at level l finds the event of a CPU below.
//  4. The handler's roles. tmigr_group_set_cpu_active/inactive print each
//     group's active children and migrator after every change. Only a
//     group's migrator, or the last CPU awake when the group has none,
//     walks a group. The rules give when the role began: a child becoming
//     active takes it only in a group without a migrator; a migrator going
//     idle hands it to the lowest active child. A busy isolated CPU never
//     goes idle, so once the housekeeping CPU below it in its group goes
//     idle it is the migrator for as long as the recording lasts.
//  5. The kernel version's isolation rules, from package kernel (the
//     release of the "# machine:" line) and the isolation of its command
//     line (ftrace.Machine.Isolation): before 6.19 an isolated CPU stays in
//     the hierarchy and pulls like any other; from 6.19 (exclude-isolated)
//     it is out of it, nohz_full CPUs and the nohz timekeeper excepted. For
//     a timer an isolated CPU pulled on an older kernel, the chain ends
//     with what 6.19 would have done: the CPUs it keeps that were active
//     then would have pulled it, or, with none, the owner would have woken
//     for it itself.
//
// Groups are the kernel's hashed pointers; their names ("GRP0:1", the
// notation of the kernel's comments) come from the tree package hier
// builds for the machine, bound to the pointers by the CPUs whose paths
// the lines show (see groups.go). Times of the hierarchy (events,
// wakeups) are CLOCK_MONOTONIC, which the trace clock may run apart from:
// they are printed as such.
//
// # What the trace cannot tell
//
// A recording begins in a running system, loses events when its buffers
// overflow, and on some machines lacks a CPU's idle transitions
// altogether. Where a link of the chain depends on what the trace does not
// hold, its step says so and carries the reason (Step.Undetermined, counted
// in Report.Undetermined with package replay's words): "state from before
// the recording", "first transition of the group" (the role was the
// group's already when the recording first shows it), "event from before
// the recording", "events lost", "CPU whose transitions are not traced" (a
// group's printed state changes in a child's bit no line accounts for),
// "operation cut by the recording", "timer armed before the recording",
// "groups not named by the trace", and "trace disagrees with itself" for a
// state the kernel's rules do not allow. Two CPUs' transitions of one group
// printed in the wrong order (a CPU's line trails its compare-and-swap)
// are taken in the order that makes both follow.
//
// # Memory
//
// ExplainFile reads a recording in one pass (stream.go): it holds the
// state of the machine's CPUs, groups and live timers and a window of
// events a millisecond long, not the recording. What the builder would ask
// of the whole recording it learns a window ahead of where it explains,
// and a recording whose later lines change an answer already used (a
// group found opaque late, a CPU that traces its transitions only later)
// is read again, whole, so that the report is the same either way.
// Report.Events, the one part that grows with the recording, keeps only
// the first Options.Events expiries when asked to: a text report prints
// no more, and the summaries count them all.
//
// Report holds the values an exporter needs (Expiry: handler, owner,
// function, time, duration, the Steps with their lines, and the sentence);
// WriteText and JSON are the command's two forms.
package explain
