package ftrace

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"
)

// The codec: one tracepoint's row of the table (table.go) says, field by
// field, what TP_printk prints and which Go field holds it; the functions
// here read and print any row: from the text (dec.fill), to the text
// (appendText), from a trace.dat record (recordFiller.fill, in dat.go). A
// value goes through the same steps whichever way it travels:
//
//	text     --parse, check-->          val --set--> Go field
//	record   --recordFiller.value, check--> val --set--> Go field
//	Go field --get--> val --check, format--> text
//
// parse takes exactly what the conversion prints; check refuses a value the
// kernel could not have printed (a CPU beyond TIMER_CPUMASK, a negative u64
// time, a symbol with a stray blank); both say why in the words of a
// FieldError.

// conv is a field's printf conversion in TP_printk and the C type behind it.
type conv uint8

const (
	convPtr        conv = iota // %p: 16 hex digits (trace-cmd report: "0x...")
	convSym                    // %ps: "name", "name [module]" or "0x..." (a string)
	convHex                    // %x, %0x of an unsigned value no larger than hi
	convInt                    // %d of an int (32 bits)
	convUint                   // %u of an unsigned int no larger than hi
	convULong                  // %lu, %llu of a 64-bit unsigned value
	convLong                   // %ld of a long
	convKtime                  // %llu of a u64 nanosecond time, at most KTIME_MAX
	convS64                    // %llu of an s64 cast to unsigned long long: the bits are kept
	convBool                   // %d of a bool (or of an int that is 0 or 1)
	convSymbolic               // __print_symbolic: a name of syms, else "0x%lx"
	convTimerFlags             // __print_flags of timer_start's flags: "M|D|P|I"
	convSecUsec                // "%ld.%06ld": seconds and microseconds, two Go fields
)

// column is one field of a tracepoint's row.
type column struct {
	key  string   // as TP_printk prints it: "expires"
	conv conv     // how
	gof  string   // the Go field ("Expires"); convSecUsec: the prefix of its ...Sec and ...Usec
	hi   uint64   // convHex, convUint, convSymbolic: the largest value; 0: the Go field's
	syms []symbol // convSymbolic's names

	bracket bool // printed as "[key=value]"
	// flag names the Go bool that says whether the kernel printed the
	// field at all (fields that some kernels add): set when it did
	// (HasCapacity), or, with absent, when it did not (NoBucketExpiry).
	flag   string
	absent bool
	// src is where a trace.dat record holds the value; the zero source is
	// the record's field named key.
	src source

	// Resolved from the Go type once (resolve): the Go fields' offsets in
	// the payload struct and the kind of the first. get and set go through
	// these offsets rather than reflect.Value's Field and Set, which cost a
	// third of decoding an event: resolve checked each offset's field is of
	// the kind its conversion fills, against the row's own type, so a
	// pointer to a value of that type plus the offset is that field.
	off, off2, flagOff uintptr
	kind               reflect.Kind
}

// val is one field's value between text, record and Go field.
type val struct {
	n    uint64 // a number's bits (a signed one's two's complement); convSecUsec: the seconds
	usec int64  // convSecUsec: the microseconds
	s    string // convSym
}

// symbol is one entry of a __print_symbolic table.
type symbol struct {
	val  uint64
	name string
}

// tracepoint is one row of the table: a tracepoint, its Go type and its
// fields in the order TP_printk prints them.
type tracepoint struct {
	name    string
	typ     reflect.Type
	columns []column
	// fromText and fromRecord make a value of typ and fill it from a
	// payload's text or a trace.dat record: the code that depends on typ
	// (textAs[T] and recordAs[T], set by row).
	fromText   func(t *tracepoint, d *dec) Payload
	fromRecord func(t *tracepoint, r *recordFiller) Payload
	id         int // its place in tracepoints
	// plain: no field of the row is optional or bracketed, so that the
	// kernel's text of it is every key in the row's order, one blank
	// apart (dec.fillPlain reads that).
	plain bool
}

func textAs[T Payload](t *tracepoint, d *dec) Payload {
	var p T
	d.fill(t, unsafe.Pointer(&p))
	return p
}

func recordAs[T Payload](t *tracepoint, r *recordFiller) Payload {
	var p T
	r.fill(t, unsafe.Pointer(&p))
	return p
}

// row makes the tracepoint of payload type T. A field the type lacks, or
// one of a Go type its conversion cannot fill, is a mistake in the table:
// it panics when the package loads, so no test runs without finding it.
func row[T Payload](columns ...column) *tracepoint {
	var zero T
	// A copy: rows that share a list of columns resolve them each for
	// its own type.
	t := &tracepoint{name: zero.Name(), typ: reflect.TypeFor[T](), columns: slices.Clone(columns)}
	for i := range t.columns {
		if err := t.columns[i].resolve(t.typ); err != nil {
			panic(fmt.Sprintf("ftrace: the table's %s: %v", t.name, err))
		}
	}
	t.fromText, t.fromRecord = textAs[T], recordAs[T]
	t.plain = !slices.ContainsFunc(t.columns, func(c column) bool { return c.flag != "" || c.bracket })
	return t
}

// goKinds are the Go kinds each conversion fills.
var goKinds = map[conv][]reflect.Kind{
	convPtr: {reflect.Uint64}, convSym: {reflect.String},
	convHex: {reflect.Uint8, reflect.Uint32, reflect.Uint64}, convInt: {reflect.Int},
	convUint: {reflect.Int}, convULong: {reflect.Uint64}, convLong: {reflect.Int64},
	convKtime: {reflect.Int64}, convS64: {reflect.Int64}, convBool: {reflect.Bool},
	convSymbolic: {reflect.Uint32, reflect.Int32}, convTimerFlags: {reflect.Uint32},
	convSecUsec: {reflect.Int64},
}

func (f *column) resolve(typ reflect.Type) error {
	name := f.gof
	if f.conv == convSecUsec {
		name += "Sec"
	}
	sf, ok := typ.FieldByName(name)
	if !ok {
		return fmt.Errorf("no Go field %s for %q", name, f.key)
	}
	f.off, f.kind = sf.Offset, sf.Type.Kind()
	if !slices.Contains(goKinds[f.conv], f.kind) {
		return fmt.Errorf("field %s is a %s, which its conversion does not fill", name, f.kind)
	}
	if f.conv == convSecUsec {
		us, ok := typ.FieldByName(f.gof + "Usec")
		if !ok || us.Type.Kind() != reflect.Int64 {
			return fmt.Errorf("no int64 Go field %sUsec", f.gof)
		}
		f.off2 = us.Offset
	}
	if f.hi == 0 {
		switch f.kind {
		case reflect.Uint8:
			f.hi = math.MaxUint8
		case reflect.Uint32:
			f.hi = math.MaxUint32
		case reflect.Int32:
			f.hi = math.MaxUint64 // sign-extended: check bounds the value
		default:
			f.hi = math.MaxUint64
		}
	}
	if f.flag != "" {
		fl, ok := typ.FieldByName(f.flag)
		if !ok || fl.Type.Kind() != reflect.Bool {
			return fmt.Errorf("no bool Go field %s", f.flag)
		}
		f.flagOff = fl.Offset
	}
	return nil
}

// parse reads the text of the field's conversion.
func (f *column) parse(s string) (val, string) {
	var (
		v   val
		why string
	)
	switch f.conv {
	case convPtr:
		v.n, why = parsePtr(s)
	case convSym:
		v.s = s
	case convHex:
		v.n, why = parseHex(s, f.hi)
	case convInt, convLong:
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		if f.conv == convInt {
			lo, hi = math.MinInt32, math.MaxInt32
		}
		var i int64
		i, why = parseInt(s, lo, hi)
		v.n = uint64(i)
	case convUint:
		v.n, why = parseUint(s, f.hi)
	case convULong, convS64:
		v.n, why = parseUint(s, math.MaxUint64)
	case convKtime:
		if v.n, why = parseUint(s, uint64(KtimeMax)); why == "is out of range" {
			why = "exceeds KTIME_MAX"
		}
	case convBool:
		switch s {
		case "0":
		case "1":
			v.n = 1
		default:
			why = "is not 0 or 1"
		}
	case convSymbolic:
		v.n, why = parseSymbolic(s, f.syms, f.hi)
	case convTimerFlags:
		var fl TimerFlags
		fl, why = parseTimerFlags(s)
		v.n = uint64(fl)
	case convSecUsec:
		v.n, v.usec, why = parseSecUsec(s)
	}
	return v, why
}

// check reports why v is no value the kernel prints in this field, or "".
func (f *column) check(v val) string {
	switch f.conv {
	case convSym:
		return checkSymbol(v.s)
	case convHex, convUint:
		if v.n > f.hi {
			return "is out of range"
		}
	case convInt:
		if int64(v.n) < math.MinInt32 || int64(v.n) > math.MaxInt32 {
			return "is out of range"
		}
	case convKtime:
		if int64(v.n) < 0 {
			return "is negative (a u64 time)"
		}
	case convBool:
		if v.n > 1 {
			return "is not 0 or 1"
		}
	case convSymbolic:
		if f.kind == reflect.Int32 && int64(v.n) != int64(int32(v.n)) || v.n > f.hi {
			return "is out of range"
		}
	case convTimerFlags:
		if TimerFlags(v.n)&^timerFlagMask != 0 {
			return "holds bits other than M|D|P|I"
		}
	case convSecUsec:
		if v.usec < 0 {
			return "has negative microseconds"
		}
	}
	return ""
}

// format appends the text of a checked value.
func (f *column) format(b []byte, v val) []byte {
	switch f.conv {
	case convPtr:
		return appendPtr(b, v.n)
	case convSym:
		return append(b, v.s...)
	case convHex:
		return strconv.AppendUint(b, v.n, 16)
	case convInt, convLong, convKtime:
		return strconv.AppendInt(b, int64(v.n), 10)
	case convSymbolic:
		return appendSymbolic(b, v.n, f.syms)
	case convTimerFlags:
		return TimerFlags(v.n).appendTo(b)
	case convSecUsec:
		b = strconv.AppendInt(b, int64(v.n), 10)
		b = append(b, '.')
		return appendPadded(b, v.usec, 6)
	}
	return strconv.AppendUint(b, v.n, 10) // convUint, convULong, convS64, convBool
}

// text is a value as an error message shows it: as printed where it can
// be, else its number.
func (f *column) text(v val) string {
	switch f.conv {
	case convSym:
		return v.s
	case convHex:
		return strconv.FormatUint(v.n, 16)
	case convTimerFlags:
		return TimerFlags(v.n).String()
	case convSecUsec:
		return strconv.FormatInt(int64(v.n), 10) + "." + strconv.FormatInt(v.usec, 10)
	case convInt, convUint, convLong, convKtime:
		return strconv.FormatInt(int64(v.n), 10)
	}
	return strconv.FormatUint(v.n, 10)
}

// get reads the field's value out of a payload, p pointing to a value of
// the row's type.
func (f *column) get(p unsafe.Pointer) val {
	fp := unsafe.Add(p, f.off)
	switch f.kind {
	case reflect.String:
		return val{s: *(*string)(fp)}
	case reflect.Bool:
		if *(*bool)(fp) {
			return val{n: 1}
		}
		return val{}
	case reflect.Int:
		return val{n: uint64(*(*int)(fp))}
	case reflect.Int32:
		return val{n: uint64(int64(*(*int32)(fp)))}
	case reflect.Int64:
		v := val{n: uint64(*(*int64)(fp))}
		if f.conv == convSecUsec {
			v.usec = *(*int64)(unsafe.Add(p, f.off2))
		}
		return v
	case reflect.Uint8:
		return val{n: uint64(*(*uint8)(fp))}
	case reflect.Uint32:
		return val{n: uint64(*(*uint32)(fp))}
	}
	return val{n: *(*uint64)(fp)}
}

// set stores a checked value into the payload being built, p pointing to
// a value of the row's type.
func (f *column) set(p unsafe.Pointer, v val) {
	fp := unsafe.Add(p, f.off)
	switch f.kind {
	case reflect.String:
		*(*string)(fp) = v.s
	case reflect.Bool:
		*(*bool)(fp) = v.n != 0
	case reflect.Int:
		*(*int)(fp) = int(v.n)
	case reflect.Int32:
		*(*int32)(fp) = int32(v.n)
	case reflect.Int64:
		*(*int64)(fp) = int64(v.n)
		if f.conv == convSecUsec {
			*(*int64)(unsafe.Add(p, f.off2)) = v.usec
		}
	case reflect.Uint8:
		*(*uint8)(fp) = uint8(v.n)
	case reflect.Uint32:
		*(*uint32)(fp) = uint32(v.n)
	default:
		*(*uint64)(fp) = v.n
	}
}

// flagOf and setFlag read and write the Go bool that says whether the
// kernel printed the field (column.flag).
func (f *column) flagOf(p unsafe.Pointer) bool { return *(*bool)(unsafe.Add(p, f.flagOff)) }

func (f *column) setFlag(p unsafe.Pointer, b bool) { *(*bool)(unsafe.Add(p, f.flagOff)) = b }

// fill decodes the payload text d holds into the value of t's type p
// points to.
func (d *dec) fill(t *tracepoint, p unsafe.Pointer) {
	if t.plain && d.fillPlain(t, p) {
		return
	}
	for i := range t.columns {
		f := &t.columns[i]
		if f.flag != "" {
			has := d.has(f.key)
			f.setFlag(p, has != f.absent)
			if !has {
				continue
			}
		}
		s, ok := d.get(f.key)
		if !ok {
			return
		}
		v, why := f.parse(s)
		if why == "" {
			why = f.check(v)
		}
		if why != "" {
			d.fail(f.key, s, why)
			return
		}
		if f.conv == convSym && d.syms != nil {
			v.s = d.syms.intern(v.s)
		}
		f.set(p, v)
	}
}

// fillPlain decodes a plain row's text as the kernel prints it: each key
// where the row puts it, one blank after the last value, and each value
// one token that ends where the next key begins. At the first byte it
// does not expect, or a value that does not parse, it reports false
// having moved no cursor: fill then reads the payload the general way
// (at, get), which looks for each key, allows blanks, tests the token
// after each value for a value's continuation, and says what is wrong;
// the fields fillPlain set are set again, or the payload is refused.
func (d *dec) fillPlain(t *tracepoint, p unsafe.Pointer) bool {
	s := d.payload
	i := 0
	for k := range t.columns {
		f := &t.columns[k]
		if !keyAt(s, i, f.key) {
			return false
		}
		vs := i + len(f.key) + 1
		j := vs
		for j < len(s) && s[j] != ' ' {
			j++
		}
		if j < len(s) && (k+1 == len(t.columns) || !keyAt(s, j+1, t.columns[k+1].key)) {
			// A blank, and then no next field: trailing text, or a
			// value of more than one token ("name [module]").
			return false
		}
		v, why := f.parse(s[vs:j])
		if why == "" {
			why = f.check(v)
		}
		if why != "" {
			return false
		}
		if f.conv == convSym && d.syms != nil {
			v.s = d.syms.intern(v.s)
		}
		f.set(p, v)
		i = j + 1
	}
	d.pos = len(s)
	return true
}

// keyAt reports whether s holds "key=" at i.
func keyAt(s string, i int, key string) bool {
	e := i + len(key)
	return e < len(s) && s[e] == '=' && s[i:e] == key
}

// appendText appends the TP_printk text of the value of the tracepoint's
// type p points to, or fails, appending nothing, on a value the kernel could not have
// printed.
func (t *tracepoint) appendText(b []byte, p unsafe.Pointer) ([]byte, error) {
	start := len(b)
	for i := range t.columns {
		f := &t.columns[i]
		v := f.get(p)
		if f.flag != "" && f.flagOf(p) == f.absent {
			if v != (val{}) {
				how := "is set but " + f.flag + " is "
				if f.absent {
					how += "true"
				} else {
					how += "false"
				}
				return b[:start], &FieldError{Event: t.name, Field: f.key, Value: f.text(v), Reason: how}
			}
			continue
		}
		if why := f.check(v); why != "" {
			return b[:start], &FieldError{Event: t.name, Field: f.key, Value: f.text(v), Reason: why}
		}
		if len(b) > start {
			b = append(b, ' ')
		}
		if f.bracket {
			b = append(b, '[')
		}
		b = append(b, f.key...)
		b = append(b, '=')
		b = f.format(b, v)
		if f.bracket {
			b = append(b, ']')
		}
	}
	return b, nil
}

// parseSecUsec reads "%ld.%06ld".
func parseSecUsec(s string) (sec uint64, usec int64, why string) {
	const bad = "is not seconds.microseconds"
	dot := strings.IndexByte(s, '.')
	if dot < 0 {
		return 0, 0, bad
	}
	i, why := parseInt(s[:dot], math.MinInt64, math.MaxInt64)
	if why != "" {
		return 0, 0, bad
	}
	u, why := parseUint(s[dot+1:], math.MaxInt64)
	if why != "" {
		return 0, 0, bad
	}
	return uint64(i), int64(u), ""
}

func appendSymbolic(b []byte, v uint64, table []symbol) []byte {
	for _, s := range table {
		if s.val == v {
			return append(b, s.name...)
		}
	}
	b = append(b, "0x"...)
	return strconv.AppendUint(b, v, 16)
}

func parseSymbolic(s string, table []symbol, hi uint64) (uint64, string) {
	for _, sym := range table {
		if sym.name == s {
			return sym.val, ""
		}
	}
	if len(s) > 2 && s[0] == '0' && s[1] == 'x' {
		return parseHex(s[2:], hi)
	}
	return 0, "is not a known name"
}
