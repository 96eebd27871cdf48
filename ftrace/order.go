package ftrace

import (
	"fmt"
	"io"
	"math"
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
//     streaming Reader (NewReader), which has returned that one already,
//     and for a Reader of Open with Refuse. With Sort (Open's default), the
//     Reader holds back the latest Window events and puts a late one in
//     its place among them by time, each CPU's events in their order, a
//     Lost or BufferStarted marker just before the next event of its CPU.
//     Text gives microseconds: within one microsecond, the events that
//     came in order keep the order they came in, which is the kernel's
//     nanosecond order (the merge of trace and trace_pipe), and a late
//     one goes before those of higher CPUs (after its own CPU's): per-CPU
//     files concatenated come out lowest CPU first on a tie, the kernel's
//     merge's rule for equal stamps. Input in order comes out as it was
//     read. Late events are not only spliced files: trace_pipe, read
//     while the kernel writes, now and then hands out an event of one CPU
//     after a later one of another (an interrupt's event committed late),
//     and a sort of every tie by CPU would undo the order of the rest,
//     which the replay reads.
//
// The traces of this module's simulator ("tmigr sim --trace") are exempt:
// their machine line says they are the simulator's, and it stamps a CPU's
// events out of order (a timer's expiry carries the time its callback ran,
// the hierarchy's events after it the tick's time). They are read as
// written, as before these checks, and the Source warns (simWarning) until
// the simulator stamps them in order.
//
// A bounded window rather than a read-and-sort of the whole input: a
// recording of a big machine holds millions of events, and what reads it
// (replay, explain, top) streams. The kernel's merged trace and a
// trace.dat are in order; per-CPU files concatenated are out of order
// across the whole file, and read whole only when the window holds the
// file (DefaultWindow events, so the per-CPU files of a few seconds of a
// small machine): beyond it, the late event is an error naming its line
// that says to merge them first.
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
func (o *orderCheck) check(ev *Event, strict bool) error {
	o.grow(ev.CPU)
	if l := o.last[ev.CPU]; l > ev.TS {
		return fmt.Errorf("time goes backwards on CPU %d: %s after %s on line %d (a broken recording, or recordings spliced together?)",
			ev.CPU, FormatTS(ev.TS), FormatTS(l), o.line[ev.CPU])
	}
	if o.any && ev.TS < o.maxTS {
		if strict {
			return fmt.Errorf("out of time order: %s on CPU %d is earlier than %s on CPU %d (line %d) — per-CPU files concatenated? (ftrace.Open with Sort, and so tmigr, sorts such input)",
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

// Order is what a Reader of Open does with an event earlier than one of
// another CPU that it has read already.
type Order int

const (
	// Sort puts it in its place among the Window events held back.
	Sort Order = iota
	// Refuse ends the reading with an error naming its line.
	Refuse
)

// DefaultWindow is the number of events a Reader of Open holds back to
// sort by default: about 10 MB of events, and the whole of the per-CPU
// files of several seconds of a small machine.
const DefaultWindow = 1 << 16

// OpenOptions are the choices of OpenWith.
type OpenOptions struct {
	Order Order
	// Window is the number of events Sort holds back (0: DefaultWindow).
	Window int
}

// window delivers a Reader's events in time order (Sort) while holding at
// most size of them, or refuses the first out of order (Refuse). Until an
// event comes out of order, events leave in the order they came; from the
// first one, sorted: by time, then CPU, then the order they came in, a
// marker keyed by the next event of its CPU.
type window struct {
	size   int
	refuse bool
	fifo   ring    // in arrival order, until the first disorder
	heap   []keyed // in sort order, from then on
	sorted bool
	// ties holds, sorted, the places of the held events of each key, in
	// order; maxKey is the latest key placed.
	ties   map[int64][]*tieNode
	maxKey int64
	placed bool
	// markers waits, per CPU, for that CPU's next event, whose time is
	// their key.
	markers map[int][]keyed
	seq     int64
	// last is the key of the event last returned (math.MinInt64 before
	// one), lastTS the time of the last tracepoint event returned: a
	// marker returned sorted takes it.
	last, lastTS int64
	lastLine     int
	released     bool
	err          error // what ends the input: io.EOF or the first error
}

type keyed struct {
	key int64
	seq int64
	tie *tieNode // sorted: its place among the held events of its key
	ev  Event
}

// tieNode is a held event's place among the held events of one key (the
// time order note above): rank orders them, renumbered when an event is
// put in among them.
type tieNode struct {
	rank int
	cpu  int
}

func (a keyed) less(b keyed) bool {
	if a.key != b.key {
		return a.key < b.key
	}
	if a.tie != nil && b.tie != nil {
		return a.tie.rank < b.tie.rank
	}
	return a.seq < b.seq
}

func newWindow(o OpenOptions) *window {
	n := o.Window
	if n <= 0 {
		n = DefaultWindow
	}
	if o.Order == Refuse {
		// Nothing to sort: each event leaves as it comes.
		n = 0
	}
	return &window{size: n, refuse: o.Order == Refuse}
}

func (w *window) held() int { return w.fifo.n + len(w.heap) }

// ring is a queue of events in a ring buffer: a window in order moves
// each event once.
type ring struct {
	buf  []keyed // len a power of two
	head int
	n    int
}

func (q *ring) push(k keyed) {
	if q.n == len(q.buf) {
		nb := make([]keyed, max(2*len(q.buf), 64))
		for i := 0; i < q.n; i++ {
			nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = k
	q.n++
}

func (q *ring) pop() keyed {
	k := q.buf[q.head]
	q.buf[q.head] = keyed{}
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return k
}

// at returns the i-th event held, for changing it in place.
func (q *ring) at(i int) *keyed { return &q.buf[(q.head+i)&(len(q.buf)-1)] }

// drain returns the events held, in order, and empties q.
func (q *ring) drain() []keyed {
	out := make([]keyed, q.n)
	for i := range out {
		out[i] = q.pop()
	}
	*q = ring{}
	return out
}

func (w *window) next(r *Reader) (Event, error) {
	if w.passes(r) {
		return r.next()
	}
	for w.err == nil && (w.held() == 0 || w.held() <= w.size && !r.asWritten || r.format == FormatReport) {
		ev, err := r.next()
		if err != nil {
			w.end(r, err)
			break
		}
		if err := w.add(r, ev); err != nil {
			w.end(r, err)
			break
		}
	}
	if ev, ok := w.pop(); ok {
		return ev, nil
	}
	return Event{}, w.err
}

// passes reports whether the next event passes through the window as it
// is read: the simulator's trace is read as written, with nothing held.
func (w *window) passes(r *Reader) bool {
	return r.asWritten && w.held() == 0 && r.format != FormatReport
}

// end notes what ended the input. A Reader that sorts cannot return an
// error in its place among the events: the events held are dropped.
func (w *window) end(r *Reader, err error) {
	w.err = err
	if err != io.EOF {
		w.fifo, w.heap, w.markers = ring{}, nil, nil
		return
	}
	if r.format == FormatReport {
		// Whether every timer_start shows D|P|I is a question of the
		// whole report; it is held whole for it.
		evs := make([]Event, 0, w.held())
		for i := 0; i < w.fifo.n; i++ {
			evs = append(evs, w.fifo.at(i).ev)
		}
		for _, k := range w.heap {
			evs = append(evs, k.ev)
		}
		checkReportFlags(evs, &r.source)
		i := 0
		for j := 0; j < w.fifo.n; j++ {
			w.fifo.at(j).ev = evs[i]
			i++
		}
		for j := range w.heap {
			w.heap[j].ev = evs[i]
			i++
		}
	}
	// Markers whose CPU has no later event go last.
	cpus := make([]int, 0, len(w.markers))
	for cpu := range w.markers {
		cpus = append(cpus, cpu)
	}
	slices.Sort(cpus)
	for _, cpu := range cpus {
		for _, k := range w.markers[cpu] {
			k.key = math.MaxInt64
			k.tie = w.tieIn(k.key, cpu, false)
			w.push(k)
		}
	}
	w.markers = nil
}

// add takes in one event the Reader read; the Reader has checked it
// against its CPU's events and noted, in r.order.disorder, whether any
// event so far came earlier than another CPU's latest.
func (w *window) add(r *Reader, ev Event) error {
	k := keyed{key: ev.TS, seq: w.seq, ev: ev}
	w.seq++
	if !w.sorted && r.order.disorder {
		if w.refuse {
			return w.refusal(r, ev)
		}
		w.sorted = true
		held := w.fifo.drain()
		w.heap = make([]keyed, 0, len(held)+1)
		for _, k := range held {
			if err := w.place(r, k); err != nil {
				return err
			}
		}
	}
	if !w.sorted {
		w.fifo.push(k)
		return nil
	}
	return w.place(r, k)
}

// place puts k among the events held sorted; a marker waits for the next
// event of its CPU.
func (w *window) place(r *Reader, k keyed) error {
	ev := k.ev
	if ev.Name == "" {
		if w.markers == nil {
			w.markers = map[int][]keyed{}
		}
		w.markers[ev.CPU] = append(w.markers[ev.CPU], k)
		return nil
	}
	if w.released && k.key < w.last {
		return &LineError{Line: ev.Line, Unit: r.unit, Err: fmt.Errorf(
			"out of time order by more than the %d events held to sort: %s on CPU %d is earlier than %s (line %d), already read (per-CPU files concatenated? read the merged trace, or a trace.dat)",
			w.size, FormatTS(ev.TS), ev.CPU, FormatTS(w.last), w.lastLine)}
	}
	late := w.placed && k.key < w.maxKey
	if !w.placed || k.key > w.maxKey {
		w.maxKey, w.placed = k.key, true
	}
	for _, m := range w.markers[ev.CPU] {
		m.key = ev.TS
		m.tie = w.tieIn(m.key, ev.CPU, late)
		w.push(m)
	}
	delete(w.markers, ev.CPU)
	k.tie = w.tieIn(k.key, ev.CPU, late)
	w.push(k)
	return nil
}

// tieIn gives an event of cpu its place among the held events of key: an
// event that came in order after every one of them; a late one after its
// own CPU's and the lower CPUs' events among them, before the first of a
// higher CPU (see the time order note).
func (w *window) tieIn(key int64, cpu int, late bool) *tieNode {
	if w.ties == nil {
		w.ties = map[int64][]*tieNode{}
	}
	l := w.ties[key]
	p := len(l)
	if late {
		p = 0
		for i, n := range l {
			if n.cpu == cpu {
				p = i + 1
			}
		}
		for p < len(l) && l[p].cpu < cpu {
			p++
		}
	}
	n := &tieNode{cpu: cpu}
	l = slices.Insert(l, p, n)
	for i, x := range l {
		x.rank = i
	}
	w.ties[key] = l
	return n
}

// refusal is Refuse's error for ev, which came earlier than another CPU's
// latest event.
func (w *window) refusal(r *Reader, ev Event) error {
	o := &r.order
	return &LineError{Line: ev.Line, Unit: r.unit, Err: fmt.Errorf(
		"out of time order: %s on CPU %d is earlier than %s on CPU %d (line %d) — per-CPU files concatenated? (read with ftrace.Sort, as tmigr does, to sort such input)",
		FormatTS(ev.TS), ev.CPU, FormatTS(o.maxTS), o.maxCPU, o.maxLine)}
}

// pop returns the next event to deliver, if any is held.
func (w *window) pop() (Event, bool) {
	var k keyed
	switch {
	case w.fifo.n > 0:
		k = w.fifo.pop()
	case len(w.heap) > 0:
		k = w.heap[0]
		n := len(w.heap) - 1
		w.heap[0] = w.heap[n]
		w.heap[n] = keyed{}
		w.heap = w.heap[:n]
		w.down(0)
		// The first of its key: its place leaves the key's list.
		if l := w.ties[k.key]; len(l) <= 1 {
			delete(w.ties, k.key)
		} else {
			w.ties[k.key] = l[1:]
		}
		if k.ev.Name == "" {
			k.ev.TS = w.lastTS
		}
	default:
		return Event{}, false
	}
	if k.ev.Name != "" {
		w.lastTS = k.ev.TS
	}
	w.released = true
	if k.key > w.last || k.key == math.MaxInt64 {
		w.last, w.lastLine = k.key, k.ev.Line
	}
	return k.ev, true
}

func (w *window) push(k keyed) {
	w.heap = append(w.heap, k)
	i := len(w.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !w.heap[i].less(w.heap[p]) {
			break
		}
		w.heap[i], w.heap[p] = w.heap[p], w.heap[i]
		i = p
	}
}

func (w *window) down(i int) {
	n := len(w.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && w.heap[r].less(w.heap[l]) {
			m = r
		}
		if !w.heap[m].less(w.heap[i]) {
			return
		}
		w.heap[i], w.heap[m] = w.heap[m], w.heap[i]
		i = m
	}
}
