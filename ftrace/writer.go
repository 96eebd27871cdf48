package ftrace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Writer writes ftrace text in the kernel's format: the header block that
// /sys/kernel/tracing/trace prints, then one line per event.
type Writer struct {
	w    *bufio.Writer
	buf  []byte
	nano bool
	err  error
}

// NewWriter returns a Writer to w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10)}
}

// legend is the column legend of the kernel's trace file (5 latency flags).
const legend = `#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
`

// WriteHeader writes our "# machine:" line and the "Timer migration:" boot
// line when h has them (as comments), then the kernel's header:
//
//	# tracer: nop
//	#
//	# entries-in-buffer/entries-written: 403/403   #P:2
//	#
//	#                                _-----=> irqs-off/BH-disabled
//	...
//
// h.Entries must be the number of event lines that will follow (the Reader
// checks it); #P is h.CPUs, or the machine's CPUs when that is 0. The
// timestamps of later events get nine decimals if h.Nanoseconds.
func (w *Writer) WriteHeader(h Header) error {
	if w.err != nil {
		return w.err
	}
	cpus := h.CPUs
	if m := h.Machine; m != nil {
		if err := m.Validate(); err != nil {
			return err
		}
		if cpus == 0 {
			cpus = m.CPUs
		}
	}
	if cpus <= 0 {
		return errors.New("ftrace: header: unknown CPU count (set Header.CPUs or Header.Machine)")
	}
	if h.Entries < 0 || h.Written < h.Entries {
		return fmt.Errorf("ftrace: header: entries %d, written %d", h.Entries, h.Written)
	}
	tracer := h.Tracer
	if tracer == "" {
		tracer = "nop"
	}
	if strings.ContainsAny(tracer, " \n") {
		return fmt.Errorf("ftrace: header: tracer %q", tracer)
	}
	var b strings.Builder
	if m := h.Machine; m != nil {
		b.WriteString(machinePrefix)
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	if hy := h.Hierarchy; hy != nil {
		if err := hy.Validate(); err != nil {
			return err
		}
		b.WriteString("# ")
		b.WriteString(hy.String())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "# tracer: %s\n#\n# entries-in-buffer/entries-written: %d/%d   #P:%d\n#\n%s",
		tracer, h.Entries, h.Written, cpus, legend)
	w.nano = h.Nanoseconds
	_, w.err = w.w.WriteString(b.String())
	return w.err
}

// WriteEvent writes one event line (see AppendEvent).
func (w *Writer) WriteEvent(ev Event) error {
	if w.err != nil {
		return w.err
	}
	b, err := AppendEvent(w.buf[:0], ev, w.nano)
	if err != nil {
		return err
	}
	w.buf = b
	_, w.err = w.w.Write(b)
	return w.err
}

// Flush writes any buffered data to the underlying writer.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.err = w.w.Flush()
	return w.err
}

// WriteTrace writes a whole trace: h (with Entries and Written set to the
// number of tracepoint events when h.HasEntries is false) and events.
func WriteTrace(out io.Writer, h Header, events []Event) error {
	if !h.HasEntries {
		n := int64(0)
		for _, ev := range events {
			if ev.Name != "" || (ev.Data != nil && ev.Data.Name() != "") {
				n++
			}
		}
		h.Entries, h.Written = n, n
	}
	w := NewWriter(out)
	if err := w.WriteHeader(h); err != nil {
		return err
	}
	for _, ev := range events {
		if err := w.WriteEvent(ev); err != nil {
			return err
		}
	}
	return w.Flush()
}
