package sim

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/tick"
	"github.com/tmigr/tmigr/wheel"
)

// # One tick instant on several cores
//
// Nearly every event of a big busy machine is the tick of a CPU that runs
// a task and has nothing else to do: the tick draws its cost, the tick
// core finds no timer due and nothing for the hierarchy, and the interrupt
// ends as one gap of the running task. Such a tick touches its own CPU's
// state only (its tick core, its random stream, its task's gap) and reads
// shared state nobody writes meanwhile (the bases' next expiries, the
// hierarchy's group expiries). The sweep of a tick instant g therefore
// runs in two passes:
//
//  1. the quiet pass: every CPU whose tick is due at g and that is quiet
//     (online, running a task with nothing else runnable, not nohz_full,
//     no softirq work pending for ktimers) starts its tick; unless the
//     tick core raises the timer softirq, the tick ends there. This pass
//     runs on up to Config.Threads goroutines, which take chunks of
//     chunkCPUs CPUs in turn;
//  2. the late pass, on the machine's goroutine, in CPU order: the ticks
//     the quiet pass left open (their softirq, then the end of their
//     interrupt) and the ticks of the CPUs that were not quiet (whole);
//     the local softirqs among them run side by side as well (below).
//
// Both passes happen at the same instant g; a tick of the late pass sees
// what the earlier late ticks did, as one tick after another did before.
// The passes are the same whatever the number of goroutines (one included:
// then the quiet pass runs on the machine's goroutine), and each CPU draws
// from its own stream, so a seed's output does not depend on Threads.

// # The late pass's softirqs on several cores
//
// On one goroutine the late pass runs its ticks in CPU order, and that
// order is what a seed's output stands for: each late tick sees
// everything the late ticks of lower CPUs did at this instant and
// nothing of the higher ones'. Most of them are open ticks whose softirq
// expires a housekeeping timer or two of the CPU's own; those are run
// side by side where that cannot change anything.
//
// A local softirq is the softirq of an open tick of CPU c, in a run
// eligible for them (helpers, not PREEMPT_RT, no trace log nor test
// watcher of the hierarchy, and every timer of the run set up with
// InitLocalTimer: a callback that, run by the timer's own CPU, touches
// nothing but the timer's own data and that CPU's and re-arms nothing but
// the timer itself with Exec.Mod), such that, when the late pass reaches
// c in CPU order, c is still quiet and its remote walk is quiet at the
// time the softirq starts (hier.QuietRemote: c is no migrator, or no
// group it would handle has an event due). Its entry cost is drawn from
// c's stream at that point rather than in timerSoftirq: only c's own code
// draws from c's stream, and none of c's runs in between, so it is the
// same draw.
//
// What a local softirq reads and writes: c's cpuState (its interrupt, its
// stream, its measuring task's gap, its counters), c's timer bases, pass
// and next expiries, the timers due there and what their callbacks touch
// (their own data; the housekeeping's counters of handler c, which are
// per handler), their re-arms (on c's base: a running timer is not moved,
// so Set.Mod names no CPU to wake but c, which kick ignores in c's own
// interrupt), and, for a migrator, the groups its walk handles (each has
// one migrator child, so no other active CPU's walk goes there), with the
// ignored events it drops from their queues (which no other softirq
// reads), and c's own wakeup. It only reads what none of them writes (the configuration,
// m.now, the window, the groups' migrators). It pushes no event, wakes no
// task, and its endIRQ is irqDone alone (nothing was woken: the run queue
// stays empty, and a running task on a CPU that is not nohz_full leaves
// the tick as it is). So two local softirqs touch nothing in common and
// commute, and a run of them, consecutive in CPU order, gives the same
// state in any order or at once.
//
// The late pass therefore walks its ticks in CPU order as before, but a
// local softirq only joins the segment, the run of local softirqs not yet
// run; any other tick (a whole tick, a CPU no longer quiet, a walk that
// may pull, or every tick of a run that is not eligible) first runs the
// segment to its end, then runs itself on the machine's goroutine. Every
// such tick thus sees the local softirqs of the lower CPUs done and none
// of the higher ones', as in CPU order; and each softirq is classified
// after every earlier tick that is not local has run, with its inputs as
// they are when it runs (a segment's softirqs change nothing another's
// classification reads). A segment of softShareMin softirqs or more runs
// on the helpers too, softChunk at a time, each chunk touched
// (touchSeg) and run by the goroutine that took it; a smaller one runs on
// the machine's goroutine, with the same result.
//
// A callback that breaks its promise is caught where it could race: its
// Exec is marked par, and AddOn, Wake, a Mod or Del of another CPU's
// timer, or a Mod that names another CPU to wake, panic.

// parMinTicking is the fewest ticks at an instant worth sharing with
// other goroutines: below it the quiet pass runs on the machine's goroutine
// alone (the result is the same). On 2 shared cores 512 CPUs of oslat ran
// as fast on one goroutine as on two, 1024 faster on two
// (docs/performance.md).
const parMinTicking = 512

// chunkCPUs is the size of the CPU ranges the goroutines of a quiet pass
// take one at a time: small enough that one goroutine that the OS
// preempts (a shared machine) holds up the others little, large enough
// that taking one costs nothing next to its ticks.
const chunkCPUs = 128

// softChunk is the number of local softirqs a goroutine takes at a time
// from a segment, and softShareMin the fewest softirqs in a segment worth
// sharing (fewer run on the machine's goroutine; the result is the same).
const (
	softChunk    = 8
	softShareMin = 16
)

// helperSpin is how long a helper, done with a quiet pass, waits for the
// next spinning before it parks: on a big busy machine the next pass
// comes after the last one's late pass and the events between, well
// within it, and a parked helper woken for every pass came too late for
// most of its chunks (docs/performance.md).
const helperSpin = 500 * time.Microsecond

// chunk is the quiet pass over the CPUs [lo, hi), with what it leaves to
// the late pass, in CPU order.
type chunk struct {
	lo, hi int
	x      Exec   // the interrupt context of its quiet ticks
	events uint64 // ticks it ran
	late   []lateTick
	_      [64]byte // keeps the chunks' fields off each other's cache lines
}

// lateTick is a tick of the late pass: open (the quiet pass started it and
// its tick core raised the timer softirq; x is its interrupt) or whole.
type lateTick struct {
	cpu   int32
	open  bool
	drawn bool // the late pass drew its softirq's entry cost
	x     Exec
	// touched keeps what touchSeg read (nothing reads it).
	touched uint64
}

// sweeper runs a machine's quiet passes on its goroutine and its helpers.
// The machine's goroutine takes the chunks from the first up, the helpers
// from the last down, so that a CPU's state mostly stays in one core's
// cache from one pass to the next, until they meet. A pass is numbered:
// claim holds the pass's number in its top 32 bits, the next chunk from
// below in the next 16 and one past the next from above in the low 16, so
// that a goroutine late from one pass cannot take a chunk of the next
// with the old instant.
type sweeper struct {
	chunks  []chunk
	g       int64  // the instant of the pass in progress
	soft    bool   // the pass in progress runs softirqs of m.seg, not a quiet pass
	pass    uint64 // passes shared with the helpers
	claim   atomic.Uint64
	left    atomic.Int64 // chunks of the pass not yet done
	stop    atomic.Bool
	helpers []helper
}

// helper is a helper goroutine's parking place: parked says it sleeps on
// wake, or is about to.
type helper struct {
	parked atomic.Bool
	wake   chan struct{}
	_      [64]byte
}

// threads is the number of goroutines a run's quiet passes use.
func (m *Machine) threads() int {
	n := m.cfg.Threads
	if n == 0 {
		n = min(runtime.GOMAXPROCS(0), 4)
	}
	// The checker and a trace run on the machine's goroutine only.
	if m.cfg.Check || m.cfg.Trace != nil {
		n = 1
	}
	return max(1, min(n, len(m.cpus)/(parMinTicking/2)))
}

// startSweeper sets up the chunks and starts the helpers; stopSweeper ends
// them.
func (m *Machine) startSweeper() {
	s := &sweeper{chunks: make([]chunk, (len(m.cpus)+chunkCPUs-1)/chunkCPUs)}
	for i := range s.chunks {
		s.chunks[i].lo, s.chunks[i].hi = i*chunkCPUs, min((i+1)*chunkCPUs, len(m.cpus))
	}
	s.helpers = make([]helper, m.threads()-1)
	for i := range s.helpers {
		h := &s.helpers[i]
		h.wake = make(chan struct{}, 1)
		go m.help(s, h)
	}
	m.sw = s
}

func (m *Machine) stopSweeper() {
	s := m.sw
	if s == nil {
		return
	}
	m.sharedPasses = s.pass
	s.stop.Store(true)
	for i := range s.helpers {
		if h := &s.helpers[i]; h.parked.CompareAndSwap(true, false) {
			h.wake <- struct{}{}
		}
	}
	m.sw = nil
}

// help is a helper goroutine: it takes chunks of each quiet pass until
// the machine stops.
func (m *Machine) help(s *sweeper, h *helper) {
	var seen uint64 // the last pass it took part in
	for {
		t0 := time.Now()
		for n := 0; s.claim.Load()>>32 == seen; n++ {
			if s.stop.Load() {
				return
			}
			if n&63 != 63 || time.Since(t0) < helperSpin {
				continue
			}
			h.parked.Store(true)
			if s.claim.Load()>>32 != seen || s.stop.Load() {
				if h.parked.CompareAndSwap(true, false) {
					continue
				}
			}
			<-h.wake // the waker cleared parked and sent once
			t0 = time.Now()
		}
		seen = s.claim.Load() >> 32
		m.takeChunks(s, seen, false)
	}
}

// takeChunks runs chunks of quiet pass p, from the first up (low) or the
// last down, until none is left to take.
func (m *Machine) takeChunks(s *sweeper, p uint64, low bool) {
	for {
		v := s.claim.Load()
		lo, hi := int(v>>16&0xffff), int(v&0xffff)
		if v>>32 != p || lo >= hi {
			return
		}
		i, w := lo, v+1<<16
		if !low {
			i, w = hi-1, v-1
		}
		if !s.claim.CompareAndSwap(v, w) {
			continue
		}
		// Pass p cannot end, nor s.g, s.soft or m.seg change, before
		// this chunk is done.
		if s.soft {
			m.softChunk(m.seg[i*softChunk : min((i+1)*softChunk, len(m.seg))])
		} else {
			m.quietPass(&s.chunks[i], s.g)
		}
		s.left.Add(-1)
	}
}

// sweep runs the tick of every CPU whose tick runs at the tick instant g:
// the quiet pass, then the late pass.
func (m *Machine) sweep(g int64) {
	m.now = g
	s := m.sw
	if len(s.helpers) > 0 && m.nTicking >= parMinTicking {
		s.g, s.soft = g, false
		m.share(s, len(s.chunks))
	} else {
		for i := range s.chunks {
			m.quietPass(&s.chunks[i], g)
		}
	}
	// Local softirqs only where the helpers can take them, and only in
	// runs whose every timer is local.
	// (The hierarchy's tracer does nothing with a quiet walk's events
	// unless it logs them or a test watches.)
	par := len(s.helpers) > 0 && m.nonLocal == 0 && !m.cfg.PreemptRT && m.tracer.log == nil && m.tracer.seen == nil
	if !m.cfg.PreemptRT && !par {
		// (The local softirqs are touched chunk by chunk, by whichever
		// goroutine runs them: touchSeg.)
		m.touchSoftirqs(s)
	}
	h := m.set.Hierarchy()
	for i := range s.chunks {
		p := &s.chunks[i]
		m.nEvents += p.events
		for j := range p.late {
			l := &p.late[j]
			c := &m.cpus[l.cpu]
			if par && l.open && c.quiet() {
				// The softirq's entry cost, drawn here rather than in
				// timerSoftirq (c's stream is drawn from by c's code
				// alone: the same draw), so that the hierarchy is asked
				// about the time the softirq starts at.
				l.x.Spend(c.draw(&m.samp.SoftirqEntry))
				l.drawn = true
				if h != nil && !h.QuietRemote(c.id, l.x.Now) {
					m.softSerial++
					goto serial
				}
				m.softLocal++
				m.seg = append(m.seg, l)
				continue
			}
		serial:
			m.runSeg(s)
			if l.open {
				m.irqX = l.x
				x := &m.irqX
				m.x, m.inIRQ = x, c
				if l.drawn {
					m.runSoftirq(x, c)
				} else {
					m.timerSoftirq(x, c)
				}
				m.endIRQ(x)
				m.checkCPU(c)
			} else if m.ticking.Test(c.id) && c.tickFrom <= g {
				m.nEvents++
				m.tick(c, g)
			}
			if m.err != nil {
				return
			}
		}
	}
	m.runSeg(s)
}

// share runs a pass of n chunks on the machine's goroutine and the
// helpers, and returns when every chunk is done.
func (m *Machine) share(s *sweeper, n int) {
	s.pass++
	s.left.Store(int64(n))
	s.claim.Store(s.pass<<32 | uint64(n))
	for i := range s.helpers {
		if h := &s.helpers[i]; h.parked.Load() && h.parked.CompareAndSwap(true, false) {
			h.wake <- struct{}{}
		}
	}
	m.takeChunks(s, s.pass, true)
	for n := 0; s.left.Load() != 0; n++ {
		if n&255 == 255 {
			runtime.Gosched()
		}
	}
}

// runSeg runs the softirqs of m.seg, the late pass's segment of local
// softirqs, side by side when there are enough of them, and empties it.
func (m *Machine) runSeg(s *sweeper) {
	if len(m.seg) == 0 {
		return
	}
	if len(m.seg) >= softShareMin {
		s.soft = true
		m.share(s, (len(m.seg)+softChunk-1)/softChunk)
		m.softShared++
	} else {
		m.softChunk(m.seg)
	}
	clear(m.seg)
	m.seg = m.seg[:0]
}

// softChunk runs the local softirqs of seg (see localSoftirq).
func (m *Machine) softChunk(seg []*lateTick) {
	if len(seg) > 1 {
		m.touchSeg(seg)
	}
	for _, l := range seg {
		m.localSoftirq(l)
	}
}

// touchSeg is touchSoftirqs for the local softirqs of seg, before they
// run on the same goroutine: their CPUs' bases and timers are changed by
// nothing else meanwhile. What it read is kept in seg[0].
func (m *Machine) touchSeg(seg []*lateTick) {
	j := m.tg.Jiffies(m.now)
	var v uint64
	for _, l := range seg {
		v += m.set.TouchHead(int(l.cpu), j)
	}
	var buf [2 * softChunk]*wheel.Timer
	n := 0
	for _, l := range seg {
		k, w := m.set.Touch(int(l.cpu), j, buf[n:])
		n, v = n+k, v+w
	}
	for _, t := range buf[:n] {
		if _, ok := t.Data.(*Timer); ok {
			v++
		}
	}
	for _, t := range buf[:n] {
		if st, ok := t.Data.(*Timer); ok && st.fn != nil {
			v++
		}
	}
	seg[0].touched = v
}

// localSoftirq is the rest of the open tick l, whose softirq is local:
// what timerSoftirq and endIRQ do for it, on whatever goroutine, touching
// nothing but l's CPU and its timers. l.x stays its context (m.x and
// m.inIRQ are the machine goroutine's, and are not set): the callbacks
// get it, marked par.
func (m *Machine) localSoftirq(l *lateTick) {
	c := &m.cpus[l.cpu]
	x := &l.x
	x.par = true
	p := c.tk.TimerSoftirq(x.Now)
	for t := p.Next(); t != nil; t = p.Next() {
		m.runTimer(x, c.id, t)
	}
	// endIRQ: no softirq is handed to ktimers (not PREEMPT_RT), and the
	// CPU stays quiet (the callbacks wake nothing): its reschedule and
	// reconsiderTick have nothing to do, checkCPU neither (a checked run
	// has no helpers).
	m.irqDone(c, x.Now)
}

// quiet says whether c's tick can run in the quiet pass: whatever its tick
// does besides raising the timer softirq stays on c.
func (c *cpuState) quiet() bool {
	return c.online && !c.stopped && c.curr != nil && !c.idle && !c.nohzFull &&
		!c.wheelSoft && !c.hrSoftPend && c.rq.len() == 0
}

// quietPass is the quiet pass over p's CPUs at g. It writes nothing but
// p and the state of p's CPUs.
func (m *Machine) quietPass(p *chunk, g int64) {
	p.events = 0
	p.late = p.late[:0]
	in := m.inWindow(g)
	x := &p.x
	for i := m.ticking.Next(p.lo - 1); i >= 0 && i < p.hi; i = m.ticking.Next(i) {
		c := &m.cpus[i]
		if c.tickFrom > g {
			continue
		}
		if !c.quiet() {
			p.late = append(p.late, lateTick{cpu: int32(i)})
			continue
		}
		p.events++
		m.irqStart(c, g, causeTick, x)
		x.Spend(c.draw(&m.samp.Tick))
		if in {
			c.ticks++
		}
		if r := c.tk.Tick(g); r.Softirq&tick.TimerSoftirq != 0 {
			p.late = append(p.late, lateTick{cpu: int32(i), open: true, x: *x})
			continue
		}
		m.irqDone(c, x.Now)
		// A quiet tick leaves the run queue empty and the tick as it was:
		// endIRQ's reschedule and reconsiderTick have nothing to do.
		m.checkCPU(c)
	}
}

// touchSoftirqs reads the timer bases the late pass's open ticks are about
// to expire (cpu.Set.TouchHead, Touch) and the first timers due there, all
// of them before the first softirq runs, one step at a time over all the
// CPUs: each CPU's bases lie kilobytes apart and far from the last time it
// ran its softirq, and one softirq after another each waited for its own
// chain of cache misses (the first base lock and bookkeeping, the bucket
// heads, the timer, what it stands for), where reading every CPU's first
// link, then every CPU's second, lets the misses overlap. It changes
// nothing; the helpers are done with the pass.
func (m *Machine) touchSoftirqs(s *sweeper) {
	j := m.tg.Jiffies(m.now)
	var v uint64
	for i := range s.chunks {
		for _, l := range s.chunks[i].late {
			if l.open {
				v += m.set.TouchHead(int(l.cpu), j)
			}
		}
	}
	ts := m.touchTs[:0]
	var buf [8]*wheel.Timer
	for i := range s.chunks {
		for _, l := range s.chunks[i].late {
			if l.open {
				n, w := m.set.Touch(int(l.cpu), j, buf[:])
				ts = append(ts, buf[:n]...)
				v += w
			}
		}
	}
	for _, t := range ts {
		if _, ok := t.Data.(*Timer); ok {
			v++
		}
	}
	for _, t := range ts {
		if st, ok := t.Data.(*Timer); ok && st.fn != nil {
			v++
		}
	}
	clear(ts)
	m.touchTs = ts
	m.touched += v
}
