package hrtimer

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestQueueOrder checks the intrusive heap against a sorted list: after
// random pushes and removals the leftmost is the smallest (expires, seq),
// and popping everything yields the list's order, FIFO among equal expiries.
func TestQueueOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 64).Draw(rt, "n")
		timers := make([]Timer, n)
		var q queue
		var ref []*Timer
		var seq uint64
		for i := range timers {
			timers[i].idx = -1
		}
		steps := rapid.IntRange(1, 200).Draw(rt, "steps")
		for range steps {
			t := &timers[rapid.IntRange(0, n-1).Draw(rt, "timer")]
			if t.idx >= 0 && rapid.Bool().Draw(rt, "restart") {
				t.expires = int64(rapid.IntRange(0, 8).Draw(rt, "expires"))
				seq++
				t.seq = seq
				first := q.fix(t)
				slices.SortStableFunc(ref, func(a, b *Timer) int {
					if c := cmpInt(a.expires, b.expires); c != 0 {
						return c
					}
					return cmpInt(int64(a.seq), int64(b.seq))
				})
				if first != (ref[0] == t) {
					rt.Fatalf("fix reported first=%v, want %v", first, ref[0] == t)
				}
			} else if t.idx >= 0 {
				q.remove(t)
				ref = slices.DeleteFunc(ref, func(x *Timer) bool { return x == t })
				if t.idx != -1 {
					rt.Fatalf("removed timer keeps index %d", t.idx)
				}
			} else {
				t.expires = int64(rapid.IntRange(0, 8).Draw(rt, "expires")) // few values: many ties
				seq++
				t.seq = seq
				first := q.push(t)
				ref = append(ref, t)
				slices.SortStableFunc(ref, func(a, b *Timer) int { return cmpInt(a.expires, b.expires) })
				if first != (ref[0] == t) {
					rt.Fatalf("push reported first=%v, want %v", first, ref[0] == t)
				}
			}
			for i, x := range q {
				if int(x.t.idx) != i {
					rt.Fatalf("timer at %d has index %d", i, x.t.idx)
				}
				if x.expires > x.t.expires || x.expires == x.t.expires && x.seq > x.t.seq {
					rt.Fatalf("entry %d keyed (%d,%d), above its timer's (%d,%d)", i, x.expires, x.seq, x.t.expires, x.t.seq)
				}
				if p := (i - 1) / 4; i > 0 && less(&x, &q[p]) {
					rt.Fatalf("entry %d below its parent %d", i, p)
				}
			}
			if len(ref) > 0 && q.first() != ref[0] {
				rt.Fatalf("leftmost (%d,%d), want (%d,%d)", q.first().expires, q.first().seq, ref[0].expires, ref[0].seq)
			}
		}
		for _, want := range ref {
			got := q.first()
			if got != want {
				rt.Fatalf("pop (%d,%d), want (%d,%d)", got.expires, got.seq, want.expires, want.seq)
			}
			q.remove(got)
		}
		if len(q) != 0 {
			rt.Fatalf("%d timers left", len(q))
		}
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
