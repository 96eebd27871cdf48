package tmigr

import (
	"fmt"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/tick/ticktest"
)

// fakeClock is a clock the test sets: the runtime's workers read it, and an
// hrtimer callback advances it by the time it runs.
type fakeClock struct{ t int64 }

func (c *fakeClock) now() int64 { return c.t }

// eventLog is a hierarchy Tracer that keeps the events.
type eventLog struct{ events []hier.Event }

func (l *eventLog) Trace(e hier.Event) { l.events = append(l.events, e) }

// rtDriver runs the tick core's driver scenarios through the runtime's
// workers: their event handling (service's parts, leaveIdle, idle) driven
// on the test's goroutine with a fake clock, no thread started, no sleep.
type rtDriver struct {
	t    *testing.T
	rt   *Runtime
	clk  *fakeClock
	log  *eventLog
	cost int64
}

func newRTDriver(t *testing.T, mc ticktest.Machine) ticktest.Driver {
	clk := &fakeClock{}
	log := &eventLog{}
	cfg := Config{CPUs: fmt.Sprintf("0-%d", mc.CPUs-1), HZ: mc.HZ, pinTo: virtual(t), tracer: log}
	rt, err := build(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.boot(); err != nil {
		t.Fatal(err)
	}
	return &rtDriver{t: t, rt: rt, clk: clk, log: log, cost: mc.HrtimerCost}
}

func (d *rtDriver) at(now int64) { d.clk.t = now }

func (d *rtDriver) Timer(c int, now, dt int64, flags uint32) {
	d.at(now)
	var opts []TimerOption
	if flags&cpu.Pinned != 0 {
		opts = append(opts, Pinned)
	}
	if flags&cpu.Deferrable != 0 {
		opts = append(opts, Deferrable)
	}
	if _, err := d.rt.AfterFuncOn(c, time.Duration(dt), func() {}, opts...); err != nil {
		d.t.Fatal(err)
	}
}

func (d *rtDriver) HRTimer(c int, now, dt int64) {
	d.at(now)
	if _, err := d.rt.HRAfterFunc(c, time.Duration(dt), func() { d.clk.t += d.cost }, Hard); err != nil {
		d.t.Fatal(err)
	}
}

func (d *rtDriver) Busy(c int, now int64) {
	d.at(now)
	d.rt.workers[c].leaveIdle(now)
}

func (d *rtDriver) Idle(c int, now int64) {
	d.at(now)
	d.rt.workers[c].idle(now)
}

// Tick and IRQ are service's parts, then the loop's idle round.
func (d *rtDriver) Tick(c int, now int64) {
	d.at(now)
	w := d.rt.workers[c]
	w.tick(now)
	if w.tk.InIdle() {
		w.idle(d.clk.now())
	}
}

func (d *rtDriver) IRQ(c int, now int64) {
	d.at(now)
	w := d.rt.workers[c]
	w.hrInterrupt(now)
	if w.tk.InIdle() {
		w.idle(d.clk.now())
	}
}

func (d *rtDriver) State(c int) ticktest.State {
	if err := d.rt.Err(); err != nil {
		d.t.Fatal(err)
	}
	w := d.rt.workers[c]
	return ticktest.State{TickStopped: w.tk.Stopped(), Wakeup: w.tickAt, Device: w.hb.Device()}
}

func (d *rtDriver) Events() []hier.Event {
	out := d.log.events
	d.log.events = nil
	return out
}

func TestDriverScenarios(t *testing.T) {
	t.Parallel()
	ticktest.Run(t, "tick/testdata/drivers.txt", newRTDriver)
}
