package ftrace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace/tracedat"
)

// datSource turns the records of a trace.dat buffer into events: each
// record's event is printed as the kernel prints it into the trace file
// (tracedat.Format.Print) and decoded from that text by the decoders the
// text readers use, so a trace.dat and the text of the same recording give
// the same events. Events of tracepoints this package does not decode are
// counted and skipped without being printed.
type datSource struct {
	f          *tracedat.File
	rs         *tracedat.Records
	n          int   // records read
	pending    Event // an event held back behind the Lost marker before it
	hasPending bool
	lazy       bool   // bit 0x02 of the flags is NEED_RESCHED_LAZY (6.13+), not IRQS_NOSUPPORT
	buf        []byte // scratch for the payload text
	known      map[int]bool
	flags      map[uint16]Flags // the latency flags of (common_flags, preempt count), printed once
}

// openDat makes a Reader of a trace.dat.
func openDat(f *tracedat.File, src Source) (*Reader, error) {
	buf, err := pickBuffer(f)
	if err != nil {
		return nil, err
	}
	clock := buf.Clock
	if clock == "" {
		clock = f.Clock
	}
	if !f.Nanoseconds(clock) {
		return nil, fmt.Errorf("trace.dat: buffer %q's trace clock %q counts no nanoseconds and the file does not convert it: record with a clock that does (trace-cmd record -C local, or mono, boot)", buf.Name, clock)
	}
	rs, err := buf.Records()
	if err != nil {
		return nil, err
	}
	r := &Reader{format: FormatTraceDat, unit: "record", sniffed: true, seen: true}
	r.hdr.CPUs = f.CPUs
	r.hdr.Nanoseconds = true
	r.digits = 9
	r.dat = &datSource{f: f, rs: rs, lazy: kernelAtLeast(f.Uname, 6, 13), known: map[int]bool{}, flags: map[uint16]Flags{}}
	src.Format = FormatTraceDat
	src.DatVersion = f.Version
	src.Compression = f.Compression
	src.Buffer = buf.Name
	src.Clock = clock
	src.Uname = f.Uname
	src.Ignored = f.Ignored
	r.source = src
	return r, nil
}

// pickBuffer chooses the buffer to read: the only one with data.
func pickBuffer(f *tracedat.File) (*tracedat.Buffer, error) {
	var full []*tracedat.Buffer
	for _, b := range f.Buffers {
		if !b.Empty() {
			full = append(full, b)
		}
	}
	switch len(full) {
	case 0:
		return nil, errors.New("trace.dat: no buffer holds any data (an empty recording)")
	case 1:
		return full[0], nil
	}
	names := make([]string, len(full))
	for i, b := range full {
		names[i] = strconv.Quote(b.Name)
	}
	return nil, fmt.Errorf("trace.dat: %d buffers hold data (%s; \"\" is the top one): extract one instance (trace-cmd extract -B NAME, or trace-cmd split)", len(full), strings.Join(names, ", "))
}

func (d *datSource) next(r *Reader) (Event, error) {
	if d.hasPending {
		d.hasPending = false
		return r.finish(d.pending)
	}
	for {
		rec, err := d.rs.Next()
		if err == io.EOF {
			r.err = io.EOF
			return Event{}, io.EOF
		}
		if err != nil {
			r.line = d.n + 1
			return Event{}, r.fatal(err)
		}
		d.n++
		r.line = d.n
		r.stats.Lines = d.n
		var lost Event
		if rec.Lost != 0 {
			l := Lost{Count: rec.Lost}
			if lost, _, err = r.marker(rec.CPU, l); err != nil {
				return Event{}, r.fatal(err)
			}
			r.countLost(l)
		}
		if rec.Data == nil {
			return r.finish(lost)
		}
		ev, ok, err := d.event(r, rec)
		if err != nil {
			return Event{}, err
		}
		if rec.Lost != 0 {
			d.pending, d.hasPending = ev, ok
			return r.finish(lost)
		}
		if ok {
			return r.finish(ev)
		}
	}
}

// finish counts an event Next returns.
func (r *Reader) finish(ev Event) (Event, error) {
	r.stats.Events++
	return ev, nil
}

// event decodes one record; ok is false for a skipped tracepoint.
func (d *datSource) event(r *Reader, rec tracedat.Record) (Event, bool, error) {
	c, e, err := d.f.Common(rec.Data)
	if err != nil {
		return Event{}, false, r.fatal(fmt.Errorf("%s: %w", rec.Where(), err))
	}
	known, seen := d.known[c.Type]
	if !seen {
		known = decoderFor(e.Name) != nil
		d.known[c.Type] = known
	}
	if rec.TS > 1<<63-1 {
		return Event{}, false, r.lineErr(fmt.Errorf("%s: time %d ns out of range", rec.Where(), rec.TS))
	}
	fk := uint16(c.Flags)<<8 | uint16(c.PreemptCount)
	fl, ok := d.flags[fk]
	if !ok {
		fl = latencyFlags(c.Flags, c.PreemptCount, d.lazy)
		d.flags[fk] = fl
	}
	ev := Event{
		Task:  d.f.Comm(c.PID),
		PID:   int(c.PID),
		CPU:   rec.CPU,
		Flags: fl,
		TS:    int64(rec.TS),
		Name:  e.Name,
	}
	if !known {
		// Not printed: only counted, by accept.
		return r.accept(ev, 9, true)
	}
	d.buf, err = e.Print(d.buf[:0], rec.Data)
	if err != nil {
		return Event{}, false, r.lineErr(fmt.Errorf("%s: %w", rec.Where(), err))
	}
	ev.Payload = string(d.buf)
	return r.accept(ev, 9, true)
}

// latencyFlags prints the record's common_flags and preempt count as the
// kernel's trace_print_lat_fmt does (kernel/trace/trace_output.c; flag bits
// of include/linux/trace_events.h): irqs-off/BH-off, need-resched,
// hardirq/softirq/NMI, preempt depth, migrate-disable depth.
func latencyFlags(fl, pc uint8, lazy bool) Flags {
	const (
		irqsOff     = 0x01
		bit1        = 0x02 // NEED_RESCHED_LAZY since 6.13, IRQS_NOSUPPORT before
		needResched = 0x04
		hardirq     = 0x08
		softirq     = 0x10
		preemptRes  = 0x20
		nmi         = 0x40
		bhOff       = 0x80
	)
	var b [5]byte
	switch {
	case fl&irqsOff != 0 && fl&bhOff != 0:
		b[0] = 'D'
	case fl&irqsOff != 0:
		b[0] = 'd'
	case fl&bhOff != 0:
		b[0] = 'b'
	case !lazy && fl&bit1 != 0:
		b[0] = 'X'
	default:
		b[0] = '.'
	}
	nr := fl & (needResched | preemptRes)
	if lazy {
		nr |= fl & bit1
	}
	switch nr {
	case needResched | bit1 | preemptRes:
		b[1] = 'B'
	case needResched | preemptRes:
		b[1] = 'N'
	case bit1 | preemptRes:
		b[1] = 'L'
	case needResched | bit1:
		b[1] = 'b'
	case needResched:
		b[1] = 'n'
	case bit1:
		b[1] = 'l'
	case preemptRes:
		b[1] = 'p'
	default:
		b[1] = '.'
	}
	h, s, n := fl&hardirq != 0, fl&softirq != 0, fl&nmi != 0
	switch {
	case n && h:
		b[2] = 'Z'
	case n:
		b[2] = 'z'
	case h && s:
		b[2] = 'H'
	case h:
		b[2] = 'h'
	case s:
		b[2] = 's'
	default:
		b[2] = '.'
	}
	const hex = "0123456789abcdef"
	b[3], b[4] = '.', '.'
	if pc&0xf != 0 {
		b[3] = hex[pc&0xf]
	}
	if pc>>4 != 0 {
		b[4] = hex[pc>>4]
	}
	return Flags(b[:])
}

// kernelAtLeast reports whether the release in a uname line ("Linux host
// 6.18.44-fc #1 SMP ...") is at least major.minor; true when unknown.
func kernelAtLeast(uname string, major, minor int) bool {
	for _, w := range strings.Fields(uname) {
		a, rest, ok := strings.Cut(w, ".")
		if !ok {
			continue
		}
		b, _, _ := strings.Cut(rest, ".")
		end := 0
		for end < len(b) && isDigit(b[end]) {
			end++
		}
		x, err1 := strconv.Atoi(a)
		y, err2 := strconv.Atoi(b[:end])
		if err1 != nil || err2 != nil || end == 0 {
			continue
		}
		return x > major || x == major && y >= minor
	}
	return true
}
