package tmigr

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/engine"
	"github.com/tmigr/tmigr/internal/osthread"
)

// TestRescueUnderHogs runs the rescue path on real threads: the runtime
// held loaded (so every sleep arms a rescue timer), a busy process pinned
// to each worker's CPU, hrtimers and wheel timers of random short
// durations on every worker, some re-armed from their own functions. Each
// timer runs exactly once per arm, whoever runs it (how many rescues there
// are depends on the scheduler: it is logged, not asserted), and the
// runtime ends with no error and a consistent hierarchy; under -race it
// checks that a rescue and its worker never touch the worker's state
// together.
func TestRescueUnderHogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts CPU hogs")
	}
	cpus := machineCPUs(t)
	if len(cpus) > 2 {
		cpus = cpus[:2]
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	for _, c := range cpus {
		cmd := exec.Command(sh, "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if err := osthread.PinThread(cmd.Process.Pid, c); err != nil {
			t.Fatal(err)
		}
	}
	rt := newRuntime(t, Config{CPUs: "0-1", pinTo: virtual(t)})
	rt.e.HoldLoaded()
	const n = 400
	var wg sync.WaitGroup
	var runs [2 * n]atomic.Int32
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		for k := range 2 {
			j := 2*i + k
			d := time.Duration(r.Int64N(int64(3 * time.Millisecond)))
			wg.Add(2) // the first run re-arms once
			var tm *Timer
			ready := make(chan struct{})
			f := func() {
				<-ready
				if runs[j].Add(1) == 1 {
					tm.Reset(d / 2)
				}
				wg.Done()
			}
			if k == 0 {
				tm, err = rt.HRAfterFunc(i%2, d, f, Hard)
			} else {
				tm, err = rt.AfterFuncOn(i%2, d, f)
			}
			if err != nil {
				t.Fatal(err)
			}
			close(ready)
		}
		time.Sleep(50 * time.Microsecond)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, done, "every timer's two runs")
	time.Sleep(10 * time.Millisecond) // a third run would show here
	for j := range runs {
		if got := runs[j].Load(); got != 2 {
			t.Fatalf("timer %d ran %d times, want 2", j, got)
		}
	}
	var rescues uint64
	for _, s := range rt.Stats() {
		rescues += s.Rescues
	}
	t.Logf("%d rescues", rescues)
}

// fakeRuntime builds and boots a two-worker runtime on a fake clock, with
// no threads: the tests drive its workers' event handling by hand.
func fakeRuntime(t *testing.T) (*fakeClock, *Runtime) {
	t.Helper()
	return fakeRuntimeWith(t, Config{CPUs: "0-1"})
}

// fakeRuntimeWith is fakeRuntime with cfg, its workers mapped onto the
// machine's CPUs (virtual).
func fakeRuntimeWith(t *testing.T, cfg Config) (*fakeClock, *Runtime) {
	t.Helper()
	clk := &fakeClock{}
	cfg.pinTo = virtual(t)
	rt, err := build(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.e.Boot(); err != nil {
		t.Fatal(err)
	}
	return clk, rt
}

// TestRescueEmptiesMovesAsTheWorker: a rescue empties the worker's list of
// moves as the worker: a list longer than engine.MovesBetween runs the timers due
// meanwhile from inside the drain, and their functions see the worker (CPU
// reports it), as every rescued function does.
func TestRescueEmptiesMovesAsTheWorker(t *testing.T) {
	t.Parallel()
	clk, rt := fakeRuntime(t)
	w0 := rt.e.Worker(0)
	for _, w := range rt.e.Workers() {
		w.IdleRound(clk.t)
	}
	var ran []int
	if _, err := rt.HRAfterFunc(0, time.Millisecond, func() { ran = append(ran, rt.CPU()) }, Hard); err != nil {
		t.Fatal(err)
	}
	w0.Awake(clk.t) // the moves below kick nothing
	var last *Timer
	for range engine.MovesBetween + 1 {
		tm, err := rt.HRAfterFunc(0, time.Hour, func() { ran = append(ran, -100-rt.CPU()) }, Hard)
		if err != nil {
			t.Fatal(err)
		}
		tm.Reset(time.Minute) // earlier: listed
		last = tm
	}
	clk.t = int64(time.Millisecond + engine.RescueAfter + 1)
	w0.Rescue()
	if fmt.Sprint(ran) != "[0]" || w0.Peek().Rescues != 1 {
		t.Fatalf("rescue ran the due timer on %v (want [0]: worker 0), %d rescues (want 1)", ran, w0.Peek().Rescues)
	}
	if p := w0.Peek(); p.Listed || p.Device != int64(time.Minute) {
		t.Fatalf("after the rescue: listed %v, device at %d; want the list empty, the moved timers due in a minute", p.Listed, p.Device)
	}

	// Only a listed timer overdue, nothing in the core: a rescue too, which
	// runs it as the worker.
	last.Reset(time.Millisecond)
	clk.t += int64(time.Millisecond + engine.RescueAfter + 1)
	w0.Rescue()
	if fmt.Sprint(ran) != "[0 -100]" || w0.Peek().Rescues != 2 {
		t.Fatalf("rescue of a listed timer: ran %v (want [0 -100]: the second on worker 0), %d rescues (want 2)", ran, w0.Peek().Rescues)
	}
}
