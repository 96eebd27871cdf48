package ftrace

import (
	"fmt"
	"strings"
)

// trace-cmd report's text differs from the kernel's in ways the Reader
// accepts (read from tracecmd/trace-read.c and libtraceevent; the test
// files in testdata/tracecmd are its real output):
//
//	cpus=2                                         first line ("version = 6" before it, once)
//	CPU 3 is empty                                 a CPU without data
//	ftin:        bash-10478 [001]   503.190934: hrtimer_setup:        hrtimer=0xffff8881047c8220 ...
//	\___/  an instance's name when the file holds several buffers
//	                   %16s-%-5d [%03d]  %6.1000d: the name padded to 20 columns
//	ftin: CPU:1 [2370 EVENTS DROPPED]              lost events ("[EVENTS DROPPED]": count unknown)
//	ftin: record.s-10478   1d.h3.   503.191711: ...  -l: comm in 8 columns, the CPU glued to the flags
//
// Pointers print as "0x..." (libtraceevent prints the raw address), a
// __print_symbolic whose enum names the kernel left unresolved prints the
// number ("mode=0x9"), and the hrtimer plugin (loaded unless -N) rewrites
// two events:
//
//	hrtimer_start: hrtimer=0x... function=hrtimer_wakeup/0x0 expires=... softexpires=...
//	hrtimer_expire_entry: hrtimer=0x... now=... function=hrtimer_wakeup/0x0
//
// with the symbol's offset after a slash and no mode: such an HrtimerStart
// has NoMode set. -t prints nine decimals; -R (raw fields) is not read
// (timer_start then lacks its timeout, and decoding says so).

// checkReportFlags looks for libtraceevent's misreading of timer_start's
// flags. The kernel's print fmt masks them with
//
//	__print_flags(REC->flags & (0x00040000 | 0x00080000 | 0x00100000 | 0x00200000), "|", ...)
//
// and trace-cmd report 3.1.6 (libtraceevent 1.7.1) gets the mask wrong,
// as if it read (flags & 0x00040000) | 0x00080000 | ...: every timer prints
// D|P|I, whatever its flags; the kernel's text of the same recording shows
// the real ones (testdata/tracecmd: a process_timeout timer is "flags=" in
// the kernel's text, "flags=D|P|I" in the report's). Where every
// timer_start of a report carries D|P|I, the flags are that artefact: the
// events say so (FlagsUnknown: only M may be right) and the Source warns. A report whose timers
// differ (a libtraceevent without the fault) is left alone.
func checkReportFlags(events []Event, src *Source) {
	const dpi = TimerDeferrable | TimerPinned | TimerIrqsafe
	n := 0
	for _, ev := range events {
		if p, ok := ev.Data.(TimerStart); ok {
			if p.Flags&dpi != dpi {
				return
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	for i, ev := range events {
		if p, ok := ev.Data.(TimerStart); ok {
			p.FlagsUnknown = true
			events[i].Data = p
		}
	}
	src.Warnings = append(src.Warnings, fmt.Sprintf("timer_start flags: all %d timers show D|P|I, the mark of libtraceevent misreading the kernel's mask; only M is known (read the trace.dat for the flags)", n))
}

// sawReport notes a form only trace-cmd report prints.
func (r *Reader) sawReport() {
	if r.format == FormatUnknown || r.format == FormatTracefs {
		r.format = FormatReport
	}
}

// cutInstance removes trace-cmd report's buffer-name column ("ftin: ")
// from the start of s. The kernel never prints a line of that shape: its
// event lines start with the comm right-aligned in 16 columns (a comm has at
// most 15 characters), and the name before ": " has no blank.
func (r *Reader) cutInstance(s string) string {
	t := trimBlanks(s)
	i := strings.Index(t, ": ")
	if i <= 0 || strings.IndexByte(t[:i], ' ') >= 0 || t[0] == '#' {
		return s
	}
	rest := t[i+2:]
	switch {
	case strings.HasPrefix(rest, "CPU:"), strings.HasPrefix(rest, "cpus="):
		return rest
	}
	if sep, _, _, _ := findSep(rest); sep >= 0 {
		return rest
	}
	if _, _, _, ok := parseLatencyLine(rest); ok {
		return rest
	}
	return s
}

// parseLatencyLine parses trace-cmd report -l's layout,
//
//	%8.8s-%-5d %3d%s %6.1000d: name: payload
//	record.s-10478   1d.h3.   503.191711: hrtimer_expire_entry: hrtimer=0x...
//
// where the comm is cut to 8 characters and the CPU is glued to the
// latency flags.
func parseLatencyLine(s string) (ev Event, digits int, tp bool, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '-' || i == 0 {
			continue
		}
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 || j >= len(s) || s[j] != ' ' {
			continue
		}
		k := j
		for k < len(s) && s[k] == ' ' {
			k++
		}
		c := k
		for c < len(s) && isDigit(s[c]) {
			c++
		}
		if c == k || c >= len(s) || isDigit(s[c]) || s[c] == ' ' {
			continue
		}
		flagsEnd := c
		for flagsEnd < len(s) && s[flagsEnd] != ' ' {
			flagsEnd++
		}
		if checkFlags(s[c:flagsEnd]) != "" {
			continue
		}
		// Rebuild the kernel's layout and parse that: one parser for the
		// timestamp, the name and the payload.
		line := s[:j] + " [" + s[k:c] + "] " + s[c:flagsEnd] + s[flagsEnd:]
		var e Event
		d, t, err := parseLine(line, &e)
		if err != nil {
			return Event{}, 0, false, false
		}
		e.Task = strings.TrimLeft(s[:i], " ")
		return e, d, t, true
	}
	return Event{}, 0, false, false
}

// normalizeReport rewrites what trace-cmd's libtraceevent prints
// differently from the kernel, where the decoders would not take it: a
// function's "/0x..." offset (cutFunctionOffset) and a NULL pointer, which
// its %p prints as "(nil)" and the kernel as zeros.
func normalizeReport(p string) string {
	if strings.IndexByte(p, '/') >= 0 {
		p = cutFunctionOffset(p)
	}
	if strings.IndexByte(p, '(') >= 0 && strings.Contains(p, "=(nil)") {
		p = strings.ReplaceAll(p, "=(nil)", "=0x0")
	}
	return p
}

// cutFunctionOffset removes the "/0x..." that trace-cmd's plugins append
// to a function's name ("function=hrtimer_wakeup/0x0"); the kernel's %ps
// prints no offset, and no symbol holds a slash.
func cutFunctionOffset(p string) string {
	i := strings.Index(p, "function=")
	if i < 0 {
		return p
	}
	v := p[i+len("function="):]
	end := strings.IndexByte(v, ' ')
	if end < 0 {
		end = len(v)
	}
	slash := strings.IndexByte(v[:end], '/')
	if slash < 0 || !strings.HasPrefix(v[slash:], "/0x") {
		return p
	}
	for _, c := range v[slash+3 : end] {
		if !isHexDigit(byte(c)) {
			return p
		}
	}
	at := i + len("function=") + slash
	return p[:at] + p[at+(end-slash):]
}

func isHexDigit(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' }

// rawCount explains a timestamp that is a bare number: trace-cmd report
// prints the clock's raw count ("%12d:") for a clock that does not count
// nanoseconds.
func rawCount(tok string) error {
	t := strings.TrimSuffix(tok, ":")
	if t == "" || len(t) == len(tok) {
		return nil
	}
	for i := 0; i < len(t); i++ {
		if !isDigit(t[i]) {
			return nil
		}
	}
	return fmt.Errorf("timestamp %q is a raw clock count, not seconds (a trace clock such as x86-tsc or counter); record with a clock that counts nanoseconds (local, global, mono, boot)", clip(tok))
}
