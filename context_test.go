package tmigr

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestWithDeadline: the deadline context is done at its deadline, not
// before, with DeadlineExceeded as its Err and Cause and those of the
// contexts derived from it (by WithCancel, which attaches through the
// AfterFunc method, and by context.AfterFunc); cancel before makes it
// Canceled and stops the timer; a parent done first passes its Err and
// cause on; a parent with an earlier deadline keeps it; a deadline already
// past is done at once.
func TestWithDeadline(t *testing.T) {
	t.Parallel()
	forFlavours(t, func(t *testing.T, rt *Runtime, o Option) {
		t.Run("expires", func(t *testing.T) {
			const d = 700 * time.Microsecond
			deadline := time.Now().Add(d)
			ctx, cancel := rt.WithDeadline(context.Background(), deadline, o)
			defer cancel()
			if got, ok := ctx.Deadline(); !ok || !got.Equal(deadline) {
				t.Fatalf("Deadline() = %v, %v; want %v", got, ok, deadline)
			}
			child, cancelChild := context.WithCancel(ctx)
			defer cancelChild()
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			recv(t, child.Done(), "the derived context's Done")
			if now := time.Now(); now.Before(deadline) {
				t.Fatalf("done %v before its deadline", deadline.Sub(now))
			}
			recv(t, ran, "context.AfterFunc's call")
			for name, c := range map[string]context.Context{"ctx": ctx, "child": child} {
				if c.Err() != context.DeadlineExceeded || context.Cause(c) != context.DeadlineExceeded {
					t.Errorf("%s: Err %v, Cause %v; want DeadlineExceeded for both", name, c.Err(), context.Cause(c))
				}
			}
			cancel()
			if ctx.Err() != context.DeadlineExceeded {
				t.Errorf("cancel after the deadline changed Err to %v", ctx.Err())
			}
		})
		t.Run("cancelled", func(t *testing.T) {
			ctx, cancel := rt.WithTimeout(context.Background(), time.Hour, o)
			stop := context.AfterFunc(ctx, func() {})
			if !stop() {
				t.Fatal("stopping an AfterFunc of a live context returned false")
			}
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			cancel()
			recv(t, ctx.Done(), "Done after cancel")
			recv(t, ran, "context.AfterFunc's call after cancel")
			if ctx.Err() != context.Canceled || context.Cause(ctx) != context.Canceled {
				t.Fatalf("Err %v, Cause %v; want Canceled", ctx.Err(), context.Cause(ctx))
			}
			dc := ctx.(*deadlineCtx)
			dc.mu.Lock()
			armed := dc.t != nil
			dc.mu.Unlock()
			if armed {
				t.Fatal("cancel left the deadline's timer")
			}
		})
		t.Run("parent first", func(t *testing.T) {
			cause := errors.New("shut down")
			parent, cancelParent := context.WithCancelCause(context.Background())
			ctx, cancel := rt.WithTimeout(parent, time.Hour, o)
			defer cancel()
			cancelParent(cause)
			recv(t, ctx.Done(), "Done after the parent's cancel")
			if ctx.Err() != context.Canceled || context.Cause(ctx) != cause {
				t.Fatalf("Err %v, Cause %v; want Canceled, %v", ctx.Err(), context.Cause(ctx), cause)
			}
		})
		t.Run("parent earlier", func(t *testing.T) {
			parent, cancelParent := context.WithTimeout(context.Background(), time.Minute)
			defer cancelParent()
			ctx, cancel := rt.WithTimeout(parent, time.Hour, o)
			defer cancel()
			pd, _ := parent.Deadline()
			if d, ok := ctx.Deadline(); !ok || !d.Equal(pd) {
				t.Fatalf("Deadline() = %v, %v; want the parent's %v", d, ok, pd)
			}
		})
		t.Run("past", func(t *testing.T) {
			ctx, cancel := rt.WithDeadline(context.Background(), time.Now().Add(-time.Second), o)
			defer cancel()
			select {
			case <-ctx.Done():
			default:
				t.Fatal("a deadline in the past is not done at once")
			}
			if ctx.Err() != context.DeadlineExceeded {
				t.Fatalf("Err %v, want DeadlineExceeded", ctx.Err())
			}
		})
	})
}

// TestWithDeadlineRaces: many contexts whose deadlines, cancels and
// parents' cancels land at the same moments, for -race; each ends done
// with one of the three errors.
func TestWithDeadlineRaces(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				parent, cancelParent := context.WithCancel(context.Background())
				ctx, cancel := rt.WithTimeout(parent, time.Duration(i%5)*50*time.Microsecond)
				context.AfterFunc(ctx, func() {})
				switch (g + i) % 3 {
				case 0:
					cancel()
				case 1:
					cancelParent()
				}
				<-ctx.Done()
				if err := ctx.Err(); err != context.Canceled && err != context.DeadlineExceeded {
					t.Errorf("Err %v", err)
				}
				cancel()
				cancelParent()
			}
		}()
	}
	wg.Wait()
}
