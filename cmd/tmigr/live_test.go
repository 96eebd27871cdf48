package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/internal/osthread"
)

// liveJSON runs tmigr live with args and --json and decodes the result.
func liveJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := run(append(append([]string{"live"}, args...), "--json"), &out, &errb); rc != 0 {
		t.Fatalf("tmigr live %v: exit %d: %s", args, rc, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("tmigr live %v: %v\n%s", args, err, out.String())
	}
}

func ncpus(t *testing.T) int {
	m, err := osthread.Allowed()
	if err != nil {
		t.Skip("no CPU affinity here")
	}
	return m.Weight()
}

func checkDist(t *testing.T, name string, d dist, n int) {
	t.Helper()
	if d.N != n {
		t.Errorf("%s: %d samples, want %d", name, d.N, n)
	}
	if d.Min < 0 {
		t.Errorf("%s: a timer ran %.1f us early", name, -d.Min)
	}
	if !(d.Min <= d.P50 && d.P50 <= d.P99 && d.P99 <= d.P999 && d.P999 <= d.Max) {
		t.Errorf("%s: quantiles out of order: %+v", name, d)
	}
}

func TestLiveLateness(t *testing.T) {
	var r latenessResult
	liveJSON(t, &r, "lateness", "--timers", "40")
	checkDist(t, "wheel", r.Wheel, 40)
	checkDist(t, "hrtimer", r.HR, 40)
	checkDist(t, "std", r.Std, 40)
	if r.Timers != 40 || r.CPUs == "" {
		t.Errorf("result %+v", r)
	}
}

// TestLiveIsolation: under pull the busy isolated worker runs the
// housekeeping timers (all but those the housekeeping worker ran before it
// learnt the isolated one was busy), under pull-isolated none.
func TestLiveIsolation(t *testing.T) {
	if ncpus(t) < 2 {
		t.Skip("needs two CPUs")
	}
	var r isolationResult
	liveJSON(t, &r, "isolation", "--duration", "300ms")
	if len(r.Runs) != 2 || r.Runs[0].Policy != "pull" || r.Runs[1].Policy != "pull-isolated" {
		t.Fatalf("runs %+v", r.Runs)
	}
	pull, iso := r.Runs[0], r.Runs[1]
	if pull.HKTimers == 0 || pull.Remote == 0 || pull.Remote > pull.HKTimers || pull.RemoteUs < 200*float64(pull.Remote) {
		t.Errorf("pull: %d housekeeping timers, %d on the isolated worker taking %.0f us", pull.HKTimers, pull.Remote, pull.RemoteUs)
	}
	if iso.HKTimers == 0 || iso.Remote != 0 || iso.RemoteUs != 0 {
		t.Errorf("pull-isolated: %d housekeeping timers, %d on the isolated worker", iso.HKTimers, iso.Remote)
	}
	if pull.Loops == 0 || pull.Gap.Max < pull.Gap.P9999 || pull.Gap.P9999 < pull.Gap.P99 {
		t.Errorf("gaps %+v over %d loops", pull.Gap, pull.Loops)
	}
}

// TestLiveIdle: polling workers use far more CPU than halting ones.
func TestLiveIdle(t *testing.T) {
	var r idleResult
	liveJSON(t, &r, "idle", "--duration", "300ms", "--workers", "1")
	if len(r.Runs) != 3 || r.Runs[0].Idle != "halt" || r.Runs[1].Idle != "poll" || r.Runs[2].Idle != "haltpoll" {
		t.Fatalf("runs %+v", r.Runs)
	}
	if halt, poll := r.Runs[0], r.Runs[1]; poll.CPUPct <= halt.CPUPct || poll.Wakeups != 0 || halt.Wakeups == 0 {
		t.Errorf("halt %.2f%% CPU, %.0f wake-ups/s; poll %.2f%%, %.0f wake-ups/s", halt.CPUPct, halt.Wakeups, poll.CPUPct, poll.Wakeups)
	}
	for _, run := range r.Runs {
		if run.WakeP50 < 0 || run.WakeP99 < run.WakeP50 || len(run.PerWorker) != 1 {
			t.Errorf("%+v", run)
		}
	}
}

func TestLiveSoftHard(t *testing.T) {
	var r softHardResult
	liveJSON(t, &r, "softhard", "--duration", "200ms", "--sleepers", "5")
	if len(r.Runs) != 2 || r.Runs[0].Sleepers != "hard" || r.Runs[1].Sleepers != "soft" {
		t.Fatalf("runs %+v", r.Runs)
	}
	for _, run := range r.Runs {
		if run.Wakeups == 0 || run.P50 < 0 || run.P99 < run.P50 || run.Max < run.P99 {
			t.Errorf("%+v", run)
		}
	}
}

// TestLiveWakeups: without migration every worker runs its own timer; with
// the hierarchy one worker runs the others'.
func TestLiveWakeups(t *testing.T) {
	if ncpus(t) < 2 {
		t.Skip("needs two CPUs")
	}
	var r wakeupsResult
	liveJSON(t, &r, "wakeups", "--duration", "500ms", "--workers", "2")
	if len(r.Runs) != 2 || r.Runs[0].Policy != "none" || r.Runs[1].Policy != "pull" {
		t.Fatalf("runs %+v", r.Runs)
	}
	if none, pull := r.Runs[0], r.Runs[1]; none.Remote != 0 || pull.Remote == 0 || none.TimersRun == 0 || pull.TimersRun == 0 {
		t.Errorf("none: %d timers, %d remote; pull: %d timers, %d remote", none.TimersRun, none.Remote, pull.TimersRun, pull.Remote)
	}
}

func TestLiveBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"live"}, "usage: tmigr live"},
		{[]string{"live", "nope"}, `unknown experiment "nope"`},
		{[]string{"live", "lateness", "--timers", "0"}, "--timers 0"},
		{[]string{"live", "lateness", "--cpus", "0-"}, "--cpus"},
		{[]string{"live", "idle", "--duration", "-1s"}, "--duration"},
		{[]string{"live", "isolation", "--cpus", "0"}, "needs at least 2 CPUs"},
		{[]string{"live", "wakeups", "extra"}, `unexpected argument "extra"`},
		{[]string{"live", "softhard", "--fifo", "200"}, "Priority 200"},
	} {
		var out, errb bytes.Buffer
		if rc := run(tc.args, &out, &errb); rc != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, rc)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q, want it to mention %q", tc.args, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"live", "idle", "-h"}, &out, &errb); rc != 0 || !strings.Contains(errb.String(), "usage: tmigr live idle") {
		t.Errorf("-h: exit %d, %q", rc, errb.String())
	}
}

// TestLiveText: the text form prints a table.
func TestLiveText(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"live", "lateness", "--timers", "10"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	for _, want := range []string{"tmigr wheel", "tmigr hrtimer", "time.AfterFunc", "p99 us"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
