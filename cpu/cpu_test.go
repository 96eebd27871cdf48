package cpu

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

const hz = 250

var tick = TickNsec(hz) // 4 ms

// machine is a small driver for tests: one Set, a shared tick, and a log of
// which CPU ran which timer.
type machine struct {
	t       *testing.T
	s       *Set
	jiffies uint64
	basem   int64
	mu      sync.Mutex
	ran     []string
}

func newMachine(t *testing.T, n int, p Policy, iso hier.Isolation) *machine {
	t.Helper()
	nodes := make([]int, n)
	s, err := New(Config{NodeOf: nodes, HZ: hz, Policy: p, Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{t: t, s: s, jiffies: InitialJiffies(hz), basem: 1e9}
	for c := range n {
		if err := s.Online(c, m.jiffies); err != nil {
			t.Fatal(err)
		}
	}
	s.InitIsolation()
	m.check()
	return m
}

var names sync.Map

func name(t *wheel.Timer) string {
	if n, ok := names.Load(t); ok {
		return n.(string)
	}
	return "?"
}

func newTimer(n string, flags uint32) *wheel.Timer {
	t := &wheel.Timer{}
	Setup(t, flags)
	t.Data = func(*wheel.Timer) {}
	names.Store(t, n)
	return t
}

// run runs a softirq pass to its end, calling each timer's function (a
// func(*wheel.Timer) in its Data word).
func run(p *Pass) {
	for t := p.Next(); t != nil; t = p.Next() {
		if f, ok := t.Data.(func(*wheel.Timer)); ok {
			f(t)
		}
	}
}

func (m *machine) snap() Snapshot { return Snapshot{m.jiffies, m.basem} }

func (m *machine) check() {
	m.t.Helper()
	if h := m.s.Hierarchy(); h != nil {
		if err := h.Check(); err != nil {
			m.t.Fatal(err)
		}
	}
}

// advance moves the clock n ticks.
func (m *machine) advance(n uint64) {
	m.jiffies += n
	m.basem += int64(n) * tick
}

// tickCPU runs the tick and, if needed, the softirq of a busy CPU.
func (m *machine) tickCPU(cpu int) {
	if m.s.Tick(cpu, m.snap()) {
		p := m.s.Softirq(cpu, m.snap())
		for t := p.Next(); t != nil; t = p.Next() {
			m.mu.Lock()
			m.ran = append(m.ran, fmt.Sprintf("%s@cpu%d", name(t), cpu))
			m.mu.Unlock()
			if f, ok := t.Data.(func(*wheel.Timer)); ok {
				f(t)
			}
		}
	}
	m.check()
}

// idle takes cpu into NOHZ idle and returns the time it must wake.
func (m *machine) idle(cpu int) int64 {
	m.s.SetBusy(cpu, false)
	next := m.s.NextEvent(cpu, m.snap())
	wake, idle := m.s.TryToSetIdle(cpu, m.snap())
	if !idle {
		m.t.Fatalf("CPU %d did not go idle (next %d)", cpu, next)
	}
	m.check()
	return min(next, wake)
}

func (m *machine) wake(cpu int) {
	m.s.ClearIdle(cpu)
	m.s.SetBusy(cpu, true)
	m.check()
}

func (m *machine) takeRan() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := strings.Join(m.ran, " ")
	m.ran = nil
	return out
}

func TestBaseSelection(t *testing.T) {
	for _, tc := range []struct {
		flags uint32
		want  int
	}{
		{0, BaseGlobal},
		{Pinned, BaseLocal},
		{Deferrable, BaseDef},
		{Deferrable | Pinned, BaseDef},
		{IRQSafe, BaseGlobal},
		{Pinned | IRQSafe, BaseLocal},
	} {
		if got := BaseOf(tc.flags); got != tc.want {
			t.Errorf("BaseOf(%#x) = %d, want %d", tc.flags, got, tc.want)
		}
	}
}

func TestTickNsecAndInitialJiffies(t *testing.T) {
	if TickNsec(250) != 4000000 || TickNsec(1000) != 1000000 || TickNsec(300) != 3333333 {
		t.Fatal(TickNsec(250), TickNsec(1000), TickNsec(300))
	}
	// The traces of a 6.18 host at HZ=250: 486 s after boot jiffies was
	// 4295013809 = 2^32 - 75000 + 121500 + ...
	if InitialJiffies(250) != 1<<32-75000 {
		t.Fatal(InitialJiffies(250))
	}
}

func TestPolicyNames(t *testing.T) {
	for _, p := range []Policy{None, Push, Pull, PullIsolated} {
		q, err := ParsePolicy(p.String())
		if err != nil || q != p {
			t.Fatalf("%v: %v %v", p, q, err)
		}
	}
	if _, err := ParsePolicy("pul"); err == nil || !strings.Contains(err.Error(), `"pul"`) {
		t.Fatalf("bad policy: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{HZ: 250},
		{NodeOf: []int{0}, HZ: 0},
		{NodeOf: []int{0}, HZ: 250, Policy: Policy(9)},
		{NodeOf: make([]int, cpumask.MaxCPUs+1), HZ: 250},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c.HZ)
		}
	}
}

// TestModSemantics walks through __mod_timer's results.
func TestModSemantics(t *testing.T) {
	m := newMachine(t, 2, PullIsolated, hier.Isolation{Timekeeper: 0})
	a := newTimer("a", 0)
	j := m.jiffies
	if ret, _ := m.s.Mod(0, a, j+100, j, 0); ret != 0 {
		t.Fatal("arming an inactive timer returned", ret)
	}
	idx := a.Index()
	// Same expiry: nothing to do.
	if ret, _ := m.s.Mod(0, a, j+100, j, 0); ret != 1 || a.Index() != idx {
		t.Fatal("same expiry")
	}
	// Level 1 bucket of 8 ticks: j+100 and j+101 share it when aligned.
	e2 := (j+100)&^7 + 1
	if _, b := wheel.Index(e2, j, 9); b != (j+100)&^7+8 {
		t.Skip("alignment assumption")
	}
	if ret, _ := m.s.Mod(0, a, e2, j, 0); ret != 1 || a.Index() != idx || a.Expires() != e2 {
		t.Fatalf("same bucket: ret %d idx %d->%d expires %d", ret, idx, a.Index(), a.Expires())
	}
	// Reduce never moves a timer later.
	if ret, _ := m.s.Mod(0, a, j+300, j, ModReduce); ret != 1 || a.Expires() != e2 {
		t.Fatal("reduce moved later")
	}
	if ret, _ := m.s.Mod(0, a, j+10, j, ModReduce); ret != 1 || a.Expires() != j+10 {
		t.Fatal("reduce did not move earlier")
	}
	// Pending-only leaves an inactive timer inactive.
	b := newTimer("b", 0)
	if ret, _ := m.s.Mod(0, b, j+5, j, ModPendingOnly); ret != 0 || m.s.Pending(b) {
		t.Fatal("ModPendingOnly armed an inactive timer")
	}
	if !m.s.Del(a) || m.s.Del(a) {
		t.Fatal("Del results")
	}
	// A shut-down timer ignores arms.
	if m.s.Shutdown(b) != 0 {
		t.Fatal("shutdown of inactive")
	}
	if ret, _ := m.s.Mod(0, b, j+5, j, 0); ret != 0 || m.s.Pending(b) {
		t.Fatal("shut-down timer armed")
	}
}

// TestLocalQueueing: since the pull model a timer is queued on the CPU that
// arms it, pinned or not, and re-arming from another CPU moves it.
func TestLocalQueueing(t *testing.T) {
	m := newMachine(t, 4, PullIsolated, hier.Isolation{Timekeeper: 0})
	a := newTimer("a", 0)
	m.s.Mod(2, a, m.jiffies+10, m.jiffies, 0)
	if a.CPU() != 2 || m.s.Len(2, BaseGlobal) != 1 {
		t.Fatal("not queued on CPU 2")
	}
	m.s.Mod(3, a, m.jiffies+20, m.jiffies, 0)
	if a.CPU() != 3 || m.s.Len(2, BaseGlobal) != 0 || m.s.Len(3, BaseGlobal) != 1 {
		t.Fatal("not moved to CPU 3")
	}
	p := newTimer("p", Pinned)
	m.s.AddOn(p, 1, m.jiffies+5, m.jiffies)
	if p.CPU() != 1 || m.s.Len(1, BaseLocal) != 1 {
		t.Fatal("AddOn")
	}
}

// TestRunningTimerStaysOnItsBase: a timer re-armed while its function runs
// stays on the base it runs from, even from another CPU (a timer is
// serialised against itself); TryToDelSync reports it running.
func TestRunningTimerStaysOnItsBase(t *testing.T) {
	m := newMachine(t, 2, None, hier.Isolation{Timekeeper: 0})
	var a *wheel.Timer
	var sawRunning int
	a = newTimer("a", 0)
	a.Data = func(*wheel.Timer) {
		sawRunning = m.s.TryToDelSync(a)
		m.s.Mod(1, a, m.jiffies+3, m.jiffies, 0) // re-armed "from CPU 1"
	}
	m.s.Mod(0, a, m.jiffies+1, m.jiffies, 0)
	m.advance(2)
	m.tickCPU(0)
	if sawRunning != -1 {
		t.Fatalf("TryToDelSync during the function = %d, want -1", sawRunning)
	}
	if a.CPU() != 0 || !m.s.Pending(a) {
		t.Fatalf("running timer moved to CPU %d", a.CPU())
	}
	if got := m.takeRan(); got != "a@cpu0" {
		t.Fatal(got)
	}
	// Not running any more: the next re-arm from CPU 1 moves it.
	m.s.Mod(1, a, m.jiffies+5, m.jiffies, 0)
	if a.CPU() != 1 {
		t.Fatal("idle timer did not move")
	}
}

// TestExpiryOrderAndOnce: timers run once, in the kernel's order, on the
// CPU they are queued on while it is busy.
func TestExpiryOrderAndOnce(t *testing.T) {
	m := newMachine(t, 1, None, hier.Isolation{Timekeeper: 0})
	j := m.jiffies
	for _, n := range []string{"x", "y", "z"} {
		m.s.Mod(0, newTimer(n, 0), j+5, j, 0)
	}
	m.s.Mod(0, newTimer("far", 0), j+200, j, 0) // level 1
	for range 4 {
		m.advance(1)
		m.tickCPU(0)
	}
	if got := m.takeRan(); got != "" {
		t.Fatalf("early: %s", got)
	}
	m.advance(2)
	m.tickCPU(0)
	if got := m.takeRan(); got != "z@cpu0 y@cpu0 x@cpu0" {
		t.Fatalf("order %q, want LIFO within the bucket", got)
	}
	for range 210 {
		m.advance(1)
		m.tickCPU(0)
	}
	if got := m.takeRan(); got != "far@cpu0" {
		t.Fatalf("%q", got)
	}
}

// TestFetchNextTiesGoLocal: the next event comes from the local wheel on a
// tie, and a global timer strictly first is what the hierarchy is handed.
func TestFetchNextTiesGoLocal(t *testing.T) {
	m := newMachine(t, 2, PullIsolated, hier.Isolation{Timekeeper: 0})
	j := m.jiffies
	m.s.Mod(1, newTimer("g", 0), j+20, j, 0)
	m.s.Mod(1, newTimer("l", Pinned), j+20, j, 0)
	cp := &m.s.cpus[1]
	cp.bases[BaseLocal].mu.Lock()
	cp.bases[BaseGlobal].mu.Lock()
	ev := m.s.fetchNext(cp, Snapshot{j, m.basem})
	cp.bases[BaseGlobal].mu.Unlock()
	cp.bases[BaseLocal].mu.Unlock()
	if ev.Global != KtimeMax || ev.Local != m.basem+21*tick {
		t.Fatalf("tie: local %d global %d", ev.Local, ev.Global)
	}
	m.s.Mod(1, newTimer("g2", 0), j+10, j, 0)
	cp.bases[BaseLocal].mu.Lock()
	cp.bases[BaseGlobal].mu.Lock()
	ev = m.s.fetchNext(cp, Snapshot{j, m.basem})
	cp.bases[BaseGlobal].mu.Unlock()
	cp.bases[BaseLocal].mu.Unlock()
	if ev.Global != m.basem+11*tick || ev.Local != m.basem+21*tick {
		t.Fatalf("global first: local %d global %d", ev.Local, ev.Global)
	}
}

// TestPullRemoteExpiry: CPU 1 goes idle with a global timer; CPU 0 stays
// busy and expires it remotely at its tick; CPU 1 never wakes. With the
// none policy CPU 1 must wake for it itself.
func TestPullRemoteExpiry(t *testing.T) {
	for _, tc := range []struct {
		p        Policy
		wantWake bool
		want     string
	}{
		{Pull, false, "g@cpu0"},
		{PullIsolated, false, "g@cpu0"},
		{None, true, ""},
		{Push, true, ""},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			m := newMachine(t, 2, tc.p, hier.Isolation{Timekeeper: 0})
			j := m.jiffies
			m.s.Mod(1, newTimer("g", 0), j+20, j, 0)
			wake := m.idle(1)
			if woke := wake <= m.basem+21*tick; woke != tc.wantWake {
				t.Fatalf("CPU 1 wakes at %d (+%d ticks)", wake, (wake-m.basem)/tick)
			}
			for range 25 {
				m.advance(1)
				m.tickCPU(0)
			}
			if got := m.takeRan(); got != tc.want {
				t.Fatalf("ran %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLastIdleCPUArmsHierarchyEvent: when the last CPU goes idle it arms the
// earliest global event of the idle CPUs.
func TestLastIdleCPUArmsHierarchyEvent(t *testing.T) {
	m := newMachine(t, 3, Pull, hier.Isolation{Timekeeper: 0})
	j := m.jiffies
	m.s.Mod(2, newTimer("g2", 0), j+30, j, 0)
	m.s.Mod(1, newTimer("g1", 0), j+50, j, 0)
	w1 := m.idle(1)
	w2 := m.idle(2)
	if w1 != KtimeMax || w2 != KtimeMax {
		t.Fatalf("non-last CPUs arm %d %d", w1, w2)
	}
	w0 := m.idle(0)
	if w0 != m.basem+31*tick {
		t.Fatalf("last CPU arms +%d ticks, want +31", (w0-m.basem)/tick)
	}
}

// TestIsolatedCPUKeepsItsTimers: under pull-isolated an isolated CPU's
// global timer is not pulled, and an isolated busy CPU pulls nothing; under
// pull it is the migrator that pulls the housekeeping CPU's timer.
func TestIsolatedCPUKeepsItsTimers(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Pull, "hk@cpu1"},
		{PullIsolated, ""},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			iso := hier.Isolation{Domain: cpumask.MustParse("1"), Timekeeper: 0}
			m := newMachine(t, 2, tc.p, iso)
			j := m.jiffies
			m.s.Mod(0, newTimer("hk", 0), j+20, j, 0)
			wake := m.idle(0) // housekeeping CPU 0 idles, CPU 1 (isolated) is busy
			for range 25 {
				m.advance(1)
				m.tickCPU(1)
			}
			if got := m.takeRan(); got != tc.want {
				t.Fatalf("ran %q, want %q", got, tc.want)
			}
			if tc.p == PullIsolated && wake != m.basem-4*tick {
				// CPU 0 is the last available CPU: it arms its own timer.
				t.Fatalf("CPU 0 wakes at +%d ticks", (wake-(m.basem-25*tick))/tick)
			}
		})
	}
}

// TestPushTarget: under push, a non-pinned timer armed on an idle CPU goes
// to the first busy housekeeping CPU of its node, then of the machine;
// pinned timers stay.
func TestPushTarget(t *testing.T) {
	nodes := []int{0, 0, 0, 1, 1, 1}
	s, err := New(Config{NodeOf: nodes, HZ: hz, Policy: Push, Isolation: hier.Isolation{NohzFull: cpumask.MustParse("2"), Timekeeper: 0}})
	if err != nil {
		t.Fatal(err)
	}
	j := InitialJiffies(hz)
	for c := range 6 {
		s.Online(c, j)
		s.SetBusy(c, false)
	}
	s.SetBusy(4, true)
	s.SetBusy(2, true) // busy but nohz_full: not a target
	if got := s.NohzTimerTarget(0); got != 4 {
		t.Fatalf("target %d, want 4 (node 0 has no busy housekeeping CPU)", got)
	}
	s.SetBusy(1, true)
	if got := s.NohzTimerTarget(0); got != 1 {
		t.Fatalf("target %d, want 1 (same node first)", got)
	}
	a := newTimer("a", 0)
	s.Mod(0, a, j+10, j, 0)
	if a.CPU() != 1 {
		t.Fatalf("pushed to %d", a.CPU())
	}
	p := newTimer("p", Pinned)
	s.Mod(0, p, j+10, j, 0)
	if p.CPU() != 0 {
		t.Fatalf("pinned timer pushed to %d", p.CPU())
	}
	s.SetBusy(0, true)
	b := newTimer("b", 0)
	s.Mod(0, b, j+10, j, 0)
	if b.CPU() != 0 {
		t.Fatal("busy CPU pushed its own timer")
	}
	// nohz_full CPU 2 arming while busy: not housekeeping, goes elsewhere.
	c := newTimer("c", 0)
	s.Mod(2, c, j+10, j, 0)
	if c.CPU() == 2 {
		t.Fatal("nohz_full CPU kept its timer under push")
	}
}

// TestOfflineMovesTimers: a CPU going down hands all its timers, pinned
// ones included, to the receiving CPU, which runs them.
func TestOfflineMovesTimers(t *testing.T) {
	m := newMachine(t, 2, PullIsolated, hier.Isolation{Timekeeper: 0})
	j := m.jiffies
	m.s.Mod(1, newTimer("g", 0), j+5, j, 0)
	m.s.AddOn(newTimer("p", 0), 1, j+6, j)
	m.s.Mod(1, newTimer("d", Deferrable), j+7, j, 0)
	if _, _, err := m.s.Offline(1, 0, j); err != nil {
		t.Fatal(err)
	}
	m.check()
	if m.s.Len(1, BaseGlobal)+m.s.Len(1, BaseLocal)+m.s.Len(1, BaseDef) != 0 {
		t.Fatal("CPU 1 still holds timers")
	}
	for range 8 {
		m.advance(1)
		m.tickCPU(0)
	}
	got := strings.Fields(m.takeRan())
	slices.Sort(got)
	if !slices.Equal(got, []string{"d@cpu0", "g@cpu0", "p@cpu0"}) {
		t.Fatalf("ran %v", got)
	}
	if _, _, err := m.s.Offline(1, 0, j); err == nil {
		t.Fatal("offlining an offline CPU accepted")
	}
	if err := m.s.Online(1, m.jiffies); err != nil {
		t.Fatal(err)
	}
	m.check()
}

// TestOnlineFindsMigratedBuckets: a CPU taken offline keeps its pending
// bitmap (migrate_timer_list's detach_timer) and gets it back when it
// comes online (timers_prepare_cpu resets the clock only): once a
// deletion makes its base recalculate, the bucket its timer left is its
// next global event, though it holds no timer, until an expiry of the
// base collects it (RunBase, expiring nothing).
func TestOnlineFindsMigratedBuckets(t *testing.T) {
	m := newMachine(t, 2, PullIsolated, hier.Isolation{Timekeeper: 0})
	j := m.jiffies
	m.s.Mod(1, newTimer("g", 0), j+19, j, 0) // bucket j+20 of level 0
	if _, _, err := m.s.Offline(1, 0, j); err != nil {
		t.Fatal(err)
	}
	if err := m.s.Online(1, j+2); err != nil {
		t.Fatal(err)
	}
	snap := Snapshot{J: j + 2, M: m.basem + 2*m.s.TickNsec()}
	if ev := m.s.NextEvents(1, snap); ev.Global != KtimeMax {
		t.Fatalf("before a recalculation: global event %d, want none", ev.Global)
	}
	x := newTimer("x", 0)
	m.s.Mod(1, x, j+40, j+2, 0)
	m.s.Del(x) // empties its bucket: the next look recalculates
	want := snap.M + 18*m.s.TickNsec()
	if ev := m.s.NextEvents(1, snap); ev.Global != want {
		t.Fatalf("after a recalculation: global event %d, want %d (g's old bucket)", ev.Global, want)
	}
	due := Snapshot{J: j + 20, M: want}
	p := m.s.RunBase(1, BaseGlobal, due)
	if tm := p.Next(); tm != nil {
		t.Fatalf("the expiry handed out %s from an empty bucket", name(tm))
	}
	if ev := m.s.NextEvents(1, due); ev.Global != KtimeMax {
		t.Fatalf("after the expiry: global event %d, want none", ev.Global)
	}
	if ran := m.takeRan(); ran != "" {
		t.Fatalf("ran %q", ran)
	}
}

// TestConcurrentArmCancel: many goroutines arm, re-arm and cancel timers on
// all CPUs while each CPU's driver ticks. Every arm is consumed exactly once:
// by the function running, by a cancel that returned 1, or by a re-arm of
// the pending timer that returned 1; no function runs concurrently with
// itself; nothing is left pending after the drain. Run with -race.
func TestConcurrentArmCancel(t *testing.T) {
	const ncpu, nt, ops = 4, 64, 3000
	s, err := New(Config{NodeOf: make([]int, ncpu), HZ: 1000, Policy: PullIsolated, Isolation: hier.Isolation{Timekeeper: 0}})
	if err != nil {
		t.Fatal(err)
	}
	start := InitialJiffies(1000)
	for c := range ncpu {
		s.Online(c, start)
	}
	var clock atomic.Uint64
	clock.Store(start)
	type counts struct {
		arms, fires, cancels, replaced atomic.Int64
		running                        atomic.Bool
	}
	st := make([]counts, nt)
	timers := make([]wheel.Timer, nt)
	var concurrent atomic.Int64
	for i := range timers {
		Setup(&timers[i], 0)
		timers[i].Data = func(*wheel.Timer) {
			if !st[i].running.CompareAndSwap(false, true) {
				concurrent.Add(1)
			}
			st[i].fires.Add(1)
			st[i].running.Store(false)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var rounds [ncpu]atomic.Int64 // driver iterations
	for c := range ncpu {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				j := clock.Add(1)
				if sn := (Snapshot{j, int64(j) * 1e6}); s.Tick(c, sn) {
					run(s.Softirq(c, sn))
				}
				rounds[c].Add(1)
			}
		}()
	}
	var uwg sync.WaitGroup
	for g := range 4 {
		uwg.Add(1)
		go func() {
			defer uwg.Done()
			x := uint64(g*7919 + 1)
			for range ops {
				x = x*6364136223846793005 + 1442695040888963407
				i := int(x>>33) % nt
				if x>>60%3 < 2 {
					j := clock.Load()
					st[i].arms.Add(1)
					if ret, _ := s.Mod(int(x>>50)%ncpu, &timers[i], j+1+x>>40%300, j, 0); ret == 1 {
						st[i].replaced.Add(1)
					}
				} else if s.TryToDelSync(&timers[i]) == 1 {
					st[i].cancels.Add(1)
				}
			}
		}()
	}
	uwg.Wait()
	// Drain: run the clock past every expiry, and let every driver run a
	// few rounds after that.
	for end := clock.Load() + 400; clock.Load() < end; {
		runtime.Gosched()
	}
	for c := range ncpu {
		for r := rounds[c].Load() + 3; rounds[c].Load() < r; {
			runtime.Gosched()
		}
	}
	close(stop)
	wg.Wait()
	if n := concurrent.Load(); n != 0 {
		t.Errorf("%d functions ran concurrently with themselves", n)
	}
	var arms int64
	for i := range st {
		c := &st[i]
		arms += c.arms.Load()
		if s.Pending(&timers[i]) {
			b := &s.cpus[timers[i].CPU()].bases[BaseGlobal]
			t.Errorf("timer %d still pending after the drain: cpu %d expires %d idx %d; base clk %d next %d/%d recalc %v, clock %d", i, timers[i].CPU(), timers[i].Expires(), timers[i].Index(), b.w.Clk(), b.w.NextExpiry(), b.next.Load(), b.w.NeedsRecalc(), clock.Load())
		}
		if a, f, k, r := c.arms.Load(), c.fires.Load(), c.cancels.Load(), c.replaced.Load(); a != f+k+r {
			t.Errorf("timer %d: %d arms but %d fires + %d cancels + %d replaced", i, a, f, k, r)
		}
	}
	if arms < ops {
		t.Fatalf("only %d arms", arms)
	}
}

// TestSetIsolationMovesPushTargets: a CPU put into an isolated cpuset
// partition at run time is no longer a push target.
func TestSetIsolationMovesPushTargets(t *testing.T) {
	s, err := New(Config{NodeOf: make([]int, 4), HZ: hz, Policy: Push, Isolation: hier.Isolation{Timekeeper: 0}})
	if err != nil {
		t.Fatal(err)
	}
	j := InitialJiffies(hz)
	for c := range 4 {
		s.Online(c, j)
		s.SetBusy(c, false)
	}
	s.SetBusy(1, true)
	s.SetBusy(3, true)
	if got := s.NohzTimerTarget(0); got != 1 {
		t.Fatalf("target %d, want 1", got)
	}
	if err := s.SetIsolation(hier.Isolation{CpusetIsolated: cpumask.MustParse("1"), Timekeeper: 0}); err != nil {
		t.Fatal(err)
	}
	if got := s.NohzTimerTarget(0); got != 3 {
		t.Fatalf("target %d after isolating CPU 1, want 3", got)
	}
}

// TestTimerMigrationSwitch: kernel.timer_migration switches the push at
// enqueue (Push) and the hrtimer target (every policy); under the pull
// policies it never moves a wheel timer.
func TestTimerMigrationSwitch(t *testing.T) {
	iso := hier.Isolation{NohzFull: cpumask.Range(1, 3), Timekeeper: 0}
	for _, pol := range []Policy{Push, Pull, PullIsolated} {
		s, err := New(Config{NodeOf: make([]int, 4), HZ: 250, Policy: pol, Isolation: iso})
		if err != nil {
			t.Fatal(err)
		}
		for c := range 4 {
			if err := s.Online(c, 1000); err != nil {
				t.Fatal(err)
			}
		}
		s.SetBusy(0, true)
		s.SetBusy(2, true)
		if !s.TimerMigration() {
			t.Fatalf("%v: timer_migration off at boot", pol)
		}
		// A sleeper started on nohz_full CPU 2 goes to the busy
		// housekeeping CPU; a pinned one and CPU 0's own stay.
		if got := s.HrtimerTarget(2, false); got != 0 {
			t.Errorf("%v: hrtimer target of CPU 2 = %d, want 0", pol, got)
		}
		if got := s.HrtimerTarget(2, true); got != 2 {
			t.Errorf("%v: pinned hrtimer target of CPU 2 = %d, want 2", pol, got)
		}
		wantWheel := 2
		if pol == Push {
			wantWheel = 0
		}
		if got := s.targetCPU(2, 0); got != wantWheel {
			t.Errorf("%v: wheel target of CPU 2 = %d, want %d", pol, got, wantWheel)
		}
		s.SetTimerMigration(false)
		if got := s.HrtimerTarget(2, false); got != 2 {
			t.Errorf("%v, timer_migration=0: hrtimer target of CPU 2 = %d, want 2", pol, got)
		}
		if got := s.targetCPU(2, 0); got != 2 {
			t.Errorf("%v, timer_migration=0: wheel target of CPU 2 = %d, want 2", pol, got)
		}
	}
}
