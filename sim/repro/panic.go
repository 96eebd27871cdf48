package repro

import (
	"fmt"
	"time"

	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// The post's figures (seed 002): host perf samples of the guest in 30 s.
const (
	panicPostBusy = 55000
	panicPostHalt = 28
	panicCPU      = 5
)

func runPanic(o Options) (*Outcome, error) {
	dur := 30 * time.Second
	if o.Short {
		dur = 2 * time.Second
	}
	if o.Duration > 0 {
		dur = o.Duration
	}
	// The post's perf took 55K samples of a guest CPU that was busy for
	// the 30 s: an effective rate of 1833 Hz, which converts CPU time to
	// samples for both runs.
	hz := float64(panicPostBusy) / 30
	out := &Outcome{Experiment: "panic"}
	var rs [2]*workload.PanicResult
	for i, halt := range []bool{false, true} {
		mc, err := newMachine(o, "kvm-guest", sim.Config{CPUs: 8, HZ: 250, Policy: o.kernel().Policy(true), Duration: dur},
			fmt.Sprintf("panic.sample_hz=%g", hz))
		if err != nil {
			return nil, err
		}
		w := &workload.Panic{CPU: panicCPU, Halt: halt, SampleHz: mc.wopts.PanicSampleHz}
		res, err := mc.run(w)
		if err != nil {
			return nil, err
		}
		rs[i] = res.Workload("panic").(*workload.PanicResult)
		out.Runs = append(out.Runs, res)
	}
	out.printf("panic (seed post 002): CPU %d of an 8-vCPU KVM guest panics; the other CPUs are stopped; %.0f s, seed %d\n\n",
		panicCPU, dur.Seconds(), o.Seed)
	out.printf("  %-44s %14s %12s %16s %14s\n", "after panic() the CPU...", "CPU time (s)", "interrupts", "host samples", "post")
	labels := []string{"busy-waits (mdelay(100 ms) loop, the kernel)", "halts between interrupts (the 2025 RFC)"}
	post := []int{panicPostBusy, panicPostHalt}
	for i, r := range rs {
		out.printf("  %-44s %14.6f %12d %16.0f %14d\n", labels[i], r.BusyS, r.Interrupts, r.Samples, post[i])
	}
	ratio := rs[0].BusyS / maxF(rs[1].BusyS, 1e-9)
	out.printf("  %-44s %14.0fx %12s %16s %13.0fx\n", "busy-wait / halt", ratio, "", "", float64(panicPostBusy)/panicPostHalt)
	out.printf("\nWhat it shows:\n")
	out.printf("  Busy-waiting, the CPU is never idle: all %.0f s are CPU time the host must give the vCPU. Halted, it runs\n", dur.Seconds())
	out.printf("  only for the interrupts it still takes: the tick keeps running (a halt outside the idle loop does not\n")
	out.printf("  stop it), %d per second, each an interrupt entry (a VM exit and entry in a guest) plus the tick.\n", 250)
	out.printf("\nCalibration: host samples = CPU time x %.0f Hz, the rate the post's busy-wait run implies (55K samples\n", hz)
	out.printf("  in 30 s of a fully busy vCPU); the halt figure is then the model's prediction from the kvm-guest costs\n")
	out.printf("  (cost.irq_entry 2.5 µs for an interrupt in a guest, cost.tick ~1.5 µs).\n")
	return out, nil
}

func maxF(a, b float64) float64 {
	if a > b {
		return a
	}
	return b
}
