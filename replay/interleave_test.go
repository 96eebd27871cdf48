package replay

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateReadsLaterCAS replays a window of a 7.3 recording (4 CPUs,
// isolcpus=2-3) where a deactivation's tmigr_update_events read the state
// another CPU's later compare-and-swap left: at line 29 CPU 1's walk left
// the group active (CPU 0 its migrator), but CPU 0's deactivation, printed
// after it, came in between and CPU 1's update found the group idle, so
// CPU 1 was handed CPU 0's event (4592000000); at line 202 the same with
// CPU 0's line printed first, so that CPU 0's operation, waiting for CPU
// 1's transition to be replayed first, runs inside CPU 1's walk. Both
// decisions match; the window's only undetermined ones are its start.
func TestUpdateReadsLaterCAS(t *testing.T) {
	c := replayWindow(t, "vm4-1node-isol-busy-sleeper-7.3-update-reads-later-cas.txt")
	want := map[string]int{whyFirst: 2, whyWakeup: 1}
	if len(c.UndeterminedReasons) != len(want) {
		t.Errorf("undetermined: %s, want 2 %s, 1 %s", c.Reasons(), whyFirst, whyWakeup)
	}
	for why, n := range want {
		if c.UndeterminedReasons[why] != n {
			t.Errorf("undetermined: %s, want 2 %s, 1 %s", c.Reasons(), whyFirst, whyWakeup)
			break
		}
	}
}

// replayWindow replays a reproducer window of testdata/traces and reports
// its mismatches as errors.
func replayWindow(t *testing.T, f string) *Counts {
	t.Helper()
	tr, err := ReadFile(filepath.Join("../testdata/traces", f))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Tmigr: true})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Tmigr
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	return c
}

// TestRoundBeforeClaim replays a window of the same kind of 7.3 recording
// where CPU 1's round printed its tmigr_handle_remote (line 40) before CPU
// 0's own round (line 41), yet all of CPU 0's round came before CPU 1
// claimed CPU 0 (line 42): CPU 0's round read its wakeup, 5016000000 (line
// 34), as not KTIME_MAX, so it entered its group, and reset it to
// KTIME_MAX, which the claim printed. Replayed after the claim, as the
// window of the expiry used to take it, CPU 0's round finds its wakeup
// reset by the claim and stops at once.
func TestRoundBeforeClaim(t *testing.T) {
	c := replayWindow(t, "vm4-1node-isol-busy-sleeper-7.3-round-before-claim.txt")
	if c.Matched != 34 || c.Checked != 37 {
		t.Errorf("tmigr %d/%d matched (%s), want 34/37", c.Matched, c.Checked, c.Reasons())
	}
}

// TestUpdateLockOrder replays a window of the same kind of 7.3 recording
// where CPU 1's compare-and-swap (line 34) fell between CPU 0's (line 33)
// and CPU 0's event update (line 35, which read the group idle), but CPU
// 0's update took the group's lock first: it queued CPU 0's new event,
// 5108000000, and CPU 1's update (line 37), finding the group idle, handed
// CPU 1 that event (line 38). Replayed whole inside CPU 0's walk, CPU 1's
// deactivation read the queue without it (122060000000); split, it waits
// after its compare-and-swap for CPU 0's walk to end.
func TestUpdateLockOrder(t *testing.T) {
	c := replayWindow(t, "vm4-1node-isol-busy-sleeper-7.3-update-lock-order.txt")
	if c.Matched != 23 || c.Checked != 25 {
		t.Errorf("tmigr %d/%d matched (%s), want 23/25", c.Matched, c.Checked, c.Reasons())
	}
}

// TestRoundBesideUnprintedWalk replays a window of this project's 2-CPU
// 6.18 host, idle: CPU 0 claimed CPU 1 (line 131) and, its timers run,
// walked CPU 1's next expiry (123584000000) up to the idle top, which
// prints nothing; CPU 1's own round (line 133) read the group's queue
// after that walk: its wakeup, printed by tmigr_cpu_active (line 136), is
// CPU 1's new event, where a read before the walk gives CPU 0's
// (124064000000). The trace does not show which came first: the decision
// is undetermined, with the model following the kernel's order; before,
// the replay took CPU 1's round for one inside the expiry's window, read
// before the walk, and reported a mismatch.
func TestRoundBesideUnprintedWalk(t *testing.T) {
	c := replayWindow(t, "kvm2-6.18-round-beside-unprinted-walk.txt")
	if c.UndeterminedReasons[whyOrder] != 1 || c.Matched != 65 || c.Checked != 77 {
		t.Errorf("tmigr %d/%d matched (%s), want 65/77 with 1 %s", c.Matched, c.Checked, c.Reasons(), whyOrder)
	}
}

// TestActivationFindsBitSet replays a window of a fresh 6.19 PREEMPT_RT
// recording (11 CPUs, one node) where CPU 9's compare-and-swap left its
// level-0 group idle (line 115), CPU 8 then activated that group (line
// 116) and climbed to the top, whose bit for the group CPU 9 had not
// cleared yet: tmigr_active_up or-ed it in (line 118, active=3 before and
// after), and CPU 9's walk, reading the group active again, left it (line
// 119).
// The replay inverted an activation as if its bit had been clear before
// (active=1), found no operation leading there and reported the
// transitions as model-less.
func TestActivationFindsBitSet(t *testing.T) {
	c := replayWindow(t, "vm11-1node-rt-6.19-activation-finds-bit-set.txt")
	if c.Matched != 99 || c.Checked != 106 {
		t.Errorf("tmigr %d/%d matched (%s), want 99/106", c.Matched, c.Checked, c.Reasons())
	}
}

// TestInactiveSeesChildActive replays a window of a fresh 6.19 recording
// (10 CPUs, two nodes, isolcpus=2-3) where CPU 7's deactivation left its
// level-0 group idle (line 91) with no event update printed (its event
// is KTIME_MAX: tmigr_update_events returns before its lock), CPU 8
// activated the group meanwhile (lines 92-93), and CPU 7's walk, reading
// the group's state again at the top, kept its bit (line 96). With no
// update line to show the state in between, the replay ran CPU 7's walk
// whole and cleared the bit.
func TestInactiveSeesChildActive(t *testing.T) {
	c := replayWindow(t, "vm10-2node-isol-6.19-inactive-sees-child-active.txt")
	if c.Matched != 114 || c.Checked != 124 {
		t.Errorf("tmigr %d/%d matched (%s), want 114/124", c.Matched, c.Checked, c.Reasons())
	}
}

// TestRoundReadsAcrossWalk replays a window of a fresh 6.19 recording (3
// CPUs, isolcpus=2 nohz_full=2) where CPU 0 claimed idle CPU 1 (line 539)
// and CPU 1's own round printed entering its group (line 541) before CPU
// 0's walk printed its update of that group (line 542, under the group's
// lock), and entering the top (line 544) after it. tmigr_handle_remote_up
// prints before it takes the lock: which of the two took it first the
// trace does not show. CPU 1's wakeup, printed by its tmigr_cpu_active
// (line 545), is its new event (4400000000): read after the walk. The
// replay ran the round before the walk (KTIME_MAX) and reported a
// mismatch; now the decision is undetermined.
func TestRoundReadsAcrossWalk(t *testing.T) {
	c := replayWindow(t, "vm3-2node-isol-nohzfull-6.19-round-reads-across-walk.txt")
	if c.UndeterminedReasons[whyOrder] != 1 || c.Matched != 266 || c.Checked != 289 {
		t.Errorf("tmigr %d/%d matched (%s), want 266/289 with 1 %s", c.Matched, c.Checked, c.Reasons(), whyOrder)
	}
}

// TestActivationIgnoresBeforeItsCAS replays two windows of recordings of
// this project's 2-CPU 6.18 host where one CPU's deactivation and the
// other's activation raced in their one group. The activating CPU printed
// tmigr_cpu_active and its compare-and-swap (lines 411-412) before the
// deactivating CPU's event update (line 413), whose printed state is still
// idle: the compare-and-swap came after the update read the state. Yet the
// update's next_expiry leaves out the activating CPU's event: its ignore
// flag, set by __tmigr_cpu_activate before the walk, came before the
// update read the queue. The replay ran the activation whole after the
// update and returned the activating CPU's event as the deactivating CPU's
// wakeup (line 414).
func TestActivationIgnoresBeforeItsCAS(t *testing.T) {
	for _, f := range []string{"kvm2-6.18-update-beside-activation-ignore.txt", "kvm2-6.18-idle-walk-beside-activation-ignore.txt"} {
		t.Run(f, func(t *testing.T) {
			c := replayWindow(t, f)
			if c.Checked-c.Undetermined < 200 {
				t.Errorf("tmigr %d/%d matched (%s): the walks were not checked", c.Matched, c.Checked, c.Reasons())
			}
		})
	}
}

// TestRoundEntryAfterUnprintedCAS replays a window of a recording of this
// project's 2-CPU 6.18 host where CPU 0's round printed entering its group
// (line 379) while, as the lines stand, CPU 1 was the group's migrator and
// CPU 0's wakeup KTIME_MAX: tmigr_handle_remote would have returned. CPU
// 1's deactivation, printed 8 µs later (line 380), made CPU 0 the migrator:
// its compare-and-swap came before the round's check.
func TestRoundEntryAfterUnprintedCAS(t *testing.T) {
	c := replayWindow(t, "kvm2-6.18-round-entry-before-printed-cas.txt")
	if c.Checked-c.Undetermined < 50 {
		t.Errorf("tmigr %d/%d matched (%s): the rounds were not checked", c.Matched, c.Checked, c.Reasons())
	}
}

// TestGroupEventIgnoredBeforeParentCAS replays a window of a 5-CPU 6.12
// PREEMPT_RT guest where CPU 1's deactivation cleared the top group's last
// bit (line 1010) and CPU 3's activation printed its compare-and-swap of
// the top (line 1012) before CPU 1's event update of the top (line 1015),
// whose printed state is still idle: that compare-and-swap came after the
// update read the state. Yet the update's next_expiry, and so CPU 1's
// wakeup (line 1016), leaves out the event of CPU 3's level-0 group:
// tmigr_active_up marked it ignored right after its compare-and-swap of
// that group (line 1011), before the update read the top's queue. The
// replay ran CPU 3's activation whole after the update and returned the
// ignored event as CPU 1's wakeup.
func TestGroupEventIgnoredBeforeParentCAS(t *testing.T) {
	c := replayWindow(t, "vm5-4node-rt-6.12-group-ignore-before-parent-cas.txt")
	if c.Checked-c.Undetermined < 200 {
		t.Errorf("tmigr %d/%d matched (%s): the walks were not checked", c.Matched, c.Checked, c.Reasons())
	}
}

// TestUpdateReadsLateActivations replays a window of a 7-CPU 6.12 guest
// where CPU 0's deactivation cleared the last bit of its level-0 group
// (line 433) and its vCPU then stalled for 2.3 ms before its event update
// of the group (line 442), whose printed state shows CPUs 1 and 2 active:
// both had activated in between (lines 437-441), CPU 1 up to the top,
// whose bit for the group CPU 0's walk then kept (line 443). The chain was
// looked for only within a millisecond of CPU 0's compare-and-swap, not up
// to the line that read the state, and the replay ran CPU 0's walk whole.
func TestUpdateReadsLateActivations(t *testing.T) {
	c := replayWindow(t, "vm7-3node-6.12-update-reads-late-activations.txt")
	if c.Checked-c.Undetermined < 500 {
		t.Errorf("tmigr %d/%d matched (%s): the walks were not checked", c.Matched, c.Checked, c.Reasons())
	}
}

// TestRoundReadsWakeupBeforeClaimReset replays a window of a recording of
// this project's 2-CPU 6.18 host where CPU 0, the migrator, claimed idle
// CPU 1 (line 65: tmigr_handle_remote_cpu prints CPU 1's wakeup, set, and
// only then resets it) and CPU 1's own round printed entering its group in
// the same microsecond (line 66): it read its wakeup between the claim's
// line and the reset. The model applies the claim whole, so the round
// finds KTIME_MAX and does not enter; which came first no line prints, and
// the round is undetermined. Had the claim printed KTIME_MAX, nothing
// would explain the entry, and it stays a mismatch.
func TestRoundReadsWakeupBeforeClaimReset(t *testing.T) {
	const f = "kvm2-6.18-round-reads-wakeup-before-claim-reset.txt"
	c := replayWindow(t, f)
	if c.UndeterminedReasons[whyClaim] == 0 {
		t.Errorf("no round undetermined for a claim's reset: %s", c.Reasons())
	}
	const claim = "28852.257449: tmigr_handle_remote_cpu: cpu=1 parent=00000000cae9f75e wakeup=28852256000000"
	n := 0
	c2 := editTrace(t, f, func(lines []string) []string {
		for i, l := range lines {
			if strings.Contains(l, claim) {
				lines[i] = strings.Replace(l, "wakeup=28852256000000", "wakeup=9223372036854775807", 1)
				n = i + 1
			}
		}
		return lines
	})
	if n == 0 {
		t.Fatalf("no line %q", claim)
	}
	found := false
	for _, m := range c2.Mismatches {
		found = found || m.Line == n+1 && m.Event == "tmigr_handle_remote"
	}
	if !found {
		t.Errorf("with the claim printing KTIME_MAX: mismatches %+v, want the round's entry at line %d", c2.Mismatches, n+1)
	}
}

// TestParentUpdateAfterWalkUpdate replays a window of a 3-CPU 6.12 guest
// where CPUs 0 and 1 of one group went idle together: CPU 1's deactivation
// ran between CPU 0's compare-and-swap and CPU 0's event update of the
// group, but CPU 1's update of the parent (which reads the group's queue
// under the group's lock) was printed after CPU 0's update of the group,
// which re-queued CPU 0's event a tick later: the parent's next expiry,
// and so CPU 2's wakeup (line 1560), is that later event. The replay ran
// CPU 1's whole deactivation inside CPU 0's walk, its parent update before
// CPU 0's update.
func TestParentUpdateAfterWalkUpdate(t *testing.T) {
	c := replayWindow(t, "vm3-2node-6.12-parent-update-after-walk-update.txt")
	if c.Checked-c.Undetermined < 400 {
		t.Errorf("tmigr %d/%d matched (%s): the walks were not checked", c.Matched, c.Checked, c.Reasons())
	}
}

// TestRecordedOrders replays windows of fresh recordings where the printed
// order of the CPUs' lines is not the order their compare-and-swaps ran
// in, each of which the replay read wrong before; every one is checked
// with no mismatch and at least min decisions determined.
func TestRecordedOrders(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		min        int
	}{
		// CPUs 10 and 11 printed their deactivations of one group with
		// one timestamp, CPU 10's first, each from the same state, and
		// CPU 11 its activation after them: only CPU 11's deactivation
		// and activation, then CPU 10's deactivation, chain.
		{"tie order not printed", "vm14-1node-rt-6.19-tie-order-not-printed.txt", 80},
		// CPU 3's deactivation printed its level-0 transition (line 364),
		// then its transition of the top 4 ms later (line 386): meanwhile
		// CPU 2 went idle and busy again, printing its transitions of the
		// top (lines 368 and 373) before CPU 3's.
		{"walk stalls between levels", "vm4-3node-6.19-walk-stalls-between-levels.txt", 190},
		// CPU 2 claimed idle CPU 0 (line 851) and, while it ran CPU 0's
		// timer, CPU 0's own round (line 856) dequeued CPU 0's due event,
		// skipped it, and stored the next one's expiry, CPU 1's, which
		// CPU 0's activation printed (line 858).
		{"round skips due claimed event", "vm3-2node-7.3-round-skips-due-claimed-event.txt", 180},
		// nohz_full CPU 6's timer thread claimed CPU 5 (line 5585) and,
		// while CPU 5's timer ran, CPU 5 became active (line 8662) and an
		// interrupt's exit deactivated CPU 6 (line 8916) before the
		// callback returned (line 8921): the round found CPU 5 migrator
		// of their group and stopped there.
		{"handler idles inside callback", "vm7-2node-rt-7.2-handler-idles-inside-callback.txt", 100},
		// CPU 1's deactivation of GRP0:0 (line 1267), printed after CPU
		// 0's activation of GRP0:0 and the top (lines 1261-1262), ran its
		// compare-and-swap first: CPU 0's activation found at the top
		// GRP0:0's bit still set and GRP0:0 still the migrator.
		{"activation above stalled deactivation", "vm4-2node-7.2-activation-above-stalled-deactivation.txt", 360},
		// CPU 4's activation (line 1029), split before its
		// compare-and-swap inside CPU 1's walk, whose update (line
		// 1051, printed 930 us late) left CPU 4's event out, resumes
		// after CPU 0's activation (line 1021), which its transition
		// shows came first.
		{"split activation waits for earlier activation", "vm7-1node-rt-6.19-split-activation-waits-for-earlier-activation.txt", 145},
		// CPU 5's deactivation stalled 1.8 ms between its transition of
		// GRP0:1 (line 1005) and its update (line 1021); CPU 4's new
		// timer that did not walk (line 1007) and its activation (line
		// 1010) ran in between, and CPU 5's transition of GRP1:0 (line
		// 1022) kept GRP0:1's bit.
		{"activation after quiet new timer inside walk", "vm7-2node-isol-nohzfull-6.12-activation-after-quiet-new-timer-inside-walk.txt", 530},
		// CPU 4's round claimed CPU 5 (line 99), and while it ran CPU
		// 5's timer, CPU 5's own round claimed CPU 4 (lines 103-104),
		// then CPU 5 became active (line 113) and its round went up
		// (line 117); CPU 4's round had seen GRP0:2 without a migrator
		// and gone up first (line 112).
		{"claimed CPU's round waits for outer round", "vm6-3node-nohzfull-7.3-claimed-cpu-round-waits-for-outer-round.txt", 15},
		// CPU 0's round (line 405), replayed inside CPU 4's walk (its
		// transition at line 383, its update at line 494), reads the
		// queued expiries without taking CPU 4's lock: the replay ends.
		{"round inside walk reads queues", "vm5-1node-nohzfull-rt-7.2-round-inside-walk-reads-queues.txt", 80},
		// CPU 2's round claims CPU 0 (line 1005) before CPU 3 (line
		// 1013), whose events have one expiry: CPU 0's sat queued from
		// before the window, where its deactivation (line 985) left it.
		// The model claims them in that order, and CPU 0's activation
		// (line 1008) follows the claim.
		{"tied claims in kernel order", "vm4-4node-isol-rt-6.12-tied-claims-in-kernel-order.txt", 140},
		// CPU 3's deactivation, printed late (lines 489-491), cleared
		// GRP0:1 before CPU 1's activation (line 472) and left GRP1:0
		// after CPU 4's (line 479): it is bridged up to its first
		// compare-and-swap, its level 1 after the two activations.
		{"stalled deactivation bridged up to first level", "vm5-3node-isol-rt-6.12-stalled-deactivation-bridged-up-to-first-level.txt", 230},
		// CPU 1's round went up from GRP0:0 (lines 751-753): CPU 0's
		// deactivation (line 763), printed 55 us later by a silent CPU,
		// had left GRP0:0 without a migrator; its level 1 came after
		// CPU 4's activation (lines 756-758).
		{"round goes on after silent deactivation", "vm5-2node-isol-7.2-round-goes-on-after-silent-deactivation.txt", 115},
		// CPU 10's activation stalled 890 us between GRP0:2 (line 1013)
		// and GRP1:0 (line 1066); CPU 6's round (line 1018) claimed idle
		// CPU 4 (line 1019) before CPU 4's activation (line 1033), which
		// is not replayed before the round inside CPU 10's walk.
		{"claimed CPU activates after round", "vm11-3node-isol-7.2-claimed-cpu-activates-after-round.txt", 110},
		// CPU 0's round claimed CPU 3 (line 608) and ran its timer up to
		// line 650; meanwhile CPU 3's own round (lines 613-615), its new
		// timer, which did not walk and stored KTIME_MAX (line 616: its
		// remote flag was set), and its activation (line 625) ran.
		{"new timer during remote expiry", "vm5-3node-nohzfull-7.2-new-timer-during-remote-expiry.txt", 120},
		// CPU 1's deactivation cleared its bit (line 905) and printed
		// its update 25 us later (line 914); CPU 0's whole deactivation
		// ran in between (lines 908-910), and its wakeup is CPU 1's
		// event from before the window, queued and no longer ignored.
		{"idle reads unignored old event", "kvm2-6.18-window-idle-reads-unignored-old-event.txt", 1000},
		// CPU 2's deactivation cleared its bit (line 1166) and printed its
		// update 4 ms later (line 1192), which read the group active: CPU
		// 1 went busy (line 1171), CPU 0 too (1179), and CPU 1 idle again
		// (1188) in between.
		{"cpu busy and idle during stall", "vm3-3node-isol-rt-6.12-cpu-busy-and-idle-during-stall.txt", 290},
		// CPU 2 cleared its bit and printed the group idle (line 823):
		// CPU 3's deactivation had come first, its line printed 3.6 ms
		// later (line 827), CPU 3 silent for 35 ms before it.
		{"cas printed after silence", "vm7-4node-6.19-cas-printed-after-silence.txt", 960},
		// CPU 1's activation printed its top-level transition (line 732)
		// 550 µs after its level-0 one (line 720); CPU 3, then CPU 2,
		// left GRP0:1 in between (lines 721, 727).
		{"bridge skips op that does not fit", "vm7-4node-7.2-bridge-skips-op-that-does-not-fit.txt", 700},
		// Idle CPU 0's round (line 965) read its wakeup before CPU 1's
		// claim (line 966, 1 µs later) reset it, and entered its group.
		{"claim printed just after round", "kvm2-6.18-claim-printed-just-after-round.txt", 720},
		// CPU 0's deactivation left the top idle (line 387); CPU 1's
		// activation of their group (line 389) came before CPU 0's event
		// update of the top read the group, which printed nothing, and
		// CPU 0 went idle without the first event as its wakeup (line
		// 391).
		{"update reads child reactivated", "vm5-4node-isol-7.3-update-reads-child-reactivated.txt", 200},
		// CPU 3's deactivation printed GRP0:2 idle in its event update
		// (line 400), then its transition of the top kept GRP0:2's bit
		// (line 403): CPU 2's activation of GRP0:2 (line 401) ran after
		// the update and before the top's compare-and-swap read the
		// child.
		{"inactive reads child reactivated after update", "vm4-3node-7.0-inactive-reads-child-reactivated-after-update.txt", 95},
		// CPU 3's deactivation of GRP0:2 (line 399) and of the top
		// (line 435, with CPU 0's bit) were 1 ms apart; CPUs 2 and 0
		// activated in between (lines 403 and 409), in that order: CPU
		// 0's activation runs inside the walk, after CPU 2's, not
		// before the whole deactivation.
		{"higher level prior bridged inside walk", "vm4-3node-7.0-higher-level-prior-bridged-inside-walk.txt", 105},
		// nohz_full CPU 3's round entered GRP0:1 (line 2500); an
		// interrupt's exit inside it stopped the tick and deactivated
		// the CPU (line 2571); then the round went up (line 2576).
		{"round goes on after nested deactivation", "vm7-3node-nohzfull-rt-7.3-round-goes-on-after-nested-deactivation.txt", 265},
		// CPU 0's round ran inside idle CPU 4's self-expiry (lines
		// 1651-1654); CPU 4's new timer (line 1660) comes after CPU 4's
		// round stored its wakeup, not inside CPU 0's expiry window.
		{"expiry window skips busy round cpu", "vm7-3node-nohzfull-rt-7.3-expiry-window-skips-busy-round-cpu.txt", 190},
		// CPU 1's deactivation cleared the last bit (line 228) and CPU
		// 0's event update, printed first (line 231), read the group
		// idle: CPU 1's waited after its compare-and-swap for CPU 0's
		// walk. CPU 2 and CPU 3 went busy (lines 234, 236) before CPU 1's
		// own update (line 237) read the group, active, and CPU 1 went
		// idle with no wakeup (line 238).
		// tmigr record's trace_pipe handed out CPU 0's hrtimer events
		// (lines 69-70) after a later line of CPU 1 (line 68): the reader
		// sorts from there on, and in the one microsecond .818582 it
		// keeps the order the lines came in, CPU 1's activation (line
		// 7983) before CPU 0's event update (line 7986), which left CPU
		// 1's ignored event out of the top's first event (line 7988).
		{"pipe late event keeps tie order", "kvm2-6.18-pipe-late-event-keeps-tie-order.txt", 1500},
		// The trace clock stood still at .083648: idle CPU 0's round
		// (line 200), its activation (line 201, wakeup 4260000000) and
		// CPU 2's deactivation (line 203) share a stamp, printed lowest
		// CPU first. The wakeup the round wrote says it entered the
		// group: CPU 2 had left it without a migrator first.
		{"round entry shown by wakeup", "vm4-1node-7.0-round-entry-shown-by-wakeup.txt", 175},
		// CPUs 1 and 2, alone in their groups, had events of one expiry,
		// 3608000000, queued before the recording (their new timers,
		// lines 18 and 34, walk nothing): CPU 0's round (line 1074)
		// expired CPU 1 first, in the order of GRP1:0's queue, which the
		// recording does not hold.
		{"equal expiry queued before recording", "vm5-4node-nohzfull-6.12-equal-expiry-queued-before-recording.txt", 1230},
		// CPU 0 expired CPU 1's timers (line 79) and printed no walk:
		// CPU 1 woke meanwhile (line 82). Its expiry ended before CPU 1's
		// own round claimed CPU 1 (line 175), which it could do only
		// with CPU 1's remote flag clear.
		{"remote expiry ends while target awake", "vm4-2node-isol-6.19-remote-expiry-ends-while-target-awake.txt", 110},
		// Idle CPU 0's round (line 309) did not enter its group, CPU 1
		// being its migrator, and so left CPU 0's wakeup KTIME_MAX at its
		// end; CPU 1's claim of CPU 0 (line 311, 8 us later) printed the
		// wakeup from before: it read it first.
		{"claim reads wakeup before round write", "vm2-2node-7.3-claim-reads-wakeup-before-round-write.txt", 60},
		// CPU 0 claimed CPU 2 (line 833) and detached its timer (line
		// 835); an interrupt (lines 836-838) came before the callback.
		// CPU 2's own round (line 840) read its group before CPU 0's
		// walk (line 842), as its activation's wakeup shows (line 847):
		// the interrupt did not end the expiry.
		{"interrupt inside remote expiry", "vm5-4node-nohzfull-7.2-interrupt-inside-remote-expiry.txt", 100},
		{"resumed update reads later activations", "vm4-1node-7.3-resumed-update-reads-later-activations.txt", 340},
		// CPUs 1 and 2 had events of one expiry, 3816000000, CPU 2's
		// queued before the recording (its new timer, line 15, walks
		// nothing), CPU 1's after (line 25). CPU 0's round claimed CPU 1
		// first (line 713) and queued its next event, 12744000000 (line
		// 717); CPU 1's new timer of that expiry (line 724), printed
		// while CPU 0 expired CPU 2, walked nothing. The model's queue
		// has CPU 2 first: CPU 1's operation waits for its claim.
		{"operations after tied claim wait", "vm4-4node-isol-nohzfull-rt-7.3-ops-after-tied-claim-wait.txt", 125},
		// The recording's first line is CPU 3's deactivation of GRP0:2
		// (line 15), the top's state unknown; CPU 2's activation of the
		// top (line 19) came before CPU 3's deactivation of it (line 20,
		// which read CPU 2's bit): it runs inside the walk, and the top
		// is not resynchronised to the state it gives beforehand.
		{"caught-up walk gives unknown prior", "vm4-3node-7.0-caught-up-walk-gives-unknown-prior.txt", 210},
		// CPU 0's and CPU 1's deactivations printed their updates of
		// the group with one timestamp (lines 359 and 361), CPU 0's
		// first: the merge's order. CPU 1's printed no first expiry
		// (KTIME_MAX) although CPU 0's queued 4988000000: CPU 1's update
		// held the lock first, and CPU 1 went idle with no wakeup.
		{"tied updates in lock order", "vm2-1node-isol-6.12-tied-updates-in-lock-order.txt", 90},
		// The window's first transition of GRP0:0 is CPU 0's activation
		// (line 17, active=73); CPU 3's deactivation, printed 2 us later
		// (line 18, active=72), came first: the group started at 7a.
		{"first transition after earlier cas", "vm7-1node-6.12-first-transition-after-earlier-cas.txt", 850},
		// The window begins inside CPU 3's deactivation: its update of
		// GRP0:1 (line 15) and its transition of the top (line 16) are
		// the rest of a walk whose start is missing.
		{"walk cut at start", "vm6-3node-rt-7.2-walk-cut-at-start.txt", 95},
		// Busy CPU 0, alone in GRP0:0, prints nothing in the window;
		// the top's states show GRP0:0's bit (line 40, active=9): CPU 0
		// is in the hierarchy, and the replay starts from that.
		{"busy cpu in by group bit", "vm5-4node-6.19-busy-cpu-in-by-group-bit.txt", 280},
		// The same with GRP0:1 of CPUs 1-3, 2-3 isolated and so out of
		// the hierarchy from 6.19: busy CPU 1 is the only one that can
		// be in below GRP0:1's bit.
		{"busy cpu in by group bit, isolated siblings", "vm5-3node-isol-6.19-busy-cpu-in-by-group-bit.txt", 55},
		// nohz_full CPU 1's timer thread ran its round (line 1038) and,
		// inside it, an interrupt's exit re-evaluated its stopped tick
		// (tmigr_cpu_new_timer_idle, line 1044); the round went on a
		// level up after it (line 1052).
		{"new timer inside round", "vm7-3node-isol-nohzfull-rt-7.2-new-timer-inside-round.txt", 105},
		// CPU 0's update (line 377) read CPU 4 active: CPU 4's activation
		// (line 371) ran inside CPU 0's walk, after CPU 5's round (line
		// 369) claimed CPU 4 (line 370) under CPU 4's lock.
		{"claim before activation inside walk", "vm8-1node-7.2-claim-before-activation-inside-walk.txt", 260},
		// CPU 1's deactivation, split after its compare-and-swap of
		// GRP0:0 (line 1009) until CPU 0's walk ended (line 1008),
		// resumes with CPU 0 free: CPU 0's activation (line 1016) runs
		// before CPU 1's update (line 1019), and CPU 1's walk keeps
		// GRP0:0's bit in GRP1:0 (line 1020).
		{"split resumes after walk ended", "vm6-4node-isol-7.2-split-resumes-after-walk-ended.txt", 440},
		// CPU 1's update (line 20) read CPU 0's event, un-ignored with
		// its expiry from before the window, while CPU 0's split
		// deactivation waited for its own update (line 21): CPU 1's
		// wakeup (line 22) is undetermined, not a mismatch.
		{"split reads old event", "vm2-1node-isol-6.12-split-reads-old-event.txt", 1800},
		// CPU 1's printed new-timer walk (line 725) ends CPU 0's remote
		// expiry of it (line 713), which ended while CPU 1 was awake
		// (after line 718): the model's handler does not walk for it.
		{"new timer walk ends remote expiry", "vm2-2node-nohzfull-7.2-new-timer-walk-ends-remote-expiry.txt", 500},
		// CPU 4's deactivation cleared its bit in GRP0:3 (line 636) and
		// stalled 274 us; meanwhile CPUs 3, 1, 2 and 0 went idle. CPU 0's
		// transition of the top (line 668, active=8) and CPU 4's (line
		// 670, 2 us later, active=0) are within skewNS: the states say
		// CPU 0's came first.
		{"walk stall catches up within skew", "vm5-4node-7.3-walk-stall-catches-up-within-skew.txt", 225},
		// nohz_full CPU 4's round printed GRP0:1 (line 1427), idle with
		// no migrator (line 1400), and stopped there: its check of the
		// group came after CPU 7's activation made CPU 7 its migrator
		// (line 1461), printed 2.5 ms later; CPU 4 printed nothing in
		// between. Its wakeup stays KTIME_MAX (line 1505).
		{"round stops after late activation", "vm8-2node-nohzfull-rt-7.2-round-stops-after-late-activation.txt", 285},
		// CPU 0's activation (line 679) and CPU 1's round (line 680)
		// share a stamp. CPU 1's wakeup was KTIME_MAX (the claim at line
		// 667 reset it): only before CPU 0's compare-and-swap could the
		// round enter. Its check of the group came after it, and CPU 1
		// woke with no wakeup (line 683) into a group CPU 0 held (line
		// 684).
		// CPUs 5, 4, 0 and 3 cleared their bits in the top in that order
		// (lines 1337-1349). CPU 4's update (line 1356) read it idle:
		// CPU 0's and CPU 3's compare-and-swaps both came first; CPU
		// 0's update, printed after CPU 4's (line 1358), waited for it,
		// and CPU 3's (line 1352) did not. CPU 4 went idle with the
		// top's first event as its wakeup (line 1357).
		{"update reads two later compare-and-swaps", "vm6-4node-isol-rt-6.12-update-reads-two-later-cas.txt", 95},
		// CPU 2 cleared its bit in GRP0:1 (line 163, active=1) before
		// CPU 1 did (line 154, active=0), but printed it after CPU 1's
		// and CPU 4's whole walks; CPU 4's transition of the top (line
		// 160, active=1) read CPU 1's (line 156), which needs CPU 2's
		// first.
		{"cas printed after two walks", "vm5-4node-nohzfull-6.12-cas-printed-after-two-walks.txt", 105},
		// CPU 0's round printed GRP1:0 (line 145) 4 us before CPU 5's
		// update of it (line 147), which queued GRP0:2's event, CPU 6's,
		// and claimed CPU 6 (line 149): the update held the group's
		// lock first, the round read the queue after it.
		{"round reads after walk update", "vm7-3node-isol-nohzfull-7.2-round-reads-after-walk-update.txt", 150},
		// Busy CPU 0 claimed CPU 3 (line 25) and ran its process_timeout
		// for 31 ms (lines 27-135); CPU 3 woke inside it (line 121) and
		// went idle again (line 141) before CPU 0's next line (162). CPU
		// 0 printed no walk for CPU 3: the expiry ended while CPU 3 was
		// awake, before line 141, and CPU 3's new timers (lines 159, 163)
		// walk nothing.
		{"expiry ends before target idles", "vm4-1node-nohzfull-7.0-expiry-ends-before-target-idles.txt", 90},
		// CPU 0's round printed GRP0:0 (line 185) and then GRP1:0 (line
		// 190); in between, CPU 4's whole deactivation (lines 186-189)
		// queued GRP0:1's event, CPU 3's, in GRP1:0 (line 188), and the
		// round claimed CPU 3 (line 191).
		{"round reads after walk between levels", "vm5-2node-7.2-round-reads-after-walk-between-levels.txt", 160},
		// CPU 3's transition of GRP1:0 (line 1080, active=1) cleared
		// GRP0:1's bit: it read GRP0:1 idle, before CPU 1's activation
		// of it (line 1075), printed 41 us earlier, and CPU 1's
		// transition of GRP1:0 (line 1076, active=3) came after it.
		{"cas printed after child activation", "vm6-2node-nohzfull-rt-7.0-cas-printed-after-child-activation.txt", 190},
		{"round entered before tied activation", "vm2-2node-7.3-round-entered-before-tied-activation.txt", 380},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := replayWindow(t, tc.file)
			if c.Checked-c.Undetermined < tc.min {
				t.Errorf("tmigr %d/%d matched (%s): the walks were not checked", c.Matched, c.Checked, c.Reasons())
			}
		})
	}
}

// TestIgnoreWrittenLate: CPU 1's activation of GRP0:1 (line 1048) set
// that group's event in the top ignored without the top's lock; CPU 0's
// deactivation, which found the top idle 20 us later (lines 1049-1051),
// still read the event first and went idle with its expiry, 7344000000,
// the expiry GRP0:1's last update of the top had queued (line 1032).
// Undetermined: the model's write is seen at once. A wakeup that no
// queued expiry explains stays a mismatch.
func TestIgnoreWrittenLate(t *testing.T) {
	const file = "vm5-2node-isol-7.3-ignore-written-late.txt"
	c := replayWindow(t, file)
	if c.UndeterminedReasons[whyIgnoreLate] == 0 {
		t.Errorf("no decision undetermined for %q (%s)", whyIgnoreLate, c.Reasons())
	}
	lines, at := recordingAt(t, file, "7.345677: tmigr_cpu_idle: cpu=0 ")
	lines[at] = strings.Replace(lines[at], "wakeup=7344000000", "wakeup=7348000000", 1)
	if ms := tmigrOfLines(t, lines).Mismatches; len(ms) != 1 || ms[0].Line != at+1 {
		t.Errorf("with wakeup 7348000000: mismatches %+v, want one at line %d", ms, at+1)
	}
}

// TestSilentBusyGroupAtStart: a window (of the 7.2 PREEMPT_RT window
// vm6-3node-rt-7.2-walk-cut-at-start.txt, from its event 963 on) that
// begins with GRP0:0's CPUs 0 and 1 busy and silent: only the top's
// printed states show GRP0:0 active, and which of its CPUs is not told.
// The replay starts GRP0:0 with its lowest CPU active and in the
// hierarchy; it stopped with "seeding GRP0:0 gave active=0 ..." when
// neither CPU was counted in.
func TestSilentBusyGroupAtStart(t *testing.T) {
	tr, err := ReadFile(filepath.Join("testdata", "window-silent-busy-group.txt"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Tmigr: true})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if c := res.Tmigr; len(c.Mismatches) > 0 || c.Matched < 40 {
		t.Errorf("tmigr %d/%d matched (%s), mismatches %+v", c.Matched, c.Checked, c.Reasons(), c.Mismatches)
	}
}

// TestCASPrintedAfterEnd: the window's last transition (line 3013, CPU 1
// going idle) prints GRP0:0 without CPU 2's bit, which CPU 2's last line
// (line 3010) had set: CPU 2 went idle before CPU 1's compare-and-swap and
// prints its transition after the recording's end. That is undetermined
// (an operation cut by the recording); with a line of CPU 2 after it, CPU
// 2's operation would have shown, and it is a mismatch.
func TestCASPrintedAfterEnd(t *testing.T) {
	const file = "vm3-1node-isol-6.12-cas-printed-after-end.txt"
	c := replayWindow(t, file)
	if c.UndeterminedReasons[whyPartial] == 0 {
		t.Errorf("no decision undetermined for %q (%s)", whyPartial, c.Reasons())
	}
	lines, _ := recordingAt(t, file, "5.368982: tmigr_cpu_idle: cpu=1")
	_, h := recordingAt(t, file, "# entries-in-buffer/")
	lines[h] = strings.ReplaceAll(lines[h], "3001", "3002")
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	lines = append(lines, "     kworker/2:1-40      [002] .....     5.369500: timer_init: timer=00000000deadbeef", "")
	if c := tmigrOfLines(t, lines); len(c.Mismatches) == 0 {
		t.Errorf("with a line of CPU 2 after it: no mismatch (%s)", c.Reasons())
	}
}

// TestDeactivationCutAfterCAS ends the same recording at CPU 0's
// tmigr_cpu_idle (4.609017, wakeup 5060000000): CPU 0's deactivation of
// GRP0:0 (active=4) and CPU 2's (active=0) came before it, and CPU 0's
// update read the group idle (group_active=0), but CPU 2's update and
// tmigr_cpu_idle fall after the end. CPU 2's deactivation, cut there, is
// replayed as one: its compare-and-swap comes between CPU 0's and its
// update, and CPU 0's wakeup is the group's first event; what CPU 2's own
// event was is unknown. Without CPU 2's transition, nothing explains the
// idle group CPU 0 read: a mismatch.
func TestDeactivationCutAfterCAS(t *testing.T) {
	const file = "vm3-1node-isol-6.12-cas-printed-after-end.txt"
	lines, end := recordingAt(t, file, "4.609017: tmigr_cpu_idle: cpu=0")
	recount(lines, end+2-len(lines)) // the lines after end go (the last is the empty one after the final newline)
	lines = append(lines[:end+1:end+1], "")
	c := tmigrOfLines(t, lines)
	for _, m := range c.Mismatches {
		t.Errorf("line %d: %s: kernel %s, model %s", m.Line, m.Event, m.Kernel, m.Model)
	}
	if c.UndeterminedReasons[whyPartial] == 0 || c.Matched < 1100 {
		t.Errorf("%d matched (%s)", c.Matched, c.Reasons())
	}
	_, cut := recordingAt(t, file, "4.609009: tmigr_group_set_cpu_inactive:")
	lines = append(lines[:cut:cut], lines[cut+1:]...)
	recount(lines, -1)
	if c := tmigrOfLines(t, lines); len(c.Mismatches) == 0 {
		t.Errorf("without CPU 2's transition: no mismatch (%s)", c.Reasons())
	}
}

// TestTieAtRecordingStart: a window of a 2-CPU 6.18 recording that begins
// between two lines of one time (11563.389349): it shows CPU 1's
// deactivation of GRP0:0 (line 14), not CPU 0's activation printed before
// it, whose compare-and-swap came after. CPU 1's activation (line 24),
// which found CPU 0 active, is undetermined; with a line of CPU 0 at an
// earlier time first, the window no longer begins at that time, and line
// 24 is a mismatch.
func TestTieAtRecordingStart(t *testing.T) {
	const file = "kvm2-6.18-window-begins-inside-tie.txt"
	c := replayWindow(t, file)
	if c.UndeterminedReasons[whyBefore] == 0 || c.Matched < 3000 {
		t.Errorf("%d matched (%s)", c.Matched, c.Reasons())
	}
	lines, at := recordingAt(t, file, "11563.389349: tmigr_group_set_cpu_inactive:")
	lines = insertBefore(lines, at, "          <idle>-0       [000] d..1. 11563.389300: timer_base_idle: is_idle=1 cpu=0")
	if c := tmigrOfLines(t, lines); len(c.Mismatches) == 0 {
		t.Errorf("with an earlier line first: no mismatch (%s)", c.Reasons())
	}
}

// TestSilentCASFirstAtRecordingStart replays a window that begins with
// the three CPUs of GRP0:0 going idle: CPU 0's transition (active=2), CPU
// 1's (active=0), then CPU 2's (active=3 from 7), stamped 66 us after CPU
// 0's by a CPU silent since before it. CPU 2's compare-and-swap came
// first, and the group started from the state it read. With a line of
// CPU 2 between CPU 0's transition and its own, its compare-and-swap came
// after CPU 0's: no order explains its transition, a mismatch.
func TestSilentCASFirstAtRecordingStart(t *testing.T) {
	const file = "vm3-3node-6.12-window-starts-after-silent-cas.txt"
	c := replayWindow(t, file)
	if c.Matched < 300 {
		t.Errorf("%d matched (%s)", c.Matched, c.Reasons())
	}
	lines, at := recordingAt(t, file, "4.278955: tmigr_group_set_cpu_inactive:")
	lines = insertBefore(lines, at, "          <idle>-0       [002] d..1.     4.278940: hrtimer_cancel: hrtimer=00000000fb1fdf7a")
	if c := tmigrOfLines(t, lines); len(c.Mismatches) == 0 {
		t.Errorf("with a line of CPU 2 in between: no mismatch (%s)", c.Reasons())
	}
}

// tmigrOfLines runs the tmigr check over a recording given as its lines.
func tmigrOfLines(t *testing.T, lines []string) *Counts {
	t.Helper()
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(tr, Options{Tmigr: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tmigr
}
