// Package osthread holds the Linux thread and CPU operations the runtime's
// workers need, so that the root package makes no raw system call itself:
// pinning the calling thread to a CPU, its timer slack, its thread id, the
// CPU time of any thread of the process, and what sysfs and procfs say about
// CPUs and threads.
//
// Every function acting on "the calling thread" must be called from a
// goroutine locked to its OS thread (runtime.LockOSThread); otherwise the
// effect lands on whichever thread the goroutine happens to run on.
package osthread

import "errors"

// ErrUnsupported is returned where the platform lacks the facility.
var ErrUnsupported = errors.New("osthread: not supported on this platform")
