//go:build linux

package osthread

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/cpumask"
)

// Allowed returns the CPUs the calling thread may run on
// (sched_getaffinity), which for a fresh thread is the process's set.
func Allowed() (cpumask.Mask, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return cpumask.Mask{}, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var m cpumask.Mask
	for c := 0; c < len(set)*64 && c < cpumask.MaxCPUs; c++ {
		if set.IsSet(c) {
			m.Set(c)
		}
	}
	return m, nil
}

// Pin restricts the calling thread to one CPU (sched_setaffinity).
func Pin(cpu int) error { return PinThread(0, cpu) }

// PinThread restricts thread (or process) tid to one CPU; 0 is the
// calling thread.
func PinThread(tid, cpu int) error {
	var set unix.CPUSet
	if cpu < 0 || cpu >= len(set)*64 {
		return fmt.Errorf("sched_setaffinity: CPU %d out of range", cpu)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("sched_setaffinity(CPU %d): %w", cpu, err)
	}
	return nil
}

// SetTimerSlack sets the calling thread's timer slack (PR_SET_TIMERSLACK):
// the range by which the kernel may delay the thread's timeouts (futex,
// nanosleep) to coalesce wake-ups. SCHED_OTHER threads inherit 50 µs; 1 ns
// is the smallest value (0 means "reset to the default").
func SetTimerSlack(ns int) error {
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(ns), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_TIMERSLACK, %d): %w", ns, err)
	}
	return nil
}

// TimerSlack returns the calling thread's timer slack in ns.
func TimerSlack() (int, error) {
	n, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("prctl(PR_GET_TIMERSLACK): %w", err)
	}
	return n, nil
}

// SetFIFO makes the calling thread SCHED_FIFO at priority prio (1-99), or
// SCHED_OTHER again with prio 0. Raising needs CAP_SYS_NICE (or an
// RLIMIT_RTPRIO allowance).
func SetFIFO(prio int) error {
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if prio == 0 {
		attr.Policy = 0 // SCHED_OTHER (SCHED_NORMAL)
	}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("sched_setattr(SCHED_FIFO, %d): %w", prio, err)
	}
	return nil
}

// SchedPolicy returns the calling thread's scheduling policy and priority.
func SchedPolicy() (policy, prio int, err error) {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("sched_getattr: %w", err)
	}
	return int(attr.Policy), int(attr.Priority), nil
}

// Gettid returns the calling thread's id.
func Gettid() int { return unix.Gettid() }

// IsMain reports whether the calling thread is the process's main thread
// (its thread id is the process id).
func IsMain() bool { return unix.Gettid() == unix.Getpid() }

// CurrentCPU returns the CPU the calling thread runs on right now
// (getcpu); for a pinned thread, its CPU.
func CurrentCPU() (int, error) {
	var cpu, node uint32
	_, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0)
	if e != 0 {
		return -1, fmt.Errorf("getcpu: %w", e)
	}
	return int(cpu), nil
}

// ThreadCPUTime returns the CPU time (user + system) thread tid of this
// process has consumed, read from its per-thread CPU clock
// (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)): the scheduler's
// sum_exec_runtime, the same account getrusage(RUSAGE_THREAD) reports in
// user and system parts, with nanosecond resolution and readable by any
// thread.
func ThreadCPUTime(tid int) (time.Duration, error) {
	clk := int32(^uint32(tid)<<3) | 4 | 2
	var ts unix.Timespec
	if err := unix.ClockGettime(clk, &ts); err != nil {
		return 0, fmt.Errorf("CPU clock of thread %d: %w", tid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// Rusage returns the user and system CPU time of the calling thread
// (getrusage(RUSAGE_THREAD)).
func Rusage() (user, sys time.Duration, err error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0, fmt.Errorf("getrusage(RUSAGE_THREAD): %w", err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), nil
}

// Monotonic reads CLOCK_MONOTONIC through the system call (not the vDSO):
// slow, for calibration and tests.
func Monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// NodeOf returns the NUMA node of cpu as sysfs shows it (a nodeN entry in
// /sys/devices/system/cpu/cpuN), or 0 when sysfs does not say.
func NodeOf(cpu int) int {
	ents, err := os.ReadDir("/sys/devices/system/cpu/cpu" + strconv.Itoa(cpu))
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if n, ok := strings.CutPrefix(e.Name(), "node"); ok {
			if v, err := strconv.Atoi(n); err == nil && v >= 0 {
				return v
			}
		}
	}
	return 0
}

// ThreadExists reports whether thread tid still belongs to this process.
func ThreadExists(tid int) bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
	return err == nil
}

// Threads returns the number of threads of this process (the Threads: line
// of /proc/self/status).
func Threads() (int, error) {
	return statusField("/proc/self/status", "Threads:")
}

// ContextSwitches returns the voluntary and involuntary context switches of
// thread tid of this process (/proc/self/task/TID/status). A voluntary
// switch is the thread going to sleep: for a worker, one per halt.
func ContextSwitches(tid int) (voluntary, involuntary int, err error) {
	path := "/proc/self/task/" + strconv.Itoa(tid) + "/status"
	if voluntary, err = statusField(path, "voluntary_ctxt_switches:"); err != nil {
		return 0, 0, err
	}
	involuntary, err = statusField(path, "nonvoluntary_ctxt_switches:")
	return voluntary, involuntary, err
}

func statusField(path, key string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s: no %q line", path, key)
}

// Runnable reports whether thread tid of this process is in the running
// state (R in /proc/self/task/TID/stat: on a CPU or waiting for one), as
// against sleeping. A thread whose wait ended but that has not run since is
// runnable; one whose timed wait has not ended yet (its timer is late, as
// a VM's often are) is not.
func Runnable(tid int) (bool, error) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return false, err
	}
	return statRunnable(b)
}

// statRunnable reads the state of a /proc/PID/stat line: the field after
// the command, which is in parentheses and may itself hold spaces and
// parentheses, so the last ')' ends it.
func statRunnable(b []byte) (bool, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || b[i+1] != ' ' {
		return false, fmt.Errorf("osthread: malformed stat line %q", b)
	}
	return b[i+2] == 'R', nil
}
