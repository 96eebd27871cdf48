package wheel

import (
	"math/rand/v2"
	"testing"
)

// denseBase returns a base holding n timers expiring within the next
// span ticks (over the first levels).
func denseBase(n int, span uint64) *Base {
	b := new(Base)
	b.Init(9, 1000)
	timers := make([]Timer, n)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range timers {
		b.Add(&timers[i], b.Clk()+1+r.Uint64N(span))
	}
	return b
}

// TestTouch checks that Touch changes nothing, allocates nothing and
// names the head of every bucket the next Collect at the same jiffies
// moves, in Collect's order (level 0 first); TouchHead neither.
func TestTouch(t *testing.T) {
	b := denseBase(4096, 50000)
	var out [MaxDepth]*Timer
	j0 := b.Clk()
	rounds, touched := 0, 0
	for j := j0; j < j0+60000; j++ {
		for {
			before := *b
			_ = b.TouchHead()
			n, _ := b.Touch(j, out[:])
			if *b != before {
				t.Fatalf("jiffies %d: Touch changed the base", j)
			}
			if !b.Collect(j) {
				if n != 0 {
					t.Fatalf("jiffies %d: Touch named %d timers of a base not due", j, n)
				}
				break
			}
			rounds++
			if n != b.nExpiring {
				t.Fatalf("jiffies %d: Touch named %d timers, Collect moved %d buckets", j, n, b.nExpiring)
			}
			for i := range n {
				if out[i] != b.expiring[i] {
					t.Fatalf("jiffies %d: Touch's timer %d is not the head of Collect's bucket %d", j, i, i)
				}
			}
			touched += n
			for tm := b.NextExpired(); tm != nil; tm = b.NextExpired() {
			}
		}
	}
	if rounds < 100 || touched < 100 {
		t.Fatalf("only %d rounds and %d buckets checked", rounds, touched)
	}
	// Two buckets at one clock value (level 1's and level 0's), and fewer
	// slots than buckets: as many as fit.
	b = new(Base)
	b.Init(9, 1000)
	var x, y Timer
	_, e, _ := b.Add(&x, 1100)
	b.Forward(e - 10)
	b.Add(&y, e-1) // level 0 rounds up too: its bucket expires at e
	if n, _ := b.Touch(e, out[:]); n != 2 || out[0] != &y || out[1] != &x {
		t.Fatalf("Touch at %d named %d timers, want the level 0 and level 1 heads", e, n)
	}
	if n, _ := b.Touch(e, out[:1]); n != 1 || out[0] != &y {
		t.Fatalf("Touch with one slot named %d timers, want the first", n)
	}
	if n, _ := b.Touch(e-1, out[:]); n != 0 {
		t.Fatalf("Touch before the expiry named %d timers", n)
	}
	b = denseBase(4096, 50000)
	j := b.Clk() + 500
	if a := testing.AllocsPerRun(100, func() {
		_ = b.TouchHead()
		_, _ = b.Touch(j, out[:])
	}); a != 0 {
		t.Errorf("Touch: %v allocations per run, want 0", a)
	}
}
