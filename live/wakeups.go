package live

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr"
	"github.com/tmigr/tmigr/internal/osthread"
)

// WakeupsOptions configure Wakeups.
type WakeupsOptions struct {
	Machine
	Workers  int           // 0: one per CPU
	Duration time.Duration // of each run
}

// WakeupsRun is one policy's run.
type WakeupsRun struct {
	Policy    string    `json:"policy"`
	Wakeups   float64   `json:"wakeups_per_s"`
	CtxSw     float64   `json:"voluntary_switches_per_s"`
	PerWorker []float64 `json:"wakeups_per_s_per_worker"`
	TimersRun uint64    `json:"timers_run"`
	Remote    uint64    `json:"remote_expiries"`
}

// WakeupsResult is what Wakeups measured.
type WakeupsResult struct {
	CPUs      string       `json:"cpus"`
	DurationS float64      `json:"duration_s"`
	Runs      []WakeupsRun `json:"runs"`
	workers   int
	duration  time.Duration
}

// Wakeups runs idle workers, each with a 100 ms periodic global timer
// armed on it (in step), and counts the workers' OS-level wake-ups per
// second (sleeps in the kernel that ended, and voluntary context switches
// from procfs) without timer migration (none) and with the hierarchy
// (pull), where the last worker to go idle wakes for everyone's timers:
// why the hierarchy exists.
func Wakeups(o WakeupsOptions) (*WakeupsResult, error) {
	if o.Duration <= 0 || o.Workers < 0 {
		return nil, fmt.Errorf("duration %v, workers %d: must be positive", o.Duration, o.Workers)
	}
	cpus, err := o.cpuList(max(o.Workers, 1), o.Workers)
	if err != nil {
		return nil, err
	}
	res := &WakeupsResult{CPUs: listOf(cpus), DurationS: o.Duration.Seconds(), workers: len(cpus), duration: o.Duration}
	for _, p := range []tmigr.Policy{tmigr.None, tmigr.Pull} {
		cfg := o.config(cpus)
		cfg.Policy = p
		run, err := wakeupsOnce(cfg, o.Duration)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func wakeupsOnce(cfg tmigr.Config, dur time.Duration) (WakeupsRun, error) {
	run := WakeupsRun{Policy: cfg.Policy.String()}
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return run, err
	}
	defer rt.Close()
	var stop atomic.Bool
	var ran atomic.Uint64
	// Every worker arms its timer from a task, all at once.
	var armed sync.WaitGroup
	gate := make(chan struct{})
	for _, c := range rt.CPUs() {
		armed.Add(1)
		rt.Go(c, func() {
			defer armed.Done()
			<-gate
			var t atomic.Pointer[tmigr.Timer]
			t.Store(rt.AfterFunc(100*time.Millisecond, func() {
				ran.Add(1)
				if !stop.Load() {
					t.Load().Reset(100 * time.Millisecond)
				}
			}, tmigr.Coarse()))
		})
	}
	close(gate)
	armed.Wait()
	time.Sleep(300 * time.Millisecond)
	ctx0 := switches(rt)
	before := rt.Stats()
	start := time.Now()
	time.Sleep(dur)
	el := time.Since(start)
	after := rt.Stats()
	ctx1 := switches(rt)
	stop.Store(true)
	var total uint64
	for i := range after {
		wk := after[i].Wakeups - before[i].Wakeups
		total += wk
		run.PerWorker = append(run.PerWorker, math.Round(float64(wk)/el.Seconds()*10)/10)
		run.TimersRun += after[i].Timers - before[i].Timers
		run.Remote += after[i].Remote - before[i].Remote
	}
	run.Wakeups = math.Round(float64(total)/el.Seconds()*10) / 10
	run.CtxSw = math.Round(float64(ctx1-ctx0)/el.Seconds()*10) / 10
	return run, rt.Err()
}

// switches sums the voluntary context switches of the workers' threads.
func switches(rt *tmigr.Runtime) int {
	n := 0
	for _, s := range rt.Stats() {
		if v, _, err := osthread.ContextSwitches(s.TID); err == nil {
			n += v
		}
	}
	return n
}

// WriteText prints the runs as a table.
func (r *WakeupsResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d idle workers (CPUs %s), a 100 ms periodic global timer each; %v per policy\n", r.workers, r.CPUs, r.duration)
	fmt.Fprintf(w, "  %-8s %11s %15s %-20s %10s %8s\n", "policy", "wakeups/s", "vol. switches/s", "per worker", "timers run", "remote")
	for _, x := range r.Runs {
		per := make([]string, len(x.PerWorker))
		for i, p := range x.PerWorker {
			per[i] = strconv.FormatFloat(p, 'f', 1, 64)
		}
		fmt.Fprintf(w, "  %-8s %11.1f %15.1f %-20s %10d %8d\n", x.Policy, x.Wakeups, x.CtxSw, strings.Join(per, " "), x.TimersRun, x.Remote)
	}
	return nil
}
