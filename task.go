package tmigr

// Go runs f on worker cpu (or, while it is offline, where its timers went),
// as a task: the worker is active (its tick runs,
// the hierarchy sees it busy) until f returns. Tasks of one worker run one
// after the other, in the order they were queued. A task runs on the
// worker's thread and is not preempted: timers due on that worker (its
// tick, its hrtimers, and as migrator other workers' global timers) run when
// the task returns, or inside it at a call to Yield. A task that blocks
// (channel, mutex, system call) blocks the worker. A nil f is refused.
func (rt *Runtime) Go(c int, f func()) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	if f == nil {
		return errNilFunc
	}
	if rt.e.Closed() {
		return ErrClosed
	}
	on := rt.e.OnBehalf(w.CPU()) // an offline worker's tasks go where its timers went
	on.Queue(f)
	on.Release()
	return nil
}

// Yield is a preemption point for a task: if the worker running it has a
// tick, an hrtimer or a kick due, it is handled now (timer functions run
// inside Yield, on the task's worker) and Yield returns. Elsewhere (not in a
// task) it does nothing. When nothing is due on any worker it costs a clock
// read and a few atomic loads; otherwise it finds the caller's worker by
// its thread id (a system call).
func (rt *Runtime) Yield() {
	if !rt.started() {
		return
	}
	rt.e.Yield()
}
