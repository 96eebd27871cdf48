//go:build linux

package futex

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	opWake         = 1 // FUTEX_WAKE
	opWaitBitset   = 9 // FUTEX_WAIT_BITSET
	flagPrivate    = 128
	bitsetMatchAny = 0xffffffff
)

// Wait blocks while *addr == val, until deadline (CLOCK_MONOTONIC ns, or
// Forever) or a Wake, and says how it returned. Whatever the result, the
// caller re-examines its state word, as every futex user must: a Woken
// result may also be a spurious wake-up.
//
// It enters the kernel through unix.Syscall6, which tells the Go scheduler
// the thread may block, so its P can be handed to other goroutines
// (RawSyscall would hold the P, and stop-the-world, for the whole sleep).
func Wait(addr *atomic.Uint32, val uint32, deadline int64) (Result, error) {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if deadline != Forever {
		if deadline < 0 {
			deadline = 0
		}
		ts = unix.NsecToTimespec(deadline)
		tsp = unsafe.Pointer(&ts)
	}
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		opWaitBitset|flagPrivate, uintptr(val), uintptr(tsp), 0, bitsetMatchAny)
	switch e {
	case 0:
		return Woken, nil
	case unix.EAGAIN:
		return Again, nil
	case unix.EINTR:
		return Interrupted, nil
	case unix.ETIMEDOUT:
		return TimedOut, nil
	}
	return Woken, e
}

// Wake wakes at most n threads waiting on addr and returns how many it
// woke. It never blocks, so it uses the raw system call.
func Wake(addr *atomic.Uint32, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)),
		opWake|flagPrivate, uintptr(n), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
