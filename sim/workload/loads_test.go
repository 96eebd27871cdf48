package workload

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/sim"
)

func loadsConfig() sim.Config {
	c := testConfig(4)
	c.Nodes = 1
	c.Warmup = 100 * time.Millisecond
	return c
}

func TestLoadsBusyAndSleepers(t *testing.T) {
	const period = 3 * time.Millisecond
	for _, abs := range []bool{false, true} {
		cfg := loadsConfig()
		cfg.PreemptRT = true
		l := &Loads{Busy: cpumask.Of(3), Sleepers: cpumask.Range(1, 2), FIFO: cpumask.Of(2), Period: period, Absolute: abs}
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(l); err != nil {
			t.Fatal(err)
		}
		if b := m.BusyNs(3); b < int64(cfg.Duration)*99/100 {
			t.Errorf("abs=%v: the busy CPU ran %v of %v", abs, time.Duration(b), cfg.Duration)
		}
		most := uint64(cfg.Duration/period) + 1
		for c := 1; c <= 2; c++ {
			w := m.Wakeups(c)
			switch {
			case w > most:
				t.Errorf("abs=%v: CPU %d woke %d times in %v, more than once per %v", abs, c, w, cfg.Duration, period)
			case abs && w < most-2:
				// Absolute deadlines do not drift: one wakeup per period.
				t.Errorf("abs=%v: CPU %d woke %d times, want %d or %d", abs, c, w, most-1, most)
			case w < most*9/10:
				t.Errorf("abs=%v: CPU %d woke %d times, want about %d", abs, c, w, most)
			}
		}
		// PREEMPT_RT: the SCHED_FIFO sleeper is woken from hard interrupt
		// context, the SCHED_OTHER one from the softirq thread.
		if _, rt := m.HardirqExpiries(2); rt == 0 {
			t.Errorf("abs=%v: the SCHED_FIFO sleeper was never woken from a hardirq", abs)
		}
		if _, rt := m.HardirqExpiries(1); rt != 0 {
			t.Errorf("abs=%v: CPU 1's hardirqs woke a real-time task", abs)
		}
		if all, _ := m.HardirqExpiries(1); all != 0 {
			t.Errorf("abs=%v: the SCHED_OTHER sleeper expired in a hardirq (%d)", abs, all)
		}
	}
}

func TestLoadsValidate(t *testing.T) {
	for _, tc := range []struct {
		l    Loads
		want string
	}{
		{Loads{Busy: cpumask.Of(4)}, "beyond"},
		{Loads{Sleepers: cpumask.Of(7), Period: time.Millisecond}, "beyond"},
		{Loads{Sleepers: cpumask.Of(1), FIFO: cpumask.Of(2), Period: time.Millisecond}, "not among"},
		{Loads{Busy: cpumask.Of(1), Sleepers: cpumask.Of(1), Period: time.Millisecond}, "both"},
		{Loads{Sleepers: cpumask.Of(1)}, "period"},
		{Loads{Sleepers: cpumask.Of(1), Period: time.Millisecond, FIFOPrio: 100}, "priority"},
		{Loads{Work: -1}, "negative"},
	} {
		err := tc.l.Validate(4)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %q", tc.l, err, tc.want)
		}
		m, err := sim.New(loadsConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(&tc.l); err == nil {
			t.Errorf("%+v: the run started", tc.l)
		}
	}
}

// TestNohzFullTimekeeper: with nohz_full CPUs, the timekeeper keeps its
// tick while idle (the kernel's can_stop_idle_tick), so it never leaves
// the hierarchy's active CPUs; without nohz_full it does.
func TestNohzFullTimekeeper(t *testing.T) {
	for _, nohzFull := range []bool{true, false} {
		cfg := loadsConfig()
		if nohzFull {
			cfg.NohzFull = cpumask.Range(1, 3)
		}
		var trace bytes.Buffer
		cfg.Trace = &trace
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(&Loads{Busy: cpumask.Range(1, 3)}, NewHousekeeping()); err != nil {
			t.Fatal(err)
		}
		idle := strings.Contains(trace.String(), "tmigr_cpu_idle: cpu=0 ")
		ticks := m.Ticks(0)
		all := uint64(cfg.Duration / (4 * time.Millisecond))
		if nohzFull && (idle || ticks < all-1) {
			t.Errorf("nohz_full: the timekeeper went idle in the hierarchy (%v) or stopped its tick (%d of %d ticks)", idle, ticks, all)
		}
		if !nohzFull && (!idle || ticks > all/2) {
			t.Errorf("no nohz_full: idle CPU 0 never went idle in the hierarchy (%v) or kept ticking (%d of %d ticks)", idle, ticks, all)
		}
	}
}
