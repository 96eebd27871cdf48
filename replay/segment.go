package replay

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tmigr/tmigr/ftrace"
)

// Segments. A recording of a big machine holds millions of events, and a
// check that held them all would need memory in proportion (about 230
// bytes an event). The checks read back and ahead of the decision they
// make, but within bounds: the replay of the hierarchy's operations reads
// within a few thousand events of the operation it replays, its farthest
// lookups 46,000 events ahead (docs/performance.md), and the state a
// check starts from unknown (a group's, a CPU's wakeup, a timer's bucket)
// is known again after a few transitions. So a recording longer than a
// segment is read as a stream and checked a segment at a time, each
// segment with a margin of the events before it and after it:
//
//	events  |--margin--|=========== owned ===========|--margin--|
//	         replayed,   every decision made on these   replayed,
//	         not counted lines is counted here, once    not counted
//
// The owned spans tile the recording, so each decision is counted in one
// segment: the one that holds the lines its check reads before and after
// it, and the events before it from which its state is known. The margin
// before a segment is replayed as the start of a recording is (the state
// from before it unknown until the trace shows it), so that what the
// owned lines' decisions read is known as in the whole recording; a
// decision whose state the margin does not settle is undetermined, as at
// the start of any recording (TestSegmentedTraces holds the recordings of
// testdata/traces to that in segments of a few thousand events). Memory is
// then bounded by the segment and the machine's state, whatever the
// recording's length.

// Segment sizes: Options.Segment and Options.Margin, where zero.
const (
	// DefaultSegment is the events a segment owns.
	DefaultSegment = 1 << 20
	// DefaultMargin is the events replayed before and after a segment's
	// own: beyond the farthest lookahead measured (46,235 events).
	DefaultMargin = 1 << 16
)

// RunFile runs the checks o selects on the recording at path, read as a
// stream (see ftrace.Open; "-" reads standard input): one longer than
// Options.Segment events plus its margin is checked a segment at a time
// (Result.Segmented), in memory bounded by the segment rather than by the
// recording.
func RunFile(path string, o Options) (*Result, error) {
	rd, c, err := ftrace.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer c.Close()
	res, err := runStream(rd, path, o, Run)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// runStream reads rd's events a segment at a time and checks each with
// check (Run).
func runStream(rd *ftrace.Reader, name string, o Options, check func(*Trace, Options) (*Result, error)) (*Result, error) {
	seg, margin := o.Segment, o.Margin
	if seg <= 0 {
		seg = DefaultSegment
	}
	if margin <= 0 {
		margin = DefaultMargin
	}
	k := ftrace.KeepData(rd)
	defer k.Close()
	// The first segment: its own and the margin after it, and one event
	// more, which says whether the recording goes on.
	buf := make([]ftrace.Event, 0, seg+2*margin+1)
	adviseHugePages(buf)
	evs, err := k.Read(buf, seg+margin+1)
	if err == io.EOF {
		if len(evs) == 0 {
			return nil, errors.New("the trace holds no events")
		}
		t := &Trace{File: name, Header: rd.Header(), Events: evs}
		return check(t, o)
	}
	if err != nil {
		return nil, err
	}
	// Within the slice evs: the segment's own starts at from and ends at
	// to, and the margin after it follows to.
	var parts []*Result
	from := 0
	// The machine line's changes count from the recording's start
	// (ChangesStart): the guest's start marker, found in the events read
	// so far, else the first event.
	origin, marked, scanned := evs[0].TS, false, 0
	for {
		for ; !marked && scanned < len(evs); scanned++ {
			if m, ok := evs[scanned].Data.(ftrace.TracingMark); ok && m.Text == labStart {
				origin, marked = evs[scanned].TS, true
			}
		}
		to := min(from+seg, len(evs))
		last := err == io.EOF && to+margin >= len(evs)
		if last {
			to = len(evs)
		}
		t := &Trace{File: name, Header: rd.Header(), Events: evs[:min(to+margin, len(evs))]}
		t.own = ownedSpan(evs, from, to, len(parts) == 0, last)
		t.origin, t.hasOrigin = origin, true
		r, rerr := check(t, o)
		if rerr != nil {
			return nil, rerr
		}
		parts = append(parts, r)
		if last {
			break
		}
		// Keep the margin before the next segment's own and what follows
		// it; read on to the margin after it.
		keep := max(to-margin, 0)
		n := copy(evs, evs[keep:])
		clear(evs[n:])
		evs = evs[:n]
		from = to - keep
		scanned = max(scanned-keep, 0)
		if err != io.EOF {
			if evs, err = k.Read(evs, from+seg+margin+1-len(evs)); err != nil && err != io.EOF {
				return nil, err
			}
		}
	}
	return mergeSegments(name, parts, o, seg, margin), nil
}

// ownedSpan is the lines of evs[from:to]: from the line of evs[from] (the
// first segment: from the start, and line 0, the decisions of no line) up
// to the line of evs[to] (the last: to the end). Where the Reader put the
// lines out of order (a late event put in its place by time, see
// ftrace.Open) a span would also hold a margin's line, and the owned lines
// are listed.
func ownedSpan(evs []ftrace.Event, from, to int, first, last bool) lineSpan {
	inOrder := true
	for i := 1; i < len(evs) && inOrder; i++ {
		inOrder = evs[i].Line > evs[i-1].Line
	}
	if !inOrder {
		l := make([]int, 0, to-from+1)
		if first {
			l = append(l, 0)
		}
		for i := from; i < to; i++ {
			l = append(l, evs[i].Line)
		}
		slices.Sort(l)
		return lineSpan{listed: l}
	}
	var s lineSpan
	if !first {
		s.from = evs[from].Line
	}
	if !last {
		s.to = evs[to].Line
	}
	return s
}

// add adds o's decisions to c's, its mismatches and inferences after c's.
func (c *Counts) add(o *Counts) {
	c.Checked += o.Checked
	c.Matched += o.Matched
	c.Undetermined += o.Undetermined
	for why, n := range o.UndeterminedReasons {
		if c.UndeterminedReasons == nil {
			c.UndeterminedReasons = map[string]int{}
		}
		c.UndeterminedReasons[why] += n
	}
	c.Mismatches = append(c.Mismatches, o.Mismatches...)
	c.Inferred = append(c.Inferred, o.Inferred...)
}

// mergeSegments adds up the segments' outcomes: each check's counts, its
// reasons, and its mismatches and inferences in the order of their
// segments.
func mergeSegments(name string, parts []*Result, o Options, seg, margin int) *Result {
	res := &Result{File: name, Segmented: &Segmented{Segments: len(parts), Events: seg, Margin: margin}}
	for _, chk := range o.Checks() {
		var sum *Counts
		for _, p := range parts {
			c := p.Check(chk.Name())
			if c == nil {
				continue
			}
			if sum == nil {
				sum = &Counts{}
			}
			sum.add(c)
		}
		if sum != nil {
			res.add(chk.Name(), sum)
		}
	}
	return res
}
