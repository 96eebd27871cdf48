package ftrace

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Time order. The kernel writes each CPU's events into that CPU's ring
// buffer in time order, and /sys/kernel/tracing/trace, trace_pipe and
// trace-cmd report merge the CPUs by time. Input out of that order is what
// a user makes by concatenating per-CPU files (per_cpu/cpuN/trace) or
// recordings: fed to a replay as it stands, it would make the model see
// time run backwards and report mismatches that are no fault of the model.
//
// So the Reader checks every event:
//
//   - An event earlier than the one before it on the same CPU can only be a
//     broken or spliced file: an error naming both lines, always.
//   - An event earlier than the latest of another CPU is an error for a
//     streaming Reader (NewReader), which has returned that one already;
//     the Reader of Open reads the whole input first and sorts it: by
//     time, then CPU (the kernel's merge takes the lowest CPU on a tie),
//     each CPU's events in their order, a Lost or BufferStarted marker
//     just before the next event of its CPU. Text gives microseconds:
//     events of different CPUs within one microsecond cannot be put in
//     the order the kernel's nanoseconds would; they come lowest CPU
//     first, whatever order the files were concatenated in.
//
// The traces of this module's simulator ("tmigr sim --trace") are exempt:
// their machine line says they are the simulator's, and it stamps a CPU's
// events out of order (a timer's expiry carries the time its callback ran,
// the hierarchy's events after it the tick's time). They are read as
// written, as before these checks, and the Source warns (simWarning) until
// the simulator stamps them in order.
//
// A full read-and-sort rather than a bounded window: per-CPU files
// concatenated are out of order across the whole file, and replay holds a
// recording in memory anyway.
type orderCheck struct {
	last    []int64 // per CPU: the latest event's time, -1 for none
	line    []int
	maxTS   int64 // the latest time of any CPU, and where
	maxLine int
	maxCPU  int
	any     bool
	// disorder is set when an event was earlier than another CPU's
	// latest: the sorter must sort.
	disorder bool
}

func (o *orderCheck) grow(cpu int) {
	for len(o.last) <= cpu {
		o.last = append(o.last, -1)
		o.line = append(o.line, 0)
	}
}

// check records ev, or says why it is out of order; strict refuses an
// event earlier than another CPU's latest.
func (o *orderCheck) check(ev Event, strict bool) error {
	o.grow(ev.CPU)
	if l := o.last[ev.CPU]; l > ev.TS {
		return fmt.Errorf("time goes backwards on CPU %d: %s after %s on line %d (a broken recording, or recordings spliced together?)",
			ev.CPU, FormatTS(ev.TS), FormatTS(l), o.line[ev.CPU])
	}
	if o.any && ev.TS < o.maxTS {
		if strict {
			return fmt.Errorf("out of time order: %s on CPU %d is earlier than %s on CPU %d (line %d) — per-CPU files concatenated? (ftrace.Open, and so tmigr, sorts such input)",
				FormatTS(ev.TS), ev.CPU, FormatTS(o.maxTS), o.maxCPU, o.maxLine)
		}
		o.disorder = true
	}
	o.last[ev.CPU], o.line[ev.CPU] = ev.TS, ev.Line
	if !o.any || ev.TS >= o.maxTS {
		o.maxTS, o.maxLine, o.maxCPU, o.any = ev.TS, ev.Line, ev.CPU, true
	}
	return nil
}

const simWarning = "the simulator's trace: its events are not stamped in time order on each CPU, and are read as written"

// simTrace reports whether a machine line is the one the simulator writes
// (sim/trace.go: kernel "VERSION-tmigr-sim", note "tmigr sim, ...").
func simTrace(m Machine) bool {
	return strings.HasSuffix(m.Kernel, "-tmigr-sim") && strings.HasPrefix(m.Note, "tmigr sim")
}

// cpusSeen is the number of CPUs with events.
func (o *orderCheck) cpusSeen() int {
	n := 0
	for _, t := range o.last {
		if t >= 0 {
			n++
		}
	}
	return n
}

// marker notes a Lost or BufferStarted line of cpu.
func (o *orderCheck) marker(cpu int) { o.grow(cpu) }

// sorter holds the whole input, sorted, for Next to return.
type sorter struct {
	events []Event
	pos    int
	err    error // what ends the input: io.EOF or the first error
	loaded bool
}

func (s *sorter) next(r *Reader) (Event, error) {
	if !s.loaded {
		s.load(r)
	}
	if s.pos < len(s.events) {
		ev := s.events[s.pos]
		s.events[s.pos] = Event{}
		s.pos++
		return ev, nil
	}
	return Event{}, s.err
}

// load reads the input to its end, or to its first error: a Reader that
// sorts cannot return an error in its place among the events, so an input
// with any error is refused as a whole.
func (s *sorter) load(r *Reader) {
	s.loaded = true
	for {
		ev, err := r.next()
		if err != nil {
			s.err = err
			if err != io.EOF {
				s.events = nil
				return
			}
			break
		}
		s.events = append(s.events, ev)
	}
	if r.order.disorder {
		sortEvents(s.events)
	}
	if r.format == FormatReport {
		checkReportFlags(s.events, &r.source)
	}
}

// sortEvents sorts events by time and CPU, stably; a marker sorts with
// the next event of its CPU (or goes last when there is none) and takes
// the time of the event before it.
func sortEvents(events []Event) {
	type keyed struct {
		key int64
		ev  Event
	}
	ks := make([]keyed, len(events))
	next := map[int]int64{} // CPU -> time of its next event
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		key := ev.TS
		if ev.Name == "" {
			if t, ok := next[ev.CPU]; ok {
				key = t
			} else {
				key = 1<<63 - 1
			}
		} else {
			next[ev.CPU] = ev.TS
		}
		ks[i] = keyed{key, ev}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.ev.CPU, b.ev.CPU))
	})
	var last int64
	for i, k := range ks {
		ev := k.ev
		if ev.Name == "" {
			ev.TS = last
		} else {
			last = ev.TS
		}
		events[i] = ev
	}
}
