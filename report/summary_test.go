package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
)

// A run where isolated CPUs 1 and 5 ran housekeeping CPUs' timers, and a
// nohz_full CPU measured the worst latency.
func answerRun() *Run {
	return &Run{
		Machine: Machine{CPUs: 8, Nodes: 1, HZ: 250, Isolcpus: "1-3", NohzFull: "6-7", IsolatedPartition: "5"},
		Policy:  "pull", DurationS: 2, Seed: 1,
		CPUs: []CPU{
			{CPU: 0},
			{CPU: 1, RemoteFrom: CPUCounts{{0, 715}, {4, 3}}, LatencyUS: &Latency{Max: 1203}},
			{CPU: 2, LatencyUS: &Latency{Max: 3}},
			{CPU: 3, LatencyUS: &Latency{Max: 4}},
			{CPU: 4, RemoteFrom: CPUCounts{{0, 1}}},
			{CPU: 5, RemoteFrom: CPUCounts{{4, 9}}},
			{CPU: 6, LatencyUS: &Latency{Max: 1203}},
			{CPU: 7},
		},
	}
}

func TestSummaryGolden(t *testing.T) {
	s, err := Summarize(answerRun())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "answer.golden", b.Bytes())
}

func TestSummaryFigures(t *testing.T) {
	r := answerRun()
	s, err := Summarize(r)
	if err != nil {
		t.Fatal(err)
	}
	// Every remote count appears once, and they add up.
	var total uint64
	seen := map[[2]int]uint64{}
	for _, c := range r.CPUs {
		for _, f := range c.RemoteFrom {
			total += f.Count
			seen[[2]int{c.CPU, f.CPU}] = f.Count
		}
	}
	if s.Remote != total || len(s.Pulls) != len(seen) {
		t.Fatalf("remote %d in %d pairs, want %d in %d", s.Remote, len(s.Pulls), total, len(seen))
	}
	for i, p := range s.Pulls {
		if seen[[2]int{p.Handler, p.Owner}] != p.Count {
			t.Errorf("pull %+v: the run says %d", p, seen[[2]int{p.Handler, p.Owner}])
		}
		if i > 0 && s.Pulls[i-1].Count < p.Count {
			t.Errorf("pulls not sorted by count: %+v before %+v", s.Pulls[i-1], p)
		}
	}
	// The isolated CPUs that ran foreign timers: 1 (isolcpus) and 5 (the
	// partition), not 4 (housekeeping).
	if len(s.Isolated) != 2 || s.Isolated[0] != (Foreign{CPU: 1, Class: "isolated", Timers: 718, Owners: "0,4"}) ||
		s.Isolated[1] != (Foreign{CPU: 5, Class: "isolated", Timers: 9, Owners: "4"}) {
		t.Errorf("isolated foreign %+v", s.Isolated)
	}
	// A tie on the maximum goes to the lower CPU.
	if s.Worst == nil || *s.Worst != (Worst{CPU: 1, MaxUS: 1203, Class: "isolated"}) {
		t.Errorf("worst %+v", s.Worst)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Remote != s.Remote || len(back.Pulls) != len(s.Pulls) {
		t.Errorf("JSON %s does not read back: %v", b, err)
	}
}

func TestSummaryEdges(t *testing.T) {
	// Nothing pulled, no isolation, no latency: one line.
	s := NewSummary([]Pull{{Handler: 3, Owner: 3, Count: 5}, {Handler: 1, Owner: 0}}, cpumask.Mask{}, cpumask.Mask{}, nil)
	var b bytes.Buffer
	if err := WriteSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "# who ran whose timers: every CPU ran only its own timers\n" || s.Worst != nil || len(s.Pulls) != 0 {
		t.Errorf("got %q, %+v", got, s)
	}
	// More pairs than the text lists: the rest are counted.
	var pulls []Pull
	for h := 1; h <= SummaryPairs+3; h++ {
		pulls = append(pulls, Pull{Handler: h, Owner: 0, Count: uint64(100 - h)})
	}
	pulls = append(pulls, Pull{Handler: 1, Owner: 0, Count: 1}) // the same pair again adds up
	s = NewSummary(pulls, cpumask.Of(2), cpumask.Mask{}, nil)
	b.Reset()
	if err := WriteSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "#   ... and 3 more pairs, 270 timers\n") || !strings.Contains(b.String(), "CPU 1 ran CPU 0's timers 100 times") ||
		!strings.Contains(b.String(), "# isolated CPUs that ran other CPUs' timers: CPU 2 (98 of CPU 0)\n") {
		t.Errorf("got:\n%s", b.String())
	}
	// A machine line that is not a cpulist is an error naming it.
	r := answerRun()
	r.Machine.NohzFull = "6-x"
	if _, err := Summarize(r); err == nil || !strings.Contains(err.Error(), `nohz_full "6-x"`) {
		t.Errorf("bad cpulist: %v", err)
	}
}
