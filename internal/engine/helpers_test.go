package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/osthread"
	"github.com/tmigr/tmigr/wheel"
)

// fakeClock is a clock the test sets: the engine's workers read it, and a
// timer function may advance it by the time it runs.
type fakeClock struct{ t int64 }

func (c *fakeClock) Now() int64 { return c.t }

// machineCPUs returns the CPUs this process may run on.
func machineCPUs(t *testing.T) []int {
	t.Helper()
	m, err := osthread.Allowed()
	if err != nil {
		t.Skip("no CPU affinity here:", err)
	}
	return m.CPUs()
}

// virtual returns a PinTo mapping workers onto the machine's CPUs round
// robin, so tests can run more workers than the machine has CPUs.
func virtual(t *testing.T) func(int) int {
	cpus := machineCPUs(t)
	return func(c int) int { return cpus[c%len(cpus)] }
}

// fakeEngine builds and boots an engine of n workers on a fake clock, with
// no threads: the tests drive its workers' event handling by hand. Its
// wheel timers' Data is the function they run; a recovered panic fails
// the test.
func fakeEngine(t *testing.T, n int, cfg Config) (*fakeClock, *Engine) {
	t.Helper()
	clk := &fakeClock{}
	cpus := fmt.Sprintf("0-%d", n-1)
	var err error
	if cfg.CPUs, err = cpumask.Parse(cpus); err != nil {
		t.Fatal(err)
	}
	if cfg.HZ == 0 {
		cfg.HZ = 1000
	}
	cfg.Clock = clk
	cfg.PinTo = virtual(t)
	cfg.RunWheel = func(w *Worker, wt *wheel.Timer) {
		w.UserCall(nil, wt.Data.(func()))
	}
	cfg.Report = func(c int, _ any, v any, _ []byte) { t.Errorf("panic on worker %d: %v", c, v) }
	e := new(Engine)
	if err := e.Init(cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.Boot(); err != nil {
		t.Fatal(err)
	}
	return clk, e
}

// hrFunc is a high-resolution timer that runs f, the least a driver's
// timer does.
type hrFunc struct {
	ht hrtimer.Timer
	f  func()
}

func (h *hrFunc) FireHR(w *Worker) { w.UserCall(nil, h.f) }

// armHR arms a hard hrtimer on behalf of worker c, d ns from the clock's
// now, that runs f.
func armHR(t *testing.T, e *Engine, c int, d int64, f func()) *hrFunc {
	t.Helper()
	h := &hrFunc{f: f}
	h.ht.Data = h
	if err := e.Worker(c).HB().Setup(&h.ht, hrtimer.Monotonic, hrtimer.ModeHard); err != nil {
		t.Fatal(err)
	}
	w := e.OnBehalf(c)
	eff, err := w.HB().Start(&h.ht, e.Now(), d, 0, hrtimer.ModeRel)
	w.Release()
	if err != nil {
		t.Fatal(err)
	}
	e.Apply(w, eff)
	return h
}

// armWheel queues a wheel timer with flags on behalf of worker c, d ns
// from the clock's now, that runs f.
func armWheel(e *Engine, c int, d int64, flags uint32, f func()) *wheel.Timer {
	wt := new(wheel.Timer)
	cpu.Setup(wt, flags)
	wt.Data = f
	now := e.Now()
	w := e.OnBehalf(c)
	g := e.Grid()
	_, kick := e.Set().Mod(w.CPU(), wt, g.Expiry(now, d), g.Jiffies(now), 0)
	w.Release()
	if kick >= 0 {
		e.Worker(kick).Kick(KickTimer)
	}
	return wt
}

// self is the CPU of the worker the caller runs on, -1 for none.
func self(e *Engine) int {
	if w := e.Self(); w != nil {
		return w.CPU()
	}
	return -1
}

// hangAfter is how long a test waits for something that must happen
// before it calls it a hang. It detects hangs, it measures nothing.
const hangAfter = 2 * time.Minute
