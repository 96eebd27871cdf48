package tmigr

import (
	"math"
	"time"

	"github.com/tmigr/tmigr/internal/engine"
)

// Stats describes one worker.
type Stats struct {
	CPU      int
	TID      int // its thread's id
	Online   bool
	Isolated bool

	// Wakeups counts the worker's sleeps in the kernel that ended: its
	// OS-level wake-ups (a polling worker has none).
	Wakeups uint64
	// Ticks counts the ticks the worker ran.
	Ticks uint64
	// Timers counts the timer functions (wheel and hrtimer) and sleeper
	// wake-ups run on this worker; Remote those of them that were other
	// workers' global timers, run here as migrator, and RemoteFor how many
	// for which worker. RemoteTime is the time they took.
	Timers     uint64
	Remote     uint64
	RemoteFor  map[int]uint64
	RemoteTime time.Duration
	// Tasks counts the tasks run.
	Tasks uint64
	// Panics counts recovered panics of timer functions and tasks.
	Panics uint64
	// Hangs counts hrtimer interrupts that gave up after three passes.
	Hangs uint64
	// Rescues counts the times another thread ran this worker's overdue
	// timers because its thread did not run in time
	// (internal/engine/rescue.go); Crowded those of them that found its
	// thread runnable, waiting for its CPU (other threads held it), rather
	// than asleep (its own timer late, as a VM's often are).
	Rescues, Crowded uint64

	// Busy and Idle split the worker's life since Start (an offline
	// worker is idle).
	Busy, Idle time.Duration
	// CPUTime is the CPU time its thread has used (its per-thread CPU
	// clock: the account getrusage(RUSAGE_THREAD) reports).
	CPUTime time.Duration

	// Lateness is the distribution of how late timers run here: from the
	// time asked for to the start of the function.
	Lateness Histogram
}

// Stats returns a snapshot of every worker's statistics, in CPU order.
func (rt *Runtime) Stats() []Stats {
	if !rt.started() {
		return nil
	}
	es := rt.e.Stats()
	out := make([]Stats, len(es))
	for i, s := range es {
		out[i] = Stats{
			CPU:        s.CPU,
			TID:        s.TID,
			Online:     s.Online,
			Isolated:   s.Isolated,
			Wakeups:    s.Wakeups,
			Ticks:      s.Ticks,
			Timers:     s.Timers,
			Remote:     s.Remote,
			RemoteFor:  s.RemoteFor,
			RemoteTime: s.RemoteTime,
			Tasks:      s.Tasks,
			Panics:     s.Panics,
			Hangs:      s.Hangs,
			Rescues:    s.Rescues,
			Crowded:    s.Crowded,
			Busy:       s.Busy,
			Idle:       s.Idle,
			CPUTime:    s.CPUTime,
			Lateness:   Histogram{s.Lateness},
		}
	}
	return out
}

// Histogram is a distribution of durations (a snapshot), with about 3%
// resolution.
type Histogram struct {
	s engine.Snapshot // the worker's, read at a moment
}

// Count returns the number of values recorded.
func (h Histogram) Count() uint64 { return h.s.N }

// Max returns the largest value recorded, exactly.
func (h Histogram) Max() time.Duration { return h.s.Max }

// Mean returns the mean.
func (h Histogram) Mean() time.Duration {
	if h.s.N == 0 {
		return 0
	}
	return h.s.Sum / time.Duration(h.s.N)
}

// Quantile returns a value at or above the q-quantile (0 ≤ q ≤ 1) of the
// values recorded, within the histogram's resolution and never above Max.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.s.N == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.s.N)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for _, b := range h.s.Buckets {
		if seen += b.Count; seen >= rank {
			return min(time.Duration(b.Upper), h.s.Max)
		}
	}
	return h.s.Max
}
