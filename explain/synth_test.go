package explain

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// synth writes small recordings of a 4-CPU machine, one level-0 group
// (GRP0:0, CPU c's bit 1<<c), in the kernel's format.
type synth struct {
	m   ftrace.Machine
	evs []ftrace.Event
}

const grp = 0x00000000aaaa0001

func newSynth(kernel, cmdline string) *synth {
	return &synth{m: ftrace.Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)},
		Kernel: kernel, HZ: 250, Cmdline: cmdline}}
}

// at adds an event of cpu at ms milliseconds into the recording.
func (s *synth) at(ms float64, cpu int, flags string, p ftrace.Payload) {
	task, pid := "<idle>", 0
	if strings.Contains(flags, "s") && cpu != 0 {
		task, pid = "busy", 100+cpu
	}
	s.evs = append(s.evs, ftrace.Event{Task: task, PID: pid, CPU: cpu, Flags: ftrace.Flags(flags),
		TS: 1e9 + int64(math.Round(ms*1e3))*1e3, Name: p.Name(), Data: p})
}

func (s *synth) text(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	if err := ftrace.WriteTrace(&b, ftrace.Header{Machine: &s.m}, s.evs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func (s *synth) explain(t *testing.T) *Report {
	t.Helper()
	rep, err := ExplainText(strings.NewReader(s.text(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (s *synth) state(ms float64, cpu int, activate bool, active, migrator uint8) {
	g := ftrace.TmigrGroupAndCPU{Group: grp, Lvl: 0, Numa: 0, Active: active, Migrator: migrator, Childmask: 1 << cpu}
	if activate {
		s.at(ms, cpu, "dN.2.", ftrace.TmigrGroupSetCPUActive(g))
	} else {
		s.at(ms, cpu, "d..4.", ftrace.TmigrGroupSetCPUInactive(g))
	}
}

func (s *synth) idle(ms float64, cpu int, nextevt, wakeup int64) {
	s.at(ms, cpu, "d..4.", ftrace.TmigrCPUIdle{CPU: cpu, Parent: grp, NextEvt: nextevt, Wakeup: wakeup})
}

func (s *synth) start(ms float64, cpu, base int, timer uint64, fn string, expires uint64, flags ftrace.TimerFlags) {
	s.at(ms, cpu, "d..1.", ftrace.TimerStart{Timer: timer, Function: fn, Expires: expires, Timeout: 10,
		BucketExpiry: expires, CPU: base, Flags: flags})
}

func (s *synth) expire(ms float64, cpu int, timer uint64, fn string, now uint64) {
	s.at(ms, cpu, "d.s2.", ftrace.TimerCancel{Timer: timer})
	s.at(ms+0.001, cpu, "..s1.", ftrace.TimerExpireEntry{Timer: timer, Function: fn, Now: now, BaseClk: now})
	s.at(ms+0.050, cpu, "..s1.", ftrace.TimerExpireExit{Timer: timer})
}

func (s *synth) round(ms float64, cpu, target int) {
	s.at(ms, cpu, "..s..", ftrace.TmigrHandleRemote{Group: grp, Lvl: 0})
	s.at(ms+0.001, cpu, "d.s1.", ftrace.TmigrHandleRemoteCPU{CPU: target, Parent: grp, Wakeup: ftrace.KtimeMax})
}

// pull is the 6.12 story: CPU 0, the migrator, goes idle; busy isolated
// CPU 1, the lowest active child, takes over and runs CPU 0's timer.
func pull(kernel string) *synth {
	s := newSynth(kernel, "isolcpus=1-3")
	s.state(0, 2, false, 0b1011, 0b0001) // first state: CPU 0 the migrator
	s.start(1, 0, 0, 0x71, "process_timeout", 1010, 0)
	s.state(2, 0, false, 0b1010, 0b0010) // CPU 0 idle: CPU 1 the lowest active
	s.idle(2.01, 0, 1040e6, ftrace.KtimeMax)
	s.round(50, 1, 0)
	s.expire(50.01, 1, 0x71, "process_timeout", 1012)
	return s
}

func findEvent(t *testing.T, rep *Report, kind Kind, handler int, fn string) *Expiry {
	t.Helper()
	for i := range rep.Events {
		x := &rep.Events[i]
		if x.Kind == kind && x.Handler == handler && x.Function == fn {
			return x
		}
	}
	t.Fatalf("no %s expiry of %s on CPU %d in %+v", kind, fn, handler, rep.Events)
	return nil
}

func wantIn(t *testing.T, why string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(why, p) {
			t.Errorf("why lacks %q:\n%s", p, why)
		}
	}
}

func TestSynthPull(t *testing.T) {
	rep := pull("6.12.118").explain(t)
	x := findEvent(t, rep, Foreign, 1, "process_timeout")
	if x.Owner != 0 || x.Start == nil || x.Duration != 49e3 {
		t.Errorf("owner %d start %+v duration %d", x.Owner, x.Start, x.Duration)
	}
	wantIn(t, x.Why,
		"CPU 1 ran CPU 0's process_timeout at 1.050011 s",
		"CPU 0 armed it at 1.001000 s (line 15), a global timer",
		"CPU 0 was idle since 1.002010 s",
		"due at 1.040000 s (CLOCK_MONOTONIC), in GRP0:0",
		"CPU 1 was GRP0:0's migrator since 1.002000 s (the lowest active child when CPU 0 went idle)",
		"CPU 1 is isolated (isolcpus domain), yet on Linux 6.12.118",
		"busy, it is the lowest active CPU of GRP0:0",
		"from 6.19 (exclude-isolated, 7dec062cfcf2) CPU 1 would be out of the hierarchy",
		"CPU 0, the last to go idle, would have woken for its own timer at 1.040000 s")
	kinds := []StepKind{}
	for _, s := range x.Steps {
		kinds = append(kinds, s.Kind)
		if s.Undetermined != "" {
			t.Errorf("undetermined step %+v", s)
		}
	}
	want := []StepKind{StepOwner, StepIdle, StepEvent, StepRound, StepMigrator, StepIsolation, StepKernel}
	if len(kinds) != len(want) {
		t.Fatalf("steps %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("steps %v, want %v", kinds, want)
		}
	}
	if len(rep.Pulls) != 1 || rep.Pulls[0].Count != 1 || rep.Pulls[0].Why != x.Why {
		t.Errorf("pulls %+v", rep.Pulls)
	}
}

// On 6.19 and later an isolated CPU that pulls contradicts the kernel's
// rule, and the why says so.
func TestSynthPullOn619IsAnomaly(t *testing.T) {
	rep := pull("6.19.2").explain(t)
	x := findEvent(t, rep, Foreign, 1, "process_timeout")
	wantIn(t, x.Why, "it should not have pulled")
	if rep.Undetermined[whyDisagree] != 1 {
		t.Errorf("undetermined %v", rep.Undetermined)
	}
}

// The migrator role taken on activation, and the last CPU awake walking
// a group without a migrator, woken by its wakeup.
func TestSynthRoles(t *testing.T) {
	s := newSynth("6.12.118", "")
	s.state(0, 0, true, 0b0001, 0b0001) // CPU 0 takes the role in an idle group
	s.start(1, 2, 2, 0x72, "process_timeout", 1010, 0)
	s.state(2, 2, true, 0b0101, 0b0001)
	s.state(3, 2, false, 0b0001, 0b0001)
	s.idle(3.01, 2, 1020e6, ftrace.KtimeMax)
	s.round(10, 0, 2)
	s.expire(10.01, 0, 0x72, "process_timeout", 1003)
	s.state(20, 0, false, 0b0000, noMigrator) // CPU 0 the last to go idle
	s.idle(20.01, 0, 1200e6, 1100e6)
	s.start(21, 3, 3, 0x73, "delayed_work_timer_fn", 1030, 0)
	s.round(100, 0, 3)
	s.expire(100.01, 0, 0x73, "delayed_work_timer_fn", 1025)
	rep := s.explain(t)
	x := findEvent(t, rep, Foreign, 0, "process_timeout")
	wantIn(t, x.Why, "CPU 0 was GRP0:0's migrator since 1.000000 s (CPU 0 became active while GRP0:0 had no active child, and took the role)")
	y := findEvent(t, rep, Foreign, 0, "delayed_work_timer_fn")
	wantIn(t, y.Why, "CPU 3 was idle (the round ran its timers)",
		"GRP0:0 had no migrator since 1.020000 s (CPU 0, its last active child, went idle), and CPU 0 walked it as the last CPU to go idle, woken by its wakeup at 1.100000 s (CLOCK_MONOTONIC)")
	// A housekeeping CPU's own timers are not listed.
	for _, e := range rep.Events {
		if e.Kind != Foreign {
			t.Errorf("listed %+v", e)
		}
	}
}

// What isolated CPUs run of their own: a timer they armed themselves, a
// deferrable one at the next tick, one queued on them by another CPU, one
// armed before the recording began.
func TestSynthOwnTimers(t *testing.T) {
	s := newSynth("6.12.118", "isolcpus=1-3")
	s.state(0, 0, true, 0b1111, 0b0001)
	s.start(1, 1, 1, 0xa1, "hrtick", 1002, ftrace.TimerPinned)
	s.start(2, 2, 2, 0xa2, "vmstat_update", 1005, ftrace.TimerDeferrable)
	s.start(3, 0, 3, 0xa3, "clocksource_watchdog", 1003, ftrace.TimerPinned)
	s.expire(10, 1, 0xa1, "hrtick", 1002)
	s.expire(12, 3, 0xa3, "clocksource_watchdog", 1003)
	s.expire(100, 2, 0xa2, "vmstat_update", 1030)
	s.expire(200, 3, 0xa4, "blk_stat_timer_fn", 1050)
	rep := s.explain(t)
	wantIn(t, findEvent(t, rep, Own, 1, "hrtick").Why, "its own timer", "CPU 1 armed it itself at 1.001000 s", "pinned: it stays on that CPU",
		"CPU 1 is isolated (isolcpus domain), which keeps other CPUs' work away from it but not the timers on its own base")
	wantIn(t, findEvent(t, rep, Own, 2, "vmstat_update").Why, "deferrable timers never migrate and never wake an idle CPU: it ran at the CPU's next tick, jiffy 1030, 25 ticks (100 ms) after it expired")
	wantIn(t, findEvent(t, rep, Own, 3, "clocksource_watchdog").Why, "CPU 0 queued it on CPU 3's base at 1.003000 s (line 17; add_timer_on names the CPU)")
	x := findEvent(t, rep, Own, 3, "blk_stat_timer_fn")
	wantIn(t, x.Why, "its timer_start is not in the recording", "whether it is pinned or deferrable, the trace does not tell")
	if x.Start != nil || rep.Undetermined[whyUnarmed] != 1 {
		t.Errorf("start %+v, undetermined %v", x.Start, rep.Undetermined)
	}
	if len(rep.Pulls) != 0 || len(rep.Events) != 4 {
		t.Errorf("pulls %+v, %d events", rep.Pulls, len(rep.Events))
	}
	// On 7.x the same CPUs are out of the hierarchy.
	s.m.Kernel = "7.3.0"
	rep = s.explain(t)
	wantIn(t, findEvent(t, rep, Own, 1, "hrtick").Why, "out of the hierarchy: it runs its own timers and no other CPU's")
}

// A pinned timer expired remotely, a timer started on one CPU and
// expired on another outside any round, and lost events are flagged or
// left undetermined, never explained away.
func TestSynthContradictions(t *testing.T) {
	s := pull("6.12.118")
	s.evs[1].Data = ftrace.TimerStart{Timer: 0x71, Function: "process_timeout", Expires: 1010, Timeout: 10, BucketExpiry: 1010, CPU: 0, Flags: ftrace.TimerPinned}
	rep := s.explain(t)
	x := findEvent(t, rep, Foreign, 1, "process_timeout")
	wantIn(t, x.Why, "a pinned timer never migrates")
	if x.Steps[1].Kind != StepAnomaly || x.Steps[1].Undetermined != whyDisagree {
		t.Errorf("steps %+v", x.Steps)
	}

	s = newSynth("6.12.118", "isolcpus=1-3")
	s.state(0, 0, true, 0b1111, 0b0001)
	s.start(1, 0, 0, 0xb1, "process_timeout", 1002, 0)
	s.expire(10, 2, 0xb1, "process_timeout", 1003)
	s.at(20, 3, "", ftrace.Lost{Count: 5})
	s.expire(21, 3, 0xb2, "process_timeout", 1005)
	rep = s.explain(t)
	x = findEvent(t, rep, UnknownOwner, 2, "process_timeout")
	wantIn(t, x.Why, "whose owner the trace does not tell", "queued it on CPU 0's base, yet it expired in CPU 2's own timer softirq")
	if x.Owner != -1 {
		t.Errorf("owner %d", x.Owner)
	}
	y := findEvent(t, rep, UnknownOwner, 3, "process_timeout")
	wantIn(t, y.Why, "events of CPU 3 were lost before it")
	if rep.Undetermined[whyLost] != 1 || rep.Undetermined[whyDisagree] != 1 {
		t.Errorf("undetermined %v", rep.Undetermined)
	}
	b, err := jsonOf(rep)
	if err != nil || !strings.Contains(b, `"owner": null`) {
		t.Errorf("JSON of an unknown owner: %v\n%s", err, b)
	}
}

// Bad input is a clear error naming the problem.
func TestBadInput(t *testing.T) {
	good := pull("6.12.118").text(t)
	lines := strings.Split(good, "\n")
	// Two event lines swapped: time goes back.
	n := len(lines)
	swapped := append([]string{}, lines...)
	swapped[n-3], swapped[n-4] = swapped[n-4], swapped[n-3]
	for _, tc := range []struct {
		name, text string
		o          Options
		want       string
	}{
		{"empty", "", Options{}, "not ftrace text"},
		{"binary", "\x7fELF\x02\x01\x01", Options{}, "ELF"},
		{"out of order", strings.Join(swapped, "\n"), Options{}, "time goes back"},
		{"truncated", good[:len(good)-20], Options{}, "truncated"},
		{"CPU beyond", good, Options{CPUs: 1}, "beyond the machine's CPUs 0-0"},
		{"kernel", good, Options{Kernel: "banana"}, "banana"},
		{"nodes", good, Options{NodeCPUs: []cpumask.Mask{cpumask.Range(0, 1)}}, "CPUs 2-3 are on no node"},
		{"cmdline", good, Options{Cmdline: `isolcpus="1-3`}, "unterminated quote"},
		{"no events", strings.Join(lines[:15], "\n") + "\n", Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := ExplainText(strings.NewReader(tc.text), tc.o)
			if err == nil {
				t.Fatalf("no error; report %+v", rep)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := ExplainFile("no/such/file.txt", Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func jsonOf(rep *Report) (string, error) {
	b, err := json.MarshalIndent(rep.JSON(), "", " ")
	return string(b), err
}

// Before 6.9 there is no hierarchy: mod_timer pushes a timer armed on an
// idle CPU to a busy one, and the why says so.
func TestSynthPushBefore69(t *testing.T) {
	s := newSynth("6.1.0", "nohz_full=1-3")
	s.start(1, 0, 2, 0xc1, "process_timeout", 1005, 0)
	s.expire(30, 2, 0xc1, "process_timeout", 1008)
	rep := s.explain(t)
	x := findEvent(t, rep, Own, 2, "process_timeout")
	wantIn(t, x.Why, "CPU 0 armed it at 1.001000 s (line 14) and the kernel queued it on CPU 2's base", "push-at-enqueue", "CPU 2 is nohz_full")
	var b strings.Builder
	if err := rep.WriteText(&b, TextOptions{}); err != nil || !strings.Contains(b.String(), "before 6.9: no pull hierarchy") ||
		!strings.Contains(b.String(), "predates the pull hierarchy") {
		t.Errorf("%v\n%s", err, b.String())
	}
}
