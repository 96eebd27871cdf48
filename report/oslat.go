package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strings"
)

// OslatBuckets is oslat's default number of buckets (BUCKET_SIZE): 1 µs
// each, the last one collecting everything longer.
const OslatBuckets = 32

// OslatThread is what one oslat thread measured: the histogram of its
// samples and the statistics oslat keeps beside it (struct thread in
// src/oslat/oslat.c of rt-tests).
type OslatThread struct {
	CPU        int
	CounterMHz uint64 // counter_mhz: the TSC (or cntvct) frequency
	// Buckets[j] counts the samples of lat/width = j; the last bucket
	// also holds every longer sample ("including overflows").
	Buckets []uint64
	// MinLat and MaxLat are exact per-sample values in µs (floor), not
	// bucket labels. MinLat is math.MaxUint64 before the first sample.
	MinLat, MaxLat uint64
	// OverflowSum is the sum over overflowed samples of index - buckets.
	OverflowSum uint64
	// RuntimeCycles is frc_stop - frc_start in counter cycles.
	RuntimeCycles uint64
}

// NewOslatThread returns an empty thread of n buckets.
func NewOslatThread(cpu int, counterMHz uint64, n int) OslatThread {
	return OslatThread{CPU: cpu, CounterMHz: counterMHz, Buckets: make([]uint64, n), MinLat: math.MaxUint64}
}

// LatUS is oslat's conversion of a sample of ns nanoseconds as of rt-tests
// 2.7 (commit 4aeacf7): the counter cycles it spans, cycles·unit/MHz
// rounded down, in µs. A sub-µs sample therefore counts as 0 and lands in
// the "001 (us)" bucket.
func (t *OslatThread) LatUS(ns int64) uint64 {
	if ns < 0 {
		ns = 0
	}
	return latUS(uint64(ns), t.CounterMHz)
}

// latUS is LatUS's arithmetic. While ns·mhz does not wrap, ⌊⌊ns·mhz/1000⌋/mhz⌋
// is ⌊ns/1000⌋ (nested floor divisions), which a simulator recording a
// sample at every tick of thousands of CPUs gets without a division by a
// variable; where it wraps, oslat's 64-bit arithmetic is kept as it is.
func latUS(ns, mhz uint64) uint64 {
	if hi, _ := bits.Mul64(ns, mhz); hi == 0 && mhz != 0 {
		return ns / 1000
	}
	cycles := ns * mhz / 1000
	return cycles / mhz
}

// Add records count samples of ns nanoseconds each (insert_bucket, with
// the default 1 µs bucket width and no bias).
func (t *OslatThread) Add(ns int64, count uint64) {
	if count == 0 {
		return
	}
	lat := t.LatUS(ns)
	if lat > t.MaxLat {
		t.MaxLat = lat
	}
	if lat < t.MinLat {
		t.MinLat = lat
	}
	n := uint64(len(t.Buckets))
	idx := lat
	if idx >= n {
		t.OverflowSum += (idx - n) * count
		idx = n - 1
	}
	t.Buckets[idx] += count
}

// Samples returns the number of samples recorded.
func (t *OslatThread) Samples() uint64 {
	var n uint64
	for _, c := range t.Buckets {
		n += c
	}
	return n
}

// Oslat is the whole report of one oslat run.
type Oslat struct {
	Version     string // "2.10"
	RuntimeSecs int    // -D, whole seconds
	RTPrio      int    // -f; 0 for the default policy
	CPUList     string // -c as given; "" for "(all cores)"
	MainCPU     int    // -C
	Threads     []OslatThread
	// Quiet (-q) leaves out the settings and the progress lines.
	Quiet bool
}

// bucketLabel is bucket_to_lat with no bias and 1 µs width.
func bucketLabel(j int) float64 { return float64(j + 1) }

// Average is calculate()'s average for thread i, replicating its quirk:
// the overflow sum added to every thread's sum is thread 0's
// (t->overflow_sum, not t[i].overflow_sum), so the averages of the other
// threads are off whenever thread 0 overflowed.
func (r *Oslat) Average(i int) float64 {
	t := &r.Threads[i]
	var sum float64
	var count uint64
	for j, c := range t.Buckets {
		sum += float64(c) * bucketLabel(j)
		count += c
	}
	if count == 0 {
		return 0 // no sample (a run stopped in its warm-up): not NaN, which JSON cannot carry
	}
	sum += float64(r.Threads[0].OverflowSum)
	return sum / float64(count)
}

// Duration is cycles_to_sec: computed in double, returned as a float.
func (t *OslatThread) Duration() float32 {
	return float32(float64(t.RuntimeCycles) / (float64(t.CounterMHz) * 1e6))
}

// WriteOslat prints r exactly as oslat (rt-tests 2.7 or later) prints it:
// the version line, the settings (dump_globals), the progress lines, and
// the summary, one column per thread, tab after each label.
func WriteOslat(w io.Writer, r *Oslat) error {
	if len(r.Threads) == 0 {
		return fmt.Errorf("report: oslat report without threads")
	}
	bw := bufio.NewWriter(w)
	version := r.Version
	if version == "" {
		version = "2.10"
	}
	fmt.Fprintf(bw, "oslat V %s\n", version)
	if !r.Quiet {
		fmt.Fprintf(bw, "Total runtime: \t\t%d seconds\n", r.RuntimeSecs)
		bw.WriteString("Thread priority: \t")
		if r.RTPrio > 0 {
			fmt.Fprintf(bw, "SCHED_FIFO:%d\n", r.RTPrio)
		} else {
			bw.WriteString("default\n")
		}
		list := r.CPUList
		if list == "" {
			list = "(all cores)"
		}
		fmt.Fprintf(bw, "CPU list: \t\t%s\n", list)
		fmt.Fprintf(bw, "CPU for main thread: \t%d\n", r.MainCPU)
		bw.WriteString("Workload: \t\tno\n")
		bw.WriteString("Workload mem: \t\t0 (KiB)\n")
		fmt.Fprintf(bw, "Preheat cores: \t\t%d\n", len(r.Threads))
		bw.WriteString("\n")
		bw.WriteString("Pre-heat for 1 seconds...\n")
		bw.WriteString("Test starts...\n")
		bw.WriteString("Test completed.\n\n")
	}
	field := func(label, end string, val func(t *OslatThread, i int) string) {
		fmt.Fprintf(bw, "%12s:\t", label)
		for i := range r.Threads {
			bw.WriteByte(' ')
			bw.WriteString(val(&r.Threads[i], i))
		}
		bw.WriteString(end)
		bw.WriteByte('\n')
	}
	field("Core", "", func(t *OslatThread, _ int) string { return fmt.Sprint(t.CPU) })
	field("Counter Freq", " (MHz)", func(t *OslatThread, _ int) string { return fmt.Sprint(t.CounterMHz) })
	nb := len(r.Threads[0].Buckets)
	for j := 0; j < nb; j++ {
		end := ""
		if j == nb-1 {
			end = " (including overflows)"
		}
		field(fmt.Sprintf("%03.0f (us)", bucketLabel(j)), end, func(t *OslatThread, _ int) string {
			if j < len(t.Buckets) {
				return fmt.Sprint(t.Buckets[j])
			}
			return "0"
		})
	}
	minLat := func(t *OslatThread) uint64 {
		if t.MinLat == math.MaxUint64 {
			return 0
		}
		return t.MinLat
	}
	field("Minimum", " (us)", func(t *OslatThread, _ int) string { return fmt.Sprintf("%.0f", float64(minLat(t))) })
	field("Average", " (us)", func(_ *OslatThread, i int) string { return fmt.Sprintf("%.3f", r.Average(i)) })
	field("Maximum", " (us)", func(t *OslatThread, _ int) string { return fmt.Sprintf("%.0f", float64(t.MaxLat)) })
	field("Max-Min", " (us)", func(t *OslatThread, _ int) string {
		return fmt.Sprintf("%.0f", float64(t.MaxLat-minLat(t)))
	})
	field("Duration", " (sec)", func(t *OslatThread, _ int) string { return fmt.Sprintf("%.3f", t.Duration()) })
	bw.WriteString("\n")
	return bw.Flush()
}

// MaximumRow formats an oslat "Maximum:" row the way the seed posts quote
// it, with oslat's tab turned into spaces: the first head values, "...",
// and the last value, e.g. "Maximum: 1203 10 3 4 ... 5 (us)". With head <=
// 0 or few enough values it prints them all.
func MaximumRow(max []uint64, head int) string {
	var b strings.Builder
	b.WriteString("Maximum:")
	if head <= 0 || len(max) <= head+1 {
		for _, v := range max {
			fmt.Fprintf(&b, " %d", v)
		}
	} else {
		for _, v := range max[:head] {
			fmt.Fprintf(&b, " %d", v)
		}
		fmt.Fprintf(&b, " ... %d", max[len(max)-1])
	}
	b.WriteString(" (us)")
	return b.String()
}
