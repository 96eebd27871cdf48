package replay

import "github.com/tmigr/tmigr/ftrace"

// facts are what several checks of one trace read alike, each a pass over
// the whole recording: the expiries RemoteExpiry's rule 3 makes local (the
// clock, the preexisting timers, the wheel and placement checks), the
// jiffies clock and the last jiffies (the tmigr and nextevt checks), the
// timers pending before the recording, and when the machine's changes
// start (the hrtimer and placement checks). Run finds each once for all
// its checks (Input.facts); a check called alone finds its own. A fact,
// once found, is only read.
type facts struct {
	t      *Trace
	idx    *eventIndex            // nil until asked for
	local  map[*ftrace.Event]bool // nil until asked for
	clocks map[int]*clock         // by HZ
	pre    map[*clock][]preTimer

	lastJ               uint64 // lastJiffies
	changes             int64  // ChangesStart
	hasLastJ, hasChange bool
}

// lastJiffies returns lastJiffies(f.t).
func (f *facts) lastJiffies() uint64 {
	if !f.hasLastJ {
		f.lastJ, f.hasLastJ = lastJiffies(f.t, f.index()), true
	}
	return f.lastJ
}

// changesStart returns f.t.changesStart().
func (f *facts) changesStart() int64 {
	if !f.hasChange {
		f.changes, f.hasChange = f.t.changesStart(), true
	}
	return f.changes
}

func newFacts(t *Trace) *facts { return &facts{t: t} }

// index returns the kinds of the trace's events (kinds.go).
func (f *facts) index() *eventIndex {
	if f.idx == nil {
		f.idx = newEventIndex(f.t.Events)
	}
	return f.idx
}

// remoteExpiry returns a RemoteExpiry for the trace's events.
func (f *facts) remoteExpiry() *RemoteExpiry {
	if f.local == nil {
		f.local = localExpiries(f.t.Events, f.index().having(kindsOf(kTimer)))
	}
	return newRemoteExpiry(f.local)
}

// clock returns the trace's jiffies clock at hz.
func (f *facts) clock(hz int) *clock {
	c := f.clocks[hz]
	if c == nil {
		c = buildClock(f.t, hz, f.remoteExpiry())
		if f.clocks == nil {
			f.clocks = map[int]*clock{}
		}
		f.clocks[hz] = c
	}
	return c
}

// preexisting returns the timers pending before the recording, as clk
// reads them (see preexisting).
func (f *facts) preexisting(clk *clock) []preTimer {
	p, ok := f.pre[clk]
	if !ok {
		p = preexistingWith(f.t, clk, f.remoteExpiry())
		if f.pre == nil {
			f.pre = map[*clock][]preTimer{}
		}
		f.pre[clk] = p
	}
	return p
}
