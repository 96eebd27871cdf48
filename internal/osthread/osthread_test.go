//go:build linux

package osthread

import (
	"runtime"
	"testing"
	"time"
)

// TestPinSlackAndCPU pins a locked thread, sets its slack, and checks that
// the kernel reports both back; the thread is left to die with the
// goroutine, so the test process keeps its own affinity.
func TestPinSlackAndCPU(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed.Last()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with us
		errc <- func() error {
			if err := Pin(cpu); err != nil {
				return err
			}
			if err := SetTimerSlack(1); err != nil {
				return err
			}
			if s, err := TimerSlack(); err != nil || s != 1 {
				t.Errorf("timer slack %d (%v), want 1", s, err)
			}
			if got, err := CurrentCPU(); err != nil || got != cpu {
				t.Errorf("running on CPU %d (%v), want %d", got, err, cpu)
			}
			if a, err := Allowed(); err != nil || a.Weight() != 1 || !a.Test(cpu) {
				t.Errorf("affinity %v (%v), want only %d", a, err, cpu)
			}
			return nil
		}()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := Pin(-1); err == nil {
		t.Fatal("Pin(-1) accepted")
	}
}

// TestThreadCPUTime: a thread that spins 20 ms of wall time accumulates CPU
// time on its clock, readable from another thread, and getrusage agrees in
// order of magnitude.
func TestThreadCPUTime(t *testing.T) {
	type res struct {
		tid int
		ru  time.Duration
		err error
	}
	done := make(chan res)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		u, s, err := Rusage()
		done <- res{Gettid(), u + s, err}
		<-release
	}()
	r := <-done
	defer close(release)
	if r.err != nil {
		t.Fatal(r.err)
	}
	ct, err := ThreadCPUTime(r.tid)
	if err != nil {
		t.Fatal(err)
	}
	if ct <= 0 || ct < r.ru/2 {
		t.Fatalf("thread CPU clock %v, getrusage %v", ct, r.ru)
	}
	if !ThreadExists(r.tid) {
		t.Fatal("live thread not found in /proc")
	}
	if v, _, err := ContextSwitches(r.tid); err != nil || v < 0 {
		t.Fatalf("context switches %d: %v", v, err)
	}
	if n, err := Threads(); err != nil || n < 2 {
		t.Fatalf("threads %d: %v", n, err)
	}
}

func TestNodeOfAndMonotonic(t *testing.T) {
	if n := NodeOf(0); n < 0 {
		t.Fatal(n)
	}
	if n := NodeOf(1 << 20); n != 0 {
		t.Fatalf("node of a CPU sysfs does not know: %d", n)
	}
	a := Monotonic()
	b := Monotonic()
	if b < a {
		t.Fatal("monotonic clock went back")
	}
}
