package hrtimer

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestSleeperRule is HI10 of docs/hrtimer.md for every policy, kernel and rule: which
// sleepers expire hard, the mode their start carries, and their slack.
func TestSleeperRule(t *testing.T) {
	policies := []Policy{SchedOther, SchedFIFO, SchedRR, SchedBatch, SchedIdle, SchedDeadline}
	for _, rt := range []bool{false, true} {
		for _, rule := range []SleeperRule{SleepersByPolicy, SleepersAllHard} {
			for _, p := range policies {
				for _, req := range []Mode{ModeAbs, ModeRel, ModeAbs | ModeSoft} {
					cfg := Config{PreemptRT: rt, Sleepers: rule}
					b, err := NewCPUBase(0, cfg)
					if err != nil {
						t.Fatal(err)
					}
					var tm Timer
					if err := b.SetupSleeper(&tm, Monotonic, req, p); err != nil {
						t.Fatal(err)
					}
					rtdl := p == SchedFIFO || p == SchedRR || p == SchedDeadline
					var wantSoft bool
					switch {
					case req&ModeSoft != 0:
						wantSoft = true // asked for
					case !rt:
						wantSoft = false // non-RT: as requested, nanosleep is hard
					case rule == SleepersAllHard:
						wantSoft = false
					default:
						wantSoft = !rtdl
					}
					if tm.IsSoft() != wantSoft {
						t.Errorf("rt=%v %v %v req=%v: soft=%v, want %v", rt, rule, p, req, tm.IsSoft(), wantSoft)
					}
					start := tm.SleeperStartMode(req)
					if wantHard := rt && !wantSoft; (start&ModeHard != 0) != wantHard {
						t.Errorf("rt=%v %v %v req=%v: start mode %v", rt, rule, p, req, start)
					}
					if start&^ModeHard != req {
						t.Errorf("start mode %v changed more than HARD of %v", start, req)
					}
					slack := SleeperSlack(p, DefaultTimerSlack)
					if want := map[bool]int64{true: 0, false: 50_000}[rtdl]; slack != want {
						t.Errorf("%v: slack %d, want %d", p, slack, want)
					}
				}
			}
		}
	}
}

// TestPassMisuse checks that every misuse of the pass API is an error
// naming it, and leaves the base usable.
func TestPassMisuse(t *testing.T) {
	b, _ := NewCPUBase(0, Config{})
	var a, c Timer
	b.Setup(&a, Monotonic, ModeAbs)
	b.Setup(&c, Monotonic, ModeAbs)
	b.Start(&a, 0, 10, 0, ModeAbs)
	b.Start(&c, 0, 10, 0, ModeAbs)

	p, err := b.Interrupt(10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Interrupt(10); !errors.Is(err, ErrPassActive) {
		t.Errorf("second Interrupt: %v", err)
	}
	if _, err := b.Tick(10); !errors.Is(err, ErrHighRes) {
		t.Errorf("Tick in hres mode: %v", err)
	}
	x := p.Next()
	if x != &a {
		t.Fatalf("Next = %p, want a", x)
	}
	if !a.Running() || a.Queued() || !a.Active() {
		t.Errorf("running timer: running=%v queued=%v active=%v", a.Running(), a.Queued(), a.Active())
	}
	if err := b.Setup(&a, Monotonic, ModeAbs); !errors.Is(err, ErrActive) {
		t.Errorf("Setup of a running timer: %v", err)
	}
	if p.Next() != nil {
		t.Error("Next with a callback outstanding returned a timer")
	}
	if _, err := p.End(10); !errors.Is(err, ErrOutstanding) {
		t.Errorf("End with a callback outstanding: %v", err)
	}
	p.Done(&c, NoRestart) // not the running timer
	p.Done(&a, NoRestart)
	if _, err := p.End(10); !errors.Is(err, ErrOutstanding) || !errors.Is(err, ErrNotRunning) {
		t.Errorf("End after misuse: %v", err)
	}
	// The pass is still usable.
	if x := p.Next(); x != &c {
		t.Fatalf("Next = %p, want c", x)
	}
	p.Done(&c, NoRestart)
	if out, err := p.End(10); err != nil || !out.Program || out.At != Never {
		t.Errorf("End: %+v %v", out, err)
	}
	if _, err := p.End(10); !errors.Is(err, ErrNoPass) {
		t.Errorf("End of an ended pass: %v", err)
	}
	if p.Next() != nil {
		t.Error("Next of an ended pass returned a timer")
	}

	var unset Timer
	if _, err := b.Start(&unset, 0, 1, 0, ModeAbs); !errors.Is(err, ErrNotSetUp) {
		t.Errorf("Start of a timer never set up: %v", err)
	}
	if r, _ := b.TryCancel(&unset); r != 0 || unset.Active() || unset.CPU() != -1 {
		t.Errorf("unset timer: cancel=%d active=%v cpu=%d", r, unset.Active(), unset.CPU())
	}
	if _, err := b.Start(&a, 0, 1, 0, 0x10); err == nil {
		t.Error("Start with a bad mode bit succeeded")
	}
	if _, err := b.StartOn(&a, nil, 0, 1, 0, ModeAbs); err == nil {
		t.Error("StartOn with a nil target succeeded")
	}
	if err := b.Setup(&a, 7, ModeAbs); err == nil {
		t.Error("Setup with a bad clock succeeded")
	}
	for _, cfg := range []Config{{LowRes: true}, {TimeLowRes: true}, {Sleepers: 9}} {
		if _, err := NewCPUBase(0, cfg); err == nil {
			t.Errorf("NewCPUBase(%+v) succeeded", cfg)
		}
	}
	if _, err := NewCPUBase(-1, Config{}); err == nil {
		t.Error("NewCPUBase(-1) succeeded")
	}
	lb, _ := NewCPUBase(0, Config{LowRes: true, HZ: 100})
	if _, err := lb.Interrupt(0); !errors.Is(err, ErrLowRes) {
		t.Errorf("Interrupt in lowres mode: %v", err)
	}
	if lb.Resolution() != 10_000_000 {
		t.Errorf("HZ=100 resolution %d", lb.Resolution())
	}
}

// TestCancelWaits: hrtimer_cancel waits for a running callback to finish,
// then reports whether it removed the timer (HI6): after it the timer is
// inactive.
func TestCancelWaits(t *testing.T) {
	b, _ := NewCPUBase(0, Config{})
	var a Timer
	b.Setup(&a, Monotonic, ModeAbs)
	b.Start(&a, 0, 100, 0, ModeAbs)
	p, _ := b.Interrupt(100)
	if p.Next() != &a {
		t.Fatal("a not expired")
	}
	done := make(chan int)
	go func() {
		r, _ := b.Cancel(&a)
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("Cancel returned %d while the callback ran", r)
	case <-time.After(20 * time.Millisecond):
	}
	p.Done(&a, Restart) // requeued at 100: Cancel then removes it
	if r := <-done; r != 1 || a.Active() {
		t.Errorf("Cancel = %d, active=%v; want 1, false", r, a.Active())
	}
	if _, err := p.End(100); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentRestartDuringCallback: a restart from another goroutine
// while the callback runs leaves exactly one enqueue, on the timer's own
// CPU, whatever the callback returns (HI7, HI8).
func TestConcurrentRestartDuringCallback(t *testing.T) {
	for _, act := range []Action{NoRestart, Restart} {
		b0, _ := NewCPUBase(0, Config{})
		b1, _ := NewCPUBase(1, Config{})
		var a Timer
		b0.Setup(&a, Monotonic, ModeAbs)
		b0.Start(&a, 0, 100, 0, ModeAbs)
		p, _ := b0.Interrupt(100)
		if p.Next() != &a {
			t.Fatal("a not expired")
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b1.Start(&a, 100, 500, 0, ModeAbs); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		p.Done(&a, act)
		if b0.Len() != 1 || b1.Len() != 0 || a.CPU() != 0 || a.Expires() != 500 {
			t.Errorf("%v: cpu0 has %d, cpu1 %d, a on cpu%d at %d", act, b0.Len(), b1.Len(), a.CPU(), a.Expires())
		}
		if out, _ := p.End(100); out.At != 500 {
			t.Errorf("%v: programmed %d, want 500", act, out.At)
		}
	}
}

func TestModeString(t *testing.T) {
	for m, s := range modeNames {
		if m.String() != s {
			t.Errorf("%#x.String() = %q, want %q", uint8(m), m.String(), s)
		}
		got, err := ParseMode(s)
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", s, got, err)
		}
	}
	if s := (ModeSoft | ModeHard).String(); s != "0xc" {
		t.Errorf("SOFT|HARD prints %q, want 0xc", s)
	}
	for _, bad := range []string{"", "ABS|REL", "PINNED", "ABS|ABS", "REL|SOFT|SOFT", "abs", "0x", "0x10", "0xzz", "ABS|"} {
		if m, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) = %v, want an error", bad, m)
		}
	}
	if m, err := ParseMode("HARD|PINNED|REL"); err != nil || m != ModeRel|ModePinned|ModeHard {
		t.Errorf("flags out of order: %v %v", m, err)
	}
	for c := Monotonic; c < numClocks; c++ {
		for _, s := range []string{c.String(), c.String()[len("CLOCK_"):]} {
			if got, err := ParseClock(s); err != nil || got != c {
				t.Errorf("ParseClock(%q) = %v, %v", s, got, err)
			}
		}
	}
	if _, err := ParseClock("CLOCK_PROCESS_CPUTIME_ID"); err == nil {
		t.Error("ParseClock accepted a clock without hrtimer base")
	}
}

func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"ABS", "REL|PINNED|HARD", "ABS|SOFT", "0x9", "0xc", "HARD|REL", "", "ABS|", "REL|REL", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMode(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if m&^modeMask != 0 {
			t.Fatalf("ParseMode(%q) = %#x: bits outside the mode", s, uint8(m))
		}
		back, err := ParseMode(m.String())
		if err != nil || back != m {
			t.Fatalf("round trip of %q: %v -> %q -> %v, %v", s, m, m.String(), back, err)
		}
	})
}

func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"CLOCK_MONOTONIC", "REALTIME", "CLOCK_TAI", "CLOCK_", "", "CLOCK_BOOTTIME_ALARM"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseClock(s)
		if err != nil {
			return
		}
		if c >= numClocks {
			t.Fatalf("ParseClock(%q) = %d", s, c)
		}
		if back, err := ParseClock(c.String()); err != nil || back != c {
			t.Fatalf("round trip of %q: %v, %v", s, back, err)
		}
	})
}
