package hier

import (
	"testing"

	"pgregory.net/rapid"
)

// QuietRemote is never wrong where it says yes: the walk BeginRemote
// starts then claims no CPU, and no other CPU's state changes but the
// lazy removal of ignored events from the groups it handles, on random
// hierarchies of active and idle CPUs with their global events.
func TestQuietRemote(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 80).Draw(rt, "cpus")
		nodes := rapid.IntRange(1, min(n, 4)).Draw(rt, "nodes")
		h, err := New(Options{NodeOf: evenNodes(n, nodes), Isolation: Isolation{Timekeeper: -1}})
		if err != nil {
			rt.Fatal(err)
		}
		for c := 0; c < n; c++ {
			if err := h.Prepare(c); err != nil {
				rt.Fatal(err)
			}
			if err := h.SetAvailable(c, false); err != nil {
				rt.Fatal(err)
			}
		}
		idle := make([]bool, n)
		cpu := rapid.IntRange(0, n-1)
		for i, steps := 0, rapid.IntRange(1, 60).Draw(rt, "steps"); i < steps; i++ {
			c := cpu.Draw(rt, "cpu")
			if idle[c] {
				h.Activate(c)
			} else {
				h.Deactivate(c, int64(rapid.IntRange(1, 100).Draw(rt, "nextexp"))*1000)
			}
			idle[c] = !idle[c]
		}
		now := int64(rapid.IntRange(0, 110).Draw(rt, "now")) * 1000
		for c := 0; c < n; c++ {
			if !h.QuietRemote(c, now) {
				continue
			}
			before := make([]CPUInfo, n)
			for i := range before {
				before[i] = h.CPU(i)
			}
			var r Remote
			h.BeginRemote(&r, c, now, 0)
			if target := r.Next(); target >= 0 {
				rt.Fatalf("CPU %d at %d: QuietRemote, but the walk claims CPU %d\n%s", c, now, target, h.State())
			}
			for i := range before {
				got := h.CPU(i)
				if b := before[i]; b.EvtIgnore && b.EvtQueued && !got.EvtQueued {
					// The lazy removal of an ignored event from a
					// group of the walk's.
					got.EvtQueued = true
				}
				if i != c && got != before[i] {
					rt.Fatalf("CPU %d at %d: QuietRemote, but the walk changed CPU %d: %+v, was %+v", c, now, i, got, before[i])
				}
			}
		}
		if w := h.Warnings(); w != 0 {
			rt.Fatalf("%d kernel WARN conditions met\n%s", w, h.State())
		}
	})
}
