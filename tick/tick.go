package tick

import (
	"errors"
	"fmt"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
)

// NoCPU is a Ready's "no CPU" in Kick, Activate and Retrigger.
const NoCPU int32 = -1

// Softirqs is a set of raised softirqs.
type Softirqs uint8

// The softirqs a CPU's tick code raises, in the order the kernel runs them
// (TIMER_SOFTIRQ before HRTIMER_SOFTIRQ).
const (
	// TimerSoftirq: run the timer softirq (CPU.TimerSoftirq) and its pass.
	TimerSoftirq Softirqs = 1 << iota
	// HrtimerSoftirq: run the hrtimer softirq (CPU.HrtimerSoftirq), its
	// pass, and EndPass.
	HrtimerSoftirq
)

// Ready is what a driver must do after a call, before the next call on the
// same CPU (see the package doc for the duties). Every method returns one;
// none is the zero value (its CPU fields are NoCPU when unused). It is
// small and returned by value: the tick is the commonest call a simulator
// makes.
type Ready struct {
	// Tick is when the driver must next call CPU.Tick: the next instant of
	// the grid while the tick runs, the NOHZ wakeup (the kernel's
	// sched_timer) while it is stopped, Never for none. Stopped says which.
	Tick int64
	// DeviceAt is what to arm the CPU's clock event device (the hrtimer
	// interrupt) for when Program is set; Never disarms it. A device armed
	// for a time already past fires at once.
	DeviceAt int64

	// Kick: send this CPU a wake-up IPI (trigger_dyntick_cpu: a timer was
	// queued first on its idle base); at the end of that interrupt it
	// re-evaluates its sleep (Idle). Activate: make this CPU leave idle
	// (tmigr_trigger_active: a work item on it), which makes it active in
	// the hierarchy. Retrigger: send this CPU the hrtimer retrigger IPI
	// (call its Retrigger and carry out that Ready there).
	Kick, Activate, Retrigger int32

	// Softirq: the softirqs this call raised. On a non-RT kernel they run
	// on the way out of the interrupt; on PREEMPT_RT in the CPU's ktimers
	// thread.
	Softirq Softirqs

	Stopped bool
	// TickSet: this call started the tick, stopped it or re-armed the NOHZ
	// wakeup; the driver (re)arms its tick timer for Tick. Otherwise the
	// tick goes on as it was.
	TickSet bool
	// Program: arm the device for DeviceAt.
	Program bool
	// Hang: the hrtimer interrupt gave up after three passes and left the
	// hang delay in the device (the kernel prints "hrtimer: interrupt took
	// N ns" for the first one after boot).
	Hang bool
}

func (c *CPU) ready() Ready {
	return Ready{Tick: c.next, Stopped: c.stopped, Kick: NoCPU, Activate: NoCPU, Retrigger: NoCPU}
}

func (c *CPU) tickSet() Ready {
	r := c.ready()
	r.TickSet = true
	return r
}

// Config is one CPU's part of a machine.
type Config struct {
	// CPU is the CPU's number in Set.
	CPU int
	// Set is the machine's timer code; Hrtimer the CPU's hrtimer base
	// (high-resolution mode).
	Set     *cpu.Set
	Hrtimer *hrtimer.CPUBase
	// Grid is the machine's tick grid.
	Grid Grid
	// NohzFull: the CPU is in nohz_full= (tick_nohz_full_cpu): it may stop
	// its tick while it runs a single task (FullUpdate), and leaving idle
	// to run one task keeps the tick stopped.
	NohzFull bool
	// Timekeeper: the CPU keeps time for nohz_full CPUs (there are some,
	// and it holds tick_do_timer_cpu). It never stops its tick in the idle
	// loop, to guarantee timekeeping progression (can_stop_idle_tick), so
	// it never goes idle in the hierarchy either.
	Timekeeper bool
}

// CPU is one CPU's tick and NOHZ state (the kernel's struct tick_sched)
// and the glue from its interrupts to the timer code: its methods are the
// events a driver sees. A CPU is driven by one goroutine at a time (the
// CPU's own); CPUs of one machine may be driven concurrently, since the
// timer code and the hierarchy they share are safe for concurrent use.
type CPU struct {
	// What a tick reads comes first, in one cache line: a simulator
	// ticks thousands of CPUs in a row.
	online  bool
	stopped bool // TS_FLAG_STOPPED: the tick is stopped (the timer base is idle)
	lastOK  bool
	id      int32
	next    int64        // Ready.Tick
	last    cpu.Snapshot // the last snapshot taken, if lastOK
	grid    Grid
	set     *cpu.Set

	hr         *hrtimer.CPUBase
	inIdle     bool // TS_FLAG_INIDLE: in the idle loop
	nohzFull   bool
	timekeeper bool
	halted     bool // idles outside the idle loop (SetHalted)
	raised     bool // the hard pass in progress raised HRTIMER_SOFTIRQ
	hard, soft *hrtimer.Pass
}

// snapshot is c.grid.Snapshot(now), without a division when now falls in
// the jiffy of the last snapshot or the next one, as it does tick after
// tick.
func (c *CPU) snapshot(now int64) cpu.Snapshot {
	if c.lastOK {
		switch d := now - c.last.M; {
		case d >= 0 && d < c.grid.TickNs:
			return c.last
		case d >= c.grid.TickNs && d < 2*c.grid.TickNs:
			c.last = cpu.Snapshot{J: c.last.J + 1, M: c.last.M + c.grid.TickNs}
			return c.last
		}
	}
	c.last, c.lastOK = c.grid.Snapshot(now), now >= c.grid.T0
	return c.last
}

// Init makes c the tick of cfg.CPU, offline; bring it up with Online. It
// checks cfg.
func (c *CPU) Init(cfg Config) error {
	switch {
	case cfg.Set == nil || cfg.Hrtimer == nil:
		return errors.New("tick: Config needs a Set and an hrtimer base")
	case cfg.CPU < 0 || cfg.CPU >= cfg.Set.NumCPUs():
		return fmt.Errorf("tick: CPU %d out of range 0..%d", cfg.CPU, cfg.Set.NumCPUs()-1)
	case cfg.Hrtimer.CPU() != cfg.CPU:
		return fmt.Errorf("tick: CPU %d given the hrtimer base of CPU %d", cfg.CPU, cfg.Hrtimer.CPU())
	case cfg.Grid.TickNs != cfg.Set.TickNsec():
		return fmt.Errorf("tick: grid of %d ns ticks for a timer code of %d ns ticks", cfg.Grid.TickNs, cfg.Set.TickNsec())
	case cfg.Hrtimer.Config().LowRes:
		return errors.New("tick: the hrtimer base is in low-resolution mode; only high-resolution mode is modelled")
	}
	*c = CPU{id: int32(cfg.CPU), set: cfg.Set, hr: cfg.Hrtimer, grid: cfg.Grid,
		nohzFull: cfg.NohzFull, timekeeper: cfg.Timekeeper, stopped: true, next: Never}
	return nil
}

// ID returns the CPU's number.
func (c *CPU) ID() int { return int(c.id) }

// Stopped reports whether the tick is stopped (TS_FLAG_STOPPED).
func (c *CPU) Stopped() bool { return c.stopped }

// InIdle reports whether the CPU is in the idle loop (TS_FLAG_INIDLE).
func (c *CPU) InIdle() bool { return c.inIdle }

// IsOnline reports whether the CPU is online.
func (c *CPU) IsOnline() bool { return c.online }

// Online brings the CPU up at now (timers_prepare_cpu, tmigr's prepare and
// available callbacks, hrtimers_cpu_starting) with its tick running: the
// hotplug thread runs on it, so it is active until it goes idle.
func (c *CPU) Online(now int64) (Ready, error) {
	if c.online {
		return c.ready(), fmt.Errorf("tick: CPU %d is already online", c.id)
	}
	if err := c.set.Online(int(c.id), c.grid.Jiffies(now)); err != nil {
		return c.ready(), err
	}
	if !c.hr.Online() {
		c.hr.Starting()
	}
	c.online, c.inIdle, c.stopped = true, false, false
	c.next = c.grid.Next(now)
	return c.tickSet(), nil
}

// Offline takes the CPU down at now, run on the dying CPU by the hotplug
// thread (so it leaves idle first, tick restarted: the thread is the only
// task, but it is active): it leaves the hierarchy (tmigr_cpu_unavailable),
// its wheel timers move to CPU to (timers_dead_cpu, re-bucketed against
// to's clock) and so do its hrtimers (hrtimers_cpu_dying). The Ready says
// whom to interrupt: to, for the retrigger IPI that reprograms its device
// (Retrigger) and, when it received a new first timer on an idle base, for
// a wake-up (Kick); the CPU the hierarchy needs forced active (Activate).
// The CPU's tick is then stopped for good.
func (c *CPU) Offline(to *CPU, now int64) (Ready, error) {
	if !c.online {
		return c.ready(), fmt.Errorf("tick: CPU %d is not online", c.id)
	}
	if to == c || to == nil || !to.online {
		return c.ready(), fmt.Errorf("tick: cannot move CPU %d's timers to that CPU", c.id)
	}
	if c.inIdle {
		c.IdleExit(now, false)
	}
	trigger, kick, err := c.set.Offline(int(c.id), int(to.id), c.grid.Jiffies(now))
	if err != nil {
		return c.ready(), err
	}
	eff, err := c.hr.Dying(to.hr)
	if err != nil {
		return c.ready(), err
	}
	c.online, c.inIdle, c.stopped = false, false, true
	c.next = Never
	r := c.tickSet()
	r.Activate = int32(trigger)
	if kick {
		r.Kick = to.id
	}
	if eff.IPI != nil {
		r.Retrigger = int32(eff.IPI.CPU())
	}
	return r, nil
}

// Tick is the tick interrupt at now: the periodic tick, or the NOHZ wakeup
// of a CPU whose tick is stopped (tick_nohz_handler / tick_sched_timer).
// The timer part of update_process_times (run_local_timers) raises
// TIMER_SOFTIRQ if a base is due or the hierarchy has remote timers due for
// this CPU (tmigr_requires_handle_remote). A running tick goes on at the
// next grid instant; a NOHZ wakeup is not re-armed (HRTIMER_NORESTART): the
// CPU re-evaluates its sleep when the interrupt ends (Idle, FullUpdate).
func (c *CPU) Tick(now int64) (r Ready) {
	// The result is filled in place: this is the call a simulator makes
	// for every ticking CPU at every tick.
	r.Kick, r.Activate, r.Retrigger = NoCPU, NoCPU, NoCPU
	r.Tick, r.Stopped = c.next, c.stopped
	if !c.online {
		return r
	}
	snap := c.snapshot(now)
	if c.stopped {
		c.next = Never
		r.Tick, r.TickSet = Never, true
	} else {
		c.next = snap.M + c.grid.TickNs
		r.Tick = c.next
	}
	if c.set.Tick(int(c.id), snap) {
		r.Softirq |= TimerSoftirq
	}
	return r
}

// TimerSoftirq starts the timer softirq (run_timer_softirq) at now: its
// pass expires the CPU's due wheel timers and, as migrator, other idle
// CPUs' global ones (see cpu.Pass). Run it to its end.
func (c *CPU) TimerSoftirq(now int64) *cpu.Pass {
	return c.set.Softirq(int(c.id), c.snapshot(now))
}

// HrtimerInterrupt starts hrtimer_interrupt at now: the clock event device
// fired. Run the pass's callbacks (Next, Done), then EndPass with a fresh
// now; repeat while EndPass says retry.
func (c *CPU) HrtimerInterrupt(now int64) (*hrtimer.Pass, error) {
	p, err := c.hr.Interrupt(now)
	if err != nil {
		return nil, err
	}
	c.hard, c.raised = p, p.Raised()
	return p, nil
}

// HrtimerSoftirq starts HRTIMER_SOFTIRQ's pass over the soft bases at now
// (hrtimer_run_softirq). Run it like the interrupt's, then EndPass.
func (c *CPU) HrtimerSoftirq(now int64) (*hrtimer.Pass, error) {
	p, err := c.hr.Softirq(now)
	if err != nil {
		return nil, err
	}
	c.soft = p
	return p, nil
}

// EndPass ends the hrtimer pass p (the interrupt's or the softirq's, after
// its callbacks ran) at now, a fresh reading of the clock. retry: the
// interrupt found its next event already past and began a further pass at
// now (at most two); run its callbacks and call EndPass again. Otherwise
// the Ready programs the device as the pass left it (hrtimer_interrupt's
// tick_program_event of expires_next, the hang delay, or the softirq's
// reprogram) and, after the interrupt, raises HRTIMER_SOFTIRQ if any of its
// passes found soft timers due. The interrupt may run while the softirq's
// pass is in progress (the hardirq preempts the softirq): then it raises
// nothing, the softirq being still active.
func (c *CPU) EndPass(p *hrtimer.Pass, now int64) (r Ready, retry bool, err error) {
	r = c.ready()
	if p == nil || p != c.hard && p != c.soft {
		return r, false, errors.New("tick: EndPass of a pass this CPU did not start")
	}
	out, err := p.End(now)
	if err != nil {
		return r, false, err
	}
	if out.Retry {
		c.raised = c.raised || out.Raised
		return r, true, nil
	}
	r.Program, r.DeviceAt, r.Hang = out.Program, out.At, out.Hang
	if p == c.hard {
		if c.raised {
			r.Softirq |= HrtimerSoftirq
		}
		c.hard, c.raised = nil, false
	} else {
		c.soft = nil
	}
	return r, false, nil
}

// Retrigger is the hrtimer retrigger IPI arriving (retrigger_next_event):
// the next event is recomputed and the device reprogrammed, after hotplug
// moved timers here or a start from an offline CPU.
func (c *CPU) Retrigger() Ready {
	eff := c.hr.Retrigger()
	r := c.ready()
	r.Program, r.DeviceAt = eff.Program, eff.At
	return r
}

// Idle is one round of the idle loop at now, the CPU having nothing to
// run: on the first round it enters idle (tick_nohz_idle_enter; the
// scheduler's idle_cpu() is true from now on, which the push policy reads),
// and every round it stops the tick or re-arms the stopped one for the
// next event (tick_nohz_idle_stop_tick), unless it may not stop it
// (can_stop_idle_tick: the timekeeper while nohz_full CPUs exist, or a CPU
// halted outside the idle loop). Call it when the CPU runs out of tasks
// and again at the end of every interrupt that leaves it idle.
func (c *CPU) Idle(now int64) Ready {
	if !c.online {
		return c.ready()
	}
	if !c.inIdle {
		c.inIdle = true
		c.set.SetBusy(int(c.id), false)
	}
	if c.timekeeper || c.halted {
		return c.ready()
	}
	return c.StopTick(now)
}

// StopTick tries to stop the tick at now, or re-arms a stopped one
// (tick_nohz_next_event, then tick_nohz_stop_tick):
//
//  1. the next timer event is computed (get_next_timer_interrupt; for a CPU
//     whose base is already idle this publishes a new first global timer
//     to the hierarchy, tmigr_cpu_new_timer);
//  2. a running tick is kept if that event is at most a tick away
//     (timer_expires = 0: tick_nohz_retain_tick);
//  3. otherwise the timer base is marked idle, which leaves the hierarchy
//     (timer_base_try_to_set_idle, tmigr_cpu_deactivate); if it does not
//     go idle after all (the hierarchy handed back an event within a
//     tick), the tick is kept;
//  4. the tick is stopped and the NOHZ wakeup armed for the earlier of the
//     two events (Never for none).
//
// Idle and FullUpdate call it; a driver calls it directly only to
// re-evaluate a CPU whose situation it changed from outside (an isolated
// CPU withdrawn from the hierarchy by a cpuset change).
func (c *CPU) StopTick(now int64) Ready {
	if !c.online {
		return c.ready()
	}
	snap := c.snapshot(now)
	next := c.set.NextEvent(int(c.id), snap)
	if !c.stopped {
		if next-snap.M <= c.grid.TickNs {
			return c.ready()
		}
		wake, idle := c.set.TryToSetIdle(int(c.id), snap)
		if !idle {
			return c.ready()
		}
		next = min(next, wake)
		c.stopped = true
	}
	c.next = next
	return c.tickSet()
}

// IdleExit leaves the idle loop at now to run a task (tick_nohz_idle_exit):
// the CPU is busy again for the scheduler, and a stopped tick restarts
// (tick_nohz_restart_sched_tick), which clears the timer base's idle mark
// and makes the CPU active in the hierarchy (timer_clear_idle) — except on
// a nohz_full CPU about to run a single task (alone: no tick dependency),
// which keeps its tick stopped and only re-arms it for its next event
// (__tick_nohz_full_update_tick): the hierarchy keeps seeing it idle. A
// CPU whose tick runs changes nothing else.
func (c *CPU) IdleExit(now int64, alone bool) Ready {
	if !c.online || !c.inIdle {
		return c.ready()
	}
	c.inIdle = false
	c.set.SetBusy(int(c.id), true)
	if !c.stopped {
		return c.ready()
	}
	if c.nohzFull && alone {
		return c.StopTick(now)
	}
	return c.Restart(now)
}

// FullUpdate is the end of an interrupt on a nohz_full CPU running a task
// (tick_nohz_irq_exit → tick_nohz_full_update_tick): with the task alone
// the tick is stopped or re-armed (tick_nohz_full_stop_tick), otherwise a
// stopped tick restarts. It does nothing on other CPUs.
func (c *CPU) FullUpdate(now int64, alone bool) Ready {
	if !c.online || !c.nohzFull || c.inIdle {
		return c.ready()
	}
	if alone {
		return c.StopTick(now)
	}
	if c.stopped {
		return c.Restart(now)
	}
	return c.ready()
}

// Restart restarts a stopped tick at now (tick_nohz_restart_sched_tick):
// the timer base is no longer idle and the CPU is active in the hierarchy
// again (timer_clear_idle); the tick fires next at the first grid instant
// after now. IdleExit and FullUpdate call it; a driver calls it directly
// when a tick dependency is set from outside (a second task queued on a
// nohz_full CPU: the scheduler's tick_nohz_dep_set_cpu kick) or the CPU
// must run kernel work with its tick on (a cpuset change's work item).
func (c *CPU) Restart(now int64) Ready {
	if !c.online || !c.stopped {
		return c.ready()
	}
	c.set.ClearIdle(int(c.id))
	c.stopped = false
	c.next = c.grid.Next(now)
	return c.tickSet()
}

// SetHalted marks the CPU as idling outside the idle loop, or no longer (a
// CPU halted in a panic, which still takes every interrupt): Idle then
// never stops its tick. A tick already stopped is the driver's to restart
// (Restart).
func (c *CPU) SetHalted(on bool) { c.halted = on }
