package metrics

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/watch"
)

// collect follows a recording and gathers its metrics.
func collect(t *testing.T, path string, byFunction bool) (*watch.Watcher, map[string][]*dto.Metric, *prometheus.Registry) {
	t.Helper()
	rd, c, err := ftrace.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := &watch.Follow{Reader: rd}
	// The Watcher is made at the first event: count by function from then
	// on, as an exporter's New does before it follows.
	f.OnEvent = func(*ftrace.Event) bool {
		if byFunction {
			f.Watcher.TrackFunctions()
		}
		return true
	}
	if err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New(f.Watcher, Options{Lock: &mu, ByFunction: byFunction, Version: "v0", Revision: "r", GoVersion: "go", Kernel: f.Watcher.Machine().Machine.Kernel}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()
	}
	return f.Watcher, out, reg
}

// value returns the value of the sample of name with the labels.
func value(t *testing.T, ms map[string][]*dto.Metric, name string, labels ...string) (float64, bool) {
	t.Helper()
	for _, m := range ms[name] {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && got[labels[i]] == labels[i+1]
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

// TestLint: the metrics follow Prometheus's naming conventions (promlint).
func TestLint(t *testing.T) {
	_, _, reg := collect(t, "../testdata/traces/vm40-1node-isol-busy.txt", true)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestIsolatedPuller: on 6.12 the busy isolated CPU 8 pulls: its foreign
// counter on isolated CPUs rises and it is GRP0:1's migrator; on 7.3 the
// isolated CPUs are out of the hierarchy and the counter stays at zero.
// Every counter is the Watcher's total.
func TestIsolatedPuller(t *testing.T) {
	w, ms, _ := collect(t, "../testdata/traces/vm40-1node-isol-busy.txt", true)
	totals, events, _ := w.Totals()
	for cpu, tot := range totals {
		l := strconv.Itoa(cpu)
		for kind, want := range map[string]uint64{"own": tot.Own, "foreign": tot.Foreign} {
			if v, ok := value(t, ms, "tmigr_timer_expirations_total", "cpu", l, "kind", kind); !ok || v != float64(want) {
				t.Errorf("cpu %d %s: %v %v, want %d", cpu, kind, v, ok, want)
			}
		}
	}
	if v, _ := value(t, ms, "tmigr_foreign_timer_on_isolated_total", "cpu", "8"); v == 0 || v != float64(totals[8].Foreign) {
		t.Errorf("6.12 foreign on isolated CPU 8 = %v, want %d > 0", v, totals[8].Foreign)
	}
	if _, ok := value(t, ms, "tmigr_foreign_timer_on_isolated_total", "cpu", "0"); ok {
		t.Errorf("housekeeping CPU 0 has a foreign-on-isolated series")
	}
	if v, _ := value(t, ms, "tmigr_cpu_migrator", "cpu", "8", "group", "GRP0:1"); v != 1 {
		t.Errorf("6.12 CPU 8 is not GRP0:1's migrator")
	}
	if v, _ := value(t, ms, "tmigr_foreign_timer_expirations_by_function_total", "cpu", "8", "owner", "10", "function", "process_timeout"); v == 0 {
		t.Errorf("6.12: no by-function series for CPU 8's process_timeout of CPU 10")
	}
	if v, _ := value(t, ms, "tmigr_trace_events_total"); v != float64(events) || v == 0 {
		t.Errorf("events %v, want %d", v, events)
	}
	if v, ok := value(t, ms, "tmigr_build_info", "kernel", "6.12.118", "version", "v0"); !ok || v != 1 {
		t.Errorf("build info %v %v", v, ok)
	}

	_, ms, _ = collect(t, "../testdata/traces/vm40-1node-isol-busy-7.3.txt", false)
	for _, m := range ms["tmigr_foreign_timer_on_isolated_total"] {
		if m.Counter.GetValue() != 0 {
			t.Errorf("7.3: %v", m)
		}
	}
	if len(ms["tmigr_foreign_timer_on_isolated_total"]) == 0 {
		t.Fatal("7.3: no foreign-on-isolated series")
	}
	if v, ok := value(t, ms, "tmigr_cpu_in_hierarchy", "cpu", "8"); !ok || v != 0 {
		t.Errorf("7.3: isolated CPU 8 in the hierarchy: %v %v", v, ok)
	}
	if _, ok := ms["tmigr_foreign_timer_expirations_by_function_total"]; ok {
		t.Errorf("by-function series without ByFunction")
	}
	for _, m := range ms["tmigr_cpu_info"] {
		for _, l := range m.GetLabel() {
			if l.GetName() == "class" && strings.Contains(l.GetValue(), " ") {
				t.Errorf("class label %q", l.GetValue())
			}
		}
	}
}
