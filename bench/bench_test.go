package bench

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	russellluo "github.com/RussellLuo/timingwheel"
	antlabs "github.com/antlabs/timer"

	"github.com/tmigr/tmigr/wheel"
)

// The workload: liveTimers timers are armed before the timed loop, each at
// a random timeout between minTimeout and maxTimeout. One op then re-arms
// one of them: it cancels the timer (if it has not fired yet) and arms it
// again at a new random timeout from the same range, so the number of live
// timers stays near liveTimers. Which timer and which timeout come from
// one fixed pseudo-random table shared by every implementation.
//
// Timers that reach their timeout fire while the benchmark runs (about
// 10% of the untouched ones per second); their callback only counts. Each
// implementation runs them its own way: tmigr on its ticker goroutine with
// the lock dropped (as the kernel's timer softirq does), the runtime and
// both libraries in a new goroutine per expiry. That work, and the
// allocations it makes, are part of what an op costs.
const (
	liveTimers = 1_000_000
	minTimeout = time.Millisecond
	maxTimeout = 10 * time.Second
	tableSize  = 1 << 20
)

type workload struct {
	idx [tableSize]int32         // which timer op i re-arms
	dur [tableSize]time.Duration // and its new timeout
}

var table = sync.OnceValue(func() *workload {
	t := new(workload)
	r := rand.New(rand.NewPCG(2025, 5))
	for i := range t.idx {
		t.idx[i] = int32(r.IntN(liveTimers))
		t.dur[i] = minTimeout + time.Duration(r.Int64N(int64(maxTimeout-minTimeout)+1))
	}
	return t
})

// initialTimeout is timer i's first timeout.
func initialTimeout(i int) time.Duration {
	return table().dur[(i*7919)%tableSize]
}

// farTimeout is timer i's timeout in BenchmarkMemPerTimer: spread like
// the others, but beyond an hour, so that none fires while it measures.
func farTimeout(i int) time.Duration { return time.Hour + initialTimeout(i) }

// The implementations: each arms n timers, timer i at timeout(i).
var impls = []struct {
	name  string
	setup func(n int, timeout func(int) time.Duration) live
}{
	{"tmigr", newTmigr},
	{"std", newStd},
	{"antlabs", newAntlabs},
	{"russellluo", newRussellLuo},
}

var fired atomic.Int64

func count()                  { fired.Add(1) }
func countTimer(*wheel.Timer) { fired.Add(1) }

// A live set of timers under one implementation.
type live interface {
	rearm(i int, d time.Duration)
	close()
}

// BenchmarkArmStop measures one re-arm (cancel, then arm at a new timeout)
// of one of a million live timers.
func BenchmarkArmStop(b *testing.B) {
	for _, impl := range impls {
		table()
		var l live
		b.Run(impl.name, func(b *testing.B) {
			if l == nil {
				// Armed once, kept across the b.N rounds of this run.
				l = impl.setup(liveTimers, initialTimeout)
			}
			t := table()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				k := i & (tableSize - 1)
				l.rearm(int(t.idx[k]), t.dur[k])
			}
		})
		if l != nil {
			l.close()
		}
	}
}

// BenchmarkMemPerTimer arms b.N new timers, none of which fires while it
// runs, and reports B/timer: the growth of the live heap divided by b.N,
// the timers and the handles kept to them included. Run it with
// -benchtime 1000000x to measure a million live timers; its ns/op is the
// cost of arming a new timer.
func BenchmarkMemPerTimer(b *testing.B) {
	for _, impl := range impls {
		b.Run(impl.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			l := impl.setup(b.N, farTimeout)
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "B/timer")
			l.close()
		})
	}
}

// --- tmigr ---------------------------------------------------------------

// tmigrCPU is one CPU's timer base as the runtime drives it: a wheel.Base
// at HZ=1000 (one tick per millisecond) behind a mutex; a ticker goroutine
// advances jiffies every millisecond and runs the expired timers with the
// lock dropped; arming forwards the base clock to jiffies and then
// detaches and adds the timer (__mod_timer).
type tmigrCPU struct {
	mu      sync.Mutex
	base    wheel.Base
	jiffies atomic.Uint64
	timers  []wheel.Timer
	stop    chan struct{}
	done    chan struct{}
}

func newTmigr(n int, timeout func(int) time.Duration) live {
	c := &tmigrCPU{timers: make([]wheel.Timer, n), stop: make(chan struct{}), done: make(chan struct{})}
	c.base.Init(wheel.DepthForHZ(1000), 0)
	for i := range c.timers {
		c.timers[i].Data = countTimer // what the timer stands for: its function
		c.rearm(i, timeout(i))
	}
	go c.tick(time.Now())
	return c
}

func (c *tmigrCPU) rearm(i int, d time.Duration) {
	ticks := uint64((d + time.Millisecond - 1) / time.Millisecond)
	t := &c.timers[i]
	c.mu.Lock()
	j := c.jiffies.Load()
	c.base.Forward(j)
	c.base.Detach(t)
	c.base.Add(t, j+ticks)
	c.mu.Unlock()
}

func (c *tmigrCPU) tick(start time.Time) {
	defer close(c.done)
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tk.C:
		}
		j := uint64(time.Since(start) / time.Millisecond)
		c.jiffies.Store(j)
		c.mu.Lock()
		for c.base.Collect(j) {
			for t := c.base.NextExpired(); t != nil; t = c.base.NextExpired() {
				c.mu.Unlock()
				t.Data.(func(*wheel.Timer))(t)
				c.mu.Lock()
			}
		}
		c.mu.Unlock()
	}
}

func (c *tmigrCPU) close() {
	close(c.stop)
	<-c.done
}

// --- the Go runtime ------------------------------------------------------

type stdTimers []*time.Timer

func newStd(n int, timeout func(int) time.Duration) live {
	s := make(stdTimers, n)
	for i := range s {
		s[i] = time.AfterFunc(timeout(i), count)
	}
	return s
}

func (s stdTimers) rearm(i int, d time.Duration) {
	s[i].Stop()
	s[i].Reset(d)
}

func (s stdTimers) close() {
	for _, t := range s {
		t.Stop()
	}
}

// --- github.com/antlabs/timer --------------------------------------------

// antlabs' TimeNoder.Reset is marked unstable in its source and can
// deadlock (it holds the old list's lock while adding to the new one), and
// a stopped node stays stopped, so a re-arm is Stop and a new AfterFunc.
type antlabsTimers struct {
	tw    antlabs.Timer
	nodes []antlabs.TimeNoder
}

func newAntlabs(n int, timeout func(int) time.Duration) live {
	a := &antlabsTimers{tw: antlabs.NewTimer(), nodes: make([]antlabs.TimeNoder, n)}
	go a.tw.Run()
	for i := range a.nodes {
		a.nodes[i] = a.tw.AfterFunc(timeout(i), count)
	}
	return a
}

func (a *antlabsTimers) rearm(i int, d time.Duration) {
	a.nodes[i].Stop()
	a.nodes[i] = a.tw.AfterFunc(d, count)
}

func (a *antlabsTimers) close() { a.tw.Stop() }

// --- github.com/RussellLuo/timingwheel -----------------------------------

// A 1 ms tick like tmigr's HZ=1000, 20 buckets a level as in its README;
// it has no reset, so a re-arm is Stop and a new AfterFunc.
type russellTimers struct {
	tw     *russellluo.TimingWheel
	timers []*russellluo.Timer
}

func newRussellLuo(n int, timeout func(int) time.Duration) live {
	r := &russellTimers{tw: russellluo.NewTimingWheel(time.Millisecond, 20), timers: make([]*russellluo.Timer, n)}
	r.tw.Start()
	for i := range r.timers {
		r.timers[i] = r.tw.AfterFunc(timeout(i), count)
	}
	return r
}

func (r *russellTimers) rearm(i int, d time.Duration) {
	r.timers[i].Stop()
	r.timers[i] = r.tw.AfterFunc(d, count)
}

func (r *russellTimers) close() { r.tw.Stop() }

// --- memory --------------------------------------------------------------

// TestTmigrFootprint reports tmigr's memory per live timer: the Timer
// itself plus a million timers' share of the base they are armed on. The
// goal is at most 64 bytes.
func TestTmigrFootprint(t *testing.T) {
	timer := unsafe.Sizeof(wheel.Timer{})
	base := unsafe.Sizeof(wheel.Base{})
	per := float64(timer) + float64(base)/liveTimers
	t.Logf("wheel.Timer %d B, wheel.Base %d B: %.3f B per timer with %d live timers", timer, base, per, liveTimers)
	if per > 64 {
		t.Errorf("%.3f B per live timer, over the 64 B goal", per)
	}
}

// TestRearmDoesNotAllocate checks the op of BenchmarkArmStop/tmigr alone,
// without the ticker, allocates nothing.
func TestRearmDoesNotAllocate(t *testing.T) {
	c := &tmigrCPU{timers: make([]wheel.Timer, 1024)}
	c.base.Init(9, 0)
	tb := table()
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		c.rearm(i%len(c.timers), tb.dur[i])
		i++
	}); n != 0 {
		t.Errorf("re-arm: %v allocations, want 0", n)
	}
}
