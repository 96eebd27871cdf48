package replay

import (
	"fmt"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// dropAfter removes n events of cpu from the i-th event on and, with
// marker, puts the kernel's "[LOST n EVENTS]" marker in their place.
func dropAfter(events []ftrace.Event, i, cpu, n int, marker bool) []ftrace.Event {
	var out []ftrace.Event
	dropped := 0
	for k, ev := range events {
		if k >= i && ev.CPU == cpu && dropped < n {
			if dropped == 0 && marker {
				out = append(out, ftrace.Event{CPU: cpu, TS: ev.TS, Data: ftrace.Lost{Count: int64(n)}})
			}
			dropped++
			continue
		}
		out = append(out, ev)
	}
	return out
}

// TestLostEventsSynthetic: in traces our hierarchy printed, where every
// decision is determined, a stretch of one CPU's lines lost behind a
// "[LOST n EVENTS]" marker makes the decisions it touches undetermined
// with the reason "events lost", and never a mismatch. The same stretch
// dropped without the marker is found: the trace no longer is what the
// kernel did. (Its timer lines are not the wheel's: the nextevt check has
// its own test on a recording.)
func TestLostEventsSynthetic(t *testing.T) {
	caught := 0
	for i, s := range synthShapes {
		if s.CPUs > 24 {
			continue
		}
		y := newSynth(t, s, int64(40+i))
		y.boot(t)
		y.run(300)
		tr, _ := y.trace(t)
		s := withAt(s, tr)
		for k, frac := range []float64{0.3, 0.5, 0.7} {
			at := int(float64(len(tr.Events)) * frac)
			cpu := tr.Events[at].CPU
			for _, marker := range []bool{true, false} {
				ev := dropAfter(tr.Events, at, cpu, 6+4*k, marker)
				lt := &Trace{Header: tr.Header, Events: renumber(ev)}
				c, err := CheckTmigr(lt, s)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%d CPUs, CPU %d's lines from event %d", s.CPUs, cpu, at)
				if marker {
					for _, m := range c.Mismatches {
						t.Errorf("%s lost: line %d: %s: kernel %s, model %s", name, m.Line, m.Event, m.Kernel, m.Model)
					}
					if c.UndeterminedReasons[whyLost] == 0 {
						t.Errorf("%s lost: nothing undetermined for it: %v", name, c.UndeterminedReasons)
					}
				} else if len(c.Mismatches) > 0 {
					caught++
				}
			}
		}
	}
	if caught == 0 {
		t.Error("no stretch dropped without its marker was found")
	}
}

// renumber gives the events the line numbers of a file of them.
func renumber(ev []ftrace.Event) []ftrace.Event {
	for i := range ev {
		ev[i].Line = i + 1
	}
	return ev
}

// TestLostEventsWheel: a CPU's timer lines lost behind a marker leave its
// bases' clocks unknown: every expiry whose loss the wheel check notices
// without the marker (the timer then seems pending, holding the base clock
// back) is, with the marker, undetermined and not a mismatch.
func TestLostEventsWheel(t *testing.T) {
	noticed := 0
	for _, f := range []string{"../testdata/traces/vm2-1node-busy-sleeper.txt", "../testdata/traces/vm9-1node-mixed.txt"} {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tried := 0
		for i, e := range tr.Events {
			x, ok := e.Data.(ftrace.TimerExpireEntry)
			if !ok || tried == 60 {
				continue
			}
			tried++
			// The expiry's cancel, entry and exit are lost.
			drop := func(marker bool) []ftrace.Event {
				var ev []ftrace.Event
				for k, d := range tr.Events {
					gone := false
					switch p := d.Data.(type) {
					case ftrace.TimerCancel:
						gone = p.Timer == x.Timer && k < i && k >= i-3
					case ftrace.TimerExpireEntry:
						gone = k == i
					case ftrace.TimerExpireExit:
						gone = p.Timer == x.Timer && k > i && k <= i+3
					}
					if gone && d.CPU == e.CPU {
						if marker && k == i {
							ev = append(ev, ftrace.Event{CPU: e.CPU, TS: e.TS, Data: ftrace.Lost{Count: 3}})
						}
						continue
					}
					ev = append(ev, d)
				}
				return renumber(ev)
			}
			without := CheckWheel(&Trace{Header: tr.Header, Events: drop(false)}, tr.Header.Machine.HZ)
			if len(without.Mismatches) == 0 {
				continue
			}
			noticed++
			with := CheckWheel(&Trace{Header: tr.Header, Events: drop(true)}, tr.Header.Machine.HZ)
			if len(with.Mismatches) > 0 || with.UndeterminedReasons[whyLost] == 0 {
				t.Errorf("%s: expiry at line %d lost behind a marker: %v, undetermined %v", f, e.Line, with.Mismatches, with.UndeterminedReasons)
			}
		}
	}
	if noticed == 0 {
		t.Error("no lost expiry was noticed without its marker: the test shows nothing")
	}
	t.Logf("%d lost expiries noticed without the marker", noticed)
}

// TestLostEventsNextevt: the same for the nextevt check, whose bases
// rebuilt from the timer lines miss a timer whose start was lost.
func TestLostEventsNextevt(t *testing.T) {
	tr, err := ReadFile("../testdata/traces/vm9-1node-mixed.txt")
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	noticed, tried := 0, 0
	for i, e := range tr.Events {
		if _, ok := e.Data.(ftrace.TimerStart); !ok || tried == 80 {
			continue
		}
		tried++
		drop := func(marker bool) []ftrace.Event {
			ev := append([]ftrace.Event(nil), tr.Events[:i]...)
			if marker {
				ev = append(ev, ftrace.Event{CPU: e.CPU, TS: e.TS, Data: ftrace.Lost{Count: 1}})
			}
			return renumber(append(ev, tr.Events[i+1:]...))
		}
		without, err := CheckNextevt(&Trace{Header: tr.Header, Events: drop(false)}, s)
		if err != nil {
			t.Fatal(err)
		}
		// A start lost without its marker shows as a mismatch, or,
		// where the timer's cancel or expiry follows, as a timer pending
		// with no start in the trace.
		if len(without.Mismatches) == 0 && without.UndeterminedReasons[whyStartMissing] == 0 {
			continue
		}
		noticed++
		with, err := CheckNextevt(&Trace{Header: tr.Header, Events: drop(true)}, s)
		if err != nil {
			t.Fatal(err)
		}
		if len(with.Mismatches) > 0 || with.UndeterminedReasons[whyLost] == 0 {
			t.Errorf("start at line %d lost behind a marker: %v, undetermined %v", e.Line, with.Mismatches, with.UndeterminedReasons)
		}
	}
	if noticed == 0 {
		t.Error("no lost start was noticed without its marker: the test shows nothing")
	}
	t.Logf("%d lost starts noticed without the marker", noticed)
}
