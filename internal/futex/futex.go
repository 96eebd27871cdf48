// Package futex is the one kernel primitive the runtime's workers sleep and
// wake on: a futex on a 32-bit state word, waited on with an absolute
// CLOCK_MONOTONIC deadline.
//
// FUTEX_WAIT_BITSET takes an absolute timeout, measured against
// CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME is set (there is no
// "FUTEX_CLOCK_MONOTONIC" flag: monotonic is the default). Plain FUTEX_WAIT
// takes a relative timeout, which would make every sleep late by the time
// between computing it and entering the kernel; the absolute form is what
// clock_nanosleep(TIMER_ABSTIME) gives, with a wake-up channel attached.
// The timeout is an hrtimer of the calling thread and carries its timer
// slack (see package osthread).
package futex

import "errors"

// ErrUnsupported is returned where the platform has no futex.
var ErrUnsupported = errors.New("futex: not supported on this platform")

// Forever is the deadline of a wait without timeout.
const Forever int64 = 1<<63 - 1

// Result says how a Wait returned.
type Result uint8

const (
	// Woken: the thread slept and was woken (by Wake, or spuriously).
	Woken Result = iota
	// TimedOut: the deadline passed; CLOCK_MONOTONIC is at or after it.
	TimedOut
	// Again: the word did not hold the expected value; the thread did not
	// sleep (EAGAIN).
	Again
	// Interrupted: a signal interrupted the sleep (EINTR).
	Interrupted
)
