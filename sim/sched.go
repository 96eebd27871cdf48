package sim

import (
	"fmt"

	"github.com/tmigr/tmigr/hrtimer"
)

// The scheduler is the smallest one the experiments need: per-CPU run
// queues ordered by real-time priority (SCHED_OTHER tasks run in FIFO
// order without time slices), wakeup preemption by a higher priority,
// pinned tasks, and for unpinned tasks an idle-CPU search at wakeup and a
// global queue that CPUs pull from when they would go idle.

// reschedule is schedule() at time t on c: switch to the highest-priority
// runnable task if it beats the running one.
func (m *Machine) reschedule(c *cpuState, t int64) {
	if !c.online || c.stopped {
		return
	}
	top := c.rq.peek()
	if top == nil && c.curr == nil && !c.isolated && m.global.len() > 0 {
		top = m.global.pop()
		top.CPU = c.id
		c.rq.push(top, false)
	}
	if top == nil {
		return
	}
	if c.curr != nil {
		if top.key() <= c.curr.key() {
			return
		}
		m.preempt(c, t)
	}
	m.switchIn(c, c.rq.pop(), t)
}

// preempt puts the running task back on the run queue, in front of its
// priority, with the rest of its step.
func (m *Machine) preempt(c *cpuState, t int64) {
	cur := c.curr
	if c.stepEnd == Forever {
		cur.remaining = Forever
	} else {
		cur.remaining = max(c.stepEnd-t, 1)
	}
	cur.state = taskRunnable
	c.rq.push(cur, true)
	c.curr = nil
	c.stepGen++
	if cur == c.meas {
		c.measOut = t
	}
}

// switchIn runs task on c from t on, after a context switch.
func (m *Machine) switchIn(c *cpuState, task *Task, t int64) {
	m.ctx = c.id
	if c.idle {
		m.exitIdle(c, t)
		c.idle = false
		c.busyFrom = t
	}
	s := t + c.draw(&m.samp.ContextSwitch)
	c.irqEnd = max(c.irqEnd, s)

	task.state = taskRunning
	task.CPU = c.id
	c.curr = task
	if task == c.meas && c.measOut >= 0 {
		m.stall(c, c.measOut, s)
		c.measOut = -1
	}
	if r := task.remaining; r > 0 {
		task.remaining = 0
		if r == Forever {
			c.stepEnd = Forever
			c.stepGen++
		} else {
			m.armStep(c, s+r)
		}
		return
	}
	m.beginStep(c, task, s)
}

// beginStep asks the task's behaviour for its next step, at time s.
func (m *Machine) beginStep(c *cpuState, task *Task, s int64) {
	x := &m.taskX
	*x = Exec{m: m, CPU: c.id, Now: s, Task: task}
	prev := m.x
	m.x = x
	st := task.Behavior.Run(x, task)
	m.x = prev
	task.then = st
	if st.Run == Forever {
		c.stepEnd = Forever
		c.stepGen++
		return
	}
	m.armStep(c, s+max(st.Run, 1))
}

func (m *Machine) armStep(c *cpuState, end int64) {
	c.stepEnd = end
	c.stepGen++
	m.push(event{t: end, kind: evStep, cpu: int32(c.id), gen: c.stepGen})
}

// stepDone carries out what the running task does at the end of its step.
func (m *Machine) stepDone(c *cpuState, t int64) {
	m.ctx = c.id
	task := c.curr
	st := task.then
	then := st.Then
	if task == c.ktimers && (c.wheelSoft || c.hrSoftPend) {
		then = Continue
	}
	switch then {
	case Continue:
		m.beginStep(c, task, t)
		return
	case SleepUntil, SleepFor:
		at := st.At
		if then == SleepFor {
			at = t + st.For
		}
		m.sleep(c, task, t, at)
	case BlockFor:
		task.state = taskBlocked
		m.push(event{t: t + max(st.For, 0), kind: evWake, task: task})
	case Exit:
		task.state = taskExited
		if task.OnExit != nil {
			x := &m.taskX
			*x = Exec{m: m, CPU: c.id, Now: t, Task: task}
			m.x = x
			task.OnExit(x, task)
			m.x = nil
		}
	case Park:
		task.state = taskParked
	}
	c.curr = nil
	c.stepGen++
	m.reschedule(c, t)
	if c.curr == nil {
		m.goIdle(c, t)
	}
}

// sleep arms task's hrtimer sleeper on c for the absolute time at
// (hrtimer_nanosleep with the task's policy and slack).
func (m *Machine) sleep(c *cpuState, task *Task, t, at int64) {
	if !task.setup {
		if err := c.hr.SetupSleeper(&task.sleeper, hrtimer.Monotonic, hrtimer.ModeAbs, task.Policy); err != nil {
			m.fail(err)
			return
		}
		task.sleeper.Data = task
		task.setup = true
	}
	slack := hrtimer.SleeperSlack(task.Policy, hrtimer.DefaultTimerSlack)
	// hrtimer.c's get_target_base: with timer_migration on, a sleeper
	// started on a nohz_full CPU may be queued on a housekeeping one.
	target := m.cpus[m.set.HrtimerTarget(c.id, false)].hr
	eff, err := c.hr.StartOn(&task.sleeper, target, t, at, slack, task.sleeper.SleeperStartMode(hrtimer.ModeAbs))
	if err != nil {
		m.fail(fmt.Errorf("task %s: %w", task.Name, err))
		return
	}
	task.state = taskSleeping
	m.program(c, eff)
}

// goIdle enters the idle loop on c at t: the CPU is no longer busy for the
// push policy, and it tries to stop its tick.
func (m *Machine) goIdle(c *cpuState, t int64) {
	m.ctx = c.id
	if c.idle || !c.online || c.stopped {
		return
	}
	c.idle = true
	c.busyNs += m.clip(c.busyFrom, t)
	m.apply(c, c.tk.Idle(t), t)
}

// exitIdle leaves the idle loop to run the task just taken off the run
// queue (tick_nohz_idle_exit; the tick core decides what happens to the
// tick).
func (m *Machine) exitIdle(c *cpuState, t int64) {
	m.ctx = c.id
	m.apply(c, c.tk.IdleExit(t, c.rq.len() == 0), t)
}

// wake makes task runnable at t. waker is the CPU whose code wakes it (nil
// for an I/O completion or the workload's own doing): a task queued on
// another CPU that must run there now gets that CPU a reschedule IPI.
func (m *Machine) wake(task *Task, t int64, waker *cpuState) {
	switch task.state {
	case taskRunnable, taskRunning, taskExited:
		return
	}
	task.state = taskRunnable
	var c *cpuState
	if task.Pinned && !m.cpus[task.CPU].online {
		// Its CPU went offline while it slept: it wakes elsewhere, its
		// affinity broken (select_fallback_rq).
		task.Pinned = false
	}
	if task.Pinned {
		c = &m.cpus[task.CPU]
	} else if c = m.selectCPU(task); c == nil {
		m.global.push(task, false)
		return
	}
	if !c.online || c.stopped {
		if task.Pinned {
			task.state = taskBlocked // lost with its CPU
			return
		}
		m.global.push(task, false)
		return
	}
	task.CPU = c.id
	c.rq.push(task, false)
	if c.curr != nil && c.nohzFull && !c.tickOn {
		// A second task: the scheduler's tick dependency restarts the
		// nohz_full CPU's tick.
		m.apply(c, c.tk.Restart(t), t)
	}
	if c.curr != nil && task.key() <= c.curr.key() {
		return
	}
	switch {
	case waker == c && m.inIRQ == c:
		// endIRQ reschedules.
	case waker == c && m.x != nil && m.x.Task == c.curr && c.curr != nil:
		// Woken by the running task itself: preempt at once.
		m.push(event{t: t, kind: evResched, cpu: int32(c.id)})
		c.resched = true
	case !c.resched:
		c.resched = true
		m.push(event{t: t + m.costs.IPILatency, kind: evResched, cpu: int32(c.id)})
	}
}

// selectCPU picks a CPU for an unpinned task waking up
// (select_task_rq_fair, simplified): its previous CPU if idle, else the
// first idle CPU of its node, else of the machine; nil if none is idle.
// CPUs isolated from the scheduler domains are never chosen.
func (m *Machine) selectCPU(task *Task) *cpuState {
	ok := func(c *cpuState) bool {
		return c.online && !c.stopped && !c.isolated && c.curr == nil && c.rq.len() == 0 && !c.resched
	}
	if task.CPU >= 0 && task.CPU < len(m.cpus) && ok(&m.cpus[task.CPU]) {
		return &m.cpus[task.CPU]
	}
	node := -1
	if task.CPU >= 0 && task.CPU < len(m.cpus) {
		node = m.cpus[task.CPU].node
	}
	for pass := 0; pass < 2; pass++ {
		for i := range m.cpus {
			c := &m.cpus[i]
			if (pass == 1 || c.node == node) && ok(c) {
				return c
			}
		}
		if node < 0 {
			break
		}
	}
	return nil
}

// pullGlobal lets idle CPUs take unpinned tasks that are waiting.
func (m *Machine) pullGlobal(t int64) {
	for i := range m.cpus {
		if m.global.len() == 0 {
			return
		}
		c := &m.cpus[i]
		if c.online && !c.stopped && !c.isolated && c.curr == nil && c.rq.len() == 0 && !c.resched {
			c.resched = true
			m.push(event{t: t + m.costs.IPILatency, kind: evResched, cpu: int32(c.id)})
		}
	}
}
