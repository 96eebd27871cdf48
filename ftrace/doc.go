// Package ftrace reads and writes the kernel's ftrace text — what
// /sys/kernel/tracing/trace and "trace-cmd report" print — for the timer and
// timer_migration trace events, and reads trace-cmd's trace.dat (with
// package tracedat), so that recorded kernel runs can be replayed against
// our model and the simulator's own events can be written in the same
// format.
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
// Open reads a trace in any form users have one (see Format): the kernel's
// text as above; trace-cmd report's text, whose own forms report.go lists
// (buffer-name prefixes, -l columns, nanoseconds, "[N EVENTS DROPPED]",
// the hrtimer plugin's payloads, "0x" pointers); or trace-cmd's binary
// trace.dat, versions 6 and 7, read by package tracedat, whose records'
// fields are read at the offsets of the file's own event formats into the
// same payload types, with the same checks, so that it gives the events of
// its text. One table (table.go) says for every tracepoint which fields it
// has, how the kernel prints each and which record field holds it. Any of
// them may be gzip-compressed; "-" is standard input. The Source says what
// was found.
//
//	r, closer, err := ftrace.Open(path) // "-": standard input
//	if err != nil {
//		return err // "x.json: line 1: not ftrace text: JSON"
//	}
//	defer closer.Close()
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
//			// ev.CPU dropped p.Count events here (-1: how many is unknown)
//		}
//	}
//
// Events come in time order. Each CPU's events must be in order already —
// one going backwards is an error naming both lines — while text whose
// CPUs are interleaved out of order (per-CPU files concatenated) is sorted
// by Open within a window of DefaultWindow events, or refused with Refuse
// (OpenWith; see order.go); NewReader, which streams without holding
// anything back (a live trace_pipe), refuses it, naming the line. ReadAll
// reads a whole recording into memory, for checks that need it at once.
//
// Lost events. A Lost event says that the kernel dropped events of its CPU
// (Event.CPU) between that CPU's previous event and its next one, which
// follows the Lost event in the stream: Count of them, -1 when the trace
// does not say how many. It comes from the kernel's "CPU:3 [LOST 12
// EVENTS]", trace-cmd report's "CPU:3 [12 EVENTS DROPPED]" and a trace.dat
// page's missed-events flag. BufferStarted is the kernel's "##### CPU 2
// buffer started ####": that CPU's earlier events were overwritten, its
// recording starts here. Both carry the time of the event before them. A
// model replaying the trace must treat the state of that CPU, and whatever
// its lost events could have changed (its timers, its hierarchy groups), as
// unknown from its previous event until the trace shows it again.
// Stats counts both kinds.
//
// What a text lacks is marked, not invented: an HrtimerStart of trace-cmd's
// hrtimer plugin has no mode (NoMode), a TimerStart of trace-cmd report
// whose flags libtraceevent misprints has FlagsUnknown, a line without
// latency flags has Flags "".
//
// NewReader reads the kernel's text (and trace-cmd report's) from a stream
// as it comes, without sorting:
//
//	r := ftrace.NewReader(f)
//
// Events of other tracepoints (sched_switch, irq_handler_entry, ...) are
// skipped and counted (Reader.Skipped). Input that is not ftrace text at all
// fails at once with ErrNotFtrace; a malformed line is a *LineError naming
// the line and what is wrong, after which NewReader's reading may go on
// (Open's stops: it does not return part of an input it cannot read).
//
// # Writing
//
// Writer prints the header block and event lines byte for byte as the
// kernel does: every line of the recordings in testdata/traces reads back
// and prints again unchanged.
package ftrace
