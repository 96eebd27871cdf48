package tmigr

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tmigr/tmigr/hrtimer"
)

// sleeper is a goroutine's nanosleep: an hrtimer whose expiry wakes the
// goroutine through a channel. Sleepers are pooled, so a Sleep allocates
// nothing once the pool is warm.
type sleeper struct {
	ht   hrtimer.Timer
	ch   chan struct{} // capacity 1: the wake-up
	when int64
}

var sleepers = sync.Pool{New: func() any {
	s := &sleeper{ch: make(chan struct{}, 1)}
	s.ht.Data = s
	return s
}}

func (s *sleeper) fireHR(w *worker) {
	w.st.late.record(w.now() - s.when)
	w.st.timers.Add(1) // before the wake-up, as runTimer counts
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// Sleep pauses the calling goroutine for at least d, with hrtimer precision:
// an hrtimer (soft, unless mode says Hard) on the first housekeeping worker
// wakes it. It returns early with ctx's error if ctx is done first, and
// with ErrClosed if the runtime is closed. A task or timer function must
// not sleep (ErrOnWorker): its worker could not run the timer that wakes
// it.
func (rt *Runtime) Sleep(ctx context.Context, d time.Duration, mode ...HRMode) error {
	m := Soft
	if len(mode) > 0 {
		m = mode[0]
	}
	if !rt.started() {
		return ErrNotStarted
	}
	w := rt.housekeeping(nil)
	if w == nil {
		w = rt.order[0]
	}
	return rt.SleepOn(ctx, w.cpu, d, m)
}

// SleepOn is Sleep with the hrtimer on worker cpu.
func (rt *Runtime) SleepOn(ctx context.Context, c int, d time.Duration, mode HRMode) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	if mode != Soft && mode != Hard {
		return fmt.Errorf("tmigr: unknown HRMode %d", mode)
	}
	if rt.self() != nil {
		return ErrOnWorker
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if rt.closed.Load() {
		return ErrClosed
	}
	if d <= 0 {
		return nil
	}
	s := sleepers.Get().(*sleeper)
	if err := w.hb.Setup(&s.ht, hrtimer.Monotonic, hrMode(mode)); err != nil {
		return fmt.Errorf("tmigr: %w", err)
	}
	on := rt.onBehalf(c)
	now := rt.clk.now()
	s.when = satAdd(now, int64(d))
	eff, err := on.hb.Start(&s.ht, now, int64(d), 0, hrtimer.ModeRel)
	on.hp.RUnlock()
	if err != nil {
		rt.fail(fmt.Errorf("hrtimer start on worker %d: %w", on.cpu, err))
		return rt.Err()
	}
	rt.apply(on, eff)
	select {
	case <-s.ch:
		s.recycle()
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-rt.done:
		err = ErrClosed
	}
	if r, _ := on.hb.TryCancel(&s.ht); r != 1 {
		// It fired or is firing: its wake-up is on its way, unless the
		// runtime stopped first, in which case the sleeper is dropped.
		select {
		case <-s.ch:
		case <-rt.done:
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
