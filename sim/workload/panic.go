package workload

import (
	"fmt"
	"io"
	"time"

	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/sim"
)

// Panic is the end of panic() on one CPU (seed 002, docs/hrtimer.md
// H9): when the measurement starts, CPU panics; the other CPUs are
// stopped (crash_smp_send_stop: halted with interrupts off). The panicked
// CPU then either busy-waits, as the kernel does (mdelay(PANIC_TIMER_STEP)
// in a loop, interrupts on: it is always busy and takes its tick), or
// halts between interrupts, as the 2025 RFC proposes (safe_halt outside
// the idle loop: the tick keeps running, every interrupt wakes it, and
// between them the CPU consumes nothing).
type Panic struct {
	CPU  int
	Halt bool
	// SampleHz converts CPU time into host perf samples.
	SampleHz float64

	m *sim.Machine
}

// Name implements sim.Workload.
func (p *Panic) Name() string { return "panic" }

// Start schedules the panic at the start of the measurement.
func (p *Panic) Start(m *sim.Machine) error {
	p.m = m
	if p.CPU < 0 || p.CPU >= m.NumCPUs() {
		return fmt.Errorf("panic: CPU %d out of range 0-%d", p.CPU, m.NumCPUs()-1)
	}
	m.At(m.MeasureStart(), func() {
		for c := 0; c < m.NumCPUs(); c++ {
			if c != p.CPU {
				m.StopCPU(c)
			}
		}
		if p.Halt {
			m.SetNoNohz(p.CPU, true)
			return
		}
		// for (;;) { touch_softlockup_watchdog(); ... mdelay(100); }
		t, err := m.NewTask(sim.TaskSpec{Name: "panic", Policy: hrtimer.SchedOther, CPU: p.CPU, Pinned: true,
			Behavior: sim.BehaviorFunc(func(*sim.Exec, *sim.Task) sim.Step {
				return sim.Step{Run: int64(100 * time.Millisecond), Then: sim.Continue}
			})})
		if err != nil {
			panic(err)
		}
		m.Wake(t)
	})
	return nil
}

// Result implements sim.Workload.
func (p *Panic) Result(m *sim.Machine) sim.WorkloadResult {
	busy := float64(m.BusyNs(p.CPU)) / 1e9
	mode := "busy-wait"
	if p.Halt {
		mode = "halt"
	}
	return &PanicResult{CPU: p.CPU, Mode: mode, DurationS: float64(m.MeasureEnd()-m.MeasureStart()) / 1e9,
		BusyS: busy, Interrupts: m.Interrupts(p.CPU), SampleHz: p.SampleHz, Samples: busy * p.SampleHz}
}

// PanicResult is the CPU time the panicked CPU consumed.
type PanicResult struct {
	CPU        int     `json:"cpu"`
	Mode       string  `json:"mode"`
	DurationS  float64 `json:"duration_s"`
	BusyS      float64 `json:"busy_s"`
	Interrupts uint64  `json:"interrupts"`
	SampleHz   float64 `json:"sample_hz"`
	Samples    float64 `json:"samples"`
}

// WriteText prints the summary.
func (r *PanicResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "panic on CPU %d (%s): %.6f s of CPU time in %.3f s (%.4f%%), %d interrupts; at %.0f Hz a host profiler would take %.0f samples\n\n",
		r.CPU, r.Mode, r.BusyS, r.DurationS, 100*r.BusyS/r.DurationS, r.Interrupts, r.SampleHz, r.Samples)
	return err
}

// Latency implements sim.WorkloadResult.
func (r *PanicResult) Latency() map[int][3]float64 { return nil }

// JSON implements sim.WorkloadResult.
func (r *PanicResult) JSON() any { return r }

// Idle runs nothing: the machine only serves its housekeeping timers.
type Idle struct{}

// Name implements sim.Workload.
func (Idle) Name() string { return "idle" }

// Start implements sim.Workload.
func (Idle) Start(*sim.Machine) error { return nil }

// Result implements sim.Workload.
func (Idle) Result(*sim.Machine) sim.WorkloadResult { return nil }
