package watch

import (
	"cmp"
	"slices"

	"github.com/tmigr/tmigr/explain"
	"github.com/tmigr/tmigr/ftrace"
)

// DefaultWindow is how much of the stream's past, ns of trace time, an
// explanation reads: enough for the owner's last start and idle entry and
// the handler's role of most foreign timers (a timer armed longer ago is
// explained with "timer armed before the recording").
const DefaultWindow = 4e9

// maxWindowEvents bounds the window's memory at a high event rate.
const maxWindowEvents = 1 << 18

// window keeps the events of the last span ns of the stream.
type window struct {
	span   int64
	events []ftrace.Event
	head   int // events[head:] are live
}

func newWindow(span int64) *window { return &window{span: span} }

func (w *window) add(ev *ftrace.Event) {
	w.events = append(w.events, *ev)
	for w.head < len(w.events) && (ev.TS-w.events[w.head].TS > w.span || len(w.events)-w.head > maxWindowEvents) {
		w.events[w.head] = ftrace.Event{}
		w.head++
	}
	// Compact once the dead prefix is as long as the live part.
	if w.head > 1024 && w.head >= len(w.events)-w.head {
		n := copy(w.events, w.events[w.head:])
		clear(w.events[n:])
		w.events, w.head = w.events[:n], 0
	}
}

func (w *window) live() []ftrace.Event { return w.events[w.head:] }

// pendingWhy is a foreign expiry on an isolated or nohz_full CPU that the
// period's end explains.
type pendingWhy struct {
	cpu  int
	line int
	ts   int64
}

// explain returns, per CPU, the one-line explanation of the latest foreign
// expiry of the period on each isolated or nohz_full CPU that ran one.
func (w *Watcher) explain() map[int]string {
	if len(w.pending) == 0 {
		return nil
	}
	latest := map[int]pendingWhy{}
	for _, p := range w.pending {
		latest[p.cpu] = p
	}
	out := map[int]string{}
	for c, x := range w.explainLatest(latest) {
		out[c] = x.Brief()
	}
	return out
}

// Window returns a copy of the events of the window: the stream's last
// DefaultWindow ns.
func (w *Watcher) Window() []ftrace.Event { return slices.Clone(w.window.live()) }

// Why explains the latest foreign expiry on an isolated or nohz_full CPU
// observed so far in the period, from the window; nil when there is none,
// or it left the window.
func (w *Watcher) Why() *explain.Expiry {
	if len(w.pending) == 0 {
		return nil
	}
	p := w.pending[len(w.pending)-1]
	return w.explainLatest(map[int]pendingWhy{p.cpu: p})[p.cpu]
}

// explainLatest explains the given expiries (by CPU) from the window,
// returning those it found.
func (w *Watcher) explainLatest(want map[int]pendingWhy) map[int]*explain.Expiry {
	// A live stream may hold an event another CPU committed late (see
	// ftrace.NewLiveReader); explain reads events in time order.
	evs := w.window.live()
	if !slices.IsSortedFunc(evs, byTime) {
		evs = slices.Clone(evs)
		slices.SortStableFunc(evs, byTime)
	}
	hdr := ftrace.Header{Machine: w.m.Machine}
	rep, err := explain.Build(evs, hdr, explain.Options{})
	out := map[int]*explain.Expiry{}
	if err != nil {
		return out
	}
	for i := range rep.Events {
		x := &rep.Events[i]
		if p, ok := want[x.Handler]; ok && x.TS == p.ts && x.Line == p.line {
			out[x.Handler] = x
		}
	}
	return out
}

func byTime(a, b ftrace.Event) int { return cmp.Compare(a.TS, b.TS) }
