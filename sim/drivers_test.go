package sim

import (
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/tick/ticktest"
)

// simDriver runs the tick core's driver scenarios through the simulator's
// CPU: the handlers the event loop calls (goIdle, switchIn, tick,
// nohzWake, hrInterrupt), on a machine whose kernel work costs nothing but
// the hrtimer callbacks.
type simDriver struct {
	t      *testing.T
	m      *Machine
	events []hier.Event
}

func newSimDriver(t *testing.T, mc ticktest.Machine) ticktest.Driver {
	c := Config{CPUs: mc.CPUs, HZ: mc.HZ, Policy: cpu.PullIsolated, Platform: "scenario",
		Costs: Costs{HrtimerExpiry: C(time.Duration(mc.HrtimerCost)), OslatLoop: 1, CounterMHz: 1}, Duration: time.Second, Seed: 1,
		Check: true}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	d := &simDriver{t: t, m: m}
	m.tracer.seen = func(e hier.Event) { d.events = append(d.events, e) }
	return d
}

func (d *simDriver) at(now int64) { d.m.now = now }

func (d *simDriver) Timer(c int, now, dt int64, flags uint32) {
	d.at(now)
	tm := d.m.NewTimer("scenario", flags, func(*Exec, *Timer) {})
	d.m.Mod(c, tm, d.m.tg.Expiry(now, dt))
}

func (d *simDriver) HRTimer(c int, now, dt int64) {
	d.at(now)
	s := &d.m.cpus[c]
	ht := new(hrtimer.Timer)
	if err := s.hr.Setup(ht, hrtimer.Monotonic, hrtimer.ModeHard); err != nil {
		d.t.Fatal(err)
	}
	eff, err := s.hr.Start(ht, now, now+dt, 0, hrtimer.ModeAbs)
	if err != nil {
		d.t.Fatal(err)
	}
	d.m.program(s, eff)
}

func (d *simDriver) Busy(c int, now int64) {
	d.at(now)
	task := &Task{Name: "scenario", CPU: c, Pinned: true, state: taskRunnable,
		Behavior: BehaviorFunc(func(*Exec, *Task) Step { return Step{Run: Forever} })}
	d.m.switchIn(&d.m.cpus[c], task, now)
}

func (d *simDriver) Idle(c int, now int64) {
	d.at(now)
	s := &d.m.cpus[c]
	switch {
	case s.curr != nil: // the task ends (stepDone)
		s.curr = nil
		s.stepGen++
		d.m.goIdle(s, now)
	case !s.idle:
		d.m.goIdle(s, now)
	default: // an interrupt ended in idle
		d.m.reconsiderTick(s, now, true)
	}
}

func (d *simDriver) Tick(c int, now int64) {
	d.at(now)
	s := &d.m.cpus[c]
	if s.tickOn {
		d.m.tick(s, now)
	} else {
		d.m.nohzWake(s, now)
	}
}

func (d *simDriver) IRQ(c int, now int64) {
	d.at(now)
	s := &d.m.cpus[c]
	s.hrDev = hrtimer.Never // the device fired (dispatch)
	d.m.hrInterrupt(s, now)
}

func (d *simDriver) State(c int) ticktest.State {
	if err := d.m.err; err != nil {
		d.t.Fatal(err)
	}
	s := &d.m.cpus[c]
	return ticktest.State{TickStopped: !s.tickOn, Wakeup: s.nohzAt, Device: s.hrDev}
}

func (d *simDriver) Events() []hier.Event {
	out := d.events
	d.events = nil
	return out
}

func TestDriverScenarios(t *testing.T) {
	ticktest.Run(t, "../tick/testdata/drivers.txt", newSimDriver)
}

// A nohz_full CPU woken from idle to run a single task keeps its tick
// stopped and stays idle in the hierarchy: tick_nohz_idle_exit ->
// tick_nohz_idle_update_tick -> __tick_nohz_full_update_tick, whose
// can_stop_full_tick holds with one task, so tick_nohz_full_stop_tick only
// re-evaluates the next event (tmigr_cpu_new_timer_idle), and
// timer_clear_idle does not run. The simulator used to restart the tick
// (tmigr_cpu_active) and stop it again at the end of the interrupt
// (tmigr_cpu_idle), which the 24-CPU nohz_full recording shows no trace of:
// its sleepers on CPUs 1-3 print two tmigr_cpu_new_timer_idle per wakeup
// and no activation.
func TestNohzFullIdleExitKeepsTickStopped(t *testing.T) {
	c := Config{CPUs: 2, HZ: 250, Policy: cpu.PullIsolated, NohzFull: cpumaskOf(1), Platform: "scenario",
		Costs: Costs{OslatLoop: 1, CounterMHz: 1}, Duration: time.Second, Seed: 1, Check: true}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var evs []hier.Event
	m.tracer.seen = func(e hier.Event) { evs = append(evs, e) }
	d := &simDriver{t: t, m: m}
	s := &m.cpus[1]
	d.Idle(1, 0)
	if s.tickOn {
		t.Fatal("nohz_full CPU 1 kept its tick in idle")
	}
	evs = nil
	// A second task on the CPU would restart the tick; one does not.
	d.Busy(1, 5_000_000)
	var kinds []hier.EventKind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if len(kinds) != 1 || kinds[0] != hier.EvCPUNewTimerIdle {
		t.Errorf("idle exit of nohz_full CPU 1 with one task traced %v, want one %v", kinds, hier.EvCPUNewTimerIdle)
	}
	if s.tickOn || !m.set.BaseIdle(1) {
		t.Errorf("after the idle exit: tick running %v, timer base idle %v; want the tick stopped, the base idle", s.tickOn, m.set.BaseIdle(1))
	}
	// An interrupt while the task runs alone re-arms the stopped tick, too.
	evs = nil
	m.now = 6_000_000
	x := m.beginIRQ(s, m.now, causeDevice)
	m.endIRQ(x)
	if s.tickOn || len(evs) != 1 || evs[0].Kind != hier.EvCPUNewTimerIdle {
		t.Errorf("interrupt on nohz_full CPU 1 running one task: tick running %v, events %v", s.tickOn, evs)
	}
}

func cpumaskOf(c int) cpumask.Mask {
	var m cpumask.Mask
	m.Set(c)
	return m
}
