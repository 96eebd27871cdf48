package workload

import (
	"fmt"
	"io"
	"math"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
)

// Oslat is rt-tests' oslat: one busy-loop thread pinned to each CPU of a
// list. Every iteration reads the counter; any interruption of the loop
// (an interrupt, a softirq, a timer callback, a preempting task) lands in
// one iteration, which becomes one long sample. The simulation does not
// run the billions of short iterations: each gap of the loop becomes one
// sample of gap + one loop, and the uninterrupted samples are counted
// analytically at the end, (measured time - gaps) / loop time, so the
// histogram, the minimum and the average come out as oslat's would.
type Oslat struct {
	CPUs    cpumask.Mask
	List    string // the -c argument as the user wrote it
	MainCPU int
	RTPrio  int // -f: SCHED_FIFO priority, 0 for the default policy

	m       *sim.Machine
	threads []*oslatThread
}

// oslatThread is one thread's measurement. What a sample of under
// oslatLow µs touches (nearly every one: a tick's interrupt) lies in its
// first cache line: those samples are counted in low and added to th at
// the end (Result: th's sums, minimum and maximum come out as if added one
// by one); the others go to th at once. The
// threads are oslatThreadSize bytes apart, so that the line stays aligned
// (TestOslatThreadLayout).
type oslatThread struct {
	gapSum int64 // sum of (gap + loop) of the samples recorded
	gaps   uint64
	low    [oslatLow]uint64 // the samples of each of the first buckets not yet in th

	th  report.OslatThread
	cpu int
	_   [oslatThreadPad]byte
}

// oslatLow is the number of the histogram's first buckets (1 µs each)
// that oslatThread counts in its first line.
const oslatLow = 6

// oslatThreadPad pads oslatThread to oslatThreadSize bytes.
const (
	oslatThreadPad  = 48
	oslatThreadSize = 192
)

// sample records a sample of ns nanoseconds: what th.Add(ns, 1) does, in
// the thread's first line if it falls in the first oslatLow buckets. lim
// is the longest sample report.OslatThread.LatUS converts without a wrap
// (see latUS in package report), 0 for none.
func (th *oslatThread) sample(ns int64, lim uint64) {
	if u := uint64(max(ns, 0)); u <= lim && lim != 0 {
		if lat := u / 1000; lat < oslatLow {
			th.low[lat]++
			return
		}
	}
	th.th.Add(ns, 1)
}

// report returns th's report.OslatThread, the samples of low added, its
// Buckets a copy.
func (th *oslatThread) report() report.OslatThread {
	t := th.th
	t.Buckets = append([]uint64(nil), t.Buckets...)
	for j, n := range th.low {
		if n > 0 {
			t.Add(int64(j)*1000, n)
		}
	}
	return t
}

// NewOslat returns oslat on the CPUs of list.
func NewOslat(cpus cpumask.Mask, list string) *Oslat {
	return &Oslat{CPUs: cpus, List: list}
}

// Name implements sim.Workload.
func (o *Oslat) Name() string { return "oslat" }

// Start pins one spinning task to each CPU.
func (o *Oslat) Start(m *sim.Machine) error {
	o.m = m
	if o.CPUs.Empty() {
		return fmt.Errorf("oslat: empty CPU list")
	}
	loop := m.Costs().OslatLoop
	mhz := uint64(m.Costs().CounterMHz)
	// Every thread and its histogram side by side, in CPU order: each
	// tick of every CPU records a sample, and a machine ticks its CPUs in
	// that order.
	n := o.CPUs.Weight()
	ths := make([]oslatThread, n)
	buckets := make([]uint64, n*report.OslatBuckets)
	// lim: see oslatThread.sample; no sample takes the short way with a
	// zero counter frequency (LatUS divides by it).
	var lim uint64
	if mhz != 0 {
		lim = math.MaxUint64 / mhz
	}
	for c, i := o.CPUs.First(), 0; c >= 0; c, i = o.CPUs.Next(c), i+1 {
		th := &ths[i]
		*th = oslatThread{cpu: c, th: report.NewOslatThread(c, mhz, 0)}
		th.th.Buckets = buckets[i*report.OslatBuckets : (i+1)*report.OslatBuckets : (i+1)*report.OslatBuckets]
		o.threads = append(o.threads, th)
		policy := hrtimer.SchedOther
		if o.RTPrio > 0 {
			policy = hrtimer.SchedFIFO
		}
		t, err := m.NewTask(sim.TaskSpec{
			Name: fmt.Sprintf("oslat-%d", c), Policy: policy, Prio: o.RTPrio, CPU: c, Pinned: true,
			Behavior: sim.BehaviorFunc(func(*sim.Exec, *sim.Task) sim.Step { return sim.Step{Run: sim.Forever} }),
			OnGap: func(start, length int64) {
				if start < m.MeasureStart() || start >= m.MeasureEnd() {
					return
				}
				th.sample(length+loop, lim)
				th.gapSum += length + loop
				th.gaps++
			},
		})
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	return nil
}

// Result implements sim.Workload: the uninterrupted samples are added.
func (o *Oslat) Result(m *sim.Machine) sim.WorkloadResult {
	loop := m.Costs().OslatLoop
	window := m.MeasureEnd() - m.MeasureStart()
	r := &OslatResult{Report: report.Oslat{
		Version: "2.10", RuntimeSecs: int(window / 1e9), RTPrio: o.RTPrio, CPUList: o.List, MainCPU: o.MainCPU,
	}}
	for _, th := range o.threads {
		t := th.report()
		if base := window - th.gapSum; base > 0 {
			t.Add(loop, uint64(base/loop))
		}
		t.RuntimeCycles = uint64(window) * t.CounterMHz / 1000
		r.Report.Threads = append(r.Report.Threads, t)
	}
	return r
}

// OslatResult is oslat's report.
type OslatResult struct {
	Report report.Oslat
}

// WriteText prints oslat's report.
func (r *OslatResult) WriteText(w io.Writer) error { return report.WriteOslat(w, &r.Report) }

// Max returns the Maximum row, one value per thread, in µs.
func (r *OslatResult) Max() []uint64 {
	out := make([]uint64, len(r.Report.Threads))
	for i := range r.Report.Threads {
		out[i] = r.Report.Threads[i].MaxLat
	}
	return out
}

// Latency implements sim.WorkloadResult.
func (r *OslatResult) Latency() map[int][3]float64 {
	out := map[int][3]float64{}
	for i := range r.Report.Threads {
		t := &r.Report.Threads[i]
		min := t.MinLat
		if t.Samples() == 0 {
			min = 0
		}
		out[t.CPU] = [3]float64{float64(min), r.Report.Average(i), float64(t.MaxLat)}
	}
	return out
}

// JSON implements sim.WorkloadResult: oslat's own JSON thread objects.
func (r *OslatResult) JSON() any {
	type thread struct {
		CPU       int              `json:"cpu"`
		Freq      uint64           `json:"freq"`
		Min       uint64           `json:"min"`
		Avg       float64          `json:"avg"`
		Max       uint64           `json:"max"`
		Duration  float64          `json:"duration"`
		Histogram report.CPUCounts `json:"histogram"`
	}
	out := struct {
		NumThreads int      `json:"num_threads"`
		Thread     []thread `json:"thread"`
	}{NumThreads: len(r.Report.Threads)}
	for i := range r.Report.Threads {
		t := &r.Report.Threads[i]
		min := t.MinLat
		if t.Samples() == 0 {
			min = 0
		}
		th := thread{CPU: t.CPU, Freq: t.CounterMHz, Min: min, Avg: report.Round(r.Report.Average(i), 3),
			Max: t.MaxLat, Duration: report.Round(float64(t.Duration()), 3)}
		for j, c := range t.Buckets {
			if c != 0 {
				th.Histogram = append(th.Histogram, report.CPUCount{CPU: j + 1, Count: c})
			}
		}
		out.Thread = append(out.Thread, th)
	}
	return out
}
