package conformance

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/replay"
)

// TestPredictionRecordings checks every recording of testdata/traces
// against the prediction of its machine line: every CPU that ran another
// CPU's timers in the steady state is among the handlers (and so none is
// in never), and at the candidates of the group it pulled at. A pull the
// rules allow only before the steady state (a busy loop that started
// while the recording ran) is history; the recordings that hold such
// pulls are named, so that a new one is looked at.
func TestPredictionRecordings(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "traces", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	withHistory := map[string]string{
		// The busy loops start during these recordings (their machine lines
		// predate the recorder's start marker): the CPU that was migrator
		// keeps the role while it stays active.
		"vm16-2node-mixed.txt": "1,15",
		"vm18-2node-mixed.txt": "0",
		"vm3-2node-isol-rt-6.12-interrupt-between-cancel-and-expiry.txt": "0",
	}
	var recordings, pulling, pullers, history int
	for _, f := range files {
		name := filepath.Base(f)
		tr, err := replay.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Machine == nil {
			continue
		}
		recordings++
		c, err := CheckPrediction(tr)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// The pullers are the compare's: the kernel side's handlers.
		var want cpumask.Mask
		for p := range ExtractStructure(tr.Events, tr.Events[0].TS, tr.Events[len(tr.Events)-1].TS+1) {
			if p.Handler != p.Target {
				want.Set(p.Handler)
			}
		}
		if !c.Pullers.Equal(want) {
			t.Errorf("%s: pullers %s, the compare's %s", name, c.Pullers, want)
		}
		if !c.OK || !c.Outside.Empty() {
			t.Errorf("%s: the recording contradicts the prediction:\n%s", name, c.Text())
		}
		var hist cpumask.Mask
		for _, h := range c.History {
			hist.Set(h.Handler)
		}
		if got := hist.String(); got != withHistory[name] {
			t.Errorf("%s: history pulls by CPUs %q, want %q:\n%s", name, got, withHistory[name], c.Text())
		}
		steady := c.Pullers.AndNot(hist)
		if out := steady.AndNot(c.Handlers); !out.Empty() {
			t.Errorf("%s: pullers %s are not among the handlers %s", name, out, c.Handlers)
		}
		if in := steady.And(c.Never); !in.Empty() {
			t.Errorf("%s: pullers %s are among never %s", name, in, c.Never)
		}
		if c.Unmapped != "" {
			t.Errorf("%s: %s", name, c.Unmapped)
		}
		if !c.Pullers.Empty() {
			pulling++
			pullers += c.Pullers.Weight()
		}
		history += len(c.History)
	}
	t.Logf("%d recordings, %d with pulls, %d pullers in all, %d history pulls", recordings, pulling, pullers, history)
}

// TestPredictionCheckFails feeds the check pulls that the rules rule out,
// and pulls they allow only as history.
func TestPredictionCheckFails(t *testing.T) {
	const machine = `# machine: cpus=8 nodes=1 node-cpus=0-7 kernel=6.12.118 hz=250 cmdline="" busy=1-7 sleepers= (test)` + "\n"
	const steady = `          <idle>-0       [002] dN.2.    10.000000: tmigr_group_set_cpu_active: group=00000000aaaa0000 lvl=0 numa=0 active=fe migrator=2 parent=0000000000000000 childmask=4` + "\n"
	const zeroMigrator = `          <idle>-0       [002] dN.2.    10.000000: tmigr_group_set_cpu_active: group=00000000aaaa0000 lvl=0 numa=0 active=ff migrator=1 parent=0000000000000000 childmask=4` + "\n"
	const pull = `          <idle>-0       [000] d.s2.    10.100000: tmigr_handle_remote: group=00000000aaaa0000 lvl=0
          <idle>-0       [000] d.s2.    10.100010: tmigr_handle_remote_cpu: cpu=3 parent=00000000aaaa0000 wakeup=9223372036854775807
`
	for _, tc := range []struct {
		name, trace string
		ok, history bool
	}{
		{"CPU 0 pulls after CPU 1 was seen migrator", machine + steady + pull, false, false},
		{"CPU 0 pulls while it is migrator", machine + zeroMigrator + pull, true, true},
		{"CPU 0 pulls, the group's state never seen", machine + pull, true, true},
	} {
		tr, err := replay.Read(strings.NewReader(tc.trace))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := CheckPrediction(tr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.OK != tc.ok || (len(c.History) > 0) != tc.history {
			t.Errorf("%s: ok %v, history %v; want %v, %v:\n%s", tc.name, c.OK, c.History, tc.ok, tc.history, c.Text())
		}
		if c.Handlers.String() != "1-7" || c.Never.String() != "0" {
			t.Errorf("%s: handlers %s, never %s", tc.name, c.Handlers, c.Never)
		}
		if !tc.ok && (c.Outside.String() != "0" || !strings.Contains(c.Text(), "CONTRADICTED")) {
			t.Errorf("%s: outside %s:\n%s", tc.name, c.Outside, c.Text())
		}
	}
}

// TestPredictionChangeWindow: a change's effects lie between the previous
// change's time and its own, as the replay reads them (an isolated
// partition of busy vCPUs takes seconds under QEMU TCG: campaign 20261227
// draw 59, whose partition's removal brought CPUs back 0.66 s before its
// time). A pull the next configuration allows is no contradiction inside
// that window, and still one before it.
func TestPredictionChangeWindow(t *testing.T) {
	const machine = `# machine: cpus=4 nodes=1 node-cpus=0-3 kernel=7.3.4 hz=250 cmdline="" busy=3 sleepers= at="1s partition 2-3; 2s timer_migration=0; 3s partition none" (test)
     tmigr-guest-1       [000] ...1.    10.000000: tracing_mark_write: tmigr-lab: start
`
	pull := func(ts string) string {
		return `          <idle>-0       [003] d.s2.    ` + ts + `00: tmigr_handle_remote: group=00000000aaaa0000 lvl=0
          <idle>-0       [003] d.s2.    ` + ts + `10: tmigr_handle_remote_cpu: cpu=1 parent=00000000aaaa0000 wakeup=9223372036854775807
`
	}
	for _, tc := range []struct {
		name, at string
		ok       bool
	}{
		// Out of the hierarchy in the partition, before the removal
		// could have begun.
		{"before the window", "11.5000", false},
		// Between timer_migration=0 and the removal's time.
		{"inside the window", "12.5000", true},
		// Back, busy, the migrator of its group.
		{"after the change", "13.5000", true},
	} {
		tr, err := replay.Read(strings.NewReader(machine + pull(tc.at)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, err := CheckPrediction(tr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.OK != tc.ok {
			t.Errorf("%s: ok %v, want %v:\n%s", tc.name, c.OK, tc.ok, c.Text())
		}
	}
}
