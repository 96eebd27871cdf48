// Package tmigr is a runtime of pinned workers that run Linux's timer
// subsystem: one worker per CPU, each a goroutine locked to an OS thread
// pinned to its CPU, each being one CPU of the kernel's design, with its
// timer wheels (package cpu), its hrtimers (package hrtimer) and its place
// in the timer-migration hierarchy (package hier).
//
//	rt, err := tmigr.Start(tmigr.Config{CPUs: "0-1", Isolated: "1"})
//	if err != nil { ... }
//	defer rt.Close()
//	t := rt.AfterFunc(300*time.Microsecond, f)              // an hrtimer, as time.AfterFunc
//	w := rt.AfterFunc(20*time.Millisecond, f, tmigr.Coarse()) // a global wheel timer
//	tk := rt.NewTicker(time.Millisecond)                     // as time.NewTicker, without drift
//	h, _ := rt.HRAfterFunc(1, 300*time.Microsecond, f, tmigr.Hard)
//	rt.Go(1, task)                                           // a task on worker 1
//	_ = rt.Sleep(ctx, 250*time.Microsecond)                  // a goroutine's nanosleep
//	ctx, cancel := rt.WithTimeout(ctx, 500*time.Microsecond) // a precise deadline
//
// # A worker is a CPU
//
// A worker loops as a CPU does. While it runs a task it is active: its tick
// runs at HZ (jiffies and the tick-update snapshot come from the monotonic
// clock on a fixed grid), the tick runs its expired wheel timers and, when
// it is the hierarchy's migrator, the due global timers of idle workers.
// With nothing to do it goes idle the NOHZ way: if its next event is more
// than a tick away it stops the tick, leaving the hierarchy (the last
// worker to go idle is handed the hierarchy's first event), and sleeps until
// the earliest of its wheel event, that event and its hrtimer device:
//
//	     ┌──────────────────────────────────────────────────────┐
//	     ▼                                                      │
//	service: kicks, hrtimer interrupt (hard pass, soft pass),   │
//	         tick (wheel softirq + remote expiry) if due        │
//	     │                                                      │
//	task queued? ──yes──▶ leave idle (timer_clear_idle) ──▶ run it
//	     │ no
//	idle: tick_nohz_idle_stop_tick (NextEvent, TryToSetIdle)
//	     │
//	sleep until min(wheel/hierarchy event, hrtimer device) or a kick:
//	  HaltPoll (default): the haltpoll governor's window, then Halt
//	  Halt: futex wait, absolute CLOCK_MONOTONIC deadline;  Poll: spin
//
// Workers never sleep on Go timers (whose wake-ups from an idle program
// have a 1 ms floor on Linux, netpoll's epoll_wait timeout). They sleep in
// FUTEX_WAIT_BITSET on their own state word, with an absolute deadline,
// their thread's timer slack set to 1 ns; arming an earlier timer on a
// sleeping worker, or giving it work, wakes it with FUTEX_WAKE: our IPI.
// The kick protocol is drawn on the worker type.
//
// A worker's thread may not get its CPU when woken, on a machine where
// other programs keep every CPU busy. While the runtime sees that (late
// wake-ups), a worker going to sleep also arms a package time timer 200
// µs past its next event, whose goroutine, if the worker has not run by
// then, runs the worker's overdue interrupts under the worker's CPU lock
// (internal/engine/rescue.go; Stats.Rescues).
//
// Tasks are not preempted: timers due on a worker run when its task returns
// or calls Yield. Timer functions run on the worker's thread, with no lock
// held, and must not block.
//
// # Threads and the Go scheduler
//
// Each worker calls runtime.LockOSThread and never unlocks: its thread's
// affinity and timer slack are changed, and a goroutine that exits locked
// takes its thread with it, so Close leaves no thread with a worker's
// settings behind. A worker's futex wait goes through the scheduler's
// system-call path, so its P may be handed to other goroutines while it
// sleeps, and a waking worker needs a free P. The runtime changes nothing
// of the process's by itself: its workers share GOMAXPROCS with the
// program's goroutines, and while those keep every P busy a waking worker
// waits for one to be preempted. Config.SpareProcs asks for one spare P
// per worker instead: Start raises GOMAXPROCS, and Close gives the
// program its value back, the Go runtime's automatic setting included
// (see Config.SpareProcs for why that is not the default).
//
// # Semantics
//
// Timer.Stop and Timer.Reset return what time.Timer's do for a timer made
// by time.AfterFunc. A timer function never runs before its time, runs once
// per arm, and a panic in it is recovered and handed to Config.OnPanic. A
// global timer runs on the worker it was queued on or, while that worker is
// idle, on the hierarchy's migrator; under PullIsolated never on an isolated
// worker other than its own. Offline moves a worker's timers as the kernel's
// CPU hotplug does; Exclude changes the isolated set at run time with the
// kernel's set arithmetic. Tasks may call Offline, Online and Exclude; timer
// functions may not (they would wait for workers that may wait for them).
//
// The kernel arms a timer on the CPU that runs the code. A timer armed from
// elsewhere on an idle worker (AfterFunc from a goroutine off the workers,
// AfterFuncOn) becomes known to the hierarchy only when that worker looks
// at its timers again, so when it is a new first timer the worker is woken
// for that (a futex wake, as add_timer_on sends an IPI). Arming from the
// worker itself, in a task or a timer function, costs no wake-up.
//
// # Costs worth knowing
//
// AfterFunc (no CPU given) and Sleep find the caller's worker by its thread
// id, a system call, whenever some worker runs user code; AfterFuncOn and
// HRAfterFunc do not. A polling worker spins in Go code and, like any
// goroutine that runs 10 ms without a scheduling point, is preempted by the
// Go scheduler now and then, which costs it a thread hand-off.
package tmigr
