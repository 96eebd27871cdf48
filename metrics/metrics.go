// Package metrics exports what a watch.Watcher follows as Prometheus
// metrics, with the conventions of the Prometheus exporters (node_exporter):
// the tmigr_ prefix, counters ending in _total, base units (seconds), the
// CPU as a decimal "cpu" label, and tmigr_build_info. Labels with many
// values (the callback, the owner CPU) only when asked for (ByFunction).
//
// The metrics are read at scrape time from the Watcher (a
// prometheus.Collector), under the lock its Follow holds while it changes,
// so a scrape sees the counters between two batches of events.
package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tmigr/tmigr/watch"
)

// Collector is a prometheus.Collector of a Watcher.
type Collector struct {
	w    *watch.Watcher
	lock sync.Locker
	// byFunction adds tmigr_foreign_timer_expirations_by_function_total.
	byFunction bool

	expirations, hrtimers, foreignSeconds, foreignIsolated *prometheus.Desc
	cpuInfo, inHierarchy, migrator                         *prometheus.Desc
	events, lost, buildInfo, byFunc                        *prometheus.Desc
}

// Options are what an exporter adds to the Watcher's metrics.
type Options struct {
	// Lock is held while the collector reads the Watcher: the one its
	// Follow holds.
	Lock sync.Locker
	// ByFunction exports the foreign timers by handler, owner CPU and
	// callback; it makes the Watcher track them.
	ByFunction bool
	// Version, Revision and GoVersion label tmigr_build_info; Kernel is
	// the machine's release.
	Version, Revision, GoVersion, Kernel string
}

// New returns a Collector of w.
func New(w *watch.Watcher, o Options) *Collector {
	if o.ByFunction {
		o.Lock.Lock()
		w.TrackFunctions()
		o.Lock.Unlock()
	}
	cpu := []string{"cpu"}
	build := prometheus.Labels{"version": o.Version, "revision": o.Revision, "goversion": o.GoVersion, "kernel": o.Kernel}
	return &Collector{
		w: w, lock: o.Lock, byFunction: o.ByFunction,
		expirations: prometheus.NewDesc("tmigr_timer_expirations_total",
			"Wheel timers that expired on the CPU: its own (kind=own) or other CPUs' it ran through the timer-migration hierarchy (kind=foreign).",
			[]string{"cpu", "kind"}, nil),
		hrtimers: prometheus.NewDesc("tmigr_hrtimer_expirations_total",
			"High-resolution timers that expired on the CPU (traced with --hrtimers, or on PREEMPT_RT).", cpu, nil),
		foreignSeconds: prometheus.NewDesc("tmigr_foreign_timer_seconds_total",
			"Time the CPU spent in other CPUs' timer callbacks (timer_expire_entry to timer_expire_exit).", cpu, nil),
		foreignIsolated: prometheus.NewDesc("tmigr_foreign_timer_on_isolated_total",
			"Other CPUs' wheel timers run by an isolated or nohz_full CPU: the housekeeping work isolation is meant to keep away.", cpu, nil),
		cpuInfo: prometheus.NewDesc("tmigr_cpu_info",
			"The CPU's class: housekeeping, isolated (isolcpus domain or an isolated cpuset partition), nohz_full, or isolated,nohz_full. Always 1.",
			[]string{"cpu", "class"}, nil),
		inHierarchy: prometheus.NewDesc("tmigr_cpu_in_hierarchy",
			"1 when the CPU is available in the timer-migration hierarchy, 0 when it is out (isolated from 6.19, offline, or a kernel before 6.9).", cpu, nil),
		migrator: prometheus.NewDesc("tmigr_cpu_migrator",
			"1 for each group of the hierarchy the CPU is migrator of, as far as the trace has shown (the migrator pulls the group's idle CPUs' timers).",
			[]string{"cpu", "group"}, nil),
		events: prometheus.NewDesc("tmigr_trace_events_total", "Trace events read.", nil, nil),
		lost: prometheus.NewDesc("tmigr_trace_lost_events_total",
			"Trace events the kernel's buffers lost: counts near a loss may be short.", nil, nil),
		buildInfo: prometheus.NewDesc("tmigr_build_info",
			"The tmigr build and the kernel release it watches. Always 1.", nil, build),
		byFunc: prometheus.NewDesc("tmigr_foreign_timer_expirations_by_function_total",
			"Other CPUs' wheel timers the CPU ran, by owner CPU and callback (--by-function).",
			[]string{"cpu", "owner", "function"}, nil),
	}
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.expirations, c.hrtimers, c.foreignSeconds, c.foreignIsolated,
		c.cpuInfo, c.inHierarchy, c.migrator, c.events, c.lost, c.buildInfo} {
		ch <- d
	}
	if c.byFunction {
		ch <- c.byFunc
	}
}

// Collect reads the Watcher and sends the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.lock.Lock()
	totals, events, lost := c.w.Totals()
	n := c.w.CPUs()
	classes := make([]string, n)
	avail := make([]bool, n)
	roles := make([][]string, n)
	for cpu := range n {
		classes[cpu], avail[cpu], roles[cpu] = c.w.Class(cpu), c.w.Available(cpu), c.w.Roles(cpu)
	}
	var byFunc map[watch.Foreign]uint64
	if c.byFunction {
		byFunc = c.w.ByFunction()
	}
	c.lock.Unlock()

	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for cpu, t := range totals {
		l := strconv.Itoa(cpu)
		counter(c.expirations, float64(t.Own), l, "own")
		counter(c.expirations, float64(t.Foreign), l, "foreign")
		counter(c.hrtimers, float64(t.HRTimers), l)
		counter(c.foreignSeconds, float64(t.ForeignNS)/1e9, l)
		if classes[cpu] != watch.Housekeeping {
			counter(c.foreignIsolated, float64(t.Foreign), l)
		}
		gauge(c.cpuInfo, 1, l, classes[cpu])
		gauge(c.inHierarchy, b2f(avail[cpu]), l)
		for _, g := range roles[cpu] {
			gauge(c.migrator, 1, l, g)
		}
	}
	counter(c.events, float64(events))
	counter(c.lost, float64(lost))
	ch <- prometheus.MustNewConstMetric(c.buildInfo, prometheus.GaugeValue, 1)
	for k, v := range byFunc {
		counter(c.byFunc, float64(v), strconv.Itoa(k.Handler), strconv.Itoa(k.Owner), k.Function)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
