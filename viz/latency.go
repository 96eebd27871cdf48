package viz

import (
	"fmt"
	"math"
	"time"

	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// Latency is what a measuring tool recorded, per thread (one per CPU).
type Latency struct {
	Tool    string // "oslat", "cyclictest"
	Threads []LatencyThread
	// FirstUS is the label of bucket 0 in µs: oslat counts a sample of
	// [j, j+1) µs in bucket j and labels it j+1; cyclictest counts a
	// latency of i µs in bucket i.
	FirstUS int
}

// LatencyThread is one thread's histogram and statistics.
type LatencyThread struct {
	CPU int
	// Buckets are 1 µs wide; with Overflow the last one also holds every
	// longer sample. Nil when the tool kept no histogram.
	Buckets  []uint64
	Overflow bool
	Samples  uint64
	// MinUS, AvgUS, MaxUS are the tool's own figures.
	MinUS, AvgUS, MaxUS float64
}

// MaxUS returns every thread's maximum by CPU, for a summary.
func (l *Latency) MaxUS() map[int]float64 {
	if l == nil {
		return nil
	}
	out := make(map[int]float64, len(l.Threads))
	for _, t := range l.Threads {
		out[t.CPU] = max(out[t.CPU], t.MaxUS)
	}
	return out
}

// OslatLatency returns oslat's histograms.
func OslatLatency(r *report.Oslat) *Latency {
	l := &Latency{Tool: "oslat", FirstUS: 1}
	for i := range r.Threads {
		t := &r.Threads[i]
		lt := LatencyThread{CPU: t.CPU, Buckets: t.Buckets, Overflow: true, Samples: t.Samples(),
			AvgUS: r.Average(i), MaxUS: float64(t.MaxLat)}
		if lt.Samples > 0 {
			lt.MinUS = float64(t.MinLat)
		}
		l.Threads = append(l.Threads, lt)
	}
	return l
}

// CyclictestLatency returns cyclictest's histograms (when it kept them,
// -h) and statistics.
func CyclictestLatency(r *report.Cyclictest) *Latency {
	l := &Latency{Tool: "cyclictest", FirstUS: 0}
	for i := range r.Threads {
		t := &r.Threads[i]
		lt := LatencyThread{CPU: t.CPU, Buckets: t.Hist, Overflow: false, Samples: t.Cycles, MaxUS: float64(t.Max)}
		if t.Cycles > 0 {
			lt.MinUS, lt.AvgUS = float64(t.Min), t.Sum/float64(t.Cycles)
		}
		if len(t.Hist) > 0 && t.OflowCount > 0 {
			// cyclictest counts overflows apart; shown in the last bucket.
			lt.Buckets = append(append([]uint64(nil), t.Hist...), t.OflowCount)
			lt.Overflow = true
		}
		l.Threads = append(l.Threads, lt)
	}
	return l
}

// SimExtras returns what a simulated run adds to its picture: the
// measured window, the latency its oslat or cyclictest recorded, and the
// isolated partition (which the trace's machine line does not carry;
// apply it with Timeline.SetPartition).
func SimExtras(res *sim.Result, title string) Extras {
	c := &res.Config
	from := int64(c.Warmup)
	x := Extras{
		Title:  title,
		Window: Window{From: from, To: from + res.Duration},
		WindowNote: fmt.Sprintf("the measured %s after a %s warm-up, as the report counts; the lanes show the whole run",
			time.Duration(res.Duration), c.Warmup),
	}
	for _, w := range res.Workloads {
		switch r := w.(type) {
		case *workload.OslatResult:
			x.Latency = OslatLatency(&r.Report)
		case *workload.CyclictestResult:
			x.Latency = CyclictestLatency(&r.Report)
		}
	}
	return x
}

// bucketsTotal adds up every thread's buckets.
func (l *Latency) bucketsTotal() (sum []uint64, overflow bool) {
	for _, t := range l.Threads {
		for len(sum) < len(t.Buckets) {
			sum = append(sum, 0)
		}
		for i, n := range t.Buckets {
			sum[i] += n
		}
		overflow = overflow || t.Overflow && len(t.Buckets) == len(sum)
	}
	return sum, overflow
}

func log10p1(n uint64) float64 { return math.Log10(float64(n) + 1) }
