package sim

import (
	"fmt"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/tick"
	"github.com/tmigr/tmigr/wheel"
)

// An interrupt on a CPU runs from its arrival (or, if the CPU is still busy
// with earlier kernel work, from the end of that work) for as long as the
// code it runs costs; the code's effects on the timer core happen when the
// event is processed, its cost advances the handler's own clock (Exec.Now):
//
//	arrival      idle exit    entry      tick, softirq, callbacks      end
//	   |------------|-----------|---------------------------------------|
//	   t         (if idle)                                          irqEnd
//
// A task interrupted meanwhile finishes its step that much later; a busy
// loop that measures (oslat) sees one gap from t to irqEnd, merged with
// any kernel work that follows without a break.

// Why an interrupt came: the idle wakeups are counted by cause.
type irqCause uint8

const (
	causeTick    irqCause = iota // the periodic tick
	causeTimer                   // a timer event: the NOHZ sched_timer or an hrtimer
	causeKick                    // a wake-up IPI for a timer queued on an idle base
	causeResched                 // a reschedule IPI: a task to run
	causeDevice                  // a device interrupt
	numCauses
)

// beginIRQ starts an interrupt on c that arrives at t.
func (m *Machine) beginIRQ(c *cpuState, t int64, cause irqCause) *Exec {
	x := &m.irqX
	m.irqStart(c, t, cause, x)
	m.x, m.inIRQ = x, c
	return x
}

// irqStart is beginIRQ's work on c alone: x becomes the interrupt's
// context, and nothing of the machine's is touched (a quiet tick of the
// sweep starts its interrupt so on a worker goroutine).
func (m *Machine) irqStart(c *cpuState, t int64, cause irqCause, x *Exec) {
	s := max(t, c.irqEnd)
	inIdle := c.curr == nil && c.idle && t >= c.irqEnd
	if inIdle {
		s += m.costs.IdleExit
		if m.inWindow(t) {
			c.wakeups++
			c.wakeBy[cause]++
		}
	} else if t >= c.irqEnd && m.costs.IRQOffShare > 0 && c.float64() < m.costs.IRQOffShare {
		// The CPU runs with interrupts off; the interrupt waits.
		s += int64(c.float64() * float64(m.costs.IRQOffMax))
	}
	c.irqArrive, c.irqWork = t, s
	if m.inWindow(t) {
		c.irqs++
	}
	*x = Exec{m: m, CPU: c.id, Now: s + c.draw(&m.samp.IRQEntry), irq: true}
}

// endIRQ ends the interrupt x: the time it took is charged to whatever
// was running, softirq work is handed to the ktimers thread on
// PREEMPT_RT, and then the CPU reschedules and, if it stays idle or runs
// a lone task on a nohz_full CPU, reconsiders its tick.
func (m *Machine) endIRQ(x *Exec) {
	c := &m.cpus[x.CPU]
	e := x.Now
	if c.wheelSoft || c.hrSoftPend {
		// Still in the interrupt: the wakeup needs no IPI, the
		// reschedule below runs the thread.
		m.wake(m.ktimers(c), e, c)
	}
	fromIdle := c.curr == nil && c.idle // the interrupt came in the idle loop
	m.x, m.inIRQ = nil, nil
	m.irqDone(c, e)
	m.reschedule(c, e)
	m.reconsiderTick(c, e, fromIdle)
}

// irqDone is endIRQ's work on c alone, for an interrupt that ends at e:
// its time is charged to what ran (the step, the measuring loop's gap,
// the busy time).
func (m *Machine) irqDone(c *cpuState, e int64) {
	from := max(c.irqArrive, c.irqEnd)
	c.irqEnd = e
	if added := e - from; added > 0 && c.curr != nil && c.stepEnd != Forever {
		// The queued step-end event is now early; it re-queues itself
		// when it comes up (see dispatch), so no event is added here.
		c.stepEnd += added
	}
	if c.meas != nil && (c.curr == c.meas || c.measOut >= 0) {
		m.stall(c, c.irqArrive, e)
	}
	if c.curr == nil {
		c.busyNs += m.clip(c.irqWork, e)
	}
}

// reconsiderTick is what the tick core is told when an interrupt ends: a
// CPU that stays idle goes round its idle loop (Idle: stop the tick or
// re-arm its sleep); a CPU the interrupt woke to run a task left idle in
// reschedule (IdleExit); a nohz_full CPU running a task updates its tick
// on the way out (FullUpdate).
func (m *Machine) reconsiderTick(c *cpuState, t int64, fromIdle bool) {
	if !c.online || c.stopped {
		return
	}
	switch {
	case c.curr == nil && c.idle:
		m.ctx = c.id
		m.apply(c, c.tk.Idle(t), t)
	case c.curr != nil && c.nohzFull && !fromIdle:
		m.ctx = c.id
		m.apply(c, c.tk.FullUpdate(t, c.rq.len() == 0), t)
	}
}

// apply carries out what the tick core asked for on c at t: the tick timer
// and the clock event device. (Softirqs and IPIs are handled where the
// call was made.)
func (m *Machine) apply(c *cpuState, r tick.Ready, t int64) {
	if r.TickSet {
		if r.Stopped {
			m.stopTick(c)
			m.armNohz(c, r.Tick)
		} else {
			m.startTick(c, r.Tick, t)
		}
	}
	if r.Program {
		m.programAt(c, r.DeviceAt)
	}
}

// tick is the periodic tick of c at the tick instant g.
func (m *Machine) tick(c *cpuState, g int64) {
	x := m.beginIRQ(c, g, causeTick)
	x.Spend(c.draw(&m.samp.Tick))
	if m.inWindow(g) {
		c.ticks++
	}
	if r := c.tk.Tick(g); r.Softirq&tick.TimerSoftirq != 0 {
		m.timerSoftirq(x, c)
	}
	m.endIRQ(x)
	m.checkCPU(c)
}

// nohzWake is c's sched_timer firing while its tick is stopped: the tick
// handler runs once (and with it the due timers), then the CPU re-arms.
func (m *Machine) nohzWake(c *cpuState, t int64) {
	if t == c.sameNow {
		if c.sameCount++; c.sameCount > 1000 {
			m.fail(fmt.Errorf("at %s: CPU %d keeps waking for an event it does not handle (livelock)", fmtTime(t), c.id))
			return
		}
	} else {
		c.sameNow, c.sameCount = t, 0
	}
	c.nohzAt = tick.Never
	x := m.beginIRQ(c, t, causeTimer)
	x.Spend(c.draw(&m.samp.Tick))
	if m.inWindow(t) {
		c.ticks++
	}
	r := c.tk.Tick(x.Now)
	m.apply(c, r, x.Now) // the NOHZ wakeup is not re-armed
	if r.Softirq&tick.TimerSoftirq != 0 {
		m.timerSoftirq(x, c)
	}
	m.endIRQ(x)
}

// timerSoftirq runs TIMER_SOFTIRQ: at the end of the interrupt on a
// non-RT kernel, in the ktimers thread on PREEMPT_RT.
func (m *Machine) timerSoftirq(x *Exec, c *cpuState) {
	if m.cfg.PreemptRT {
		c.wheelSoft = true
		return
	}
	x.Spend(c.draw(&m.samp.SoftirqEntry))
	m.runSoftirq(x, c)
}

// runSoftirq runs the timer softirq's expiry pass on c at x.Now: every
// expired wheel timer's function runs here, on c.
func (m *Machine) runSoftirq(x *Exec, c *cpuState) {
	p := c.tk.TimerSoftirq(x.Now)
	for t := p.Next(); t != nil; t = p.Next() {
		m.runTimer(m.x, c.id, t)
	}
}

// hrInterrupt is hrtimer_interrupt on c: the device fired at t.
func (m *Machine) hrInterrupt(c *cpuState, t int64) {
	x := m.beginIRQ(c, t, causeTimer)
	p, err := c.tk.HrtimerInterrupt(x.Now)
	if err != nil {
		m.fail(err)
		return
	}
	m.passN, m.passRT = 0, false
	r := m.runPass(x, c, p)
	if m.inWindow(t) {
		c.hardMax = max(c.hardMax, m.passN)
		if m.passRT {
			c.hardMaxRT = max(c.hardMaxRT, m.passN)
		}
	}
	if r.Softirq&tick.HrtimerSoftirq != 0 {
		if m.cfg.PreemptRT {
			c.hrSoftPend = true
		} else {
			m.hrSoftirq(x, c)
		}
	}
	m.endIRQ(x)
}

// hrSoftirq runs HRTIMER_SOFTIRQ's pass over the soft bases.
func (m *Machine) hrSoftirq(x *Exec, c *cpuState) {
	x.Spend(c.draw(&m.samp.SoftirqEntry))
	p, err := c.tk.HrtimerSoftirq(x.Now)
	if err != nil {
		m.fail(err)
		return
	}
	m.runPass(x, c, p)
}

// runPass drives one hrtimer pass to its end, charging each expiry, and
// programs the device as the pass leaves it.
func (m *Machine) runPass(x *Exec, c *cpuState, p *hrtimer.Pass) tick.Ready {
	for {
		for t := p.Next(); t != nil; t = p.Next() {
			m.passN++
			x.Spend(c.draw(&m.samp.HrtimerExpiry))
			p.Done(t, m.runHrtimer(x, t))
		}
		r, retry, err := c.tk.EndPass(p, x.Now)
		if err != nil {
			m.fail(err)
			return r
		}
		if !retry {
			m.apply(c, r, x.Now)
			return r
		}
	}
}

// runHrtimer runs an expired hrtimer's callback.
func (m *Machine) runHrtimer(x *Exec, t *hrtimer.Timer) hrtimer.Action {
	switch d := t.Data.(type) {
	case *Task:
		// hrtimer_wakeup
		x.Spend(m.cpus[x.CPU].draw(&m.samp.Wakeup))
		if d.key() > 0 {
			m.passRT = true
		}
		m.wake(d, x.Now, &m.cpus[x.CPU])
	}
	return hrtimer.NoRestart
}

// program applies an hrtimer Effect of the timer API (a sleeper's start)
// to c's clock event device.
func (m *Machine) program(c *cpuState, eff hrtimer.Effect) {
	if eff.Program {
		m.programAt(c, eff.At)
	}
}

// programAt arms c's clock event device for at (hrtimer.Never: disarm).
func (m *Machine) programAt(c *cpuState, at int64) {
	c.hrDev = at
	c.hrGen++
	if at != hrtimer.Never {
		m.push(event{t: max(at, m.now), kind: evHrDevice, cpu: int32(c.id), gen: c.hrGen})
	}
}

func (m *Machine) armNohz(c *cpuState, at int64) {
	c.nohzGen++
	c.nohzAt = at
	if at != cpu.KtimeMax {
		m.push(event{t: max(at, m.now), kind: evNohzWake, cpu: int32(c.id), gen: c.nohzGen})
	}
}

func (m *Machine) stopTick(c *cpuState) {
	if !c.tickOn {
		return
	}
	c.tickOn = false
	m.ticking.Clear(c.id)
	m.nTicking--
}

// startTick restarts c's periodic tick at t: its first tick is at from,
// the next tick instant after t.
func (m *Machine) startTick(c *cpuState, from, t int64) {
	c.nohzGen++
	c.nohzAt = tick.Never
	if c.tickOn {
		return
	}
	c.tickOn = true
	c.tickFrom = from
	m.ticking.Set(c.id)
	m.nTicking++
	if m.nTicking == 1 || m.grid < c.tickFrom && m.grid <= t {
		m.grid = c.tickFrom
	}
}

// setHalted marks c as idling outside the idle loop, or not (SetNoNohz).
func (m *Machine) setHalted(c *cpuState, on bool) {
	c.tk.SetHalted(on)
	if on && c.online && !c.stopped {
		m.apply(c, c.tk.Restart(m.now), m.now)
	}
}

// kick sends CPU k the IPI trigger_dyntick_cpu asks for: a timer was
// queued first on its idle base, so it must re-evaluate its sleep.
func (m *Machine) kick(k int, t int64) {
	c := &m.cpus[k]
	if c.kicked || !c.online || c.stopped || m.inIRQ == c {
		// In its own interrupt the CPU re-evaluates its sleep on the way
		// out anyway (wake_up_idle_cpu does not IPI the local CPU).
		return
	}
	c.kicked = true
	m.push(event{t: t + m.costs.IPILatency, kind: evKick, cpu: int32(k)})
}

// runTimer runs an expired wheel timer's function on CPU handler, in x
// (the machine's m.x).
func (m *Machine) runTimer(x *Exec, handler int, t *wheel.Timer) {
	owner := t.CPU()
	c := &m.cpus[handler]
	if x != nil && m.inWindow(x.Now) {
		c.expiredHere++
		if owner != handler {
			c.remoteExpired++
			c.addRemote(owner)
		}
	}
	if l := m.tracer.log; l != nil && x != nil {
		l.expire(handler, t)
	}
	if st, ok := t.Data.(*Timer); ok {
		st.fn(x, st)
	}
}

func (c *cpuState) addRemote(owner int) {
	for i := range c.remoteFrom {
		if c.remoteFrom[i].owner == owner {
			c.remoteFrom[i].n++
			return
		}
	}
	c.remoteFrom = append(c.remoteFrom, remoteCount{owner, 1})
}

// stall records that c's measuring task was kept from running from s to
// e. Stretches that touch merge into one gap: one long oslat sample.
func (m *Machine) stall(c *cpuState, s, e int64) {
	if c.gapOpen && s <= c.gapEnd {
		c.gapEnd = max(c.gapEnd, e)
		return
	}
	m.flushGap(c)
	c.gapOpen, c.gapStart, c.gapEnd = true, s, e
}

func (m *Machine) flushGap(c *cpuState) {
	if !c.gapOpen {
		return
	}
	c.gapOpen = false
	if c.measGap != nil {
		c.measGap(c.gapStart, c.gapEnd-c.gapStart)
	}
}

// ktimers returns c's softirq thread (PREEMPT_RT: ktimers/N, SCHED_FIFO
// priority 1), which runs the timer and hrtimer softirqs.
func (m *Machine) ktimers(c *cpuState) *Task {
	if c.ktimers != nil {
		return c.ktimers
	}
	c.ktimers = &Task{Name: fmt.Sprintf("ktimers/%d", c.id), Policy: hrtimer.SchedFIFO, Prio: 1,
		CPU: c.id, Pinned: true, state: taskParked}
	c.ktimers.Behavior = BehaviorFunc(func(x *Exec, t *Task) Step {
		start := x.Now
		if c.wheelSoft {
			c.wheelSoft = false
			x.Spend(c.draw(&m.samp.SoftirqEntry))
			m.runSoftirq(x, c)
		}
		if c.hrSoftPend {
			c.hrSoftPend = false
			m.hrSoftirq(x, c)
		}
		return Step{Run: max(x.Now-start, 1), Then: Park}
	})
	return c.ktimers
}
