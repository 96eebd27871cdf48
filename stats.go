package tmigr

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
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
	// timers because its thread did not run in time (rescue.go); Crowded
	// those of them that found its thread runnable, waiting for its CPU
	// (other threads held it), rather than asleep (its own timer late, as a
	// VM's often are).
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

type workerStats struct {
	wakeups, ticks, timers, remote, tasks, panics, hangs, rescues, crowded atomic.Uint64
	remoteNs, idleNs                                                       atomic.Int64
	remoteFor                                                              []atomic.Uint64
	late                                                                   histogram
}

func (s *workerStats) init(ncpu int) { s.remoteFor = make([]atomic.Uint64, ncpu) }

// Stats returns a snapshot of every worker's statistics, in CPU order.
func (rt *Runtime) Stats() []Stats {
	if !rt.started() {
		return nil
	}
	now := rt.clk.now()
	iso := rt.isolated.Load()
	out := make([]Stats, 0, len(rt.order))
	for _, w := range rt.order {
		s := Stats{
			CPU:        w.cpu,
			TID:        int(w.tid.Load()),
			Online:     w.online.Load(),
			Isolated:   iso.Test(w.cpu),
			Wakeups:    w.st.wakeups.Load(),
			Ticks:      w.st.ticks.Load(),
			Timers:     w.st.timers.Load(),
			Remote:     w.st.remote.Load(),
			RemoteTime: time.Duration(w.st.remoteNs.Load()),
			Tasks:      w.st.tasks.Load(),
			Panics:     w.st.panics.Load(),
			Hangs:      w.st.hangs.Load(),
			Rescues:    w.st.rescues.Load(),
			Crowded:    w.st.crowded.Load(),
			Lateness:   w.st.late.snapshot(),
		}
		for c := range w.st.remoteFor {
			if n := w.st.remoteFor[c].Load(); n > 0 {
				if s.RemoteFor == nil {
					s.RemoteFor = map[int]uint64{}
				}
				s.RemoteFor[c] = n
			}
		}
		idle := w.st.idleNs.Load()
		if since := w.idleSince.Load(); since != 0 && now > since {
			idle += now - since
		}
		life := now - rt.start
		s.Idle = time.Duration(min(idle, life))
		s.Busy = time.Duration(life) - s.Idle
		if s.TID > 0 && !rt.closed.Load() {
			s.CPUTime, _ = osthread.ThreadCPUTime(s.TID)
		}
		out = append(out, s)
	}
	return out
}

// The histogram keeps 32 sub-buckets per power of two (about 3%
// resolution) for values from 1 ns to 2^63 ns, in atomic counters, so a
// worker records without a lock and Stats reads while it does.
const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits) * histSub // values below 2^63
)

type histogram struct {
	counts [histBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Int64
	max    atomic.Int64
}

func histIndex(v int64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - histSubBits // ≥ 1
	return e*histSub + int(uint64(v)>>uint(e-1)) - histSub
}

// histUpper returns the largest value of bucket i.
func histUpper(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i / histSub
	lo := uint64(i%histSub+histSub) << uint(e-1)
	hi := lo + 1<<uint(e-1) - 1
	if hi > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(hi)
}

func (h *histogram) record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

func (h *histogram) snapshot() Histogram {
	var s Histogram
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			s.buckets = append(s.buckets, bucket{histUpper(i), c})
			s.n += c
		}
	}
	s.sum = time.Duration(h.sum.Load())
	s.max = time.Duration(h.max.Load())
	return s
}

// Histogram is a distribution of durations (a snapshot), with about 3%
// resolution.
type Histogram struct {
	buckets []bucket
	n       uint64
	sum     time.Duration
	max     time.Duration
}

type bucket struct {
	upper int64
	count uint64
}

// Count returns the number of values recorded.
func (h Histogram) Count() uint64 { return h.n }

// Max returns the largest value recorded, exactly.
func (h Histogram) Max() time.Duration { return h.max }

// Mean returns the mean.
func (h Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns a value at or above the q-quantile (0 ≤ q ≤ 1) of the
// values recorded, within the histogram's resolution and never above Max.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for _, b := range h.buckets {
		if seen += b.count; seen >= rank {
			return min(time.Duration(b.upper), h.max)
		}
	}
	return h.max
}
