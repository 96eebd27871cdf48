package tmigr

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// busy keeps worker c active in a task that spins calling Yield until the
// returned stop function is called.
func busy(t *testing.T, rt *Runtime, c int) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	started := make(chan struct{})
	done := make(chan struct{})
	if err := rt.Go(c, func() {
		close(started)
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
				rt.Yield()
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	recv(t, started, "the busy task")
	return func() {
		close(quit)
		recv(t, done, "the busy task to end")
	}
}

// ranOn arms n global timers of 10-12 ms from a task on worker owner (as
// kernel code arms them, on its own CPU) and returns the workers they ran
// on, sorted. When the task returns the owner goes idle and hands its first
// event to the hierarchy, so how fast each thread gets its CPU does not
// matter.
func ranOn(t *testing.T, rt *Runtime, owner, n int) []int {
	t.Helper()
	var mu sync.Mutex
	var got []int
	var wg sync.WaitGroup
	wg.Add(n)
	f := func() {
		mu.Lock()
		got = append(got, rt.CPU())
		mu.Unlock()
		wg.Done()
	}
	if err := rt.Go(owner, func() {
		for i := range n {
			rt.AfterFunc(time.Duration(10+i%3)*time.Millisecond, f, Coarse())
		}
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, done, "the timers")
	sort.Ints(got)
	return got
}

func all(c, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = c
	}
	return s
}

// TestIsolatedWorkerPulls is seed 000 on real threads: a busy isolated
// worker and an idle housekeeping one with global timers. Under pull the
// isolated worker is the only active CPU, hence the migrator, and runs them
// all; under pull-isolated it is out of the hierarchy and the housekeeping
// worker wakes for its own. Exclude switches between the two at run time.
func TestIsolatedWorkerPulls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy Policy
		want   int // where worker 0's timers run
	}{{Pull, 1}, {PullIsolated, 0}} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			rt := newRuntime(t, Config{CPUs: "0-1", Isolated: "1", Policy: tc.policy, pinTo: virtual(t)})
			stop := busy(t, rt, 1)
			defer stop()
			got := ranOn(t, rt, 0, 10)
			if want := all(tc.want, 10); !equal(got, want) {
				t.Fatalf("ran on %v, want %v", got, want)
			}
			st := rt.Stats()
			if remote := st[1].Remote; tc.want == 1 && (remote != 10 || st[1].RemoteFor[0] != 10) || tc.want == 0 && remote != 0 {
				t.Fatalf("worker 1 ran %d remote timers (%v)", remote, st[1].RemoteFor)
			}
		})
	}
	t.Run("exclude", func(t *testing.T) {
		rt := newRuntime(t, Config{CPUs: "0-1", pinTo: virtual(t)})
		stop := busy(t, rt, 1)
		defer stop()
		for i, tc := range []struct {
			exclude string
			want    int
		}{{"", 1}, {"1", 0}, {"", 1}, {"1", 0}} {
			if err := rt.Exclude(tc.exclude); err != nil {
				t.Fatal(err)
			}
			if got, want := ranOn(t, rt, 0, 6), all(tc.want, 6); !equal(got, want) {
				t.Fatalf("step %d, isolated %q: ran on %v, want %v", i, tc.exclude, got, want)
			}
			if iso := rt.Isolated(); tc.exclude == "1" != (len(iso) == 1) {
				t.Fatalf("Isolated() = %v", iso)
			}
		}
	})
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOfflineMovesEverything: a worker going offline hands its pinned,
// global, deferrable and high-resolution timers and its queued tasks to the
// first housekeeping worker, which runs them; back online it runs its own
// timers again. An isolated worker comes back isolated.
func TestOfflineMovesEverything(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{CPUs: "0-2", Isolated: "2", pinTo: virtual(t)})
	h := rt.e.Set().Hierarchy()
	ran := make(chan string, 10)
	report := func(name string) func() { return func() { ran <- name + "@" + itoa(rt.CPU()) } }
	for _, o := range [][]TimerOption{nil, {Pinned}, {Deferrable}} {
		if _, err := rt.AfterFuncOn(1, 30*time.Millisecond, report("wheel"), o...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.HRAfterFunc(1, 30*time.Millisecond, report("hr"), Hard); err != nil {
		t.Fatal(err)
	}
	// A task queued behind a running one moves too.
	release := make(chan struct{})
	rt.Go(1, func() { <-release })
	rt.Go(1, report("task"))
	offlined := make(chan error)
	go func() { offlined <- rt.Offline(1) }()
	// Release the blocking task only once the offline request waits at
	// worker 1 (queued and kicked), or worker 1 already went offline before
	// starting the task (both tasks then moved): either way the queued task
	// runs on worker 0, however late this goroutine or the worker runs.
	w1 := rt.e.Worker(1)
	waitFor(t, "the offline request to reach worker 1", func() bool {
		p := w1.Peek()
		return !p.Online || p.Requested
	})
	close(release)
	if err := recv(t, offlined, "Offline"); err != nil {
		t.Fatal(err)
	}
	if avail, online := h.Available(), h.Online(); avail.Test(1) || online.Test(1) {
		t.Fatal("worker 1 is still in the hierarchy")
	}
	// Keep worker 0 busy so that the deferrable timer runs.
	stop := busy(t, rt, 0)
	var got []string
	for range 5 {
		got = append(got, recv(t, ran, "a moved timer or task"))
	}
	stop()
	sort.Strings(got)
	if want := "hr@0 task@0 wheel@0 wheel@0 wheel@0"; strings.Join(got, " ") != want {
		t.Fatalf("ran %v, want %s", got, want)
	}
	if err := rt.Offline(1); err == nil {
		t.Fatal("offlining an offline worker succeeded")
	}
	// While offline, timers armed on its behalf go to worker 0.
	rt.AfterFuncOn(1, time.Millisecond, report("while"), Pinned)
	if got := recv(t, ran, "a timer armed while offline"); got != "while@0" {
		t.Fatalf("ran %s", got)
	}
	if err := rt.Online(1); err != nil {
		t.Fatal(err)
	}
	rt.AfterFuncOn(1, time.Millisecond, report("back"), Pinned)
	if got := recv(t, ran, "a timer after Online"); got != "back@1" {
		t.Fatalf("ran %s", got)
	}
	// The isolated worker goes and comes back isolated (pull-isolated).
	if err := rt.Offline(2); err != nil {
		t.Fatal(err)
	}
	if err := rt.Online(2); err != nil {
		t.Fatal(err)
	}
	if avail, online := h.Available(), h.Online(); avail.Test(2) || !online.Test(2) {
		t.Fatalf("isolated worker 2 after hotplug: available %v online %v", avail, online)
	}
	// A worker cannot offline itself, and the last one cannot go.
	errc := make(chan error)
	rt.Go(1, func() { errc <- rt.Offline(1) })
	if err := recv(t, errc, "the task"); !errors.Is(err, ErrOnWorker) {
		t.Fatalf("Offline from its own task: %v", err)
	}
	fromTimer := make(chan [3]error)
	rt.AfterFunc(time.Millisecond, func() { fromTimer <- [3]error{rt.Offline(2), rt.Online(2), rt.Exclude("")} })
	for _, err := range recv(t, fromTimer, "the timer") {
		if !errors.Is(err, ErrOnWorker) {
			t.Fatalf("control from a timer function: %v", err)
		}
	}
	if err := rt.Offline(1); err != nil {
		t.Fatal(err)
	}
	if err := rt.Offline(2); err != nil {
		t.Fatal(err)
	}
	if err := rt.Offline(0); err == nil || !strings.Contains(err.Error(), "last") {
		t.Fatalf("Offline of the last worker: %v", err)
	}
	for _, c := range []int{1, 2} {
		if err := rt.Online(c); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(c int) string {
	if c < 0 {
		return "-"
	}
	return string(rune('0' + c))
}

// TestForeignArmPublished: global timers queued from outside on an idle
// worker while another is busy must reach the hierarchy, whose migrator
// runs them: also after the idle worker's previous first timer was run by
// the migrator (the idle worker then never saw its event change), and for
// a timer later than that one. A timer lost that way never runs. (Where
// they run is not asserted: an idle worker that does not get its CPU
// before a timer is within a tick of its expiry runs it itself.)
func TestForeignArmPublished(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{CPUs: "0-1", pinTo: virtual(t)})
	stop := busy(t, rt, 1)
	defer stop()
	waitFor(t, "worker 0 to go idle", func() bool { return rt.e.Worker(0).IdleSince() != 0 })
	ran := make(chan int, 1)
	var on []int
	for _, d := range []time.Duration{5, 20, 3, 40} {
		if _, err := rt.AfterFuncOn(0, d*time.Millisecond, func() { ran <- rt.CPU() }); err != nil {
			t.Fatal(err)
		}
		on = append(on, recv(t, ran, "a timer armed from outside"))
	}
	t.Logf("ran on %v", on)
}

// TestStopAfterHotplugMove: an hrtimer and a wheel timer that Offline moved
// to worker 0 are stopped by Stop (which cancels on the base the timer is
// on, not the one it was armed on behalf of), report true, and never run;
// after Online, Reset brings them back to their worker.
func TestStopAfterHotplugMove(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{CPUs: "0-1", pinTo: virtual(t)})
	ran := make(chan string, 4)
	hr, err := rt.HRAfterFunc(1, time.Hour, func() { ran <- "hr@" + itoa(rt.CPU()) }, Soft)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := rt.AfterFuncOn(1, time.Hour, func() { ran <- "wheel@" + itoa(rt.CPU()) }, Pinned)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Offline(1); err != nil {
		t.Fatal(err)
	}
	if !hr.ht.Queued() || hr.ht.CPU() != 0 {
		t.Fatalf("after Offline the hrtimer is queued %v on CPU %d, want queued on 0", hr.ht.Queued(), hr.ht.CPU())
	}
	if !hr.Stop() || !wt.Stop() {
		t.Fatal("Stop of a timer moved by Offline returned false")
	}
	if hr.ht.Queued() || wt.x.wt.Pending() {
		t.Fatal("Stop left a moved timer queued")
	}
	if err := rt.Online(1); err != nil {
		t.Fatal(err)
	}
	hr.Reset(time.Millisecond)
	wt.Reset(time.Millisecond)
	got := []string{recv(t, ran, "a timer"), recv(t, ran, "a timer")}
	sort.Strings(got)
	if want := "hr@1 wheel@1"; strings.Join(got, " ") != want {
		t.Fatalf("ran %v, want %s", got, want)
	}
}

// TestListedWhileGoingOffline: a Reset that found the timer's worker online
// and lists the timer after the worker went offline (and emptied its list
// for the last time) still has it run: the worker, parked, empties its list
// when the Reset kicks it, and the timer goes where its timers went.
// Before, it stayed listed on the parked worker and never ran.
func TestListedWhileGoingOffline(t *testing.T) {
	t.Parallel()
	var (
		once    sync.Once
		rt      *Runtime
		listing atomic.Bool // the test's Reset is the one to hold
	)
	cfg := Config{CPUs: "0-1", pinTo: virtual(t)}
	cfg.hooks.listing = func(*Timer) {
		if !listing.Load() {
			return
		}
		once.Do(func() {
			if err := rt.Offline(1); err != nil {
				t.Error(err)
			}
		})
	}
	rt, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ran := make(chan struct{}, 1)
	tm, err := rt.HRAfterFunc(1, time.Hour, func() { ran <- struct{}{} }, Soft)
	if err != nil {
		t.Fatal(err)
	}
	tm.Stop() // a Reset of a stopped timer lists it (notInCore)
	listing.Store(true)
	tm.Reset(time.Millisecond)
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a timer listed on a worker that went offline meanwhile never ran")
	}
}
