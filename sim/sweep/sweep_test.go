package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestParseGrid(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Axis
		err  string
	}{
		{"cpus=64,128", []Axis{{"cpus", []string{"64", "128"}}}, ""},
		{"cpus=64,128;policy=pull,pull-isolated", []Axis{{"cpus", []string{"64", "128"}}, {"policy", []string{"pull", "pull-isolated"}}}, ""},
		{" cost.tick = lognormal(1us,0.3,max=8us) , 2us ;", []Axis{{"cost.tick", []string{"lognormal(1us,0.3,max=8us)", "2us"}}}, ""},
		{"isolcpus=1-7,9-15|1-15", []Axis{{"isolcpus", []string{"1-7,9-15", "1-15"}}}, ""},
		{"isolcpus=1-7", []Axis{{"isolcpus", []string{"1-7"}}}, ""},
		{"", nil, "no axis"},
		{"cpus", nil, "NAME=VALUE"},
		{"=1,2", nil, "NAME=VALUE"},
		{"cpus=", nil, "empty value"},
		{"cpus=1,,2", nil, "empty value"},
		{"cpus=1,1", nil, "twice"},
		{"c pus=1", nil, "bad name"},
	} {
		got, err := ParseGrid(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseGrid(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseGrid(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseSeeds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []uint64
		err  string
	}{
		{"1-5", []uint64{1, 2, 3, 4, 5}, ""},
		{"7", []uint64{7}, ""},
		{"1,5,9-11", []uint64{1, 5, 9, 10, 11}, ""},
		{"0-0", []uint64{0}, ""},
		{"18446744073709551614-18446744073709551615", []uint64{1<<64 - 2, 1<<64 - 1}, ""},
		{"5-1", nil, "bad range"},
		{"1-x", nil, "bad range"},
		{"", nil, "not a seed"},
		{"-3", nil, "not a seed"},
		{"1,1", nil, "twice"},
		{"1-3,2", nil, "twice"},
		{"0-99999999999", nil, "more than"},
	} {
		got, err := ParseSeeds(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseSeeds(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("3/8"); err != nil || s != (Shard{3, 8}) {
		t.Errorf("ParseShard(3/8) = %v, %v", s, err)
	}
	for _, bad := range []string{"8/8", "-1/8", "1/0", "1", "a/b", "1/2/3", ""} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
}

func FuzzParseGrid(f *testing.F) {
	for _, s := range []string{"cpus=64,128;policy=pull", "a=(1,2)|3", "x=((", "=", ";;", "a=1|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		axes, err := ParseGrid(s)
		if err != nil {
			return
		}
		for _, a := range axes {
			if a.Name == "" || len(a.Values) == 0 {
				t.Fatalf("%q: axis %+v", s, a)
			}
			for _, v := range a.Values {
				if v == "" || strings.TrimSpace(v) != v {
					t.Fatalf("%q: value %q", s, v)
				}
			}
		}
	})
}

func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"1-100", "1,5,9-12", "3-1", "18446744073709551615", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err != nil {
			return
		}
		seen := map[uint64]bool{}
		for _, x := range seeds {
			if seen[x] {
				t.Fatalf("%q: seed %d twice", s, x)
			}
			seen[x] = true
		}
		if len(seeds) == 0 || len(seeds) > MaxPoints {
			t.Fatalf("%q: %d seeds", s, len(seeds))
		}
	})
}

// The index order of the package doc's table.
func TestPlanOrder(t *testing.T) {
	axes, _ := ParseGrid("cpus=64,128;policy=pull,pull-isolated")
	p := Plan{Axes: axes, Seeds: []uint64{1, 2, 3}}
	n, err := p.Len()
	if err != nil || n != 12 {
		t.Fatalf("Len = %d, %v", n, err)
	}
	var got []string
	for i := 0; i < n; i++ {
		pt := p.Point(i)
		got = append(got, fmt.Sprintf("%s/%s/%d", pt.Params[0].Value, pt.Params[1].Value, pt.Seed))
	}
	want := "64/pull/1 64/pull/2 64/pull/3 64/pull-isolated/1 64/pull-isolated/2 64/pull-isolated/3 " +
		"128/pull/1 128/pull/2 128/pull/3 128/pull-isolated/1 128/pull-isolated/2 128/pull-isolated/3"
	if strings.Join(got, " ") != want {
		t.Errorf("order:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if _, err := (Plan{Axes: []Axis{{"a", make([]string, 4000)}, {"b", make([]string, 4000)}}, Seeds: []uint64{1}}).Len(); err == nil {
		t.Error("a sweep of 16 million configurations was accepted")
	}
}

// Shards are contiguous, in order, cover every index once and differ in
// size by at most one.
func TestShardRanges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 10000).Draw(t, "n")
		k := rapid.IntRange(1, 300).Draw(t, "k")
		next, small, big := 0, n, 0
		for i := 0; i < k; i++ {
			lo, hi := Shard{i, k}.Range(n)
			if lo != next || hi < lo {
				t.Fatalf("shard %d/%d of %d: [%d,%d) after %d", i, k, n, lo, hi, next)
			}
			small, big = min(small, hi-lo), max(big, hi-lo)
			next = hi
		}
		if next != n || big-small > 1 {
			t.Fatalf("%d shards of %d end at %d, sizes %d-%d", k, n, next, small, big)
		}
	})
}

// fakeRun is a RunFunc whose output is a pure function of the point and
// whose duration is random: CPU 0 measures a latency depending on the
// seed, CPU 1 pulls in odd seeds.
func fakeRun(delay bool) RunFunc {
	return func(ctx context.Context, p Point, progress func(float64)) (json.RawMessage, error) {
		if delay {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
		}
		progress(0.5)
		pulls := p.Seed % 2
		return json.RawMessage(fmt.Sprintf(`{"seed":%d,"cpus":[{"cpu":0,"latency_us":{"min":1,"avg":2,"max":%d},"remote_expired":0},`+
			`{"cpu":1,"remote_expired":%d}],"p":%q}`, p.Seed, p.Seed*10, pulls*3, p.Params.key())), nil
	}
}

func sweepOut(t *testing.T, plan Plan, opts Options, run RunFunc) string {
	t.Helper()
	var b bytes.Buffer
	if err := Run(context.Background(), plan, opts, run, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The output is the same for any number of workers, and the shards'
// outputs, concatenated in any order, summarize to it byte for byte.
func TestRunDeterministicAndShards(t *testing.T) {
	axes, _ := ParseGrid("cpus=64,128;policy=pull,pull-isolated")
	seeds, _ := ParseSeeds("1-25")
	plan := Plan{Axes: axes, Seeds: seeds}
	want := sweepOut(t, plan, Options{Workers: 1}, fakeRun(false))
	lines := strings.Split(strings.TrimSpace(want), "\n")
	if len(lines) != 100+4 {
		t.Fatalf("%d lines, want 100 runs and 4 summaries", len(lines))
	}
	for _, w := range []int{2, 7, 100} {
		if got := sweepOut(t, plan, Options{Workers: w}, fakeRun(true)); got != want {
			t.Errorf("%d workers: output differs from 1 worker's", w)
		}
	}
	var parts []string
	for i := 0; i < 7; i++ {
		out := sweepOut(t, plan, Options{Workers: 3, Shard: Shard{i, 7}}, fakeRun(true))
		if strings.Contains(out, `"summary"`) {
			t.Errorf("shard %d/7 wrote a summary", i)
		}
		parts = append(parts, out)
	}
	rand.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	var got bytes.Buffer
	if err := Summarize(strings.NewReader(strings.Join(parts, "")), &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("the shards summarized differ from the whole sweep:\n%s\nwant\n%s", got.String(), want)
	}
	// Summarizing a whole sweep's output gives it back.
	got.Reset()
	if err := Summarize(strings.NewReader(want), &got); err != nil || got.String() != want {
		t.Errorf("Summarize(sweep output) changed it (%v)", err)
	}
}

// The summary: nearest-rank median and p99 of each CPU's worst latency
// over the seeds, and its pulls.
func TestSummaryFigures(t *testing.T) {
	seeds, _ := ParseSeeds("1-100")
	out := sweepOut(t, Plan{Seeds: seeds}, Options{Workers: 4}, fakeRun(false))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var s SummaryLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatal(err)
	}
	g := s.Summary
	if g.Runs != 100 || len(g.CPUs) != 2 || g.Partial {
		t.Fatalf("summary %+v", g)
	}
	// CPU 0's worst latencies are 10, 20, ..., 1000.
	if w := g.CPUs[0].Worst; w == nil || *w != (Spread{Median: 500, P99: 990, Max: 1000}) || g.CPUs[0].PulledRuns != 0 {
		t.Errorf("CPU 0: %+v", g.CPUs[0])
	}
	if c := g.CPUs[1]; c.Worst != nil || c.PulledRuns != 50 || c.PulledShare != 0.5 || c.RemoteExpiredMean != 1.5 {
		t.Errorf("CPU 1: %+v", c)
	}
	if sp := spread([]float64{3}); *sp != (Spread{3, 3, 3}) {
		t.Errorf("spread of one value: %+v", sp)
	}
}

func TestSummarizeRejects(t *testing.T) {
	seeds, _ := ParseSeeds("1-10")
	plan := Plan{Seeds: seeds}
	part := func(i, n int) string { return sweepOut(t, plan, Options{Shard: Shard{i, n}}, fakeRun(false)) }
	other := sweepOut(t, Plan{Seeds: seeds[:5]}, Options{Shard: Shard{0, 2}}, fakeRun(false))
	for _, c := range []struct{ in, err string }{
		{part(0, 3) + part(2, 3), "missing: 3-5"},
		{part(0, 2) + part(1, 2) + part(1, 2), "appears twice"},
		{part(0, 2) + other, "sweep of 5 configurations"},
		{"", "no sweep lines"},
		{"{\"x\":1}\n", "no index"},
		{"not json\n", "not a sweep line"},
		{strings.Replace(part(0, 1), `"index":3`, `"index":12`, 1), "outside"},
		{strings.Replace(part(0, 1), `"schema_version":1,`, `"schema_version":2,`, 1), "schema_version 2, from a newer tmigr"},
	} {
		err := Summarize(strings.NewReader(c.in), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Summarize: %v, want an error with %q", err, c.err)
		}
	}
}

// A run that fails ends the sweep with its error, after the lines of the
// runs before it.
func TestRunError(t *testing.T) {
	seeds, _ := ParseSeeds("1-20")
	run := func(ctx context.Context, p Point, progress func(float64)) (json.RawMessage, error) {
		if p.Index == 6 {
			return nil, errors.New("boom")
		}
		return fakeRun(false)(ctx, p, progress)
	}
	var b bytes.Buffer
	err := Run(context.Background(), Plan{Seeds: seeds}, Options{Workers: 3}, run, &b)
	if err == nil || !strings.Contains(err.Error(), "configuration 6 (seed 7): boom") {
		t.Fatalf("err = %v", err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || strings.Contains(b.String(), "summary") {
		t.Errorf("%d lines before the failed run, want 6 and no summary:\n%s", len(lines), b.String())
	}
}

// Stopped by its context, a sweep writes the runs started until then,
// in order, and a summary marked partial, and says so.
func TestRunCancel(t *testing.T) {
	seeds, _ := ParseSeeds("1-1000")
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	run := func(ctx context.Context, p Point, progress func(float64)) (json.RawMessage, error) {
		if started.Add(1) == 30 {
			cancel()
		}
		return fakeRun(false)(ctx, p, progress)
	}
	var b bytes.Buffer
	var last Status
	err := Run(ctx, Plan{Seeds: seeds}, Options{Workers: 4, Progress: func(s Status) { last = s }}, run, &b)
	if !errors.Is(err, ErrPartial) {
		t.Fatalf("err = %v, want ErrPartial", err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	n := len(lines) - 1
	if n < 30 || n > 40 || !strings.Contains(lines[n], `"partial":true`) {
		t.Fatalf("%d run lines; summary %s", n, lines[n])
	}
	for i := 0; i < n; i++ {
		var l Line
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil || l.Index != i {
			t.Fatalf("line %d: index %d, %v", i, l.Index, err)
		}
	}
	if last.Done != n || last.Total != 1000 || last.Running != 0 {
		t.Errorf("last status %+v", last)
	}
}

// A status's ETA is the wall time so far scaled by what is left.
func TestStatusETA(t *testing.T) {
	s := Status{Share: 0.25, Wall: 10 * time.Second}
	if s.ETA() != 30*time.Second || (Status{}).ETA() != 0 {
		t.Errorf("ETA = %v", s.ETA())
	}
}
