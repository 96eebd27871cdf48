package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file cyclictest 2.4 wrote (cyclictest -q -t2 -a 0-1 -i 1000 -l 300
// -h 60 --json=FILE, on a loaded 2-CPU VM) reads into its counts.
func TestReadCyclictestJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "cyclictest-2.4.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadCyclictestJSON(bytes.NewReader(b), 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Threads) != 2 || r.Histogram != 60 {
		t.Fatalf("%d threads, %d buckets", len(r.Threads), r.Histogram)
	}
	for i, want := range []struct {
		min, max, avg, in int64
	}{{13, 3473, 199, 5}, {25, 6074, 226, 15}} {
		th := &r.Threads[i]
		var in uint64
		for _, n := range th.Hist {
			in += n
		}
		if th.Cycles != 300 || th.Min != want.min || th.Max != want.max || th.Avg() != want.avg || int64(in) != want.in || th.OflowCount != 300-in || th.CPU != i {
			t.Errorf("thread %d: %+v", i, th)
		}
	}
	// Written as cyclictest's JSON again, a thread is what the file held.
	var f struct {
		Thread map[string]CyclicThreadJSON `json:"thread"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"0", "1"} {
		got, want := r.Threads[i].JSON(), f.Thread[key]
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if !bytes.Equal(gb, wb) {
			t.Errorf("thread %s: %s, file %s", key, gb, wb)
		}
	}
	var text bytes.Buffer
	if err := WriteCyclictest(&text, r); err != nil || !strings.Contains(text.String(), "# Max Latencies: 03473 06074\n") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

func TestReadCyclictestJSONBad(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, "not cyclictest's --json output"},
		{`{"num_threads": 2, "thread": {"0": {}}}`, "num_threads 2, but 1 threads"},
		{`{"num_threads": 1, "thread": {"1": {}}}`, "no thread 0"},
		{`{"num_threads": 1, "thread": {"0": {"histogram": {"70": 1}, "cycles": 1}}}`, `bucket "70" outside 0-59`},
		{`{"num_threads": 1, "thread": {"0": {"histogram": {"x": 1}, "cycles": 1}}}`, `bucket "x"`},
		{`{"num_threads": 1, "thread": {"0": {"histogram": {"3": 5}, "cycles": 2}}}`, "5 samples in the histogram, 2 cycles"},
		{`{"num_threads": 1, "thread": {"0": {"histogram": {"3": 18446744073709551615, "4": 2}, "cycles": 2}}}`, "overflows"},
		{`{"num_threads": 1, "thread"`, "cyclictest JSON: "},
	} {
		if _, err := ReadCyclictestJSON(strings.NewReader(tc.in), 60); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestCyclicQuantile(t *testing.T) {
	th := NewCyclicThread(0, 0, 1000, 0, 0, 10)
	for _, us := range []int64{1, 2, 2, 3, 3, 3, 4, 4, 4, 4} {
		th.Sample(us)
	}
	for q, want := range map[float64]int64{0.1: 1, 0.3: 2, 0.5: 3, 0.6: 3, 0.61: 4, 1: 4} {
		if got, ok := th.Quantile(q); !ok || got != want {
			t.Errorf("Quantile(%g) = %d, %v; want %d", q, got, ok, want)
		}
	}
	th.Sample(50) // beyond the 10 buckets
	if got, ok := th.Quantile(1); ok || got != 50 {
		t.Errorf("an overflowing quantile: %d, %v; want the max 50 and false", got, ok)
	}
	empty := NewCyclicThread(0, 0, 0, 0, 0, 10)
	if _, ok := empty.Quantile(0.5); ok {
		t.Error("a quantile of nothing")
	}
}

func FuzzReadCyclictestJSON(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "cyclictest-2.4.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, 60)
	f.Add([]byte(`{"num_threads": 1, "thread": {"0": {"histogram": {"3": 1}, "cycles": 4, "min": 3, "max": 90, "avg": 30.5}}}`), 10)
	f.Add([]byte(`{"num_threads": 0, "thread": {}}`), 0)
	f.Fuzz(func(t *testing.T, data []byte, buckets int) {
		if buckets > 4096 {
			return // the histograms' memory, not the parser, would be tested
		}
		r, err := ReadCyclictestJSON(bytes.NewReader(data), buckets)
		if err != nil {
			return
		}
		for i := range r.Threads {
			th := &r.Threads[i]
			var in uint64
			for _, n := range th.Hist {
				in += n
			}
			if len(th.Hist) != buckets || in+th.OflowCount != th.Cycles {
				t.Fatalf("thread %d: %d buckets (want %d), %d + %d overflows != %d cycles", i, len(th.Hist), buckets, in, th.OflowCount, th.Cycles)
			}
			th.Quantile(0.99)
		}
		WriteCyclictest(&bytes.Buffer{}, r)
	})
}

// TestReadCyclictestJSONNaN: a thread that never woke prints its average
// as C's "-nan" (write_stats divides by zero cycles), which is not JSON;
// the file is read all the same, that thread with no cycles.
func TestReadCyclictestJSONNaN(t *testing.T) {
	in := `{"num_threads": 2, "thread": {"0": {"histogram": {"3": 2}, "cycles": 2, "min": 3, "max": 3, "avg": 3.00, "cpu": 0, "node": 0},
"1": {"histogram": {}, "cycles": 0, "min": 1000000, "max": 0, "avg": -nan, "cpu": 1, "node": 0}}}`
	rep, err := ReadCyclictestJSON(strings.NewReader(in), 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Threads) != 2 || rep.Threads[0].Cycles != 2 || rep.Threads[1].Cycles != 0 {
		t.Errorf("threads %+v", rep.Threads)
	}
}
