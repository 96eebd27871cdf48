package hier

import (
	"sync"
	"testing"
	"time"
)

// evenNodes spreads n CPUs over k nodes in contiguous blocks, as the
// tmigr topo command does.
func evenNodes(n, k int) []int {
	nodeOf := make([]int, n)
	for i := range nodeOf {
		nodeOf[i] = i * k / n
	}
	return nodeOf
}

// newPrepared returns a hierarchy of n CPUs on k nodes with every CPU
// prepared in ascending order.
func newPrepared(t testing.TB, n, k int, o Options) *Hierarchy {
	t.Helper()
	o.NodeOf = evenNodes(n, k)
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < n; c++ {
		if err := h.Prepare(c); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// mustCheck fails the test if the hierarchy breaks an invariant or met a
// kernel WARN condition.
func mustCheck(t testing.TB, h *Hierarchy) {
	t.Helper()
	if err := h.Check(); err != nil {
		t.Fatalf("%v\n%s", err, h.State())
	}
	if w := h.Warnings(); w != 0 {
		t.Fatalf("%d kernel WARN conditions met\n%s", w, h.State())
	}
}

// pauser stops one walk at one hook point, so a test can run another CPU's
// call in between, as the kernel comment's race scenarios do.
type pauser struct {
	point  Point
	cpu    int
	group  GroupID
	once   sync.Once
	paused chan struct{}
	resume chan struct{}
}

func newPauser(p Point, cpu int, g GroupID) *pauser {
	return &pauser{point: p, cpu: cpu, group: g, paused: make(chan struct{}), resume: make(chan struct{})}
}

func (p *pauser) hook(pt Point, cpu int, g GroupID, _ int) {
	if pt != p.point || cpu != p.cpu || g != p.group {
		return
	}
	p.once.Do(func() {
		close(p.paused)
		<-p.resume
	})
}

// install makes h call the hook (before h is used concurrently).
func (p *pauser) install(h *Hierarchy) { h.interleave = p.hook }

// run starts f on its own goroutine, waits until it pauses at the hook and
// returns a function that resumes it and waits for it to finish.
func (p *pauser) run(t *testing.T, f func()) (resume func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-p.paused:
	case <-done:
		t.Fatal("the call finished without reaching the hook point")
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not reach the hook point")
	}
	return func() {
		close(p.resume)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the paused call did not finish")
		}
	}
}

// nopExpirer runs no timers and reports none.
type nopExpirer struct{}

func (nopExpirer) ExpireRemote(handler, target int)                           {}
func (nopExpirer) LockBases(target int)                                       {}
func (nopExpirer) NextGlobalRemote(target int, basej uint64, now int64) int64 { return KtimeMax }
func (nopExpirer) UnlockBases(target int)                                     {}
