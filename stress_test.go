package tmigr

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmigr/tmigr/internal/soak"
)

var stressFor = flag.Duration("tmigr.stress", 700*time.Millisecond, "how long each policy of TestStress runs")

// slot is one timer of the stress test with a model of its arms.
//
// Operations and runs update the model under mu, in the order they happen
// to the timer, except that a run is recorded after the runtime claimed it,
// so an arm made in between (its Reset returning false) can come first.
// The model keeps the arms not yet run or cancelled, oldest first: in a
// correct runtime that is at most one claimed run in flight and one pending
// arm, a run belongs to the oldest, and Reset(true) or Stop(true) cancels
// the newest.
type slot struct {
	mu    sync.Mutex
	t     *Timer
	name  string
	cpu   int // the worker it is armed on behalf of, -1: the arming goroutine's
	hr    bool
	pin   bool
	live  []time.Time // due times of the arms not yet run or cancelled
	runs  int
	arms  int
	kills int
}

type stress struct {
	t       *testing.T
	rt      *Runtime
	slots   []*slot
	iso     int // a worker isolated all along
	victim  int // the worker that goes offline and back
	recv    int // where the victim's timers go
	errs    atomic.Int32
	ops     atomic.Int64 // operations made (op calls)
	offline atomic.Bool
}

func (s *stress) errorf(format string, args ...any) {
	if s.errs.Add(1) <= 10 {
		s.t.Errorf(format, args...)
	}
}

// run is every slot's function.
func (s *stress) run(sl *slot) {
	now := time.Now()
	c := s.rt.CPU()
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if len(sl.live) == 0 {
		s.errorf("%s ran with no arm outstanding", sl.name)
		return
	}
	due := sl.live[0]
	sl.live = sl.live[1:]
	sl.runs++
	if now.Before(due) {
		s.errorf("%s ran %v early", sl.name, due.Sub(now))
	}
	switch {
	case c < 0:
		s.errorf("%s ran off the workers", sl.name)
	case (sl.hr || sl.pin) && c != sl.cpu && !(sl.cpu == s.victim && c == s.recv):
		s.errorf("%s (bound to %d) ran on %d", sl.name, sl.cpu, c)
	}
}

// minRuns is how many timer functions TestStress runs at least per policy.
const minRuns = 200

// totalRuns is how many timer functions ran so far.
func (s *stress) totalRuns() int {
	n := 0
	for _, sl := range s.slots {
		sl.mu.Lock()
		n += sl.runs
		sl.mu.Unlock()
	}
	return n
}

// outstanding is how many arms have neither run nor been cancelled.
func (s *stress) outstanding() int {
	n := 0
	for _, sl := range s.slots {
		sl.mu.Lock()
		n += len(sl.live)
		sl.mu.Unlock()
	}
	return n
}

// diagnose describes the arms still outstanding and the workers' states,
// for a drain that does not finish.
func (s *stress) diagnose() string {
	var b strings.Builder
	now := time.Now()
	for _, sl := range s.slots {
		sl.mu.Lock()
		if len(sl.live) > 0 {
			fmt.Fprintf(&b, "%s: %d arms outstanding, due %v ago; armed %v", sl.name, len(sl.live), now.Sub(sl.live[0]), sl.t.armed)
			if !sl.hr {
				fmt.Fprintf(&b, ", queued on the wheel %v", s.rt.e.Set().Pending(&sl.t.x.wt))
			}
			b.WriteString("\n")
		}
		sl.mu.Unlock()
	}
	describeWorkers(&b, s.rt)
	return b.String()
}

// op arms or stops a random slot and checks the result against the model.
func (s *stress) op(r *rand.Rand) {
	s.ops.Add(1)
	sl := s.slots[r.IntN(len(s.slots))]
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if r.IntN(3) < 2 {
		d := time.Duration(r.Int64N(int64(4 * time.Millisecond)))
		due := time.Now().Add(d)
		was := sl.t.Reset(d)
		sl.arms++
		if was {
			// The newest live arm was pending: it is cancelled.
			if len(sl.live) == 0 {
				s.errorf("%s: Reset returned true with no arm outstanding", sl.name)
			} else {
				sl.live = sl.live[:len(sl.live)-1]
				sl.kills++
			}
		} else if len(sl.live) > 1 {
			s.errorf("%s: Reset returned false with %d arms outstanding", sl.name, len(sl.live))
		}
		sl.live = append(sl.live, due)
		if len(sl.live) > 2 {
			s.errorf("%s: %d arms outstanding", sl.name, len(sl.live))
		}
		return
	}
	if sl.t.Stop() {
		if len(sl.live) == 0 {
			s.errorf("%s: Stop returned true with no arm outstanding", sl.name)
			return
		}
		sl.live = sl.live[:len(sl.live)-1]
		sl.kills++
	} else if len(sl.live) > 1 {
		s.errorf("%s: Stop returned false with %d arms outstanding", sl.name, len(sl.live))
	}
}

// TestStress: goroutines and tasks arm, re-arm and stop timers of every kind
// on all workers while workers go idle and busy, the isolated set changes,
// and a worker goes offline and back. Every arm not stopped runs exactly
// once, never early, on a worker it may run on (a worker isolated all along
// never runs another's timer under pull-isolated), and Stop's and Reset's
// results agree with what ran. Four workers share the machine's CPUs. Run
// with -race; -tmigr.stress sets the duration per policy, TMIGR_SOAK=N
// (package internal/soak) the number of operations (arms and stops).
func TestStress(t *testing.T) {
	for _, p := range []Policy{PullIsolated, Pull, Push, None} {
		t.Run(p.String(), func(t *testing.T) { stressPolicy(t, p) })
	}
}

func stressPolicy(t *testing.T, policy Policy) {
	rt := newRuntime(t, Config{CPUs: "0-3", Isolated: "3", Policy: policy, pinTo: virtual(t)})
	s := &stress{t: t, rt: rt, iso: 3, victim: 1, recv: 0}
	r := rand.New(rand.NewPCG(uint64(policy), 7))
	for i := range 48 {
		sl := &slot{cpu: -1}
		f := func() { s.run(sl) }
		var err error
		c := r.IntN(4)
		switch i % 6 {
		case 0:
			sl.name, sl.t = fmt.Sprintf("#%d AfterFunc", i), rt.AfterFunc(time.Hour, f, Coarse())
		case 1:
			sl.name, sl.cpu = fmt.Sprintf("#%d global on %d", i, c), c
			sl.t, err = rt.AfterFuncOn(c, time.Hour, f)
		case 2:
			sl.name, sl.cpu, sl.pin = fmt.Sprintf("#%d pinned on %d", i, c), c, true
			sl.t, err = rt.AfterFuncOn(c, time.Hour, f, Pinned)
		case 3:
			sl.name, sl.cpu = fmt.Sprintf("#%d deferrable on %d", i, c), c
			sl.t, err = rt.AfterFuncOn(c, time.Hour, f, Deferrable)
		case 4:
			sl.name, sl.cpu, sl.hr = fmt.Sprintf("#%d hard on %d", i, c), c, true
			sl.t, err = rt.HRAfterFunc(c, time.Hour, f, Hard)
		case 5:
			sl.name, sl.cpu, sl.hr = fmt.Sprintf("#%d soft on %d", i, c), c, true
			sl.t, err = rt.HRAfterFunc(c, time.Hour, f, Soft)
		}
		if err != nil {
			t.Fatal(err)
		}
		sl.t.Stop()
		s.slots = append(s.slots, sl)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Goroutines off the workers.
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 99))
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.op(r)
				if r.IntN(8) == 0 {
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}
		}()
	}
	// Tasks: workers go busy (spinning with Yield, arming from inside) and
	// idle again.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(5, 5))
		for {
			select {
			case <-stop:
				return
			default:
			}
			c := r.IntN(4)
			spin := time.Duration(r.IntN(400)) * time.Microsecond
			seed := r.Uint64()
			done := make(chan struct{})
			if err := rt.Go(c, func() {
				defer close(done)
				tr := rand.New(rand.NewPCG(seed, 1))
				for end := time.Now().Add(spin); time.Now().Before(end); {
					if tr.IntN(4) == 0 {
						s.op(tr)
					}
					rt.Yield()
				}
			}); err != nil {
				s.errorf("Go: %v", err)
				return
			}
			// Wait for the task even once stopping: it may still arm
			// (a task descheduled between its loop check and its op
			// arms after the stop, however short its spin), and the
			// drain below must come after the last arm.
			<-done
			select {
			case <-stop:
				return
			default:
			}
			time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
		}
	}()
	// Control: the isolated set changes, a worker goes offline and back.
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(9, 9))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(2+r.IntN(8)) * time.Millisecond):
			}
			var err error
			switch i % 4 {
			case 0:
				err = rt.Exclude("2")
			case 1:
				s.offline.Store(true)
				err = rt.Offline(s.victim)
			case 2:
				err = rt.Exclude("")
			case 3:
				err = rt.Online(s.victim)
				s.offline.Store(false)
			}
			if err != nil {
				s.errorf("control step %d: %v", i%4, err)
			}
			if h := rt.e.Set().Hierarchy(); h != nil && h.Warnings() != 0 {
				s.errorf("hierarchy warnings: %d", h.Warnings())
			}
		}
	}()
	start := time.Now()
	if want := soak.Ops(t); want > 0 {
		// TMIGR_SOAK=N: run until N operations were made.
		for s.ops.Load() < want {
			time.Sleep(10 * time.Millisecond)
		}
		defer func() { t.Logf("soak: %d operations, %v", s.ops.Load(), time.Since(start).Round(time.Millisecond)) }()
	} else {
		time.Sleep(*stressFor)
	}
	// Enough happened whatever the machine's load: at least minRuns
	// timer functions ran (a loaded machine takes longer to get there).
	waitFor(t, fmt.Sprintf("%d timer functions to run", minRuns), func() bool { return s.totalRuns() >= minRuns }, s.diagnose)
	close(stop)
	wg.Wait()
	if s.offline.Load() {
		if err := rt.Online(s.victim); err != nil {
			t.Fatal(err)
		}
	}

	// Drain: every arm left runs. Wheel timers other than deferrable
	// ones wake their worker (or the migrator runs them); a deferrable one
	// runs at its worker's first tick once due, so keep every worker busy
	// through a few ticks, round after round, until nothing is left. No
	// arm is made any more (every goroutine and task has ended), so each
	// round after the last due time runs what is left; how long that takes
	// depends on the machine's load, not whether it happens.
	tick := time.Duration(rt.e.Set().TickNsec())
	waitFor(t, "every arm to run", func() bool {
		if s.outstanding() == 0 {
			return true
		}
		var drain sync.WaitGroup
		for _, c := range rt.CPUs() {
			drain.Add(1)
			if err := rt.Go(c, func() {
				defer drain.Done()
				for end := time.Now().Add(3 * tick); time.Now().Before(end); {
					rt.Yield()
				}
			}); err != nil {
				t.Fatalf("drain on worker %d: %v", c, err)
			}
		}
		drain.Wait()
		return s.outstanding() == 0
	}, s.diagnose)
	var arms, runs, kills int
	for _, sl := range s.slots {
		sl.mu.Lock()
		arms, runs, kills = arms+sl.arms, runs+sl.runs, kills+sl.kills
		if sl.runs+sl.kills != sl.arms {
			t.Errorf("%s: %d arms, %d runs, %d cancelled", sl.name, sl.arms, sl.runs, sl.kills)
		}
		sl.mu.Unlock()
	}
	st := rt.Stats()
	if policy == PullIsolated {
		if st[s.iso].Remote != 0 {
			t.Errorf("worker %d, isolated all along, ran %d timers of others: %v", s.iso, st[s.iso].Remote, st[s.iso].RemoteFor)
		}
	}
	var remote uint64
	for _, w := range st {
		remote += w.Remote
	}
	t.Logf("%d arms, %d runs, %d cancelled, %d remote expiries", arms, runs, kills, remote)
	if slices.ContainsFunc(st, func(w Stats) bool { return !w.Online }) {
		t.Error("a worker is still offline")
	}
}
