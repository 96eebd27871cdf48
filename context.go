package tmigr

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// After waits for at least d and then sends the current time on the
// returned channel, as time.After does: NewTimer(d, opts...).C, with its
// flavours and placement. The timer cannot be stopped; until it fires its
// worker references it (a long After holds its Timer until then), so use
// NewTimer where the wait may be abandoned.
func (rt *Runtime) After(d time.Duration, opts ...Option) <-chan time.Time {
	return rt.NewTimer(d, opts...).C
}

// WithTimeout is WithDeadline(parent, time.Now().Add(timeout), opts...).
func (rt *Runtime) WithTimeout(parent context.Context, timeout time.Duration, opts ...Option) (context.Context, context.CancelFunc) {
	return rt.WithDeadline(parent, time.Now().Add(timeout), opts...)
}

// WithDeadline returns a copy of parent that is done at deadline, as
// context.WithDeadline's is, except that the deadline is one of the
// runtime's timers (AfterFunc with opts, precise by default) instead of
// package time's: a sub-millisecond deadline expires when asked, not up to
// a millisecond later. Its Err is context.DeadlineExceeded once the
// deadline passed, context.Canceled after cancel, and parent's Err when
// parent is done first; context.Cause reports the same, or parent's cause.
// Contexts derived from it see its Err, as they would a standard deadline
// context's. If parent's own deadline is not later, the result is
// context.WithCancel(parent). Calling cancel releases the timer; call it as
// soon as the work is done, as for context.WithDeadline.
//
// It is a context of its own rather than context.WithCancelCause cancelled
// by the timer: a cancelled cancel context reports context.Canceled to its
// children whatever the cause, while a deadline must read as
// DeadlineExceeded all the way down. It implements the AfterFunc method
// that package context uses to attach children without a goroutine, and
// hands Value lookups to parent, so that package context never mistakes
// parent's cancellation state for its own.
func (rt *Runtime) WithDeadline(parent context.Context, deadline time.Time, opts ...Option) (context.Context, context.CancelFunc) {
	if parent == nil {
		panic("tmigr: WithDeadline with a nil parent context")
	}
	if cur, ok := parent.Deadline(); ok && !cur.After(deadline) {
		return context.WithCancel(parent)
	}
	c := &deadlineCtx{parent: parent, deadline: deadline, done: make(chan struct{})}
	c.mu.Lock() // a parent already done cancels c at once, on another goroutine
	c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	c.mu.Unlock()
	if d := time.Until(deadline); d <= 0 {
		c.cancel(context.DeadlineExceeded)
	} else {
		t := rt.AfterFunc(d, func() { c.cancel(context.DeadlineExceeded) }, opts...)
		c.mu.Lock()
		if c.err == nil {
			c.t = t
			t = nil
		}
		c.mu.Unlock()
		if t != nil {
			t.Stop() // cancelled meanwhile
		}
	}
	return c, func() { c.cancel(context.Canceled) }
}

// deadlineCtx is WithDeadline's context.
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}

	mu         sync.Mutex
	err        error                // set once, with done closed
	t          *Timer               // the deadline, once armed; nil after cancel
	stopParent func() bool          // ends the watch on parent
	fns        map[*func()]struct{} // AfterFunc callbacks not yet run
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *deadlineCtx) String() string {
	return fmt.Sprintf("%v.WithDeadline(%s [%s])", c.parent, c.deadline, time.Until(c.deadline))
}

// cancel makes the context done with err (the first call wins): it closes
// done, stops the deadline and the watch on parent, and starts the
// AfterFunc callbacks, each on a goroutine of its own, as package context
// does. It may run on a worker (the deadline's timer function), so it does
// not block.
func (c *deadlineCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	t, fns, stop := c.t, c.fns, c.stopParent
	c.t, c.fns = nil, nil
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if stop != nil {
		stop()
	}
	for f := range fns {
		go (*f)()
	}
}

// AfterFunc is the method package context's AfterFunc and the children's
// propagation look for: f runs on a goroutine of its own once c is done
// (at once if it is); stop unregisters it and reports whether that
// prevented it from running.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.fns == nil {
		c.fns = map[*func()]struct{}{}
	}
	key := &f
	c.fns[key] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.fns[key]
		delete(c.fns, key)
		return ok
	}
}
