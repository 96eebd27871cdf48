package ftrace

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
)

// LineError is an error at one line of the input. Every error of Reader.Next
// other than io.EOF is a *LineError.
type LineError struct {
	Line int // 1-based
	Err  error
	// Unit is what Line counts: "" for lines of text, "record" for the
	// records of a trace.dat (in the order they are read).
	Unit string
}

func (e *LineError) Error() string {
	u := e.Unit
	if u == "" {
		u = "line"
	}
	return fmt.Sprintf("%s %d: %v", u, e.Line, e.Err)
}
func (e *LineError) Unwrap() error { return e.Err }

// errNotEvent is a line without the "TASK-PID [CPU]" shape of an event line.
var errNotEvent = errors.New("not an event line: no TASK-PID [CPU] part")

// ParseLine parses one event line (without its newline) and decodes its
// payload if the tracepoint is one this package knows; for any other
// tracepoint, and for a line of the function tracer, Data is nil. Line is
// left 0.
func ParseLine(line string) (Event, error) {
	var ev Event
	_, tp, err := parseLine(line, &ev)
	if err != nil || !tp {
		return ev, err
	}
	var d dec
	p, known := decode(&d, ev.Name, ev.Payload)
	if known && d.err != nil {
		return Event{}, d.err
	}
	ev.Data = p
	return ev, nil
}

// parseLine splits an event line into its parts, into *ev (which it
// leaves as it was on an error), without decoding the payload; digits is
// the number of decimals of the timestamp (6 or 9). tp is false for a line
// whose name is not followed by a colon, which is no tracepoint (the
// function tracer prints "hrtimer_cancel <-tick_nohz_idle_exit").
func parseLine(s string, ev *Event) (digits int, tp bool, err error) {
	var h lineHead
	if err := h.parse(s); err != nil {
		return 0, false, err
	}
	return parseTail(s, &h, ev)
}

// lineHead is the start of an event line, "TASK-PID [CPU]", parsed.
//
// The task name is everything before the last "-PID" ahead of " [CPU]": the
// kernel prints "%16s-%-7d [%03d] ", and comm may itself hold blanks and
// dashes ("kworker/u32:1-123" is comm "kworker/u32:1", PID 123). The first
// "-digits blanks [digits]" from the left is taken, so a comm that itself
// holds such a part is the one thing that can mislead it; the Writer refuses
// such names.
type lineHead struct {
	task     string
	taskAt   int // the index of task in the line
	pid, cpu int
	end      int // the index of the "]" after the CPU
}

// parse parses the head of s.
func (h *lineHead) parse(s string) error {
	sep, pidEnd, cpuStart, cpuEnd := findSep(s)
	if sep < 0 {
		return errNotEvent
	}
	k := 0
	for k < sep && s[k] == ' ' {
		k++
	}
	task := s[k:sep]
	if task == "" {
		return errors.New("empty task name")
	}
	pid, why := parseUint(s[sep+1:pidEnd], math.MaxInt32)
	if why != "" {
		return fmt.Errorf("PID %q %s", s[sep+1:pidEnd], why)
	}
	cpu, why := parseUint(s[cpuStart:cpuEnd], cpumask.MaxCPUs-1)
	if why != "" {
		return fmt.Errorf("CPU %q %s", s[cpuStart:cpuEnd], why)
	}
	*h = lineHead{task: task, taskAt: k, pid: int(pid), cpu: int(cpu), end: cpuEnd}
	return nil
}

// heads holds the head of the last line read of each CPU, by a slot its
// digits pick: a CPU's lines repeat their "TASK-PID [CPU]" until its next
// context switch, and comparing a line's start with the last costs less
// than parsing it. A line that starts as the slot's did has its head (the
// parse reads nothing after the "]").
type heads [headSlots]struct {
	text string // the line up to its "]", a copy
	h    lineHead
}

// parse parses the head of s, from its slot where s starts as its text.
func (c *heads) parse(s string, h *lineHead) error {
	slot := &c[headSlot(s)]
	if n := len(slot.text); n > 0 && len(s) > n && s[:n] == slot.text {
		*h = slot.h
		return nil
	}
	if err := h.parse(s); err != nil {
		return err
	}
	// The copy outlives the Reader's buffer, and the head's task is in it.
	slot.text = strings.Clone(s[:h.end+1])
	slot.h = *h
	slot.h.task = slot.text[h.taskAt : h.taskAt+len(h.task)]
	return nil
}

// headSlot picks the slot of a line by the digits after its first "[",
// the CPU's in the kernel's lines (any other choice only misses more).
func headSlot(s string) int {
	i := strings.IndexByte(s, '[')
	if i < 0 {
		return 0
	}
	v := 0
	for _, c := range []byte(s[i+1 : min(i+4, len(s))]) {
		v = v*10 + int(c-'0')
	}
	return v & (headSlots - 1)
}

// headSlots is the number of heads' slots, a power of two.
const headSlots = 256

// parseTail parses the rest of s after its head h (flags, timestamp,
// name, payload) into *ev, with the head's fields.
func parseTail(s string, h *lineHead, ev *Event) (digits int, tp bool, err error) {
	task, pid, cpu, cpuEnd := h.task, h.pid, h.cpu, h.end
	rest := s[cpuEnd+1:]
	if rest == "" || rest[0] != ' ' {
		return 0, false, errors.New("no blank after [CPU]")
	}
	rest = trimBlanks(rest)
	tok, after := cutBlank(rest)
	var flags string
	if !looksLikeTimestamp(tok) {
		if why := checkFlags(tok); why != "" {
			return 0, false, fmt.Errorf("flags %q %s", clip(tok), why)
		}
		flags = tok
		tok, after = cutBlank(trimBlanks(after))
	}
	ts, digits, why := parseTimestamp(tok)
	if why != "" {
		if err := rawCount(tok); err != nil {
			return 0, false, err
		}
		return 0, false, fmt.Errorf("timestamp %q %s", clip(tok), why)
	}
	if after = trimBlanks(after); strings.HasPrefix(after, "(+") {
		// trace-cmd report --ts-diff: "(+123)" after the time.
		if end := strings.IndexByte(after, ')'); end > 0 {
			after = after[end+1:]
		}
	}
	rest = trimBlanks(after)
	n := 0
	if rest != "" && rest[0] == '<' {
		// "<stack trace>", "<user stack trace>"
		n = indexByte(rest, '>') + 1
	}
	// The name ends at the first colon or blank (strings.IndexByte
	// searches a name's length at once, where a loop goes a byte at a
	// time).
	from := n
	if c := strings.IndexByte(rest[from:], ':'); c >= 0 {
		n = from + c
	} else {
		n = len(rest)
	}
	if b := strings.IndexByte(rest[from:n], ' '); b >= 0 {
		n = from + b
	}
	if n == 0 {
		return 0, false, errors.New("no event name after the timestamp")
	}
	name, payload := rest[:n], ""
	switch {
	case n < len(rest) && rest[n] == ':':
		payload, tp = trimBlanks(rest[n+1:]), true
	case name[0] == '<' || strings.HasPrefix(trimBlanks(rest[n:]), "<-"):
		// "<stack trace>", or the function tracer's "func <-parent".
		payload = trimBlanks(rest[n:])
	default:
		return 0, false, fmt.Errorf("no colon after the event name %q", clip(name))
	}
	*ev = Event{
		Task:    task,
		PID:     pid,
		CPU:     cpu,
		Flags:   Flags(flags),
		TS:      ts,
		Name:    name,
		Payload: payload,
	}
	return digits, tp, nil
}

// findSep finds the first "-PID<blanks>[CPU]" in s and returns the index of
// its dash, the ends of the PID, and the bounds of the CPU digits; sep is -1
// when there is none.
func findSep(s string) (sep, pidEnd, cpuStart, cpuEnd int) {
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(s[i:], '-')
		if d < 0 {
			break
		}
		i += d
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 {
			continue
		}
		k := j
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if k == j || k >= len(s) || s[k] != '[' {
			continue
		}
		m := k + 1
		for m < len(s) && isDigit(s[m]) {
			m++
		}
		if m == k+1 || m >= len(s) || s[m] != ']' {
			continue
		}
		return i, j, k + 1, m
	}
	return -1, 0, 0, 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func trimBlanks(s string) string {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return s[i:]
}

func cutBlank(s string) (tok, rest string) {
	i := indexByte(s, ' ')
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// looksLikeTimestamp tells a timestamp token ("486.273468:") from a flags
// token ("d..2."): only the former ends in a colon.
func looksLikeTimestamp(tok string) bool {
	return len(tok) > 1 && tok[len(tok)-1] == ':' && isDigit(tok[0])
}

// parseTimestamp reads "secs.usecs:" (the kernel's "%5lu.%06lu") or
// "secs.nsecs:" (nine decimals) into nanoseconds.
func parseTimestamp(tok string) (ns int64, digits int, why string) {
	const bad = "is not SECONDS.MICROSECONDS:"
	if len(tok) < 3 || tok[len(tok)-1] != ':' {
		return 0, 0, bad
	}
	tok = tok[:len(tok)-1]
	dot := indexByte(tok, '.')
	if dot <= 0 {
		return 0, 0, bad
	}
	frac := tok[dot+1:]
	if len(frac) != 6 && len(frac) != 9 {
		return 0, 0, "is not SECONDS.MICROSECONDS: (6 or 9 decimals)"
	}
	secs, why := parseUint(tok[:dot], math.MaxInt64/1_000_000_000-1)
	if why != "" {
		return 0, 0, "seconds " + why
	}
	f, why := parseUint(frac, 999999999)
	if why != "" {
		return 0, 0, bad
	}
	if len(frac) == 6 {
		f *= 1000
	}
	return int64(secs)*1e9 + int64(f), len(frac), ""
}

// AppendEvent appends ev as one line of the kernel's trace file, with its
// newline:
//
//	%16s-%-7d [%03d] %s %5lu.%06lu: %s: %s
//
// with the flags and their blank left out when ev.Flags is "". Nanoseconds
// of TS below the microsecond are dropped, as the kernel does; nano prints
// nine decimals instead. The payload is ev.Data's when set (ev.Name must then
// be "" or Data's name), else ev.Name and ev.Payload as they are. Lost and
// BufferStarted print the kernel's marker lines.
func AppendEvent(b []byte, ev Event, nano bool) ([]byte, error) {
	start := len(b)
	fail := func(format string, args ...any) ([]byte, error) {
		return b[:start], fmt.Errorf("ftrace: event at %d ns on CPU %d: %s", ev.TS, ev.CPU, fmt.Sprintf(format, args...))
	}
	if ev.CPU < 0 || ev.CPU >= cpumask.MaxCPUs {
		return fail("CPU %d out of range", ev.CPU)
	}
	switch p := ev.Data.(type) {
	case Lost:
		b = append(b, "CPU:"...)
		b = strconv.AppendInt(b, int64(ev.CPU), 10)
		b = append(b, ' ')
		var err error
		if b, err = p.appendTo(b); err != nil {
			return b[:start], err
		}
		return append(b, '\n'), nil
	case BufferStarted:
		b = append(b, "##### CPU "...)
		b = strconv.AppendInt(b, int64(ev.CPU), 10)
		return append(b, " buffer started ####\n"...), nil
	}
	if why := checkTask(ev.Task); why != "" {
		return fail("task %q %s", clip(ev.Task), why)
	}
	if ev.PID < 0 || ev.PID > math.MaxInt32 {
		return fail("PID %d out of range", ev.PID)
	}
	if ev.Flags != "" {
		if why := checkFlags(string(ev.Flags)); why != "" {
			return fail("flags %q %s", ev.Flags, why)
		}
	}
	if ev.TS < 0 {
		return fail("negative timestamp")
	}
	name := ev.Name
	if ev.Data != nil {
		if name != "" && name != ev.Data.Name() {
			return fail("Name %q but Data is %s", name, ev.Data.Name())
		}
		name = ev.Data.Name()
	} else if name == "" || !validEventName(name) {
		return fail("event name %q is not a tracepoint name", name)
	} else if why := checkText(ev.Payload); why != "" {
		return fail("payload %s", why)
	}
	for n := len(ev.Task); n < 16; n++ {
		b = append(b, ' ')
	}
	b = append(b, ev.Task...)
	b = append(b, '-')
	pidStart := len(b)
	b = strconv.AppendInt(b, int64(ev.PID), 10)
	for len(b)-pidStart < 7 {
		b = append(b, ' ')
	}
	b = append(b, " ["...)
	b = appendPadded(b, int64(ev.CPU), 3)
	b = append(b, "] "...)
	if ev.Flags != "" {
		b = append(b, ev.Flags...)
		b = append(b, ' ')
	}
	secs := ev.TS / 1e9
	for n := numDigits(secs); n < 5; n++ {
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, secs, 10)
	b = append(b, '.')
	if nano {
		b = appendPadded(b, ev.TS%1e9, 9)
	} else {
		b = appendPadded(b, ev.TS%1e9/1e3, 6)
	}
	b = append(b, ": "...)
	b = append(b, name...)
	b = append(b, ": "...)
	if ev.Data != nil {
		var err error
		if b, err = AppendPayload(b, ev.Data); err != nil {
			return b[:start], err
		}
	} else {
		b = append(b, ev.Payload...)
	}
	return append(b, '\n'), nil
}

// checkTask reports why a comm cannot be written so that it reads back the
// same, or "".
func checkTask(s string) string {
	switch {
	case s == "":
		return "is empty"
	case s[0] == ' ':
		return "starts with a blank"
	}
	if sep, _, _, _ := findSep(s); sep >= 0 {
		return `holds "-PID [CPU]"`
	}
	return checkText(s)
}

// checkText reports a control character, or "".
func checkText(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Sprintf("holds control character %#02x", c)
		}
	}
	return ""
}

func validEventName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return s != ""
}

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendPadded prints v >= 0 zero-padded to width digits ("%0*d").
func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	d := strconv.AppendInt(tmp[:0], v, 10)
	for n := len(d); n < width; n++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// numDigits is the number of decimal digits of v >= 0.
func numDigits(v int64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
