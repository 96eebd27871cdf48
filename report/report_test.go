package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// oslatFixture is a three-thread run: thread 0 saw one 40 µs spike (an
// overflow of the 32 buckets), thread 1 a 1203 µs one, thread 2 nothing
// but its tick.
func oslatFixture() *Oslat {
	r := &Oslat{Version: "2.10", RuntimeSecs: 62, CPUList: "1-3", MainCPU: 0}
	for i, spike := range []int64{40_000, 1_203_500, 0} {
		th := NewOslatThread(i+1, 2400, OslatBuckets)
		th.Add(35, 1_000_000)     // uninterrupted loops: 0 µs
		th.Add(2_600, 15_500)     // ticks: 2 µs
		th.Add(3_100+int64(i), 7) // slower ticks: 3 µs
		if spike > 0 {
			th.Add(spike, 1)
		}
		th.RuntimeCycles = 62 * 2400 * 1_000_000
		r.Threads = append(r.Threads, th)
	}
	return r
}

func TestOslatGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteOslat(&b, oslatFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "oslat.golden", b.Bytes())
	// The exact row shapes of oslat's putfield: "%12s:\t" then " value".
	for _, want := range []string{
		"oslat V 2.10\n",
		"Total runtime: \t\t62 seconds\n",
		"        Core:\t 1 2 3\n",
		"Counter Freq:\t 2400 2400 2400 (MHz)\n",
		"    001 (us):\t 1000000 1000000 1000000\n",
		"    032 (us):\t 1 1 0 (including overflows)\n",
		"     Maximum:\t 40 1203 3 (us)\n",
		"    Duration:\t 62.000 62.000 62.000 (sec)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestOslatQuiet(t *testing.T) {
	r := oslatFixture()
	r.Quiet = true
	var b bytes.Buffer
	if err := WriteOslat(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Total runtime") || !strings.HasPrefix(b.String(), "oslat V 2.10\n        Core:") {
		t.Errorf("quiet report:\n%s", b.String())
	}
}

func TestOslatLatFloors(t *testing.T) {
	th := NewOslatThread(0, 2994, 32)
	for _, c := range []struct {
		ns   int64
		want uint64
	}{{0, 0}, {35, 0}, {999, 0}, {1000, 1}, {1999, 1}, {1_203_999, 1203}, {-5, 0}} {
		if got := th.LatUS(c.ns); got != c.want {
			t.Errorf("LatUS(%d) = %d, want %d (rt-tests >= 2.7 rounds down)", c.ns, got, c.want)
		}
	}
}

func TestOslatOverflowAndAverageQuirk(t *testing.T) {
	r := oslatFixture()
	t0, t1 := &r.Threads[0], &r.Threads[1]
	if t0.OverflowSum != 40-32 || t1.OverflowSum != 1203-32 {
		t.Fatalf("overflow sums %d %d", t0.OverflowSum, t1.OverflowSum)
	}
	if t0.MaxLat != 40 || t1.MaxLat != 1203 || t0.MinLat != 0 {
		t.Fatalf("min/max %d %d %d", t0.MinLat, t0.MaxLat, t1.MaxLat)
	}
	// calculate(): every thread's sum gets thread 0's overflow sum.
	n := float64(1_000_000 + 15_500 + 7 + 1)
	want1 := (1_000_000*1 + 15_500*3 + 7*4 + 1*32 + float64(t0.OverflowSum)) / n
	if got := r.Average(1); math.Abs(got-want1) > 1e-12 {
		t.Errorf("Average(1) = %v, want %v (thread 0's overflow sum)", got, want1)
	}
}

func TestMaximumRow(t *testing.T) {
	for _, c := range []struct {
		max  []uint64
		head int
		want string
	}{
		{[]uint64{1203, 10, 3, 4, 7, 5}, 4, "Maximum: 1203 10 3 4 ... 5 (us)"},
		{[]uint64{10, 4, 3}, 4, "Maximum: 10 4 3 (us)"},
		{[]uint64{10, 4, 3, 4, 3}, 4, "Maximum: 10 4 3 4 3 (us)"},
		{[]uint64{10, 4, 3, 4, 3, 9}, 0, "Maximum: 10 4 3 4 3 9 (us)"},
	} {
		if got := MaximumRow(c.max, c.head); got != c.want {
			t.Errorf("MaximumRow(%v, %d) = %q, want %q", c.max, c.head, got, c.want)
		}
	}
}

func cyclicFixture() *Cyclictest {
	r := &Cyclictest{Histogram: 10}
	a := NewCyclicThread(1000, 99, 1000, 0, 0, 10)
	b := NewCyclicThread(1001, 99, 1000, 1, 0, 10)
	for _, d := range []int64{3, 4, 4, 5, 9, 12} {
		a.Sample(d)
	}
	for _, d := range []int64{2, 2, 3, 30} {
		b.Sample(d)
	}
	r.Threads = []CyclicThread{a, b}
	return r
}

func TestCyclictestGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteCyclictest(&b, cyclicFixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "cyclictest.golden", b.Bytes())
	for _, want := range []string{
		"T: 0 ( 1000) P:99 I:1000 C:      6 Min:      3 Act:   12 Avg:    6 Max:      12\n",
		"T: 1 ( 1001) P:99 I:1000 C:      4 Min:      2 Act:   30 Avg:    9 Max:      30\n",
		"000004 000002\t000000\n",
		"# Max Latencies: 00012 00030\n",
		"# Histogram Overflows: 00001 00001\n",
		"# Thread 0: 00005\n",
		"# Thread 1: 00003\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	// Buckets where every thread has 0 are left out (rt-tests >= 2.7).
	if strings.Contains(b.String(), "000000 000000\t000000") || strings.Contains(b.String(), "000001 ") {
		t.Errorf("empty bucket printed:\n%s", b.String())
	}
}

func TestCyclicOverflowLog(t *testing.T) {
	th := NewCyclicThread(1, 99, 1000, 0, 0, 2)
	for i := 0; i < 5; i++ {
		th.Sample(7)
	}
	r := &Cyclictest{Threads: []CyclicThread{th}, Histogram: 2}
	var b bytes.Buffer
	if err := WriteCyclictest(&b, r); err != nil {
		t.Fatal(err)
	}
	// Two cycle numbers fit the log (its size is the bucket count), the
	// other three are "others".
	if !strings.Contains(b.String(), "# Thread 0: 00000 00001 # 00003 others\n") {
		t.Errorf("overflow log:\n%s", b.String())
	}
}

func TestNoHistogram(t *testing.T) {
	r := cyclicFixture()
	r.Histogram = 0
	var b bytes.Buffer
	if err := WriteCyclictest(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "#") || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("without -h only the T: lines:\n%s", b.String())
	}
}

func TestCPUCountsJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		C CPUCounts `json:"c"`
		E CPUCounts `json:"e"`
	}{C: CPUCounts{{2, 5}, {10, 1}}, E: CPUCounts{}})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"c":{"2":5,"10":1},"e":{}}` {
		t.Errorf("got %s", b)
	}
	var back map[string]map[string]uint64
	if err := json.Unmarshal(b, &back); err != nil || back["c"]["10"] != 1 {
		t.Errorf("not valid JSON: %v %v", err, back)
	}
	if s := (CPUCounts{{0, 12}, {32, 3}}).String(); s != "0:12,32:3" {
		t.Errorf("String = %q", s)
	}
}

func TestMigrationSummaryGolden(t *testing.T) {
	r := &Run{
		Machine: Machine{CPUs: 3, Nodes: 1, HZ: 250, Isolcpus: "1-2"},
		Policy:  "pull", DurationS: 62, Seed: 7, Events: 123,
		CPUs: []CPU{
			{CPU: 0, Wakeups: 12, BusyPct: 0.01},
			{CPU: 1, Ticks: 15500, BusyPct: 100, RemoteExpired: 40, RemoteFrom: CPUCounts{{0, 40}}},
			{CPU: 2, Ticks: 15500, BusyPct: 100},
		},
	}
	var b bytes.Buffer
	if err := WriteMigrationSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.golden", b.Bytes())
}

func TestRound(t *testing.T) {
	if Round(1.23456, 3) != 1.235 || Round(99.9999, 2) != 100 {
		t.Error(Round(1.23456, 3), Round(99.9999, 2))
	}
}
