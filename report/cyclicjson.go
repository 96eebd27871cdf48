package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
)

// CyclicThreadJSON is one thread of cyclictest's --json file (rt-tests
// 2.4 and later, src/cyclictest/cyclictest.c write_stats): the non-zero
// histogram buckets keyed by µs, and the thread's statistics.
type CyclicThreadJSON struct {
	Histogram map[string]uint64 `json:"histogram"`
	Cycles    uint64            `json:"cycles"`
	Min       int64             `json:"min"`
	Max       int64             `json:"max"`
	Avg       float64           `json:"avg"` // printed with two decimals
	CPU       int               `json:"cpu"`
	Node      int               `json:"node"`
}

// JSON returns the thread as cyclictest's --json file holds it.
func (t *CyclicThread) JSON() CyclicThreadJSON {
	j := CyclicThreadJSON{Histogram: map[string]uint64{}, Cycles: t.Cycles, Min: t.Min, Max: t.Max, CPU: t.CPU, Node: t.Node}
	if t.Cycles > 0 {
		j.Avg = math.Round(t.Sum/float64(t.Cycles)*100) / 100
	} else {
		j.Min = 0
	}
	for us, n := range t.Hist {
		if n > 0 {
			j.Histogram[strconv.Itoa(us)] = n
		}
	}
	return j
}

// nanRE matches a value cyclictest prints as C's nan.
var nanRE = regexp.MustCompile(`(:\s*)-?nan\b`)

// ReadCyclictestJSON reads the file cyclictest --json=FILE writes, with
// the number of histogram buckets it ran with (its -h; the file does not
// say), into a report: the histogram, the counts, and as overflows the
// cycles beyond the buckets. The file does not hold the overflows' cycle
// numbers, the last latency (Act: 0), the thread ids or priorities.
func ReadCyclictestJSON(r io.Reader, buckets int) (*Cyclictest, error) {
	var f struct {
		NumThreads *int                        `json:"num_threads"`
		Thread     map[string]CyclicThreadJSON `json:"thread"`
	}
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("cyclictest JSON: %w", err)
	}
	// write_stats prints a thread's average with "%.2f" of its sum over
	// its cycles: a thread that never woke (a loaded machine, a short run)
	// gets "-nan", which is not JSON. Its average is no figure: null.
	b = nanRE.ReplaceAll(b, []byte("${1}null"))
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("cyclictest JSON: %w", err)
	}
	if f.NumThreads == nil || f.Thread == nil {
		return nil, errors.New(`cyclictest JSON: no "num_threads" and "thread": not cyclictest's --json output`)
	}
	if *f.NumThreads != len(f.Thread) || *f.NumThreads > 1<<16 {
		return nil, fmt.Errorf("cyclictest JSON: num_threads %d, but %d threads", *f.NumThreads, len(f.Thread))
	}
	if buckets < 0 || buckets > 1_000_000 {
		return nil, fmt.Errorf("cyclictest JSON: %d histogram buckets (cyclictest allows up to 1000000)", buckets)
	}
	rep := &Cyclictest{Histogram: buckets}
	for i := 0; i < *f.NumThreads; i++ {
		j, ok := f.Thread[strconv.Itoa(i)]
		if !ok {
			return nil, fmt.Errorf("cyclictest JSON: no thread %d", i)
		}
		t := NewCyclicThread(0, 0, 0, j.CPU, j.Node, buckets)
		t.Cycles, t.Min, t.Max = j.Cycles, j.Min, j.Max // Act, the last latency, is not in the file: 0
		t.Sum = j.Avg * float64(j.Cycles)
		var in uint64
		keys := make([]string, 0, len(j.Histogram))
		for k := range j.Histogram {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			us, err := strconv.Atoi(k)
			if err != nil || us < 0 || us >= buckets {
				return nil, fmt.Errorf("cyclictest JSON: thread %d: histogram bucket %q outside 0-%d", i, k, buckets-1)
			}
			n := j.Histogram[k]
			t.Hist[us] = n
			if in += n; in < n {
				return nil, fmt.Errorf("cyclictest JSON: thread %d: histogram overflows", i)
			}
		}
		if in > j.Cycles {
			return nil, fmt.Errorf("cyclictest JSON: thread %d: %d samples in the histogram, %d cycles", i, in, j.Cycles)
		}
		t.OflowCount = j.Cycles - in
		rep.Threads = append(rep.Threads, t)
	}
	return rep, nil
}

// Quantile returns the latency in µs at or below which the fraction q of
// the thread's cycles fell (the smallest bucket whose cumulative count
// reaches q of the cycles), and false when that is beyond the histogram
// (an overflow: then it returns Max, which bounds it) or nothing was
// counted.
func (t *CyclicThread) Quantile(q float64) (int64, bool) {
	if t.Cycles == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(t.Cycles)))
	rank = max(rank, 1)
	var seen uint64
	for us, n := range t.Hist {
		if seen += n; seen >= rank {
			return int64(us), true
		}
	}
	return t.Max, false
}
