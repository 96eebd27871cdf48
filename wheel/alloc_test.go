package wheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// loadedBase returns a base holding n timers spread over every level.
func loadedBase(n int) (*Base, []Timer) {
	b := new(Base)
	b.Init(9, 1000)
	timers := make([]Timer, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range timers {
		b.Add(&timers[i], b.Clk()+r.Uint64N(TimeoutCutoff(9)))
	}
	return b, timers
}

// TestNoAllocs checks the house rule: arming, re-arming, cancelling and
// expiring never allocate.
func TestNoAllocs(t *testing.T) {
	b, timers := loadedBase(4096)
	r := rand.New(rand.NewPCG(3, 4))
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		// Re-arm an existing timer the way __mod_timer does.
		tm := &timers[i%len(timers)]
		i++
		b.Forward(b.Clk() + 1)
		b.Detach(tm)
		b.Add(tm, b.Clk()+r.Uint64N(100_000))
	}); n != 0 {
		t.Errorf("re-arm: %v allocations per run, want 0", n)
	}

	b, timers = loadedBase(4096)
	i = 0
	if n := testing.AllocsPerRun(1000, func() {
		if !b.Detach(&timers[i]) {
			t.Fatal("cancelled timer was not pending")
		}
		i++
	}); n != 0 {
		t.Errorf("cancel: %v allocations per run, want 0", n)
	}

	b, timers = loadedBase(64)
	j := b.Clk()
	fired := 0
	if n := testing.AllocsPerRun(1000, func() {
		// One timer per tick, expiring at the next.
		b.Add(&timers[int(j)%len(timers)], j)
		j++
		for b.Collect(j) {
			for tm := b.NextExpired(); tm != nil; tm = b.NextExpired() {
				fired++
			}
		}
	}); n != 0 {
		t.Errorf("Collect/NextExpired: %v allocations per run, want 0", n)
	}
	if fired < 1000 {
		t.Errorf("only %d timers fired in 1001 ticks", fired)
	}

	b, timers = loadedBase(4096)
	i = 0
	if n := testing.AllocsPerRun(100, func() {
		b.Detach(&timers[i]) // may leave a recalc pending
		i++
		b.NextTimerInterrupt(b.Clk())
		b.Recalc()
	}); n != 0 {
		t.Errorf("NextTimerInterrupt/Recalc: %v allocations per run, want 0", n)
	}

	src, _ := loadedBase(512)
	dst, _ := loadedBase(16)
	if n := testing.AllocsPerRun(1, func() {
		src.MigrateTo(dst, 1)
	}); n != 0 {
		t.Errorf("MigrateTo: %v allocations, want 0", n)
	}
}

// TestLockDroppedWhileRunning exercises the locking the package comment
// prescribes, under -race: one base behind a mutex, workers arming,
// re-arming and cancelling their timers, and a ticker that collects under
// the lock and drops it while each expired timer's function runs (which
// may re-arm the timer). Every arm must end exactly once, fired or
// cancelled.
func TestLockDroppedWhileRunning(t *testing.T) {
	var (
		mu      sync.Mutex
		b       Base
		jiffies atomic.Uint64
		arms    atomic.Int64 // arms that made a timer pending
		ends    atomic.Int64 // fired or cancelled while pending
		stop    atomic.Bool
	)
	b.Init(9, 0)
	const workers, perWorker, ops = 3, 32, 1500
	timers := make([]Timer, workers*perWorker)
	var rearm func(tm *Timer)
	rearm = func(tm *Timer) {
		ends.Add(1) // this arm fired
		if stop.Load() {
			return
		}
		// The expiry is read under the lock: another goroutine may re-arm
		// the timer while its function runs.
		mu.Lock()
		if e := tm.Expires(); e%3 == 0 {
			b.Forward(jiffies.Load())
			if !tm.Pending() {
				b.Add(tm, jiffies.Load()+e%50)
				arms.Add(1)
			}
		}
		mu.Unlock()
	}

	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			mine := timers[w*perWorker : (w+1)*perWorker]
			for range ops {
				tm := &mine[r.IntN(len(mine))]
				mu.Lock()
				j := jiffies.Load()
				b.Forward(j)
				if b.Detach(tm) {
					ends.Add(1) // cancelled
				}
				if r.IntN(4) != 0 {
					b.Add(tm, j+r.Uint64N(600))
					arms.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	ticker := func(until func() bool) {
		for !until() {
			j := jiffies.Add(1)
			mu.Lock()
			for b.Collect(j) {
				for tm := b.NextExpired(); tm != nil; tm = b.NextExpired() {
					mu.Unlock()
					rearm(tm)
					mu.Lock()
				}
			}
			mu.Unlock()
		}
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	ticker(func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	// Drain: no more re-arms; run until nothing is pending.
	stop.Store(true)
	ticker(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return b.Len() == 0
	})
	if arms.Load() != ends.Load() || arms.Load() == 0 {
		t.Errorf("%d arms, %d fired or cancelled", arms.Load(), ends.Load())
	}
}
