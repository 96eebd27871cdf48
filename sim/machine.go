package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/tick"
)

// cpuState is one simulated CPU: what it runs, its tick, its clock event
// device, its kernel work in progress and its statistics.
type cpuState struct {
	// The fields every tick of a busy CPU reads and writes come first,
	// side by side, in the first four cache lines (a machine of thousands
	// of CPUs ticks them all in a row, and each line it touches is a cache
	// miss): 256 bytes, the tick core's hot line (tk's first 64 bytes)
	// last; the struct is padded to 512 bytes so that those four lines
	// are aligned (TestCPUStateLayout).

	id       int
	online   bool
	stopped  bool // crash-stopped (panic): takes no interrupt at all
	nohzFull bool
	isolated bool // not in the scheduler domains: unpinned tasks stay away
	idle     bool // in the idle loop
	resched  bool // a reschedule IPI is on its way
	kicked   bool // a wake-up IPI is on its way
	gapOpen  bool

	// PREEMPT_RT: softirq work for the ktimers thread.
	wheelSoft, hrSoftPend bool

	// rng is the CPU's kernel cost stream (draw).
	rng rand.PCG

	// Kernel work: interrupts (and on non-RT kernels their softirqs) run
	// back to back until irqEnd.
	irqEnd    int64
	irqArrive int64 // arrival time of the interrupt being handled
	irqWork   int64 // when its handling started (after any idle exit)

	curr    *Task
	rq      runqueue
	stepEnd int64

	// Measurement of a busy-loop task (oslat): the open gap, and the
	// task's OnGap (kept here so that a gap does not touch the task).
	meas     *Task
	measGap  func(start, length int64)
	measOut  int64 // when meas was preempted, -1 while it runs
	gapStart int64
	gapEnd   int64

	ticks, irqs uint64

	// The tick timer as tk last armed it: running (a member of
	// Machine.ticking from tickFrom on) or stopped, with the NOHZ wakeup
	// armed at nohzAt.
	tickFrom int64
	tickOn   bool
	nohzAt   int64
	nohzGen  uint64

	// tk is the CPU's tick and NOHZ protocol: every kernel decision about
	// the tick, idle and the interrupts' timer work is made there; this
	// driver carries out the Ready each call returns. Its hot first 64
	// bytes are the fourth cache line.
	tk tick.CPU

	node  int
	hr    *hrtimer.CPUBase
	hrDev int64 // what the clock event device is armed for (hrtimers)
	hrGen uint64

	stepGen uint64

	ktimers *Task

	// Statistics, within the measurement window.
	wakeups uint64
	wakeBy  [numCauses]uint64
	// The most hrtimers one hardirq expired, and the most in a hardirq
	// that woke a real-time task.
	hardMax, hardMaxRT int
	busyNs             int64
	busyFrom           int64
	remoteExpired      uint64
	remoteFrom         []remoteCount
	expiredHere        uint64
	sameNow            int64 // livelock guard: NOHZ wakeups at one instant
	sameCount          int

	_ [cpuStatePad]byte
}

// cpuStatePad pads cpuState to cpuStateSize bytes.
const cpuStatePad = 40

// cpuStateSize is cpuState's size, a multiple of the cache line.
const cpuStateSize = 512

type remoteCount struct {
	owner int
	n     uint64
}

// Machine is a simulated N-CPU Linux machine running the real timer code
// (package cpu, hier, hrtimer) on a virtual clock. Workloads drive it
// through the methods of Machine and Exec; everything runs on one
// goroutine, in the order of the event queue, except the quiet ticks of a
// tick instant, which run side by side on Config.Threads goroutines
// (parallel.go) and call nothing of a workload's but OnGap.
type Machine struct {
	cfg    Config
	costs  Costs
	samp   costSamplers
	set    *cpu.Set
	h      *hier.Hierarchy
	iso    hier.Isolation
	tickNs int64
	j0     uint64
	tg     tick.Grid
	cpus   []cpuState
	rng    *rand.Rand // Draw's stream (the workloads' costs); the kernel's costs are drawn from each CPU's own (cpuState.rng)

	now      int64
	events   eventHeap
	seq      uint64
	ticking  cpumask.Mask
	nTicking int
	grid     int64 // the next tick instant

	start, end int64 // the measurement window
	finished   bool
	nEvents    uint64
	err        error

	x      *Exec // the execution context code runs in now
	irqX   Exec
	taskX  Exec
	inIRQ  *cpuState
	global runqueue // unpinned runnable tasks no CPU took yet
	ctx    int      // the CPU whose code runs outside an Exec (idle entry, hotplug), for traces
	passN  int      // hrtimers expired in the hardirq being handled
	passRT bool     // and whether one of them woke a real-time task
	tseq   uint64

	workloads []Workload
	tracer    *tracer
	wallStart time.Time
	wall      time.Duration
	lastProg  time.Time
	watch     *watch // RunContext's progress callback and context (api.go)
	sw        *sweeper
	// sharedPasses counts the quiet passes shared with helper goroutines
	// (for the tests).
	sharedPasses uint64
}

// New builds the machine of cfg and boots it: every CPU comes online (and
// joins the hierarchy) at time 0, then the late initcall excludes the
// isolated CPUs and the cpuset partition is created.
func New(cfg Config) (*Machine, error) {
	if cfg.HZ == 0 {
		cfg.HZ = 250
	}
	if cfg.Platform == "" {
		cfg.Platform = "server"
		if cfg.Costs == (Costs{}) {
			p, _ := PlatformByName("server")
			cfg.Costs = p.Costs
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		cfg:    cfg,
		costs:  cfg.Costs,
		tickNs: cpu.TickNsec(cfg.HZ),
		j0:     cpu.InitialJiffies(cfg.HZ),
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x6b65726e656c)), // "kernel"
	}
	m.samp = newCostSamplers(&m.costs)
	m.tg = tick.Grid{T0: 0, J0: m.j0, TickNs: m.tickNs}
	m.iso = hier.Isolation{
		Domain:         cfg.Isolcpus,
		NohzFull:       cfg.NohzFull,
		CpusetIsolated: cfg.Partition,
		Timekeeper:     cfg.timekeeper(),
	}
	nodes := cfg.nodes()
	m.tracer = &tracer{m: m}
	if cfg.Trace != nil {
		m.tracer.log = &traceLog{m: m}
	}
	// The cpuset partition is created after boot: the hierarchy starts
	// with the boot isolation only.
	bootIso := m.iso
	bootIso.CpusetIsolated = cpumask.Mask{}
	set, err := cpu.New(cpu.Config{NodeOf: nodes, HZ: cfg.HZ, Policy: cfg.Policy, Isolation: bootIso, Tracer: m.tracer,
		TimerMigrationOff: cfg.TimerMigrationOff, ImbalancedNUMA: cfg.ImbalancedNUMA})
	if err != nil {
		return nil, err
	}
	m.set = set
	m.h = set.Hierarchy()
	m.cpus = make([]cpuState, cfg.CPUs)
	hrcfg := hrtimer.Config{PreemptRT: cfg.PreemptRT, Sleepers: cfg.Sleepers}
	for i := range m.cpus {
		c := &m.cpus[i]
		c.id, c.node = i, nodes[i]
		c.rng = *rand.NewPCG(cfg.Seed, cpuStream(i))
		c.nohzFull = cfg.NohzFull.Test(i)
		c.isolated = cfg.Isolcpus.Test(i) || cfg.Partition.Test(i)
		c.hrDev, c.nohzAt = hrtimer.Never, cpu.KtimeMax
		c.measOut = -1
		c.busyFrom = 0
		if c.hr, err = hrtimer.NewCPUBase(i, hrcfg); err != nil {
			return nil, err
		}
		// With nohz_full CPUs around, the timekeeper keeps its tick when
		// idle (can_stop_idle_tick).
		if err := c.tk.Init(tick.Config{CPU: i, Set: m.set, Hrtimer: c.hr, Grid: m.tg,
			NohzFull: c.nohzFull, Timekeeper: !cfg.NohzFull.Empty() && i == m.iso.Timekeeper}); err != nil {
			return nil, err
		}
		r, err := c.tk.Online(0)
		if err != nil {
			return nil, err
		}
		c.online = true
		m.apply(c, r, 0)
	}
	m.grid = m.tickNs
	m.start = int64(cfg.Warmup)
	m.end = m.start + int64(cfg.Duration)
	m.forceActive(m.set.InitIsolation(), 0)
	if !cfg.Partition.Empty() {
		m.setPartition(cfg.Partition, 0)
	}
	for _, a := range cfg.Actions {
		a := a
		m.At(int64(a.At), func() { m.doAction(a) })
	}
	m.check()
	if l := m.tracer.log; l != nil {
		// A recording starts on a running system: boot is not traced.
		l.events = l.events[:0]
	}
	return m, m.err
}

// Run boots a machine for cfg, starts the workloads on it and runs it to
// the end of the measurement window (or until a workload finishes it).
func Run(cfg Config, workloads ...Workload) (*Result, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return m.Run(workloads...)
}

// Run starts the workloads and runs the machine.
func (m *Machine) Run(workloads ...Workload) (*Result, error) {
	m.wallStart = time.Now()
	m.lastProg = m.wallStart
	m.workloads = workloads
	for _, w := range workloads {
		if err := w.Start(m); err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name(), err)
		}
		if m.err != nil {
			return nil, m.err
		}
	}
	// Every CPU leaves the boot path: it runs what was queued on it, or
	// goes idle.
	for i := range m.cpus {
		c := &m.cpus[i]
		m.reschedule(c, 0)
		if c.curr == nil && !c.idle {
			m.goIdle(c, 0)
		}
		m.checkCPU(c)
	}
	if err := m.loop(); err != nil {
		return nil, err
	}
	m.wall = time.Since(m.wallStart)
	if l := m.tracer.log; l != nil {
		if err := l.write(m.cfg.Trace); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
	}
	if m.cfg.Progress != nil && m.wall > time.Second {
		fmt.Fprintf(m.cfg.Progress, "\rtmigr sim: %.1f s simulated in %.1f s of wall time, %.2f M events/s          \n",
			float64(m.end)/1e9, m.wall.Seconds(), float64(m.nEvents)/m.wall.Seconds()/1e6)
	}
	return m.result(), nil
}

// loop runs events and ticks in time order until the end.
func (m *Machine) loop() error {
	m.startSweeper()
	defer m.stopSweeper()
	iter := 0
	for !m.finished && m.err == nil {
		next := Forever
		if len(m.events) > 0 {
			next = m.events[0].t
		}
		g := Forever
		if m.nTicking > 0 {
			g = m.grid
		}
		if g <= next {
			if g >= m.end {
				break
			}
			m.sweep(g)
			m.grid = g + m.tickNs
		} else {
			if next >= m.end {
				break
			}
			ev := m.events.pop()
			m.now = ev.t
			m.dispatch(&ev)
		}
		if iter++; iter&255 == 0 && (m.cfg.Progress != nil || m.watch != nil) {
			m.poll()
		}
	}
	if m.err != nil {
		return m.err
	}
	if !m.finished {
		m.now = m.end
	}
	m.finish()
	return m.err
}

func (m *Machine) progress() {
	now := time.Now()
	if now.Sub(m.lastProg) < time.Second {
		return
	}
	m.lastProg = now
	el := now.Sub(m.wallStart).Seconds()
	fmt.Fprintf(m.cfg.Progress, "\rtmigr sim: %.1f/%.1f s simulated, %.2f M events/s",
		float64(m.now)/1e9, float64(m.end)/1e9, float64(m.nEvents)/el/1e6)
}

func (m *Machine) dispatch(ev *event) {
	switch ev.kind {
	case evStep:
		c := &m.cpus[ev.cpu]
		if ev.gen != c.stepGen || c.curr == nil {
			return
		}
		if ev.t < c.stepEnd {
			// Interrupts stretched the step since the event was queued.
			e := *ev
			e.t = c.stepEnd
			m.push(e)
			return
		}
		m.nEvents++
		m.stepDone(c, ev.t)
		m.checkCPU(c)
	case evHrDevice:
		c := &m.cpus[ev.cpu]
		if ev.gen != c.hrGen || !c.online || c.stopped {
			return
		}
		m.nEvents++
		c.hrDev = hrtimer.Never
		m.hrInterrupt(c, ev.t)
		m.checkCPU(c)
	case evNohzWake:
		c := &m.cpus[ev.cpu]
		if ev.gen != c.nohzGen || !c.online || c.stopped || c.tickOn {
			return
		}
		m.nEvents++
		m.nohzWake(c, ev.t)
		m.checkCPU(c)
	case evKick:
		c := &m.cpus[ev.cpu]
		c.kicked = false
		if !c.online || c.stopped {
			return
		}
		m.nEvents++
		x := m.beginIRQ(c, ev.t, causeKick)
		x.Spend(c.draw(&m.samp.IPIHandler))
		m.endIRQ(x)
		m.checkCPU(c)
	case evResched:
		c := &m.cpus[ev.cpu]
		c.resched = false
		if !c.online || c.stopped {
			return
		}
		m.nEvents++
		x := m.beginIRQ(c, ev.t, causeResched)
		x.Spend(c.draw(&m.samp.IPIHandler))
		m.endIRQ(x)
		m.checkCPU(c)
	case evWake:
		m.nEvents++
		m.wake(ev.task, ev.t, nil)
		m.check()
	case evFunc:
		m.nEvents++
		ev.fn()
		m.check()
	}
}

func (m *Machine) push(e event) {
	m.seq++
	e.seq = m.seq
	m.events.push(e)
}

// At schedules fn at time t (ns since boot; not before now).
func (m *Machine) At(t int64, fn func()) {
	m.push(event{t: max(t, m.now), kind: evFunc, fn: fn})
}

func (m *Machine) draw(d Dist) int64 {
	if d.Kind == Const {
		return int64(d.A)
	}
	return d.Sample(m.rng)
}

// costSamplers are the kernel costs the machine draws millions of times,
// resolved once (Dist.Sampler): a draw is draw's, value for value and
// stream for stream, without finding the lognormal's table every time.
type costSamplers struct {
	Tick, IRQEntry, SoftirqEntry, RemotePull, IPIHandler     Sampler
	HrtimerExpiry, Wakeup, ContextSwitch, DeviceIRQ, Kworker Sampler
}

func newCostSamplers(c *Costs) costSamplers {
	return costSamplers{
		Tick: c.Tick.Sampler(), IRQEntry: c.IRQEntry.Sampler(), SoftirqEntry: c.SoftirqEntry.Sampler(),
		RemotePull: c.RemotePull.Sampler(), IPIHandler: c.IPIHandler.Sampler(),
		HrtimerExpiry: c.HrtimerExpiry.Sampler(), Wakeup: c.Wakeup.Sampler(),
		ContextSwitch: c.ContextSwitch.Sampler(), DeviceIRQ: c.DeviceIRQ.Sampler(), Kworker: c.Kworker.Sampler(),
	}
}

// draw draws a kernel cost of work on c from c's own random stream
// (Sampler.drawFrom: a tabled lognormal, nearly every kernel cost, without
// rand.Rand's interface call for each of the millions of draws). Each CPU
// has its stream, seeded from the run's seed and the CPU number, so that
// the ticks of different CPUs can be drawn side by side (see sweep) and
// still come out the same whatever the order.
func (c *cpuState) draw(s *Sampler) int64 { return s.drawFrom(&c.rng) }

// float64 is rand.Rand.Float64 on c's stream, value for value.
func (c *cpuState) float64() float64 {
	return float64(c.rng.Uint64()<<11>>11) / (1 << 53)
}

// cpuStream is the second PCG seed of CPU i's kernel cost stream: "kernel"
// mixed with the CPU number (splitmix64's finaliser), so that neighbouring
// CPUs' streams start far apart.
func cpuStream(i int) uint64 {
	z := 0x6b65726e656c ^ (uint64(i)+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (m *Machine) inWindow(t int64) bool { return t >= m.start && t < m.end }

// clip returns the length of [a, b) inside the measurement window.
func (m *Machine) clip(a, b int64) int64 {
	a, b = max(a, m.start), min(b, m.end)
	if b > a {
		return b - a
	}
	return 0
}

func (m *Machine) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// check runs the invariant checker of the hierarchy (with --check).
func (m *Machine) check() {
	if m.cfg.Check {
		m.checkNow()
	}
}

// checkNow is check's work, kept out of line so that check, called after
// every event, inlines to a test of one flag.
func (m *Machine) checkNow() {
	if m.err != nil || m.h == nil {
		return
	}
	if err := m.h.Check(); err != nil {
		m.fail(fmt.Errorf("at %s: %w", fmtTime(m.now), err))
		return
	}
	if w := m.h.Warnings(); w != 0 {
		m.fail(fmt.Errorf("at %s: the hierarchy hit %d WARN_ON conditions: the driver broke the kernel's contract", fmtTime(m.now), w))
	}
}

// checkCPU runs check and the simulator's own consistency checks of c.
func (m *Machine) checkCPU(c *cpuState) {
	if m.cfg.Check {
		m.checkCPUNow(c)
	}
}

// checkCPUNow is checkCPU's work, out of line as checkNow is.
func (m *Machine) checkCPUNow(c *cpuState) {
	if m.err != nil {
		return
	}
	m.check()
	if !c.online || c.stopped {
		return
	}
	baseIdle := m.set.BaseIdle(c.id)
	switch {
	case c.tickOn == c.tk.Stopped():
		m.fail(fmt.Errorf("at %s: CPU %d: the driver's tick (running %v) is not the tick core's", fmtTime(m.now), c.id, c.tickOn))
	case !c.tickOn && !baseIdle:
		m.fail(fmt.Errorf("at %s: CPU %d stopped its tick but its timer base is not idle", fmtTime(m.now), c.id))
	case c.tickOn && baseIdle:
		m.fail(fmt.Errorf("at %s: CPU %d runs its tick with an idle timer base", fmtTime(m.now), c.id))
	case c.curr != nil && c.idle:
		m.fail(fmt.Errorf("at %s: CPU %d is idle and runs %s", fmtTime(m.now), c.id, c.curr.Name))
	}
}

func fmtTime(ns int64) string { return fmt.Sprintf("%d.%09d s", ns/1e9, ns%1e9) }

// finish closes the measurement: open gaps and busy stretches.
func (m *Machine) finish() {
	for i := range m.cpus {
		c := &m.cpus[i]
		if c.meas != nil {
			if c.measOut >= 0 {
				m.stall(c, c.measOut, m.now)
			}
			m.flushGap(c)
		}
		if c.curr != nil {
			c.busyNs += m.clip(c.busyFrom, m.now)
			c.busyFrom = m.now
		}
	}
	if m.h != nil && m.h.Warnings() != 0 {
		m.fail(fmt.Errorf("the hierarchy hit %d WARN_ON conditions: the driver broke the kernel's contract", m.h.Warnings()))
	}
}

// forceActive runs a work item on each CPU in cpus (tmigr_trigger_active):
// the CPU leaves idle, which makes it active in the hierarchy.
func (m *Machine) forceActive(cpus []int, t int64) {
	for _, c := range cpus {
		m.runWork(c, t, "kworker/tmigr")
	}
}

// runWork queues a short kernel work item on CPU c.
func (m *Machine) runWork(c int, t int64, name string) {
	cost := m.cpus[c].draw(&m.samp.Kworker)
	w := &Task{Name: fmt.Sprintf("%s/%d", name, c), CPU: c, Pinned: true,
		Behavior: BehaviorFunc(func(*Exec, *Task) Step { return Step{Run: max(cost, 1), Then: Exit} })}
	m.wake(w, t, nil)
}

// doAction carries out a hotplug, cpuset or sysctl change.
func (m *Machine) doAction(a Action) {
	switch a.Kind {
	case Offline:
		m.offline(a.CPU, m.now)
	case Online:
		m.online(a.CPU, m.now)
	case SetPartition:
		m.setPartition(a.Mask, m.now)
	case TimerMigration:
		m.set.SetTimerMigration(a.On)
	}
}

// offline takes CPU i down, as the hotplug thread does on it: it leaves
// the hierarchy, its wheel timers move to another CPU (timers_dead_cpu)
// and so do its hrtimers (hrtimers_cpu_dying).
func (m *Machine) offline(i int, t int64) {
	m.ctx = i
	c := &m.cpus[i]
	if !c.online {
		m.fail(fmt.Errorf("at %s: offline %d: CPU %d is not online", fmtTime(t), i, i))
		return
	}
	to := -1
	for j := range m.cpus {
		if j != i && m.cpus[j].online && !m.cpus[j].stopped && !m.cfg.NohzFull.Test(j) {
			to = j
			break
		}
	}
	if to < 0 {
		m.fail(fmt.Errorf("at %s: offline %d: no other housekeeping CPU is online", fmtTime(t), i))
		return
	}
	if m.cfg.NohzFull.Weight() > 0 && i == m.iso.Timekeeper {
		m.fail(fmt.Errorf("at %s: offline %d: the timekeeper cannot go offline while nohz_full is in use", fmtTime(t), i))
		return
	}
	// The hotplug thread runs on the CPU: it is active, and busy from now
	// (an idle CPU's last busy stretch ended when it went idle).
	if c.idle {
		m.apply(c, c.tk.IdleExit(t, false), t)
		c.idle = false
		c.busyFrom = t
	}
	// A task pinned to the CPU loses its affinity and runs elsewhere
	// (select_fallback_rq: "process N (comm) no longer affine to cpuN"),
	// as every other task of its runqueue does.
	if c.curr != nil {
		cur := c.curr
		m.preempt(c, t)
		c.rq.remove(cur)
		cur.Pinned = false
		m.global.push(cur, false)
	}
	for c.rq.len() > 0 {
		task := c.rq.pop()
		task.Pinned = false
		m.global.push(task, false)
	}
	r, err := c.tk.Offline(&m.cpus[to].tk, t)
	if err != nil {
		m.fail(err)
		return
	}
	if r.Retrigger >= 0 {
		// Delivered at once: the dying CPU's last act.
		d := &m.cpus[r.Retrigger]
		m.apply(d, d.tk.Retrigger(), t)
	}
	c.online = false
	c.idle = false
	m.apply(c, r, t) // the tick stops for good
	c.hrGen++
	c.stepGen++
	c.busyNs += m.clip(c.busyFrom, t)
	if r.Activate >= 0 {
		m.forceActive([]int{int(r.Activate)}, t)
	}
	if r.Kick >= 0 {
		m.kick(int(r.Kick), t)
	}
	m.pullGlobal(t)
}

// online brings CPU i back: empty bases, active in the hierarchy (it runs
// the hotplug thread), then idle.
func (m *Machine) online(i int, t int64) {
	m.ctx = i
	c := &m.cpus[i]
	if c.online {
		m.fail(fmt.Errorf("at %s: online %d: CPU %d is already online", fmtTime(t), i, i))
		return
	}
	r, err := c.tk.Online(t)
	if err != nil {
		m.fail(err)
		return
	}
	c.online = true
	c.hrDev = hrtimer.Never
	c.irqEnd = max(c.irqEnd, t)
	m.apply(c, r, t)
	c.busyFrom = t
	m.reschedule(c, t)
	if c.curr == nil {
		m.goIdle(c, t)
	}
}

// setPartition replaces the isolated cpuset partition (cpuset updates its
// isolated CPUs, then calls tmigr_isolated_exclude_cpumask with all of
// them; the CPUs that withdraw do so in a work item on themselves, so they
// are woken first).
func (m *Machine) setPartition(mask cpumask.Mask, t int64) {
	iso := m.iso
	iso.CpusetIsolated = mask
	if err := m.set.SetIsolation(iso); err != nil {
		m.fail(err)
		return
	}
	m.iso = iso
	for i := range m.cpus {
		c := &m.cpus[i]
		c.isolated = m.cfg.Isolcpus.Test(i) || mask.Test(i)
	}
	if m.h == nil || m.cfg.Policy != cpu.PullIsolated {
		return
	}
	excl := m.cfg.Isolcpus.Or(mask)
	// Wake the CPUs that will withdraw: they run the work item.
	woken := excl.And(m.h.Available())
	var idled []int
	for i := woken.First(); i >= 0; i = woken.Next(i) {
		c := &m.cpus[i]
		if c.online && !c.stopped && !c.tickOn {
			m.apply(c, c.tk.Restart(t), t)
			idled = append(idled, i)
		}
	}
	triggers := m.set.ExcludeIsolated(excl)
	for _, i := range idled {
		c := &m.cpus[i]
		if c.curr == nil || c.nohzFull {
			m.ctx = c.id
			m.apply(c, c.tk.StopTick(t), t)
		}
	}
	m.forceActive(triggers, t)
}
