package tmigr

import (
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/engine"
	"github.com/tmigr/tmigr/tick"
)

// TestNewFirst: when a coarse timer queued from elsewhere on an idle worker
// kicks it (newFirst), case by case.
func TestNewFirst(t *testing.T) {
	t.Parallel()
	const (
		now      = int64(10_000_000)
		earliest = int64(12_000_000) // the start of the jiffy after the timer's expiry
		never    = int64(math.MaxInt64)
	)
	for _, c := range []struct {
		name  string
		first int64
		want  bool
		why   string
	}{
		{"finding out", math.MinInt64, true, "the round may have read the bases before the timer was queued"},
		{"earlier than the hierarchy's event", 13_000_000, true, "the hierarchy would wake too late"},
		{"in the jiffy of the first event", earliest, false, "the event at first runs it (bucket_expiry is not before next_expiry)"},
		{"later than the first event", 11_500_000, false, "whoever handles first finds it"},
		{"first due", 9_000_000, true, "the due event may have been handled elsewhere before the timer was queued"},
		{"no event", never, true, "nothing would wake it"},
	} {
		if got := newFirst(earliest, c.first, now); got != c.want {
			t.Errorf("%s: newFirst(first=%d) = %v, want %v: %s", c.name, c.first, got, c.want, c.why)
		}
	}
}

// TestCoarseFromElsewhereWakesIdleWorker: a coarse timer armed from a
// goroutine that is not a worker, on a runtime whose workers are idle with
// their ticks stopped, must get its worker out of its sleep (newFirst's
// kick), for nothing else would wake it. Each round waits for the runtime
// to go quiet, then arms one timer and waits for it to fire; the generous
// timeout only catches a timer that never fires.
func TestCoarseFromElsewhereWakesIdleWorker(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	for i := range 40 {
		time.Sleep(10 * time.Millisecond) // the workers stop their ticks
		fired := make(chan struct{})
		start := time.Now()
		d := time.Duration(1+i%3) * time.Millisecond
		rt.AfterFunc(d, func() { close(fired) }, Coarse())
		select {
		case <-fired:
			if e := time.Since(start); e < d {
				t.Fatalf("round %d: fired after %v, before %v", i, e, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: a %v coarse timer armed from outside did not fire in 10 s", i, d)
		}
	}
}

// TestIdleRoundRace: a coarse timer queued from another goroutine just
// after a worker's idle round handed the hierarchy its event, whose arm
// reads firstGlobal after the worker published it, must still wake the
// worker. Two hooks hold both sides in that order: the worker after its
// round (until the timer is queued), the arm after queueing (until the
// worker has published). Before firstWake, firstGlobal was recomputed from
// the bases there, so it included the new timer, which the hierarchy did
// not hold; the arm, finding the timer not earlier than firstGlobal, did
// not kick, and the timer waited for the worker's next wake-up, an hour
// away (a lost wake-up CI saw once in TestTimerModifiedEarlier).
func TestIdleRoundRace(t *testing.T) {
	t.Parallel()
	var (
		inRound   = make(chan struct{})
		queued    = make(chan struct{})
		published = make(chan struct{})
		caught    atomic.Bool // the worker's round that the test holds
		arming    atomic.Bool // the test's Reset is the one to hold
		fired     = make(chan struct{})
	)
	c := machineCPUs(t)[0]
	var cfg Config
	cfg.hooks.idled = func(w *engine.Worker, r tick.Ready, done bool) {
		if w.CPU() != c || !r.Stopped || r.Tick < w.Now()+int64(time.Minute) {
			return // only a round with nothing due but the hour timer
		}
		if !done && caught.CompareAndSwap(false, true) {
			close(inRound)
			<-queued
		} else if done && caught.Load() && arming.CompareAndSwap(true, false) {
			close(published)
		}
	}
	cfg.hooks.queued = func(*Timer) {
		if arming.Load() {
			close(queued)
			<-published
		}
	}
	cfg.CPUs = strconv.Itoa(c)
	rt := newRuntime(t, cfg)
	tm, err := rt.AfterFuncOn(c, time.Hour, func() { close(fired) })
	if err != nil {
		t.Fatal(err)
	}
	arming.Store(true)
	select {
	case <-inRound:
	case <-time.After(hangAfter):
		t.Fatal("the worker never stopped its tick")
	}
	tm.Reset(5 * time.Millisecond)
	select {
	case <-fired:
	case <-time.After(hangAfter):
		t.Fatalf("a timer queued during its worker's idle round did not fire in %v", hangAfter)
	}
}
