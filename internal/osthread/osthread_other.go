//go:build !linux

package osthread

import (
	"time"

	"github.com/tmigr/tmigr/cpumask"
)

// The runtime needs Linux; elsewhere every call fails or reports nothing.

func Allowed() (cpumask.Mask, error)               { return cpumask.Mask{}, ErrUnsupported }
func Pin(cpu int) error                            { return ErrUnsupported }
func PinThread(tid, cpu int) error                 { return ErrUnsupported }
func SetTimerSlack(ns int) error                   { return ErrUnsupported }
func TimerSlack() (int, error)                     { return 0, ErrUnsupported }
func Gettid() int                                  { return -1 }
func CurrentCPU() (int, error)                     { return -1, ErrUnsupported }
func ThreadCPUTime(tid int) (time.Duration, error) { return 0, ErrUnsupported }
func Rusage() (user, sys time.Duration, err error) { return 0, 0, ErrUnsupported }
func Monotonic() int64                             { return time.Now().UnixNano() }
func NodeOf(cpu int) int                           { return 0 }
func ThreadExists(tid int) bool                    { return false }
func Threads() (int, error)                        { return 0, ErrUnsupported }
func ContextSwitches(tid int) (int, int, error)    { return 0, 0, ErrUnsupported }
func Runnable(tid int) (bool, error)               { return false, ErrUnsupported }
func IsMain() bool                                 { return false }
func SetFIFO(prio int) error                       { return ErrUnsupported }
func SchedPolicy() (int, int, error)               { return 0, 0, ErrUnsupported }
