package hier

import "testing"

// fourCPUs is the machine of the kernel comment's race walk-throughs:
// GRP0:0 = {CPU0, CPU1}, GRP0:1 = {CPU2, CPU3}, both below GRP1:0.
func fourCPUs(t *testing.T) *Hierarchy {
	t.Helper()
	h := newPrepared(t, 4, 2, Options{})
	for c := 0; c < 4; c++ {
		if err := h.SetAvailable(c, false); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

var (
	grp00 = GroupID{0, 0}
	grp01 = GroupID{0, 1}
	grp10 = GroupID{1, 0}
)

func groupByID(t *testing.T, h *Hierarchy, id GroupID) GroupInfo {
	t.Helper()
	for _, g := range h.Groups() {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("no group %v", id)
	return GroupInfo{}
}

// TestRaceSequenceCounter replays "Protection of the tmigr group state
// information" (R1): CPU0's deactivation is stopped before its CAS on
// GRP1:0; CPU1 wakes and propagates through GRP1:0 first, leaving active
// and migrator unchanged but bumping seq; CPU0's CAS must then fail and,
// re-reading GRP0:0's state, leave GRP0:0 active in GRP1:0.
//
// It fails if active_up stops incrementing seq or if inactive_up stops
// re-reading the child state on a retry (both checked by breaking them).
func TestRaceSequenceCounter(t *testing.T) {
	h := fourCPUs(t)
	// The comment's starting point: CPU0 and CPU2 active, GRP1:0's
	// migrator GRP0:1.
	h.Deactivate(1, KtimeMax)
	h.Deactivate(3, KtimeMax)
	h.Deactivate(0, KtimeMax)
	h.Activate(0)
	mustCheck(t, h)
	g := groupByID(t, h, grp10)
	if g.Active != 0x3 || g.Migrator != 0x2 {
		t.Fatalf("start: GRP1:0 active=%#x migrator=%#x, want 0x3 0x2", g.Active, g.Migrator)
	}
	seq := g.Seq

	p := newPauser(PointInactiveCAS, 0, grp10)
	p.install(h)
	resume := p.run(t, func() { h.Deactivate(0, KtimeMax) })

	// CPU0 stopped before its CAS: GRP0:0 is idle, GRP1:0 untouched.
	if g := groupByID(t, h, grp00); g.Active != 0 || g.Migrator != MigratorNone {
		t.Fatalf("step 1: GRP0:0 active=%#x migrator=%#x, want idle", g.Active, g.Migrator)
	}
	h.Activate(1)
	g = groupByID(t, h, grp10)
	if g.Active != 0x3 || g.Migrator != 0x2 || g.Seq != seq+1 {
		t.Errorf("step 2: GRP1:0 active=%#x migrator=%#x seq=%d, want 0x3 0x2 %d", g.Active, g.Migrator, g.Seq, seq+1)
	}
	resume()

	g = groupByID(t, h, grp10)
	if g.Active&0x1 == 0 {
		t.Fatalf("GRP1:0 active=%#x lost GRP0:0 although CPU1 is active", g.Active)
	}
	mustCheck(t, h)
}

// TestRaceNewTimerVsLastIdle replays "Prevent race between new event and
// last CPU going inactive" (R3), in the order that exposes it: idle CPU0
// propagates a new timer and is stopped just before taking GRP1:0's lock;
// CPU2, the last active CPU, goes idle completely (and finds nothing to
// hand back); then CPU0 goes on. Reading GRP1:0's state under the lock,
// CPU0 must see the idle top and get its timer back, so someone wakes for
// it.
//
// It fails if update_events reads the group state before taking the lock
// (checked by moving the read).
func TestRaceNewTimerVsLastIdle(t *testing.T) {
	h := fourCPUs(t)
	for _, c := range []int{0, 1, 3} {
		h.Deactivate(c, KtimeMax)
	}
	mustCheck(t, h)

	const timer0 = 1000
	p := newPauser(PointUpdateLock, 0, grp10)
	p.install(h)
	var got0 int64
	resume := p.run(t, func() { got0 = h.NewTimer(0, timer0) })
	got2 := h.Deactivate(2, KtimeMax)
	resume()

	if got2 != KtimeMax {
		t.Errorf("CPU2 (last to idle, took the lock first) got %d, want max", got2)
	}
	if got0 != timer0 {
		t.Errorf("CPU0's new timer at %d: NewTimer returned %s; nobody would wake for it", int64(timer0), fmtTime(got0))
	}
	mustCheck(t, h)
}

// TestRaceLastIdleVsNewTimer is the other order of R3: CPU2 is stopped
// after its CAS made GRP1:0 idle, before GRP1:0's lock; CPU0's new timer
// runs through and must get the timer (GRP1:0 is idle); then CPU2 finds
// the event queued and gets it too.
func TestRaceLastIdleVsNewTimer(t *testing.T) {
	h := fourCPUs(t)
	for _, c := range []int{0, 1, 3} {
		h.Deactivate(c, KtimeMax)
	}
	const timer0 = 1000
	p := newPauser(PointUpdateLock, 2, grp10)
	p.install(h)
	var got2 int64
	resume := p.run(t, func() { got2 = h.Deactivate(2, KtimeMax) })
	got0 := h.NewTimer(0, timer0)
	resume()
	if got0 != timer0 || got2 != timer0 {
		t.Errorf("NewTimer returned %s and Deactivate %s, want both %d", fmtTime(got0), fmtTime(got2), int64(timer0))
	}
	mustCheck(t, h)
}

// TestRaceRemoteExclusive: while CPU2 expires CPU0's timers (remote set),
// CPU0's NewTimer walks nothing and returns max, and CPU2's walk afterwards
// publishes CPU0's new first timer (R5).
func TestRaceRemoteExclusive(t *testing.T) {
	h := fourCPUs(t)
	h.Deactivate(1, KtimeMax)
	h.Deactivate(3, KtimeMax)
	if got := h.Deactivate(0, 500); got != KtimeMax {
		t.Fatalf("Deactivate = %s", fmtTime(got))
	}
	x := &oneTimer{next: 900}
	done := make(chan struct{})
	h.interleave = func(p Point, cpu int, g GroupID, target int) {
		if p == PointRemoteExpire && cpu == 2 && target == 0 {
			if got := h.NewTimer(0, 900); got != KtimeMax {
				t.Errorf("NewTimer during a remote expiry = %s, want max", fmtTime(got))
			}
			close(done)
		}
	}
	h.HandleRemote(2, 500, 0, x)
	<-done
	if ci := h.CPU(0); !ci.EvtQueued || ci.EvtExpires != 900 || ci.EvtIgnore {
		t.Errorf("CPU0's event after the remote walk: %+v, want queued at 900", ci)
	}
	mustCheck(t, h)
}

// oneTimer is an Expirer whose targets all report the same next timer.
type oneTimer struct{ next int64 }

func (o *oneTimer) ExpireRemote(handler, target int)                           {}
func (o *oneTimer) LockBases(target int)                                       {}
func (o *oneTimer) NextGlobalRemote(target int, basej uint64, now int64) int64 { return o.next }
func (o *oneTimer) UnlockBases(target int)                                     {}
