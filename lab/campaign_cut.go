package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
)

// Cut is a recording cut to a window of its events (CutRecording).
type Cut struct {
	Text []byte
	// From and To are the trace times (ns) of the window's first and
	// last event.
	From, To int64
	// Events are the event lines kept, Of those of the recording.
	Events, Of int
	// Mismatch is the target mismatch as the cut shows it (its line in
	// the cut).
	Mismatch MismatchRef
}

// CutRecording cuts a recording (tracefs text with its "# machine:" line,
// as Record writes it) to the shortest window of its events that still
// shows the target mismatch: a mismatch of the same check with the same
// event and the same kernel and model values, on any line. It bisects:
// first the window's end (the earliest end from the recording's start that
// still shows it), then its start (the latest start with that end). A
// replay's verdict need not be monotonic in the window, so the window is
// the bisection's, short, not always the shortest there is; the cut shows
// the mismatch, checked at the end.
//
// What a cut keeps besides the window's events: the header lines (the
// entries line rewritten to the count kept), the guest's start marker (the
// run-time changes count from it), and the run-time changes that begin
// before the window ends, with their markers; the machine line's at= loses
// the others. Events cut away before the window make some decisions
// undetermined, and a change whose effects were cut away shows as an
// availability mismatch of its own: the cut can show mismatches that the
// whole recording does not; the target is the one that counts.
func CutRecording(ctx context.Context, text []byte, target MismatchRef, check func(*replay.Trace) (*replay.Result, error)) (*Cut, error) {
	rec, err := splitRecording(text)
	if err != nil {
		return nil, err
	}
	e := len(rec.events)
	if e == 0 {
		return nil, errors.New("the recording has no events to cut")
	}
	t := -1 // the target's event, when it is on an event line
	for k, li := range rec.events {
		if li+1 == target.Line {
			t = k
		}
	}
	pred := func(a, b int) (*MismatchRef, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cut := rec.build(a, b)
		tr, err := replay.Read(bytes.NewReader(cut))
		if err != nil {
			return nil, fmt.Errorf("the cut of events %d-%d does not read: %v", a, b-1, err)
		}
		res, err := check(tr)
		if err != nil {
			return nil, nil // a cut the replay refuses does not show it
		}
		if c := res.Check(target.Check); c != nil {
			for _, m := range c.Mismatches {
				if m.Event == target.Event && m.Kernel == target.Kernel && m.Model == target.Model {
					return &MismatchRef{Check: target.Check, Mismatch: m}, nil
				}
			}
		}
		return nil, nil
	}
	if m, err := pred(0, e); err != nil {
		return nil, err
	} else if m == nil {
		return nil, errors.New("the recording, rewritten for cutting, does not show the mismatch")
	}
	// The earliest end.
	lo, hi := max(t+1, 1), e
	for lo < hi {
		mid := (lo + hi) / 2
		m, err := pred(0, mid)
		if err != nil {
			return nil, err
		}
		if m != nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	b := hi
	// The latest start.
	lo, hi = 0, b-1
	if t >= 0 {
		hi = min(hi, t)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		m, err := pred(mid, b)
		if err != nil {
			return nil, err
		}
		if m != nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	a := lo
	m, err := pred(a, b)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("the bisected window does not show the mismatch")
	}
	return &Cut{Text: rec.build(a, b), From: rec.ts[a], To: rec.ts[b-1], Events: b - a, Of: e, Mismatch: *m}, nil
}

// splitRec is a recording split for cutting.
type splitRec struct {
	lines   []string // with their "\n"
	isEvent []bool   // the line has an event's time
	header  int      // lines[:header] are the header
	machine int      // the machine line's index, -1 without one
	entries int      // the entries line's index, -1 without one
	m       *ftrace.Machine
	// events are the indices of the event lines a window may hold, ts
	// their times (ns).
	events []int
	ts     []int64
	// start is the start marker's line, -1 without one; changeMarks[k]
	// the line of change k's marker, -1 when missing.
	start       int
	changeMarks []int
	base        int64 // the time the changes count from
}

// traceTS finds an event line's time, "  16.482628: ".
var traceTS = regexp.MustCompile(`\s(\d+)\.(\d{6,9}): `)

const markPrefix = "tracing_mark_write: tmigr-lab: "

func splitRecording(text []byte) (*splitRec, error) {
	r := &splitRec{machine: -1, entries: -1, start: -1}
	s := string(text)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			r.lines = append(r.lines, s)
			break
		}
		r.lines = append(r.lines, s[:i+1])
		s = s[i+1:]
	}
	for r.header < len(r.lines) && strings.HasPrefix(r.lines[r.header], "#") {
		l := strings.TrimRight(r.lines[r.header], "\r\n")
		switch {
		case strings.HasPrefix(l, "# machine: "):
			m, err := ftrace.ParseMachine(strings.TrimPrefix(l, "# machine: "))
			if err != nil {
				return nil, fmt.Errorf("the machine line: %v", err)
			}
			r.machine, r.m = r.header, &m
		case strings.HasPrefix(l, "# entries-in-buffer/entries-written: "):
			r.entries = r.header
		}
		r.header++
	}
	if r.m != nil {
		r.changeMarks = make([]int, len(r.m.At))
		for k := range r.changeMarks {
			r.changeMarks[k] = -1
		}
	}
	r.isEvent = make([]bool, len(r.lines))
	nextChange := 0
	firstTS := int64(-1)
	for li := r.header; li < len(r.lines); li++ {
		l := r.lines[li]
		sm := traceTS.FindStringSubmatch(l)
		if sm == nil {
			continue // not an event: kept as it is
		}
		r.isEvent[li] = true
		frac := sm[2] + strings.Repeat("0", 9-len(sm[2]))
		sec, err1 := strconv.ParseInt(sm[1], 10, 64)
		ns, err2 := strconv.ParseInt(frac, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: a time out of range", li+1)
		}
		ts := sec*1e9 + ns
		if firstTS < 0 {
			firstTS = ts
		}
		if i := strings.Index(l, markPrefix); i >= 0 {
			what := strings.TrimRight(l[i+len(markPrefix):], "\r\n")
			switch {
			case what == "start" && r.start < 0:
				r.start, r.base = li, ts
				continue
			case r.m != nil && nextChange < len(r.m.At):
				r.changeMarks[nextChange] = li
				nextChange++
				continue
			}
		}
		r.events = append(r.events, li)
		r.ts = append(r.ts, ts)
	}
	if r.start < 0 {
		r.base = firstTS
	}
	return r, nil
}

// build returns the recording cut to its events a..b-1.
func (r *splitRec) build(a, b int) []byte {
	keep := make([]bool, len(r.lines))
	for li := r.header; li < len(r.lines); li++ {
		keep[li] = !r.isEvent[li]
	}
	for _, li := range r.events[a:b] {
		keep[li] = true
	}
	if r.start >= 0 {
		keep[r.start] = true
	}
	// The changes that begin before the window's end.
	changes := 0
	if r.m != nil {
		end := r.ts[b-1]
		for k := range r.m.At {
			if k > 0 && r.base+int64(r.m.At[k-1].At) > end {
				break
			}
			changes++
			if r.changeMarks[k] >= 0 {
				keep[r.changeMarks[k]] = true
			}
		}
	}
	entries := 0
	for li := r.header; li < len(r.lines); li++ {
		if keep[li] && r.isEvent[li] {
			entries++
		}
	}
	var out strings.Builder
	for li, l := range r.lines {
		switch {
		case li == r.machine && changes < len(r.m.At):
			m := *r.m
			m.At = m.At[:changes]
			out.WriteString("# machine: " + m.String() + "\n")
		case li == r.entries:
			out.WriteString(rewriteEntries(l, entries))
		case li < r.header || keep[li]:
			out.WriteString(l)
		}
	}
	return []byte(out.String())
}

// entriesRE is the kernel's "# entries-in-buffer/entries-written: 403/403   #P:2".
var entriesRE = regexp.MustCompile(`^(# entries-in-buffer/entries-written: )\d+/\d+`)

func rewriteEntries(l string, n int) string {
	return entriesRE.ReplaceAllString(l, fmt.Sprintf("${1}%d/%d", n, n))
}
