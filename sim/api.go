package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/wheel"
)

// Exec is the context simulated code runs in: an interrupt or softirq on a
// CPU, or a task's step. Now advances as the code spends time.
type Exec struct {
	m   *Machine
	CPU int
	Now int64
	// Task is the task whose step this is, nil in interrupt context.
	Task *Task
	irq  bool
}

// Machine returns the machine.
func (x *Exec) Machine() *Machine { return x.m }

// Spend charges d ns of CPU time to the code running now (a timer
// callback's work).
func (x *Exec) Spend(d int64) {
	if d > 0 {
		x.Now += d
	}
}

// Jiffies returns the jiffies at x.Now.
func (x *Exec) Jiffies() uint64 {
	j := x.m.tg.Jiffies(x.Now)
	return j
}

// Mod arms t to expire at tick expires, from this CPU (mod_timer).
func (x *Exec) Mod(t *Timer, expires uint64) {
	x.m.mod(x.CPU, t, expires, x.Now)
}

// AddOn arms t on CPU cpu (add_timer_on: the timer is pinned there).
func (x *Exec) AddOn(t *Timer, cpu int, expires uint64) {
	x.m.addOn(t, cpu, expires, x.Now)
}

// Del cancels t and reports whether it was pending.
func (x *Exec) Del(t *Timer) bool {
	return x.m.set.Del(&t.w)
}

// Wake wakes task from the code running now.
func (x *Exec) Wake(t *Task) {
	x.m.wake(t, x.Now, &x.m.cpus[x.CPU])
}

// Timer is a timer-wheel timer of the simulated kernel (struct
// timer_list). Its function runs in the timer softirq of whatever CPU
// expires it, with that CPU's Exec.
type Timer struct {
	w    wheel.Timer
	Name string
	// Data belongs to the workload.
	Data any
	fn   func(x *Exec, t *Timer)
	id   uint64 // the "pointer" a trace prints
}

// NewTimer sets up a timer with flags (cpu.Pinned, cpu.Deferrable) and a
// function (timer_setup).
func (m *Machine) NewTimer(name string, flags uint32, fn func(x *Exec, t *Timer)) *Timer {
	t := new(Timer)
	m.InitTimer(t, name, flags, fn)
	return t
}

// InitTimer is NewTimer on a timer the caller allocated (not pending):
// a workload with thousands of timers keeps each in the struct its
// callback reads, one cache miss fewer per expiry.
func (m *Machine) InitTimer(t *Timer, name string, flags uint32, fn func(x *Exec, t *Timer)) {
	*t = Timer{Name: name, fn: fn}
	cpu.Setup(&t.w, flags)
	t.w.Data = t
	if l := m.tracer.log; l != nil {
		l.timers++
		t.id = l.timers << 6
	}
}

// CPU returns the CPU whose base the timer is (or was last) queued on.
func (t *Timer) CPU() int { return t.w.CPU() }

// Pending reports whether the timer is armed.
func (t *Timer) Pending() bool { return t.w.Pending() }

// Expires returns the tick the timer was last armed for.
func (t *Timer) Expires() uint64 { return t.w.Expires() }

// Mod arms t from CPU c at the current time (mod_timer on c).
func (m *Machine) Mod(c int, t *Timer, expires uint64) { m.mod(c, t, expires, m.now) }

// AddOn arms t pinned on CPU c at the current time.
func (m *Machine) AddOn(t *Timer, c int, expires uint64) { m.addOn(t, c, expires, m.now) }

func (m *Machine) mod(c int, t *Timer, expires uint64, now int64) {
	jif := m.tg.Jiffies(now)
	if _, k := m.set.Mod(c, &t.w, expires, jif, 0); k >= 0 {
		m.kick(k, now)
	}
}

func (m *Machine) addOn(t *Timer, c int, expires uint64, now int64) {
	jif := m.tg.Jiffies(now)
	if k := m.set.AddOn(&t.w, c, expires, jif); k >= 0 {
		m.kick(k, now)
	}
}

// DeviceIRQ delivers a device interrupt (network receive, block
// completion) to CPU c at time at: the CPU leaves idle if it must, runs
// the handler (cost.device_irq) and then fn, which may arm timers, in
// interrupt context.
func (m *Machine) DeviceIRQ(c int, at int64, fn func(x *Exec)) {
	m.At(at, func() {
		s := &m.cpus[c]
		if !s.online || s.stopped {
			return
		}
		x := m.beginIRQ(s, m.now, causeDevice)
		x.Spend(s.draw(&m.samp.DeviceIRQ))
		if fn != nil {
			fn(x)
		}
		m.endIRQ(x)
		m.checkCPU(s)
	})
}

// TaskSpec describes a task to create.
type TaskSpec struct {
	Name     string
	Policy   hrtimer.Policy
	Prio     int
	CPU      int  // the CPU to pin to, or the first CPU to try if not Pinned
	Pinned   bool // affinity to CPU only
	Behavior Behavior
	// OnGap makes the task a measuring busy loop (Task.OnGap). It may be
	// called on one of the run's helper goroutines (Config.Threads), at
	// the same time as other CPUs' OnGap: it must touch nothing but its
	// own task's data.
	OnGap  func(start, length int64)
	OnExit func(x *Exec, t *Task)
}

// NewTask creates a task; it does not run until woken.
func (m *Machine) NewTask(s TaskSpec) (*Task, error) {
	if s.Behavior == nil {
		return nil, fmt.Errorf("task %s: no behaviour", s.Name)
	}
	if s.Pinned && (s.CPU < 0 || s.CPU >= len(m.cpus)) {
		return nil, fmt.Errorf("task %s: CPU %d out of range 0-%d", s.Name, s.CPU, len(m.cpus)-1)
	}
	if s.Policy.RTOrDL() && (s.Prio < 1 || s.Prio > 99) {
		return nil, fmt.Errorf("task %s: real-time priority %d outside 1-99", s.Name, s.Prio)
	}
	t := &Task{Name: s.Name, Policy: s.Policy, Prio: s.Prio, CPU: s.CPU, Pinned: s.Pinned,
		Behavior: s.Behavior, OnGap: s.OnGap, OnExit: s.OnExit, state: taskNew}
	if !s.Policy.RTOrDL() {
		t.Prio = 0
	}
	if s.OnGap != nil {
		if !s.Pinned {
			return nil, fmt.Errorf("task %s: a measuring task must be pinned", s.Name)
		}
		c := &m.cpus[s.CPU]
		if c.meas != nil {
			return nil, fmt.Errorf("task %s: CPU %d already runs a measuring task (%s)", s.Name, s.CPU, c.meas.Name)
		}
		c.meas, c.measGap = t, s.OnGap
	}
	return t, nil
}

// Wake makes task runnable now, from outside any CPU's code (a workload
// starting it, an I/O completion).
func (m *Machine) Wake(t *Task) { m.wake(t, m.now, nil) }

// Now returns the time of the event being processed (ns since boot).
func (m *Machine) Now() int64 { return m.now }

// Jiffies returns the jiffies at the current time.
func (m *Machine) Jiffies() uint64 {
	j := m.tg.Jiffies(m.now)
	return j
}

// MeasureStart and MeasureEnd bound the measurement window (ns since
// boot). MeasureEnd moves to the finishing time when a workload ends the
// run early.
func (m *Machine) MeasureStart() int64 { return m.start }

// MeasureEnd returns the end of the measurement window.
func (m *Machine) MeasureEnd() int64 { return m.end }

// Finish ends the run now (a workload that completes, like a build).
func (m *Machine) Finish() {
	if m.finished {
		return
	}
	m.finished = true
	if m.now < m.end {
		m.end = m.now
	}
}

// HZ returns the tick rate, TickNs the tick length.
func (m *Machine) HZ() int { return m.cfg.HZ }

// TickNs returns the tick length in ns.
func (m *Machine) TickNs() int64 { return m.tickNs }

// NumCPUs returns the number of CPUs.
func (m *Machine) NumCPUs() int { return len(m.cpus) }

// NodeOf returns the NUMA node of CPU c.
func (m *Machine) NodeOf(c int) int { return m.cpus[c].node }

// Nodes returns the number of NUMA nodes.
func (m *Machine) Nodes() int { return max(m.cfg.Nodes, 1) }

// Config returns the run's configuration.
func (m *Machine) Config() *Config { return &m.cfg }

// Costs returns the cost model.
func (m *Machine) Costs() *Costs { return &m.costs }

// Isolation returns the current isolation setup.
func (m *Machine) Isolation() hier.Isolation { return m.iso }

// Online reports whether cpu is online.
func (m *Machine) Online(cpu int) bool { return cpu >= 0 && cpu < len(m.cpus) && m.cpus[cpu].online }

// Housekeeping returns the CPUs isolated neither by isolcpus, nor by
// nohz_full, nor by the cpuset partition.
func (m *Machine) Housekeeping() cpumask.Mask {
	return cpumask.Range(0, len(m.cpus)-1).AndNot(m.cfg.Isolcpus).AndNot(m.cfg.NohzFull).AndNot(m.cfg.Partition)
}

// Hierarchy returns the migration hierarchy (nil for none and push).
func (m *Machine) Hierarchy() *hier.Hierarchy { return m.h }

// Rand returns a random stream of the run for the named user: the same
// seed and name give the same stream, and streams of different names are
// independent, so adding a workload does not change the costs another one
// draws.
func (m *Machine) Rand(name string) *rand.Rand {
	return rand.New(m.PCG(name))
}

// PCG is the source of Rand(name), for a caller that keeps the stream
// beside its other data.
func (m *Machine) PCG(name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(m.cfg.Seed, h.Sum64())
}

// Draw samples d from the kernel's cost stream.
func (m *Machine) Draw(d Dist) int64 { return m.draw(d) }

// StopCPU stops CPU c for good, as crash_smp_send_stop does: it halts
// with interrupts off and takes nothing, timers included.
func (m *Machine) StopCPU(c int) {
	s := &m.cpus[c]
	if s.stopped || !s.online {
		return
	}
	if s.curr != nil {
		s.busyNs += m.clip(s.busyFrom, m.now)
		s.curr = nil
	}
	s.stopped = true
	s.idle = false
	m.stopTick(s)
	s.nohzGen++
	s.hrGen++
	s.stepGen++
}

// SetNoNohz makes CPU c idle without ever stopping its tick (a CPU halted
// outside the idle loop, as a panicking CPU that halts: it still takes
// every interrupt). A stopped tick is restarted.
func (m *Machine) SetNoNohz(c int, on bool) {
	m.setHalted(&m.cpus[c], on)
}

// BusyNs returns the time CPU c ran a task or kernel code within the
// measurement window so far.
func (m *Machine) BusyNs(c int) int64 {
	s := &m.cpus[c]
	b := s.busyNs
	if s.curr != nil {
		b += m.clip(s.busyFrom, m.now)
	}
	return b
}

// Ticks returns the number of tick interrupts CPU c took in the window.
func (m *Machine) Ticks(c int) uint64 { return m.cpus[c].ticks }

// Wakeups returns the number of idle exits of CPU c in the window.
func (m *Machine) Wakeups(c int) uint64 { return m.cpus[c].wakeups }

// TimerWakeups returns the idle exits of CPU c in the window that timers
// caused: its own timer events (the NOHZ wakeup, an hrtimer) and the
// wake-up IPIs for timers queued on its idle base. Idle exits to run a
// task or for a device interrupt are not counted.
func (m *Machine) TimerWakeups(c int) uint64 {
	s := &m.cpus[c]
	return s.wakeBy[causeTimer] + s.wakeBy[causeKick]
}

// Interrupts returns the number of interrupts CPU c took in the window.
func (m *Machine) Interrupts(c int) uint64 { return m.cpus[c].irqs }

// HardirqExpiries returns the most hrtimers one hrtimer interrupt of CPU c
// expired in the window (retry passes included), and the most in an
// interrupt that woke a real-time task: everything expired there ran
// before that task could.
func (m *Machine) HardirqExpiries(c int) (all, withRT int) {
	return m.cpus[c].hardMax, m.cpus[c].hardMaxRT
}

// Progress is how far a run has got, as a RunContext callback sees it.
type Progress struct {
	// Now is the simulated time reached and End the time the run ends at
	// (ns since boot, the warm-up included).
	Now, End int64
	// Events counts the events handled so far.
	Events uint64
	// Wall is the wall time since the run started.
	Wall time.Duration
}

// Done returns the share of the run simulated, 0 to 1.
func (p Progress) Done() float64 {
	if p.End <= 0 {
		return 1
	}
	return min(max(float64(p.Now)/float64(p.End), 0), 1)
}

// Rate returns the simulated seconds per wall second so far.
func (p Progress) Rate() float64 {
	if p.Wall <= 0 {
		return 0
	}
	return float64(p.Now) / 1e9 / p.Wall.Seconds()
}

// ETA estimates the wall time left at the rate so far; 0 while nothing
// has been simulated yet.
func (p Progress) ETA() time.Duration {
	if p.Now <= 0 || p.Wall <= 0 {
		return 0
	}
	return time.Duration(float64(p.Wall) * float64(p.End-p.Now) / float64(p.Now))
}

// ProgressEvery is about how often, in wall time, RunContext calls its
// progress callback.
const ProgressEvery = 250 * time.Millisecond

// RunContext boots a machine for cfg and runs it like Run, with a way to
// watch the run and to stop it. progress, if not nil, is called on the
// run's goroutine about every ProgressEvery of wall time; it must not
// call the machine. When ctx is done the run stops at the event it has
// reached, as if a workload had called Finish there: the measurement
// window ends at that time (or is empty in the warm-up), Result.Partial
// is set, and RunContext returns the result of what was simulated with
// ctx's error. A context done from the start stops the run at the first
// poll, in the warm-up: an empty, partial result. Neither changes what is simulated: a run that is not
// stopped is the run Run gives, byte for byte.
func RunContext(ctx context.Context, cfg Config, progress func(Progress), workloads ...Workload) (*Result, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return m.RunContext(ctx, progress, workloads...)
}

// RunContext starts the workloads and runs the machine as RunContext
// (the function) does.
func (m *Machine) RunContext(ctx context.Context, progress func(Progress), workloads ...Workload) (*Result, error) {
	m.watch = &watch{done: ctx.Done(), fn: progress}
	res, err := m.Run(workloads...)
	if err == nil && m.watch.stopped {
		err = ctx.Err()
	}
	return res, err
}

// watch is what RunContext asked for. The event loop calls poll every
// few hundred iterations (a few milliseconds at most).
type watch struct {
	done    <-chan struct{}
	fn      func(Progress)
	last    time.Time
	stopped bool
}

// poll prints Config.Progress's line, calls the progress callback and
// stops the run when the context is done.
func (m *Machine) poll() {
	if m.cfg.Progress != nil {
		m.progress()
	}
	w := m.watch
	if w == nil {
		return
	}
	select {
	case <-w.done:
		w.stopped = true
		m.finished = true
		m.end = max(min(m.end, m.now), m.start)
		return
	default:
	}
	if w.fn == nil {
		return
	}
	if now := time.Now(); now.Sub(w.last) >= ProgressEvery {
		w.last = now
		w.fn(Progress{Now: m.now, End: m.end, Events: m.nEvents, Wall: now.Sub(m.wallStart)})
	}
}

// CPUSecondNs is about the CPU time the simulator takes per simulated
// CPU-second of a busy machine (every CPU ticking, a measuring task on
// most), as BenchmarkOslatMachine measured it from 2048 CPUs up on the
// 2-core CI machine kind (docs/performance.md). Idle machines, whose CPUs
// stop their ticks, take far less.
const CPUSecondNs = 30_000

// Estimate returns a rough wall time a run of cfg takes on a machine like
// the one CPUSecondNs was measured on: an upper figure for the busy
// workloads, so a caller can warn before a long run.
func Estimate(cfg Config) time.Duration {
	cpuS := float64(cfg.CPUs) * (cfg.Warmup + cfg.Duration).Seconds()
	return time.Duration(cpuS * CPUSecondNs)
}
