package ftrace

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// KtimeMax is the kernel's KTIME_MAX, "no event": a tmigr wakeup or nextevt
// of KtimeMax prints as 9223372036854775807.
const KtimeMax int64 = math.MaxInt64

// Payload is the typed content of one event line: one struct type per
// tracepoint (TimerStart, TmigrCPUIdle, ...), plus the marker lines Lost and
// BufferStarted. A replay switches on the type:
//
//	switch p := ev.Data.(type) {
//	case ftrace.TimerStart:
//		// p.Expires, p.BucketExpiry, p.Idx ...
//	case ftrace.TmigrCPUIdle:
//		// p.CPU, p.NextEvt, p.Wakeup ...
//	}
//
// AppendPayload prints one; the table in table.go says how, for every
// type but the marker lines and TracingMark.
type Payload interface {
	// Name is the tracepoint's name as the kernel prints it ("timer_start"),
	// "" for a marker line.
	Name() string
}

// ErrUnknownEvent is returned by DecodePayload for a tracepoint this package
// does not decode. The Reader skips (and counts) such events instead.
var ErrUnknownEvent = errors.New("unknown event")

// DecodePayload decodes the payload text of the named tracepoint, the part of
// an event line after "name: ". The result's strings are substrings of
// payload.
func DecodePayload(name, payload string) (Payload, error) {
	var d dec
	p, known := decode(&d, name, payload)
	if !known {
		return nil, fmt.Errorf("%w %q", ErrUnknownEvent, name)
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// FormatPayload returns the TP_printk text of p.
func FormatPayload(p Payload) (string, error) {
	b, err := AppendPayload(nil, p)
	return string(b), err
}

// AppendPayload appends the text the tracepoint's TP_printk prints for p,
// byte for byte, or fails, appending nothing, on a value the kernel could
// not have printed (a negative u64 time, a CPU beyond the timer's CPU
// field, a function name with a blank at its end, ...). For a marker line
// it appends the part after "CPU:N ".
func AppendPayload(b []byte, p Payload) ([]byte, error) {
	switch p := p.(type) {
	case Lost:
		return p.appendTo(b)
	case BufferStarted:
		return append(b, "buffer started"...), nil
	case TracingMark:
		return p.appendTo(b)
	case nil:
		return b, errors.New("ftrace: no payload")
	}
	t := byType[reflect.TypeOf(p)]
	if t == nil {
		return b, fmt.Errorf("ftrace: %T is not a payload of this package", p)
	}
	// An addressable copy: the codec reads the fields at their offsets.
	v := reflect.New(t.typ)
	v.Elem().Set(reflect.ValueOf(p))
	return t.appendText(b, v.UnsafePointer())
}

// FieldError is a payload field that is missing or holds text that the
// field's printf conversion cannot have produced.
type FieldError struct {
	Event   string // the tracepoint, "timer_start"
	Field   string // the field, "expires"; "" when the payload as a whole is malformed
	Value   string // the text found
	Reason  string // "is not a number", ...
	Missing bool   // the field is absent
}

func (e *FieldError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("%s: missing field %q", e.Event, e.Field)
	case e.Field == "":
		return fmt.Sprintf("%s: payload %s", e.Event, e.Reason)
	default:
		return fmt.Sprintf("%s: field %q: %q %s", e.Event, e.Field, clip(e.Value), e.Reason)
	}
}

// dec pulls the fields of one payload text, for the codec (dec.fill). The
// first failure sticks in err and makes later getters return nothing.
//
// The kernel prints the fields in a fixed order, which is the order the
// table lists them in; so dec first reads them straight off the payload
// with a cursor, and only when the next field is not the one asked for (a
// newer kernel added one, or the text is malformed) splits the whole
// payload into a table and looks fields up there. Either way the result is
// the same; the cursor just keeps the common case free of work.
type dec struct {
	event   string
	payload string
	pos     int  // the cursor: payload[:pos] has been read
	split   bool // fs holds the payload's fields; the cursor is out of use
	fs      fields
	err     error
	// syms, when set, gives the functions (%ps) decoded copies of their
	// own, shared, rather than slices of the payload (see ReadAll).
	syms *interner
	// share, when set, gives payloads of equal texts one copy (see
	// ReadAll).
	share *sharing
}

func (d *dec) reset(event, payload string) {
	d.event, d.payload, d.pos, d.split, d.err = event, payload, 0, false, nil
}

// finish checks, after a decoder took its fields with the cursor, that the
// text after them is well-formed fields too.
func (d *dec) finish() {
	if d.err == nil && !d.split && trimBlanks(d.payload[d.pos:]) != "" {
		d.splitAll()
	}
}

func (d *dec) splitAll() bool {
	d.split = true
	if err := d.fs.split(d.payload); err != nil {
		d.err = &FieldError{Event: d.event, Reason: err.Error()}
		return false
	}
	return true
}

func (d *dec) fail(key, val, why string) {
	if d.err == nil {
		d.err = &FieldError{Event: d.event, Field: key, Value: val, Reason: why}
	}
}

func (d *dec) get(key string) (string, bool) {
	if d.err != nil {
		return "", false
	}
	if !d.split {
		if v, end, ok := d.at(key); ok {
			d.pos = end
			return v, true
		}
		if !d.splitAll() {
			return "", false
		}
	}
	f, ok := d.fs.lookup(key)
	if !ok {
		d.err = &FieldError{Event: d.event, Field: key, Missing: true}
		return "", false
	}
	return f.val, true
}

// has reports whether the payload holds the field.
func (d *dec) has(key string) bool {
	if d.err != nil {
		return false
	}
	if !d.split {
		if _, _, ok := d.at(key); ok {
			return true
		}
		if !strings.Contains(d.payload[d.pos:], key+"=") || !d.splitAll() {
			return false
		}
	}
	_, ok := d.fs.lookup(key)
	return ok
}

// at reads the field key at the cursor, as fields.split would: "key=value"
// with any continuation tokens, or "[key=value]". ok is false if the next
// field is not key.
func (d *dec) at(key string) (val string, end int, ok bool) {
	p := d.payload
	i := d.pos
	for i < len(p) && p[i] == ' ' {
		i++
	}
	bracket := i < len(p) && p[i] == '['
	if bracket {
		i++
	}
	if e := i + len(key); e >= len(p) || p[e] != '=' || p[i:e] != key {
		return "", 0, false
	}
	vs := i + len(key) + 1
	j := vs
	for j < len(p) && p[j] != ' ' {
		j++
	}
	if bracket {
		if j-vs < 1 || p[j-1] != ']' {
			return "", 0, false
		}
		return p[vs : j-1], j, true
	}
	for {
		k := j
		for k < len(p) && p[k] == ' ' {
			k++
		}
		if k == len(p) || keyNext(p[k:]) {
			break
		}
		e := k
		for e < len(p) && p[e] != ' ' {
			e++
		}
		tok := p[k:e]
		if tok == "" {
			break
		}
		if _, _, isField := bracketField(tok); isField {
			break
		}
		if eq := indexByte(tok, '='); eq > 0 && validKey(tok[:eq]) {
			break
		}
		j = e
	}
	return p[vs:j], j, true
}

// keyNext reports whether s starts with "key=": the next field, where the
// value before it ends. It reads only the key: most values are followed by
// one, so this is the common case of the token checks at's loop makes.
func keyNext(s string) bool {
	if s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == '=' {
			return true
		}
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return false
}

// checkSymbol reports why s cannot be what %ps prints, or "".
func checkSymbol(s string) string {
	if s == "" {
		return "is empty"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			if i == 0 || i == len(s)-1 || s[i-1] == ' ' {
				return "is not a symbol (stray blank)"
			}
		case c == '=' || c < 0x21 || c > 0x7e:
			return "is not a symbol"
		}
	}
	return ""
}

// TimerFlags is the flag part of a timer_list's flags word, with the kernel's
// bit values (include/linux/timer.h); timer_start prints it as "M|D|P|I".
type TimerFlags uint32

const (
	TimerMigrating  TimerFlags = 0x00040000 // M: being moved to another base
	TimerDeferrable TimerFlags = 0x00080000 // D: may wait for a non-idle CPU
	TimerPinned     TimerFlags = 0x00100000 // P: stays on the CPU it was queued on
	TimerIrqsafe    TimerFlags = 0x00200000 // I: callback runs with interrupts off

	timerFlagMask = TimerMigrating | TimerDeferrable | TimerPinned | TimerIrqsafe
)

var timerFlagNames = [...]struct {
	f TimerFlags
	c byte
}{{TimerMigrating, 'M'}, {TimerDeferrable, 'D'}, {TimerPinned, 'P'}, {TimerIrqsafe, 'I'}}

// String prints the flags as timer_start does: "D|P|I", "" for none.
func (f TimerFlags) String() string { return string(f.appendTo(nil)) }

func (f TimerFlags) appendTo(b []byte) []byte {
	first := true
	for _, n := range timerFlagNames {
		if f&n.f != 0 {
			if !first {
				b = append(b, '|')
			}
			b = append(b, n.c)
			first = false
		}
	}
	if rest := f &^ timerFlagMask; rest != 0 {
		if !first {
			b = append(b, '|')
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, uint64(rest), 16)
	}
	return b
}

func parseTimerFlags(s string) (TimerFlags, string) {
	var f TimerFlags
	if s == "" {
		return 0, ""
	}
	for part := range strings.SplitSeq(s, "|") {
		var bit TimerFlags
		for _, n := range timerFlagNames {
			if len(part) == 1 && part[0] == n.c {
				bit = n.f
			}
		}
		if bit == 0 || f&bit != 0 {
			return 0, "is not a set of M|D|P|I"
		}
		f |= bit
	}
	return f, ""
}

// HrtimerMode is enum hrtimer_mode with the kernel's values.
type HrtimerMode uint32

const (
	HrtimerModeAbs    HrtimerMode = 0x00 // expiry is an absolute time
	HrtimerModeRel    HrtimerMode = 0x01 // expiry is relative to now
	HrtimerModePinned HrtimerMode = 0x02 // stays on the CPU it was started on
	HrtimerModeSoft   HrtimerMode = 0x04 // expires in softirq context
	HrtimerModeHard   HrtimerMode = 0x08 // expires in hard interrupt context (PREEMPT_RT)
)

var hrtimerModes = []symbol{
	{0x00, "ABS"}, {0x01, "REL"}, {0x02, "ABS|PINNED"}, {0x03, "REL|PINNED"},
	{0x04, "ABS|SOFT"}, {0x05, "REL|SOFT"}, {0x06, "ABS|PINNED|SOFT"}, {0x07, "REL|PINNED|SOFT"},
	{0x08, "ABS|HARD"}, {0x09, "REL|HARD"}, {0x0a, "ABS|PINNED|HARD"}, {0x0b, "REL|PINNED|HARD"},
}

// String prints the mode as hrtimer_start does ("REL|PINNED|HARD").
func (m HrtimerMode) String() string { return string(appendSymbolic(nil, uint64(m), hrtimerModes)) }

// Rel, Pinned, Soft and Hard test the mode's bits.
func (m HrtimerMode) Rel() bool    { return m&HrtimerModeRel != 0 }
func (m HrtimerMode) Pinned() bool { return m&HrtimerModePinned != 0 }
func (m HrtimerMode) Soft() bool   { return m&HrtimerModeSoft != 0 }
func (m HrtimerMode) Hard() bool   { return m&HrtimerModeHard != 0 }

// ClockID is a clockid_t as hrtimer_init/hrtimer_setup print it.
type ClockID int32

const (
	ClockRealtime  ClockID = 0
	ClockMonotonic ClockID = 1
	ClockBoottime  ClockID = 7
	ClockTAI       ClockID = 11
)

var clockIDs = []symbol{
	{0, "CLOCK_REALTIME"}, {1, "CLOCK_MONOTONIC"}, {7, "CLOCK_BOOTTIME"}, {11, "CLOCK_TAI"},
}

// String prints the clock as the kernel does ("CLOCK_MONOTONIC", or "0x..."
// for a clock without a name, sign-extended as an unsigned long).
func (c ClockID) String() string {
	return string(appendSymbolic(nil, uint64(int64(c)), clockIDs))
}

// TickDep is the tick dependency mask tick_stop reports (TICK_DEP_MASK_*).
type TickDep uint32

const (
	TickDepNone          TickDep = 0
	TickDepPosixTimer    TickDep = 1 << 0
	TickDepPerfEvents    TickDep = 1 << 1
	TickDepSched         TickDep = 1 << 2
	TickDepClockUnstable TickDep = 1 << 3
	TickDepRCU           TickDep = 1 << 4
	TickDepRCUExp        TickDep = 1 << 5
)

var tickDeps = []symbol{
	{0, "NONE"}, {1, "POSIX_TIMER"}, {2, "PERF_EVENTS"}, {4, "SCHED"},
	{8, "CLOCK_UNSTABLE"}, {16, "RCU"}, {32, "RCU_EXP"},
}

// String prints the dependency as tick_stop does ("NONE", "SCHED", ...).
func (t TickDep) String() string { return string(appendSymbolic(nil, uint64(t), tickDeps)) }

// TracingMark is tracing_mark_write, ftrace's own event for a line a program
// wrote to the trace_marker file: "tracing_mark_write: %s", the text as
// written, without its newline. The lab's guest marks its run-time changes
// so ("tmigr-lab: 1s partition 9-15").
type TracingMark struct {
	Text string
}

// Name is "tracing_mark_write".
func (TracingMark) Name() string { return "tracing_mark_write" }

// appendTo appends the text; a text with a line break (the kernel splits
// none into its line) or one that starts or ends with blanks (a line's
// payload is read without them) cannot be read back as printed.
func (t TracingMark) appendTo(b []byte) ([]byte, error) {
	if i := strings.IndexAny(t.Text, "\n\r"); i >= 0 {
		return b, &FieldError{Event: t.Name(), Value: t.Text, Reason: "holds a line break"}
	}
	if strings.Trim(t.Text, " ") != t.Text {
		return b, &FieldError{Event: t.Name(), Value: t.Text, Reason: "starts or ends with blanks"}
	}
	return append(b, t.Text...), nil
}
