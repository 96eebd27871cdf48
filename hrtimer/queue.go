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
type queue []*Timer

func less(a, b *Timer) bool {
	if a.expires != b.expires {
		return a.expires < b.expires
	}
	return a.seq < b.seq
}

// push adds t and reports whether it became the leftmost.
func (q *queue) push(t *Timer) bool {
	*q = append(*q, t)
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
		h[i].idx = int32(i)
	}
	h[last] = nil
	*q = h[:last]
	t.idx = -1
	if i != last {
		if !q.up(i) {
			q.down(i)
		}
	}
	return last > 0
}

func (q queue) first() *Timer {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// up moves q[i] towards the root; it reports whether it moved.
func (q queue) up(i int) bool {
	t := q[i]
	moved := false
	for i > 0 {
		p := (i - 1) / 4
		if !less(t, q[p]) {
			break
		}
		q[i] = q[p]
		q[i].idx = int32(i)
		i = p
		moved = true
	}
	q[i] = t
	t.idx = int32(i)
	return moved
}

func (q queue) down(i int) {
	n := len(q)
	t := q[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < c+4 && j < n; j++ {
			if less(q[j], q[m]) {
				m = j
			}
		}
		if !less(q[m], t) {
			break
		}
		q[i] = q[m]
		q[i].idx = int32(i)
		i = m
	}
	q[i] = t
	t.idx = int32(i)
}
