package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/sim"
)

// KernbenchParams are the inputs of the kernbench-like build (the abstract
// model of latency-anchors.md §4, fitted there to the seed post's "not
// applied" column: T(2) = W/2 + S = 222 s and T(8) = W/8 + S = 64 s give
// W ≈ 416 CPU-s of compile jobs and S ≈ 12 s of serial link; refitted
// here with the jobs' blocking reads counted: (W + IO)/2 + S = 222 s with
// IO = 1990 jobs × 2.5 reads × 5 ms ≈ 25 s gives W ≈ 395 s).
type KernbenchParams struct {
	Work      time.Duration // W: CPU time of all compile jobs together
	Serial    time.Duration // S: the final link, single-threaded
	JobMedian time.Duration // median compile job (lognormal)
	JobSigma  float64
	IOWait    time.Duration // each blocking read of a job
	IOPerJob  float64       // blocking reads per job (mean; 2 or 3)
	// WritebackDelay: a job that writes its output dirties the page cache,
	// which arms a (global) writeback timer on the job's CPU this long
	// ahead; it usually expires after the job has gone, on a CPU that may
	// be idle by then.
	WritebackDelay time.Duration
	TimerCost      sim.Dist
}

// DefaultKernbench returns the fitted defaults.
func DefaultKernbench() KernbenchParams {
	return KernbenchParams{
		Work: 395 * time.Second, Serial: 12 * time.Second,
		JobMedian: 120 * time.Millisecond, JobSigma: 1.0,
		IOWait: 5 * time.Millisecond, IOPerJob: 2.5,
		WritebackDelay: 500 * time.Millisecond, TimerCost: sim.LN(4*time.Microsecond, 0.4),
	}
}

// Register adds the parameters under "kernbench.".
func (p *KernbenchParams) Register(ps *sim.Params) {
	ps.Duration("kernbench.work", "CPU time of all compile jobs (W; fitted to seed 004: T(2)=(W+IO)/2+S=222 s, T(>=8)=(W+IO)/8+S=64 s)", (*int64)(&p.Work))
	ps.Duration("kernbench.serial", "serial part (S): the final link", (*int64)(&p.Serial))
	ps.Duration("kernbench.job_median", "median CPU time of one compile job (lognormal)", (*int64)(&p.JobMedian))
	ps.Float("kernbench.job_sigma", "sigma of the job-length lognormal", &p.JobSigma)
	ps.Duration("kernbench.io_wait", "one blocking read of a job", (*int64)(&p.IOWait))
	ps.Float("kernbench.io_per_job", "blocking reads per job (mean)", &p.IOPerJob)
	ps.Duration("kernbench.writeback_delay", "a job's output arms a global writeback timer this far ahead on its CPU", (*int64)(&p.WritebackDelay))
	ps.Dist("kernbench.timer_cost", "callback cost of a job's writeback timer", &p.TimerCost)
}

// Kernbench is "make -jJOBS" of a kernel: compile jobs of lognormal
// length, at most Jobs at a time, each reading its inputs (blocking I/O)
// and leaving a writeback timer behind, then a serial link. Elapsed is the
// time from the start of the measurement to the end of the link.
type Kernbench struct {
	Jobs int
	P    KernbenchParams

	m        *sim.Machine
	rng      *rand.Rand
	lengths  []int64
	next     int // next job to start
	running  int
	done     int
	startAt  int64
	elapsed  int64
	finished bool
}

// NewKernbench returns make -jjobs with the parameters p.
func NewKernbench(jobs int, p KernbenchParams) *Kernbench { return &Kernbench{Jobs: jobs, P: p} }

// Name implements sim.Workload.
func (k *Kernbench) Name() string { return "kernbench" }

// Start draws the jobs and starts make when the measurement starts.
func (k *Kernbench) Start(m *sim.Machine) error {
	k.m = m
	k.rng = m.Rand("kernbench")
	if k.Jobs < 1 {
		return fmt.Errorf("kernbench: need at least one job slot (got %d)", k.Jobs)
	}
	if k.P.Work <= 0 || k.P.JobMedian <= 0 {
		return fmt.Errorf("kernbench: work and job length must be positive")
	}
	var sum int64
	for sum < int64(k.P.Work) {
		l := int64(float64(k.P.JobMedian) * math.Exp(k.P.JobSigma*k.rng.NormFloat64()))
		l = max(l, int64(time.Millisecond))
		k.lengths = append(k.lengths, l)
		sum += l
	}
	m.At(m.MeasureStart(), func() {
		k.startAt = m.Now()
		for k.running < k.Jobs && k.next < len(k.lengths) {
			k.spawn()
		}
	})
	return nil
}

// spawn starts the next compile job.
func (k *Kernbench) spawn() {
	m := k.m
	i := k.next
	k.next++
	k.running++
	work := k.lengths[i]
	nio := int(k.P.IOPerJob)
	if k.rng.Float64() < k.P.IOPerJob-float64(nio) {
		nio++
	}
	segs := nio + 1
	seg := max(work/int64(segs), 1)
	left := segs
	wb := m.NewTimer("writeback", 0, func(x *sim.Exec, _ *sim.Timer) { x.Spend(k.P.TimerCost.Sample(k.rng)) })
	t, err := m.NewTask(sim.TaskSpec{
		Name: fmt.Sprintf("cc1-%d", i), Policy: hrtimer.SchedOther, CPU: -1,
		Behavior: sim.BehaviorFunc(func(x *sim.Exec, _ *sim.Task) sim.Step {
			left--
			if left == 0 {
				// The last stretch writes the object file.
				x.Mod(wb, x.Jiffies()+uint64(int64(k.P.WritebackDelay)/m.TickNs()))
				return sim.Step{Run: seg, Then: sim.Exit}
			}
			return sim.Step{Run: seg, Then: sim.BlockFor, For: int64(k.P.IOWait)}
		}),
		OnExit: func(x *sim.Exec, _ *sim.Task) {
			k.running--
			k.done++
			if k.next < len(k.lengths) {
				k.spawn()
			} else if k.running == 0 {
				k.link()
			}
		},
	})
	if err != nil {
		panic(err) // impossible: an unpinned SCHED_OTHER task is always valid
	}
	m.Wake(t)
}

// link runs the serial link, then ends the run.
func (k *Kernbench) link() {
	m := k.m
	t, err := m.NewTask(sim.TaskSpec{
		Name: "ld", Policy: hrtimer.SchedOther, CPU: -1,
		Behavior: sim.BehaviorFunc(func(*sim.Exec, *sim.Task) sim.Step {
			return sim.Step{Run: int64(k.P.Serial), Then: sim.Exit}
		}),
		OnExit: func(x *sim.Exec, _ *sim.Task) {
			k.elapsed = x.Now - k.startAt
			k.finished = true
			m.Finish()
		},
	})
	if err != nil {
		panic(err)
	}
	m.Wake(t)
}

// Result implements sim.Workload.
func (k *Kernbench) Result(m *sim.Machine) sim.WorkloadResult {
	r := &KernbenchResult{Jobs: k.Jobs, Compiles: len(k.lengths), Done: k.done, Finished: k.finished,
		ElapsedS: float64(k.elapsed) / 1e9, WorkS: k.P.Work.Seconds(), SerialS: k.P.Serial.Seconds(), CPUs: m.NumCPUs()}
	for c := 0; c < m.NumCPUs(); c++ {
		r.IdleWakeups += m.Wakeups(c)
		r.TimerWakeups += m.TimerWakeups(c)
	}
	return r
}

// KernbenchResult is the build's outcome.
type KernbenchResult struct {
	Jobs        int     `json:"jobs"`
	CPUs        int     `json:"cpus"`
	Compiles    int     `json:"compiles"`
	Done        int     `json:"compiles_done"`
	Finished    bool    `json:"finished"`
	ElapsedS    float64 `json:"elapsed_s"`
	WorkS       float64 `json:"work_cpu_s"`
	SerialS     float64 `json:"serial_s"`
	IdleWakeups uint64  `json:"idle_wakeups"`
	// TimerWakeups are the idle exits timers caused (where the policies
	// differ); the others are a CPU waking to run a job.
	TimerWakeups uint64 `json:"timer_wakeups"`
}

// WriteText prints the build's summary.
func (r *KernbenchResult) WriteText(w io.Writer) error {
	if !r.Finished {
		_, err := fmt.Fprintf(w, "kernbench: make -j%d on %d CPUs did not finish within the run (%d of %d compile jobs done); raise --duration\n\n",
			r.Jobs, r.CPUs, r.Done, r.Compiles)
		return err
	}
	_, err := fmt.Fprintf(w, "kernbench: make -j%d on %d CPUs: elapsed %.2f s (%d compile jobs, %.0f CPU-s, then %.0f s serial link); %d idle wakeups, %d of them for timers\n\n",
		r.Jobs, r.CPUs, r.ElapsedS, r.Compiles, r.WorkS, r.SerialS, r.IdleWakeups, r.TimerWakeups)
	return err
}

// Latency implements sim.WorkloadResult.
func (r *KernbenchResult) Latency() map[int][3]float64 { return nil }

// JSON implements sim.WorkloadResult.
func (r *KernbenchResult) JSON() any {
	c := *r
	c.ElapsedS = math.Round(c.ElapsedS*1e6) / 1e6
	return c
}
