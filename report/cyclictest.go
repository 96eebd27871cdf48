package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
)

// CyclicThread is what one cyclictest measurement thread recorded (struct
// thread_stat of src/cyclictest/cyclictest.c): latencies in µs, each the
// wakeup time minus the programmed absolute expiry, truncated (calcdiff).
type CyclicThread struct {
	TID      int   // the thread id printed in "T: 0 ( 1234)"
	Prio     int   // P:
	Interval int64 // I:, µs
	CPU      int   // the CPU the thread was pinned to (JSON "cpu")
	Node     int   // its NUMA node (JSON "node")

	Cycles uint64
	Min    int64 // 1000000 before the first cycle, as cyclictest sets it
	Act    int64
	Max    int64
	Sum    float64 // stat->avg: the sum of every latency, a double

	// Hist[i] counts latencies of i µs; longer ones are overflows, whose
	// cycle numbers (the first len(Hist) of them) are kept in Oflows.
	Hist       []uint64
	OflowCount uint64
	Oflows     []uint64
}

// NewCyclicThread returns a thread with a histogram of buckets 1 µs
// buckets (-h buckets; 0 for none).
func NewCyclicThread(tid, prio int, intervalUS int64, cpu, node, buckets int) CyclicThread {
	t := CyclicThread{TID: tid, Prio: prio, Interval: intervalUS, CPU: cpu, Node: node, Min: 1000000}
	if buckets > 0 {
		t.Hist = make([]uint64, buckets)
	}
	return t
}

// Sample records one latency of diff µs (the statistics part of
// timerthread, then hist_sample).
func (t *CyclicThread) Sample(diff int64) {
	if diff < t.Min {
		t.Min = diff
	}
	if diff > t.Max {
		t.Max = diff
	}
	t.Act = diff
	t.Sum += float64(diff)
	cycle := t.Cycles
	t.Cycles++
	if t.Hist == nil {
		return
	}
	if diff >= 0 && diff < int64(len(t.Hist)) {
		t.Hist[diff]++
		return
	}
	if uint64(len(t.Oflows)) < uint64(len(t.Hist)) {
		t.Oflows = append(t.Oflows, cycle)
	}
	t.OflowCount++
}

// Avg is the integer average cyclictest prints: (long)(avg/cycles).
func (t *CyclicThread) Avg() int64 {
	if t.Cycles == 0 {
		return 0
	}
	return int64(t.Sum / float64(t.Cycles))
}

// Cyclictest is the report of one cyclictest run.
type Cyclictest struct {
	Threads []CyclicThread
	// Histogram is -h: the number of 1 µs buckets; 0 prints no
	// histogram block.
	Histogram int
}

// WriteCyclictest prints the final frame of cyclictest's display, one
// "T:" line per thread in its exact format
//
//	T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld Max:%8ld
//
// and then, with a histogram, the block print_hist writes at exit: the
// non-zero buckets ("%06d " then "%06lu" per thread, tab-separated), the
// "# Min/Avg/Max Latencies:" rows, the overflow counts and the cycle
// numbers of the overflows.
func WriteCyclictest(w io.Writer, r *Cyclictest) error {
	bw := bufio.NewWriter(w)
	for i := range r.Threads {
		t := &r.Threads[i]
		fmt.Fprintf(bw, "T:%2d (%5d) P:%2d I:%d C:%7d Min:%7d Act:%5d Avg:%5d Max:%8d\n",
			i, t.TID, t.Prio, t.Interval, t.Cycles, t.Min, t.Act, t.Avg(), t.Max)
	}
	if r.Histogram > 0 {
		bw.WriteString("# Histogram\n")
		for b := 0; b < r.Histogram; b++ {
			var sum uint64
			for i := range r.Threads {
				sum += bucket(&r.Threads[i], b)
			}
			if sum == 0 {
				continue
			}
			fmt.Fprintf(bw, "%06d ", b)
			for i := range r.Threads {
				if i != 0 {
					bw.WriteByte('\t')
				}
				fmt.Fprintf(bw, "%06d", bucket(&r.Threads[i], b))
			}
			bw.WriteByte('\n')
		}
		row := func(label string, v func(t *CyclicThread) uint64) {
			bw.WriteString(label)
			for i := range r.Threads {
				fmt.Fprintf(bw, " %05d", v(&r.Threads[i]))
			}
			bw.WriteByte('\n')
		}
		row("# Min Latencies:", func(t *CyclicThread) uint64 { return uint64(t.Min) })
		row("# Avg Latencies:", func(t *CyclicThread) uint64 { return uint64(t.Avg()) })
		row("# Max Latencies:", func(t *CyclicThread) uint64 { return uint64(t.Max) })
		row("# Histogram Overflows:", func(t *CyclicThread) uint64 { return t.OflowCount })
		bw.WriteString("# Histogram Overflow at cycle number:\n")
		for i := range r.Threads {
			t := &r.Threads[i]
			fmt.Fprintf(bw, "# Thread %d: ", i)
			for j, c := range t.Oflows {
				if j != 0 {
					bw.WriteByte(' ')
				}
				fmt.Fprintf(bw, "%05d", c)
			}
			if t.OflowCount > uint64(len(t.Oflows)) && uint64(len(t.Oflows)) >= uint64(r.Histogram) {
				fmt.Fprintf(bw, " # %05d others", t.OflowCount-uint64(r.Histogram))
			}
			bw.WriteByte('\n')
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func bucket(t *CyclicThread, b int) uint64 {
	if b < len(t.Hist) {
		return t.Hist[b]
	}
	return 0
}

// MaxUS returns the largest Max over the threads.
func (r *Cyclictest) MaxUS() int64 {
	m := int64(math.MinInt64)
	for i := range r.Threads {
		m = max(m, r.Threads[i].Max)
	}
	return m
}
