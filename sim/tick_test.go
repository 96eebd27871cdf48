package sim_test

import (
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/sim"
)

// An idle CPU taken offline was busy for none of the measurement: the
// hotplug thread that takes it down runs from the moment it leaves idle.
// (The simulator used to add the whole time since the CPU's last busy
// stretch began: 90% busy with 0 ticks for an offline at 1.1 s of a 1 s
// measurement after 0.2 s of warm-up.)
func TestOfflineIdleCPUIsNotBusy(t *testing.T) {
	c := cfg(4, cpu.PullIsolated, time.Second)
	c.Warmup = 200 * time.Millisecond
	c.Actions = []sim.Action{{At: 1100 * time.Millisecond, Kind: sim.Offline, CPU: 3}}
	r, err := sim.Run(c, fn{func(m *sim.Machine) error { return spinOn(m, 1) }})
	if err != nil {
		t.Fatal(err)
	}
	cr := r.CPUs[3]
	if cr.Ticks != 0 {
		t.Fatalf("idle CPU 3 took %d ticks in the window", cr.Ticks)
	}
	if pct := 100 * float64(cr.BusyNs) / float64(r.Duration); pct > 0.1 {
		t.Errorf("idle CPU 3, offline at 1.1 s: %.2f%% busy (%d ns), want ~0", pct, cr.BusyNs)
	}
	// The spinning CPU is busy throughout, offline or not.
	if b := r.CPUs[1].BusyNs; b < r.Duration*99/100 {
		t.Errorf("spinning CPU 1 busy %d of %d ns", b, r.Duration)
	}
}
