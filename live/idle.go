package live

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr"
)

// IdleOptions configure Idle.
type IdleOptions struct {
	Machine
	Workers  int           // 0: one per CPU
	Duration time.Duration // of each run
}

// IdleRun is one idle mode's run.
type IdleRun struct {
	Idle      string    `json:"idle"`
	CPUPct    float64   `json:"cpu_pct"`
	PerWorker []float64 `json:"cpu_pct_per_worker"`
	WakeP50   float64   `json:"wake_p50_us"`
	WakeP99   float64   `json:"wake_p99_us"`
	WakeMax   float64   `json:"wake_max_us"`
	Wakeups   float64   `json:"os_wakeups_per_s"`
}

// IdleResult is what Idle measured.
type IdleResult struct {
	CPUs      string    `json:"cpus"`
	DurationS float64   `json:"duration_s"`
	Runs      []IdleRun `json:"runs"`
	first     int
	duration  time.Duration
}

// Idle runs workers with nothing to do but a 1 ms periodic hard hrtimer on
// the first one, in each idle mode (halt, poll, haltpoll), and measures
// the CPU time the workers' threads use (their per-thread CPU clocks: the
// getrusage RUSAGE_THREAD account) as a share of the run, per worker and
// on average, and how late the hrtimer runs.
func Idle(o IdleOptions) (*IdleResult, error) {
	if err := positive("duration", o.Duration); err != nil {
		return nil, err
	}
	if o.Workers < 0 {
		return nil, fmt.Errorf("workers %d: must be positive", o.Workers)
	}
	cpus, err := o.cpuList(max(o.Workers, 1), o.Workers)
	if err != nil {
		return nil, err
	}
	res := &IdleResult{CPUs: listOf(cpus), DurationS: o.Duration.Seconds(), first: cpus[0], duration: o.Duration}
	for _, m := range []tmigr.IdleMode{tmigr.Halt, tmigr.Poll, tmigr.HaltPoll} {
		cfg := o.config(cpus)
		cfg.Idle = m
		run, err := idleOnce(cfg, cpus, o.Duration)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func idleOnce(cfg tmigr.Config, cpus []int, dur time.Duration) (IdleRun, error) {
	run := IdleRun{Idle: cfg.Idle.String()}
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return run, err
	}
	defer rt.Close()
	p, err := startPeriodic(rt, cpus[0], time.Millisecond)
	if err != nil {
		return run, err
	}
	time.Sleep(200 * time.Millisecond) // let HaltPoll's window settle
	before := rt.Stats()
	start := time.Now()
	late := p.measure(dur)
	el := time.Since(start)
	after := rt.Stats()
	var wakeups uint64
	for i := range after {
		pct := 100 * float64(after[i].CPUTime-before[i].CPUTime) / float64(el)
		run.PerWorker = append(run.PerWorker, math.Round(pct*100)/100)
		run.CPUPct += pct / float64(len(after))
		wakeups += after[i].Wakeups - before[i].Wakeups
	}
	run.CPUPct = math.Round(run.CPUPct*100) / 100
	run.Wakeups = math.Round(float64(wakeups) / el.Seconds())
	d := DistOf(late)
	run.WakeP50, run.WakeP99, run.WakeMax = d.P50, d.P99, d.Max
	return run, rt.Err()
}

// WriteText prints the runs as a table.
func (r *IdleResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "idle workers on CPUs %s, a 1 ms hard hrtimer on worker %d; %v per mode\n", r.CPUs, r.first, r.duration)
	fmt.Fprintf(w, "  %-9s %8s %-22s %9s %9s %9s %11s\n", "idle", "cpu %", "per worker %", "wake p50", "p99 us", "max us", "OS wakeups/s")
	for _, x := range r.Runs {
		per := make([]string, len(x.PerWorker))
		for i, p := range x.PerWorker {
			per[i] = strconv.FormatFloat(p, 'f', 2, 64)
		}
		fmt.Fprintf(w, "  %-9s %8.2f %-22s %9.1f %9.1f %9.1f %11.0f\n", x.Idle, x.CPUPct, strings.Join(per, " "), x.WakeP50, x.WakeP99, x.WakeMax, x.Wakeups)
	}
	return nil
}
