//go:build !linux

package futex

import "sync/atomic"

// Wait is not supported on this platform.
func Wait(addr *atomic.Uint32, val uint32, deadline int64) (Result, error) {
	return Again, ErrUnsupported
}

// Wake is not supported on this platform.
func Wake(addr *atomic.Uint32, n int) (int, error) { return 0, ErrUnsupported }
