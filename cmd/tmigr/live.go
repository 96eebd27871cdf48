package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/internal/osthread"
)

func init() {
	register("live", "experiments with the runtime on this machine", runLive)
}

const liveUsage = `usage: tmigr live <experiment> [flags]

Runs the runtime (package tmigr) on this machine's CPUs and measures it.
Each experiment compares, in one run, what the issue behind it is about;
it prints a table, or JSON with --json.

experiments:
  lateness   N timers at random 1-50 ms on idle workers: tmigr wheel
             timers, tmigr hrtimers and time.AfterFunc side by side
  isolation  a busy isolated worker (an oslat loop) next to a housekeeping
             worker with global timers that burn 200 us each, under pull
             and pull-isolated: who runs the housekeeping timers
  idle       CPU time of idle workers and the wake-up lateness of a 1 ms
             hrtimer, halting, polling and haltpolling
  softhard   a hard 1 ms periodic hrtimer beside 50 sleepers (random
             0-1 ms) on the same worker, the sleepers hard, then soft
  wakeups    idle workers with a 100 ms periodic global timer each: OS
             wake-ups per second without migration and with the hierarchy

Run 'tmigr live <experiment> -h' for its flags.
`

func runLive(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, liveUsage)
		return 2
	}
	exps := map[string]func([]string, io.Writer, io.Writer) int{
		"lateness":  liveLateness,
		"isolation": liveIsolation,
		"idle":      liveIdle,
		"softhard":  liveSoftHard,
		"wakeups":   liveWakeups,
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stderr, liveUsage)
		return 0
	}
	run, ok := exps[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tmigr live: unknown experiment %q\n\n%s", args[0], liveUsage)
		return 2
	}
	return run(args[1:], stdout, stderr)
}

// liveFlags are the flags every experiment has.
type liveFlags struct {
	fs     *flag.FlagSet
	json   *bool
	cpus   *string
	hz     *int
	fifo   *int
	stderr io.Writer
	name   string
}

func newLiveFlags(name, doc string, stderr io.Writer) *liveFlags {
	fs := flag.NewFlagSet("live "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := &liveFlags{
		fs:     fs,
		json:   fs.Bool("json", false, "print the results as JSON"),
		cpus:   fs.String("cpus", "", "CPUs to run workers on, a cpulist (default: the CPUs this process may use)"),
		hz:     fs.Int("hz", 1000, "tick rate of the timer wheels"),
		fifo:   fs.Int("fifo", 0, "run the workers SCHED_FIFO at this priority (1-99; needs CAP_SYS_NICE)"),
		stderr: stderr,
		name:   name,
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: tmigr live %s [flags]\n\n%s\n\nflags:\n", name, doc)
		fs.PrintDefaults()
	}
	return lf
}

// parse parses args; it returns a non-negative exit status when the command
// must stop (help, bad flags).
func (lf *liveFlags) parse(args []string) int {
	if err := lf.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if lf.fs.NArg() > 0 {
		fmt.Fprintf(lf.stderr, "tmigr live %s: unexpected argument %q\n", lf.name, lf.fs.Arg(0))
		return 2
	}
	return -1
}

func (lf *liveFlags) fail(err error) int {
	fmt.Fprintf(lf.stderr, "tmigr live %s: %v\n", lf.name, err)
	return 2
}

// cpuList returns the CPUs of --cpus (or the allowed ones), at least min of
// them, at most max (0: no limit).
func (lf *liveFlags) cpuList(minN, maxN int) ([]int, error) {
	var m cpumask.Mask
	var err error
	if *lf.cpus == "" {
		if m, err = osthread.Allowed(); err != nil {
			return nil, err
		}
	} else if m, err = cpumask.Parse(*lf.cpus); err != nil {
		return nil, fmt.Errorf("--cpus: %w", err)
	}
	cpus := m.CPUs()
	if len(cpus) < minN {
		return nil, fmt.Errorf("needs at least %d CPUs, --cpus gives %d (%s)", minN, len(cpus), m)
	}
	if maxN > 0 && len(cpus) > maxN {
		cpus = cpus[:maxN]
	}
	return cpus, nil
}

// config returns the runtime configuration the common flags ask for.
func (lf *liveFlags) config(cpus []int) tmigr.Config {
	return tmigr.Config{CPUs: listOf(cpus), HZ: *lf.hz, Priority: *lf.fifo}
}

func listOf(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

func (lf *liveFlags) emit(stdout io.Writer, v any, text func(io.Writer)) int {
	if *lf.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return lf.fail(err)
		}
		return 0
	}
	text(stdout)
	return 0
}

// dist summarises durations in µs.
type dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min_us"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
}

func distOf(ns []int64) dist {
	if len(ns) == 0 {
		return dist{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return us(s[max(i, 0)])
	}
	return dist{N: len(s), Min: us(s[0]), P50: q(0.5), P99: q(0.99), P999: q(0.999), Max: us(s[len(s)-1])}
}

func us(ns int64) float64 { return math.Round(float64(ns)/10) / 100 }

func (d dist) row(w io.Writer, name string) {
	fmt.Fprintf(w, "  %-16s %9.1f %9.1f %9.1f %9.1f %9.1f\n", name, d.Min, d.P50, d.P99, d.P999, d.Max)
}

func distHeader(w io.Writer) {
	fmt.Fprintf(w, "  %-16s %9s %9s %9s %9s %9s\n", "", "min us", "p50 us", "p99 us", "p99.9 us", "max us")
}

// spin burns the CPU for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// periodic runs a hard hrtimer on cpu every period, aligned to absolute
// targets, recording how late each run starts while rec is true.
type periodic struct {
	t      atomic.Pointer[tmigr.Timer]
	period time.Duration
	target time.Time // touched only by the timer function
	rec    atomic.Bool
	mu     sync.Mutex
	late   []int64
}

func startPeriodic(rt *tmigr.Runtime, cpu int, period time.Duration) (*periodic, error) {
	p := &periodic{period: period}
	p.target = time.Now().Add(period)
	t, err := rt.HRAfterFunc(cpu, period, p.run, tmigr.Hard)
	if err != nil {
		return nil, err
	}
	p.t.Store(t)
	return p, nil
}

func (p *periodic) run() {
	now := time.Now()
	if p.rec.Load() {
		p.mu.Lock()
		p.late = append(p.late, int64(now.Sub(p.target)))
		p.mu.Unlock()
	}
	for p.target = p.target.Add(p.period); !p.target.After(now); p.target = p.target.Add(p.period) {
	}
	for p.t.Load() == nil {
	}
	p.t.Load().Reset(time.Until(p.target))
}

func (p *periodic) measure(d time.Duration) []int64 {
	p.rec.Store(true)
	time.Sleep(d)
	p.rec.Store(false)
	p.t.Load().Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.late)
}

// ───────────────────────────────────────────── lateness

type latenessResult struct {
	Timers  int     `json:"timers"`
	CPUs    string  `json:"cpus"`
	Wheel   dist    `json:"tmigr_wheel"`
	HR      dist    `json:"tmigr_hrtimer"`
	Std     dist    `json:"std"`
	HRToStd float64 `json:"hrtimer_p99_over_std_p99"`
}

func liveLateness(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("lateness", `Arms N timers of random 1-50 ms, one every ~millisecond, each three
times: a tmigr wheel timer (global, AfterFuncOn) and a tmigr hrtimer (hard)
on the idle workers in turn, and a time.AfterFunc. Prints how late each
kind runs (from the arm to the function's start, minus the duration).
Goal: hrtimer p99 under 100 us and at most 1/10 of std's.`, stderr)
	n := lf.fs.Int("timers", 1000, "timers of each kind")
	seed := lf.fs.Uint64("seed", 1, "seed of the random durations")
	idle := lf.fs.String("idle", "halt", "how idle workers wait: halt, poll or haltpoll")
	if rc := lf.parse(args); rc >= 0 {
		return rc
	}
	if *n < 1 || *n > 1_000_000 {
		return lf.fail(fmt.Errorf("--timers %d outside 1..1000000", *n))
	}
	cpus, err := lf.cpuList(1, 0)
	if err != nil {
		return lf.fail(err)
	}
	cfg := lf.config(cpus)
	if cfg.Idle, err = tmigr.ParseIdleMode(*idle); err != nil {
		return lf.fail(err)
	}
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return lf.fail(err)
	}
	defer rt.Close()
	wheel, hr, std := make([]int64, *n), make([]int64, *n), make([]int64, *n)
	var wg sync.WaitGroup
	wg.Add(3 * *n)
	r := rand.New(rand.NewPCG(*seed, 0))
	// Each kind draws its own duration, so that the three kinds rarely
	// expire at the same instant and compete for the machine's CPUs.
	dur := func() time.Duration { return time.Millisecond + time.Duration(r.Int64N(int64(49*time.Millisecond)+1)) }
	for i := range *n {
		rec := func(dst []int64, d time.Duration) func() {
			start := time.Now()
			return func() { dst[i] = int64(time.Since(start) - d); wg.Done() }
		}
		d := dur()
		if _, err := rt.AfterFuncOn(cpus[(i+1)%len(cpus)], d, rec(wheel, d)); err != nil {
			return lf.fail(err)
		}
		d = dur()
		if _, err := rt.HRAfterFunc(cpus[i%len(cpus)], d, rec(hr, d), tmigr.Hard); err != nil {
			return lf.fail(err)
		}
		d = dur()
		time.AfterFunc(d, rec(std, d))
		time.Sleep(500 * time.Microsecond)
	}
	wg.Wait()
	res := latenessResult{Timers: *n, CPUs: listOf(cpus), Wheel: distOf(wheel), HR: distOf(hr), Std: distOf(std)}
	if res.Std.P99 > 0 {
		res.HRToStd = math.Round(res.HR.P99/res.Std.P99*1000) / 1000
	}
	return lf.emit(stdout, res, func(w io.Writer) {
		fmt.Fprintf(w, "lateness of %d timers of each kind, random 1-50 ms, idle workers on CPUs %s (HZ %d)\n", res.Timers, res.CPUs, *lf.hz)
		distHeader(w)
		res.Wheel.row(w, "tmigr wheel")
		res.HR.row(w, "tmigr hrtimer")
		res.Std.row(w, "time.AfterFunc")
		fmt.Fprintf(w, "hrtimer p99 / std p99 = %.3f (goal: hrtimer p99 < 100 us, ratio <= 0.1)\n", res.HRToStd)
	})
}

// ───────────────────────────────────────────── isolation

type isolationRun struct {
	Policy     string  `json:"policy"`
	HKTimers   uint64  `json:"housekeeping_timers"`
	Remote     uint64  `json:"remote_on_isolated"`
	RemoteUs   float64 `json:"remote_us_on_isolated"`
	Loops      uint64  `json:"loops"`
	Gap        gapDist `json:"gap_us"`
	GapOver100 uint64  `json:"gaps_over_100us"`
}

type gapDist struct {
	P99   float64 `json:"p99"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
}

type isolationResult struct {
	Housekeeping int            `json:"housekeeping_cpu"`
	Isolated     int            `json:"isolated_cpu"`
	DurationS    float64        `json:"duration_s"`
	Runs         []isolationRun `json:"runs"`
}

// gapHist counts gaps in 100 ns buckets up to 100 ms, as oslat keeps a
// histogram rather than samples (a busy loop makes millions).
type gapHist struct {
	b   []uint64
	n   uint64
	max int64
}

const gapBucket = 100 // ns

func newGapHist() *gapHist { return &gapHist{b: make([]uint64, 100_000_000/gapBucket+1)} }

func (h *gapHist) add(ns int64) {
	i := min(ns/gapBucket, int64(len(h.b)-1))
	h.b[i]++
	h.n++
	h.max = max(h.max, ns)
}

func (h *gapHist) quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(h.n)))
	var seen uint64
	for i, c := range h.b {
		if seen += c; seen >= rank && c > 0 {
			return us(min(int64(i+1)*gapBucket, h.max))
		}
	}
	return us(h.max)
}

func (h *gapHist) over(ns int64) uint64 {
	var n uint64
	for i := ns / gapBucket; i < int64(len(h.b)); i++ {
		n += h.b[i]
	}
	return n
}

func liveIsolation(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("isolation", `Two workers: a housekeeping one, idle, whose four periodic global
timers (every 3, 5, 7 and 11 ms) each burn 200 us, and an isolated one
running an oslat-style busy loop that records the gaps between its clock
reads (calling Yield, where the worker's timers run). Under pull the busy
isolated worker is the hierarchy's migrator and runs the housekeeping
timers: 200 us gaps. Under pull-isolated it is out of the hierarchy and
runs none (the real-thread twin of seed 000). Uses the first two CPUs.`, stderr)
	dur := lf.fs.Duration("duration", 3*time.Second, "length of each run")
	if rc := lf.parse(args); rc >= 0 {
		return rc
	}
	if *dur <= 0 {
		return lf.fail(fmt.Errorf("--duration %v: must be positive", *dur))
	}
	cpus, err := lf.cpuList(2, 2)
	if err != nil {
		return lf.fail(err)
	}
	hk, iso := cpus[0], cpus[1]
	res := isolationResult{Housekeeping: hk, Isolated: iso, DurationS: dur.Seconds()}
	for _, p := range []tmigr.Policy{tmigr.Pull, tmigr.PullIsolated} {
		cfg := lf.config([]int{hk, iso})
		cfg.Isolated, cfg.Policy = strconv.Itoa(iso), p
		run, err := isolationOnce(cfg, hk, iso, *dur)
		if err != nil {
			return lf.fail(err)
		}
		res.Runs = append(res.Runs, run)
	}
	return lf.emit(stdout, res, func(w io.Writer) {
		fmt.Fprintf(w, "isolated worker %d busy (oslat loop), housekeeping worker %d idle with 4 periodic global timers burning 200 us; %v per policy\n", iso, hk, *dur)
		fmt.Fprintf(w, "  %-14s %9s %13s %13s %9s %9s %9s %9s\n", "policy", "hk timers", "remote on iso", "remote us", "gap p99", "p99.99", "max us", ">100us")
		for _, r := range res.Runs {
			fmt.Fprintf(w, "  %-14s %9d %13d %13.0f %9.1f %9.1f %9.1f %9d\n", r.Policy, r.HKTimers, r.Remote, r.RemoteUs, r.Gap.P99, r.Gap.P9999, r.Gap.Max, r.GapOver100)
		}
	})
}

func isolationOnce(cfg tmigr.Config, hk, iso int, dur time.Duration) (isolationRun, error) {
	run := isolationRun{Policy: cfg.Policy.String()}
	rt, err := tmigr.Start(cfg)
	if err != nil {
		return run, err
	}
	defer rt.Close()
	var fired atomic.Uint64
	var stop atomic.Bool
	// The housekeeping timers are armed on their worker, as kernel code
	// arms its periodic work; each re-arms itself.
	armed := make(chan struct{})
	rt.Go(hk, func() {
		defer close(armed)
		for _, period := range []time.Duration{3, 5, 7, 11} {
			period *= time.Millisecond
			var t atomic.Pointer[tmigr.Timer]
			t.Store(rt.AfterFunc(period, func() {
				fired.Add(1)
				spin(200 * time.Microsecond)
				if !stop.Load() {
					t.Load().Reset(period)
				}
			}))
		}
	})
	<-armed
	h := newGapHist()
	done := make(chan struct{})
	rt.Go(iso, func() {
		defer close(done)
		prev := time.Now()
		end := prev.Add(dur)
		for {
			rt.Yield()
			now := time.Now()
			h.add(int64(now.Sub(prev)))
			if now.After(end) {
				return
			}
			prev = now
		}
	})
	<-done
	stop.Store(true)
	for _, s := range rt.Stats() {
		if s.CPU == iso {
			run.Remote, run.RemoteUs = s.Remote, math.Round(float64(s.RemoteTime)/1e3)
		}
	}
	run.HKTimers = fired.Load()
	run.Loops = h.n
	run.Gap = gapDist{P99: h.quantile(0.99), P9999: h.quantile(0.9999), Max: us(h.max)}
	run.GapOver100 = h.over(100_000)
	return run, rt.Err()
}

// ───────────────────────────────────────────── idle

type idleRun struct {
	Idle      string    `json:"idle"`
	CPUPct    float64   `json:"cpu_pct"`
	PerWorker []float64 `json:"cpu_pct_per_worker"`
	WakeP50   float64   `json:"wake_p50_us"`
	WakeP99   float64   `json:"wake_p99_us"`
	WakeMax   float64   `json:"wake_max_us"`
	Wakeups   float64   `json:"os_wakeups_per_s"`
}

type idleResult struct {
	CPUs      string    `json:"cpus"`
	DurationS float64   `json:"duration_s"`
	Runs      []idleRun `json:"runs"`
}

func liveIdle(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("idle", `Workers with nothing to do but a 1 ms periodic hard hrtimer on the first
one. For each idle mode (halt, poll, haltpoll) prints the CPU time the
workers' threads use (their per-thread CPU clocks: the getrusage
RUSAGE_THREAD account) as a share of the run, per worker and on average,
and how late the hrtimer runs. Goal: halt under 1% per idle worker, poll
near 100%, haltpoll between with a wake-up close to poll's.`, stderr)
	workers := lf.fs.Int("workers", 0, "number of workers (default: one per CPU of --cpus)")
	dur := lf.fs.Duration("duration", 2*time.Second, "length of each run")
	if rc := lf.parse(args); rc >= 0 {
		return rc
	}
	if *dur <= 0 {
		return lf.fail(fmt.Errorf("--duration %v: must be positive", *dur))
	}
	if *workers < 0 {
		return lf.fail(fmt.Errorf("--workers %d: must be positive", *workers))
	}
	cpus, err := lf.cpuList(max(*workers, 1), *workers)
	if err != nil {
		return lf.fail(err)
	}
	res := idleResult{CPUs: listOf(cpus), DurationS: dur.Seconds()}
	for _, m := range []tmigr.IdleMode{tmigr.Halt, tmigr.Poll, tmigr.HaltPoll} {
		cfg := lf.config(cpus)
		cfg.Idle = m
		run, err := idleOnce(cfg, cpus, *dur)
		if err != nil {
			return lf.fail(err)
		}
		res.Runs = append(res.Runs, run)
	}
	return lf.emit(stdout, res, func(w io.Writer) {
		fmt.Fprintf(w, "idle workers on CPUs %s, a 1 ms hard hrtimer on worker %d; %v per mode\n", res.CPUs, cpus[0], *dur)
		fmt.Fprintf(w, "  %-9s %8s %-22s %9s %9s %9s %11s\n", "idle", "cpu %", "per worker %", "wake p50", "p99 us", "max us", "OS wakeups/s")
		for _, r := range res.Runs {
			per := make([]string, len(r.PerWorker))
			for i, p := range r.PerWorker {
				per[i] = strconv.FormatFloat(p, 'f', 2, 64)
			}
			fmt.Fprintf(w, "  %-9s %8.2f %-22s %9.1f %9.1f %9.1f %11.0f\n", r.Idle, r.CPUPct, strings.Join(per, " "), r.WakeP50, r.WakeP99, r.WakeMax, r.Wakeups)
		}
	})
}

func idleOnce(cfg tmigr.Config, cpus []int, dur time.Duration) (idleRun, error) {
	run := idleRun{Idle: cfg.Idle.String()}
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
	d := distOf(late)
	run.WakeP50, run.WakeP99, run.WakeMax = d.P50, d.P99, d.Max
	return run, rt.Err()
}

// ───────────────────────────────────────────── softhard

type softHardRun struct {
	Sleepers string  `json:"sleepers"`
	Wakeups  uint64  `json:"sleeper_wakeups"`
	P50      float64 `json:"p50_us"`
	P99      float64 `json:"p99_us"`
	Max      float64 `json:"max_us"`
}

type softHardResult struct {
	CPU       int           `json:"cpu"`
	Sleepers  int           `json:"sleepers"`
	DurationS float64       `json:"duration_s"`
	Runs      []softHardRun `json:"runs"`
}

func liveSoftHard(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("softhard", `One worker (the last CPU of --cpus) runs a hard 1 ms periodic hrtimer
and the hrtimers of N goroutines that sleep random 0-1 ms in a loop
(SleepOn), the sleepers hard, then soft. A hard sleeper's wake-up runs in
the interrupt pass, in expiry order among the hard timers; a soft one's in
the softirq pass after them (the real-thread twin of seed 003). Prints the
periodic timer's latency for each.`, stderr)
	n := lf.fs.Int("sleepers", 50, "number of sleeping goroutines")
	dur := lf.fs.Duration("duration", 3*time.Second, "length of each run")
	if rc := lf.parse(args); rc >= 0 {
		return rc
	}
	if *dur <= 0 || *n < 0 {
		return lf.fail(fmt.Errorf("--duration %v, --sleepers %d: must be positive", *dur, *n))
	}
	cpus, err := lf.cpuList(1, 0)
	if err != nil {
		return lf.fail(err)
	}
	c := cpus[len(cpus)-1]
	res := softHardResult{CPU: c, Sleepers: *n, DurationS: dur.Seconds()}
	for _, m := range []tmigr.HRMode{tmigr.Hard, tmigr.Soft} {
		run, err := softHardOnce(lf.config([]int{c}), m, c, *n, *dur)
		if err != nil {
			return lf.fail(err)
		}
		res.Runs = append(res.Runs, run)
	}
	return lf.emit(stdout, res, func(w io.Writer) {
		fmt.Fprintf(w, "hard 1 ms periodic hrtimer on worker %d with %d sleepers (random 0-1 ms) on the same worker; %v per run\n", c, *n, *dur)
		fmt.Fprintf(w, "  %-9s %16s %9s %9s %9s\n", "sleepers", "sleeper wakeups", "p50 us", "p99 us", "max us")
		for _, r := range res.Runs {
			fmt.Fprintf(w, "  %-9s %16d %9.1f %9.1f %9.1f\n", r.Sleepers, r.Wakeups, r.P50, r.P99, r.Max)
		}
	})
}

func softHardOnce(cfg tmigr.Config, m tmigr.HRMode, c, n int, dur time.Duration) (softHardRun, error) {
	run := softHardRun{Sleepers: m.String()}
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
	d := distOf(late)
	run.P50, run.P99, run.Max = d.P50, d.P99, d.Max
	return run, rt.Err()
}

// ───────────────────────────────────────────── wakeups

type wakeupsRun struct {
	Policy    string    `json:"policy"`
	Wakeups   float64   `json:"wakeups_per_s"`
	CtxSw     float64   `json:"voluntary_switches_per_s"`
	PerWorker []float64 `json:"wakeups_per_s_per_worker"`
	TimersRun uint64    `json:"timers_run"`
	Remote    uint64    `json:"remote_expiries"`
}

type wakeupsResult struct {
	CPUs      string       `json:"cpus"`
	DurationS float64      `json:"duration_s"`
	Runs      []wakeupsRun `json:"runs"`
}

func liveWakeups(args []string, stdout, stderr io.Writer) int {
	lf := newLiveFlags("wakeups", `Idle workers, each with a 100 ms periodic global timer armed on it (in
step). Counts the workers' OS-level wake-ups per second (sleeps in the
kernel that ended, and voluntary context switches from procfs) without
timer migration (none) and with the hierarchy (pull), where the last
worker to go idle wakes for everyone's timers: why the hierarchy exists.`, stderr)
	workers := lf.fs.Int("workers", 0, "number of workers (default: one per CPU of --cpus)")
	dur := lf.fs.Duration("duration", 3*time.Second, "length of each run")
	if rc := lf.parse(args); rc >= 0 {
		return rc
	}
	if *dur <= 0 || *workers < 0 {
		return lf.fail(fmt.Errorf("--duration %v, --workers %d: must be positive", *dur, *workers))
	}
	cpus, err := lf.cpuList(max(*workers, 1), *workers)
	if err != nil {
		return lf.fail(err)
	}
	res := wakeupsResult{CPUs: listOf(cpus), DurationS: dur.Seconds()}
	for _, p := range []tmigr.Policy{tmigr.None, tmigr.Pull} {
		cfg := lf.config(cpus)
		cfg.Policy = p
		run, err := wakeupsOnce(cfg, *dur)
		if err != nil {
			return lf.fail(err)
		}
		res.Runs = append(res.Runs, run)
	}
	return lf.emit(stdout, res, func(w io.Writer) {
		fmt.Fprintf(w, "%d idle workers (CPUs %s), a 100 ms periodic global timer each; %v per policy\n", len(cpus), res.CPUs, *dur)
		fmt.Fprintf(w, "  %-8s %11s %15s %-20s %10s %8s\n", "policy", "wakeups/s", "vol. switches/s", "per worker", "timers run", "remote")
		for _, r := range res.Runs {
			per := make([]string, len(r.PerWorker))
			for i, p := range r.PerWorker {
				per[i] = strconv.FormatFloat(p, 'f', 1, 64)
			}
			fmt.Fprintf(w, "  %-8s %11.1f %15.1f %-20s %10d %8d\n", r.Policy, r.Wakeups, r.CtxSw, strings.Join(per, " "), r.TimersRun, r.Remote)
		}
	})
}

func wakeupsOnce(cfg tmigr.Config, dur time.Duration) (wakeupsRun, error) {
	run := wakeupsRun{Policy: cfg.Policy.String()}
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
			}))
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
