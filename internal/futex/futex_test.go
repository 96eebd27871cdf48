//go:build linux

package futex

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func mono(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// TestWaitTimesOutNotEarly: the deadline is absolute CLOCK_MONOTONIC and the
// wait never returns "timed out" before it.
func TestWaitTimesOutNotEarly(t *testing.T) {
	var w atomic.Uint32
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond} {
		deadline := mono(t) + int64(d)
		for {
			r, err := Wait(&w, 0, deadline)
			if err != nil {
				t.Fatal(err)
			}
			if r == TimedOut {
				break
			}
		}
		if now := mono(t); now < deadline {
			t.Fatalf("timed out %d ns before the deadline", deadline-now)
		}
	}
}

// TestWaitValueMismatch: a word that no longer holds val returns at once.
func TestWaitValueMismatch(t *testing.T) {
	var w atomic.Uint32
	w.Store(1)
	r, err := Wait(&w, 0, Forever)
	if err != nil || r != Again {
		t.Fatalf("Wait on a changed word: result %d err %v, want Again", r, err)
	}
}

// TestWake: a waiter without deadline is woken by Wake after the word
// changes.
func TestWake(t *testing.T) {
	var w atomic.Uint32
	w.Store(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w.Load() == 1 {
			if _, err := Wait(&w, 1, Forever); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	w.Store(0)
	if _, err := Wake(&w, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken")
	}
}
