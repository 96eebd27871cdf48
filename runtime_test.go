package tmigr

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// TestCloseLeavesNothing: after Close no goroutine of the runtime is left
// and every worker thread has exited (workers never unlock their thread);
// pending timers never run, Stop reports them stopped, arms after Close do
// nothing, sleepers return ErrClosed, and GOMAXPROCS is never touched.
func TestCloseLeavesNothing(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	before := runtime.NumGoroutine()
	for _, idle := range []IdleMode{Halt, Poll, HaltPoll} {
		rt, err := Start(Config{Idle: idle})
		if err != nil {
			t.Fatal(err)
		}
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Fatalf("GOMAXPROCS %d while running, want the program's %d (no SpareProcs)", got, procs)
		}
		var ran atomic.Int32
		pending := rt.AfterFunc(time.Hour, func() { ran.Add(1) })
		hr, _ := rt.HRAfterFunc(rt.CPUs()[0], time.Hour, func() { ran.Add(1) }, Hard)
		slept := make(chan error)
		go func() { slept <- rt.Sleep(context.Background(), time.Hour) }()
		// Busy and idle: a task, timers that fire.
		done := make(chan struct{})
		rt.Go(rt.CPUs()[0], func() { close(done) })
		<-done
		fired := make(chan struct{})
		rt.AfterFunc(time.Millisecond, func() { close(fired) })
		recv(t, fired, "a timer")
		time.Sleep(5 * time.Millisecond) // let the sleeper arm
		var tids []int
		for _, s := range rt.Stats() {
			if !osthread.ThreadExists(s.TID) {
				t.Fatalf("worker %d's thread %d not found", s.CPU, s.TID)
			}
			tids = append(tids, s.TID)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := recv(t, slept, "the sleeper"); !errors.Is(err, ErrClosed) {
			t.Fatalf("sleeper returned %v", err)
		}
		if !pending.Stop() || !hr.Stop() || ran.Load() != 0 {
			t.Fatalf("pending timers after Close: ran %d", ran.Load())
		}
		if pending.Reset(time.Millisecond) || rt.AfterFunc(0, func() { ran.Add(1) }).Stop() {
			t.Fatal("a timer armed after Close")
		}
		if err := rt.Go(rt.CPUs()[0], func() {}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Go after Close: %v", err)
		}
		if err := rt.Sleep(context.Background(), time.Millisecond); !errors.Is(err, ErrClosed) {
			t.Fatalf("Sleep after Close: %v", err)
		}
		waitFor(t, "worker threads to exit", func() bool {
			for _, tid := range tids {
				if osthread.ThreadExists(tid) {
					return false
				}
			}
			return true
		})
		if got := runtime.GOMAXPROCS(0); got != procs {
			t.Fatalf("GOMAXPROCS %d after Close, want %d", got, procs)
		}
		time.Sleep(10 * time.Millisecond)
		if ran.Load() != 0 {
			t.Fatal("a timer ran after Close")
		}
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// TestStartRejectsBadConfig: bad input is an error that names the problem.
func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	cpus := machineCPUs(t)
	last := cpus[len(cpus)-1]
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{CPUs: "0-x"}, "Config.CPUs"},
		{Config{CPUs: "4095"}, "CPU 4095 is not one this process may run on"},
		{Config{Isolated: "1-"}, "Config.Isolated"},
		{Config{CPUs: "0", Isolated: "0"}, "no housekeeping worker"},
		{Config{CPUs: "0", Isolated: "5"}, "run no worker"},
		{Config{HZ: -5}, "HZ -5"},
		{Config{HZ: 20000}, "HZ 20000"},
		{Config{Idle: 9}, "idle mode"},
		{Config{Policy: 9}, "policy"},
	} {
		rt, err := Start(tc.cfg)
		if err == nil {
			rt.Close()
			t.Errorf("Start(%+v) accepted", tc.cfg)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v): %v, want it to mention %q", tc.cfg, err, tc.want)
		}
	}
	rt := newRuntime(t, Config{})
	if _, err := rt.AfterFuncOn(last+1, time.Millisecond, func() {}); err == nil || !strings.Contains(err.Error(), "no worker runs on CPU") {
		t.Errorf("AfterFuncOn a CPU without worker: %v", err)
	}
	if _, err := rt.AfterFuncOn(last, time.Millisecond, func() {}, TimerOption(64)); err == nil {
		t.Error("unknown TimerOption accepted")
	}
	if _, err := rt.HRAfterFunc(last, time.Millisecond, func() {}, HRMode(7)); err == nil {
		t.Error("unknown HRMode accepted")
	}
	if err := rt.Go(-1, func() {}); err == nil {
		t.Error("Go(-1) accepted")
	}
	if err := rt.Exclude("0-"); err == nil {
		t.Error("bad Exclude list accepted")
	}
	if err := rt.Exclude(rt.e.CPUList()); err == nil || !strings.Contains(err.Error(), "no housekeeping") {
		t.Errorf("Exclude of every worker: %v", err)
	}
	if err := rt.Online(cpus[0]); err == nil || !strings.Contains(err.Error(), "already online") {
		t.Errorf("Online of an online worker: %v", err)
	}
	for _, s := range []string{"halt", "poll", "haltpoll"} {
		if m, err := ParseIdleMode(s); err != nil || m.String() != s {
			t.Errorf("ParseIdleMode(%q) = %v, %v", s, m, err)
		}
	}
	var zero Timer
	if zero.Stop() || zero.Reset(time.Millisecond) {
		t.Error("a zero Timer reported itself active")
	}
	if _, err := Start(Config{Priority: 100}); err == nil || !strings.Contains(err.Error(), "Priority 100") {
		t.Errorf("Priority 100: %v", err)
	}
	if _, err := ParseIdleMode("spin"); err == nil {
		t.Error("ParseIdleMode(spin) accepted")
	}
	if p, err := ParsePolicy("pull"); err != nil || p != Pull {
		t.Errorf("ParsePolicy(pull) = %v, %v", p, err)
	}
}

// TestWorkersArePinned: each worker's thread runs on its CPU with a timer
// slack of 1 ns; CPU reports the worker inside its tasks and -1 elsewhere.
func TestWorkersArePinned(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	if rt.CPU() != -1 {
		t.Fatal("the test goroutine is on a worker")
	}
	for _, c := range rt.CPUs() {
		type res struct{ cpu, on, slack int }
		got := make(chan res)
		rt.Go(c, func() {
			on, _ := osthread.CurrentCPU()
			slack, _ := osthread.TimerSlack()
			got <- res{rt.CPU(), on, slack}
		})
		if r := recv(t, got, "the task"); r.cpu != c || r.on != c || r.slack != 1 {
			t.Fatalf("worker %d: CPU() %d, running on %d, slack %d", c, r.cpu, r.on, r.slack)
		}
	}
}

// TestAfterFuncQueuesOnCaller: AfterFunc from a task queues on the task's
// worker (it runs there while that worker is busy); from outside on the
// first housekeeping worker.
func TestAfterFuncQueuesOnCaller(t *testing.T) {
	t.Parallel()
	cpus := machineCPUs(t)
	if len(cpus) < 2 {
		t.Skip("needs two CPUs")
	}
	rt := newRuntime(t, Config{Isolated: strconv.Itoa(cpus[0]), Policy: None})
	ran := make(chan int, 1)
	rt.AfterFunc(time.Millisecond, func() { ran <- rt.CPU() })
	if c := recv(t, ran, "the timer"); c != cpus[1] {
		t.Fatalf("armed from outside: ran on %d, want housekeeping %d", c, cpus[1])
	}
	rt.Go(cpus[0], func() { rt.AfterFunc(time.Millisecond, func() { ran <- rt.CPU() }) })
	if c := recv(t, ran, "the timer"); c != cpus[0] {
		t.Fatalf("armed from a task on %d: ran on %d", cpus[0], c)
	}
}

// TestSleep: Sleep returns after at least d, hard and soft; a cancelled
// context ends it early with the context's error; a sleeper reused from the
// pool after a cancellation works; a task may not sleep.
func TestSleep(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	for _, m := range []HRMode{Soft, Hard} {
		for _, d := range []time.Duration{-1, 0, 100 * time.Microsecond, 2 * time.Millisecond} {
			start := time.Now()
			if err := rt.Sleep(context.Background(), d, Precise(m)); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el < d {
				t.Fatalf("%v sleep of %v returned after %v", m, d, el)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if err := rt.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled sleep: %v", err)
	}
	for range 50 {
		if err := rt.SleepOn(context.Background(), rt.CPUs()[0], 50*time.Microsecond, Hard); err != nil {
			t.Fatal(err)
		}
	}
	errc := make(chan error)
	rt.Go(rt.CPUs()[0], func() { errc <- rt.Sleep(context.Background(), time.Millisecond) })
	if err := recv(t, errc, "the task"); !errors.Is(err, ErrOnWorker) {
		t.Fatalf("Sleep in a task: %v", err)
	}
	if err := rt.SleepOn(context.Background(), -3, time.Millisecond, Soft); err == nil {
		t.Fatal("SleepOn(-3) accepted")
	}
}

// TestYieldRunsDueTimers: a task that spins calling Yield lets its worker's
// tick and hrtimers run inside it; without Yield they wait for the task.
func TestYieldRunsDueTimers(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	c := rt.CPUs()[0]
	for _, yield := range []bool{true, false} {
		var inTask atomic.Bool
		var during atomic.Int32
		ran := make(chan struct{}, 2)
		f := func() {
			if inTask.Load() {
				during.Add(1)
			}
			ran <- struct{}{}
		}
		done := make(chan struct{})
		rt.Go(c, func() {
			inTask.Store(true)
			rt.AfterFuncOn(c, time.Millisecond, f, Pinned)
			rt.HRAfterFunc(c, time.Millisecond, f, Hard)
			for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
				if yield {
					rt.Yield()
				}
			}
			inTask.Store(false)
			close(done)
		})
		recv(t, done, "the task")
		recv(t, ran, "the wheel timer")
		recv(t, ran, "the hrtimer")
		if want := map[bool]int32{true: 2, false: 0}[yield]; during.Load() != want {
			t.Fatalf("yield=%v: %d timers ran inside the task, want %d", yield, during.Load(), want)
		}
	}
	rt.Yield() // outside a task: nothing
}

// TestIdleModes: in every idle mode timers fire on idle workers, a halting
// worker sleeps in the kernel (its wake-ups are counted) and a polling one
// never does.
func TestIdleModes(t *testing.T) {
	t.Parallel()
	for _, m := range []IdleMode{Halt, Poll, HaltPoll} {
		t.Run(m.String(), func(t *testing.T) {
			rt := newRuntime(t, Config{Idle: m})
			c := rt.CPUs()[len(rt.CPUs())-1]
			for range 20 {
				ran := make(chan struct{})
				if _, err := rt.HRAfterFunc(c, 300*time.Microsecond, func() { close(ran) }, Hard); err != nil {
					t.Fatal(err)
				}
				recv(t, ran, "the hrtimer")
				time.Sleep(time.Millisecond)
			}
			st := rt.Stats()
			w := st[len(st)-1]
			if w.Timers < 20 {
				t.Fatalf("%d timers ran", w.Timers)
			}
			if m == Poll && w.Wakeups != 0 || m == Halt && w.Wakeups == 0 {
				t.Fatalf("%v: %d wake-ups from the kernel", m, w.Wakeups)
			}
		})
	}
}

// TestFatalHalts: a runtime stopped by a fatal error reports it, leaves its
// workers asleep in the kernel (no CPU time spent, even in Poll mode), and
// still closes.
func TestFatalHalts(t *testing.T) {
	t.Parallel()
	rt, err := Start(Config{Idle: Poll})
	if err != nil {
		t.Fatal(err)
	}
	rt.e.Fail(errors.New("injected"))
	if err := rt.Err(); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Err() = %v", err)
	}
	waitFor(t, "workers to halt", func() bool {
		for _, w := range rt.e.Workers() {
			if !w.Peek().Asleep {
				return false
			}
		}
		return true
	})
	cpu0 := rt.Stats()
	time.Sleep(50 * time.Millisecond)
	for i, s := range rt.Stats() {
		if d := s.CPUTime - cpu0[i].CPUTime; d > 5*time.Millisecond {
			t.Errorf("halted worker %d used %v of CPU in 50 ms", s.CPU, d)
		}
	}
	if err := rt.Offline(rt.CPUs()[0]); err == nil {
		t.Error("Offline on a failed runtime succeeded")
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPriority: with Priority the worker threads are SCHED_FIFO (where the
// test may raise them), and a worker without the right to is an error.
func TestPriority(t *testing.T) {
	t.Parallel()
	rt, err := Start(Config{CPUs: strconv.Itoa(machineCPUs(t)[0]), Priority: 1})
	if err != nil {
		if strings.Contains(err.Error(), "sched_setattr") {
			t.Skip("not allowed to use SCHED_FIFO here:", err)
		}
		t.Fatal(err)
	}
	defer rt.Close()
	got := make(chan [2]int)
	rt.Go(rt.CPUs()[0], func() {
		p, prio, _ := osthread.SchedPolicy()
		got <- [2]int{p, prio}
	})
	if r := recv(t, got, "the task"); r != [2]int{1, 1} {
		t.Fatalf("worker runs policy %d priority %d, want SCHED_FIFO (1) at 1", r[0], r[1])
	}
	done := make(chan struct{})
	rt.HRAfterFunc(rt.CPUs()[0], 100*time.Microsecond, func() { close(done) }, Hard)
	recv(t, done, "an hrtimer")
}
