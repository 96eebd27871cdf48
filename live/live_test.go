package live

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"

	"github.com/tmigr/tmigr/internal/osthread"
)

func ncpus(t *testing.T) int {
	m, err := osthread.Allowed()
	if err != nil {
		t.Skip("no CPU affinity here")
	}
	return m.Weight()
}

func checkDist(t *testing.T, name string, d Dist, n int) {
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

// TestLateness: every timer of each kind is counted, in the table and in
// the cyclictest-format threads alike.
func TestLateness(t *testing.T) {
	r, err := Lateness(context.Background(), LatenessOptions{Machine: Machine{HZ: 1000}, Timers: 40, Seed: 1, Hist: 400})
	if err != nil {
		t.Fatal(err)
	}
	checkDist(t, "wheel", r.Wheel, 40)
	checkDist(t, "hrtimer", r.HR, 40)
	checkDist(t, "std", r.Std, 40)
	if r.Timers != 40 || r.CPUs == "" || r.HZ != 1000 || len(r.Report.Threads) != 3 || len(r.Histograms) != 3 {
		t.Fatalf("result %+v", r)
	}
	for i, d := range []Dist{r.Wheel, r.HR, r.Std} {
		th := &r.Report.Threads[i]
		var in uint64
		for _, n := range th.Hist {
			in += n
		}
		if th.Cycles != 40 || in+th.OflowCount != 40 || float64(th.Max) > d.Max || float64(th.Max) < d.Max-1 {
			t.Errorf("thread %d: %d cycles, %d in the histogram + %d overflows, max %d us (table: %.2f)", i, th.Cycles, in, th.OflowCount, th.Max, d.Max)
		}
		if th.Interval < 1000 || th.Interval > 50_000 {
			t.Errorf("thread %d: mean duration %d us outside 1-50 ms", i, th.Interval)
		}
	}
}

// TestIsolation: under pull the busy isolated worker runs the
// housekeeping timers (all but those the housekeeping worker ran before it
// learnt the isolated one was busy), under pull-isolated none.
func TestIsolation(t *testing.T) {
	if ncpus(t) < 2 {
		t.Skip("needs two CPUs")
	}
	r, err := Isolation(IsolationOptions{Machine: Machine{HZ: 1000}, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
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

// TestIdle: polling workers use far more CPU than halting ones.
func TestIdle(t *testing.T) {
	r, err := Idle(IdleOptions{Machine: Machine{HZ: 1000}, Workers: 1, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
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

func TestSoftHard(t *testing.T) {
	r, err := SoftHard(SoftHardOptions{Machine: Machine{HZ: 1000}, Sleepers: 5, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || r.Runs[0].Sleepers != "hard" || r.Runs[1].Sleepers != "soft" {
		t.Fatalf("runs %+v", r.Runs)
	}
	for _, run := range r.Runs {
		if run.Wakeups == 0 || run.P50 < 0 || run.P99 < run.P50 || run.Max < run.P99 {
			t.Errorf("%+v", run)
		}
	}
}

// TestWakeups: without migration every worker runs its own timer; with
// the hierarchy one worker runs the others'.
func TestWakeups(t *testing.T) {
	if ncpus(t) < 2 {
		t.Skip("needs two CPUs")
	}
	r, err := Wakeups(WakeupsOptions{Machine: Machine{HZ: 1000}, Workers: 2, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || r.Runs[0].Policy != "none" || r.Runs[1].Policy != "pull" {
		t.Fatalf("runs %+v", r.Runs)
	}
	if none, pull := r.Runs[0], r.Runs[1]; none.Remote != 0 || pull.Remote == 0 || none.TimersRun == 0 || pull.TimersRun == 0 {
		t.Errorf("none: %d timers, %d remote; pull: %d timers, %d remote", none.TimersRun, none.Remote, pull.TimersRun, pull.Remote)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Lateness(context.Background(), LatenessOptions{Timers: 0}); err == nil {
		t.Error("0 timers accepted")
	}
	if _, err := Lateness(context.Background(), LatenessOptions{Timers: 1, Hist: -1}); err == nil {
		t.Error("a negative histogram accepted")
	}
	if _, err := Idle(IdleOptions{Duration: -time.Second}); err == nil {
		t.Error("a negative duration accepted")
	}
	if _, err := Lateness(context.Background(), LatenessOptions{Timers: 1, Cyclictest: "no-such-cyclictest-binary"}); err == nil {
		t.Error("a missing cyclictest accepted")
	}
}

// fakeCyclictest writes a script that behaves as cyclictest does for
// Lateness: it records its arguments, runs until SIGINT and then writes
// its --json file (one thread: 90 cycles at 5 us, 10 at 7 us).
func fakeCyclictest(t *testing.T) (bin, argsFile string) {
	dir := t.TempDir()
	bin, argsFile = filepath.Join(dir, "cyclictest"), filepath.Join(dir, "args")
	sh := `#!/bin/sh
echo "$@" > ` + argsFile + `
for a in "$@"; do case $a in --json=*) f=${a#--json=};; esac; done
report() {
cat > "$f" <<'END'
{"file_version": 1, "num_threads": 1, "resolution_in_ns": 0,
 "thread": {"0": {"histogram": {"5": 90, "7": 10}, "cycles": 100, "min": 5, "max": 7, "avg": 5.20, "cpu": 0, "node": 0}}}
END
exit 0
}
trap report INT
while :; do sleep 0.01; done
`
	if err := os.WriteFile(bin, []byte(sh), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, argsFile
}

// TestLatenessBesideCyclictest: cyclictest runs on the workers' CPUs at
// their class, and its figures stand beside ours.
func TestLatenessBesideCyclictest(t *testing.T) {
	bin, argsFile := fakeCyclictest(t)
	m := Machine{CPUs: cpumask.MustParse("0"), HZ: 1000}
	r, err := Lateness(context.Background(), LatenessOptions{Machine: m, Timers: 10, Hist: 6, Cyclictest: bin})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(argsFile)
	for _, want := range []string{"-q --default-system -t 1 -a 0 -i 1000 -d 0 -D 61 -h 100000 --histfile=", "--policy=other"} {
		if !strings.Contains(string(args), want) {
			t.Errorf("cyclictest ran with %q, want %q in it", args, want)
		}
	}
	c := r.Cyclictest
	if c == nil || c.Dist.N != 100 || c.Dist.Min != 5 || c.Dist.P50 != 5 || c.Dist.P99 != 7 || c.Dist.Max != 7 || len(c.Threads) != 1 {
		t.Fatalf("cyclictest %+v", c)
	}
	if !strings.HasPrefix(c.Command, "cyclictest -q ") || !strings.Contains(c.Command, "--json=FILE") {
		t.Errorf("command %q", c.Command)
	}
	if want := math.Round(r.HR.P99/7*1000) / 1000; r.HRToCyclictest != want {
		t.Errorf("ratio %v, want %v", r.HRToCyclictest, want)
	}
	// Its report is cut to our 6 buckets: the 7 us cycles are overflows.
	if th := c.Report.Threads[0]; th.Hist[5] != 90 || th.OflowCount != 10 || th.Prio != 0 {
		t.Errorf("cut report %+v", th)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# cyclictest -q --default-system", "T: 0 (    0) P: 0 I:1000 C:    100 Min:      5", "  cyclictest ", "hrtimer p99 / cyclictest p99 = "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestLatenessRealCyclictest runs rt-tests' cyclictest where it is
// installed.
func TestLatenessRealCyclictest(t *testing.T) {
	if _, err := exec.LookPath("cyclictest"); err != nil {
		t.Skip("no cyclictest (Debian: rt-tests)")
	}
	r, err := Lateness(context.Background(), LatenessOptions{Machine: Machine{HZ: 1000}, Timers: 20, Hist: 100, Cyclictest: "cyclictest"})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Cyclictest; c == nil || c.Dist.N == 0 || c.Dist.Min > c.Dist.P99 || c.Dist.P99 > c.Dist.Max || len(c.Threads) != len(strings.Split(r.CPUs, ",")) {
		t.Errorf("cyclictest %+v", c)
	}
}
