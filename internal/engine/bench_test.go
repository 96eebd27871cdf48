package engine

import (
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/osthread"
)

// BenchmarkClock: the engine's clock against time.Now and the system call.
func BenchmarkClock(b *testing.B) {
	c := NewClock()
	b.Run("tmigr", func(b *testing.B) {
		for b.Loop() {
			_ = c.Now()
		}
	})
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now()
		}
	})
	b.Run("clock_gettime-syscall", func(b *testing.B) {
		for b.Loop() {
			_ = osthread.Monotonic()
		}
	})
}
