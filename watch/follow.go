package watch

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// Follow is a driver of a Watcher: it reads a stream of events and cuts it
// into periods. Its duties, in order:
//
//  1. Read the events in the order the Reader gives them and Observe each,
//     holding Lock (when set) around each batch, so that another goroutine
//     (an exporter's scrape) may read the Watcher between batches.
//  2. Cut periods: by the wall clock for a live stream (Live: tracefs's
//     trace_pipe, whose events come as the kernel writes them), by the
//     trace clock for a recording (every Period of trace time, the last
//     one at the end of the file).
//  3. Stop at the end of the input, when ctx is done, or when OnEvent or
//     OnPeriod says so; a live Reader blocked in a read is unblocked by its
//     source's Close, which the caller makes when ctx is done.
type Follow struct {
	// Watcher is fed the events. When nil, Run makes one, for the machine
	// of the Reader's header (a recording's "# machine:" line), once the
	// header is read.
	Watcher *Watcher
	Reader  *ftrace.Reader
	// Period is the length of a period; 0 makes one period of the whole
	// stream.
	Period time.Duration
	// Live cuts periods by the wall clock.
	Live bool
	// CPUs selects the CPUs a Period reports (empty: all).
	CPUs cpumask.Mask
	// Lock, when set, is held while the Watcher changes.
	Lock sync.Locker
	// OnEvent is called after each event is observed (with Lock held);
	// returning false stops the stream.
	OnEvent func(ev *ftrace.Event) bool
	// OnPeriod is called with each period (Lock not held); returning false
	// stops the stream.
	OnPeriod func(p Period) bool
	// Lost, when set, is called at each period's end for events lost that
	// the stream shows no line for (a tracefs instance's overrun
	// counters); it returns the total so far.
	Lost func() uint64

	endEvents uint64 // the Watcher's events at the last period's end
}

// errStop ends a stream that a callback stopped.
var errStop = errors.New("stopped")

// Run follows the stream until its end, ctx or a callback stops it. It
// returns the Reader's error, if any (a live stream ended by ctx returns
// nil).
func (f *Follow) Run(ctx context.Context) error {
	if f.Lock == nil {
		f.Lock = nopLock{}
	}
	var err error
	if f.Live {
		err = f.live(ctx)
	} else {
		err = f.recorded(ctx)
	}
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

func (f *Follow) observe(ev *ftrace.Event) error {
	f.Watcher.Observe(ev)
	if f.OnEvent != nil && !f.OnEvent(ev) {
		return errStop
	}
	return nil
}

func (f *Follow) end(now int64) error {
	f.Lock.Lock()
	if f.Lost != nil {
		if n := f.Lost(); n > f.Watcher.lostCounted {
			f.Watcher.Lost(n - f.Watcher.lostCounted)
			f.Watcher.lostCounted = n
		}
	}
	p := f.Watcher.End(now, f.CPUs)
	f.endEvents = f.Watcher.events
	f.Lock.Unlock()
	if f.OnPeriod != nil && !f.OnPeriod(p) {
		return errStop
	}
	return nil
}

// recorded follows a recording: periods of trace time.
func (f *Follow) recorded(ctx context.Context) error {
	period := f.Period.Nanoseconds()
	var next int64 = -1
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		ev, err := f.Reader.Next()
		if err == io.EOF {
			if f.Watcher == nil || f.Watcher.first < 0 {
				return nil
			}
			return f.end(f.Watcher.last)
		}
		if err != nil {
			return err
		}
		if f.Watcher == nil {
			if f.Watcher, err = ForRecording(f.Reader.Header()); err != nil {
				return err
			}
		}
		if next < 0 {
			next = ev.TS + period
		}
		for period > 0 && ev.TS >= next {
			if err := f.end(next); err != nil {
				return err
			}
			next += period
		}
		f.Lock.Lock()
		err = f.observe(&ev)
		f.Lock.Unlock()
		if err != nil {
			return err
		}
	}
}

// live follows a live stream: a goroutine reads (its Next blocks until the
// kernel writes) and queues, the loop takes what is queued, observes it and
// cuts periods by the wall clock. The goroutine ends with the Reader's
// error: the end of the input, or the read the caller's Close unblocked.
func (f *Follow) live(ctx context.Context) error {
	if f.Watcher == nil {
		return errors.New("watch: a live stream needs its Watcher")
	}
	var (
		mu      sync.Mutex
		queue   []ftrace.Event
		readErr error
	)
	ready := make(chan struct{}, 1)
	go func() {
		for {
			ev, err := f.Reader.Next()
			mu.Lock()
			if err != nil {
				readErr = err
			} else {
				queue = append(queue, ev)
			}
			mu.Unlock()
			select {
			case ready <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	var tick <-chan time.Time
	if f.Period > 0 {
		t := time.NewTicker(f.Period)
		defer t.Stop()
		tick = t.C
	}
	var spare []ftrace.Event
	for {
		select {
		case <-ctx.Done():
			if f.Period > 0 && f.Watcher.events == f.endEvents {
				return nil // nothing since the last period: no empty one
			}
			return f.end(f.Watcher.last)
		case <-tick:
			if err := f.end(f.Watcher.last); err != nil {
				return err
			}
		case <-ready:
			mu.Lock()
			evs, rerr := queue, readErr
			queue = spare[:0]
			mu.Unlock()
			f.Lock.Lock()
			var err error
			for i := range evs {
				if err = f.observe(&evs[i]); err != nil {
					break
				}
			}
			f.Lock.Unlock()
			clear(evs)
			spare = evs
			switch {
			case err != nil:
				return err
			case rerr == io.EOF || rerr != nil && ctx.Err() != nil:
				return f.end(f.Watcher.last) // the end, or the source closed to stop
			case rerr != nil:
				return rerr
			}
		}
	}
}

type nopLock struct{}

func (nopLock) Lock()   {}
func (nopLock) Unlock() {}
