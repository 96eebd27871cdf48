package hier

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"pgregory.net/rapid"
)

// recorder is an Expirer that records who expires whose timers.
type recorder struct {
	mu    sync.Mutex
	pairs [][2]int // {handler, target}
}

func (r *recorder) ExpireRemote(handler, target int) {
	r.mu.Lock()
	r.pairs = append(r.pairs, [2]int{handler, target})
	r.mu.Unlock()
}
func (r *recorder) LockBases(int)                                        {}
func (r *recorder) UnlockBases(int)                                      {}
func (r *recorder) NextGlobalRemote(target int, _ uint64, _ int64) int64 { return KtimeMax }

// TestOslatScenario reproduces the machine of the isolation series'
// changelog: 128 CPUs, oslat busy on 1-31,33-63,65-95,97-127 (isolcpus),
// housekeeping CPUs 0, 32, 64 and 96 idle with global timers pending.
//
// In the 6.9-6.18 model the isolated CPUs stay in the hierarchy. Every
// level-0 group with a housekeeping CPU still has busy CPUs, so the
// housekeeping CPU's event never leaves its level-0 group, whose migrator
// pulls it. When the housekeeping CPU (bit 0, first to come up, first
// migrator) went idle, the role passed to the lowest remaining active bit:
// the next CPU up. So CPUs 1, 33, 65 and 97 end up pulling the timers of
// CPUs 0, 32, 64 and 96 (the changelog names 1 and 65, the first busy CPU
// of each node on a two-node machine; by the kernel's rule 33 and 97 do the
// same in their groups). With the exclusion no busy CPU runs a foreign
// timer: the last housekeeping CPU to go idle is handed the earliest event
// and expires it itself.
func TestOslatScenario(t *testing.T) {
	isolated := cpumask.MustParse("1-31,33-63,65-95,97-127")
	housekeeping := []int{0, 32, 64, 96}
	for _, nodes := range []int{1, 2} {
		for _, exclude := range []bool{false, true} {
			t.Run(fmt.Sprintf("nodes=%d/exclude=%v", nodes, exclude), func(t *testing.T) {
				h := newPrepared(t, 128, nodes, Options{ExcludeIsolated: exclude, Isolation: Isolation{Domain: isolated, Timekeeper: 0}})
				for c := 0; c < 128; c++ { // boot: every CPU comes up busy
					if err := h.SetAvailable(c, false); err != nil {
						t.Fatal(err)
					}
				}
				if trig := h.InitIsolation(nil); trig != nil {
					t.Fatalf("InitIsolation triggers %v, want none", trig)
				}
				mustCheck(t, h)

				// The housekeeping CPUs go idle, each with a global timer.
				var ret []int64
				for i, c := range housekeeping {
					ret = append(ret, h.Deactivate(c, int64(1000+100*i)))
					mustCheck(t, h)
				}

				// Every CPU's tick at 2000, in CPU order; idle CPUs whose
				// wakeup passed run their softirq too.
				r := &recorder{}
				for c := 0; c < 128; c++ {
					if h.RequiresHandleRemote(c, 2000) {
						h.HandleRemote(c, 2000, 500, r)
					}
				}
				mustCheck(t, h)

				if !exclude {
					// The expectation, derived from the rule: in the level-0
					// group of each housekeeping CPU, the lowest-numbered busy
					// CPU (the lowest remaining bit in join order).
					var want [][2]int
					for _, hk := range housekeeping {
						g := h.CPU(hk).Group
						for c := 0; c < 128; c++ {
							if c != hk && h.CPU(c).Group == g {
								want = append(want, [2]int{c, hk})
								break
							}
						}
					}
					if !slices.Equal(r.pairs, want) || !slices.Equal(want, [][2]int{{1, 0}, {33, 32}, {65, 64}, {97, 96}}) {
						t.Errorf("expiries (handler, target) = %v, want %v", r.pairs, want)
					}
					for i, c := range housekeeping {
						if ret[i] != KtimeMax {
							t.Errorf("Deactivate(%d) = %s, want max (busy CPUs are active)", c, fmtTime(ret[i]))
						}
						mig := groupByID(t, h, h.CPU(c).Group).Migrator
						if want := h.CPU(c + 1).Groupmask; mig != want {
							t.Errorf("migrator of CPU%d's group = %#x, want CPU%d's bit %#x", c, mig, c+1, want)
						}
					}
					return
				}

				// With the exclusion: isolated CPUs are unavailable and run
				// nobody's timers.
				if got, want := h.Available(), cpumask.Of(housekeeping...); !got.Equal(want) {
					t.Fatalf("available = %s, want %s", got, want)
				}
				for _, p := range r.pairs {
					if isolated.Test(p[0]) {
						t.Errorf("isolated CPU %d expired CPU %d's timers", p[0], p[1])
					}
				}
				// The last housekeeping CPU got the earliest event, CPU0's.
				if ret[3] != 1000 {
					t.Errorf("last housekeeping CPU to idle got %s, want 1000", fmtTime(ret[3]))
				}
				if !slices.Contains(r.pairs, [2]int{96, 0}) {
					t.Errorf("expiries %v: CPU96 (woken for 1000) should expire CPU0", r.pairs)
				}
			})
		}
	}
}

// TestExcludeArithmetic checks invariants I14-I16 of docs/hierarchy.md with random machines and
// random sequences of exclusion sets, against the set arithmetic of X3
// computed independently: with P the predicate and tk the timekeeper while
// nohz_full runs, A1 = A ∪ {c ∈ (ON \ E) \ A : c ∉ P} and A2 = A1 \ ((E ∩
// A1 ∩ NK) \ {tk}). A second call with the same set changes nothing, and
// the hierarchy passes Check after every call.
func TestExcludeArithmetic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 40).Draw(rt, "cpus")
		nodes := rapid.IntRange(1, min(n, 4)).Draw(rt, "nodes")
		subset := func(label string) cpumask.Mask {
			var m cpumask.Mask
			for c := 0; c < n; c++ {
				if rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("%s%d", label, c)) == 0 {
					m.Set(c)
				}
			}
			return m
		}
		iso := Isolation{Domain: subset("dom"), NohzFull: subset("nohz"), Timekeeper: rapid.IntRange(-1, n-1).Draw(rt, "tk")}
		iso.NohzFull = iso.NohzFull.AndNot(iso.Domain)
		if iso.Timekeeper >= 0 {
			iso.NohzFull.Clear(iso.Timekeeper)
		}
		h, err := New(Options{NodeOf: evenNodes(n, nodes), ExcludeIsolated: true, Isolation: iso})
		if err != nil {
			rt.Skip(err.Error()) // e.g. no housekeeping CPU left
		}
		for c := 0; c < n; c++ {
			if err := h.Prepare(c); err != nil {
				rt.Fatal(err)
			}
			if err := h.SetAvailable(c, false); err != nil {
				rt.Fatal(err)
			}
		}
		h.InitIsolation(nil)
		if err := h.Check(); err != nil {
			rt.Fatal(err)
		}
		all := cpumask.Range(0, n-1)
		nk := all.AndNot(iso.NohzFull)
		for step := 0; step < 6; step++ {
			cpuset := subset(fmt.Sprintf("cs%d.", step))
			iso.CpusetIsolated = cpuset
			if err := h.SetIsolation(iso); err != nil {
				rt.Fatal(err)
			}
			e := cpuset.Or(iso.Domain) // the complete excluded set
			if rapid.Bool().Draw(rt, fmt.Sprintf("partial%d", step)) {
				e = cpuset // X4 (docs/hierarchy.md): a caller passing only part of it
			}
			a, on := h.Available(), h.Online()
			var a1 cpumask.Mask = a
			u := on.AndNot(e).AndNot(a)
			for c := u.First(); c >= 0; c = u.Next(c) {
				if !iso.IsIsolated(c) {
					a1.Set(c)
				}
			}
			is := e.And(a1).And(nk)
			for c := is.First(); c >= 0; c = is.Next(c) {
				if !iso.NohzFull.Empty() && c == iso.Timekeeper {
					is.Clear(c)
					break
				}
			}
			want := a1.AndNot(is)

			for _, trig := range h.ExcludeIsolated(e, nil) {
				h.Activate(trig) // no-op unless idle: all CPUs run here
			}
			if got := h.Available(); !got.Equal(want) {
				rt.Fatalf("exclude(%s) from available %s: got %s, want %s", e, a, got, want)
			}
			if err := h.Check(); err != nil {
				rt.Fatal(err)
			}
			// Invariant 15's consequences, stated directly.
			got := h.Available()
			if miss := on.AndNot(e).AndNot(got); !iso.isolatedAll(miss) {
				rt.Fatalf("online, not excluded, not isolated CPUs left out: %s", miss)
			}
			if bad := e.And(got).And(nk); !bad.Empty() && !(bad.Weight() == 1 && bad.First() == iso.Timekeeper && !iso.NohzFull.Empty()) {
				rt.Fatalf("excluded housekeeping CPUs still available: %s", bad)
			}
			before := h.State()
			h.ExcludeIsolated(e, nil)
			if after := h.State(); after != before {
				rt.Fatalf("exclude(%s) is not idempotent:\n%s\nthen\n%s", e, before, after)
			}
		}
	})
}

// isolatedAll reports whether the predicate holds for every CPU of m.
func (iso *Isolation) isolatedAll(m cpumask.Mask) bool {
	for c := m.First(); c >= 0; c = m.Next(c) {
		if !iso.IsIsolated(c) {
			return false
		}
	}
	return true
}

// TestOfflineOnlineIsolated: with the exclusion on, an isolated CPU that
// goes offline and comes back stays out; an unisolated online CPU becomes
// available and, unless its base is idle, active (invariant I16 of docs/hierarchy.md).
func TestOfflineOnlineIsolated(t *testing.T) {
	h := newPrepared(t, 16, 2, Options{ExcludeIsolated: true, Isolation: Isolation{Domain: cpumask.MustParse("3,9"), Timekeeper: 0}})
	for c := 0; c < 16; c++ {
		if err := h.SetAvailable(c, false); err != nil {
			t.Fatal(err)
		}
	}
	h.InitIsolation(nil)
	for _, c := range []int{3, 9} {
		if _, err := h.ClearAvailable(c); err != nil {
			t.Fatal(err)
		}
		if err := h.SetAvailable(c, false); err != nil {
			t.Fatal(err)
		}
		if ci := h.CPU(c); ci.Available || !ci.Online {
			t.Errorf("CPU%d after offline/online: %+v, want online and unavailable", c, ci)
		}
	}
	mustCheck(t, h)
	if err := h.SetIsolation(Isolation{Domain: cpumask.MustParse("9"), Timekeeper: 0}); err != nil {
		t.Fatal(err)
	}
	h.ExcludeIsolated(cpumask.Of(9), func(cpu int) bool { return false })
	if ci := h.CPU(3); !ci.Available || ci.Idle {
		t.Errorf("unisolated CPU3: %+v, want available and active", ci)
	}
	if ci := h.CPU(9); ci.Available {
		t.Errorf("CPU9 still isolated but available")
	}
	mustCheck(t, h)
}
