package engine

// The haltpoll governor's parameters, at the defaults of Linux's module
// (drivers/cpuidle/governors/haltpoll.c): the poll window starts at 0,
// grows by 2x (to at least 50 µs) and shrinks by 2x, and never exceeds
// 200 µs.
const (
	haltPollMax       = 200_000 // guest_halt_poll_ns
	haltPollGrow      = 2       // guest_halt_poll_grow
	haltPollGrowStart = 50_000  // guest_halt_poll_grow_start
	haltPollShrink    = 2       // guest_halt_poll_shrink
	// haltPollHits is ours: the timed wake-ups in a row that the window
	// caught before it shrinks (see governor).
	haltPollHits = 64
)

// governor is the HaltPoll idle mode's poll window, adapted as Linux's
// haltpoll governor adapts a guest CPU's (a pure state machine, driven by
// haltPoll and tested alone).
//
// The kernel's governor sees only how long each halt lasted (block_ns): a
// halt that a longer poll would have caught (limit < block_ns ≤ 200 µs)
// grows the window, a long halt (block_ns > 200 µs) shrinks it; after a
// halt the CPU polls first, and halts only once a poll ran out without an
// event. We keep exactly that for wake-ups we cannot foresee (kicks: a task
// or a timer from another goroutine).
//
// A worker also knows its own next event, which a guest's governor does
// not. For that one we place the window before the deadline: halt until
// deadline − window, then poll, so the wake-up is as prompt as polling while
// the spinning costs one window per wake-up. A timed halt that overslept the
// deadline is "a short sleep a poll would have caught": the window grows.
// One that woke in time is not, but shrinking after each of them (the
// kernel's "long halt" rule) would leave the window too short for the next
// slow wake-up, so the window shrinks only after haltPollHits of them in a
// row, and the window stays near the high tail of the kernel's wake-up
// latency.
type governor struct {
	limit            int64 // the poll window, ns
	lastPollTimedOut bool  // the last idle entry polled and saw nothing
	hits             int   // timed wake-ups in time since the last change
}

func (g *governor) grow() {
	v := g.limit * haltPollGrow
	if v < haltPollGrowStart {
		v = haltPollGrowStart
	}
	if v > haltPollMax {
		v = haltPollMax
	}
	g.limit = v
	g.hits = 0
}

func (g *governor) shrink() {
	g.limit /= haltPollShrink
	g.hits = 0
}

// kicked reflects a halt of blockNs that a kick ended (adjust_poll_limit).
func (g *governor) kicked(blockNs int64) {
	switch {
	case blockNs > g.limit && blockNs <= haltPollMax:
		g.grow()
	case blockNs > haltPollMax:
		g.shrink()
	}
}

// timed reflects a halt that ended by its own timeout, late if after the
// deadline the window was meant to cover.
func (g *governor) timed(late bool) {
	if late {
		g.grow()
		return
	}
	if g.hits++; g.hits >= haltPollHits {
		g.shrink()
	}
}

// pollFirst reports whether this idle entry polls before halting
// (haltpoll_select: poll after a halt, or after a poll that saw an event;
// halt after a poll that ran out).
func (g *governor) pollFirst() bool { return g.limit > 0 && !g.lastPollTimedOut }

// haltPoll is one idle entry in HaltPoll mode.
func (w *Worker) haltPoll(deadline, now int64) {
	g := &w.gov
	if g.pollFirst() {
		end := min(now+g.limit, deadline)
		if w.poll(end) || w.now() >= deadline {
			return // an event came while polling: poll again next time
		}
		g.lastPollTimedOut = true
		return // back through the loop, which halts
	}
	g.lastPollTimedOut = false
	start := w.now()
	if target := deadline - g.limit; target > start {
		kicked := w.halt(target)
		woke := w.now()
		if kicked {
			g.kicked(woke - start)
			return
		}
		g.timed(woke > deadline)
		if woke >= deadline {
			return
		}
	}
	w.poll(deadline)
}
