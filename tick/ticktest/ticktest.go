// Package ticktest runs one scenario of a CPU's tick and NOHZ protocol
// through a driver, for the drivers' tests: the simulator and the runtime
// each implement Driver, run the same scenario files, and must print the
// same thing, which is what the kernel does. That pins the places where two
// copies of the protocol once drifted apart (see package tick), whichever
// driver a change is made in.
//
// A scenario is a cockroachdb/datadriven file. The first directive is
//
//	machine cpus=N [hz=250] [hrcost=DURATION]
//
// which boots N CPUs at time 0, all online, active and ticking, under the
// pull-isolated policy; every hrtimer callback then runs for hrcost (0 by
// default; the simulator charges it as the expiry's cost, the runtime's
// callback advances its fake clock). Every later directive acts on one CPU
// at a time given as at=DURATION since boot, which never goes back:
//
//	timer cpu=C at=T in=D [pinned] [deferrable]   arm a wheel timer on C, D from T
//	hrtimer cpu=C at=T in=D                        arm a hard hrtimer on C
//	busy cpu=C at=T                                a task starts on idle C (idle exit)
//	idle cpu=C at=T                                C has nothing to run: a round of its idle loop
//	tick cpu=C at=T                                C's tick fires (periodic, or its NOHZ wakeup)
//	irq cpu=C at=T                                 C's clock event device fires
//
// and prints the hierarchy's tracepoints the driver's CPU caused (the
// kernel's text, groups named GRPl:i), then the CPU's tick and device as the
// driver armed them:
//
//	cpu 0: tick stopped, wakeup 16ms; device none
package ticktest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/tick"
)

// Machine describes the machine a scenario boots.
type Machine struct {
	CPUs, HZ int
	// HrtimerCost is how long every hrtimer callback runs, in ns.
	HrtimerCost int64
}

// State is a CPU's tick and clock event device as its driver armed them.
type State struct {
	// TickStopped: the tick is stopped; then Wakeup is the NOHZ wakeup
	// (tick.Never: none).
	TickStopped bool
	Wakeup      int64
	// Device is what the clock event device is armed for (tick.Never:
	// nothing).
	Device int64
}

// Driver is one driver of the tick core, booted for a scenario. Times are
// ns since boot. Each call is the driver's own handling of the event, as
// it would handle it running: the simulator's CPU and the runtime's worker
// loop, minus the waiting.
type Driver interface {
	// Timer arms a wheel timer on cpu at now, d later, with flags
	// (cpu.Pinned, cpu.Deferrable).
	Timer(cpu int, now, d int64, flags uint32)
	// HRTimer arms a hard hrtimer on cpu at now, d later.
	HRTimer(cpu int, now, d int64)
	// Busy starts a task on cpu at now: the CPU leaves idle.
	Busy(cpu int, now int64)
	// Idle: cpu has nothing to run at now (its task ended, or an
	// interrupt ended in idle).
	Idle(cpu int, now int64)
	// Tick is cpu's tick interrupt at now, and the idle loop's round
	// after it if the CPU is idle.
	Tick(cpu int, now int64)
	// IRQ is cpu's clock event device firing at now, and the idle loop's
	// round after it if the CPU is idle.
	IRQ(cpu int, now int64)
	// State returns cpu's tick and device.
	State(cpu int) State
	// Events returns the hierarchy's tracepoints since the last call.
	Events() []hier.Event
}

// Run runs the scenario file path through the drivers newDriver boots.
func Run(t *testing.T, path string, newDriver func(t *testing.T, m Machine) Driver) {
	var d Driver
	var now int64
	datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
		if td.Cmd == "machine" {
			m := Machine{HZ: 250}
			td.ScanArgs(t, "cpus", &m.CPUs)
			if td.HasArg("hz") {
				td.ScanArgs(t, "hz", &m.HZ)
			}
			if td.HasArg("hrcost") {
				m.HrtimerCost = durArg(t, td, "hrcost")
			}
			d, now = newDriver(t, m), 0
			d.Events()
			return ""
		}
		if d == nil {
			t.Fatalf("%s: no machine yet", td.Pos)
		}
		var c int
		td.ScanArgs(t, "cpu", &c)
		at := durArg(t, td, "at")
		if at < now {
			t.Fatalf("%s: at=%s goes back in time", td.Pos, time.Duration(at))
		}
		now = at
		switch td.Cmd {
		case "timer":
			var flags uint32
			if td.HasArg("pinned") {
				flags |= cpu.Pinned
			}
			if td.HasArg("deferrable") {
				flags |= cpu.Deferrable
			}
			d.Timer(c, now, durArg(t, td, "in"), flags)
		case "hrtimer":
			d.HRTimer(c, now, durArg(t, td, "in"))
		case "busy":
			d.Busy(c, now)
		case "idle":
			d.Idle(c, now)
		case "tick":
			d.Tick(c, now)
		case "irq":
			d.IRQ(c, now)
		default:
			t.Fatalf("%s: unknown directive %q", td.Pos, td.Cmd)
		}
		var b strings.Builder
		tr := hier.TextTracer{W: &b}
		for _, e := range d.Events() {
			tr.Trace(e)
		}
		s := d.State(c)
		fmt.Fprintf(&b, "cpu %d: ", c)
		if s.TickStopped {
			fmt.Fprintf(&b, "tick stopped, wakeup %s", fmtTime(s.Wakeup))
		} else {
			b.WriteString("tick runs")
		}
		fmt.Fprintf(&b, "; device %s\n", fmtTime(s.Device))
		return b.String()
	})
}

func durArg(t *testing.T, td *datadriven.TestData, key string) int64 {
	t.Helper()
	var v string
	td.ScanArgs(t, key, &v)
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s: %s=%s: %v", td.Pos, key, v, err)
	}
	return int64(d)
}

func fmtTime(ns int64) string {
	if ns == tick.Never {
		return "none"
	}
	return time.Duration(ns).String()
}
