package live

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tmigr/tmigr"
	"github.com/tmigr/tmigr/report"
)

// LatenessOptions configure Lateness.
type LatenessOptions struct {
	Machine
	// Timers is the number of timers of each kind (1 to 1000000).
	Timers int
	// Seed seeds the random durations.
	Seed uint64
	// Idle is how idle workers wait (zero: the runtime's default).
	Idle tmigr.IdleMode
	// Hist is the number of 1 µs buckets of the cyclictest-format
	// histograms (cyclictest's -h); 0 prints the "T:" lines alone.
	Hist int
	// Cyclictest, if not "", is rt-tests' cyclictest, run over the same
	// span on the same CPUs (see RunCyclictest).
	Cyclictest string
	// Hogs is the number of CPU hogs per worker CPU (0 to 16): busy
	// processes pinned there for the whole run, the loaded machine on
	// which a pinned worker's thread waits for its CPU.
	Hogs int
	// Rearm arms each timer of every kind for an hour first and then
	// Resets it to its duration, from the goroutine that arms them all: a
	// timeout re-armed by a program, the path of Timer.Reset (for tmigr's
	// precise timers a move earlier, which the worker queues; see
	// tmigr.Timer.Reset) rather than of a constructor.
	Rearm bool
}

// Lateness's kinds of timers, in the order of their cyclictest "threads".
var latenessKinds = []string{"tmigr wheel", "tmigr hrtimer", "time.AfterFunc"}

// LatenessResult is what Lateness measured.
type LatenessResult struct {
	Timers int    `json:"timers"`
	CPUs   string `json:"cpus"`
	HZ     int    `json:"hz"` // 0: the runtime's default
	// SlackNs is the runtime's timer slack of precise timers, ns.
	SlackNs int64   `json:"slack_ns"`
	Wheel   Dist    `json:"tmigr_wheel"`
	HR      Dist    `json:"tmigr_hrtimer"`
	Std     Dist    `json:"std"`
	HRToStd float64 `json:"hrtimer_p99_over_std_p99"`
	// Histograms are the three kinds in the form of cyclictest's --json
	// threads, keyed "tmigr_wheel", "tmigr_hrtimer", "std".
	Histograms map[string]report.CyclicThreadJSON `json:"histograms"`
	// Cyclictest is cyclictest's run, when asked for.
	Cyclictest *CyclictestRun `json:"cyclictest,omitempty"`
	// HRToCyclictest is the hrtimer's p99 over cyclictest's.
	HRToCyclictest float64 `json:"hrtimer_p99_over_cyclictest_p99,omitempty"`
	// Idle is the workers' idle mode.
	Idle string `json:"idle"`
	// Hogs is the CPU hogs per worker CPU.
	Hogs int `json:"hogs_per_cpu"`
	// Rearm: every timer was armed for an hour and then Reset (see
	// LatenessOptions.Rearm).
	Rearm bool `json:"rearm"`
	// Rescues counts the times a thread other than a worker's ran that
	// worker's overdue timers (tmigr.Stats.Rescues), over all workers.
	Rescues uint64 `json:"rescues"`
	// Crowded counts the rescues that found the worker's thread runnable
	// (tmigr.Stats.Crowded): the machine was loaded, not its timers late.
	Crowded uint64 `json:"crowded"`

	// Report is the three kinds as cyclictest's threads 0, 1 and 2.
	Report report.Cyclictest `json:"-"`
	hzText string
}

// latenessSpacing is the time between two arms of each kind.
const latenessSpacing = 500 * time.Microsecond

// Lateness arms o.Timers timers of random 1-50 ms, one every half
// millisecond, each three times: a tmigr wheel timer (global, AfterFuncOn)
// and a tmigr hrtimer (hard) on the idle workers in turn, and a
// time.AfterFunc, each kind with its own durations (so that the kinds
// rarely expire at the same instant and compete for the CPUs). A timer's
// lateness is the time from its arm to its function's start, less its
// duration. With o.Rearm each is armed for an hour and then Reset, and
// its lateness counts from the Reset.
func Lateness(ctx context.Context, o LatenessOptions) (*LatenessResult, error) {
	if o.Timers < 1 || o.Timers > 1_000_000 {
		return nil, fmt.Errorf("timers %d outside 1..1000000", o.Timers)
	}
	if o.Hist < 0 || o.Hist > 1_000_000 {
		return nil, fmt.Errorf("histogram of %d buckets outside 0..1000000 (cyclictest's -h)", o.Hist)
	}
	cpus, err := o.cpuList(1, 0)
	if err != nil {
		return nil, err
	}
	hg, err := startHogs(cpus, o.Hogs)
	if err != nil {
		return nil, err
	}
	defer hg.stop()
	cfg := o.config(cpus)
	cfg.Idle = o.Idle
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return nil, err
	}
	defer rt.Close()

	var ct *cyclictestJob
	if o.Cyclictest != "" {
		// The arms take about twice their spacing (a time.Sleep of
		// 500 µs is 1 ms here and there); the limit only stops a
		// cyclictest we could not.
		limit := 4*time.Duration(o.Timers)*latenessSpacing + time.Minute
		if ct, err = startCyclictest(ctx, o.Cyclictest, cpus, o.Priority, limit, o.Hist); err != nil {
			return nil, err
		}
		defer ct.kill()
	}

	n := o.Timers
	wheel, hr, std := make([]int64, n), make([]int64, n), make([]int64, n)
	var sum [3]time.Duration
	var wg sync.WaitGroup
	wg.Add(3 * n)
	r := rand.New(rand.NewPCG(o.Seed, 0))
	dur := func() time.Duration { return time.Millisecond + time.Duration(r.Int64N(int64(49*time.Millisecond)+1)) }
	// first is the duration of a timer's arm: its own, or an hour it is
	// Reset from (rearm).
	first := func(d time.Duration) time.Duration {
		if o.Rearm {
			return time.Hour
		}
		return d
	}
	for i := range n {
		// rec returns timer i's function, which records its lateness
		// into dst, and arm, which (re)starts the time it counts from
		// and, with o.Rearm, Resets the timer to d.
		rec := func(dst []int64, d time.Duration) (f func(), arm func(reset func(time.Duration) bool)) {
			start := time.Now()
			f = func() { dst[i] = int64(time.Since(start) - d); wg.Done() }
			arm = func(reset func(time.Duration) bool) {
				if o.Rearm {
					start = time.Now()
					reset(d)
				}
			}
			return f, arm
		}
		d := dur()
		sum[0] += d
		f, arm := rec(wheel, d)
		wt, err := rt.AfterFuncOn(cpus[(i+1)%len(cpus)], first(d), f)
		if err != nil {
			return nil, err
		}
		arm(wt.Reset)
		d = dur()
		sum[1] += d
		f, arm = rec(hr, d)
		ht, err := rt.HRAfterFunc(cpus[i%len(cpus)], first(d), f, tmigr.Hard)
		if err != nil {
			return nil, err
		}
		arm(ht.Reset)
		d = dur()
		sum[2] += d
		f, arm = rec(std, d)
		arm(time.AfterFunc(first(d), f).Reset)
		time.Sleep(latenessSpacing)
	}
	wg.Wait()
	var ctRun *CyclictestRun
	if ct != nil {
		if ctRun, err = ct.stop(); err != nil {
			return nil, err
		}
	}

	res := &LatenessResult{Timers: n, CPUs: listOf(cpus), HZ: o.HZ, Wheel: DistOf(wheel), HR: DistOf(hr), Std: DistOf(std),
		Histograms: map[string]report.CyclicThreadJSON{}, hzText: o.hzText(), Idle: o.Idle.String(), Hogs: o.Hogs,
		SlackNs: int64(o.Slack), Rearm: o.Rearm}
	for _, s := range rt.Stats() {
		res.Rescues += s.Rescues
		res.Crowded += s.Crowded
	}
	if res.Std.P99 > 0 {
		res.HRToStd = math.Round(res.HR.P99/res.Std.P99*1000) / 1000
	}
	res.Report.Histogram = o.Hist
	for k, lat := range [][]int64{wheel, hr, std} {
		t := report.NewCyclicThread(0, o.Priority, (sum[k] / time.Duration(n)).Microseconds(), -1, -1, o.Hist)
		for _, ns := range lat {
			t.Sample(ns / 1000) // truncated to µs, as cyclictest's calcdiff
		}
		res.Report.Threads = append(res.Report.Threads, t)
		res.Histograms[[]string{"tmigr_wheel", "tmigr_hrtimer", "std"}[k]] = t.JSON()
	}
	if ctRun != nil {
		res.Cyclictest = ctRun
		if p := ctRun.Dist.P99; p > 0 {
			res.HRToCyclictest = math.Round(res.HR.P99/p*1000) / 1000
		}
	}
	return res, rt.Err()
}

// WriteText prints the three kinds in cyclictest's format (and
// cyclictest's own run after them), then the table of quantiles and the
// ratios.
func (r *LatenessResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "# cyclictest format, one thread per kind of timer: T: 0 %s, T: 1 %s, T: 2 %s\n", latenessKinds[0], latenessKinds[1], latenessKinds[2])
	fmt.Fprintf(w, "# (I: the kind's mean duration in us; latencies truncated to us)\n")
	if err := report.WriteCyclictest(w, &r.Report); err != nil {
		return err
	}
	if c := r.Cyclictest; c != nil {
		fmt.Fprintf(w, "# %s\n", c.Command)
		if err := report.WriteCyclictest(w, &c.Report); err != nil {
			return err
		}
	}
	load := "no hogs"
	if r.Hogs > 0 {
		load = fmt.Sprintf("%d CPU hog(s) per CPU", r.Hogs)
	}
	arms := "random 1-50 ms"
	if r.Rearm {
		arms = "armed for an hour, then Reset to random 1-50 ms"
	}
	fmt.Fprintf(w, "lateness of %d timers of each kind, %s, idle workers (%s) on CPUs %s (%s), %s; %d rescues (%d crowded)\n", r.Timers, arms, r.Idle, r.CPUs, r.hzText, load, r.Rescues, r.Crowded)
	distHeader(w)
	r.Wheel.row(w, latenessKinds[0])
	r.HR.row(w, latenessKinds[1])
	r.Std.row(w, latenessKinds[2])
	if c := r.Cyclictest; c != nil {
		c.Dist.row(w, "cyclictest")
	}
	fmt.Fprintf(w, "hrtimer p99 / std p99 = %.3f (goal: hrtimer p99 < 100 us, ratio <= 0.1)\n", r.HRToStd)
	if r.Cyclictest != nil {
		fmt.Fprintf(w, "hrtimer p99 / cyclictest p99 = %.3f (goal: <= 1.5)\n", r.HRToCyclictest)
	}
	return nil
}
