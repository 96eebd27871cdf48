package tmigr

import (
	"math"
	"testing"
	"time"
)

// TestNewFirst: when a coarse timer queued from elsewhere on an idle worker
// kicks it (newFirst), case by case.
func TestNewFirst(t *testing.T) {
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
