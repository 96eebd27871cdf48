package live

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr"
)

// IsolationOptions configure Isolation.
type IsolationOptions struct {
	Machine
	Duration time.Duration // of each run
}

// IsolationRun is one policy's run.
type IsolationRun struct {
	Policy     string  `json:"policy"`
	HKTimers   uint64  `json:"housekeeping_timers"`
	Remote     uint64  `json:"remote_on_isolated"`
	RemoteUs   float64 `json:"remote_us_on_isolated"`
	Loops      uint64  `json:"loops"`
	Gap        GapDist `json:"gap_us"`
	GapOver100 uint64  `json:"gaps_over_100us"`
}

// GapDist summarises the gaps of the busy loop, µs.
type GapDist struct {
	P99   float64 `json:"p99"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
}

// IsolationResult is what Isolation measured.
type IsolationResult struct {
	Housekeeping int            `json:"housekeeping_cpu"`
	Isolated     int            `json:"isolated_cpu"`
	DurationS    float64        `json:"duration_s"`
	Runs         []IsolationRun `json:"runs"`
	duration     time.Duration
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

// Isolation runs two workers on the first two CPUs: a housekeeping one,
// idle, whose four periodic global timers (every 3, 5, 7 and 11 ms) each
// burn 200 µs, and an isolated one running an oslat-style busy loop that
// records the gaps between its clock reads (calling Yield, where the
// worker's timers run). Under pull the busy isolated worker is the
// hierarchy's migrator and runs the housekeeping timers: 200 µs gaps.
// Under pull-isolated it is out of the hierarchy and runs none (the
// real-thread twin of seed 000).
func Isolation(o IsolationOptions) (*IsolationResult, error) {
	if err := positive("duration", o.Duration); err != nil {
		return nil, err
	}
	cpus, err := o.cpuList(2, 2)
	if err != nil {
		return nil, err
	}
	hk, iso := cpus[0], cpus[1]
	res := &IsolationResult{Housekeeping: hk, Isolated: iso, DurationS: o.Duration.Seconds(), duration: o.Duration}
	for _, p := range []tmigr.Policy{tmigr.Pull, tmigr.PullIsolated} {
		cfg := o.config([]int{hk, iso})
		cfg.Isolated, cfg.Policy = strconv.Itoa(iso), p
		run, err := isolationOnce(cfg, hk, iso, o.Duration)
		if err != nil {
			return nil, err
		}
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

func isolationOnce(cfg tmigr.Config, hk, iso int, dur time.Duration) (IsolationRun, error) {
	run := IsolationRun{Policy: cfg.Policy.String()}
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
			}, tmigr.Coarse()))
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
	run.Gap = GapDist{P99: h.quantile(0.99), P9999: h.quantile(0.9999), Max: us(h.max)}
	run.GapOver100 = h.over(100_000)
	return run, rt.Err()
}

// WriteText prints the runs as a table.
func (r *IsolationResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "isolated worker %d busy (oslat loop), housekeeping worker %d idle with 4 periodic global timers burning 200 us; %v per policy\n", r.Isolated, r.Housekeeping, r.duration)
	fmt.Fprintf(w, "  %-14s %9s %13s %13s %9s %9s %9s %9s\n", "policy", "hk timers", "remote on iso", "remote us", "gap p99", "p99.99", "max us", ">100us")
	for _, x := range r.Runs {
		fmt.Fprintf(w, "  %-14s %9d %13d %13.0f %9.1f %9.1f %9.1f %9d\n", x.Policy, x.HKTimers, x.Remote, x.RemoteUs, x.Gap.P99, x.Gap.P9999, x.Gap.Max, x.GapOver100)
	}
	return nil
}
