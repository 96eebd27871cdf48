// Package tracefs records the timer and timer_migration trace events of the
// machine it runs on, in a tracefs instance of its own: the driver behind
// tmigr record.
//
// An instance (instances/tmigr-<pid> under the tracefs mount) has its own
// ring buffer, events, clock and switch, as rtla's are: recording in one
// leaves the top-level tracing state (tracing_on, current_tracer,
// set_event, the buffer) and every other user's instances as they were, and
// removing the directory undoes everything the instance set. A process
// killed with SIGKILL cannot remove its instance; Sweep (and every Open)
// removes the instances whose process no longer runs. Tracefs mounted by
// Open carries the source "tmigr" in the mount table: a process killed
// before it could unmount it leaves the mount, and the next Sweep, or the
// Close of the next Open that finds no other running tmigr's instance in
// it, takes it down.
//
// Open enables the events and sets the instance up without starting it;
// Start switches it on; Pipe streams its trace_pipe, the kernel's text
// lines that package ftrace reads; Lost counts the events the ring buffer
// dropped; Close stops, removes the instance and unmounts tracefs if Open
// mounted it. The package installs no signal handler: a command that must
// put the machine back on Ctrl-C catches the signal and calls Close.
//
// # The events
//
// The timer wheel's events of group "timer" (timer_init, timer_start,
// timer_expire_entry, timer_expire_exit, timer_cancel, timer_base_idle where
// the kernel has it), tick_stop where present, every event of group
// timer_migration, and with Options.HRTimers the hrtimer_* events of group
// "timer". A kernel without the timer_migration group is recorded all the
// same, with a note (Instance.Notes): before 6.9 there is no timer
// migration hierarchy (wheel timers are pushed to a busy CPU when queued, by
// get_nohz_timer_target), and a later kernel built without CONFIG_SMP or
// CONFIG_NO_HZ_COMMON has none either; the wheel's events are what such a
// kernel does with timers.
//
// # The clock
//
// The instance's trace_clock is "global": the kernel prints it as
// seconds.microseconds, as it prints "local", which is what package
// ftrace's reader parses, and unlike "local" it is monotonic across CPUs,
// which a replay that orders one CPU's event before another's relies on.
package tracefs
