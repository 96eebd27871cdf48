// Command tmigr-guest is the load that "tmigr lab record" runs inside its
// QEMU guests while the kernel traces its timers: busy loops and periodic
// sleepers, each alone on a CPU of its own. The recorder builds it
// (CGO_ENABLED=0, a static binary) and puts it in the guest's initramfs.
//
// Usage:
//
//	tmigr-guest run [-busy LIST] [-sleepers LIST] [-rt-sleepers LIST]
//	                [-timerfd LIST] [-posix-timers LIST] [-epoll LIST]
//	                [-tcp LIST] [-storm LIST]
//	                [-period D] [-abs] [-fifo-prio P]
//	                [-housekeeping LIST] [-ready FILE] [-for D]
//	tmigr-guest busy -cpu N [-for D]
//	tmigr-guest sleep -cpu N [-period D] [-abs] [-fifo P] [-for D]
//	tmigr-guest at -changes 'TIME CHANGE; ...' [-pid PID] [-marker FILE]
//	tmigr-guest drain
//
// run starts one worker per CPU of the lists (cpulists, "1-7,9"): a busy
// loop, a SCHED_OTHER sleeper, or a SCHED_FIFO sleeper of priority P. A
// sleeper calls clock_nanosleep(CLOCK_MONOTONIC) in a loop, for D each time
// (default 3ms), or with -abs until the next multiple of D after its start
// (TIMER_ABSTIME: a period that does not drift). The other loads (timerfd,
// POSIX timers, epoll timeouts, TCP over loopback, a child process that
// arms many timers and exits) are in loads_linux.go. On PREEMPT_RT the
// difference between the two kinds of sleeper is the point: the kernel
// wakes a SCHED_FIFO task from hard interrupt context and any other task
// from the timer softirq.
//
// Each worker is a goroutine locked to its OS thread, and the thread is
// pinned to its CPU (sched_setaffinity of the thread). Every other thread
// of the process (the Go runtime's own) is pinned to the -housekeeping
// CPUs, so that a loaded CPU runs its worker and nothing else of ours.
// When every worker runs on its CPU, run creates the -ready file; it then
// runs until killed, or for -for D.
//
// busy and sleep run one worker, for trying a load by hand. at makes the
// run-time changes of a recording (an isolated cpuset partition, the
// timer_migration sysctl, CPU hotplug) at their times; see at_linux.go.
// drain waits until the console has sent all it holds, for /init to power
// off without losing the end of its output.
//
// Run it with GODEBUG=asyncpreemptoff=1, as the recorder's /init does: the
// Go runtime otherwise signals a goroutine that runs for 10ms to preempt
// it, an interrupt on every busy CPU that is no part of the load. The busy
// loop makes no call and allocates nothing, so it never needs preempting.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/cpumask"
)

type kind int

const (
	busy kind = iota
	sleeper
	fifoSleeper
	timerfdW
	posixTimerW
	epollW
	tcpW
	stormW
)

func (k kind) String() string {
	return [...]string{"busy loop", "sleeper", "SCHED_FIFO sleeper", "timerfd", "POSIX timer", "epoll timeout", "TCP loopback", "timer storm"}[k]
}

// worker is one load on one CPU.
type worker struct {
	cpu    int
	kind   kind
	period time.Duration
	abs    bool
	prio   int
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "tmigr-guest: %v\n", err)
		os.Exit(2)
	}
}

const usage = `usage:
  tmigr-guest run [-busy LIST] [-sleepers LIST] [-rt-sleepers LIST] [-period D] [-abs]
                  [-timerfd LIST] [-posix-timers LIST] [-epoll LIST] [-tcp LIST] [-storm LIST]
                  [-fifo-prio P] [-housekeeping LIST] [-ready FILE] [-for D]
  tmigr-guest busy -cpu N [-for D]
  tmigr-guest sleep -cpu N [-period D] [-abs] [-fifo P] [-for D]
  tmigr-guest at -changes 'TIME CHANGE; ...' [-pid PID] [-marker FILE]
  tmigr-guest storm-child -cpu N
  tmigr-guest drain`

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "at":
		return runAt(args[1:])
	case "storm-child":
		fs := flag.NewFlagSet("storm-child", flag.ContinueOnError)
		cpu := fs.Int("cpu", -1, "the CPU")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *cpu < 0 || *cpu >= cpumask.MaxCPUs {
			return fmt.Errorf("storm-child: -cpu %d: give the CPU", *cpu)
		}
		return stormChild(*cpu)
	case "drain":
		// tcdrain(1): wait until the console (standard output) has
		// sent all it holds, before /init powers the guest off.
		if err := unix.IoctlSetInt(1, unix.TCSBRK, 1); err != nil {
			return fmt.Errorf("drain: tcdrain of standard output: %v", err)
		}
		return nil
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dur := fs.Duration("for", 0, "run this long, then exit (default: until killed)")
	period := fs.Duration("period", 3*time.Millisecond, "sleepers' period")
	abs := fs.Bool("abs", false, "sleep until absolute deadlines (TIMER_ABSTIME)")
	var ws []worker
	var hk *cpumask.Mask
	var ready string
	switch args[0] {
	case "run":
		busyL := fs.String("busy", "", "CPUs to run a busy loop on")
		sleepL := fs.String("sleepers", "", "CPUs to run a SCHED_OTHER sleeper on")
		rtL := fs.String("rt-sleepers", "", "CPUs to run a SCHED_FIFO sleeper on")
		tfdL := fs.String("timerfd", "", "CPUs to run a periodic timerfd reader on")
		ptL := fs.String("posix-timers", "", "CPUs to run a periodic POSIX timer's signal waiter on")
		epL := fs.String("epoll", "", "CPUs to run an epoll_wait with the period as timeout on")
		tcpL := fs.String("tcp", "", "CPUs to run a TCP loopback ping-pong every period on")
		stormL := fs.String("storm", "", "CPUs to start a child that arms many timers and exits on, every 10 periods")
		prio := fs.Int("fifo-prio", 50, "SCHED_FIFO priority of the rt sleepers")
		hkL := fs.String("housekeeping", "", "CPUs for the process's other threads (default: leave them)")
		fs.StringVar(&ready, "ready", "", "file to create once every worker runs on its CPU")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		var seen cpumask.Mask
		for _, l := range []struct {
			name string
			list string
			kind kind
		}{{"-busy", *busyL, busy}, {"-sleepers", *sleepL, sleeper}, {"-rt-sleepers", *rtL, fifoSleeper},
			{"-timerfd", *tfdL, timerfdW}, {"-posix-timers", *ptL, posixTimerW}, {"-epoll", *epL, epollW}, {"-tcp", *tcpL, tcpW}, {"-storm", *stormL, stormW}} {
			m, err := cpumask.Parse(l.list)
			if err != nil {
				return fmt.Errorf("%s: %v", l.name, err)
			}
			if dup := m.And(seen); !dup.Empty() {
				return fmt.Errorf("%s: CPUs %s have a load already", l.name, dup)
			}
			seen = seen.Or(m)
			for c := m.First(); c >= 0; c = m.Next(c) {
				ws = append(ws, worker{cpu: c, kind: l.kind, period: *period, abs: *abs, prio: *prio})
			}
		}
		if *hkL != "" {
			m, err := cpumask.Parse(*hkL)
			if err != nil || m.Empty() {
				return fmt.Errorf("-housekeeping %q: not a non-empty cpulist (%v)", *hkL, err)
			}
			hk = &m
		}
	case "busy", "sleep":
		cpu := fs.Int("cpu", -1, "the CPU")
		prio := 0
		if args[0] == "sleep" {
			fs.IntVar(&prio, "fifo", 0, "run as SCHED_FIFO of this priority (default SCHED_OTHER)")
		}
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *cpu < 0 || *cpu >= cpumask.MaxCPUs {
			return fmt.Errorf("%s: -cpu %d: give the CPU to run on", args[0], *cpu)
		}
		w := worker{cpu: *cpu, kind: busy, period: *period, abs: *abs, prio: prio}
		if args[0] == "sleep" {
			w.kind = sleeper
			if prio != 0 {
				w.kind = fifoSleeper
			}
		}
		ws = append(ws, w)
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", args[0], fs.Arg(0))
	}
	for _, w := range ws {
		if w.kind != busy && (w.period < 10*time.Microsecond || w.period > 10*time.Second) {
			return fmt.Errorf("-period %v: outside 10µs..10s", w.period)
		}
		if w.kind == fifoSleeper && (w.prio < 1 || w.prio > 99) {
			return fmt.Errorf("SCHED_FIFO priority %d: outside 1..99", w.prio)
		}
	}
	if len(ws) == 0 {
		return errors.New("no load: give -busy, -sleepers, -rt-sleepers, -timerfd, -posix-timers, -epoll, -tcp or -storm")
	}
	return start(ws, hk, ready, *dur)
}

// start runs the workers and never returns unless one fails to start.
func start(ws []worker, hk *cpumask.Mask, ready string, dur time.Duration) error {
	// Every worker holds a P for good; GOMAXPROCS otherwise follows the
	// process's affinity, which is the housekeeping CPUs here. An
	// explicit value also stops the runtime from changing it later.
	runtime.GOMAXPROCS(len(ws) + 1)
	// The workers allocate nothing once started; without a collector
	// there is no stop-the-world to wait for goroutines that never stop.
	debug.SetGCPercent(-1)
	if hk != nil {
		if err := pinProcess(*hk); err != nil {
			return err
		}
	}
	errs := make(chan error, len(ws))
	for _, w := range ws {
		go w.run(errs)
	}
	for range ws {
		if err := <-errs; err != nil {
			return err
		}
	}
	if ready != "" {
		if err := os.WriteFile(ready, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
	}
	if dur > 0 {
		time.Sleep(dur)
		os.Exit(0)
	}
	select {}
}

// pinProcess pins every thread of the process to m. A thread created while
// the walk runs inherits its creator's mask, which may be the old one, so
// the walk repeats until it finds no thread it has not pinned.
func pinProcess(m cpumask.Mask) error {
	var set unix.CPUSet
	for c := m.First(); c >= 0; c = m.Next(c) {
		set.Set(c)
	}
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing the process's threads: %v", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(filepath.Base(e.Name()))
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pinning thread %d to CPUs %s: %v", tid, m, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// sleeperName is the comm of a sleeper's thread, NUL-terminated; the
// replay's hrtimer check knows it (replay/hrtimer.go).
var sleeperName = []byte("tmigr-sleeper\x00")

// run locks the goroutine to its thread, pins the thread, reports on errs
// and runs the load.
func (w worker) run(errs chan<- error) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(w.cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		errs <- fmt.Errorf("%v on CPU %d: sched_setaffinity: %v (is the CPU online?)", w.kind, w.cpu, err)
		return
	}
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(0, &got); err != nil || got != set {
		errs <- fmt.Errorf("%v on CPU %d: the thread's affinity did not take (%v)", w.kind, w.cpu, err)
		return
	}
	if w.kind == sleeper || w.kind == fifoSleeper {
		// The sleeper's thread has a name of its own, so that a trace
		// tells it from the runtime's threads on its CPU (all of them
		// share a CPU with a load when every CPU has one).
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&sleeperName[0])), 0, 0, 0); err != nil {
			errs <- fmt.Errorf("%v on CPU %d: naming the thread: %v", w.kind, w.cpu, err)
			return
		}
	}
	if w.kind == fifoSleeper {
		attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(w.prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			errs <- fmt.Errorf("%v on CPU %d: sched_setattr(SCHED_FIFO, %d): %v", w.kind, w.cpu, w.prio, err)
			return
		}
	}
	if loop, ok, err := w.setupTimerLoad(); ok {
		if err != nil {
			errs <- fmt.Errorf("%v on CPU %d: %v", w.kind, w.cpu, err)
			return
		}
		errs <- nil
		loop()
		return
	}
	if w.kind != busy {
		// Sleep once before reporting: a sleeper that cannot sleep
		// fails now, not in the middle of the recording.
		ts := unix.NsecToTimespec(w.period.Nanoseconds())
		if err := nanosleep(0, &ts); err != 0 && err != unix.EINTR {
			errs <- fmt.Errorf("%v on CPU %d: clock_nanosleep: %v", w.kind, w.cpu, err)
			return
		}
	}
	errs <- nil
	switch {
	case w.kind == busy:
		spin()
	case w.abs:
		sleepAbsolute(w.period)
	default:
		sleepRelative(w.period)
	}
}

// setupTimerLoad sets up a load of loads_linux.go and returns its loop;
// ok is false for the busy loop and the sleepers.
func (w worker) setupTimerLoad() (loop func(), ok bool, err error) {
	switch w.kind {
	case timerfdW:
		loop, err = timerfdLoad(w.period)
	case posixTimerW:
		loop, err = posixTimerLoad(w.period)
	case epollW:
		loop, err = epollLoad(w.period)
	case tcpW:
		loop, err = tcpLoad(w.period)
	case stormW:
		loop, err = stormLoad(w.cpu, w.period)
	default:
		return nil, false, nil
	}
	return loop, true, err
}

// spin busy-loops forever: no call, no allocation, no system call.
func spin() {
	for {
	}
}

// The sleepers enter clock_nanosleep with a raw system call, which the Go
// runtime does not see: to the runtime the goroutine keeps running on its
// P. Through the runtime's own syscall path, every sleep would make the
// runtime's monitor thread (sysmon) check on the P in the syscall, which
// then woke several times as often, on the housekeeping CPUs
// (docs/performance.md). The loop has no preemption point the runtime could
// stop it at, which is fine: nothing here needs stopping (the garbage
// collector is off).

func sleepRelative(period time.Duration) {
	ts := unix.NsecToTimespec(period.Nanoseconds())
	for {
		nanosleep(0, &ts)
	}
}

func sleepAbsolute(period time.Duration) {
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	next := now.Nano()
	for {
		next += period.Nanoseconds()
		ts := unix.NsecToTimespec(next)
		for nanosleep(unix.TIMER_ABSTIME, &ts) == unix.EINTR {
		}
	}
}

// nanosleep is clock_nanosleep(CLOCK_MONOTONIC, flags, ts, NULL).
func nanosleep(flags int, ts *unix.Timespec) unix.Errno {
	_, _, e := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, uintptr(flags), uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	return e
}
