package hrtimer

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmigr/tmigr/internal/soak"
)

// TestStress runs the runtime's situation under the race detector: one
// driver goroutine per CPU base running hardirq and softirq passes against
// a shared fake clock, while worker goroutines start, restart and cancel
// timers on behalf of random CPUs with random targets (so timers migrate),
// and drivers restart timers from their callbacks. Every start ("arm") is
// accounted for: it must fire exactly once, never before its soft expiry,
// or be cancelled by a try_to_cancel that returned 1; try_to_cancel must
// tell the truth (1: an unfired arm was queued; 0: none was; -1: one is
// firing). A second set of timers is cancelled with the blocking Cancel,
// after which the timer must be inactive (docs/hrtimer.md HI6).
//
// TMIGR_SOAK=N (package internal/soak) runs the whole test again and again
// until N operations (starts, restarts and cancels by the workers) have
// been checked.
func TestStress(t *testing.T) {
	ops := 3000
	if testing.Short() {
		ops = 500
	}
	var total int64
	soak.Run(t, func() int64 { return total }, func(t *testing.T) {
		stress(t, ops)
		total += int64(stressWorkers * ops)
	})
}

// stressWorkers is how many goroutines start and cancel timers in TestStress.
const stressWorkers = 6

// stress is one run of TestStress: each worker makes ops operations.
func stress(t *testing.T, ops int) {
	const ncpu, ntimers, nowned, nworkers = 4, 48, 8, stressWorkers
	var clock atomic.Int64
	clock.Store(1_000_000)
	bases := make([]*CPUBase, ncpu)
	for i := range bases {
		bases[i], _ = NewCPUBase(i, Config{PreemptRT: i%2 == 1})
	}

	type arm struct {
		soft       int64
		fired      int
		cancelled  bool
		superseded bool // queued again while firing, then restarted
	}
	type tt struct {
		mu    sync.Mutex
		t     Timer
		owned bool // cancelled with Cancel by its own worker, no accounting
		live  map[int64]*arm
		all   []*arm
		cur   *arm
		last  int64
	}
	timers := make([]*tt, ntimers+nowned)
	for i := range timers {
		w := &tt{live: map[int64]*arm{}, owned: i >= ntimers}
		w.t.Data = w
		mode := []Mode{ModeAbs, ModeSoft, ModeHard}[i%3]
		if err := bases[i%ncpu].Setup(&w.t, Monotonic, mode); err != nil {
			t.Fatal(err)
		}
		timers[i] = w
	}
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		failed.Store(true)
		t.Errorf(format, args...)
	}
	newArm := func(w *tt, soft int64) {
		a := &arm{soft: soft}
		w.live[soft], w.cur = a, a
		w.all = append(w.all, a)
		w.last = max(w.last, soft)
	}
	// settle checks a try_to_cancel result against the arms, w.mu held.
	settle := func(w *tt, r int) {
		switch r {
		case 1:
			if w.cur == nil || w.cur.fired != 0 || w.cur.cancelled {
				fail("try_to_cancel=1 but no queued arm: %+v", w.cur)
				return
			}
			w.cur.cancelled = true
			delete(w.live, w.cur.soft)
		case 0:
			if w.cur != nil && w.cur.fired == 0 && !w.cur.cancelled {
				fail("try_to_cancel=0 but arm %+v neither fired nor cancelled", w.cur)
			}
		case -1:
			firing := false
			for _, a := range w.live {
				firing = firing || a.fired == 0
			}
			if !firing {
				fail("try_to_cancel=-1 but no arm is firing")
			}
		}
	}

	var draining, stop atomic.Bool
	var drivers, others sync.WaitGroup
	drain := func(b *CPUBase, p *Pass, rng *rand.Rand) {
		for x := p.Next(); x != nil; x = p.Next() {
			soft, _, now := p.Armed()
			if now < soft {
				fail("cpu%d ran a timer at %d before its soft expiry %d", b.cpu, now, soft)
			}
			w := x.Data.(*tt)
			if w.owned {
				act := NoRestart
				if !draining.Load() && rng.IntN(2) == 0 && x.Forward(now, 3000) > 0 {
					act = Restart
				}
				p.Done(x, act)
				continue
			}
			w.mu.Lock()
			a := w.live[soft]
			if a == nil || a.fired != 0 || a.cancelled || a.superseded {
				fail("cpu%d fired an arm at soft %d that is not live: %+v", b.cpu, soft, a)
			} else {
				a.fired++
				delete(w.live, soft)
			}
			act := NoRestart
			if !draining.Load() && !x.Queued() && rng.IntN(3) == 0 {
				if x.Forward(now, int64(1+rng.IntN(5000))) > 0 {
					newArm(w, x.SoftExpires())
					act = Restart
				}
			}
			p.Done(x, act)
			w.mu.Unlock()
		}
	}
	finish := func(b *CPUBase, p *Pass) {
		for {
			out, err := p.End(clock.Load())
			if err != nil {
				fail("cpu%d end: %v", b.cpu, err)
				return
			}
			if !out.Retry {
				return
			}
			drain(b, p, rand.New(rand.NewPCG(1, 2)))
		}
	}
	for i, b := range bases {
		drivers.Add(1)
		go func() {
			defer drivers.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for !stop.Load() {
				p, err := b.Interrupt(clock.Load())
				if err != nil {
					fail("interrupt: %v", err)
					return
				}
				drain(b, p, rng)
				finish(b, p)
				if b.SoftirqActivated() {
					sp, err := b.Softirq(clock.Load())
					if err != nil {
						fail("softirq: %v", err)
						return
					}
					drain(b, sp, rng)
					finish(b, sp)
				}
				runtime.Gosched()
			}
		}()
	}
	others.Add(1)
	go func() { // the clock
		defer others.Done()
		for !stop.Load() {
			clock.Add(int64(1 + rand.IntN(300)))
			runtime.Gosched()
		}
	}()
	var workers sync.WaitGroup
	for i := range nworkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			for range ops {
				by, target := bases[rng.IntN(ncpu)], bases[rng.IntN(ncpu)]
				mode := ModeAbs
				if rng.IntN(4) == 0 {
					mode |= ModePinned
				}
				slack := []int64{0, 0, 100, 50_000}[rng.IntN(4)]
				if i == 0 { // owns the Cancel timers
					w := timers[ntimers+rng.IntN(nowned)]
					if rng.IntN(2) == 0 {
						by.StartOn(&w.t, target, clock.Load(), clock.Load()+int64(rng.IntN(20_000)), slack, mode)
					} else if by.Cancel(&w.t); w.t.Active() {
						fail("timer active after Cancel")
					}
					continue
				}
				w := timers[rng.IntN(ntimers)]
				w.mu.Lock()
				r, _ := by.TryCancel(&w.t)
				settle(w, r)
				if rng.IntN(3) != 0 {
					if r == -1 && w.t.Queued() {
						// Firing and already restarted by another
						// worker: this start replaces that arm.
						w.cur.superseded = true
						delete(w.live, w.cur.soft)
					}
					soft := max(w.last+1, clock.Load()+int64(rng.IntN(6_000))-1000)
					if _, err := by.StartOn(&w.t, target, clock.Load(), soft, slack, mode); err != nil {
						fail("start: %v", err)
					}
					newArm(w, soft)
				}
				w.mu.Unlock()
				runtime.Gosched()
			}
		}()
	}
	workers.Wait()

	// Drain: no more restarts; move the clock past every arm and wait for
	// the queues to empty.
	draining.Store(true)
	clock.Add(1 << 40)
	for {
		n := 0
		for _, b := range bases {
			n += b.Len()
		}
		if n == 0 {
			break
		}
		runtime.Gosched()
	}
	stop.Store(true)
	drivers.Wait()
	others.Wait()
	if failed.Load() {
		return
	}
	arms, fired, superseded := 0, 0, 0
	for i, w := range timers[:ntimers] {
		if w.t.Active() {
			t.Errorf("timer %d still active", i)
		}
		for _, a := range w.all {
			arms++
			fired += a.fired
			superseded += btoi(a.superseded)
			if a.fired+btoi(a.cancelled)+btoi(a.superseded) != 1 {
				t.Errorf("timer %d arm %+v is not exactly one of fired, cancelled, superseded", i, a)
			}
		}
	}
	var st Stats
	for _, b := range bases {
		s := b.Stats()
		st.Events += s.Events
		st.Retries += s.Retries
		st.Hangs += s.Hangs
	}
	t.Logf("%d arms: %d fired, %d superseded while firing, %d cancelled; %d interrupts, %d retries, %d hangs",
		arms, fired, superseded, arms-fired-superseded, st.Events, st.Retries, st.Hangs)
	if fired == 0 || fired == arms {
		t.Errorf("degenerate run: %d of %d arms fired", fired, arms)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
