package hrtimer

import (
	"slices"
	"testing"

	"github.com/tmigr/tmigr/internal/soak"
	"pgregory.net/rapid"
)

// The reference model of one CPU base: each timer's state in plain fields,
// queues as sorted lists, and the kernel's rules for a pass written out
// directly on those lists. The model tracks the facts of docs/hrtimer.md
// HI1–HI11 (which timers are queued, their expiries and enqueue order,
// softirq_activated, the hang statistics) but not the implementation's cached pointers (next_timer and
// friends): those are what it checks.

type mTimer struct {
	t      *Timer
	base   int // clock base index 0-7
	queued bool
	soft   int64
	hard   int64
	seq    uint64
}

type model struct {
	b         *CPUBase
	lowres    bool
	offs      [numBases]int64
	timers    []*mTimer
	seq       uint64
	now       int64
	activated bool
	hang      bool
	stats     Stats
	running   *mTimer
}

func satAdd(a, b int64) int64 {
	r := a + b
	if (b > 0 && r < a) || r < 0 || r < a || r < b {
		return SatMax
	}
	return r
}

func (m *model) enqueue(x *mTimer) {
	m.seq++
	x.seq, x.queued = m.seq, true
}

// sorted returns the queued timers of base i in queue order.
func (m *model) sorted(i int) []*mTimer {
	var q []*mTimer
	for _, x := range m.timers {
		if x.queued && x.base == i {
			q = append(q, x)
		}
	}
	slices.SortFunc(q, func(a, b *mTimer) int {
		if c := cmpInt(a.hard, b.hard); c != 0 {
			return c
		}
		return cmpInt(int64(a.seq), int64(b.seq))
	})
	return q
}

// minExp is the earliest monotonic expiry over the bases in mask, clamped
// at 0, or Never.
func (m *model) minExp(mask uint8) int64 {
	exp := Never
	for _, x := range m.timers {
		if x.queued && mask&(1<<x.base) != 0 {
			exp = min(exp, x.hard-m.offs[x.base])
		}
	}
	return max(exp, 0)
}

// nextEvent is what expires_next must be outside a pass (HI4).
func (m *model) nextEvent() int64 {
	if m.activated {
		return m.minExp(activeHard)
	}
	return m.minExp(activeHard | activeSoft)
}

func (m *model) activeMask(mask uint8) uint8 {
	var a uint8
	for _, x := range m.timers {
		if x.queued {
			a |= 1 << x.base
		}
	}
	return a & mask
}

func (m *model) check(rt *rapid.T) {
	b := m.b
	if got, want := b.NextHardExpiry(), m.minExp(activeHard); got != want {
		rt.Fatalf("next hard expiry %d, model %d", got, want)
	}
	if got, want := b.NextSoftExpiry(), m.minExp(activeSoft); got != want {
		rt.Fatalf("next soft expiry %d, model %d", got, want)
	}
	if got := b.SoftirqActivated(); got != m.activated {
		rt.Fatalf("softirq_activated %v, model %v", got, m.activated)
	}
	sen := b.SoftirqExpiresNext()
	if m.activated && sen != Never {
		rt.Fatalf("softirq_expires_next %d while the softirq is raised", sen)
	}
	if !m.activated && sen > m.minExp(activeSoft) {
		rt.Fatalf("softirq_expires_next %d after the first soft expiry %d: a soft timer would be missed", sen, m.minExp(activeSoft))
	}
	if !m.lowres {
		if got, want := b.ExpiresNext(), m.nextEvent(); got != want {
			rt.Fatalf("expires_next %d, model %d", got, want)
		}
		if !m.hang {
			if dev, en := b.Device(), b.ExpiresNext(); dev != en {
				rt.Fatalf("device armed for %d, expires_next %d", dev, en)
			}
		}
	}
	if got := b.HangDetected(); got != m.hang {
		rt.Fatalf("hang_detected %v, model %v", got, m.hang)
	}
	if got := b.Stats(); got != m.stats {
		rt.Fatalf("stats %+v, model %+v", got, m.stats)
	}
	n := 0
	for i, x := range m.timers {
		if x.queued {
			n++
		}
		if got := x.t.Queued(); got != x.queued {
			rt.Fatalf("timer %d queued=%v, model %v", i, got, x.queued)
		}
		if got := x.t.Active(); got != x.queued {
			rt.Fatalf("timer %d active=%v, model %v", i, got, x.queued)
		}
		if x.queued && (x.t.SoftExpires() != x.soft || x.t.Expires() != x.hard) {
			rt.Fatalf("timer %d expires [%d,%d], model [%d,%d]", i, x.t.SoftExpires(), x.t.Expires(), x.soft, x.hard)
		}
	}
	if got := b.Len(); got != n {
		rt.Fatalf("%d queued, model %d", got, n)
	}
}

func (m *model) start(rt *rapid.T, x *mTimer, label string) {
	rel := rapid.Bool().Draw(rt, label+"rel")
	var tim int64
	if rel {
		tim = rapid.Int64Range(-50, 3000).Draw(rt, label+"delta")
	} else {
		tim = m.now + rapid.Int64Range(-500, 3000).Draw(rt, label+"at")
	}
	slack := rapid.SampledFrom([]int64{0, 0, 1, 50, 400}).Draw(rt, label+"slack")
	mode := ModeAbs
	if rel {
		mode = ModeRel
	}
	eff, err := m.b.Start(x.t, m.now, tim, slack, mode)
	if err != nil {
		rt.Fatalf("start: %v", err)
	}
	if rel {
		tim = satAdd(tim, m.now+m.offs[x.base])
	}
	x.soft, x.hard = tim, satAdd(tim, slack)
	m.enqueue(x)
	if eff.Program && m.running == nil && eff.At != m.b.ExpiresNext() {
		rt.Fatalf("start programmed %d, expires_next %d", eff.At, m.b.ExpiresNext())
	}
}

func (m *model) cancel(rt *rapid.T, x *mTimer) {
	r, eff := m.b.TryCancel(x.t)
	want := 0
	switch {
	case x == m.running:
		want = -1
	case x.queued:
		want = 1
		x.queued = false
	}
	if r != want {
		rt.Fatalf("try_to_cancel %d, model %d", r, want)
	}
	if eff.Program && m.running == nil && eff.At != m.b.ExpiresNext() {
		rt.Fatalf("cancel programmed %d, expires_next %d", eff.At, m.b.ExpiresNext())
	}
}

// pass runs a hardirq (or tick) or softirq pass, predicting every timer
// Next hands out and every End outcome.
func (m *model) pass(rt *rapid.T, soft bool) {
	b := m.b
	var p *Pass
	var err error
	mask := uint8(activeHard)
	entry := m.now
	switch {
	case soft:
		p, err = b.Softirq(m.now)
		mask = activeSoft
	case m.lowres:
		p, err = b.Tick(m.now)
	default:
		p, err = b.Interrupt(m.now)
	}
	if err != nil {
		rt.Fatalf("pass: %v", err)
	}
	if !soft {
		if !m.lowres {
			m.stats.Events++
		}
	}
	// The raise decision depends on softirq_expires_next, which may be
	// stale-early (check makes sure it is never late); read what the
	// implementation decided and update the model.
	raised := !soft && p.Raised()
	if raised {
		m.activated = true
	}
	if !soft && !raised && !m.activated && m.minExp(activeSoft) <= m.now {
		rt.Fatalf("soft timer due at %d, now %d, softirq not raised", m.minExp(activeSoft), m.now)
	}
	retries := 0
	calls := 0
	for {
		todo := m.activeMask(mask)
		cur := -1
		var basenow int64
		for {
			// The model's next timer.
			var want *mTimer
			for todo != 0 {
				i := lowBit(todo)
				if cur != i {
					cur, basenow = i, m.now+m.offs[i]
				}
				if q := m.sorted(i); len(q) > 0 && basenow >= q[0].soft {
					want = q[0]
					break
				}
				todo &^= 1 << i
			}
			got := p.Next()
			if want == nil {
				if got != nil {
					rt.Fatalf("pass ran %p, model ran nothing", got)
				}
				break
			}
			if got != want.t {
				rt.Fatalf("pass ran timer %d, model timer %d", m.index(got), m.index(want.t))
			}
			s, h, bn := p.Armed()
			if s != want.soft || h != want.hard || bn != basenow {
				rt.Fatalf("armed [%d,%d] at %d, model [%d,%d] at %d", s, h, bn, want.soft, want.hard, basenow)
			}
			if bn < s {
				rt.Fatalf("timer runs at %d before its soft expiry %d", bn, s)
			}
			if want.t.IsSoft() != soft {
				rt.Fatalf("soft=%v timer in a soft=%v pass", want.t.IsSoft(), soft)
			}
			want.queued = false
			m.running = want
			calls++
			m.callback(rt, want, calls > 40)
			m.running = nil
		}
		cost := rapid.SampledFrom([]int64{0, 0, 1, 100, 5000}).Draw(rt, "endcost")
		m.now += cost
		out, err := p.End(m.now)
		if err != nil {
			rt.Fatalf("end: %v", err)
		}
		if soft || m.lowres {
			if out.Retry || out.Hang {
				rt.Fatalf("soft/tick pass retried or hung: %+v", out)
			}
			if soft {
				m.activated = false
			}
			return
		}
		exp := m.nextEvent()
		if exp == Never || exp > m.now {
			if out.Retry || out.Hang || !out.Program || out.At != exp {
				rt.Fatalf("end at %d with next event %d: %+v, want program at %d", m.now, exp, out, exp)
			}
			m.hang = false
			return
		}
		m.stats.Retries++
		retries++
		if retries < 3 {
			if !out.Retry {
				rt.Fatalf("end at %d with next event %d past: %+v, want retry %d", m.now, exp, out, retries)
			}
			if !m.activated && m.minExp(activeSoft) <= m.now {
				m.activated = true
				if !out.Raised {
					rt.Fatalf("retry at %d did not raise the softirq for %d", m.now, m.minExp(activeSoft))
				}
			} else if out.Raised {
				rt.Fatalf("retry raised the softirq for nothing")
			}
			continue
		}
		delta := m.now - entry
		m.stats.Hangs++
		m.stats.MaxHangTime = max(m.stats.MaxHangTime, uint32(delta))
		m.hang = true
		if !out.Hang || out.Retry || out.HangDelta != delta || out.At != m.now+min(delta, 100_000_000) {
			rt.Fatalf("third failed pass: %+v, want hang delta %d", out, delta)
		}
		return
	}
}

func lowBit(x uint8) int {
	for i := range 8 {
		if x&(1<<i) != 0 {
			return i
		}
	}
	return -1
}

func (m *model) index(t *Timer) int {
	for i, x := range m.timers {
		if x.t == t {
			return i
		}
	}
	return -1
}

// callback plays a callback: it may restart or cancel timers (itself
// included), forward itself, and returns RESTART or NORESTART.
func (m *model) callback(rt *rapid.T, x *mTimer, quiet bool) {
	act := NoRestart
	if !quiet {
		for range rapid.IntRange(0, 2).Draw(rt, "ops") {
			y := m.timers[rapid.IntRange(0, len(m.timers)-1).Draw(rt, "cbtimer")]
			if rapid.Bool().Draw(rt, "cbstart") {
				m.start(rt, y, "cb")
			} else {
				m.cancel(rt, y)
			}
		}
		switch rapid.IntRange(0, 2).Draw(rt, "action") {
		case 1:
			act = Restart
			if !x.queued {
				// Forward first, or a RESTART at the same expiry would
				// run again in this pass, forever.
				iv := rapid.Int64Range(-1, 2000).Draw(rt, "interval")
				now := m.now + m.offs[x.base]
				old := x.hard
				k := x.t.Forward(now, iv)
				iv = max(iv, m.b.Resolution())
				if now < old {
					if k != 0 {
						rt.Fatalf("forward before expiry returned %d", k)
					}
					act = NoRestart
					break
				}
				if k == 0 || x.hard+int64(k)*iv != x.t.Expires() || x.t.Expires() <= now {
					rt.Fatalf("forward(%d, %d) of %d: k=%d, expires %d", now, iv, old, k, x.t.Expires())
				}
				x.soft += int64(k) * iv
				x.hard += int64(k) * iv
			}
		case 2:
			act = Restart // RESTART of a timer restarted meanwhile, or not
			if !x.queued {
				act = NoRestart
			}
		}
	}
	wasQueued := x.queued
	pass := &m.b.hard
	if x.t.IsSoft() {
		pass = &m.b.soft
	}
	pass.Done(x.t, act)
	if act == Restart && !wasQueued {
		m.enqueue(x)
	}
}

// TestModel drives a CPU base and the model with random sequences of
// starts, cancels, clock advances and hard and soft passes, comparing them
// after every step. TMIGR_SOAK=N (package internal/soak) runs batches of
// cases until N steps have been checked.
func TestModel(t *testing.T) {
	var steps int64
	soak.Run(t, func() int64 { return steps }, func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) { modelCase(rt, &steps) })
	})
}

// modelCase is one case of TestModel; it adds the steps it ran to *ops.
func modelCase(rt *rapid.T, ops *int64) {
	cfg := Config{PreemptRT: rapid.Bool().Draw(rt, "rt")}
	lowres := rapid.Bool().Draw(rt, "lowres")
	if lowres {
		cfg.LowRes, cfg.HZ = true, 1_000_000 // 1 µs ticks keep the numbers small
	}
	b, err := NewCPUBase(0, cfg)
	if err != nil {
		rt.Fatal(err)
	}
	m := &model{b: b, lowres: lowres}
	o := [3]int64{}
	for i := range o {
		o[i] = rapid.Int64Range(-1000, 1000).Draw(rt, "offset")
	}
	b.SetOffsets(o[0], o[1], o[2])
	for c := 1; c < 4; c++ {
		m.offs[c], m.offs[c+softShift] = o[c-1], o[c-1]
	}
	n := rapid.IntRange(1, 8).Draw(rt, "timers")
	for i := range n {
		x := &mTimer{t: &Timer{}}
		clock := Clock(rapid.IntRange(0, 3).Draw(rt, "clock"))
		mode := rapid.SampledFrom([]Mode{ModeAbs, ModeSoft, ModeHard}).Draw(rt, "mode")
		if err := b.Setup(x.t, clock, mode); err != nil {
			rt.Fatal(err)
		}
		x.base = int(clock)
		if mode&ModeSoft != 0 || (cfg.PreemptRT && mode&ModeHard == 0) {
			x.base += softShift
		}
		if got := x.t.IsSoft(); got != (x.base >= softShift) {
			rt.Fatalf("timer %d soft=%v", i, got)
		}
		m.timers = append(m.timers, x)
	}
	m.check(rt)
	for range rapid.IntRange(1, 60).Draw(rt, "steps") {
		x := m.timers[rapid.IntRange(0, n-1).Draw(rt, "timer")]
		switch rapid.IntRange(0, 5).Draw(rt, "op") {
		case 0, 1:
			m.start(rt, x, "")
		case 2:
			m.cancel(rt, x)
		case 3:
			m.now += rapid.Int64Range(0, 2000).Draw(rt, "advance")
		case 4:
			m.pass(rt, false)
		case 5:
			if m.activated {
				m.pass(rt, true)
			}
		}
		m.check(rt)
		*ops++
	}
}

// TestForward checks hrtimer_forward (docs/hrtimer.md H4, HI5) against stepping the
// expiry one interval at a time.
func TestForward(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		cfg := Config{}
		if rapid.Bool().Draw(rt, "lowres") {
			cfg.LowRes, cfg.HZ = true, rapid.SampledFrom([]int{100, 250, 1000, 1_000_000}).Draw(rt, "hz")
		}
		b, _ := NewCPUBase(0, cfg)
		var tm Timer
		if err := b.Setup(&tm, Monotonic, ModeAbs); err != nil {
			rt.Fatal(err)
		}
		res := b.Resolution()
		iv := rapid.Int64Range(-10, 5*res+5000).Draw(rt, "interval")
		step := max(iv, res)
		soft := rapid.Int64Range(-1_000_000, 1_000_000).Draw(rt, "soft")
		slack := rapid.Int64Range(0, 100_000).Draw(rt, "slack")
		now := soft + slack + rapid.Int64Range(-2*step, 5000*step).Draw(rt, "delta")
		if _, err := b.Start(&tm, 0, soft, slack, ModeAbs); err != nil {
			rt.Fatal(err)
		}
		if k := tm.Forward(now, iv); k != 0 {
			rt.Fatalf("forward of a queued timer returned %d", k)
		}
		b.TryCancel(&tm)
		k := tm.Forward(now, iv)
		hard := satAdd(soft, slack) // a negative soft expiry saturates, as in ktime_add_safe
		if now < hard {
			if k != 0 || tm.Expires() != hard || tm.SoftExpires() != soft {
				rt.Fatalf("forward before expiry: k=%d [%d,%d]", k, tm.SoftExpires(), tm.Expires())
			}
			return
		}
		var want uint64
		for hard <= now {
			hard += step
			want++
		}
		if k != want || tm.Expires() != hard || tm.Expires()-tm.SoftExpires() != slack {
			rt.Fatalf("forward(%d, %d): k=%d [%d,%d], want k=%d hard=%d slack=%d", now, iv, k, tm.SoftExpires(), tm.Expires(), want, hard, slack)
		}
		if !(tm.Expires() > now && now >= tm.Expires()-step) {
			rt.Fatalf("HI5 violated: new=%d now=%d interval'=%d", tm.Expires(), now, step)
		}
	})
}

// TestHang drives interrupts whose callbacks keep the next timer overdue
// (HI9): exactly three passes, then hang_detected, nr_hangs + 1, the
// device at now + min(delta, 100 ms), max_hang_time never decreasing; and
// the first interrupt that can program its event clears hang_detected.
func TestHang(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b, _ := NewCPUBase(0, Config{PreemptRT: rapid.Bool().Draw(rt, "rt")})
		n := rapid.IntRange(1, 4).Draw(rt, "timers")
		period := rapid.Int64Range(1, 1_000_000).Draw(rt, "period")
		cost := period + rapid.Int64Range(1, 100_000_000).Draw(rt, "extra")
		timers := make([]Timer, n)
		now := rapid.Int64Range(0, 1<<40).Draw(rt, "now")
		for i := range timers {
			if err := b.Setup(&timers[i], Monotonic, ModeHard); err != nil {
				rt.Fatal(err)
			}
			b.Start(&timers[i], now, now-int64(i), 0, ModeAbs)
		}
		var maxHang uint32
		for round := range rapid.IntRange(1, 4).Draw(rt, "rounds") {
			entry := now
			p, err := b.Interrupt(now)
			if err != nil {
				rt.Fatal(err)
			}
			before := b.Stats()
			passes := 0
			var out Outcome
			for {
				passes++
				for t := p.Next(); t != nil; t = p.Next() {
					t.Forward(now, period)
					now += cost
					p.Done(t, Restart)
				}
				if out, err = p.End(now); err != nil {
					rt.Fatal(err)
				}
				if !out.Retry {
					break
				}
			}
			st := b.Stats()
			delta := now - entry
			maxHang = max(maxHang, uint32(delta))
			switch {
			case passes != 3 || !out.Hang:
				rt.Fatalf("round %d: %d passes, outcome %+v", round, passes, out)
			case out.At != now+min(delta, 100_000_000) || b.Device() != out.At:
				rt.Fatalf("hang programmed %d (device %d), want %d", out.At, b.Device(), now+min(delta, 100_000_000))
			case st.Hangs != before.Hangs+1 || st.Retries != before.Retries+3 || st.MaxHangTime != maxHang || st.MaxHangTime < before.MaxHangTime:
				rt.Fatalf("stats %+v after %+v, delta %d", st, before, delta)
			case !b.HangDetected():
				rt.Fatal("hang_detected not set")
			}
			now = out.At
		}
		// A cheap interrupt: every timer moved past now, the program works.
		p, _ := b.Interrupt(now)
		for t := p.Next(); t != nil; t = p.Next() {
			t.Forward(now, period)
			p.Done(t, Restart)
		}
		out, err := p.End(now)
		if err != nil || out.Retry || out.Hang || b.HangDetected() {
			rt.Fatalf("cheap interrupt: %+v %v hang=%v", out, err, b.HangDetected())
		}
	})
}
