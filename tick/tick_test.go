package tick

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/wheel"
)

const hz = 250

var tickNs = cpu.TickNsec(hz)

// machine is n CPUs of the tick core on one timer code, booted at time 0,
// every CPU online with its tick running.
type machine struct {
	t    *testing.T
	set  *cpu.Set
	cpus []CPU
	tr   *countTracer
}

// countTracer counts the hierarchy's tracepoints by kind.
type countTracer struct {
	mu sync.Mutex
	n  map[hier.EventKind]int
}

func (c *countTracer) Trace(e hier.Event) {
	c.mu.Lock()
	c.n[e.Kind]++
	c.mu.Unlock()
}

func (c *countTracer) take() map[hier.EventKind]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[hier.EventKind]int{}
	return n
}

func newMachine(t *testing.T, n int, nohzFull ...int) *machine {
	t.Helper()
	tr := &countTracer{n: map[hier.EventKind]int{}}
	set, err := cpu.New(cpu.Config{NodeOf: make([]int, n), HZ: hz, Policy: cpu.PullIsolated, Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	m := &machine{t: t, set: set, cpus: make([]CPU, n), tr: tr}
	g := Grid{T0: 0, J0: cpu.InitialJiffies(hz), TickNs: tickNs}
	for i := range m.cpus {
		hb, err := hrtimer.NewCPUBase(i, hrtimer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		full := false
		for _, c := range nohzFull {
			full = full || c == i
		}
		if err := m.cpus[i].Init(Config{CPU: i, Set: set, Hrtimer: hb, Grid: g, NohzFull: full}); err != nil {
			t.Fatal(err)
		}
		r, err := m.cpus[i].Online(0)
		if err != nil {
			t.Fatal(err)
		}
		if !r.TickSet || r.Stopped || r.Tick != tickNs {
			t.Fatalf("Online: %+v, want the tick started at %d", r, tickNs)
		}
	}
	set.InitIsolation()
	tr.take()
	return m
}

// arm queues a timer (global, unless flags say otherwise) on CPU c at now,
// d ns later.
func (m *machine) arm(c int, now, d int64, flags ...uint32) *wheel.Timer {
	tm := new(wheel.Timer)
	var f uint32
	for _, x := range flags {
		f |= x
	}
	cpu.Setup(tm, f)
	g := m.cpus[c].grid
	m.set.Mod(c, tm, g.Expiry(now, d), g.Jiffies(now), 0)
	return tm
}

// The prediction at most a tick away keeps the tick and touches neither the
// timer base nor the hierarchy (tick_nohz_next_event); further away, the
// tick stops and the CPU leaves the hierarchy.
func TestIdleStopsTheTickOnlyBeyondATick(t *testing.T) {
	m := newMachine(t, 2)
	m.arm(0, 0, 3*tickNs) // CPU 0's own timer: bucket of jiffy +4, 16 ms
	c := &m.cpus[0]
	if r := c.Idle(13 * tickNs); r.TickSet || r.Stopped || !c.InIdle() || m.set.BaseIdle(0) {
		t.Fatalf("next event 3 ms away: Ready %+v, base idle %v; want the tick kept", r, m.set.BaseIdle(0))
	}
	if n := m.tr.take(); len(n) != 0 {
		t.Fatalf("keeping the tick traced %v", n)
	}
	m2 := newMachine(t, 2)
	c2 := &m2.cpus[0]
	r := c2.Idle(0)
	if !r.TickSet || !r.Stopped || r.Tick != Never || !m2.set.BaseIdle(0) {
		t.Fatalf("nothing to wake for: Ready %+v, want the tick stopped with no wakeup", r)
	}
	if n := m2.tr.take(); n[hier.EvCPUIdle] != 1 {
		t.Fatalf("stopping the tick traced %v, want one tmigr_cpu_idle", n)
	}
	// Going round the loop again re-arms it (tmigr_cpu_new_timer path).
	if r := c2.Idle(tickNs); !r.TickSet || !r.Stopped {
		t.Fatalf("second round: %+v", r)
	}
	if n := m2.tr.take(); n[hier.EvCPUNewTimerIdle] != 1 || n[hier.EvCPUIdle] != 0 {
		t.Fatalf("second round traced %v, want one tmigr_cpu_new_timer_idle", n)
	}
}

// Leaving idle restarts a stopped tick (timer_clear_idle, tmigr_cpu_active)
// and leaves a running one alone.
func TestIdleExit(t *testing.T) {
	m := newMachine(t, 2)
	c := &m.cpus[1]
	c.Idle(0)
	m.tr.take()
	r := c.IdleExit(5_000_000, true)
	if !r.TickSet || r.Stopped || r.Tick != 2*tickNs || m.set.BaseIdle(1) {
		t.Fatalf("exit with the tick stopped: %+v, want it restarted at the next grid instant", r)
	}
	if n := m.tr.take(); n[hier.EvCPUActive] != 1 {
		t.Fatalf("restart traced %v, want tmigr_cpu_active", n)
	}
	m.arm(1, 5_000_000, 0) // the bucket of the next jiffy, 8 ms
	c.Idle(5_000_000)      // within a tick: kept
	if r := c.IdleExit(6_000_000, true); r.TickSet {
		t.Fatalf("exit with the tick running: %+v, want nothing", r)
	}
	if n := m.tr.take(); len(n) != 0 {
		t.Fatalf("exit with the tick running traced %v", n)
	}
}

// A nohz_full CPU leaving idle for one task keeps its tick stopped and stays
// idle in the hierarchy; for two, it restarts.
func TestNohzFullIdleExit(t *testing.T) {
	m := newMachine(t, 2, 1)
	c := &m.cpus[1]
	c.Idle(0)
	m.tr.take()
	if r := c.IdleExit(tickNs, true); !r.Stopped || !m.set.BaseIdle(1) {
		t.Fatalf("alone: %+v, want the tick stopped", r)
	}
	if n := m.tr.take(); n[hier.EvCPUActive] != 0 || n[hier.EvCPUNewTimerIdle] != 1 {
		t.Fatalf("alone traced %v, want only the re-evaluation", n)
	}
	if r := c.FullUpdate(2*tickNs, false); r.Stopped || !r.TickSet {
		t.Fatalf("a second task: %+v, want the tick restarted", r)
	}
	if r := c.FullUpdate(3*tickNs, true); !r.Stopped {
		t.Fatalf("alone again: %+v, want the tick stopped", r)
	}
	if r := m.cpus[0].FullUpdate(3*tickNs, true); r.TickSet {
		t.Fatalf("FullUpdate on a CPU not in nohz_full: %+v", r)
	}
}

// The timekeeper of a machine with nohz_full CPUs, and a halted CPU, never
// stop their tick in the idle loop (can_stop_idle_tick).
func TestCannotStopIdleTick(t *testing.T) {
	set, _ := cpu.New(cpu.Config{NodeOf: make([]int, 1), HZ: hz})
	hb, _ := hrtimer.NewCPUBase(0, hrtimer.Config{})
	var c CPU
	if err := c.Init(Config{CPU: 0, Set: set, Hrtimer: hb, Grid: NewGrid(0, hz), Timekeeper: true}); err != nil {
		t.Fatal(err)
	}
	c.Online(0)
	if r := c.Idle(0); r.TickSet || r.Stopped {
		t.Fatalf("timekeeper: %+v", r)
	}
	m := newMachine(t, 1)
	m.cpus[0].SetHalted(true)
	if r := m.cpus[0].Idle(0); r.TickSet || r.Stopped {
		t.Fatalf("halted: %+v", r)
	}
	m.cpus[0].SetHalted(false)
	if r := m.cpus[0].Idle(tickNs); !r.Stopped {
		t.Fatalf("no longer halted: %+v", r)
	}
}

// Tick raises the timer softirq when a base is due and its pass runs the
// timer; a NOHZ wakeup is not re-armed.
func TestTickAndSoftirq(t *testing.T) {
	m := newMachine(t, 1)
	c := &m.cpus[0]
	tm := m.arm(0, 0, tickNs) // bucket of jiffy +2
	if r := c.Tick(tickNs); r.Softirq != 0 || r.Tick != 2*tickNs {
		t.Fatalf("tick before the bucket: %+v", r)
	}
	r := c.Tick(2 * tickNs)
	if r.Softirq&TimerSoftirq == 0 {
		t.Fatalf("tick at the bucket: %+v, want TIMER_SOFTIRQ", r)
	}
	p := c.TimerSoftirq(2 * tickNs)
	if got := p.Next(); got != tm || p.Next() != nil {
		t.Fatal("the pass did not hand out the timer, once")
	}
	c.Idle(2 * tickNs)
	if r := c.Tick(3 * tickNs); !r.TickSet || r.Tick != Never {
		t.Fatalf("NOHZ wakeup: %+v, want it not re-armed", r)
	}
}

// EndPass: retries, the hang delay, and HRTIMER_SOFTIRQ raised by the
// interrupt only.
func TestHrtimerPasses(t *testing.T) {
	m := newMachine(t, 1)
	c := &m.cpus[0]
	hb := c.hr
	var ts [4]hrtimer.Timer
	for i, at := range []int64{1000, 1004, 1009, 1014} {
		hb.Setup(&ts[i], hrtimer.Monotonic, hrtimer.ModeHard)
		hb.Start(&ts[i], 0, at*1000, 0, hrtimer.ModeAbs)
	}
	var soft hrtimer.Timer
	hb.Setup(&soft, hrtimer.Monotonic, hrtimer.ModeSoft)
	hb.Start(&soft, 0, 1_000_000, 0, hrtimer.ModeAbs)
	now := int64(1_000_000)
	p, err := c.HrtimerInterrupt(now)
	if err != nil {
		t.Fatal(err)
	}
	passes := 0
	var r Ready
	for {
		passes++
		for x := p.Next(); x != nil; x = p.Next() {
			now += 5000 // each callback runs 5 µs
			p.Done(x, hrtimer.NoRestart)
		}
		var retry bool
		if r, retry, err = c.EndPass(p, now); err != nil {
			t.Fatal(err)
		}
		if !retry {
			break
		}
	}
	if passes != 3 || !r.Hang || !r.Program || r.DeviceAt != now+(now-1_000_000) {
		t.Fatalf("%d passes, Ready %+v, now %d: want three passes and the hang delay", passes, r, now)
	}
	if r.Softirq&HrtimerSoftirq == 0 {
		t.Fatalf("the soft timer was due: %+v, want HRTIMER_SOFTIRQ", r)
	}
	sp, err := c.HrtimerSoftirq(now)
	if err != nil {
		t.Fatal(err)
	}
	if x := sp.Next(); x != &soft {
		t.Fatal("the soft pass did not hand out the soft timer")
	} else {
		sp.Done(x, hrtimer.NoRestart)
	}
	if r, retry, err := c.EndPass(sp, now); err != nil || retry || r.Softirq != 0 {
		t.Fatalf("soft EndPass: %+v %v %v", r, retry, err)
	}
	if _, _, err := c.EndPass(sp, now); err == nil {
		t.Fatal("EndPass of a pass already ended: no error")
	}
}

// Offline moves the timers and names the IPIs; Online brings the CPU back.
func TestHotplug(t *testing.T) {
	m := newMachine(t, 2)
	m.cpus[0].Idle(0) // CPU 0 idle, tick stopped, its LOCAL base idle
	m.arm(1, 0, 100*tickNs, cpu.Pinned)
	var hr hrtimer.Timer
	m.cpus[1].hr.Setup(&hr, hrtimer.Monotonic, hrtimer.ModeHard)
	m.cpus[1].hr.Start(&hr, 0, 5_000_000, 0, hrtimer.ModeAbs)
	r, err := m.cpus[1].Offline(&m.cpus[0], tickNs)
	if err != nil {
		t.Fatal(err)
	}
	if r.Retrigger != 0 || r.Kick != 0 || !r.Stopped || r.Tick != Never || m.cpus[1].IsOnline() {
		t.Fatalf("Offline: %+v, want CPU 0 retriggered and kicked (new first timer on its idle base)", r)
	}
	if m.set.Len(0, cpu.BaseLocal) != 1 || m.cpus[0].hr.Len() != 1 {
		t.Fatal("the timers did not move")
	}
	if rr := m.cpus[0].Retrigger(); !rr.Program || rr.DeviceAt != 5_000_000 {
		t.Fatalf("Retrigger on CPU 0: %+v", rr)
	}
	if _, err := m.cpus[1].Offline(&m.cpus[0], tickNs); err == nil {
		t.Fatal("offline twice: no error")
	}
	r, err = m.cpus[1].Online(3 * tickNs)
	if err != nil || r.Stopped || r.Tick != 4*tickNs {
		t.Fatalf("Online: %+v %v", r, err)
	}
}

// The hot path allocates nothing: the tick, idle entry and exit, the NOHZ
// wakeup, the timer softirq, the hrtimer interrupt.
func TestNoAllocations(t *testing.T) {
	m := newMachine(t, 2)
	c := &m.cpus[0]
	var hr hrtimer.Timer
	c.hr.Setup(&hr, hrtimer.Monotonic, hrtimer.ModeHard)
	tm := new(wheel.Timer)
	cpu.Setup(tm, 0)
	now, fired := int64(0), 0
	allocs := testing.AllocsPerRun(200, func() {
		now += tickNs
		g := c.grid
		if !m.set.Pending(tm) {
			m.set.Mod(0, tm, g.Expiry(now, tickNs), g.Jiffies(now), 0)
		}
		c.hr.Start(&hr, now, now+tickNs/2, 0, hrtimer.ModeAbs)
		if r := c.Tick(now); r.Softirq&TimerSoftirq != 0 {
			p := c.TimerSoftirq(now)
			for x := p.Next(); x != nil; x = p.Next() {
				fired++
			}
		}
		c.Idle(now)
		p, _ := c.HrtimerInterrupt(now + tickNs/2)
		for x := p.Next(); x != nil; x = p.Next() {
			p.Done(x, hrtimer.NoRestart)
		}
		c.EndPass(p, now+tickNs/2)
		c.Idle(now + tickNs/2)
		c.IdleExit(now+tickNs/2, true)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round", allocs)
	}
	if fired == 0 {
		t.Fatal("the timer never fired: the softirq's pass was not exercised")
	}
}

// CPUs of one machine driven concurrently, each by its own goroutine, while
// other goroutines arm and cancel timers on them: -race finds no race, the
// hierarchy stays consistent, every armed timer is expired or cancelled.
func TestConcurrentCPUs(t *testing.T) {
	const n, rounds = 4, 400
	m := newMachine(t, n)
	timers := make([]wheel.Timer, 64)
	for i := range timers {
		cpu.Setup(&timers[i], 0)
	}
	var wg sync.WaitGroup
	for i := range m.cpus {
		wg.Go(func() {
			c := &m.cpus[i]
			r := rand.New(rand.NewPCG(uint64(i), 1))
			idle := false
			for k := range rounds {
				now := int64(k) * tickNs
				if rr := c.Tick(now); rr.Softirq&TimerSoftirq != 0 {
					p := c.TimerSoftirq(now)
					for x := p.Next(); x != nil; x = p.Next() {
					}
				}
				switch {
				case !idle && r.IntN(3) == 0:
					c.Idle(now)
					idle = true
				case idle && r.IntN(3) == 0:
					c.IdleExit(now, true)
					idle = false
				case idle:
					c.Idle(now)
				}
			}
			c.IdleExit(int64(rounds)*tickNs, true)
		})
	}
	wg.Go(func() {
		r := rand.New(rand.NewPCG(9, 9))
		for k := range rounds * 4 {
			tm := &timers[r.IntN(len(timers))]
			g := m.cpus[0].grid
			now := int64(k/4) * tickNs
			if r.IntN(4) == 0 {
				m.set.Del(tm)
			} else {
				m.set.Mod(r.IntN(n), tm, g.Expiry(now, int64(r.IntN(8))*tickNs), g.Jiffies(now), 0)
			}
		}
	})
	wg.Wait()
	if err := m.set.Hierarchy().Check(); err != nil {
		t.Fatal(err)
	}
	if w := m.set.Hierarchy().Warnings(); w != 0 {
		t.Fatalf("%d hierarchy warnings", w)
	}
}

// BenchmarkTick is one busy CPU's periodic tick with nothing due, the
// simulator's commonest call.
func BenchmarkTick(b *testing.B) {
	set, _ := cpu.New(cpu.Config{NodeOf: make([]int, 1), HZ: hz, Policy: cpu.PullIsolated})
	hb, _ := hrtimer.NewCPUBase(0, hrtimer.Config{})
	var c CPU
	c.Init(Config{CPU: 0, Set: set, Hrtimer: hb, Grid: NewGrid(0, hz)})
	c.Online(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Tick(int64(i+1) * tickNs)
	}
}
