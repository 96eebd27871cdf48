package engine

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/internal/osthread"
	"golang.org/x/sys/unix"
)

// TestRescueDelay: rescue timers are armed only while the engine is
// loaded, for a deadline within the horizon, RescueAfter past it.
func TestRescueDelay(t *testing.T) {
	t.Parallel()
	const now = int64(time.Second)
	for _, c := range []struct {
		deadline, loadedUntil int64
		d                     time.Duration
		ok                    bool
	}{
		{now + 1e6, now + 1, time.Millisecond + RescueAfter, true},
		{now + 1e6, now, 0, false}, // loaded until now: no longer
		{now + 1e6, 0, 0, false},   // never loaded
		{now, now + 1, RescueAfter, true},
		{now + rescueHorizon + 1, now + 1, 0, false},
		{1<<63 - 1, now + 1, 0, false}, // no event
	} {
		d, ok := rescueDelay(c.deadline, now, c.loadedUntil)
		if d != c.d || ok != c.ok {
			t.Errorf("rescueDelay(%d, %d, %d) = %v, %v, want %v, %v", c.deadline, now, c.loadedUntil, d, ok, c.d, c.ok)
		}
	}
	if lateBy(now, now+int64(RescueAfter)) || !lateBy(now, now+int64(RescueAfter)+1) {
		t.Error("lateBy: late means more than RescueAfter past the deadline")
	}
}

// TestRescueRunsOverdueTimers drives a worker's event handling with a fake
// clock and no thread, as if its thread never got its CPU after going to
// sleep: a rescue does nothing while the worker's next event is due less
// than RescueAfter ago or while the worker holds its CPU; past that it runs
// the overdue hrtimer and the wheel timer of the stopped tick's next
// wake-up, on behalf of the worker (CPU reports it), counts them, marks
// the engine loaded, and leaves the worker idle with its next events
// programmed, the hierarchy consistent.
func TestRescueRunsOverdueTimers(t *testing.T) {
	t.Parallel()
	clk, e := fakeEngine(t, 2, Config{})
	w0, w1 := e.workers[0], e.workers[1]
	idle := func() {
		for _, w := range e.order {
			w.idle(clk.t)
		}
	}
	idle()
	var ran []string
	rec := func(what string) func() {
		return func() { ran = append(ran, what+"@"+strconv.Itoa(self(e))) }
	}
	hrAt := int64(3 * time.Millisecond)
	armHR(t, e, 0, hrAt, rec("hr"))
	armWheel(e, 0, int64(10*time.Millisecond), cpu.Pinned, rec("wheel"))
	idle()
	if w0.hb.Device() != hrAt {
		t.Fatalf("worker 0's device at %d, want %d", w0.hb.Device(), hrAt)
	}

	// Due, but not overdue by more than RescueAfter: the worker's own.
	clk.t = hrAt + int64(RescueAfter)
	w0.rescue()
	// Overdue, but the worker holds its CPU: it runs (e.g. just woke).
	clk.t++
	w0.cpuMu.Lock()
	w0.rescue()
	w0.cpuMu.Unlock()
	if !e.haltPollNow(clk.t) {
		t.Fatal("HaltPoll workers stopped polling without a rescue")
	}
	if len(ran) != 0 || w0.st.rescues.Load() != 0 || e.loadedUntil.Load() != 0 {
		t.Fatalf("rescued too early: ran %v, %d rescues, loaded until %d", ran, w0.st.rescues.Load(), e.loadedUntil.Load())
	}
	w0.rescue()
	if want := "hr@0"; len(ran) != 1 || ran[0] != want {
		t.Fatalf("the rescue ran %v, want [%s]", ran, want)
	}
	if n := w0.st.rescues.Load(); n != 1 {
		t.Fatalf("%d rescues, want 1", n)
	}
	if got, want := e.loadedUntil.Load(), clk.t+loadedHold; got != want {
		t.Fatalf("loaded until %d, want %d", got, want)
	}
	if e.haltPollNow(clk.t) || e.haltPollNow(clk.t+pollHold-1) || !e.haltPollNow(clk.t+pollHold) {
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
	clk.t = wake + int64(RescueAfter) + 1
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
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.set.Hierarchy().Check(); err != nil {
		t.Fatal(err)
	}
}

// TestRescueSkipsOfflineAndClosed: an offline worker has no timers, and a
// rescue never runs for it, nor after Close.
func TestRescueSkipsOfflineAndClosed(t *testing.T) {
	t.Parallel()
	clk, e := fakeEngine(t, 2, Config{})
	w := e.workers[1]
	w.idle(0)
	armHR(t, e, 1, int64(time.Millisecond), func() { t.Error("rescued") })
	clk.t = int64(time.Second)
	w.online.Store(false)
	w.rescue()
	w.online.Store(true)
	e.closed.Store(true)
	w.rescue()
	if n := w.st.rescues.Load(); n != 0 {
		t.Fatalf("%d rescues", n)
	}
}

// TestRescueCrowded: a rescue counts as crowded when it finds the
// worker's thread runnable (waiting for its CPU), not when the thread is
// still asleep because its own timer is late; either way it marks the
// engine loaded and turns HaltPoll's polling off.
func TestRescueCrowded(t *testing.T) {
	t.Parallel()
	clk, e := fakeEngine(t, 2, Config{})
	w0 := e.workers[0]
	for _, w := range e.order {
		w.idle(clk.t)
	}
	rescueAt := func(at time.Duration) {
		t.Helper()
		armHR(t, e, 0, int64(at)-clk.t, func() {})
		w0.idle(clk.t)
		clk.t = int64(at) + int64(RescueAfter) + 1
		n := w0.st.rescues.Load()
		w0.rescue()
		if w0.st.rescues.Load() != n+1 {
			t.Fatalf("no rescue at %v", time.Duration(clk.t))
		}
		if e.loadedUntil.Load() != clk.t+loadedHold || e.haltPollNow(clk.t) {
			t.Fatal("a rescue must mark the engine loaded and stop polling, whatever it found")
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
	// The thread blocks in a read of a pipe until stop writes to it: it
	// never wakes meanwhile (a periodic sleep would, and could be read
	// as runnable while it waits for a CPU on a loaded machine).
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	ids := make(chan int)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ids <- osthread.Gettid()
		var b [1]byte
		for {
			if _, err := unix.Read(p[0], b[:]); err != unix.EINTR {
				break
			}
		}
		close(done)
	}()
	tid = <-ids
	stop = func() {
		unix.Write(p[1], []byte{0})
		<-done
		unix.Close(p[0])
		unix.Close(p[1])
	}
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
