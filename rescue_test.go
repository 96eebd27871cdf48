package tmigr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
	"golang.org/x/sys/unix"
)

// TestRescueDelay: rescue timers are armed only while the runtime is
// loaded, for a deadline within the horizon, rescueAfter past it.
func TestRescueDelay(t *testing.T) {
	t.Parallel()
	const now = int64(time.Second)
	for _, c := range []struct {
		deadline, loadedUntil int64
		d                     time.Duration
		ok                    bool
	}{
		{now + 1e6, now + 1, time.Millisecond + rescueAfter, true},
		{now + 1e6, now, 0, false}, // loaded until now: no longer
		{now + 1e6, 0, 0, false},   // never loaded
		{now, now + 1, rescueAfter, true},
		{now + rescueHorizon + 1, now + 1, 0, false},
		{1<<63 - 1, now + 1, 0, false}, // no event
	} {
		d, ok := rescueDelay(c.deadline, now, c.loadedUntil)
		if d != c.d || ok != c.ok {
			t.Errorf("rescueDelay(%d, %d, %d) = %v, %v, want %v, %v", c.deadline, now, c.loadedUntil, d, ok, c.d, c.ok)
		}
	}
	if lateBy(now, now+int64(rescueAfter)) || !lateBy(now, now+int64(rescueAfter)+1) {
		t.Error("lateBy: late means more than rescueAfter past the deadline")
	}
}

// TestRescueRunsOverdueTimers drives a worker's event handling with a fake
// clock and no thread, as if its thread never got its CPU after going to
// sleep: a rescue does nothing while the worker's next event is due less
// than rescueAfter ago or while the worker holds its CPU; past that it runs
// the overdue hrtimer and the wheel timer of the stopped tick's next
// wake-up, on behalf of the worker (CPU reports it), counts them, marks
// the runtime loaded, and leaves the worker idle with its next events
// programmed, the hierarchy consistent.
func TestRescueRunsOverdueTimers(t *testing.T) {
	t.Parallel()
	clk, rt := fakeRuntime(t)
	w0, w1 := rt.workers[0], rt.workers[1]
	idle := func() {
		for _, w := range rt.order {
			w.idle(clk.t)
		}
	}
	idle()
	var ran []string
	rec := func(what string) func() {
		return func() { ran = append(ran, what+"@"+itoa(rt.CPU())) }
	}
	hrAt := int64(3 * time.Millisecond)
	if _, err := rt.HRAfterFunc(0, time.Duration(hrAt), rec("hr"), Hard); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.AfterFuncOn(0, 10*time.Millisecond, rec("wheel"), Pinned); err != nil {
		t.Fatal(err)
	}
	idle()
	if w0.hb.Device() != hrAt {
		t.Fatalf("worker 0's device at %d, want %d", w0.hb.Device(), hrAt)
	}

	// Due, but not overdue by more than rescueAfter: the worker's own.
	clk.t = hrAt + int64(rescueAfter)
	w0.rescue()
	// Overdue, but the worker holds its CPU: it runs (e.g. just woke).
	clk.t++
	w0.cpuMu.Lock()
	w0.rescue()
	w0.cpuMu.Unlock()
	if !rt.haltPollNow(clk.t) {
		t.Fatal("HaltPoll workers stopped polling without a rescue")
	}
	if len(ran) != 0 || w0.st.rescues.Load() != 0 || rt.loadedUntil.Load() != 0 {
		t.Fatalf("rescued too early: ran %v, %d rescues, loaded until %d", ran, w0.st.rescues.Load(), rt.loadedUntil.Load())
	}
	w0.rescue()
	if want := "hr@0"; len(ran) != 1 || ran[0] != want {
		t.Fatalf("the rescue ran %v, want [%s]", ran, want)
	}
	if n := w0.st.rescues.Load(); n != 1 {
		t.Fatalf("%d rescues, want 1", n)
	}
	if got, want := rt.loadedUntil.Load(), clk.t+loadedHold; got != want {
		t.Fatalf("loaded until %d, want %d", got, want)
	}
	if rt.haltPollNow(clk.t) || rt.haltPollNow(clk.t+pollHold-1) || !rt.haltPollNow(clk.t+pollHold) {
		t.Fatal("HaltPoll workers must halt without polling for pollHold after a rescue")
	}
	if !w0.tk.InIdle() || w0.hb.Device() <= clk.t || w0.tickAt <= clk.t {
		t.Fatalf("after the rescue worker 0: idle %v, device %d, tick %d (now %d)", w0.tk.InIdle(), w0.hb.Device(), w0.tickAt, clk.t)
	}
	if w0.rescuer.Load() != -1 || w0.inUser.Load() {
		t.Fatal("the rescue left its thread marked as the worker's")
	}

	// The pinned wheel timer is the stopped tick's next wake-up.
	wake := w0.tickAt
	clk.t = wake + int64(rescueAfter) + 1
	w0.rescue()
	if want := "wheel@0"; len(ran) != 2 || ran[1] != want {
		t.Fatalf("the second rescue ran %v, want [hr@0 %s]", ran, want)
	}
	// Nothing left to rescue, on either worker.
	w0.rescue()
	w1.rescue()
	if n0, n1 := w0.st.rescues.Load(), w1.st.rescues.Load(); n0 != 2 || n1 != 0 {
		t.Fatalf("rescues %d and %d, want 2 and 0", n0, n1)
	}
	if err := rt.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rt.set.Hierarchy().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRescueSkipsOfflineAndClosed: an offline worker has no timers, and a
// rescue never runs for it, nor after Close.
func TestRescueSkipsOfflineAndClosed(t *testing.T) {
	t.Parallel()
	clk, rt := fakeRuntime(t)
	w := rt.workers[1]
	w.idle(0)
	if _, err := rt.HRAfterFunc(1, time.Millisecond, func() { t.Error("rescued") }, Hard); err != nil {
		t.Fatal(err)
	}
	clk.t = int64(time.Second)
	w.online.Store(false)
	w.rescue()
	w.online.Store(true)
	rt.closed.Store(true)
	w.rescue()
	if n := w.st.rescues.Load(); n != 0 {
		t.Fatalf("%d rescues", n)
	}
}

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
	rt.loadedUntil.Store(math.MaxInt64)
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

// TestRescueCrowded: a rescue counts as crowded when it finds the
// worker's thread runnable (waiting for its CPU), not when the thread is
// still asleep because its own timer is late; either way it marks the
// runtime loaded and turns HaltPoll's polling off.
func TestRescueCrowded(t *testing.T) {
	t.Parallel()
	clk, rt := fakeRuntime(t)
	w0 := rt.workers[0]
	for _, w := range rt.order {
		w.idle(clk.t)
	}
	rescueAt := func(at time.Duration) {
		t.Helper()
		if _, err := rt.HRAfterFunc(0, at-time.Duration(clk.t), func() {}, Hard); err != nil {
			t.Fatal(err)
		}
		w0.idle(clk.t)
		clk.t = int64(at) + int64(rescueAfter) + 1
		n := w0.st.rescues.Load()
		w0.rescue()
		if w0.st.rescues.Load() != n+1 {
			t.Fatalf("no rescue at %v", time.Duration(clk.t))
		}
		if rt.loadedUntil.Load() != clk.t+loadedHold || rt.haltPollNow(clk.t) {
			t.Fatal("a rescue must mark the runtime loaded and stop polling, whatever it found")
		}
	}

	// A thread asleep in nanosleep stands for a worker whose wait has
	// not ended.
	tid, stop := sleepingThread(t)
	defer stop()
	w0.tid.Store(int64(tid))
	rescueAt(3 * time.Millisecond)
	if n := w0.st.crowded.Load(); n != 0 {
		t.Fatalf("a rescue of a sleeping thread counted as crowded (%d)", n)
	}

	// This test's own thread, running, stands for a runnable one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w0.tid.Store(int64(osthread.Gettid()))
	rescueAt(10 * time.Millisecond)
	if n := w0.st.crowded.Load(); n != 1 {
		t.Fatalf("a rescue of a runnable thread: crowded %d, want 1", n)
	}
	w0.tid.Store(-1)
}

// sleepingThread starts a thread that sleeps in nanosleep, in short naps,
// until stop is called, and returns its id once it reads as asleep.
func sleepingThread(t *testing.T) (tid int, stop func()) {
	t.Helper()
	ids := make(chan int)
	var quit atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ids <- osthread.Gettid()
		ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
		for !quit.Load() {
			unix.Nanosleep(&ts, nil)
		}
		close(done)
	}()
	tid = <-ids
	stop = func() { quit.Store(true); <-done }
	for deadline := time.Now().Add(hangAfter); ; time.Sleep(time.Millisecond) {
		if r, err := osthread.Runnable(tid); err != nil {
			stop()
			t.Skip("no thread states here:", err)
		} else if !r {
			return tid, stop
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("a thread in nanosleep never read as asleep")
		}
	}
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
	if err := rt.boot(); err != nil {
		t.Fatal(err)
	}
	return clk, rt
}

// TestRescueEmptiesMovesAsTheWorker: a rescue empties the worker's list of
// moves as the worker: a list longer than movesBetween runs the timers due
// meanwhile from inside the drain, and their functions see the worker (CPU
// reports it), as every rescued function does.
func TestRescueEmptiesMovesAsTheWorker(t *testing.T) {
	t.Parallel()
	clk, rt := fakeRuntime(t)
	w0 := rt.workers[0]
	for _, w := range rt.order {
		w.idle(clk.t)
	}
	var ran []int
	if _, err := rt.HRAfterFunc(0, time.Millisecond, func() { ran = append(ran, rt.CPU()) }, Hard); err != nil {
		t.Fatal(err)
	}
	w0.sleepUntil.Store(clk.t) // awake: the moves below kick nothing
	var last *Timer
	for range movesBetween + 1 {
		tm, err := rt.HRAfterFunc(0, time.Hour, func() { ran = append(ran, -100-rt.CPU()) }, Hard)
		if err != nil {
			t.Fatal(err)
		}
		tm.Reset(time.Minute) // earlier: listed
		last = tm
	}
	clk.t = int64(time.Millisecond + rescueAfter + 1)
	w0.rescue()
	if fmt.Sprint(ran) != "[0]" || w0.st.rescues.Load() != 1 {
		t.Fatalf("rescue ran the due timer on %v (want [0]: worker 0), %d rescues (want 1)", ran, w0.st.rescues.Load())
	}
	if w0.moves.listed() || w0.hb.Device() != int64(time.Minute) {
		t.Fatalf("after the rescue: listed %v, device at %d; want the list empty, the moved timers due in a minute", w0.moves.listed(), w0.hb.Device())
	}

	// Only a listed timer overdue, nothing in the core: a rescue too, which
	// runs it as the worker.
	last.Reset(time.Millisecond)
	clk.t += int64(time.Millisecond + rescueAfter + 1)
	w0.rescue()
	if fmt.Sprint(ran) != "[0 -100]" || w0.st.rescues.Load() != 2 {
		t.Fatalf("rescue of a listed timer: ran %v (want [0 -100]: the second on worker 0), %d rescues (want 2)", ran, w0.st.rescues.Load())
	}
}
