package engine

import (
	"testing"

	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/tick/ticktest"
)

// eventLog is a hierarchy Tracer that keeps the events.
type eventLog struct{ events []hier.Event }

func (l *eventLog) Trace(e hier.Event) { l.events = append(l.events, e) }

// engineDriver runs the tick core's driver scenarios through the engine's
// workers: their event handling (service's parts, leaveIdle, idle) driven
// on the test's goroutine with a fake clock, no thread started, no sleep.
type engineDriver struct {
	t    *testing.T
	e    *Engine
	clk  *fakeClock
	log  *eventLog
	cost int64
}

func newEngineDriver(t *testing.T, mc ticktest.Machine) ticktest.Driver {
	log := &eventLog{}
	clk, e := fakeEngine(t, mc.CPUs, Config{HZ: mc.HZ, Tracer: log})
	return &engineDriver{t: t, e: e, clk: clk, log: log, cost: mc.HrtimerCost}
}

func (d *engineDriver) at(now int64) { d.clk.t = now }

func (d *engineDriver) Timer(c int, now, dt int64, flags uint32) {
	d.at(now)
	armWheel(d.e, c, dt, flags, func() {})
}

func (d *engineDriver) HRTimer(c int, now, dt int64) {
	d.at(now)
	armHR(d.t, d.e, c, dt, func() { d.clk.t += d.cost })
}

func (d *engineDriver) Busy(c int, now int64) {
	d.at(now)
	d.e.workers[c].leaveIdle(now)
}

func (d *engineDriver) Idle(c int, now int64) {
	d.at(now)
	d.e.workers[c].idle(now)
}

// Tick and IRQ are service's parts, then the loop's idle round.
func (d *engineDriver) Tick(c int, now int64) {
	d.at(now)
	w := d.e.workers[c]
	w.tick(now)
	if w.tk.InIdle() {
		w.idle(d.clk.Now())
	}
}

func (d *engineDriver) IRQ(c int, now int64) {
	d.at(now)
	w := d.e.workers[c]
	w.hrInterrupt(now)
	if w.tk.InIdle() {
		w.idle(d.clk.Now())
	}
}

func (d *engineDriver) State(c int) ticktest.State {
	if err := d.e.Err(); err != nil {
		d.t.Fatal(err)
	}
	w := d.e.workers[c]
	return ticktest.State{TickStopped: w.tk.Stopped(), Wakeup: w.tickAt, Device: w.hb.Device()}
}

func (d *engineDriver) Events() []hier.Event {
	out := d.log.events
	d.log.events = nil
	return out
}

func TestDriverScenarios(t *testing.T) {
	t.Parallel()
	ticktest.Run(t, "../../tick/testdata/drivers.txt", newEngineDriver)
}
