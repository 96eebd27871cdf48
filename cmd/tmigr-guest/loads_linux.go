package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loads beyond busy loops and sleepers, each a worker alone on its
// CPU, all of them periodic with -period:
//
//	timerfd      a periodic timerfd (CLOCK_MONOTONIC) read in a loop
//	posix-timer  a periodic POSIX timer (timer_create, SIGEV_THREAD_ID) whose
//	             signal the worker waits for with sigtimedwait
//	epoll        epoll_wait on an empty epoll set with the period as its
//	             timeout, in milliseconds (at least 1)
//	tcp          a TCP connection over loopback with keepalive (1 s idle),
//	             one byte each way every period: the kernel's retransmit,
//	             delayed-ACK and keepalive timers
//	storm        every 10 periods (at least 20 ms) a child process that arms
//	             stormTimers timerfds and as many POSIX timers, 1 to 5 s
//	             ahead, and exits: the kernel cancels them all at its exit
//
// Like the sleepers they enter the kernel with raw system calls, unseen by
// the Go runtime.

// stormTimers is how many timers of each kind a storm child arms.
const stormTimers = 32

// postTimerSignal is the signal the POSIX timer worker's timer sends
// (SIGRTMIN+6; the Go runtime uses none of the real-time signals).
const postTimerSignal = 40

func timerfdLoad(period time.Duration) (func(), error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, 0)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %v", err)
	}
	ts := unix.NsecToTimespec(period.Nanoseconds())
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: ts, Value: ts}, nil); err != nil {
		return nil, fmt.Errorf("timerfd_settime: %v", err)
	}
	return func() {
		var buf [8]byte
		for {
			unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), 8)
		}
	}, nil
}

// sigevent is the kernel's struct sigevent for SIGEV_THREAD_ID.
type sigevent struct {
	value  uintptr
	signo  int32
	notify int32
	tid    int32
	_      [64 - 8 - 4 - 4 - 4]byte
}

const sigevThreadID = 4

// posixTimer creates a CLOCK_MONOTONIC POSIX timer that sends signo to the
// calling thread.
func posixTimer(signo int) (int, error) {
	ev := sigevent{signo: int32(signo), notify: sigevThreadID, tid: int32(unix.Gettid())}
	var id int32
	if _, _, e := unix.RawSyscall(unix.SYS_TIMER_CREATE, unix.CLOCK_MONOTONIC, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&id))); e != 0 {
		return 0, fmt.Errorf("timer_create: %v", e)
	}
	return int(id), nil
}

func posixTimerSet(id int, value, interval time.Duration) error {
	spec := unix.ItimerSpec{Interval: unix.NsecToTimespec(interval.Nanoseconds()), Value: unix.NsecToTimespec(value.Nanoseconds())}
	if _, _, e := unix.RawSyscall6(unix.SYS_TIMER_SETTIME, uintptr(id), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0); e != 0 {
		return fmt.Errorf("timer_settime: %v", e)
	}
	return nil
}

func posixTimerLoad(period time.Duration) (func(), error) {
	set := uint64(1) << (postTimerSignal - 1)
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0); e != 0 {
		return nil, fmt.Errorf("rt_sigprocmask: %v", e)
	}
	id, err := posixTimer(postTimerSignal)
	if err != nil {
		return nil, err
	}
	if err := posixTimerSet(id, period, period); err != nil {
		return nil, err
	}
	return func() {
		var info [128]byte
		for {
			unix.RawSyscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&info[0])), 0, 8, 0, 0)
		}
	}, nil
}

func epollLoad(period time.Duration) (func(), error) {
	ep, err := unix.EpollCreate1(0)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %v", err)
	}
	ms := max(period.Milliseconds(), 1)
	return func() {
		var evs [1]unix.EpollEvent
		for {
			unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), 1, uintptr(ms), 0, 0)
		}
	}, nil
}

// tcpPair connects two TCP sockets over loopback, keepalive on both.
func tcpPair() (client, server int, err error) {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("socket: %v", err)
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, 0, fmt.Errorf("bind: %v", err)
	}
	if err := unix.Listen(l, 1); err != nil {
		return 0, 0, fmt.Errorf("listen: %v", err)
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		return 0, 0, fmt.Errorf("getsockname: %v", err)
	}
	client, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("socket: %v", err)
	}
	if err := unix.Connect(client, sa); err != nil {
		return 0, 0, fmt.Errorf("connect to loopback: %v", err)
	}
	server, _, err = unix.Accept(l)
	if err != nil {
		return 0, 0, fmt.Errorf("accept: %v", err)
	}
	for _, fd := range []int{client, server} {
		for _, o := range []struct{ level, opt, v int }{
			{unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1},
			{unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 1},
			{unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 1},
		} {
			if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
				return 0, 0, fmt.Errorf("setsockopt: %v", err)
			}
		}
	}
	return client, server, nil
}

func tcpLoad(period time.Duration) (func(), error) {
	c, srv, err := tcpPair()
	if err != nil {
		return nil, err
	}
	return func() {
		ts := unix.NsecToTimespec(period.Nanoseconds())
		var b [1]byte
		p := uintptr(unsafe.Pointer(&b[0]))
		for {
			unix.RawSyscall(unix.SYS_WRITE, uintptr(c), p, 1)
			unix.RawSyscall(unix.SYS_READ, uintptr(srv), p, 1)
			unix.RawSyscall(unix.SYS_WRITE, uintptr(srv), p, 1)
			unix.RawSyscall(unix.SYS_READ, uintptr(c), p, 1)
			nanosleep(0, &ts)
		}
	}, nil
}

// stormLoad starts a storm child on its CPU every 10 periods.
func stormLoad(cpu int, period time.Duration) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	every := max(10*period, 20*time.Millisecond)
	child := func(stderr io.Writer) error {
		cmd := exec.Command(self, "storm-child", "-cpu", strconv.Itoa(cpu))
		cmd.Stderr = stderr
		return cmd.Run()
	}
	// One child now: a storm that cannot run fails before the recording.
	if err := child(os.Stderr); err != nil {
		return nil, fmt.Errorf("storm child: %v", err)
	}
	return func() {
		ts := unix.NsecToTimespec(every.Nanoseconds())
		for {
			// A child fails while its CPU is offline or out of the
			// load's cpuset (the run-time changes): no message, which
			// would land in the middle of the console's report.
			child(nil)
			nanosleep(0, &ts)
		}
	}, nil
}

// stormChild arms the storm's timers on cpu and returns: the process exits
// with them pending.
func stormChild(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("storm child on CPU %d: %v", cpu, err)
	}
	for i := range stormTimers {
		ahead := time.Second + time.Duration(i)*4*time.Second/stormTimers
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, 0)
		if err != nil {
			return fmt.Errorf("timerfd_create: %v", err)
		}
		if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(ahead.Nanoseconds())}, nil); err != nil {
			return fmt.Errorf("timerfd_settime: %v", err)
		}
		id, err := posixTimer(int(unix.SIGURG))
		if err != nil {
			return err
		}
		if err := posixTimerSet(id, ahead, 0); err != nil {
			return err
		}
	}
	return nil
}
