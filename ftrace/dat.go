package ftrace

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tmigr/tmigr/ftrace/tracedat"
)

// datSource turns the records of a trace.dat buffer into events: each
// record's fields are read at the offsets the file's format of its event
// gives, into the payload type of the tracepoint's row of the table, with
// the checks the text's decoding makes; so a trace.dat and the text of the
// same recording give the same events. Events of tracepoints this package
// does not decode are counted and skipped.
type datSource struct {
	f          *tracedat.File
	rs         *tracedat.Records
	n          int   // records read
	pending    Event // an event held back behind the Lost marker before it
	hasPending bool
	lazy       bool             // bit 0x02 of the flags is NEED_RESCHED_LAZY (6.13+), not IRQS_NOSUPPORT
	bound      map[int]*binding // by event ID; nil for a tracepoint not decoded
	buf        []byte           // scratch for the payload text
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
	r.dat = &datSource{f: f, rs: rs, lazy: kernelAtLeast(f.Uname, 6, 13), bound: map[int]*binding{}, flags: map[uint16]Flags{}}
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
	b, seen := d.bound[c.Type]
	if !seen {
		if t := byName[e.Name]; t != nil {
			if b, err = bind(t, e); err != nil {
				return Event{}, false, r.fatal(fmt.Errorf("%s: %w", rec.Where(), err))
			}
		}
		d.bound[c.Type] = b
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
	if b != nil {
		fill := recordFiller{b: b, f: d.f, data: rec.Data}
		ev.Data = b.t.fromRecord(b.t, &fill)
		if fill.err != nil {
			return Event{}, false, r.lineErr(fmt.Errorf("%s: %w", rec.Where(), fill.err))
		}
		// The text the kernel would have printed, as Event.Payload is for
		// every other form: it cannot fail on a payload that passed the
		// checks of decoding.
		if d.buf, err = AppendPayload(d.buf[:0], ev.Data); err != nil {
			return Event{}, false, r.lineErr(fmt.Errorf("%s: %w", rec.Where(), err))
		}
		ev.Payload = string(d.buf)
	}
	// An event without Data is only counted, by accept.
	ok, err = r.accept(&ev, 9, true)
	return ev, ok, err
}

// source is where a trace.dat record holds a column's value: the record's
// field named like the column, or one or two fields the event's print fmt
// computes it from.
type source struct {
	op   sourceOp
	a, b string // the record's fields; a == "": the one named like the column
	arg  uint64
}

type sourceOp uint8

const (
	fromField   sourceOp = iota // a
	fromDiff                    // a - b: timer_start's (long)REC->expires - REC->now
	fromMask                    // a & arg: REC->flags & TIMER_CPUMASK
	fromShift                   // a >> arg: REC->flags >> TIMER_ARRAYSHIFT
	fromSecNsec                 // a seconds, b/1000 microseconds: REC->value_nsec / NSEC_PER_USEC
)

func named(a string) source                { return source{a: a} }
func difference(a, b string) source        { return source{op: fromDiff, a: a, b: b} }
func masked(a string, mask uint64) source  { return source{op: fromMask, a: a, arg: mask} }
func shifted(a string, bits uint64) source { return source{op: fromShift, a: a, arg: bits} }
func secNsec(sec, nsec string) source      { return source{op: fromSecNsec, a: sec, b: nsec} }

// binding is a tracepoint's row resolved against one file's format of the
// event: the record fields of each column (nil for an optional column the
// format lacks).
type binding struct {
	t    *tracepoint
	e    *tracedat.Format
	a, b []*tracedat.Field // by column
}

func bind(t *tracepoint, e *tracedat.Format) (*binding, error) {
	b := &binding{t: t, e: e, a: make([]*tracedat.Field, len(t.columns)), b: make([]*tracedat.Field, len(t.columns))}
	for i := range t.columns {
		c := &t.columns[i]
		name := c.src.a
		if name == "" {
			name = c.key
		}
		b.a[i] = e.Field(name)
		if c.src.b != "" {
			b.b[i] = e.Field(c.src.b)
		}
		switch {
		case b.a[i] == nil && c.flag != "":
			// A field this kernel does not print.
		case b.a[i] == nil:
			return nil, fmt.Errorf("%s: the format has no field %q (a layout of the event this reader does not know)", t.name, name)
		case c.src.b != "" && b.b[i] == nil:
			return nil, fmt.Errorf("%s: the format has no field %q (a layout of the event this reader does not know)", t.name, c.src.b)
		}
	}
	return b, nil
}

// recordFiller fills a payload from one record's data.
type recordFiller struct {
	b    *binding
	f    *tracedat.File
	data []byte
	err  error
}

func (r *recordFiller) fill(t *tracepoint, p unsafe.Pointer) {
	for i := range t.columns {
		c := &t.columns[i]
		if c.flag != "" {
			has := r.b.a[i] != nil
			c.setFlag(p, has != c.absent)
			if !has {
				continue
			}
		}
		v, err := r.value(c, i)
		if err != nil {
			r.err = err
			return
		}
		if why := c.check(v); why != "" {
			r.err = &FieldError{Event: t.name, Field: c.key, Value: c.text(v), Reason: why}
			return
		}
		c.set(p, v)
	}
}

// value reads column c (the i'th) of the record as its print fmt
// computes it and its conversion prints it.
func (r *recordFiller) value(c *column, i int) (val, error) {
	e := r.b.e
	n, err := e.Uint(r.data, r.b.a[i])
	if err != nil {
		return val{}, err
	}
	var m uint64
	if r.b.b[i] != nil {
		if m, err = e.Uint(r.data, r.b.b[i]); err != nil {
			return val{}, err
		}
	}
	switch c.src.op {
	case fromDiff:
		n -= m
	case fromMask:
		n &= c.src.arg
	case fromShift:
		n >>= c.src.arg
	case fromSecNsec:
		return val{n: n, usec: int64(m) / 1000}, nil
	}
	switch c.conv {
	case convSym:
		return val{s: symbolText(r.f, n)}, nil
	case convInt:
		return val{n: uint64(int64(int32(n)))}, nil // %d of an int
	case convUint, convHex:
		return val{n: uint64(uint32(n))}, nil // %u, %x of an unsigned int
	}
	return val{n: n}, nil
}

// symbolText is what %ps prints for addr: the symbol's name, with its
// module in brackets for a module's, or the address in hex when the file's
// kallsyms have no symbol there.
func symbolText(f *tracedat.File, addr uint64) string {
	name, mod, _, ok := f.Symbol(addr)
	switch {
	case !ok:
		return "0x" + strconv.FormatUint(addr, 16)
	case mod != "":
		return name + " [" + mod + "]"
	}
	return name
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
