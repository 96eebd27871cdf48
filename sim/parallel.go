package sim

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tmigr/tmigr/tick"
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
//     interrupt) and the ticks of the CPUs that were not quiet (whole).
//
// Both passes happen at the same instant g; a tick of the late pass sees
// what the earlier late ticks did, as one tick after another did before.
// The passes are the same whatever the number of goroutines (one included:
// then the quiet pass runs on the machine's goroutine), and each CPU draws
// from its own stream, so a seed's output does not depend on Threads.

// The late pass stays on the machine's goroutine: a softirq runs timer
// callbacks, which may arm timers on any CPU and wake tasks, and a
// migrator's remote walk changes the hierarchy, so each late tick must
// see what the lower CPUs' did at this instant; only the core's ordinary
// API is used, and only from that goroutine.

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
	// touched keeps what the pass's cpuState.touch read (nothing reads
	// it).
	touched uint64
	_       [64]byte // keeps the chunks' fields off each other's cache lines
}

// lateTick is a tick of the late pass: open (the quiet pass started it and
// its tick core raised the timer softirq; x is its interrupt) or whole.
type lateTick struct {
	cpu  int32
	open bool
	x    Exec
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
		// Pass p cannot end, nor s.g change, before this chunk is done.
		m.quietPass(&s.chunks[i], s.g)
		s.left.Add(-1)
	}
}

// sweep runs the tick of every CPU whose tick runs at the tick instant g:
// the quiet pass, then the late pass.
func (m *Machine) sweep(g int64) {
	m.now = g
	s := m.sw
	if len(s.helpers) > 0 && m.nTicking >= parMinTicking {
		s.g = g
		m.share(s, len(s.chunks))
	} else {
		for i := range s.chunks {
			m.quietPass(&s.chunks[i], g)
		}
	}
	for i := range s.chunks {
		p := &s.chunks[i]
		m.nEvents += p.events
		for j := range p.late {
			l := &p.late[j]
			c := &m.cpus[l.cpu]
			if l.open {
				m.irqX = l.x
				x := &m.irqX
				m.x, m.inIRQ = x, c
				m.timerSoftirq(x, c)
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
}

// share runs a quiet pass of n chunks on the machine's goroutine and the
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
	var v uint64
	for i := m.ticking.Next(p.lo - 1); i >= 0 && i < p.hi; i = m.ticking.Next(i) {
		if a := i + touchAhead; a < p.hi {
			v += m.cpus[a].touch()
		}
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
	p.touched += v
}

// touchAhead is how many CPUs ahead of the one it ticks a quiet pass
// reads a CPU's state (cpuState.touch), within its own chunk: far enough
// that the lines have come when the tick gets there, near enough that
// they are still in the cache (docs/performance.md).
const touchAhead = 4

// touch reads one field in each of the four cache lines of c that a
// quiet tick uses (TestCPUStateLayout) and returns what it read, for the
// caller to keep so that the reads stay. The CPUs of a pass lie 512 bytes
// apart and each tick waited for its own four misses; read a few ticks
// ahead, they overlap with the ticks in between. It changes nothing.
func (c *cpuState) touch() uint64 {
	v := uint64(c.tickFrom) + uint64(c.stepEnd)
	if c.online {
		v++
	}
	if c.tk.Stopped() {
		v++
	}
	return v
}
