package bench

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tmigr/tmigr"
)

// BenchmarkAPI and BenchmarkAPIParallel measure each library as a user
// calls it: one op re-arms one of apiTimers live timers through the
// library's public API (tmigr's Timer.Reset, time.Timer.Reset, and for the
// two wheel libraries, which have no working reset, Stop and a new
// AfterFunc). Timers fire while it runs: one re-arm in apiShortEvery asks
// for a short timeout (apiShortMin to apiShortMax), which mostly expires
// before the timer is touched again; the others ask for apiLongMin to
// apiLongMax. Every timer's function only counts, and fired/op reports
// how many ran per op, cpu-ns/op what an op cost the whole process (every
// thread's CPU time: tmigr's workers, package time's timer runs and heap
// fixes in the scheduler, which ns/op, the caller's wall time, leaves out
// where another core does them). The tmigr runtime runs on every CPU with
// its default configuration (tmigr-slack50: with Config.Slack 50 µs, the
// kernel's default timer slack) but for Config.SpareProcs, which the
// benchmark, owning its process, asks for as a latency-minded program would
// (it raises GOMAXPROCS by one per worker until the runtime is closed, so
// each runtime is started for its sub-benchmark alone).
const (
	apiTimers     = 100_000
	apiTable      = 1 << 18
	apiShortEvery = 32
	apiShortMin   = 100 * time.Microsecond
	apiShortMax   = 2 * time.Millisecond
	apiLongMin    = time.Second
	apiLongMax    = 10 * time.Second
)

type apiWorkload struct {
	idx [apiTable]int32
	dur [apiTable]time.Duration
}

var apiLoad = sync.OnceValue(func() *apiWorkload {
	w := new(apiWorkload)
	r := rand.New(rand.NewPCG(2026, 13))
	span := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	for i := range w.idx {
		w.idx[i] = int32(r.IntN(apiTimers))
		if i%apiShortEvery == 0 {
			w.dur[i] = span(apiShortMin, apiShortMax)
		} else {
			w.dur[i] = span(apiLongMin, apiLongMax)
		}
	}
	return w
})

// apiInitial is timer i's first timeout: a long one, so the run starts
// with apiTimers live timers.
func apiInitial(i int) time.Duration {
	return apiLongMin + time.Duration(uint64(i)*2654435761%uint64(apiLongMax-apiLongMin))
}

var apiImpls = []struct {
	name  string
	setup func(n int, timeout func(int) time.Duration) live
}{
	{"tmigr", newTmigrAPI},
	{"tmigr-slack50", newTmigrSlackAPI},
	{"tmigr-coarse", newTmigrCoarseAPI},
	{"std", newStdAPI},
	{"antlabs", newAntlabs},
	{"russellluo", newRussellLuo},
}

// BenchmarkAPI: re-arms from one goroutine.
func BenchmarkAPI(b *testing.B) {
	runAPI(b, func(b *testing.B, l live, w *apiWorkload) {
		for i := range b.N {
			k := i & (apiTable - 1)
			l.rearm(int(w.idx[k]), w.dur[k])
		}
	})
}

// BenchmarkAPIParallel: re-arms from GOMAXPROCS goroutines (b.RunParallel).
// Goroutine g of G touches only the timers whose number is g modulo G, so
// no two goroutines re-arm one timer (the wheel libraries' re-arm replaces
// the handle, which would be a data race).
func BenchmarkAPIParallel(b *testing.B) {
	runAPI(b, func(b *testing.B, l live, w *apiWorkload) {
		var next atomic.Int32
		b.RunParallel(func(pb *testing.PB) {
			G := runtime.GOMAXPROCS(0)
			g := int(next.Add(1)-1) % G
			k := g * (apiTable / G)
			for pb.Next() {
				k = (k + 1) & (apiTable - 1)
				i := int(w.idx[k])/G*G + g
				if i >= apiTimers {
					i -= G
				}
				l.rearm(i, w.dur[k])
			}
		})
	})
}

// runAPI runs ops as a sub-benchmark of each library: the library's
// apiTimers live timers are made for each b.N round, before its timer
// starts, and stopped after it (b.Cleanup), and fired/op counts the timers
// that ran. Per round, not once per sub-benchmark, because the testing
// package sets GOMAXPROCS before each measured round, after the round of
// one iteration: a tmigr runtime started in that first round had its spare
// Ps taken (it puts them back at its workers' next late wake-up), and one
// still running when the rounds end makes the testing package report that
// the benchmark "left GOMAXPROCS set" to its value.
func runAPI(b *testing.B, ops func(b *testing.B, l live, w *apiWorkload)) {
	for _, impl := range apiImpls {
		w := apiLoad()
		b.Run(impl.name, func(b *testing.B) {
			l := impl.setup(apiTimers, apiInitial)
			b.Cleanup(l.close)
			f0 := fired.Load()
			b.ReportAllocs()
			b.ResetTimer()
			c0 := processCPU()
			ops(b, l, w)
			c1 := processCPU()
			b.StopTimer()
			b.ReportMetric(float64(fired.Load()-f0)/float64(b.N), "fired/op")
			b.ReportMetric(float64(c1-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU returns the CPU time the process has used, every thread's
// (getrusage RUSAGE_SELF, user and system): cpu-ns/op is what an op costs
// the machine, the work a library does off the caller's thread included
// (tmigr's workers, package time's timer runs in the scheduler).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// --- tmigr through its API -------------------------------------------------

type tmigrAPI struct {
	rt *tmigr.Runtime
	ts []*tmigr.Timer
}

// newTmigrAPI makes the default timers: precise (hrtimers).
func newTmigrAPI(n int, timeout func(int) time.Duration) live {
	return newTmigrAPIOn(tmigr.Config{SpareProcs: true}, n, timeout)
}

// newTmigrCoarseAPI makes wheel timers (tmigr.Coarse), rounded to the tick
// as the other libraries' and, in effect, Go's (whose idle wait is in whole
// milliseconds) are.
func newTmigrCoarseAPI(n int, timeout func(int) time.Duration) live {
	return newTmigrAPIOn(tmigr.Config{SpareProcs: true}, n, timeout, tmigr.Coarse())
}

// newTmigrSlackAPI makes the default timers on a runtime with the timer
// slack Linux gives SCHED_OTHER tasks by default (Config.Slack 50 µs):
// expiries less than that apart share a wake-up.
func newTmigrSlackAPI(n int, timeout func(int) time.Duration) live {
	return newTmigrAPIOn(tmigr.Config{Slack: 50 * time.Microsecond, SpareProcs: true}, n, timeout)
}

// newTmigrAPIOn starts a runtime with cfg and makes n timers of the
// flavour opts give, each armed for timeout(i).
func newTmigrAPIOn(cfg tmigr.Config, n int, timeout func(int) time.Duration, opts ...tmigr.Option) live {
	rt, err := tmigr.Start(cfg)
	if err != nil {
		panic(err)
	}
	a := &tmigrAPI{rt: rt, ts: make([]*tmigr.Timer, n)}
	for i := range a.ts {
		a.ts[i] = rt.AfterFunc(timeout(i), count, opts...)
	}
	return a
}

func (a *tmigrAPI) rearm(i int, d time.Duration) { a.ts[i].Reset(d) }

func (a *tmigrAPI) close() {
	for _, t := range a.ts {
		t.Stop()
	}
	a.rt.Close()
}

// --- package time through its API ------------------------------------------

// Reset alone: since Go 1.23 it is the whole re-arm of a time.AfterFunc
// timer, as tmigr's is.
type stdAPI []*time.Timer

// newStdAPI makes the same timers as BenchmarkArmStop's std row (newStd).
func newStdAPI(n int, timeout func(int) time.Duration) live {
	return stdAPI(newStd(n, timeout).(stdTimers))
}

func (s stdAPI) rearm(i int, d time.Duration) { s[i].Reset(d) }

func (s stdAPI) close() { stdTimers(s).close() }

// TestAPIRearmDoesNotAllocate: tmigr's op of BenchmarkAPI allocates nothing.
func TestAPIRearmDoesNotAllocate(t *testing.T) {
	a := newTmigrAPI(1024, apiInitial).(*tmigrAPI)
	defer a.close()
	w := apiLoad()
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		a.rearm(int(w.idx[i])%1024, w.dur[i]+time.Hour)
		i++
	}); n != 0 {
		t.Errorf("re-arm: %v allocations, want 0", n)
	}
}
