package workload

import (
	"errors"
	"fmt"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/sim"
)

// Loads is the load "tmigr lab record" runs in its guests (cmd/tmigr-guest),
// so that the simulator can run the machine a recording describes: a busy
// loop pinned to each CPU of Busy, and on each CPU of Sleepers a pinned task
// that sleeps Period at a time in a loop (clock_nanosleep on
// CLOCK_MONOTONIC, relative, or to absolute deadlines with Absolute),
// SCHED_FIFO at FIFOPrio on the CPUs of FIFO and SCHED_OTHER elsewhere.
//
// It measures nothing: its point is which CPUs are busy, idle, or idle in
// short stretches, which is what the migration hierarchy decides from.
type Loads struct {
	Busy     cpumask.Mask
	Sleepers cpumask.Mask // every sleeper CPU, SCHED_FIFO ones included
	FIFO     cpumask.Mask // the sleepers that are SCHED_FIFO (a subset of Sleepers)
	Period   time.Duration
	Absolute bool
	FIFOPrio int // 1..99; 0 means the recorder's default, 50
	// Work is the CPU time a sleeper spends between two sleeps (the
	// guest's loop does a system call and little else); 0 means 2 µs.
	Work time.Duration
}

// Name implements sim.Workload.
func (l *Loads) Name() string { return "loads" }

// Validate names the first problem with the loads on a machine of cpus
// CPUs.
func (l *Loads) Validate(cpus int) error {
	all := cpumask.Range(0, cpus-1)
	switch {
	case !l.Busy.Subset(&all):
		return fmt.Errorf("loads: busy CPUs %s beyond the %d CPUs", l.Busy.AndNot(all), cpus)
	case !l.Sleepers.Subset(&all):
		return fmt.Errorf("loads: sleeper CPUs %s beyond the %d CPUs", l.Sleepers.AndNot(all), cpus)
	case !l.FIFO.Subset(&l.Sleepers):
		return fmt.Errorf("loads: SCHED_FIFO sleepers %s are not among the sleepers %s", l.FIFO.AndNot(l.Sleepers), l.Sleepers)
	case l.Busy.Intersects(&l.Sleepers):
		return fmt.Errorf("loads: CPUs %s run both a busy loop and a sleeper", l.Busy.And(l.Sleepers))
	case !l.Sleepers.Empty() && l.Period <= 0:
		return errors.New("loads: the sleepers need a positive period")
	case l.FIFOPrio < 0 || l.FIFOPrio > 99:
		return fmt.Errorf("loads: SCHED_FIFO priority %d outside 1..99", l.FIFOPrio)
	case l.Work < 0:
		return fmt.Errorf("loads: negative work %v", l.Work)
	}
	return nil
}

// Start implements sim.Workload: it pins the tasks and wakes them.
func (l *Loads) Start(m *sim.Machine) error {
	if err := l.Validate(m.NumCPUs()); err != nil {
		return err
	}
	prio := l.FIFOPrio
	if prio == 0 {
		prio = 50
	}
	work := int64(l.Work)
	if work == 0 {
		work = int64(2 * time.Microsecond)
	}
	period := int64(l.Period)
	for c := l.Busy.First(); c >= 0; c = l.Busy.Next(c) {
		t, err := m.NewTask(sim.TaskSpec{Name: fmt.Sprintf("busy-%d", c), CPU: c, Pinned: true,
			Behavior: sim.BehaviorFunc(func(*sim.Exec, *sim.Task) sim.Step { return sim.Step{Run: sim.Forever} })})
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	for c := l.Sleepers.First(); c >= 0; c = l.Sleepers.Next(c) {
		spec := sim.TaskSpec{Name: fmt.Sprintf("sleeper-%d", c), CPU: c, Pinned: true}
		if l.FIFO.Test(c) {
			spec.Policy, spec.Prio = hrtimer.SchedFIFO, prio
		}
		// The first deadline is one period after the task first runs;
		// absolute sleepers keep to that grid whatever delays a wakeup.
		next := int64(-1)
		spec.Behavior = sim.BehaviorFunc(func(x *sim.Exec, _ *sim.Task) sim.Step {
			if !l.Absolute {
				return sim.Step{Run: work, Then: sim.SleepFor, For: period}
			}
			if next < 0 {
				next = x.Now
			}
			next += period
			for next <= x.Now+work {
				next += period // overran a deadline: the next one
			}
			return sim.Step{Run: work, Then: sim.SleepUntil, At: next}
		})
		t, err := m.NewTask(spec)
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	return nil
}

// Result implements sim.Workload: the loads report nothing.
func (l *Loads) Result(*sim.Machine) sim.WorkloadResult { return nil }
