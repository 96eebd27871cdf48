package tmigr

import (
	"testing"
	"time"
)

// The benchmarks compare the runtime with the standard library side by
// side, in one run: go test -run X -bench . -benchtime 200000x

// BenchmarkArmStop: re-arm and stop one existing timer, far in the future
// (no expiry), from a goroutine off the workers.
func BenchmarkArmStop(b *testing.B) {
	rt, err := Start(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	c := rt.CPUs()[0]
	f := func() {}
	for _, k := range []struct {
		name string
		t    interface {
			Reset(time.Duration) bool
			Stop() bool
		}
	}{
		{"std", time.AfterFunc(time.Hour, f)},
		{"wheel-global", rt.AfterFunc(time.Hour, f)},
		{"wheel-pinned", must(rt.AfterFuncOn(c, time.Hour, f, Pinned))},
		{"hrtimer", must(rt.HRAfterFunc(c, time.Hour, f, Hard))},
	} {
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k.t.Reset(time.Duration(1+b.N%1000) * time.Second)
				k.t.Stop()
			}
		})
	}
}

// BenchmarkAfterFunc: make a timer and stop it.
func BenchmarkAfterFunc(b *testing.B) {
	rt, err := Start(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	f := func() {}
	b.Run("std", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			time.AfterFunc(time.Hour, f).Stop()
		}
	})
	b.Run("tmigr", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rt.AfterFunc(time.Hour, f).Stop()
		}
	})
}

// BenchmarkYield: a task's preemption point with nothing due, and the
// thread-id lookup that finds the worker.
func BenchmarkYield(b *testing.B) {
	rt, err := Start(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	done := make(chan struct{})
	rt.Go(rt.CPUs()[0], func() {
		defer close(done)
		b.ResetTimer()
		for range b.N {
			rt.Yield()
		}
	})
	<-done
}

func must(t *Timer, err error) *Timer {
	if err != nil {
		panic(err)
	}
	return t
}
