package ftrace

import "strconv"

// Event is one line of the trace: a tracepoint hit, or a marker line the
// kernel inserts (Lost, BufferStarted).
type Event struct {
	Line    int    // 1-based line number in the input; 0 for an event not read from one
	Task    string // the task's comm as recorded ("<idle>", "kworker/u32:1", "<...>" if unknown)
	PID     int
	CPU     int
	Flags   Flags  // the latency flags ("d..2."); "" when the trace has none
	TS      int64  // nanoseconds of the trace clock (secs*1e9 + usecs*1e3)
	Name    string // the tracepoint ("timer_start"); "" for a marker line
	Payload string // the text after "name: ", as printed (a trace.dat record's: as the kernel prints it)
	Data    Payload
}

// Flags is the latency-format field of an event line, as trace_output.c
// prints it: five characters on current kernels, four before the
// migrate-disable column was added, none with the irq-info option off.
//
//	d..2.
//	||||`- migrate-disable depth, hex digit or '.'
//	|||`-- preempt depth, hex digit or '.'
//	||`--- 'h' hardirq, 's' softirq, 'H' hardirq in softirq, 'z' NMI, 'Z' NMI in hardirq
//	|`---- need-resched: 'N', 'n', 'p', 'L', 'l', 'B', 'b' or '.'
//	`----- 'd' irqs off, 'D' irqs and BH off, 'b' BH off, 'X' unknown
//
// The PREEMPT_RT patch set of the 6.1 series (Debian's rt-amd64 6.1) adds
// two columns of its lazy preemption, seven characters in all: a
// need-resched-lazy flag after need-resched, and the preempt-lazy depth
// after the preempt depth ("d..h1..": irqs off, hardirq, preempt depth 1).
type Flags string

// ctx is the index of the hardirq/softirq column.
func (f Flags) ctx() int {
	if len(f) == 7 {
		return 3
	}
	return 2
}

// IRQsOff reports whether interrupts were disabled.
func (f Flags) IRQsOff() bool { return len(f) > 0 && (f[0] == 'd' || f[0] == 'D') }

// NeedResched reports whether any need-resched flag was set.
func (f Flags) NeedResched() bool { return len(f) > 1 && f[1] != '.' }

// HardIRQ reports whether the event fired in hard interrupt context.
func (f Flags) HardIRQ() bool {
	i := f.ctx()
	return len(f) > i && (f[i] == 'h' || f[i] == 'H' || f[i] == 'Z')
}

// SoftIRQ reports whether the event fired in softirq context (timer
// callbacks of the wheel run there, from TIMER_SOFTIRQ).
func (f Flags) SoftIRQ() bool {
	i := f.ctx()
	return len(f) > i && (f[i] == 's' || f[i] == 'H')
}

// NMI reports whether the event fired in NMI context.
func (f Flags) NMI() bool {
	i := f.ctx()
	return len(f) > i && (f[i] == 'z' || f[i] == 'Z')
}

// PreemptDepth is the preempt count's low nibble (0 for '.').
func (f Flags) PreemptDepth() int {
	if i := f.ctx() + 1; len(f) > i {
		return hexDigit(f[i])
	}
	return 0
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return 0
}

// checkFlags reports why s cannot be a latency-flags field, or "".
func checkFlags(s string) string {
	if len(s) != 4 && len(s) != 5 && len(s) != 7 {
		return "is not 4, 5 or 7 flag characters"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '.' && (c < '0' || c > '9') && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return "is not 4, 5 or 7 flag characters"
		}
	}
	return ""
}

// Lost is the kernel's "CPU:3 [LOST 12 EVENTS]" line: the ring buffer of
// that CPU (Event.CPU) overflowed and dropped events just before the next
// event of that CPU. The event's TS is that of the line before (the loss
// happened no later than the next event).
type Lost struct {
	Count int64 // events dropped; -1 for "[LOST EVENTS]", an unknown number
}

// BufferStarted is the kernel's "##### CPU 2 buffer started ####" line,
// printed when the buffers overran: events of that CPU (Event.CPU) before it
// were overwritten. The event's TS is that of the line before.
type BufferStarted struct{}

// Name is "" for a marker line.
func (Lost) Name() string { return "" }

// Name is "" for a marker line.
func (BufferStarted) Name() string { return "" }

// appendTo appends the part of the marker line after "CPU:N ":
// "[LOST 12 EVENTS]".
func (l Lost) appendTo(b []byte) ([]byte, error) {
	if l.Count < -1 {
		return b, &FieldError{Event: "LOST", Field: "count", Value: strconv.FormatInt(l.Count, 10), Reason: "is negative"}
	}
	if l.Count == -1 {
		return append(b, "[LOST EVENTS]"...), nil
	}
	b = append(b, "[LOST "...)
	b = strconv.AppendInt(b, l.Count, 10)
	return append(b, " EVENTS]"...), nil
}
