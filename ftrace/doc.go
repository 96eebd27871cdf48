// Package ftrace reads and writes the kernel's ftrace text — what
// /sys/kernel/tracing/trace and "trace-cmd report" print — for the timer and
// timer_migration trace events, so that recorded kernel runs can be replayed
// against our model and the simulator's own events can be written in the
// same format.
//
// # Lines
//
// An event line, as kernel/trace/trace_output.c prints it
// ("%16s-%-7d [%03d] %s %5lu.%06lu: " then the event's name and TP_printk
// text):
//
//	<idle>-0       [001] d.s2.   489.321526: tmigr_handle_remote: group=0000000033ba0247 lvl=0
//	\____/ |        \_/  \___/   \________/  \_________________/  \__________________________/
//	 Task PID       CPU  Flags       TS             Name                     Payload
//
// read as Event{Task: "<idle>", PID: 0, CPU: 1, Flags: "d.s2.", TS:
// 489321526000, Name: "tmigr_handle_remote", Payload: "group=... lvl=0",
// Data: TmigrHandleRemote{Group: 0x33ba0247, Lvl: 0}}.
//
//   - Task is the comm, right-aligned in 16 columns; it may hold blanks and
//     dashes ("kworker/u32:1-123" is task "kworker/u32:1", PID 123): the PID
//     is the last "-NNN" before " [CPU]".
//   - CPU has three or more digits.
//   - Flags are the five latency characters (irqs-off, need-resched,
//     hard/softirq, preempt depth, migrate-disable; see Flags), four on older
//     kernels, absent when the irq-info option is off.
//   - TS is seconds.microseconds of the trace clock, kept as exact integer
//     nanoseconds; nine decimals (trace-cmd report of a nanosecond clock)
//     are read too.
//   - Data is the payload decoded into one struct per tracepoint
//     (TimerStart, HrtimerStart, TmigrCPUIdle, ...; see Events). Pointers
//     (%p, hashed) are uint64, %0x masks are unsigned integers, times are
//     jiffies (uint64) for the wheel and nanoseconds (int64, KtimeMax for
//     KTIME_MAX) for hrtimers and the hierarchy. Fields that newer kernels
//     add are tolerated; a missing field or a value that its printf
//     conversion cannot print is an error.
//
// Around the events the Reader understands the kernel's header comments
// ("# tracer: nop", "# entries-in-buffer/entries-written: 403/403   #P:2"
// and the column legend), the kernel's marker lines ("CPU:3 [LOST 12
// EVENTS]", "##### CPU 2 buffer started ####", returned as Lost and
// BufferStarted events), the boot message "Timer migration: 2 hierarchy
// levels; 8 children per group; 1 crossnode level" anywhere (see Hierarchy),
// and our own first line, which says what the recording ran on (see Machine
// and Isolation):
//
//	# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="isolcpus=1-7,9-15" busy=1-7,9-15 sleepers= (QEMU TCG)
//
// # Reading
//
//	r := ftrace.NewReader(f)
//	for {
//		ev, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		if err != nil {
//			return err // "line 123: timer_start: field "expires": "abc" is not a number"
//		}
//		switch p := ev.Data.(type) {
//		case ftrace.TimerStart:
//			// p.Expires, p.BucketExpiry, p.Idx, p.Flags ...
//		case ftrace.TmigrCPUIdle:
//			// p.CPU, p.NextEvt, p.Wakeup ...
//		case ftrace.Lost:
//			// ev.CPU dropped p.Count events here
//		}
//	}
//
// Events of other tracepoints (sched_switch, irq_handler_entry, ...) are
// skipped and counted (Reader.Skipped). Input that is not ftrace text at all
// fails at once with ErrNotFtrace; a malformed line is a *LineError naming
// the line and what is wrong, after which reading may go on.
//
// # Writing
//
// Writer prints the header block and event lines byte for byte as the
// kernel does: every line of the recordings in testdata/traces reads back
// and prints again unchanged.
package ftrace
