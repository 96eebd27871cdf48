package live

import (
	"fmt"
	"io"
	"math"
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

// Machine is what an experiment runs its workers on.
type Machine struct {
	// CPUs are the workers' CPUs; empty: the CPUs this process may use.
	CPUs cpumask.Mask
	// HZ is the tick rate of the timer wheels; 0: the runtime's default.
	HZ int
	// Priority runs the workers SCHED_FIFO at this priority (1-99, needs
	// CAP_SYS_NICE); 0: SCHED_OTHER.
	Priority int
	// Slack is the runtime's timer slack of precise timers
	// (tmigr.Config.Slack); 0: none, every precise timer exact.
	Slack time.Duration
	// SpareProcs gives the runtime one spare P per worker
	// (tmigr.Config.SpareProcs), as the published lateness figures were
	// measured with: the experiment's own goroutines (std's timers, the
	// load) then do not hold the Ps the workers wake to.
	SpareProcs bool
}

// cpuList returns the CPUs, at least minN of them, at most maxN (0: no
// limit).
func (m Machine) cpuList(minN, maxN int) ([]int, error) {
	mask := m.CPUs
	if mask.Empty() {
		var err error
		if mask, err = osthread.Allowed(); err != nil {
			return nil, err
		}
	}
	cpus := mask.CPUs()
	if len(cpus) < minN {
		return nil, fmt.Errorf("needs at least %d CPUs, has %d (%s)", minN, len(cpus), mask)
	}
	if maxN > 0 && len(cpus) > maxN {
		cpus = cpus[:maxN]
	}
	return cpus, nil
}

// config returns the runtime configuration for workers on cpus.
func (m Machine) config(cpus []int) tmigr.Config {
	return tmigr.Config{CPUs: listOf(cpus), HZ: m.HZ, Priority: m.Priority, Slack: m.Slack, SpareProcs: m.SpareProcs}
}

// hzText names the tick rate, and a timer slack if any, for a report's
// header.
func (m Machine) hzText() string {
	s := "HZ " + strconv.Itoa(m.HZ)
	if m.HZ == 0 {
		s = "the runtime's default HZ"
	}
	if m.Slack > 0 {
		s += ", slack " + m.Slack.String()
	}
	return s
}

func listOf(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// Dist summarises durations in µs.
type Dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min_us"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
}

// DistOf summarises ns durations: each quantile is a sample (the
// ceil(q*n)-th smallest).
func DistOf(ns []int64) Dist {
	if len(ns) == 0 {
		return Dist{}
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return us(s[max(i, 0)])
	}
	return Dist{N: len(s), Min: us(s[0]), P50: q(0.5), P99: q(0.99), P999: q(0.999), Max: us(s[len(s)-1])}
}

// us converts ns to µs, rounded to 0.01.
func us(ns int64) float64 { return math.Round(float64(ns)/10) / 100 }

func (d Dist) row(w io.Writer, name string) {
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

func positive(name string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %v: must be positive", name, d)
	}
	return nil
}
