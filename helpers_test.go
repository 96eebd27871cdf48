package tmigr

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// fakeClock is a clock the test sets: the runtime's workers read it.
type fakeClock struct{ t int64 }

func (c *fakeClock) Now() int64 { return c.t }

// newRuntime starts a runtime for a test and closes it at the end, checking
// that no fatal error stopped it and that the hierarchy is consistent.
func newRuntime(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	rt, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Err(); err != nil {
			t.Errorf("runtime stopped: %v", err)
		}
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
		if h := rt.e.Set().Hierarchy(); h != nil {
			if err := h.Check(); err != nil {
				t.Errorf("hierarchy after Close: %v", err)
			}
			if n := h.Warnings(); n != 0 {
				t.Errorf("hierarchy warnings: %d", n)
			}
		}
	})
	return rt
}

// machineCPUs returns the CPUs this process may run on.
func machineCPUs(t *testing.T) []int {
	t.Helper()
	m, err := osthread.Allowed()
	if err != nil {
		t.Skip("no CPU affinity here:", err)
	}
	return m.CPUs()
}

// virtual returns a pinTo mapping n workers onto the machine's CPUs round
// robin, so tests can run more workers than the machine has CPUs.
func virtual(t *testing.T) func(int) int {
	cpus := machineCPUs(t)
	return func(c int) int { return cpus[c%len(cpus)] }
}

// hangAfter is how long a test waits for something that must happen
// before it calls it a hang. It detects hangs, it measures nothing: far
// longer than anything takes on a machine loaded many times over.
const hangAfter = 2 * time.Minute

// waitFor polls cond until it holds or hangAfter passes. Only for events
// that must happen; timing is never asserted. diagnose, if given, says what
// is still missing when the wait times out.
func waitFor(t *testing.T, what string, cond func() bool, diagnose ...func() string) {
	t.Helper()
	for end := time.Now().Add(hangAfter); !cond(); {
		if time.Now().After(end) {
			var why string
			for _, d := range diagnose {
				why += "\n" + d()
			}
			t.Fatalf("timed out waiting for %s%s", what, why)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// describeWorkers writes what can be read of each worker's state from
// outside it (its atomics), for a wait that times out.
func describeWorkers(b *strings.Builder, rt *Runtime) {
	now := rt.e.Now()
	for _, w := range rt.e.Workers() {
		p := w.Peek()
		fmt.Fprintf(b, "worker %d: online %v, asleep %v, pending %#x, idle for %v, idling %v, pins %d, sleeps until %+v, first global %+v, ticks %d, timers %d, wakeups %d, hrtimer device %+v\n",
			w.CPU(), p.Online, p.Asleep, p.Pending, since(now, p.IdleSince), p.Idling, p.Pins,
			rel(now, p.SleepUntil), rel(now, p.FirstGlobal), p.Ticks, p.Timers, p.Wakeups, rel(now, p.Device))
	}
}

// since is the time from t (clock ns, 0: never) to now.
func since(now, t int64) time.Duration {
	if t == 0 {
		return 0
	}
	return time.Duration(now - t)
}

// rel is t (clock ns) relative to now, or "never"/"-inf" for the extremes.
func rel(now, t int64) string {
	switch t {
	case math.MaxInt64:
		return "never"
	case math.MinInt64:
		return "-inf"
	}
	return time.Duration(t - now).String()
}

// recv waits for a value on c, failing the test after hangAfter.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangAfter):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
