package tmigr

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestZeroConfigLeavesGOMAXPROCS: a runtime of the zero Config changes
// nothing process-wide: GOMAXPROCS is the program's throughout, while it
// runs and after Close (Start raised it by one per worker, for good).
func TestZeroConfigLeavesGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	rt, err := Start(Config{})
	if err != nil {
		t.Fatal(err)
	}
	during := runtime.GOMAXPROCS(0)
	rt.e.Loaded(rt.e.Now()) // a late wake-up, which put "spares" back
	afterLate := runtime.GOMAXPROCS(0)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if after := runtime.GOMAXPROCS(0); during != before || afterLate != before || after != before {
		t.Fatalf("GOMAXPROCS %d before Start, %d running, %d after a late wake-up, %d after Close: want %d throughout",
			before, during, afterLate, after, before)
	}
}

// fakeProcs is the Go runtime's GOMAXPROCS as procsAccount sees it:
// runtime.GOMAXPROCS(n > 0) makes the value the program's (custom), and
// SetDefaultGOMAXPROCS makes it automatic again at the default.
type fakeProcs struct {
	procs, def int
	custom     bool
	env        string
	sets       int // calls that set a value (each stops the world)
}

func (f *fakeProcs) account() *procsAccount {
	return &procsAccount{
		get: func(n int) int {
			old := f.procs
			if n > 0 {
				f.procs, f.custom = n, true
				f.sets++
			}
			return old
		},
		setDefault: func() { f.procs, f.custom = f.def, false; f.sets++ },
		env: func(k string) string {
			if k == "GOMAXPROCS" {
				return f.env
			}
			return ""
		},
	}
}

// TestSparesGiveBackTheSetting: the last runtime with spares to close
// leaves GOMAXPROCS as the program had it: the automatic setting,
// automatic again (runtime.GOMAXPROCS(n) switched its updates off for good
// before); a value the program set, or the environment's, as that fixed
// value, not the default.
func TestSparesGiveBackTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		start      fakeProcs
		setBetween int // the program's own GOMAXPROCS while the runtimes run, 0: none
		want       fakeProcs
	}{
		{"automatic", fakeProcs{procs: 4, def: 4}, 0, fakeProcs{procs: 4, def: 4}},
		{"program's value", fakeProcs{procs: 3, def: 4, custom: true}, 0, fakeProcs{procs: 3, def: 4, custom: true}},
		{"environment's value", fakeProcs{procs: 4, def: 4, custom: true, env: "4"}, 0, fakeProcs{procs: 4, def: 4, custom: true, env: "4"}},
		{"program's value set while running", fakeProcs{procs: 4, def: 4}, 6, fakeProcs{procs: 6, def: 4, custom: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.start
			p := f.account()
			p.adjust(2)
			if f.procs != tc.start.procs+2 {
				t.Fatalf("GOMAXPROCS %d with a runtime of 2 workers, want %d", f.procs, tc.start.procs+2)
			}
			p.adjust(1)
			if tc.setBetween != 0 {
				f.procs, f.custom = tc.setBetween, true
				p.adjust(0) // a late wake-up puts the spares on top
				if f.procs != tc.setBetween+3 {
					t.Fatalf("GOMAXPROCS %d after a late wake-up, want the program's %d plus 3", f.procs, tc.setBetween)
				}
			}
			p.adjust(-2)
			p.adjust(-1)
			got := f
			got.sets = 0
			if got != tc.want {
				t.Fatalf("after the last Close: %+v, want %+v", got, tc.want)
			}
			sets := f.sets
			p.adjust(0) // a late wake-up of no runtime with spares
			p.adjust(-1)
			if f.sets != sets || f.procs != tc.want.procs {
				t.Fatalf("an adjust with no spares changed GOMAXPROCS: %+v", f)
			}
		})
	}
}

// TestAutomaticGOMAXPROCSAfterClose: after Start and Close, with the zero
// Config and with SpareProcs, the Go runtime still updates GOMAXPROCS by
// itself: narrowing the process's CPU affinity to one CPU brings it to 1.
// In a child process of its own, whose affinity the test narrows. Before,
// Start's runtime.GOMAXPROCS call switched the updates off for good.
func TestAutomaticGOMAXPROCSAfterClose(t *testing.T) {
	if mode := os.Getenv("TMIGR_PROCS_CHILD"); mode != "" {
		automaticChild(t, mode == "spares")
		return
	}
	if len(machineCPUs(t)) < 2 {
		t.Skip("needs 2 CPUs to narrow the affinity to one")
	}
	t.Parallel()
	for _, mode := range []string{"zero", "spares"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestAutomaticGOMAXPROCSAfterClose$", "-test.v")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, "GODEBUG=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "TMIGR_PROCS_CHILD="+mode)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if strings.Contains(string(out), "--- SKIP") {
				t.Skipf("the child skipped:\n%s", out)
			}
			if !strings.Contains(string(out), "automatic after Close") {
				t.Fatalf("the child did not run the check:\n%s", out)
			}
		})
	}
}

// automaticChild is TestAutomaticGOMAXPROCSAfterClose's child.
func automaticChild(t *testing.T, spares bool) {
	cpus := machineCPUs(t)
	// The testing package set GOMAXPROCS (to its value, for -test.cpu),
	// which switched the updates off: a program starts automatic.
	runtime.SetDefaultGOMAXPROCS()
	before := runtime.GOMAXPROCS(0)
	rt, err := Start(Config{CPUs: strconv.Itoa(cpus[0]), SpareProcs: spares})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS %d after Close, want %d", got, before)
	}
	if before < 2 {
		t.Skip("GOMAXPROCS is 1 already: narrowing cannot show an update")
	}
	// Narrow every thread's affinity (the runtime's update reads its own
	// thread's), and keep a P busy so that its monitor does not park.
	var one unix.CPUSet
	one.Set(cpus[0])
	// Twice: a thread started meanwhile took the old affinity. A thread
	// that exited meanwhile (a worker's, after Close) is gone (ESRCH).
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip(err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			if err := unix.SchedSetaffinity(tid, &one); err != nil && err != unix.ESRCH {
				t.Skip("cannot narrow the affinity:", err)
			}
		}
	}
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for !stop.Load() {
			runtime.Gosched()
		}
	}()
	// The runtime updates at most once a second; this waits for an update
	// that must come, it times nothing.
	for end := time.Now().Add(30 * time.Second); runtime.GOMAXPROCS(0) != 1; {
		if time.Now().After(end) {
			t.Fatalf("GOMAXPROCS still %d 30 s after the affinity went to one CPU: the automatic updates are off", runtime.GOMAXPROCS(0))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Log("automatic after Close")
}
