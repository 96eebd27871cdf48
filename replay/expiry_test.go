package replay

import (
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// TestRemoteExpiry walks the ends of a remote expiry one by one: each
// case is CPU 1 (the handler, task pid) expiring CPU 0's timers, then one
// line, then a timer_expire_entry on CPU 1 whose base is asked for.
func TestRemoteExpiry(t *testing.T) {
	const handler, target, pid = 1, 0, 0
	remoteCPU := ftrace.Event{CPU: handler, PID: pid, Flags: "d.s2.", Name: "tmigr_handle_remote_cpu", Data: ftrace.TmigrHandleRemoteCPU{CPU: target}}
	line := func(name string, flags ftrace.Flags, pid int, d ftrace.Payload) ftrace.Event {
		return ftrace.Event{CPU: handler, PID: pid, Flags: flags, Name: name, Data: d}
	}
	expire := func(flags ftrace.Flags, pid int, timer uint64) ftrace.Event {
		return line("timer_expire_entry", flags, pid, ftrace.TimerExpireEntry{Timer: timer})
	}
	startFlags := func(cpu int, timer uint64, f ftrace.TimerFlags) ftrace.Event {
		return ftrace.Event{CPU: cpu, PID: 7, Flags: "d..1.", Name: "timer_start", Data: ftrace.TimerStart{Timer: timer, CPU: cpu, Flags: f}}
	}
	start := func(cpu int, timer uint64) ftrace.Event { return startFlags(cpu, timer, 0) }
	for _, tc := range []struct {
		name   string
		before []ftrace.Event // before the round
		then   []ftrace.Event // between the round's line and the expiry
		expiry ftrace.Event
		after  []ftrace.Event // later lines
		remote bool
	}{
		{name: "the target's timer in the round", expiry: expire("..s1.", pid, 0xa), remote: true},
		{name: "a timer the target queued", before: []ftrace.Event{start(target, 0xa)}, expiry: expire("..s1.", pid, 0xa), remote: true},
		{name: "an interrupt inside the round", then: []ftrace.Event{line("hrtimer_expire_entry", "d.H1.", pid, ftrace.HrtimerExpireEntry{})}, expiry: expire("..s1.", pid, 0xa), remote: true},
		{name: "another task's line (a preemption on PREEMPT_RT)", then: []ftrace.Event{line("hrtimer_start", "d..2.", 42, ftrace.HrtimerStart{})}, expiry: expire("..s1.", pid, 0xa), remote: true},
		{name: "lines without latency flags", then: []ftrace.Event{line("hrtimer_start", "", pid, ftrace.HrtimerStart{})}, expiry: expire("", pid, 0xa), remote: true},
		// 1: the walk, the next level, the CPU's own idle path.
		{name: "the walk after the expiry", then: []ftrace.Event{line("tmigr_update_events", "d.s3.", pid, ftrace.TmigrUpdateEvents{})}, expiry: expire("..s1.", pid, 0xa)},
		{name: "the next level", then: []ftrace.Event{line("tmigr_handle_remote", ".Ns1.", pid, ftrace.TmigrHandleRemote{Lvl: 1})}, expiry: expire("..s1.", pid, 0xa)},
		{name: "the handler's own idle path (the target woke: no walk)", then: []ftrace.Event{line("tmigr_cpu_new_timer_idle", "d..4.", pid, ftrace.TmigrCPUNewTimerIdle{})}, expiry: expire("..s1.", pid, 0xa)},
		// 2: out of softirq.
		{name: "the handler's task out of softirq", then: []ftrace.Event{line("hrtimer_start", "d..2.", pid, ftrace.HrtimerStart{})}, expiry: expire("..s1.", pid, 0xa)},
		{name: "the handler's tick", then: []ftrace.Event{line("hrtimer_expire_entry", "d.h1.", pid, ftrace.HrtimerExpireEntry{})}, expiry: expire("..s1.", pid, 0xa)},
		// 3: another softirq run, or a timer of another CPU.
		{name: "another task's softirq", expiry: expire("..s1.", 42, 0xa)},
		{name: "a timer of the handler's own", before: []ftrace.Event{start(handler, 0xa)}, expiry: expire("..s1.", pid, 0xa)},
		{name: "a timer of a third CPU", before: []ftrace.Event{start(2, 0xa)}, expiry: expire("..s1.", pid, 0xa)},
		{name: "a timer armed before the recording, deferrable by its re-arm", expiry: expire("..s1.", pid, 0xa), after: []ftrace.Event{startFlags(handler, 0xa, ftrace.TimerDeferrable)}},
		{name: "a timer armed before the recording, pinned by a later life's start", expiry: expire("..s1.", pid, 0xa), remote: true,
			after: []ftrace.Event{{CPU: 2, Name: "timer_init", Data: ftrace.TimerInit{Timer: 0xa}}, startFlags(2, 0xa, ftrace.TimerPinned)}},
		{name: "a timer armed before the recording, global by its re-arm", expiry: expire("..s1.", pid, 0xa), remote: true, after: []ftrace.Event{startFlags(target, 0xa, 0)}},
		// 5: a soft hrtimer's expiry: HRTIMER_SOFTIRQ runs after the
		// timer softirq has returned (in the same ktimers thread on
		// PREEMPT_RT); an interrupt's is rule 2's or none.
		{name: "a soft hrtimer expiry after the round", then: []ftrace.Event{line("hrtimer_expire_entry", "..s.2", pid, ftrace.HrtimerExpireEntry{})}, expiry: expire("..s.2", pid, 0xa)},
		{name: "another task's soft hrtimer expiry", then: []ftrace.Event{line("hrtimer_expire_entry", "..s.2", 42, ftrace.HrtimerExpireEntry{})}, expiry: expire("..s1.", pid, 0xa), remote: true},
		// 4: the target claimed again, here by itself.
		{name: "the target's own claim of itself", then: []ftrace.Event{{CPU: target, PID: 0, Flags: "dNs2.", Name: "tmigr_handle_remote_cpu", Data: ftrace.TmigrHandleRemoteCPU{CPU: target}}}, expiry: expire("..s1.", pid, 0xa)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := append(append(append(tc.before, remoteCPU), tc.then...), tc.expiry)
			at := len(evs) - 1
			evs = append(evs, tc.after...)
			r := NewRemoteExpiry(evs)
			var base int
			var remote bool
			for i := range evs[:at+1] {
				base, remote = r.Observe(&evs[i])
			}
			want := handler
			if tc.remote {
				want = target
			}
			if base != want || remote != tc.remote {
				t.Errorf("expiry on base of CPU %d, remote %v; want CPU %d, %v", base, remote, want, tc.remote)
			}
			if _, in := r.Target(handler); in != tc.remote {
				t.Errorf("still in the round: %v, want %v", in, tc.remote)
			}
		})
	}
}
