package cpu

import (
	"sync/atomic"

	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// Pass is one run of a CPU's timer softirq (run_timer_softirq), driven by
// the caller in the manner of hrtimer.Pass:
//
//	p := set.Softirq(cpu, snap)
//	for t := p.Next(); t != nil; t = p.Next() {
//		run(t) // what t.Data stands for; no lock is held
//	}
//
// It expires the due timers of the CPU's LOCAL, GLOBAL and DEF bases up to
// the snapshot's jiffies (__run_timer_base on each), then, under a
// hierarchical policy, walks the hierarchy (tmigr_handle_remote) and
// expires the due GLOBAL timers of every idle CPU this one is migrator for
// (timer_expire_remote), re-walking each such CPU's next event once its
// timers ran.
//
// Next hands out one timer at a time, in the kernel's order (bases in
// index order; within a base, one clock value at a time, higher levels
// first, last added first), detached from its base and recorded as the
// base's running timer, with the base lock dropped: a concurrent delete
// sees it running (TryToDelSync returns -1), and a re-arm from the
// function, or from elsewhere while it runs, leaves it on its base. The
// next call of Next is "the function returned": the running mark is
// cleared under the base lock and expiry goes on. The timer's owner, the
// CPU whose base it expired from, is t.CPU() (a running timer stays on its
// base); it differs from the handler during a remote expiry, and Remote
// tells which CPU is being expired.
//
// A pass must be run to its end (Next returning nil) before the CPU's next
// Softirq; it belongs to the CPU, is reused, and allocates nothing. Only
// the CPU's own driver goroutine may drive it; the timer API (Mod, Del,
// ...) stays safe to call from anywhere meanwhile.
type Pass struct {
	s       *Set
	cpu     int // the handler
	snap    Snapshot
	phase   int   // next base of this CPU to expire; NumBases: remote targets; NumBases+1: over
	single  bool  // one base only (RunBase): over after it
	cur     *base // the base being expired, or nil
	out     bool  // a timer of cur was handed out and its function has not yet returned
	target  int   // the CPU being expired remotely, -1 for none
	remote  hier.Remote
	walking bool // remote was begun
}

// Softirq starts the timer softirq of CPU cpu at the snapshot of the last
// tick update and returns its pass. It is called when Tick reported that
// the softirq must run (on PREEMPT_RT, from the CPU's ktimers thread).
func (s *Set) Softirq(cpu int, snap Snapshot) *Pass {
	s.cpu(cpu) // the range check
	p := &s.passes[cpu]
	// Field by field: the remote walk's state is large and set anew by
	// BeginRemote when the pass reaches it.
	p.snap, p.phase, p.cur, p.out, p.target, p.walking, p.single = snap, 0, nil, false, -1, false, false
	return p
}

// RunBase starts the expiry of one base of CPU cpu at snap, base i
// (BaseLocal, BaseGlobal or BaseDef), and returns its pass, which ends
// with that base: __run_timer_base, the step run_timer_softirq takes for
// each of the CPU's bases before the hierarchy's remote expiry. It
// collects every due bucket, one without timers too (a mark MigrateTo
// left, which prints nothing), and hands out the due timers as Softirq's
// pass does. Drive it as Softirq's, on the CPU's own driver goroutine and
// not while its Softirq pass runs.
func (s *Set) RunBase(cpu, i int, snap Snapshot) *Pass {
	s.cpu(cpu) // the range check
	if i < 0 || i >= NumBases {
		panic("cpu: RunBase: no such base")
	}
	p := &s.passes[cpu]
	p.snap, p.phase, p.cur, p.out, p.target, p.walking, p.single = snap, i, nil, false, -1, false, true
	return p
}

// Remote returns the CPU whose GLOBAL timers the pass is expiring on the
// hierarchy's behalf, or -1 while it expires the handler's own bases.
func (p *Pass) Remote() int { return p.target }

// Next returns the next expired timer to run, or nil when the pass is over.
func (p *Pass) Next() *wheel.Timer {
	s := p.s
	if p.out {
		// The function of the timer handed out last has returned.
		p.cur.mu.Lock()
		p.cur.running = nil
		p.out = false
		if t := p.expire(); t != nil {
			return t
		}
		p.baseDone()
	}
	for {
		switch {
		case p.phase < NumBases:
			i := p.cpu*NumBases + p.phase
			p.phase++
			if p.single {
				p.phase = NumBases + 1 // this base, then over
			}
			if p.start(&s.next[i], &s.cpus[p.cpu].bases[i%NumBases]) {
				if t := p.expire(); t != nil {
					return t
				}
				p.baseDone()
			}
		case p.phase == NumBases && s.h != nil:
			if !p.walking {
				p.walking = true
				s.h.BeginRemote(&p.remote, p.cpu, p.snap.M, p.snap.J)
			}
			target := p.remote.Next()
			if target < 0 {
				p.phase++
				p.target = -1
				continue
			}
			p.target = target
			if p.start(&s.next[target*NumBases+BaseGlobal], &s.cpus[target].bases[BaseGlobal]) {
				if t := p.expire(); t != nil {
					return t
				}
				p.baseDone()
			} else {
				p.remote.Done(s)
			}
		default:
			p.phase = NumBases + 1
			return nil
		}
	}
}

// start is the entry of __run_timer_base: skip a base that is not due
// (read without the lock, as the kernel reads next_expiry), or one another
// CPU is expiring right now (a remote expiry); otherwise lock it and make
// it the current base. next is b's next expiry in Set.next, read first so
// that a base that is not due is not touched at all.
func (p *Pass) start(next *atomic.Uint64, b *base) bool {
	if wheel.Before(p.snap.J, next.Load()) {
		return false
	}
	b.mu.Lock()
	if b.running != nil {
		b.mu.Unlock()
		return false
	}
	p.cur = b
	return true
}

// expire is the loop of __run_timers on the current base, which is locked:
// the next collected timer is handed out (marked running, the lock
// dropped), or the next clock value collected, until the base is not due.
// It returns nil, the base still locked, when the base is done.
func (p *Pass) expire() *wheel.Timer {
	b := p.cur
	for {
		for t := b.w.NextExpired(); t != nil; t = b.w.NextExpired() {
			if t.Shutdown() {
				continue
			}
			b.running = t
			p.out = true
			b.mu.Unlock()
			return t
		}
		if !b.w.Collect(p.snap.J) {
			return nil
		}
		b.publish()
	}
}

// baseDone ends the current base (locked): publish and unlock, and after a
// remote target's base, let the hierarchy re-walk the target's event.
func (p *Pass) baseDone() {
	b := p.cur
	b.publish()
	b.mu.Unlock()
	p.cur = nil
	if p.target >= 0 {
		p.remote.Done(p.s)
	}
}
