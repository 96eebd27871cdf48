package workload

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
)

// Cyclictest is rt-tests' cyclictest in the form "cyclictest -m -S -p PRIO
// -i INTERVAL -h HIST" (one SCHED_FIFO thread pinned per CPU, absolute
// clock_nanosleep, every thread the same interval since -h is given),
// with the hrtimer stress load of seed 003 beside it: Stress SCHED_OTHER
// threads, spread over the same CPUs, each sleeping a uniformly random
// time of 0 to 1 ms (a relative clock_nanosleep) and running its short
// loop, forever.
//
// A latency is the time the thread is back in user space after its sleep
// minus the absolute expiry it asked for, truncated to µs (calcdiff).
type Cyclictest struct {
	CPUs       cpumask.Mask
	Prio       int   // -p (default 99)
	IntervalUS int64 // -i (default 1000)
	Hist       int   // -h (default 400)
	Stress     int   // stress threads in all
	StressMax  int64 // longest stress sleep, ns (default 1 ms)

	m       *sim.Machine
	threads []*cyclicThread
	rng     *rand.Rand
}

type cyclicThread struct {
	cpu  int
	next int64
	th   report.CyclicThread
}

// NewCyclictest returns cyclictest on cpus with stress threads.
func NewCyclictest(cpus cpumask.Mask, stress int) *Cyclictest {
	return &Cyclictest{CPUs: cpus, Prio: 99, IntervalUS: 1000, Hist: 400, Stress: stress, StressMax: 1_000_000}
}

// Name implements sim.Workload.
func (c *Cyclictest) Name() string { return "cyclictest" }

// Start creates the measuring threads and the stress threads.
func (c *Cyclictest) Start(m *sim.Machine) error {
	c.m = m
	c.rng = m.Rand("cyclictest")
	if c.CPUs.Empty() {
		return fmt.Errorf("cyclictest: empty CPU list")
	}
	if c.IntervalUS <= 0 {
		return fmt.Errorf("cyclictest: interval must be positive")
	}
	interval := c.IntervalUS * 1000
	loop := m.Costs().UserLoop
	cpus := c.CPUs.CPUs()
	for i, cpu := range cpus {
		ct := &cyclicThread{cpu: cpu, th: report.NewCyclicThread(1000+i, c.Prio, c.IntervalUS, cpu, m.NodeOf(cpu), c.Hist)}
		c.threads = append(c.threads, ct)
		first := true
		t, err := m.NewTask(sim.TaskSpec{
			Name: fmt.Sprintf("cyclictest-%d", i), Policy: hrtimer.SchedFIFO, Prio: c.Prio, CPU: cpu, Pinned: true,
			Behavior: sim.BehaviorFunc(func(x *sim.Exec, _ *sim.Task) sim.Step {
				if first {
					first = false
					ct.next = x.Now + interval
				} else {
					if ct.next >= m.MeasureStart() && ct.next < m.MeasureEnd() {
						ct.th.Sample((x.Now - ct.next) / 1000)
					}
					ct.next += interval
					for x.Now > ct.next {
						ct.next += interval
					}
				}
				return sim.Step{Run: m.Draw(loop), Then: sim.SleepUntil, At: ct.next}
			}),
		})
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	for i := 0; i < c.Stress; i++ {
		rng := m.Rand(fmt.Sprintf("stress/%d", i))
		t, err := m.NewTask(sim.TaskSpec{
			Name: fmt.Sprintf("stress-%d", i), Policy: hrtimer.SchedOther, CPU: cpus[i%len(cpus)], Pinned: true,
			Behavior: sim.BehaviorFunc(func(*sim.Exec, *sim.Task) sim.Step {
				return sim.Step{Run: m.Draw(loop), Then: sim.SleepFor, For: rng.Int64N(c.StressMax + 1)}
			}),
		})
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	return nil
}

// Result implements sim.Workload.
func (c *Cyclictest) Result(m *sim.Machine) sim.WorkloadResult {
	r := &CyclictestResult{Report: report.Cyclictest{Histogram: c.Hist}, Stress: c.Stress}
	for _, t := range c.threads {
		r.Report.Threads = append(r.Report.Threads, t.th)
		_, rt := m.HardirqExpiries(t.cpu)
		r.HardirqRT = append(r.HardirqRT, rt)
	}
	return r
}

// CyclictestResult is cyclictest's report.
type CyclictestResult struct {
	Report report.Cyclictest
	Stress int
	// HardirqRT is, per thread, the most hrtimers one hrtimer interrupt
	// of its CPU expired when it woke the thread: all of them ran before
	// the thread could.
	HardirqRT []int
}

// WriteText prints cyclictest's output.
func (r *CyclictestResult) WriteText(w io.Writer) error { return report.WriteCyclictest(w, &r.Report) }

// Latency implements sim.WorkloadResult.
func (r *CyclictestResult) Latency() map[int][3]float64 {
	out := map[int][3]float64{}
	for i := range r.Report.Threads {
		t := &r.Report.Threads[i]
		avg := 0.0
		if t.Cycles > 0 {
			avg = t.Sum / float64(t.Cycles)
		}
		min := t.Min
		if t.Cycles == 0 {
			min = 0
		}
		out[t.CPU] = [3]float64{float64(min), avg, float64(t.Max)}
	}
	return out
}

// JSON implements sim.WorkloadResult: the per-thread figures.
func (r *CyclictestResult) JSON() any {
	type thread struct {
		Thread int     `json:"thread"`
		CPU    int     `json:"cpu"`
		Node   int     `json:"node"`
		Cycles uint64  `json:"cycles"`
		Min    int64   `json:"min"`
		Avg    float64 `json:"avg"`
		Max    int64   `json:"max"`
		// HardirqExpiries: the most hrtimers expired in one hrtimer
		// interrupt that woke this thread.
		HardirqExpiries int `json:"hardirq_expiries_max"`
	}
	out := struct {
		Stress  int      `json:"stress_threads"`
		Threads []thread `json:"threads"`
	}{Stress: r.Stress}
	for i := range r.Report.Threads {
		t := &r.Report.Threads[i]
		avg := 0.0
		if t.Cycles > 0 {
			avg = report.Round(t.Sum/float64(t.Cycles), 2)
		}
		th := thread{Thread: i, CPU: t.CPU, Node: t.Node, Cycles: t.Cycles, Min: t.Min, Avg: avg, Max: t.Max}
		if i < len(r.HardirqRT) {
			th.HardirqExpiries = r.HardirqRT[i]
		}
		out.Threads = append(out.Threads, th)
	}
	return out
}
