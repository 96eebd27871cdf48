package tmigr

// Conformance with package time: the cases of Go's own src/time/sleep_test.go
// that apply to a timer made by time.AfterFunc, in our words, run against
// every kind of runtime timer. Nothing here asserts how fast a timer fires;
// "never early" and "exactly once" are asserted everywhere.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// kind is one way of making a timer.
type kind struct {
	name string
	cpu  int // the worker it must run on, or -1: any
	arm  func(rt *Runtime, d time.Duration, f func()) *Timer
}

func kinds(t *testing.T) []kind {
	cpus := machineCPUs(t)
	last := cpus[len(cpus)-1]
	must := func(tm *Timer, err error) *Timer {
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	return []kind{
		{"default", -1, func(rt *Runtime, d time.Duration, f func()) *Timer { return rt.AfterFunc(d, f) }},
		{"wheel", -1, func(rt *Runtime, d time.Duration, f func()) *Timer { return rt.AfterFunc(d, f, Coarse()) }},
		{"wheel-pinned", last, func(rt *Runtime, d time.Duration, f func()) *Timer {
			return must(rt.AfterFuncOn(last, d, f, Pinned))
		}},
		{"hr-hard", last, func(rt *Runtime, d time.Duration, f func()) *Timer {
			return must(rt.HRAfterFunc(last, d, f, Hard))
		}},
		{"hr-soft", cpus[0], func(rt *Runtime, d time.Duration, f func()) *Timer {
			return must(rt.HRAfterFunc(cpus[0], d, f, Soft))
		}},
	}
}

// forKinds runs test for every kind of timer, each on a fresh runtime.
func forKinds(t *testing.T, test func(t *testing.T, rt *Runtime, k kind)) {
	forKindsOn(t, func() Config { return Config{} }, test)
}

// forKindsOn is forKinds on runtimes of the Config that cfg makes, one for
// each kind (a test's hooks capture that kind's state).
func forKindsOn(t *testing.T, cfg func() Config, test func(t *testing.T, rt *Runtime, k kind)) {
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			rt := newRuntime(t, cfg())
			test(t, rt, k)
		})
	}
}

// probe counts the runs of a timer function and checks each: never before
// the time asked for (from a reading taken before the arm) and on the
// worker it belongs to.
type probe struct {
	t    *testing.T
	rt   *Runtime
	cpu  int
	runs atomic.Int32
	mu   sync.Mutex
	due  time.Time // the earliest the next run may start
	ran  chan struct{}
	body func()
}

func newProbe(t *testing.T, rt *Runtime, k kind) *probe {
	return &probe{t: t, rt: rt, cpu: k.cpu, ran: make(chan struct{}, 100)}
}

// arm records that the next run must not start before d from now.
func (p *probe) arm(d time.Duration) {
	p.mu.Lock()
	p.due = time.Now().Add(max(d, 0))
	p.mu.Unlock()
}

func (p *probe) f() {
	now := time.Now()
	p.mu.Lock()
	due := p.due
	p.mu.Unlock()
	if now.Before(due) {
		p.t.Errorf("timer ran %v early", due.Sub(now))
	}
	if c := p.rt.CPU(); c < 0 || p.cpu >= 0 && c != p.cpu {
		p.t.Errorf("timer ran on worker %d, want %d", c, p.cpu)
	}
	p.runs.Add(1)
	if p.body != nil {
		p.body()
	}
	p.ran <- struct{}{}
}

// settle gives a timer that must not run again a chance to (wrongly) do so.
func settle() { time.Sleep(30 * time.Millisecond) }

// TestAfterFuncChain: a function re-arming itself with AfterFunc(0) from its
// own run, ten times (time's TestAfterFunc).
func TestAfterFuncChain(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		n := 10
		done := make(chan struct{})
		var f func()
		f = func() {
			if n--; n > 0 {
				k.arm(rt, 0, f)
				return
			}
			close(done)
		}
		k.arm(rt, 0, f)
		recv(t, done, "the tenth run")
	})
}

// TestStopBeforeExpiry: Stop of a pending timer returns true and the
// function never runs; a second Stop returns false (TestAfterStop).
func TestStopBeforeExpiry(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		p.arm(20 * time.Millisecond)
		tm := k.arm(rt, 20*time.Millisecond, p.f)
		stopped := tm.Stop()
		if tm.Stop() {
			t.Error("second Stop returned true")
		}
		time.Sleep(60 * time.Millisecond)
		if runs := p.runs.Load(); stopped && runs != 0 || !stopped && runs != 1 {
			t.Fatalf("Stop returned %v, and the function ran %d times", stopped, runs)
		}
	})
}

// TestStopAfterFire: Stop after the function ran returns false.
func TestStopAfterFire(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		p.arm(time.Millisecond)
		tm := k.arm(rt, time.Millisecond, p.f)
		recv(t, p.ran, "the run")
		if tm.Stop() {
			t.Fatal("Stop after the run returned true")
		}
		settle()
		if n := p.runs.Load(); n != 1 {
			t.Fatalf("ran %d times", n)
		}
	})
}

// TestResetBeforeExpiry: Reset of a pending timer returns true, and the
// function runs once, not before the new time; both earlier and later
// (TestReset).
func TestResetBeforeExpiry(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		for _, tc := range []struct{ first, then time.Duration }{
			{time.Hour, 2 * time.Millisecond},
			{2 * time.Millisecond, 40 * time.Millisecond},
		} {
			p := newProbe(t, rt, k)
			p.arm(tc.first)
			tm := k.arm(rt, tc.first, p.f)
			p.arm(tc.then)
			if !tm.Reset(tc.then) {
				// Only possible if the 2 ms timer expired first.
				if tc.first == time.Hour {
					t.Fatal("Reset of a pending timer returned false")
				}
				continue
			}
			recv(t, p.ran, "the run")
			settle()
			if n := p.runs.Load(); n != 1 {
				t.Fatalf("%v then %v: ran %d times", tc.first, tc.then, n)
			}
		}
	})
}

// TestResetAfterFire: Reset after the run returns false and runs the
// function again.
func TestResetAfterFire(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		p.arm(time.Millisecond)
		tm := k.arm(rt, time.Millisecond, p.f)
		recv(t, p.ran, "the first run")
		p.arm(time.Millisecond)
		if tm.Reset(time.Millisecond) {
			t.Fatal("Reset after the run returned true")
		}
		recv(t, p.ran, "the second run")
		settle()
		if n := p.runs.Load(); n != 2 {
			t.Fatalf("ran %d times", n)
		}
	})
}

// TestResetAfterStop: Reset of a stopped timer returns false and arms it.
func TestResetAfterStop(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		tm := k.arm(rt, time.Hour, p.f)
		if !tm.Stop() {
			t.Fatal("Stop of a pending timer returned false")
		}
		p.arm(time.Millisecond)
		if tm.Reset(time.Millisecond) {
			t.Fatal("Reset of a stopped timer returned true")
		}
		recv(t, p.ran, "the run")
		settle()
		if n := p.runs.Load(); n != 1 {
			t.Fatalf("ran %d times", n)
		}
	})
}

// TestResetInsideFunction: a function re-arming its own timer sees false
// (it has expired) and runs again.
func TestResetInsideFunction(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		var tm *Timer
		var resetResult atomic.Int32
		ready := make(chan struct{})
		p.body = func() {
			<-ready
			if p.runs.Load() == 1 {
				p.arm(2 * time.Millisecond)
				if tm.Reset(2 * time.Millisecond) {
					resetResult.Store(1)
				} else {
					resetResult.Store(2)
				}
			}
		}
		p.arm(time.Millisecond)
		tm = k.arm(rt, time.Millisecond, p.f)
		close(ready)
		recv(t, p.ran, "the first run")
		recv(t, p.ran, "the second run")
		settle()
		if n := p.runs.Load(); n != 2 || resetResult.Load() != 2 {
			t.Fatalf("ran %d times, Reset inside returned true=%v", n, resetResult.Load() == 1)
		}
	})
}

// TestStopAndResetWhileRunning: while the function runs, Stop returns false
// and does not stop it; Reset returns false and runs it once more after it.
func TestStopAndResetWhileRunning(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		for _, reset := range []bool{false, true} {
			p := newProbe(t, rt, k)
			started := make(chan struct{}, 2)
			release := make(chan struct{})
			p.body = func() {
				if p.runs.Load() == 1 {
					started <- struct{}{}
					<-release
				}
			}
			p.arm(time.Millisecond)
			tm := k.arm(rt, time.Millisecond, p.f)
			recv(t, started, "the run to start")
			if reset {
				p.arm(time.Millisecond)
				if tm.Reset(time.Millisecond) {
					t.Error("Reset while the function runs returned true")
				}
			} else if tm.Stop() {
				t.Error("Stop while the function runs returned true")
			}
			close(release)
			recv(t, p.ran, "the first run")
			want := int32(1)
			if reset {
				recv(t, p.ran, "the second run")
				want = 2
			}
			settle()
			if n := p.runs.Load(); n != want {
				t.Fatalf("reset=%v: ran %d times, want %d", reset, n, want)
			}
		}
	})
}

// TestNegativeAndHugeDurations: a negative duration runs at once; one that
// overflows the clock never runs and stops (TestOverflowSleep).
func TestNegativeAndHugeDurations(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		p := newProbe(t, rt, k)
		k.arm(rt, -time.Hour, p.f)
		recv(t, p.ran, "a timer with a negative duration")
		q := newProbe(t, rt, k)
		q.arm(math.MaxInt64)
		tm := k.arm(rt, math.MaxInt64, q.f)
		settle()
		if !tm.Stop() {
			t.Fatal("an overflowing timer was not pending")
		}
		if q.runs.Load() != 0 {
			t.Fatal("an overflowing timer ran")
		}
	})
}

// TestManyTimersOnceNeverEarly: 300 timers of random 0-20 ms, a third of
// them stopped at once; the others run exactly once, never early, and the
// stopped ones whose Stop returned true never run (TestTimerStopStress).
func TestManyTimersOnceNeverEarly(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		const n = 300
		r := rand.New(rand.NewPCG(1, 2))
		probes := make([]*probe, n)
		timers := make([]*Timer, n)
		for i := range probes {
			p := newProbe(t, rt, k)
			d := time.Duration(r.Int64N(int64(20 * time.Millisecond)))
			p.arm(d)
			probes[i], timers[i] = p, k.arm(rt, d, p.f)
		}
		stopped := make([]bool, n)
		for i := 0; i < n; i += 3 {
			stopped[i] = timers[i].Stop()
		}
		for i, p := range probes {
			if !stopped[i] {
				recv(t, p.ran, "a run")
			}
		}
		settle()
		for i, p := range probes {
			if got, want := p.runs.Load(), int32(1); stopped[i] && got != 0 || !stopped[i] && got != want {
				t.Fatalf("timer %d (stopped %v) ran %d times", i, stopped[i], got)
			}
		}
	})
}

// TestPanicRecovered: a panicking function is reported to OnPanic with its
// worker and timer, and the worker goes on running timers.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			panics := make(chan Panic, 1)
			rt := newRuntime(t, Config{OnPanic: func(p Panic) { panics <- p }})
			tm := k.arm(rt, time.Millisecond, func() { panic("boom") })
			p := recv(t, panics, "the panic")
			if p.Value != "boom" || p.Timer != tm || p.CPU < 0 || k.cpu >= 0 && p.CPU != k.cpu || len(p.Stack) == 0 {
				t.Fatalf("reported %+v", p)
			}
			ok := make(chan struct{})
			k.arm(rt, time.Millisecond, func() { close(ok) })
			recv(t, ok, "a timer after the panic")
			var n uint64
			for _, s := range rt.Stats() {
				n += s.Panics
			}
			if n != 1 {
				t.Fatalf("%d panics counted", n)
			}
		})
	}
}

// TestTaskPanicRecovered: the same for a task.
func TestTaskPanicRecovered(t *testing.T) {
	t.Parallel()
	panics := make(chan Panic, 1)
	rt := newRuntime(t, Config{OnPanic: func(p Panic) { panics <- p }})
	c := rt.CPUs()[0]
	if err := rt.Go(c, func() { panic(42) }); err != nil {
		t.Fatal(err)
	}
	if p := recv(t, panics, "the panic"); p.Value != 42 || p.Timer != nil || p.CPU != c {
		t.Fatalf("reported %+v", p)
	}
	ok := make(chan int)
	rt.Go(c, func() { ok <- rt.CPU() })
	if got := recv(t, ok, "a task after the panic"); got != c {
		t.Fatalf("task ran on %d", got)
	}
}

// TestRaceWithExpiry: a Reset or Stop that lands after the core took the
// timer off its queue but before the runtime claimed it. Reset must report
// the timer active and the function run once, at the new time; Stop must
// report it stopped and the function never run. A hook holds the worker in
// that window.
func TestRaceWithExpiry(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"reset", "stop"} {
		t.Run(op, func(t *testing.T) {
			var (
				target   atomic.Pointer[Timer]
				inWindow chan struct{}
				release  chan struct{}
			)
			withHook := func() Config {
				inWindow, release = make(chan struct{}), make(chan struct{})
				var cfg Config
				cfg.hooks.expired = func(tm *Timer) {
					if target.CompareAndSwap(tm, nil) {
						close(inWindow)
						<-release
					}
				}
				return cfg
			}
			forKindsOn(t, withHook, func(t *testing.T, rt *Runtime, k kind) {
				p := newProbe(t, rt, k)
				p.arm(time.Millisecond)
				tm := k.arm(rt, time.Hour, p.f)
				target.Store(tm)
				tm.Reset(time.Millisecond)
				recv(t, inWindow, "the expiry")
				var got bool
				if op == "reset" {
					p.arm(5 * time.Millisecond)
					got = tm.Reset(5 * time.Millisecond)
				} else {
					got = tm.Stop()
				}
				close(release)
				if !got {
					t.Fatalf("%s in the expiry window returned false", op)
				}
				if op == "reset" {
					recv(t, p.ran, "the run")
				}
				settle()
				want := int32(0)
				if op == "reset" {
					want = 1
				}
				if n := p.runs.Load(); n != want {
					t.Fatalf("ran %d times, want %d", n, want)
				}
			})
		})
	}
}

// TestArmsFromOutsideNeverLost: timers armed back to back from goroutines
// off the workers, each waited for, so that arms keep landing while the
// workers are between waking and sleeping again: none may be lost (a lost
// wake-up leaves an idle worker asleep with a due timer).
func TestArmsFromOutsideNeverLost(t *testing.T) {
	t.Parallel()
	forKinds(t, func(t *testing.T, rt *Runtime, k kind) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ran := make(chan struct{}, 1)
				for i := range 150 {
					d := time.Duration((i+g)%3) * 40 * time.Microsecond
					k.arm(rt, d, func() { ran <- struct{}{} })
					select {
					case <-ran:
					case <-time.After(10 * time.Second):
						t.Errorf("goroutine %d: arm %d (%v) never ran", g, i, d)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
}

// TestTimerLayout keeps the Timer at two cache lines, the first holding
// what a Reset and the worker's look at a listed timer touch (see Timer):
// a field added or moved there would make every re-arm of one of many
// timers miss two lines again.
func TestTimerLayout(t *testing.T) {
	t.Parallel()
	var x Timer
	if n := unsafe.Sizeof(x); n != 128 {
		t.Errorf("Timer is %d bytes, want 128 (a 128-aligned size class)", n)
	}
	for _, f := range []struct {
		name string
		end  uintptr
	}{
		{"mu", unsafe.Offsetof(x.mu) + unsafe.Sizeof(x.mu)},
		{"armed", unsafe.Offsetof(x.armed) + 1},
		{"rt", unsafe.Offsetof(x.rt) + unsafe.Sizeof(x.rt)},
		{"when", unsafe.Offsetof(x.when) + 8},
		{"coreAt", unsafe.Offsetof(x.coreAt) + 8},
		{"x", unsafe.Offsetof(x.x) + unsafe.Sizeof(x.x)},
		{"moveNext", unsafe.Offsetof(x.moveNext) + unsafe.Sizeof(x.moveNext)},
		{"f", unsafe.Offsetof(x.f) + unsafe.Sizeof(x.f)},
	} {
		if f.end > 64 {
			t.Errorf("Timer.%s ends at byte %d, outside the first cache line", f.name, f.end)
		}
	}
	if off := unsafe.Offsetof(x.ht); off != 64 {
		t.Errorf("Timer.ht at byte %d, want 64 (the second line)", off)
	}
	// The first 64 bytes are one line only if the allocator aligns the
	// Timer: Go's 128-byte size class does (its spans are page-aligned).
	for range 64 {
		layoutSink = new(Timer)
		if a := uintptr(unsafe.Pointer(layoutSink)); a%64 != 0 {
			t.Fatalf("a new Timer at %#x, not on a cache line", a)
		}
	}
}

// layoutSink makes TestTimerLayout's Timers escape, allocated as the
// runtime's are.
var layoutSink *Timer
