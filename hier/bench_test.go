package hier

import (
	"testing"
)

// allActive returns a 128-CPU, 2-node hierarchy (3 levels) with every CPU
// active.
func allActive(tb testing.TB) *Hierarchy {
	h := newPrepared(tb, 128, 2, Options{})
	for c := 0; c < 128; c++ {
		if err := h.SetAvailable(c, false); err != nil {
			tb.Fatal(err)
		}
	}
	return h
}

// lastActive returns the same machine with only CPU 0 active and an event
// queued on every other CPU, so CPU 0's transitions walk to the top.
func lastActive(tb testing.TB) *Hierarchy {
	h := allActive(tb)
	for c := 1; c < 128; c++ {
		h.Deactivate(c, int64(1_000_000+c))
	}
	return h
}

// TestHotPathsAllocateNothing: the idle-path entry points allocate nothing
// (a requirement of the runtime and the simulator, checked here with
// testing.AllocsPerRun rather than timed).
func TestHotPathsAllocateNothing(t *testing.T) {
	for name, h := range map[string]*Hierarchy{"one of many": allActive(t), "last CPU": lastActive(t)} {
		x := nopExpirer{}
		var sink int64
		for op, f := range map[string]func(){
			"Deactivate+Activate": func() { sink += h.Deactivate(5, 2_000_000); h.Activate(5) },
			"NewTimer": func() {
				sink += h.Deactivate(0, 3_000_000)
				sink += h.NewTimer(0, 2_500_000)
				sink += h.NewTimer(0, 3_000_000)
				h.Activate(0)
			},
			"RequiresHandleRemote": func() {
				if h.RequiresHandleRemote(0, 1_000_000) {
					sink++
				}
			},
			"HandleRemote": func() { h.HandleRemote(0, 500_000, 1, x) },
			"QuickCheck":   func() { sink += h.QuickCheck(0, 4_000_000) },
		} {
			if a := testing.AllocsPerRun(100, f); a != 0 {
				t.Errorf("%s, %s: %.1f allocations per call, want 0", name, op, a)
			}
		}
		_ = sink
		mustCheck(t, h)
	}
}

// BenchmarkDeactivateActivate measures one idle transition and back on a
// 128-CPU, 3-level hierarchy: "one of many" stops at the level-0 group
// (another CPU of the group stays active), "last CPU" walks to the top
// and is handed the earliest of 127 queued events.
func BenchmarkDeactivateActivate(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    func(testing.TB) *Hierarchy
		cpu  int
	}{{"one-of-many", allActive, 5}, {"last-cpu", lastActive, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h := bc.h(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Deactivate(bc.cpu, 2_000_000)
				h.Activate(bc.cpu)
			}
		})
	}
}

// BenchmarkTick is what a running migrator pays per tick when nothing is
// due: RequiresHandleRemote walking up the groups it is migrator of.
func BenchmarkTick(b *testing.B) {
	h := lastActive(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if h.RequiresHandleRemote(0, 1) {
			b.Fatal("nothing is due")
		}
	}
}

// BenchmarkNewTimer: an idle CPU (one of many) changes its first global
// timer back and forth; each change is walked up.
func BenchmarkNewTimer(b *testing.B) {
	h := allActive(b)
	h.Deactivate(5, 2_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.NewTimer(5, int64(1_000_000+i&1))
	}
}
