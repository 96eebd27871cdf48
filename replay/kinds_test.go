package replay

import (
	"slices"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// TestKindOf: every payload a pass reads by its kind is classed in that
// kind, and the hierarchy's operations are not.
func TestKindOf(t *testing.T) {
	cases := []struct {
		p    ftrace.Payload
		want evKind
	}{
		{ftrace.TimerInit{}, kTimer}, {ftrace.TimerStart{}, kTimer}, {ftrace.TimerExpireEntry{}, kTimer},
		{ftrace.TimerExpireExit{}, kTimer}, {ftrace.TimerCancel{}, kTimer}, {ftrace.TimerBaseIdle{}, kTimer},
		{ftrace.HrtimerInit{}, kHrtimer}, {ftrace.HrtimerSetup{}, kHrtimer}, {ftrace.HrtimerStart{}, kHrtimer},
		{ftrace.HrtimerStartExpired{}, kHrtimer}, {ftrace.HrtimerRearm{}, kHrtimer},
		{ftrace.HrtimerExpireEntry{}, kHrtimer}, {ftrace.HrtimerExpireExit{}, kHrtimer}, {ftrace.HrtimerCancel{}, kHrtimer},
		{ftrace.Lost{}, kLost}, {ftrace.BufferStarted{}, kLost},
		{ftrace.TracingMark{}, kMark},
		{ftrace.TmigrCPUAvailable{}, kHotplug}, {ftrace.TmigrCPUOnline{}, kHotplug},
		{ftrace.TmigrCPUUnavailable{}, kHotplug}, {ftrace.TmigrCPUOffline{}, kHotplug},
		{ftrace.TmigrHandleRemote{}, kRemote}, {ftrace.TmigrHandleRemoteCPU{}, kRemote},
		{ftrace.TmigrCPUIdle{}, kIdle}, {ftrace.TmigrCPUNewTimerIdle{}, kIdle},
		{ftrace.TmigrGroupSet{}, kTopo}, {ftrace.TmigrConnectCPUParent{}, kTopo}, {ftrace.TmigrConnectChildParent{}, kTopo},
		{ftrace.TmigrCPUActive{}, kOther}, {ftrace.TmigrCPUNewTimer{}, kOther}, {ftrace.TmigrUpdateEvents{}, kOther},
		{ftrace.TmigrGroupSetCPUActive{}, kOther}, {ftrace.TmigrGroupSetCPUInactive{}, kOther},
		{nil, kOther},
	}
	for _, c := range cases {
		if got := kindOf(c.p); got != c.want {
			t.Errorf("kindOf(%T) = %d, want %d", c.p, got, c.want)
		}
	}
}

// TestEventIndex: on every recording of testdata/traces, the index lists
// for a set of kinds exactly the events a pass over all of them would
// read, in order, and the CPUs' bounds are the events'.
func TestEventIndex(t *testing.T) {
	sets := []kinds{kindsOf(kTimer), kindsOf(kLost), kindsOf(kIdle), kindsOf(kTimer, kLost, kHotplug), kindsOf(kOther, kRemote)}
	for _, f := range traceFiles(t) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		x := newEventIndex(tr.Events)
		for _, s := range sets {
			var want []int
			for i := range tr.Events {
				if s.has(kindOf(tr.Events[i].Data)) {
					want = append(want, i)
				}
			}
			got := x.having(s)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: having(%b): %d events, want %d", f, s, len(got), len(want))
			}
			if again := x.having(s); len(again) > 0 && &again[0] != &got[0] {
				t.Errorf("%s: having(%b) made again, not kept", f, s)
			}
		}
		lo, hi := 0, -1
		for i, ev := range tr.Events {
			if i == 0 || ev.CPU < lo {
				lo = ev.CPU
			}
			hi = max(hi, ev.CPU)
		}
		if x.minCPU != lo || x.maxCPU != hi {
			t.Errorf("%s: CPUs %d-%d, want %d-%d", f, x.minCPU, x.maxCPU, lo, hi)
		}
	}
}

// TestUnion: the union of two ascending lists of indexes, each index once.
func TestUnion(t *testing.T) {
	for _, c := range []struct{ a, b, want []int }{
		{nil, nil, []int{}},
		{[]int{1, 3}, nil, []int{1, 3}},
		{nil, []int{2}, []int{2}},
		{[]int{1, 3, 5}, []int{2, 3, 6}, []int{1, 2, 3, 5, 6}},
		{[]int{4}, []int{1, 2, 4}, []int{1, 2, 4}},
	} {
		if got := union(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("union(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
