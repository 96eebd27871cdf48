package hier

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/internal/soak"
	"pgregory.net/rapid"
)

// The model below is a minimal timer code around the hierarchy, enough to
// check end to end that no global timer is lost or late (invariants I7,
// I8, I10 of docs/hierarchy.md): every CPU holds a sorted list of global timers (no local ones);
// time advances in ticks; a CPU goes idle only if its first timer is more
// than a tick away, undoes the idle transition if it is handed something
// due within a tick (the timer code's rule, docs/hierarchy.md O9), and while idle sleeps
// until the time it armed; an idle CPU woken by that time runs its softirq
// and re-evaluates its sleep with NewTimer, as the idle loop does.

const tick = 1000 // ns per jiffy in the model

type modelCPU struct {
	timers []int64 // pending global timers, sorted
	idle   bool    // idle (tick stopped)
	armed  int64   // while idle: when its clock event fires
}

type model struct {
	t    *rapid.T
	h    *Hierarchy
	cpus []modelCPU
	now  int64
	iso  cpumask.Mask // isolated at the moment (cpuset)
	ran  int          // timers run, for the test's statistics
}

func (m *model) first(c int) int64 {
	if len(m.cpus[c].timers) == 0 {
		return KtimeMax
	}
	return m.cpus[c].timers[0]
}

// Expirer: run target's due timers.
func (m *model) ExpireRemote(handler, target int) { m.runDue(target) }
func (m *model) LockBases(int)                    {}
func (m *model) UnlockBases(int)                  {}
func (m *model) NextGlobalRemote(target int, _ uint64, now int64) int64 {
	f := m.first(target)
	if f == KtimeMax {
		return KtimeMax
	}
	return max(f, now) // an overdue timer is reported as now (O9)
}

func (m *model) runDue(c int) {
	mc := &m.cpus[c]
	for len(mc.timers) > 0 && mc.timers[0] <= m.now {
		mc.timers = mc.timers[1:]
		m.ran++
	}
}

func (m *model) arm(c int, at int64) {
	mc := &m.cpus[c]
	i, _ := slices.BinarySearch(mc.timers, at)
	mc.timers = slices.Insert(mc.timers, i, at)
	if mc.idle {
		// An interrupt on the idle CPU armed it: the idle loop
		// re-evaluates its sleep.
		m.reevaluate(c)
	}
}

// reevaluate is the idle loop's get_next_timer_interrupt on an idle base.
func (m *model) reevaluate(c int) {
	mc := &m.cpus[c]
	mc.armed = m.h.NewTimer(c, m.first(c))
}

// goIdle is the tick-stop path; it reports whether the CPU is idle after.
func (m *model) goIdle(c int) {
	mc := &m.cpus[c]
	g := m.first(c)
	if mc.idle || g <= m.now+tick {
		return // the tick cannot stop
	}
	r := m.h.Deactivate(c, g)
	if r <= m.now+tick {
		m.h.Activate(c) // handed something due within a tick: undo
		return
	}
	mc.idle, mc.armed = true, r
}

func (m *model) wake(c int) {
	mc := &m.cpus[c]
	if !mc.idle {
		return
	}
	mc.idle = false
	m.h.Activate(c)
}

// advance moves time one tick on and runs every CPU's tick (in CPU order):
// a running CPU's tick raises the softirq if a timer is due or the
// hierarchy needs it; an idle CPU's clock event fires if its armed time
// has come. The softirq runs the CPU's own due timers, then HandleRemote.
func (m *model) advance() {
	m.now += tick
	for c := range m.cpus {
		mc := &m.cpus[c]
		switch {
		case !mc.idle:
			if m.first(c) <= m.now || m.h.RequiresHandleRemote(c, m.now) {
				m.runDue(c)
				m.h.HandleRemote(c, m.now, uint64(m.now/tick), m)
			}
		case mc.armed <= m.now:
			m.h.RequiresHandleRemote(c, m.now) // asked, as the tick does
			m.runDue(c)
			m.h.HandleRemote(c, m.now, uint64(m.now/tick), m)
			m.reevaluate(c)
		}
	}
	// I10: every timer due by now has run.
	for c := range m.cpus {
		if f := m.first(c); f <= m.now {
			m.t.Fatalf("now %d: CPU%d's global timer at %d has not run (idle=%v armed=%s)\n%s",
				m.now, c, f, m.cpus[c].idle, fmtTime(m.cpus[c].armed), m.h.State())
		}
	}
}

// isolate moves the cpuset-isolated set to s (2025 exclusion). The
// kernel runs a work item on every CPU concerned, so those CPUs are
// running while they change availability: the model wakes them first.
func (m *model) isolate(s cpumask.Mask) {
	changed := s.AndNot(m.iso).Or(m.iso.AndNot(s))
	for c := changed.First(); c >= 0; c = changed.Next(c) {
		m.wake(c)
	}
	m.iso = s
	if err := m.h.SetIsolation(Isolation{CpusetIsolated: s, Timekeeper: -1}); err != nil {
		m.t.Fatal(err)
	}
	for _, trig := range m.h.ExcludeIsolated(s, func(int) bool { return false }) {
		m.wake(trig) // tmigr_trigger_active: a work item runs there
	}
}

// check verifies Check and invariants I7 and I8 against the model.
func (m *model) check() {
	if err := m.h.Check(); err != nil {
		m.t.Fatalf("%v\n%s", err, m.h.State())
	}
	if w := m.h.Warnings(); w != 0 {
		m.t.Fatalf("%d kernel WARN conditions met", w)
	}
	// Queue reads one group's queue as Groups reports it.
	for _, gi := range m.h.Groups() {
		if q := m.h.Queue(gi.ID); !slices.Equal(q, gi.Events) {
			m.t.Fatalf("Queue(%s) = %v, Groups has %v", gi.Name, q, gi.Events)
		}
	}
	anyActive := false
	minArmed, minTimer := KtimeMax, KtimeMax
	for c := range m.cpus {
		mc := &m.cpus[c]
		ci := m.h.CPU(c)
		if !ci.Available {
			continue
		}
		if !mc.idle {
			anyActive = true
			continue
		}
		minArmed = min(minArmed, mc.armed)
		if f := m.first(c); f != KtimeMax {
			minTimer = min(minTimer, f)
			// 7: the idle CPU's first timer is published, no later than it.
			if ci.EvtIgnore || !ci.EvtQueued || ci.EvtExpires > f {
				m.t.Fatalf("idle CPU%d's first timer %d is not published (event %+v)\n%s", c, f, ci, m.h.State())
			}
		}
	}
	// 8: with every available CPU idle, some CPU is armed for the earliest
	// timer of them all.
	if !anyActive && minArmed > minTimer {
		m.t.Fatalf("all idle: earliest timer %d, but the earliest armed CPU wakes at %s\n%s", minTimer, fmtTime(minArmed), m.h.State())
	}
}

// TestModelNoLostTimer drives random machines (random sizes, nodes and
// bring-up order) through random sequences of timers, idle transitions,
// wake-ups, ticks and isolation changes, and checks after every step that
// the hierarchy is consistent, that idle CPUs' timers are published, that
// a fully idle machine is armed for its earliest timer and that no timer
// runs later than the first tick at or after its expiry.
//
// TMIGR_SOAK=N (package internal/soak) runs batches of cases until N steps
// have been checked.
func TestModelNoLostTimer(t *testing.T) {
	var steps int64
	soak.Run(t, func() int64 { return steps }, func(t *testing.T) { rapid.Check(t, func(rt *rapid.T) { modelNoLostTimer(rt, &steps) }) })
}

// modelNoLostTimer is one case of TestModelNoLostTimer; it adds the steps
// it ran to *ops.
func modelNoLostTimer(rt *rapid.T, ops *int64) {
	n := rapid.IntRange(2, 40).Draw(rt, "cpus")
	nodes := rapid.IntRange(1, min(n, 4)).Draw(rt, "nodes")
	exclude := rapid.Bool().Draw(rt, "exclude")
	h, err := New(Options{NodeOf: evenNodes(n, nodes), ExcludeIsolated: exclude, Isolation: Isolation{Timekeeper: -1}})
	if err != nil {
		rt.Fatal(err)
	}
	order := rapid.Permutation(seq(n)).Draw(rt, "bring-up order")
	for _, c := range order {
		if err := h.Prepare(c); err != nil {
			rt.Fatal(err)
		}
		if err := h.SetAvailable(c, false); err != nil {
			rt.Fatal(err)
		}
	}
	h.InitIsolation(nil)
	m := &model{t: rt, h: h, cpus: make([]modelCPU, n)}
	m.check()
	cpu := rapid.IntRange(0, n-1)
	steps := rapid.IntRange(50, 400).Draw(rt, "steps")
	for i := 0; i < steps; i++ {
		switch op := rapid.IntRange(0, 9).Draw(rt, "op"); op {
		case 0, 1:
			c := cpu.Draw(rt, "cpu")
			m.arm(c, m.now+int64(rapid.IntRange(2, 40).Draw(rt, "ticks"))*tick)
		case 2, 3:
			m.goIdle(cpu.Draw(rt, "cpu"))
		case 4:
			m.wake(cpu.Draw(rt, "cpu"))
		case 5, 6, 7:
			m.advance()
		case 8:
			// Everything idle that can be: the last-CPU case.
			for c := range m.cpus {
				m.goIdle(c)
			}
		case 9:
			if exclude {
				var s cpumask.Mask
				for c := 0; c < n; c++ {
					if rapid.IntRange(0, 4).Draw(rt, fmt.Sprint("iso", c)) == 0 {
						s.Set(c)
					}
				}
				if s.Weight() < n { // keep a housekeeping CPU
					m.isolate(s)
				}
			}
		}
		m.check()
		*ops++
	}
	// Drain: let time run until every timer has run.
	for i := 0; i < 50; i++ {
		m.advance()
		m.check()
	}
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
