package tmigr

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/internal/engine"
)

// sleeper is a goroutine's nanosleep: an hrtimer whose expiry wakes the
// goroutine through a channel. Sleepers are pooled, so a Sleep allocates
// nothing once the pool is warm; each has its placement hint (see place),
// and the pool is per P.
type sleeper struct {
	ht   hrtimer.Timer
	ch   chan struct{} // capacity 1: the wake-up
	when int64
	hint uint32
}

var sleepers = sync.Pool{New: func() any {
	s := &sleeper{ch: make(chan struct{}, 1), hint: placeSeq.Add(1)}
	s.ht.Data = s
	return s
}}

// FireHR is the sleeper's expiry (engine.Firer).
func (s *sleeper) FireHR(w *engine.Worker) {
	w.Account(w.CPU(), s.when, w.Now()) // before the wake-up, as fire counts
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Sleep pauses the calling goroutine for at least d, as time.Sleep does,
// or until ctx is done (then it returns ctx's error) or the runtime is
// closed (ErrClosed). By default a hard hrtimer wakes it, as nanosleep's
// does, on a worker placed per P (see place); opts may ask for
// Precise(Soft) or Coarse (a wheel timer, rounded up to the tick, which
// allocates its timer). A task or timer function must not sleep
// (ErrOnWorker): its worker could not run the timer that wakes it. An
// invalid option is an error.
func (rt *Runtime) Sleep(ctx context.Context, d time.Duration, opts ...Option) error {
	o := options(opts)
	if o.err != nil {
		return o.err
	}
	if !rt.started() {
		return ErrNotStarted
	}
	if o.coarse {
		return rt.sleepCoarse(ctx, d, o)
	}
	if rt.e.Self() != nil {
		return ErrOnWorker
	}
	s := sleepers.Get().(*sleeper)
	return rt.sleepHR(ctx, s, rt.place(s.hint, placeGroup), d, o.mode)
}

// sleepCoarse is Sleep on a wheel timer.
func (rt *Runtime) sleepCoarse(ctx context.Context, d time.Duration, o Option) error {
	if rt.e.Self() != nil {
		return ErrOnWorker
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if rt.e.Closed() {
		return ErrClosed
	}
	if d <= 0 {
		return nil
	}
	t := rt.newTimer("tmigr: Sleep", o)
	t.withChan()
	t.start(d)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-rt.e.Done():
		return ErrClosed
	}
}

// SleepOn is Sleep with the hrtimer on worker cpu.
func (rt *Runtime) SleepOn(ctx context.Context, c int, d time.Duration, mode HRMode) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	if err := checkMode(mode); err != nil {
		return err
	}
	if rt.e.Self() != nil {
		return ErrOnWorker
	}
	return rt.sleepHR(ctx, sleepers.Get().(*sleeper), w.CPU(), d, mode)
}

// sleepHR is SleepOn with sleeper s, back to the pool when it is done.
func (rt *Runtime) sleepHR(ctx context.Context, s *sleeper, c int, d time.Duration, mode HRMode) error {
	w := rt.e.Worker(c)
	if err := ctx.Err(); err != nil {
		sleepers.Put(s)
		return err
	}
	if rt.e.Closed() {
		sleepers.Put(s)
		return ErrClosed
	}
	if d <= 0 {
		sleepers.Put(s)
		return nil
	}
	if err := w.HB().Setup(&s.ht, hrtimer.Monotonic, hrMode(mode)); err != nil {
		return fmt.Errorf("tmigr: %w", err)
	}
	on := rt.e.OnBehalf(c)
	now := rt.e.Now()
	s.when = engine.SatAdd(now, int64(d))
	eff, err := on.HB().Start(&s.ht, now, int64(d), rt.e.Slack(), hrtimer.ModeRel)
	on.Release()
	if err != nil {
		rt.e.Fail(fmt.Errorf("hrtimer start on worker %d: %w", on.CPU(), err))
		return rt.Err()
	}
	rt.e.Apply(on, eff)
	select {
	case <-s.ch:
		s.recycle()
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-rt.e.Done():
		err = ErrClosed
	}
	if r, _ := on.HB().TryCancel(&s.ht); r != 1 {
		// It fired or is firing: its wake-up is on its way, unless the
		// runtime stopped first, in which case the sleeper is dropped.
		select {
		case <-s.ch:
		case <-rt.e.Done():
			return err
		}
	}
	s.recycle()
	return err
}

// recycle returns the sleeper to the pool, unless its wake-up is still
// being delivered (the pass that sent it has not finished with it yet):
// then it is left to the garbage collector.
func (s *sleeper) recycle() {
	if !s.ht.Active() {
		sleepers.Put(s)
	}
}
