package replay

import "github.com/tmigr/tmigr/ftrace"

// Kinds of event. Many passes of the checks read only a few kinds of
// event (the timer starts, the markers of lost events, the hotplug lines)
// among a recording's millions, nearly all of them the hierarchy's
// operations: a pass over every event costs as much as reading a segment
// of 112-byte events from memory, several milliseconds, and the checks
// make a score of them. A trace's events are classed once (eventIndex),
// and such a pass reads the indexes of its kinds only, in the trace's
// order, with the same result as reading every event and skipping the
// others.
type evKind uint8

const (
	kOther   evKind = iota // the hierarchy's other lines, anything else
	kTimer                 // timer_* (the wheel's tracepoints)
	kHrtimer               // hrtimer_*
	kLost                  // ftrace.Lost, ftrace.BufferStarted: the buffer lost events
	kMark                  // tracing_mark_write
	kHotplug               // tmigr_cpu_available, _online, _unavailable, _offline
	kRemote                // tmigr_handle_remote, tmigr_handle_remote_cpu
	kIdle                  // tmigr_cpu_idle, tmigr_cpu_new_timer_idle
	kTopo                  // tmigr_group_set, tmigr_connect_*: the hierarchy built
	nKinds
)

// kinds is a set of kinds.
type kinds uint16

func kindsOf(ks ...evKind) kinds {
	var s kinds
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

func (s kinds) has(k evKind) bool { return s&(1<<k) != 0 }

// kindOf classes an event by its payload.
func kindOf(p ftrace.Payload) evKind {
	switch p.(type) {
	case ftrace.TimerInit, ftrace.TimerStart, ftrace.TimerExpireEntry, ftrace.TimerExpireExit,
		ftrace.TimerCancel, ftrace.TimerBaseIdle:
		return kTimer
	case ftrace.HrtimerInit, ftrace.HrtimerSetup, ftrace.HrtimerStart, ftrace.HrtimerStartExpired,
		ftrace.HrtimerRearm, ftrace.HrtimerExpireEntry, ftrace.HrtimerExpireExit, ftrace.HrtimerCancel:
		return kHrtimer
	case ftrace.Lost, ftrace.BufferStarted:
		return kLost
	case ftrace.TracingMark:
		return kMark
	case ftrace.TmigrCPUAvailable, ftrace.TmigrCPUOnline, ftrace.TmigrCPUUnavailable, ftrace.TmigrCPUOffline:
		return kHotplug
	case ftrace.TmigrHandleRemote, ftrace.TmigrHandleRemoteCPU:
		return kRemote
	case ftrace.TmigrCPUIdle, ftrace.TmigrCPUNewTimerIdle:
		return kIdle
	case ftrace.TmigrGroupSet, ftrace.TmigrConnectCPUParent, ftrace.TmigrConnectChildParent:
		return kTopo
	}
	return kOther
}

// eventIndex is the kind of each event of a trace, and the indexes of the
// events of each set of kinds asked for; and, read in the same pass, the
// least and the greatest CPU of the events (Run's check of them).
type eventIndex struct {
	kind           []evKind
	of             map[kinds][]int
	minCPU, maxCPU int // 0, -1 without events
}

func newEventIndex(evs []ftrace.Event) *eventIndex {
	x := &eventIndex{kind: make([]evKind, len(evs)), of: map[kinds][]int{}, maxCPU: -1}
	for i := range evs {
		ev := &evs[i]
		x.kind[i] = kindOf(ev.Data)
		if i == 0 || ev.CPU < x.minCPU {
			x.minCPU = ev.CPU
		}
		x.maxCPU = max(x.maxCPU, ev.CPU)
	}
	return x
}

// union returns the distinct indexes of a and b, two ascending lists, in
// ascending order.
func union(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return out
}

// having returns the indexes of the events of the kinds s, in order. The
// list is the index's: it must not be changed.
func (x *eventIndex) having(s kinds) []int {
	if l, ok := x.of[s]; ok {
		return l
	}
	var l []int
	for i, k := range x.kind {
		if s.has(k) {
			l = append(l, i)
		}
	}
	x.of[s] = l
	return l
}
