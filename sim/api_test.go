package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// oslatCfg is a small busy machine: oslat on CPUs 1-7 of 8.
func oslatCfg(d time.Duration) (sim.Config, func() []sim.Workload) {
	c := sim.Config{CPUs: 8, HZ: 250, Policy: cpu.PullIsolated, Costs: costs(), Platform: "server",
		Warmup: 100 * time.Millisecond, Duration: d, Seed: 3}
	return c, func() []sim.Workload {
		return []sim.Workload{workload.NewHousekeeping(), workload.NewOslat(cpumask.Range(1, 7), "")}
	}
}

func reportJSON(t *testing.T, res *sim.Result) []byte {
	t.Helper()
	r := res.Report()
	r.WallS = 0
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Watching a run changes nothing in it: RunContext with a callback gives
// Run's result byte for byte, and the callback sees the run advance.
func TestRunContextSameRun(t *testing.T) {
	c, wl := oslatCfg(2 * time.Second)
	want, err := sim.Run(c, wl()...)
	if err != nil {
		t.Fatal(err)
	}
	var seen []sim.Progress
	got, err := sim.RunContext(context.Background(), c, func(p sim.Progress) { seen = append(seen, p) }, wl()...)
	if err != nil {
		t.Fatal(err)
	}
	if got.Partial || !bytes.Equal(reportJSON(t, got), reportJSON(t, want)) {
		t.Errorf("a watched run differs from Run's (partial %v)", got.Partial)
	}
	for i, p := range seen {
		if p.Done() < 0 || p.Done() > 1 || i > 0 && (p.Now < seen[i-1].Now || p.Events < seen[i-1].Events) {
			t.Errorf("progress %d: %+v after %+v", i, p, seen[max(i-1, 0)])
		}
	}
}

// A run whose context is done from the start stops at the first poll of
// the event loop, in the warm-up: its measurement is empty and marked
// partial, in the JSON and the text report.
func TestRunContextStopInWarmup(t *testing.T) {
	c, wl := oslatCfg(time.Second)
	c.Warmup = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := sim.RunContext(ctx, c, nil, wl()...)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("RunContext = %v, %v; want a result and context.Canceled", res, err)
	}
	if !res.Partial || res.Duration != 0 {
		t.Errorf("partial %v, duration %d; want a partial, empty measurement", res.Partial, res.Duration)
	}
	var r report.Run
	if err := json.Unmarshal(reportJSON(t, res), &struct {
		Partial *bool `json:"partial"`
	}{&r.Partial}); err != nil || !r.Partial {
		t.Errorf("JSON lacks partial: %v", err)
	}
	var b bytes.Buffer
	if err := res.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "# PARTIAL:") {
		t.Errorf("text report does not start with the PARTIAL mark:\n%.200s", b.String())
	}
}

// Stopped in the measurement, a run reports the part it simulated: a
// window shorter than asked, with oslat's samples in it.
func TestRunContextStopInMeasurement(t *testing.T) {
	c, wl := oslatCfg(10000 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last sim.Progress
	res, err := sim.RunContext(ctx, c, func(p sim.Progress) {
		last = p
		if p.Now > int64(c.Warmup)+int64(time.Second) {
			cancel()
		}
	}, wl()...)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("RunContext = %v, %v; want a result and context.Canceled", res, err)
	}
	if !res.Partial || res.Duration < int64(time.Second) || res.Duration >= int64(c.Duration) {
		t.Errorf("partial %v, measured %v of %v", res.Partial, time.Duration(res.Duration), c.Duration)
	}
	if last.ETA() <= 0 || last.Rate() <= 0 {
		t.Errorf("progress %+v: no rate or ETA", last)
	}
	ol := res.Workload("oslat").(*workload.OslatResult)
	if n := ol.Report.Threads[0].Samples(); n == 0 {
		t.Error("oslat saw no samples in the part simulated")
	}
}

func TestEstimate(t *testing.T) {
	c := sim.Config{CPUs: 4096, Warmup: time.Second, Duration: 61 * time.Second}
	if e := sim.Estimate(c); e < time.Second || e > time.Minute {
		t.Errorf("Estimate(4096 CPUs x 62 s) = %v", e)
	}
	c.CPUs = 8192
	if a, b := sim.Estimate(c), 2*sim.Estimate(sim.Config{CPUs: 4096, Warmup: time.Second, Duration: 61 * time.Second}); a != b {
		t.Errorf("Estimate is not linear in CPUs: %v, %v", a, b)
	}
}
