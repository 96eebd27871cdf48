package lab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// A campaign (see Campaign) measures the model's fidelity on fresh
// recordings: it draws machines and loads at random, records each with
// Record, replays it under its own kernel and keeps every recording that
// shows a mismatch. This file holds the draw; campaign_run.go the runner,
// the state it keeps and its summary; campaign_cut.go the cutting of a
// reproducer to its shortest mismatching window.

// Series are the kernel series a campaign draws from by default: those
// the lab records and the replay models.
var Series = []string{"6.1", "6.12", "6.19", "7.0", "7.2", "7.3"}

// Limits on a campaign's draws.
const (
	// DefaultCampaignCPUs is the default cap on a draw's CPUs. A draw
	// may have up to MaxCampaignCPUs, but under TCG on a host of few
	// cores a guest's boot grows with the square of its vCPUs (64 vCPUs:
	// minutes on 2 cores), so a campaign on a small host keeps them
	// smaller.
	DefaultCampaignCPUs = 16
	// MaxCampaignCPUs is the most CPUs a draw may have.
	MaxCampaignCPUs = 64
	// MaxCampaignNodes is the most NUMA nodes a draw may have.
	MaxCampaignNodes = 4
	// DefaultCampaignDuration is how long each draw records by default.
	DefaultCampaignDuration = 2 * time.Second
	// minPeriodDraw and maxPeriodDraw bound the sleepers' period of a
	// draw: shorter periods fill the trace buffer of a TCG guest.
	minPeriodDraw = time.Millisecond
	maxPeriodDraw = 20 * time.Millisecond
)

// DrawLimits bound what a campaign draws. The zero value of a field means
// its default.
type DrawLimits struct {
	MaxCPUs  int           // 2..MaxCampaignCPUs; default DefaultCampaignCPUs
	Kernels  []string      // series to draw from; default Series
	Flavours []Flavour     // default Generic and RT
	Duration time.Duration // each recording's length; default DefaultCampaignDuration
}

func (l DrawLimits) withDefaults() DrawLimits {
	if l.MaxCPUs == 0 {
		l.MaxCPUs = DefaultCampaignCPUs
	}
	if len(l.Kernels) == 0 {
		l.Kernels = slices.Clone(Series)
	}
	if len(l.Flavours) == 0 {
		l.Flavours = []Flavour{Generic, RT}
	}
	if l.Duration == 0 {
		l.Duration = DefaultCampaignDuration
	}
	return l
}

// Validate checks the limits, with their defaults applied, and names the
// first problem.
func (l DrawLimits) Validate() error {
	l = l.withDefaults()
	if l.MaxCPUs < 2 || l.MaxCPUs > MaxCampaignCPUs {
		return fmt.Errorf("max-cpus: %d is outside 2..%d", l.MaxCPUs, MaxCampaignCPUs)
	}
	for _, k := range l.Kernels {
		if !slices.Contains(Series, k) {
			return fmt.Errorf("kernels: %q is not a series the campaign draws (%s)", k, strings.Join(Series, ", "))
		}
	}
	for _, f := range l.Flavours {
		if f != Generic && f != RT {
			return fmt.Errorf("flavours: %q is neither %q nor %q", f, Generic, RT)
		}
	}
	if l.Duration <= 0 || l.Duration > MaxDuration || l.Duration%time.Millisecond != 0 {
		return fmt.Errorf("duration: %v must be a whole number of milliseconds in (0, %v]", l.Duration, MaxDuration)
	}
	return nil
}

// drawAttempts bounds the redraws of a spec that does not validate; every
// draw the code below makes should validate, so a draw that needs them all
// is a bug of the draw.
const drawAttempts = 100

// Draw returns draw i of the campaign of the given seed: the same spec for
// the same seed, index and limits, whatever other draws were made before
// (each draw has a random source of its own, seeded with seed and i). The
// spec validates; its Host, Progress, Console, Timeout and Retries are
// left for the caller.
//
// What it draws, each choice uniform unless said otherwise:
//   - the kernel series (limits.Kernels) and flavour (limits.Flavours);
//   - 2 to limits.MaxCPUs CPUs on 1 to 4 nodes (at most one per CPU), the
//     CPUs spread evenly (SpreadNodes) or, half the time, cut into
//     contiguous blocks at random points;
//   - isolation: none, isolcpus=, nohz_full= or both, of a random set of
//     the CPUs other than CPU 0; isolcpus= with the flags
//     "domain,managed_irq" half the time; with both, nohz_full= the same
//     set as isolcpus= half the time, another set otherwise;
//   - a load on every CPU: none, a busy loop, a SCHED_OTHER sleeper, a
//     SCHED_FIFO sleeper (weights 3:2:3:2), or one of the timer loads
//     (timerfd, POSIX timer, epoll, TCP, storm; weight 1 each); the period
//     log-uniform in 1..20 ms (to 100 µs), absolute deadlines half the
//     time, a FIFO priority of 1..99;
//   - hrtimer events on the generic kernel half the time (always on RT);
//   - 0 to 3 run-time changes (weights 2:2:1:1) at random times in the
//     middle 70% of the recording, each one the machine's state allows:
//     a CPU other than 0 offline (one outside the partition), an offline
//     CPU without a load back online, an isolated partition of online
//     CPUs that isolcpus= does not isolate (not on 6.1, whose cpuset has
//     not been tried), the partition removed, timer_migration flipped.
func Draw(seed uint64, i int, limits DrawLimits) (Spec, error) {
	l := limits.withDefaults()
	if err := l.Validate(); err != nil {
		return Spec{}, err
	}
	if i < 0 {
		return Spec{}, fmt.Errorf("draw %d: draws count from 0", i)
	}
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	var err error
	for range drawAttempts {
		s := drawOnce(r, l)
		if err = s.Validate(); err == nil {
			return s, nil
		}
	}
	return Spec{}, fmt.Errorf("draw %d of seed %d: no valid spec in %d attempts (last: %v)", i, seed, drawAttempts, err)
}

func drawOnce(r *rand.Rand, l DrawLimits) Spec {
	s := Spec{
		KernelVersion: l.Kernels[r.IntN(len(l.Kernels))],
		Kernel:        l.Flavours[r.IntN(len(l.Flavours))],
		Duration:      l.Duration,
	}
	s.CPUs = 2 + r.IntN(l.MaxCPUs-1)
	s.Nodes = 1 + r.IntN(min(MaxCampaignNodes, s.CPUs))
	if s.Nodes > 1 && r.IntN(2) == 0 {
		s.NodeCPUs = randomBlocks(r, s.CPUs, s.Nodes)
	}

	// Isolation, of CPUs other than CPU 0.
	var iso cpumask.Mask
	var parts []string
	isolcpus, nohzFull := false, false
	switch r.IntN(4) {
	case 1:
		isolcpus = true
	case 2:
		nohzFull = true
	case 3:
		isolcpus, nohzFull = true, true
	}
	if isolcpus {
		iso = randomSubset(r, 1, s.CPUs-1)
		flags := ""
		if r.IntN(2) == 0 {
			flags = "domain,managed_irq,"
		}
		parts = append(parts, "isolcpus="+flags+iso.String())
	}
	if nohzFull {
		nf := iso
		if !isolcpus || r.IntN(2) == 0 {
			nf = randomSubset(r, 1, s.CPUs-1)
		}
		parts = append(parts, "nohz_full="+nf.String())
	}
	s.Cmdline = strings.Join(parts, " ")

	// A load on every CPU.
	timerLoads := s.timerLoads()
	for c := range s.CPUs {
		switch w := r.IntN(15); {
		case w < 3:
		case w < 5:
			s.Busy.Set(c)
		case w < 8:
			s.Sleepers.Set(c)
		case w < 10:
			s.RTSleepers.Set(c)
		default:
			timerLoads[w-10].m.Set(c)
		}
	}
	// Log-uniform, to 100 µs.
	ratio := float64(maxPeriodDraw) / float64(minPeriodDraw)
	p := time.Duration(float64(minPeriodDraw) * math.Pow(ratio, r.Float64()))
	s.Period = max(p.Round(100*time.Microsecond), minPeriodDraw)
	s.Absolute = r.IntN(2) == 0
	s.FIFOPrio = 1 + r.IntN(99)
	if s.Kernel == Generic {
		s.HRTimers = r.IntN(2) == 0
	} else {
		s.HRTimers = true
	}
	if !s.periodic() {
		// Period, Absolute and FIFOPrio mean nothing without
		// sleepers: leave them at their defaults so that the spec
		// says no more than the machine line.
		s.Period, s.Absolute, s.FIFOPrio = 0, false, 0
	}

	s.At = drawChanges(r, &s, iso)
	return s
}

// drawChanges draws the run-time changes of s, iso being the CPUs
// isolcpus= isolates.
func drawChanges(r *rand.Rand, s *Spec, iso cpumask.Mask) []ftrace.Change {
	n := []int{0, 0, 1, 1, 2, 3}[r.IntN(6)]
	if n == 0 {
		return nil
	}
	// Times in the middle 70% of the recording, to 10 ms, in order.
	lo, span := s.Duration*15/100, s.Duration*70/100
	times := make([]time.Duration, n)
	for i := range times {
		times[i] = (lo + time.Duration(r.Int64N(int64(span)+1))).Truncate(10 * time.Millisecond)
	}
	slices.Sort(times)

	loaded := s.Busy.Or(s.Sleepers).Or(s.RTSleepers)
	online := cpumask.Range(0, s.CPUs-1)
	var partition cpumask.Mask
	migration := true
	var out []ftrace.Change
	for _, at := range times {
		var options []ftrace.Change
		// Offline: a CPU other than 0 (x86 cannot take it offline),
		// outside the partition.
		if cand := online.AndNot(partition).AndNot(cpumask.Of(0)); !cand.Empty() {
			options = append(options, ftrace.Change{At: at, Kind: ftrace.ChangeOffline, CPU: pickCPU(r, cand)})
		}
		// Online: an offline CPU without a load (a load's thread left
		// an offline CPU for another and does not come back).
		if cand := cpumask.Range(0, s.CPUs-1).AndNot(online).AndNot(loaded); !cand.Empty() {
			options = append(options, ftrace.Change{At: at, Kind: ftrace.ChangeOnline, CPU: pickCPU(r, cand)})
		}
		switch {
		case !partition.Empty():
			options = append(options, ftrace.Change{At: at, Kind: ftrace.ChangePartition})
		case s.KernelVersion != "6.1":
			if cand := online.AndNot(iso).AndNot(cpumask.Of(0)); !cand.Empty() {
				options = append(options, ftrace.Change{At: at, Kind: ftrace.ChangePartition, CPUs: randomSubsetOf(r, cand)})
			}
		}
		options = append(options, ftrace.Change{At: at, Kind: ftrace.ChangeTimerMigration, On: !migration})

		c := options[r.IntN(len(options))]
		switch c.Kind {
		case ftrace.ChangeOffline:
			online.Clear(c.CPU)
		case ftrace.ChangeOnline:
			online.Set(c.CPU)
		case ftrace.ChangePartition:
			partition = c.CPUs
		case ftrace.ChangeTimerMigration:
			migration = c.On
		}
		out = append(out, c)
	}
	return out
}

// randomBlocks cuts 0..cpus-1 into nodes contiguous non-empty blocks at
// random points.
func randomBlocks(r *rand.Rand, cpus, nodes int) []cpumask.Mask {
	// nodes-1 distinct cut points in 1..cpus-1.
	cuts := r.Perm(cpus - 1)[:nodes-1]
	for i := range cuts {
		cuts[i]++
	}
	slices.Sort(cuts)
	cuts = append(cuts, cpus)
	out := make([]cpumask.Mask, nodes)
	lo := 0
	for i, hi := range cuts {
		out[i] = cpumask.Range(lo, hi-1)
		lo = hi
	}
	return out
}

// randomSubset returns a random non-empty subset of lo..hi.
func randomSubset(r *rand.Rand, lo, hi int) cpumask.Mask {
	return randomSubsetOf(r, cpumask.Range(lo, hi))
}

// randomSubsetOf returns a random non-empty subset of m (not empty): a
// contiguous run of its CPUs half the time, as an administrator writes
// one, else each CPU with probability one half.
func randomSubsetOf(r *rand.Rand, m cpumask.Mask) cpumask.Mask {
	cpus := m.CPUs()
	if r.IntN(2) == 0 {
		a, b := r.IntN(len(cpus)), r.IntN(len(cpus))
		if a > b {
			a, b = b, a
		}
		return cpumask.Of(cpus[a : b+1]...)
	}
	var out cpumask.Mask
	for _, c := range cpus {
		if r.IntN(2) == 0 {
			out.Set(c)
		}
	}
	if out.Empty() {
		out.Set(cpus[r.IntN(len(cpus))])
	}
	return out
}

// pickCPU returns a random CPU of m (not empty).
func pickCPU(r *rand.Rand, m cpumask.Mask) int {
	cpus := m.CPUs()
	return cpus[r.IntN(len(cpus))]
}
