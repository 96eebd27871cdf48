package live

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr"
)

// SoftHardOptions configure SoftHard.
type SoftHardOptions struct {
	Machine
	Sleepers int           // sleeping goroutines
	Duration time.Duration // of each run
}

// SoftHardRun is one sleeper mode's run.
type SoftHardRun struct {
	Sleepers string  `json:"sleepers"`
	Wakeups  uint64  `json:"sleeper_wakeups"`
	P50      float64 `json:"p50_us"`
	P99      float64 `json:"p99_us"`
	Max      float64 `json:"max_us"`
}

// SoftHardResult is what SoftHard measured.
type SoftHardResult struct {
	CPU       int           `json:"cpu"`
	Sleepers  int           `json:"sleepers"`
	DurationS float64       `json:"duration_s"`
	Runs      []SoftHardRun `json:"runs"`
	duration  time.Duration
}

// SoftHard runs one worker (the last CPU) with a hard 1 ms periodic
// hrtimer and the hrtimers of o.Sleepers goroutines that sleep random
// 0-1 ms in a loop (SleepOn), the sleepers hard, then soft. A hard
// sleeper's wake-up runs in the interrupt pass, in expiry order among the
// hard timers; a soft one's in the softirq pass after them (the
// real-thread twin of seed 003). It measures the periodic timer's latency
// for each.
func SoftHard(o SoftHardOptions) (*SoftHardResult, error) {
	if o.Duration <= 0 || o.Sleepers < 0 {
		return nil, fmt.Errorf("duration %v, sleepers %d: must be positive", o.Duration, o.Sleepers)
	}
	cpus, err := o.cpuList(1, 0)
	if err != nil {
		return nil, err
	}
	c := cpus[len(cpus)-1]
	res := &SoftHardResult{CPU: c, Sleepers: o.Sleepers, DurationS: o.Duration.Seconds(), duration: o.Duration}
	for _, m := range []tmigr.HRMode{tmigr.Hard, tmigr.Soft} {
		run, err := softHardOnce(o.config([]int{c}), m, c, o.Sleepers, o.Duration)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func softHardOnce(cfg tmigr.Config, m tmigr.HRMode, c, n int, dur time.Duration) (SoftHardRun, error) {
	run := SoftHardRun{Sleepers: m.String()}
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return run, err
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var woke atomic.Uint64
	errc := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 3))
			for ctx.Err() == nil {
				err := rt.SleepOn(ctx, c, time.Duration(r.Int64N(int64(time.Millisecond))), m)
				if err != nil && ctx.Err() == nil {
					errc <- err
					return
				}
				woke.Add(1)
			}
		}()
	}
	p, err := startPeriodic(rt, c, time.Millisecond)
	if err != nil {
		cancel()
		wg.Wait()
		return run, err
	}
	time.Sleep(100 * time.Millisecond)
	w0 := woke.Load()
	late := p.measure(dur)
	run.Wakeups = woke.Load() - w0
	cancel()
	wg.Wait()
	select {
	case err := <-errc:
		return run, err
	default:
	}
	d := DistOf(late)
	run.P50, run.P99, run.Max = d.P50, d.P99, d.Max
	return run, rt.Err()
}

// WriteText prints the runs as a table.
func (r *SoftHardResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "hard 1 ms periodic hrtimer on worker %d with %d sleepers (random 0-1 ms) on the same worker; %v per run\n", r.CPU, r.Sleepers, r.duration)
	fmt.Fprintf(w, "  %-9s %16s %9s %9s %9s\n", "sleepers", "sleeper wakeups", "p50 us", "p99 us", "max us")
	for _, x := range r.Runs {
		fmt.Fprintf(w, "  %-9s %16d %9.1f %9.1f %9.1f\n", x.Sleepers, x.Wakeups, x.P50, x.P99, x.Max)
	}
	return nil
}
