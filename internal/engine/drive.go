package engine

// Driving a worker by hand: the public API's tests drive the workers'
// event handling on their own goroutine, with a fake clock and no thread
// (after Init and Boot, without Run), and look at what can be read of a
// worker from outside. Nothing here is for a worker that has a thread,
// but Peek, and Loaded and HoldLoaded, which act on the engine as a late
// wake-up does.

// Service handles what is due at now: kicks, the hrtimer interrupt, the
// tick, then the list of moves (the loop's first step).
func (w *Worker) Service(now int64) { w.service(now) }

// IdleRound is one round of the idle loop at now; it returns when the
// worker must look at its timers next.
func (w *Worker) IdleRound(now int64) int64 { return w.idle(now) }

// Awake marks the worker awake, as if it were running, its kicks taken:
// a push to its list of moves, or a timer armed on it, then kicks nothing.
func (w *Worker) Awake(now int64) {
	w.pending.Store(0)
	w.sleepUntil.Store(now)
}

// Asleep marks the worker asleep until deadline, its kicks taken.
func (w *Worker) Asleep(deadline int64) {
	w.pending.Store(0)
	w.sleepUntil.Store(deadline)
}

// SetOnline sets whether the worker counts as online, without hotplug (as
// Offline leaves it, for a worker without a thread).
func (w *Worker) SetOnline(on bool) { w.online.Store(on) }

// Peek is what can be read of a worker's state from outside it (its
// atomics), at a moment.
type Peek struct {
	Online      bool
	Asleep      bool   // in its futex wait (Halt, and HaltPoll's halt)
	Pending     uint32 // the kicks not taken yet
	TimerKick   bool   // Pending holds KickTimer
	Requested   bool   // a control request (hotplug, Close) waits, its kick pending
	Idling      bool
	Pins        int32
	IdleSince   int64 // 0: active
	SleepUntil  int64
	FirstGlobal int64
	Device      int64 // the hrtimer device
	Listed      bool  // its list of moves holds a timer
	Ticks       uint64
	Timers      uint64
	Wakeups     uint64
	Rescues     uint64
}

// Peek reads the worker's state.
func (w *Worker) Peek() Peek {
	p := w.pending.Load()
	return Peek{
		Online:      w.online.Load(),
		Asleep:      w.state.Load() == stateSleeping,
		Pending:     p,
		TimerKick:   p&KickTimer != 0,
		Requested:   len(w.ctl) > 0 && p&kickCtl != 0,
		Idling:      w.idling.Load(),
		Pins:        w.pins.Load(),
		IdleSince:   w.idleSince.Load(),
		SleepUntil:  w.sleepUntil.Load(),
		FirstGlobal: w.firstGlobal.Load(),
		Device:      w.hb.Device(),
		Listed:      w.moves.listed(),
		Ticks:       w.st.ticks.Load(),
		Timers:      w.st.timers.Load(),
		Wakeups:     w.st.wakeups.Load(),
		Rescues:     w.st.rescues.Load(),
	}
}

// Lateness reads the worker's lateness histogram.
func (w *Worker) Lateness() Snapshot { return w.st.late.Snapshot() }

// Loaded marks the engine loaded at now, as a late wake-up does.
func (e *Engine) Loaded(now int64) { e.loaded(now) }

// HoldLoaded keeps the engine loaded for good: every sleep arms a rescue
// timer (tests of the rescue on real threads).
func (e *Engine) HoldLoaded() { e.loadedUntil.Store(1<<63 - 1) }

// Rescue is the worker's rescue timer firing (rescue.go).
func (w *Worker) Rescue() { w.rescue() }
