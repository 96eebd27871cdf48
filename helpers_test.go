package tmigr

import (
	"runtime"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

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
		if h := rt.set.Hierarchy(); h != nil {
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

// waitFor polls cond until it holds or the deadline passes. Only for
// events that must happen; timing is never asserted.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// recv waits for a value on c, failing the test after a generous timeout.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
