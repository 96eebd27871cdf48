//go:build linux

package osthread

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestRunnable: the calling thread is running; a thread asleep in a
// system call is not.
func TestRunnable(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r, err := Runnable(Gettid()); err != nil || !r {
		t.Fatalf("Runnable(self) = %v, %v; want true", r, err)
	}
	tid := make(chan int)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- Gettid()
		ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
		for !stop.Load() {
			unix.Nanosleep(&ts, nil)
		}
		close(done)
	}()
	sleeper := <-tid
	// The sleeper spends nearly all its time in nanosleep; the deadline
	// only catches a state that never reads as asleep.
	for deadline := time.Now().Add(time.Minute); ; {
		r, err := Runnable(sleeper)
		if err != nil {
			t.Fatal(err)
		}
		if !r {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a thread in nanosleep reads as runnable for a minute")
		}
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	<-done
}

func TestStatRunnable(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
		bad  bool
	}{
		{"1234 (tmigr) R 1 2 3", true, false},
		{"1234 (a) b) S 1 2 3", false, false},
		{"1234 (x (R) y) S 0", false, false},
		{"1234 (x) D 0", false, false},
		{"1234 (x)", false, true},
		{"1234 x R", false, true},
		{"", false, true},
	} {
		got, err := statRunnable([]byte(c.line))
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("statRunnable(%q) = %v, %v; want %v, error %v", c.line, got, err, c.want, c.bad)
		}
	}
}

func FuzzStatRunnable(f *testing.F) {
	f.Add([]byte("1234 (tmigr) R 1 2 3"))
	f.Add([]byte("1 ())"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := statRunnable(b)
		if err == nil {
			i := bytes.LastIndexByte(b, ')')
			if r != (b[i+2] == 'R') {
				t.Fatalf("statRunnable(%q) = %v", b, r)
			}
		} else if r {
			t.Fatalf("statRunnable(%q) = true with error %v", b, err)
		}
	})
}
