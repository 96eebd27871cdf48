package ftrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"unsafe"

	"github.com/tmigr/tmigr/cpumask"
)

// ErrNotFtrace is wrapped by the error for input that is not ftrace text at
// all (a trace.dat, JSON, an image, an empty file): the Reader gives up at
// the first line that proves it, instead of reporting every line.
var ErrNotFtrace = errors.New("not ftrace text")

// MaxLineLen is the longest line the Reader accepts.
const MaxLineLen = 64 << 10

// Reader reads ftrace text: header comments, event lines, and the marker
// lines the kernel inserts. It streams: it reads its input a buffer (64 KiB)
// at a time, returns each event as soon as its line is complete (so it can
// follow a live trace_pipe), and keeps no state beyond the header and the
// counters. The strings of an event (Task, Payload, a Function) are slices
// of the buffer they were read in, which stays alive as long as they do.
type Reader struct {
	src  io.Reader
	text string // the text read and not yet returned is text[pos:]
	pos  int
	eof  bool  // src is exhausted
	rerr error // src failed
	line int   // lines read
	hdr  Header
	dec  dec
	// heads: the last line heads read (parseLine).
	heads heads

	sniffed     bool
	seen        bool  // something only ftrace text holds was read
	entryLines  int64 // event lines, decoded or skipped: what Entries counts
	entriesLine int   // the line of the "# entries-in-buffer" comment
	digits      int   // decimals of the timestamps so far
	lastTS      int64
	stats       Stats
	err         error // sticky: the input cannot be read further

	format Format     // what the input looks like so far
	unit   string     // what LineError.Line counts ("record" for a trace.dat)
	order  orderCheck // time order of the events returned
	dat    *datSource // set when reading a trace.dat
	win    *window    // set for a Reader of Open: it sorts or refuses events out of order
	source Source
	// asWritten turns the time-order checks off: the trace is our
	// simulator's (simTrace).
	asWritten bool
	// live lets an event earlier than another CPU's latest through (see
	// NewLiveReader).
	live bool
	// keep, set while ReadAll reads, copies what an event keeps of its
	// line as the event is read, which lets fill reuse kept, the buffer
	// that it read while keep was set, for the next text.
	keep *keeper
	kept []byte
}

// Stats counts what the Reader has read so far.
type Stats struct {
	Lines       int            // lines read
	Events      int            // events returned by Next (markers included)
	Skipped     map[string]int // event lines of tracepoints this package does not decode, by name ("<function>" for the function tracer's)
	Lost        int64          // events the kernel reported lost ("CPU:3 [LOST 12 EVENTS]")
	LostUnknown int            // "CPU:3 [LOST EVENTS]" lines, which give no count
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r}
}

// NewLiveReader returns a Reader of a live stream: tracefs's trace_pipe,
// as it is written. The kernel merges the per-CPU buffers by time as it
// reads them, but an event a CPU commits after the reader has passed its
// time comes out after later events of other CPUs: a live Reader returns
// it in arrival order where NewReader's would refuse it. An event earlier
// than one of its own CPU is still an error.
func NewLiveReader(r io.Reader) *Reader {
	return &Reader{src: r, live: true}
}

// Header returns what the header lines said so far; it is complete once Next
// has returned the first event. The Machine and Hierarchy it points to must
// not be modified.
func (r *Reader) Header() Header { return r.hdr }

// Skipped returns how many event lines of each unknown tracepoint were
// skipped so far.
func (r *Reader) Skipped() map[string]int { return maps.Clone(r.stats.Skipped) }

// Stats returns the counters so far.
func (r *Reader) Stats() Stats {
	s := r.stats
	s.Skipped = maps.Clone(s.Skipped)
	return s
}

// Next returns the next event: a tracepoint this package decodes (Data is
// its typed payload), or a Lost or BufferStarted marker. It skips comments,
// blank lines and events of other tracepoints (counting those), and returns
// io.EOF at the end.
//
// Every other error is a *LineError. After one caused by a malformed line,
// Next continues with the following line; errors that make the rest of the
// input unreadable (not ftrace text, a bad "# machine:" line, a truncated
// last line, a read error, fewer events than the header announced) are
// returned again by every later call.
//
// Events come in time order or not at all: an event earlier than one of its
// own CPU is an error naming both lines, and so (for a Reader of NewReader,
// which streams) is an event earlier than one of another CPU already
// returned. The Reader of Open sorts such input instead, or refuses it
// (see Open and Order).
func (r *Reader) Next() (Event, error) {
	if r.win != nil {
		return r.win.next(r)
	}
	return r.next()
}

// nextTo is Next into *ev, which it leaves undefined on an error: an
// event that passes through the window is parsed in the place it is kept
// (Keeping.Read), not copied there from each function that makes it.
func (r *Reader) nextTo(ev *Event) error {
	if r.win != nil && !r.win.passes(r) {
		e, err := r.win.next(r)
		*ev = e
		return err
	}
	return r.nextInto(ev)
}

// next is Next without sorting.
func (r *Reader) next() (Event, error) {
	var ev Event
	if err := r.nextInto(&ev); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// nextInto is next into *ev, which it leaves undefined on an error.
func (r *Reader) nextInto(ev *Event) error {
	if r.err != nil {
		return r.err
	}
	if r.dat != nil {
		e, err := r.dat.next(r)
		*ev = e
		return err
	}
	for {
		raw, err := r.readLine()
		if err != nil {
			r.err = err
			return err
		}
		ok, err := r.handle(raw, ev)
		if err != nil {
			return err
		}
		if ok {
			r.stats.Events++
			if r.keep != nil {
				r.keep.detach(ev, true)
			}
			return nil
		}
	}
}

func (r *Reader) lineErr(err error) error { return &LineError{Line: r.line, Err: err, Unit: r.unit} }

// fatal makes err sticky.
func (r *Reader) fatal(err error) error {
	r.err = r.lineErr(err)
	return r.err
}

func notFtrace(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotFtrace, fmt.Sprintf(format, args...))
}

// readLine returns the next line without its line end. Lines are
// substrings of text, which holds a whole buffer of input: one allocation per
// fill rather than per line, and the strings of the events point into it.
func (r *Reader) readLine() (string, error) {
	if !r.sniffed {
		r.sniffed = true
		r.fill()
		if why := sniff(r.text); why != "" {
			return "", &LineError{Line: 1, Err: notFtrace("%s", why)}
		}
	}
	for {
		rest := r.text[r.pos:]
		i := strings.IndexByte(rest, '\n')
		if i > MaxLineLen || i < 0 && len(rest) > MaxLineLen {
			r.line++
			if !r.seen {
				return "", r.lineErr(notFtrace("a line longer than %d bytes", MaxLineLen))
			}
			return "", r.lineErr(fmt.Errorf("line longer than %d bytes", MaxLineLen))
		}
		if i >= 0 {
			r.pos += i + 1
			r.line++
			r.stats.Lines = r.line
			l := rest[:i]
			if n := len(l); n > 0 && l[n-1] == '\r' {
				l = l[:n-1]
			}
			return l, nil
		}
		if r.rerr != nil {
			return "", &LineError{Line: r.line + 1, Err: fmt.Errorf("read: %w", r.rerr)}
		}
		if r.eof {
			if rest == "" {
				return "", r.atEOF()
			}
			r.line++
			if !r.seen && classify(rest) == kindOther {
				return "", r.lineErr(r.notFtraceLine(rest))
			}
			return "", r.lineErr(errors.New("truncated: the last line has no newline (file cut mid-line?)"))
		}
		r.fill()
	}
}

// fillSize is how much a fill reads at least, when the input has it.
const fillSize = 64 << 10

// fill appends input to the unread text until it holds a line end, fills a
// buffer, or the input ends; a stream's line is returned as soon as it is
// complete.
func (r *Reader) fill() {
	rest := r.text[r.pos:]
	// A new buffer each time, never written once it is the text: the
	// text is its bytes, not a copy of them (the lines, and what the
	// events keep of them, are slices of it). A keeping Reader's lines
	// leave nothing of theirs behind (own), so that it reads every buffer
	// after the first into the one before: the recording's text is not
	// left behind for the collector, only a buffer of it. (copy, which
	// append is, moves the unread rest to the front of its own buffer.)
	var b []byte
	switch {
	case r.keep == nil:
		b = append(make([]byte, 0, len(rest)+fillSize), rest...)
	case cap(r.kept) >= len(rest)+fillSize:
		b = append(r.kept[:0], rest...)
	default:
		// Room for the rest of a line of any length the next time.
		b = append(make([]byte, 0, len(rest)+fillSize+MaxLineLen), rest...)
	}
	if r.keep != nil {
		r.kept = b
	}
	start := len(b)
	for empty := 0; len(b) < cap(b) && !r.eof && r.rerr == nil; {
		n, err := r.src.Read(b[len(b):cap(b)])
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				r.rerr = io.ErrNoProgress
			}
			continue
		}
		if n > 0 && bytes.IndexByte(b[len(b):len(b)+n], '\n') >= 0 {
			b = b[:len(b)+n]
			if err == io.EOF {
				r.eof = true
			} else if err != nil {
				r.rerr = err
			}
			break
		}
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			r.eof = true
		case err != nil:
			r.rerr = err
		}
	}
	if len(b) > start || r.pos > 0 {
		r.text, r.pos = unsafe.String(unsafe.SliceData(b), len(b)), 0
	}
}

// atEOF checks the file as a whole at its end.
func (r *Reader) atEOF() error {
	if !r.seen {
		return &LineError{Line: max(r.line, 1), Err: notFtrace("no ftrace header and no event lines")}
	}
	if r.hdr.HasEntries && r.entryLines != r.hdr.Entries {
		why := "truncated or edited?"
		if r.entryLines < r.hdr.Entries && r.hdr.CPUs > 1 && r.order.cpusSeen() == 1 {
			// The kernel's per_cpu/cpuN/trace: its header counts the
			// events of every CPU. Such a file cannot be told from a
			// cut one; concatenated with the others, it reads.
			why = "truncated, or one CPU's file per_cpu/cpuN/trace, whose header counts every CPU's events: read all CPUs' files together"
		}
		return &LineError{Line: r.entriesLine, Err: fmt.Errorf(
			"the header announces %d entries, the file holds %d (%s)", r.hdr.Entries, r.entryLines, why)}
	}
	return io.EOF
}

// sniff names binary formats people mistake for a trace by their first bytes.
func sniff(head string) string {
	switch {
	case strings.HasPrefix(head, "\x17\x08\x44tracing"):
		return "a trace-cmd trace.dat (binary): read it with ftrace.Open, or convert it with \"trace-cmd report\""
	case strings.HasPrefix(head, "\x89PNG"):
		return "a PNG image"
	case strings.HasPrefix(head, "\x1f\x8b"):
		return "gzip-compressed data; decompress it first"
	case strings.HasPrefix(head, "\x28\xb5\x2f\xfd"):
		return "zstd-compressed data; decompress it first"
	case strings.HasPrefix(head, "\xfd7zXZ"):
		return "xz-compressed data; decompress it first"
	case strings.HasPrefix(head, "\x7fELF"):
		return "an ELF binary"
	case strings.HasPrefix(head, "PERFILE"):
		return "a perf.data file; convert it with \"perf script\""
	}
	t := strings.TrimLeft(head, " \t\r\n")
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[{") || strings.HasPrefix(t, `["`) {
		return "JSON"
	}
	return ""
}

type lineKind int

const (
	kindOther lineKind = iota
	kindBlank
	kindComment
	kindEvent
)

// classify tells, cheaply and without judging the details, what a line
// looks like.
func classify(s string) lineKind {
	switch {
	case strings.TrimSpace(s) == "":
		return kindBlank
	case s[0] == '#':
		return kindComment
	}
	var ev Event
	if _, _, err := parseLine(s, &ev); !errors.Is(err, errNotEvent) {
		return kindEvent
	}
	return kindOther
}

func (r *Reader) notFtraceLine(s string) error {
	if i := controlChar(s); i >= 0 {
		return notFtrace("binary data (byte %#02x in line %d)", s[i], r.line)
	}
	return notFtrace("%q is neither a header comment nor an event line", clip(s))
}

// controlChar returns the index of the first control character (other than
// a tab) in b, or -1. It tests eight bytes at a time: every line is
// checked, so this is on the hot path.
func controlChar(b string) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		// One bounds check for the eight bytes, which the compiler then
		// loads as one word.
		c := b[i : i+8]
		w := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
			uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
		// A byte below 0x20, or a byte equal to 0x7f (a zero byte of
		// w^0x7f7f...); exact for bytes below 0x80, and bytes at or
		// above 0x80 never match.
		below := (w - 0x20*ones) &^ w & highs
		x := w ^ 0x7f*ones
		del := (x - ones) &^ x & highs
		if below|del != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return i
		}
	}
	return -1
}

// handle interprets one line into *ev (undefined unless ok). ok reports
// an event to return.
func (r *Reader) handle(s string, ev *Event) (ok bool, err error) {
	if i := controlChar(s); i >= 0 {
		if !r.seen {
			return false, r.fatal(r.notFtraceLine(s))
		}
		return false, r.lineErr(fmt.Errorf("control character %#02x at column %d", s[i], i+1))
	}
	if r.format == FormatReport {
		s = r.cutInstance(s)
	}
	out := eventOut{ev}
	switch {
	case len(s) == 0:
		return false, nil
	case s[0] == '#':
		return out.set(r.comment(r.own(s)))
	case strings.HasPrefix(s, "CPU:"):
		return out.set(r.lost(s))
	case strings.HasPrefix(s, " => "):
		// A frame of a stack trace, which follows a skipped
		// "<stack trace>" event.
		return false, nil
	}
	var h lineHead
	digits, tp, err := 0, false, r.heads.parse(s, &h)
	if err == nil {
		digits, tp, err = parseTail(s, &h, ev)
	}
	if errors.Is(err, errNotEvent) {
		// trace-cmd report -l: "record.s-10478   1d.h3.   503.191711: ..."
		e, d, t, ok := parseLatencyLine(s)
		if !ok {
			return out.set(r.other(r.own(s)))
		}
		*ev, digits, tp, err = e, d, t, nil
		r.sawReport()
	}
	if err != nil {
		return false, r.lineErr(err)
	}
	return r.accept(ev, digits, tp)
}

// eventOut is where handle puts the event of a line its other handlers
// (comment, lost, other) return.
type eventOut struct{ ev *Event }

func (o eventOut) set(e Event, ok bool, err error) (bool, error) {
	*o.ev = e
	return ok, err
}

// own returns a line that is no event, which the Reader may keep a part
// of (the header's), as a copy of its own while the Reader keeps events
// (its buffer is then read into again).
func (r *Reader) own(s string) string {
	if r.keep != nil {
		return strings.Clone(s)
	}
	return s
}

// accept checks and decodes a parsed event line.
func (r *Reader) accept(ev *Event, digits int, tp bool) (bool, error) {
	r.seen = true
	r.entryLines++
	ev.Line = r.line
	if m := r.hdr.Machine; m != nil && ev.CPU >= m.CPUs {
		return false, r.lineErr(fmt.Errorf("CPU %d outside the machine's %d CPUs", ev.CPU, m.CPUs))
	}
	switch r.digits {
	case 0:
		r.digits = digits
		r.hdr.Nanoseconds = digits == 9
	case digits:
	default:
		return false, r.lineErr(fmt.Errorf("timestamp with %d decimals after ones with %d", digits, r.digits))
	}
	if !r.asWritten {
		if err := r.order.check(ev, r.win == nil && !r.live); err != nil {
			return false, r.lineErr(err)
		}
	}
	r.lastTS = ev.TS
	p, known := ev.Data, ev.Data != nil // a trace.dat's record, decoded already
	if tp && !known {
		if r.format != FormatTraceDat {
			ev.Payload = normalizeReport(ev.Payload)
		}
		p, known = decode(&r.dec, ev.Name, ev.Payload)
	}
	if !known {
		if r.stats.Skipped == nil {
			r.stats.Skipped = map[string]int{}
		}
		name := ev.Name
		if !tp && name[0] != '<' {
			name = "<function>" // a line of the function tracer
		}
		if r.keep != nil {
			// The key outlives the line, and a map takes the key of
			// each assignment (a string key is replaced by the one
			// given), not only of the first.
			name = r.keep.syms.intern(name)
		}
		r.stats.Skipped[name]++
		return false, nil
	}
	if r.dec.err != nil {
		if r.format == FormatReport {
			return false, r.lineErr(fmt.Errorf("%w (trace-cmd report -R prints raw fields, which this reader does not decode: print the report without -R)", r.dec.err))
		}
		return false, r.lineErr(r.dec.err)
	}
	ev.Data = p
	ev.Name = p.Name()
	return true, nil
}

// other handles a line that is neither a comment nor an event.
func (r *Reader) other(s string) (Event, bool, error) {
	if strings.Contains(s, hierarchyPrefix) {
		return r.hierarchy(s)
	}
	if v, ok := strings.CutPrefix(s, "cpus="); ok {
		// trace-cmd report's first line.
		n, why := parseUint(v, 1<<20)
		if why != "" {
			return Event{}, false, r.lineErr(fmt.Errorf("cpus=%q %s", v, why))
		}
		r.seen = true
		r.sawReport()
		r.hdr.CPUs = int(n)
		return Event{}, false, nil
	}
	if v, ok := strings.CutPrefix(s, "version = "); ok && !r.seen {
		// Older trace-cmd report's first line: the trace.dat's version.
		if _, why := parseUint(v, 100); why == "" {
			r.seen = true
			r.sawReport()
			return Event{}, false, nil
		}
	}
	if strings.TrimSpace(s) == "" {
		return Event{}, false, nil
	}
	if !r.seen {
		return Event{}, false, r.fatal(r.notFtraceLine(s))
	}
	if strings.HasPrefix(s, "CPU ") && strings.HasSuffix(s, " is empty") {
		r.sawReport()
		return Event{}, false, nil // trace-cmd report
	}
	return Event{}, false, r.lineErr(errNotEvent)
}

func (r *Reader) hierarchy(s string) (Event, bool, error) {
	h, err := ParseHierarchy(s)
	if err != nil {
		return Event{}, false, r.lineErr(err)
	}
	if r.hdr.Hierarchy != nil && *r.hdr.Hierarchy != h {
		return Event{}, false, r.lineErr(fmt.Errorf("a second, different %q line", hierarchyPrefix))
	}
	r.hdr.Hierarchy = &h
	return Event{}, false, nil
}

func (r *Reader) comment(s string) (Event, bool, error) {
	if v, ok := strings.CutPrefix(s, "##### CPU "); ok {
		if v, ok = strings.CutSuffix(v, " buffer started ####"); ok {
			cpu, why := parseUint(v, cpumask.MaxCPUs-1)
			if why != "" {
				return Event{}, false, r.lineErr(fmt.Errorf("buffer started: CPU %q %s", v, why))
			}
			return r.marker(int(cpu), BufferStarted{})
		}
	}
	switch {
	case strings.HasPrefix(s, machinePrefix):
		if r.hdr.Machine != nil {
			return Event{}, false, r.fatal(errors.New("a second \"# machine:\" line"))
		}
		m, err := ParseMachine(s)
		if err != nil {
			return Event{}, false, r.fatal(err)
		}
		r.seen = true
		r.hdr.Machine = &m
		if simTrace(m) {
			r.asWritten = true
			r.source.Warnings = append(r.source.Warnings, simWarning)
		}
	case strings.HasPrefix(s, "# tracer: "):
		r.seen = true
		if r.format == FormatUnknown {
			r.format = FormatTracefs
		}
		r.hdr.Tracer = strings.TrimSpace(s[len("# tracer: "):])
	case strings.HasPrefix(s, "# entries-in-buffer/entries-written: "):
		if err := r.entries(s[len("# entries-in-buffer/entries-written: "):]); err != nil {
			return Event{}, false, r.lineErr(err)
		}
		r.seen = true
	case strings.Contains(s, hierarchyPrefix):
		return r.hierarchy(s)
	}
	return Event{}, false, nil
}

// entries parses "403/403   #P:2".
func (r *Reader) entries(s string) error {
	bad := fmt.Errorf("entries line %q is not \"ENTRIES/WRITTEN   #P:CPUS\"", clip(s))
	counts, cpus, ok := strings.Cut(s, "#P:")
	if !ok {
		return bad
	}
	e, w, ok := strings.Cut(strings.TrimSpace(counts), "/")
	if !ok {
		return bad
	}
	entries, why1 := parseUint(e, 1<<62)
	written, why2 := parseUint(w, 1<<62)
	n, why3 := parseUint(strings.TrimSpace(cpus), 1<<20)
	if why1 != "" || why2 != "" || why3 != "" {
		return bad
	}
	if r.hdr.HasEntries && (r.hdr.Entries != int64(entries) || r.hdr.Written != int64(written)) {
		// Files concatenated. The kernel's per_cpu/cpuN/trace files each
		// announce the counts of the whole buffer (equal lines, kept as
		// they are); other files' counts add up.
		entries += uint64(r.hdr.Entries)
		written += uint64(r.hdr.Written)
	}
	r.hdr.Entries, r.hdr.Written, r.hdr.CPUs, r.hdr.HasEntries = int64(entries), int64(written), int(n), true
	r.entriesLine = r.line
	return nil
}

// lost parses the kernel's "CPU:3 [LOST 12 EVENTS]" and "CPU:3 [LOST
// EVENTS]", and trace-cmd report's "CPU:3 [12 EVENTS DROPPED]", "CPU:3
// [EVENTS DROPPED]" and "CPU:3 [SUBBUFFER START]" (a page boundary, shown
// with --debug; skipped).
func (r *Reader) lost(s string) (Event, bool, error) {
	bad := fmt.Errorf("%q is not \"CPU:N [LOST M EVENTS]\" or \"CPU:N [M EVENTS DROPPED]\"", clip(s))
	cpuText, rest, ok := strings.Cut(s[len("CPU:"):], " ")
	if !ok {
		return Event{}, false, r.lineErr(bad)
	}
	cpu, why := parseUint(cpuText, cpumask.MaxCPUs-1)
	if why != "" {
		return Event{}, false, r.lineErr(bad)
	}
	if strings.HasPrefix(rest, "[SUBBUFFER START]") {
		r.sawReport()
		return Event{}, false, nil
	}
	l := Lost{Count: -1}
	var count string
	switch {
	case rest == "[LOST EVENTS]", rest == "[EVENTS DROPPED]":
	case strings.HasPrefix(rest, "[LOST ") && strings.HasSuffix(rest, " EVENTS]"):
		count = rest[len("[LOST ") : len(rest)-len(" EVENTS]")]
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, " EVENTS DROPPED]"):
		count = rest[1 : len(rest)-len(" EVENTS DROPPED]")]
	default:
		return Event{}, false, r.lineErr(bad)
	}
	if strings.HasSuffix(rest, "DROPPED]") {
		r.sawReport()
	}
	if count != "" {
		n, why := parseUint(count, 1<<62)
		if why != "" {
			return Event{}, false, r.lineErr(bad)
		}
		l.Count = int64(n)
	}
	ev, ok, err := r.marker(int(cpu), l)
	if err == nil {
		r.countLost(l)
	}
	return ev, ok, err
}

func (r *Reader) countLost(l Lost) {
	if l.Count >= 0 {
		r.stats.Lost += l.Count
	} else {
		r.stats.LostUnknown++
	}
}

func (r *Reader) marker(cpu int, p Payload) (Event, bool, error) {
	if m := r.hdr.Machine; m != nil && cpu >= m.CPUs {
		return Event{}, false, r.lineErr(fmt.Errorf("CPU %d outside the machine's %d CPUs", cpu, m.CPUs))
	}
	r.seen = true
	r.order.marker(cpu)
	return Event{Line: r.line, CPU: cpu, TS: r.lastTS, Data: p}, true, nil
}
