package hrtimer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// liveBase returns a base holding n queued timers between 1 s and 2 s.
func liveBase(b *testing.B, n int, cfg Config) (*CPUBase, []Timer) {
	cpu, _ := NewCPUBase(0, cfg)
	live := make([]Timer, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range live {
		cpu.Setup(&live[i], Monotonic, ModeAbs)
		if _, err := cpu.Start(&live[i], 0, 1e9+rng.Int64N(1e9), 0, ModeAbs); err != nil {
			b.Fatal(err)
		}
	}
	return cpu, live
}

// BenchmarkStartCancel100k: start a timer and cancel it again on a base
// that holds 100,000 other timers.
func BenchmarkStartCancel100k(b *testing.B) {
	cpu, _ := liveBase(b, 100_000, Config{})
	extra := make([]Timer, 1024)
	for i := range extra {
		cpu.Setup(&extra[i], Monotonic, ModeAbs)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	exp := make([]int64, 4096)
	for i := range exp {
		exp[i] = rng.Int64N(3e9)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := &extra[i&1023]
		cpu.Start(t, 0, exp[i&4095], 50_000, ModeAbs)
		cpu.TryCancel(t)
	}
}

// BenchmarkRestart100k: restart (remove and requeue) one of 100,000 queued
// timers.
func BenchmarkRestart100k(b *testing.B) {
	cpu, live := liveBase(b, 100_000, Config{})
	rng := rand.New(rand.NewPCG(3, 4))
	exp := make([]int64, 4096)
	for i := range exp {
		exp[i] = 1e9 + rng.Int64N(1e9)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		cpu.Start(&live[(i*7919)%len(live)], 0, exp[i&4095], 0, ModeAbs)
	}
}

// BenchmarkGoTimerResetStop100k is the peer of BenchmarkStartCancel100k:
// the Go runtime's timers (a 4-ary heap per P), with 100,000 live timers.
func BenchmarkGoTimerResetStop100k(b *testing.B) {
	live := make([]*time.Timer, 100_000)
	for i := range live {
		live[i] = time.AfterFunc(time.Hour+time.Duration(i), func() {})
	}
	defer func() {
		for _, t := range live {
			t.Stop()
		}
	}()
	extra := make([]*time.Timer, 1024)
	for i := range extra {
		extra[i] = time.AfterFunc(time.Hour, func() {})
		extra[i].Stop()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	d := make([]time.Duration, 4096)
	for i := range d {
		d[i] = time.Hour + time.Duration(rng.Int64N(3e9))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := extra[i&1023]
		t.Reset(d[i&4095])
		t.Stop()
	}
}

// BenchmarkInterrupt measures one hrtimer_interrupt (Interrupt, Next/Done
// for each due timer, End) with k timers due, on a base that holds 100,000
// timers that are not.
func BenchmarkInterrupt(b *testing.B) {
	for _, k := range []int{1, 16} {
		b.Run(map[int]string{1: "due=1", 16: "due=16"}[k], func(b *testing.B) {
			cpu, _ := liveBase(b, 100_000, Config{})
			due := make([]Timer, k)
			for i := range due {
				cpu.Setup(&due[i], Monotonic, ModeAbs)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				now := int64(i) // all below the live timers
				for j := range due {
					cpu.Start(&due[j], now, now, 0, ModeAbs)
				}
				p, err := cpu.Interrupt(now)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for t := p.Next(); t != nil; t = p.Next() {
					p.Done(t, NoRestart)
					n++
				}
				if out, err := p.End(now); err != nil || out.Retry || n != k {
					b.Fatalf("pass ran %d, %+v %v", n, out, err)
				}
			}
		})
	}
}
