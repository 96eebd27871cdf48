package hrtimer

// queue is one clock base's timerqueue: timers ordered by hard expiry, FIFO
// among equal expiries, with the leftmost at q[0].
//
// The kernel uses a red-black tree (timerqueue) whose insertion sends equal
// keys to the right, so in-order traversal lists equal expiries in insertion
// order. A 4-ary heap keyed by (expires, seq), with seq a per-CPU enqueue
// counter, yields the same total order: the same leftmost after every
// operation, the same expiry order. Each Timer carries its own heap index, so
// removal is O(log n) and nothing is allocated once the slice has grown to
// the largest number of timers the base has held.
//
// Each entry holds a copy of its timer's key beside the pointer, so the
// comparisons of a sift read the heap's own array, not one Timer per level:
// with many timers (a hundred thousand on a base is 20 MB of Timers) every
// such read is a cache miss, and they were most of the cost of a start.
//
// A copy may be stale, but only low: an entry's key is never greater than
// its timer's (expires, seq). A restart in place that moves a timer later
// (fix) leaves its entry where it is, as Go's own timer heap leaves a
// modified timer until it reaches the top; first puts the top entry right
// before it answers, sifting it down, until the top's key is its timer's.
// That top is then the true leftmost: every other entry is at least the
// top's key and at most its own timer's. The heap's order is over the
// entries' keys, so push, remove and the sifts are unchanged. A timer's
// expires and seq otherwise only change while it is not queued (Forward
// refuses a queued timer).
type queue []qent

type qent struct {
	expires int64
	seq     uint64
	t       *Timer
}

func less(a, b *qent) bool {
	if a.expires != b.expires {
		return a.expires < b.expires
	}
	return a.seq < b.seq
}

// push adds t and reports whether it became the leftmost.
func (q *queue) push(t *Timer) bool {
	*q = append(*q, qent{t.expires, t.seq, t})
	i := len(*q) - 1
	t.idx = int32(i)
	q.up(i)
	return t.idx == 0
}

// remove deletes t (which must be in q) and reports whether q is non-empty
// afterwards, like timerqueue_del.
func (q *queue) remove(t *Timer) bool {
	h := *q
	i := int(t.idx)
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].t.idx = int32(i)
	}
	h[last] = qent{}
	*q = h[:last]
	t.idx = -1
	if i != last {
		if !q.up(i) {
			q.down(i)
		}
	}
	return last > 0
}

// fix follows a change of t's expires and seq (t is in q; seq only grows)
// and reports whether t is now the leftmost: the answer remove and push
// would give. A timer moved earlier than its entry's key is sifted up at
// once; one moved later keeps its entry, now a lower bound (see queue).
// It reads the entry (for one of many timers, a cache miss): the timer
// kept a copy of its entry's key once, so that a move later read none,
// but the runtime's Reset no longer restarts a timer it moves later, and
// the copy made every timer a word longer (the runtime's Timer is two
// cache lines only without it).
func (q queue) fix(t *Timer) bool {
	if e := &q[t.idx]; t.expires < e.expires {
		e.expires, e.seq = t.expires, t.seq
		q.up(int(t.idx))
		return t.idx == 0
	}
	return q.first() == t
}

// first returns the leftmost timer, after putting right a stale key at the
// top (see queue).
func (q queue) first() *Timer {
	if len(q) == 0 {
		return nil
	}
	for {
		e := &q[0]
		if e.expires == e.t.expires && e.seq == e.t.seq {
			return e.t
		}
		e.expires, e.seq = e.t.expires, e.t.seq
		q.down(0)
	}
}

// up moves q[i] towards the root; it reports whether it moved.
func (q queue) up(i int) bool {
	e := q[i]
	moved := false
	for i > 0 {
		p := (i - 1) / 4
		if !less(&e, &q[p]) {
			break
		}
		q[i] = q[p]
		q[i].t.idx = int32(i)
		i = p
		moved = true
	}
	q[i] = e
	e.t.idx = int32(i)
	return moved
}

func (q queue) down(i int) {
	n := len(q)
	e := q[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if less(&q[j], &q[m]) {
				m = j
			}
		}
		if !less(&q[m], &e) {
			break
		}
		q[i] = q[m]
		q[i].t.idx = int32(i)
		i = m
	}
	q[i] = e
	e.t.idx = int32(i)
}
