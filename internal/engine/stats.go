package engine

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

type workerStats struct {
	wakeups, ticks, timers, remote, tasks, panics, hangs, rescues, crowded atomic.Uint64
	remoteNs, idleNs                                                       atomic.Int64
	remoteFor                                                              []atomic.Uint64
	late                                                                   Histogram
}

func (s *workerStats) init(ncpu int) { s.remoteFor = make([]atomic.Uint64, ncpu) }

// Stats is what one worker counted, read at a moment (the public API's
// Stats says what each is).
type Stats struct {
	CPU, TID                                                               int
	Online, Isolated                                                       bool
	Wakeups, Ticks, Timers, Remote, Tasks, Panics, Hangs, Rescues, Crowded uint64
	// RemoteFor is by CPU; nil if the worker ran no other worker's timer.
	RemoteFor  map[int]uint64
	RemoteTime time.Duration
	Busy, Idle time.Duration
	CPUTime    time.Duration
	Lateness   Snapshot
}

// Stats returns a snapshot of every worker's statistics, in CPU order.
func (e *Engine) Stats() []Stats {
	now := e.clk.Now()
	iso := e.isolated.Load()
	out := make([]Stats, 0, len(e.order))
	for _, w := range e.order {
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
			Lateness:   w.st.late.Snapshot(),
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
		life := now - e.start
		s.Idle = time.Duration(min(idle, life))
		s.Busy = time.Duration(life) - s.Idle
		if s.TID > 0 && !e.closed.Load() {
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

// Histogram is a worker's distribution of durations, recorded by the
// worker and read by anyone (Snapshot).
type Histogram struct {
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

// Record adds v, ns (a negative v counts as 0).
func (h *Histogram) Record(v int64) {
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

// Snapshot is a Histogram read at a moment: its non-empty buckets, in
// increasing order, the number of values, their sum and the largest.
type Snapshot struct {
	Buckets []Bucket
	N       uint64
	Sum     time.Duration
	Max     time.Duration
}

// Bucket is a histogram bucket: Count values at most Upper ns, above the
// previous bucket's Upper.
type Bucket struct {
	Upper int64
	Count uint64
}

// Snapshot reads the histogram.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			s.Buckets = append(s.Buckets, Bucket{histUpper(i), c})
			s.N += c
		}
	}
	s.Sum = time.Duration(h.sum.Load())
	s.Max = time.Duration(h.max.Load())
	return s
}
