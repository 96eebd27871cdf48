package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/lab"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// The compare: the structure of remote expiry, kernel against simulator.
//
// A recording shows which CPUs expired other CPUs' timers: the handler of a
// remote round prints tmigr_handle_remote for each group it visits (with
// the group's level) and tmigr_handle_remote_cpu for each CPU whose timers
// it expires there. Counted by (handler, target, level), that is the
// structure of timer migration on the machine: who pulls from whom, and
// how high up the hierarchy. Under emulation the kernel's timing is not a
// real machine's, and the simulator's is its own, so how often each pull
// happens differs; which pulls happen depends on the shape, the isolation,
// which CPUs are busy or idle, and where the timers are. Compare runs the
// simulator on the machine the recording's "# machine:" line describes,
// writes its trace with the kernel's tracepoints (sim.Config.Trace), and
// reads both traces with the same extractor, so that both sides are
// measured alike.
//
// The simulated machine has the recording's CPUs, nodes, HZ, isolation
// (isolcpus=, nohz_full= of the command line), the policy of its kernel's
// generation (pull for 6.9 to 6.18, pull-isolated from 6.19), PREEMPT_RT if
// the note says so, and the guest's load (workload.Loads: busy loops,
// periodic sleepers of the note's period, SCHED_FIFO ones on the note's
// fifo-sleepers). Its timers come from one of two sources:
//
//   - RecordedBackground: the recording's background (compare_background.go):
//     its own wheel timers, armed on the same CPUs, with the same flags and
//     timeouts, at the same moments, and its CPUs without a load active
//     when the recording shows them active in the hierarchy. The guest's
//     kernel threads and shells arm timers and keep CPUs awake where they
//     run; with the same timers on the same CPUs and the same CPUs awake,
//     what is left to differ is the model's decision, who expires them.
//   - HousekeepingMix: the simulator's housekeeping timer mix
//     (workload.Housekeeping), what "tmigr sim" runs: a quiet server's
//     timers, per housekeeping CPU, per node and per machine, the latter
//     on the first housekeeping CPU. It shows what the simulator predicts
//     from the shape alone.
//
// # Agreement
//
// The figure is over the set of pulls (handler, target, level) each side
// shows at least once: shared / union (the Jaccard index), overall and per
// level. Each pull counts once, however often it happened, because the
// counts are timing, which emulation changes; the structure is the set. A
// pull that happened once on one side and never on the other is a real
// difference (often of timing or timer placement, rarely of the model), so
// the report lists every pull with its counts on each side to look at. The
// weighted figure, Σ min(kernel share, simulator share) over the pulls
// (1 − the total variation distance between the two distributions of
// pulls), says how much of the traffic falls on pulls both sides show.
// Both figures are 1 when neither side pulls anything.

// TimerSource is where the simulated machine's timers come from.
type TimerSource string

const (
	// RecordedBackground re-arms the recording's wheel timers, and runs its
	// CPUs without a load when the recording shows them active.
	RecordedBackground TimerSource = "recorded"
	// HousekeepingMix runs the simulator's housekeeping timer mix.
	HousekeepingMix TimerSource = "mix"
)

// Pull is one kind of remote expiry: Handler expired Target's timers in a
// remote round, at the group of level Level (-1 when the recording began
// in the middle of the round, before its tmigr_handle_remote line).
type Pull struct {
	Handler int `json:"handler"`
	Target  int `json:"target"`
	Level   int `json:"level"`
}

// PullCount is a pull and how often it happened.
type PullCount struct {
	Pull
	Count int `json:"count"`
}

// Structure is the remote expiries of a trace, by pull.
type Structure map[Pull]int

// ExtractStructure counts the remote expiries of the events with a
// timestamp in [from, to): each tmigr_handle_remote_cpu line is the
// handler's (the CPU that logged it) expiring the CPU it names, at the
// level of the group in the handler's latest tmigr_handle_remote line.
func ExtractStructure(events []ftrace.Event, from, to int64) Structure {
	s := Structure{}
	level := map[int]int{} // by handler CPU: the level of its latest round line
	for i := range events {
		ev := &events[i]
		switch d := ev.Data.(type) {
		case ftrace.TmigrHandleRemote:
			level[ev.CPU] = d.Lvl
		case ftrace.TmigrHandleRemoteCPU:
			if ev.TS < from || ev.TS >= to {
				continue
			}
			l, ok := level[ev.CPU]
			if !ok {
				l = -1
			}
			s[Pull{Handler: ev.CPU, Target: d.CPU, Level: l}]++
		}
	}
	return s
}

// Sorted returns the pulls by level, handler and target.
func (s Structure) Sorted() []PullCount {
	out := make([]PullCount, 0, len(s))
	for p, n := range s {
		out = append(out, PullCount{p, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pull.less(out[j].Pull) })
	return out
}

func (p Pull) less(q Pull) bool {
	if p.Level != q.Level {
		return p.Level < q.Level
	}
	if p.Handler != q.Handler {
		return p.Handler < q.Handler
	}
	return p.Target < q.Target
}

// Total is the number of remote expiries.
func (s Structure) Total() int {
	n := 0
	for _, c := range s {
		n += c
	}
	return n
}

// Agreement is how far two structures agree; see the comment at the top.
type Agreement struct {
	Shared   int     `json:"shared"` // pulls both sides show
	Union    int     `json:"union"`  // pulls either side shows
	Pairs    float64 `json:"pairs"`  // Shared / Union; 1 for two empty sides
	Weighted float64 `json:"weighted"`
	// HandlersShared and HandlersUnion restrict the pulls to the targets
	// both sides pulled: given that a CPU's timers were pulled on both
	// sides, do they agree on who pulled them, and at which level? Which
	// CPUs get pulled at all depends on where the timers are and when
	// their CPUs sleep; who pulls them is the hierarchy's decision.
	HandlersShared int `json:"handlers_shared"`
	HandlersUnion  int `json:"handlers_union"`
	// Levels is the pulls' agreement per level of the hierarchy.
	Levels []LevelAgreement `json:"levels"`
}

// LevelAgreement is the agreement on the pulls of one level.
type LevelAgreement struct {
	Level  int `json:"level"`
	Shared int `json:"shared"`
	Union  int `json:"union"`
}

// Agree compares two structures.
func Agree(a, b Structure) Agreement {
	var ag Agreement
	levels := map[int]*LevelAgreement{}
	lv := func(l int) *LevelAgreement {
		if levels[l] == nil {
			levels[l] = &LevelAgreement{Level: l}
		}
		return levels[l]
	}
	ta, tb := float64(a.Total()), float64(b.Total())
	for p, na := range a {
		ag.Union++
		lv(p.Level).Union++
		if nb, ok := b[p]; ok {
			ag.Shared++
			lv(p.Level).Shared++
			ag.Weighted += min(float64(na)/ta, float64(nb)/tb)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			ag.Union++
			lv(p.Level).Union++
		}
	}
	targetsA, targetsB := map[int]bool{}, map[int]bool{}
	for p := range a {
		targetsA[p.Target] = true
	}
	for p := range b {
		targetsB[p.Target] = true
	}
	common := func(p Pull) bool { return targetsA[p.Target] && targetsB[p.Target] }
	for p := range a {
		if common(p) {
			ag.HandlersUnion++
			if _, ok := b[p]; ok {
				ag.HandlersShared++
			}
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok && common(p) {
			ag.HandlersUnion++
		}
	}
	if ag.Union == 0 {
		ag.Pairs, ag.Weighted = 1, 1
	} else {
		ag.Pairs = float64(ag.Shared) / float64(ag.Union)
	}
	for _, l := range levels {
		ag.Levels = append(ag.Levels, *l)
	}
	sort.Slice(ag.Levels, func(i, j int) bool { return ag.Levels[i].Level < ag.Levels[j].Level })
	return ag
}

// String prints the pair figure as "3/4 (0.75)".
func (a Agreement) String() string {
	return fmt.Sprintf("%d/%d (%.2f)", a.Shared, a.Union, a.Pairs)
}

// CompareOptions tunes Compare. The zero value compares the kernel with
// both timer sources.
type CompareOptions struct {
	// Sources are the simulations to run (default: RecordedBackground, then
	// HousekeepingMix).
	Sources []TimerSource
	// Seed seeds the simulator (default 1).
	Seed uint64
	// Warmup is simulated before the recording's span begins (default
	// 100ms): the loads start, idle CPUs go idle.
	Warmup time.Duration
	// Duration is the simulated span (default: the recording's, from its
	// first event to its last).
	Duration time.Duration
	// Check runs the hierarchy's invariant checker after every step of
	// the simulation (slow).
	Check bool
	// SimTraces, when set, receive the simulator's trace of each source.
	SimTraces map[TimerSource]io.Writer
}

// Side is one side of a comparison: its pulls.
type Side struct {
	Name   string      `json:"name"`
	Timers TimerSource `json:"timers,omitempty"`
	Total  int         `json:"total"`
	Pulls  []PullCount `json:"pulls"`
	// Agreement is with the kernel (nil on the kernel's side).
	Agreement *Agreement `json:"agreement,omitempty"`

	s Structure
}

// Comparison is the outcome of Compare.
type Comparison struct {
	File      string        `json:"file"`
	Machine   string        `json:"machine"`
	Policy    string        `json:"policy"`
	PreemptRT bool          `json:"preempt_rt"`
	Span      time.Duration `json:"span_ns"` // the recording's
	Kernel    Side          `json:"kernel"`
	Sims      []Side        `json:"sims"`
	// Prediction is what the kernel's rules determine about who may pull
	// on the machine, and the check of the kernel's pulls against it
	// (predict.go).
	Prediction *PredictionCheck `json:"prediction"`
}

// Sim returns the simulation of the given timer source, or nil.
func (c *Comparison) Sim(src TimerSource) *Side {
	for i := range c.Sims {
		if c.Sims[i].Timers == src {
			return &c.Sims[i]
		}
	}
	return nil
}

// Compare simulates the machine of a recording and compares the structure
// of its remote expiries with the kernel's; see the comment at the top of
// this file.
func Compare(t *replay.Trace, o CompareOptions) (*Comparison, error) {
	m := t.Header.Machine
	if m == nil {
		return nil, errors.New("the trace has no \"# machine:\" line: compare needs the machine it ran on")
	}
	if len(t.Events) == 0 {
		return nil, errors.New("the trace holds no events")
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Warmup == 0 {
		o.Warmup = 100 * time.Millisecond
	}
	if o.Warmup < 0 || o.Duration < 0 {
		return nil, errors.New("compare: negative warm-up or duration")
	}
	if len(o.Sources) == 0 {
		o.Sources = []TimerSource{RecordedBackground, HousekeepingMix}
	}
	first, last := t.Events[0].TS, t.Events[0].TS
	for i := range t.Events {
		first, last = min(first, t.Events[i].TS), max(last, t.Events[i].TS)
	}
	span := time.Duration(last - first + 1)
	if o.Duration == 0 {
		o.Duration = span
	}
	cfg, loads, err := simConfig(m, t)
	if err != nil {
		return nil, err
	}
	cfg.Seed, cfg.Warmup, cfg.Duration, cfg.Check = o.Seed, o.Warmup, o.Duration, o.Check
	// The recording's run-time changes (at=), at the same moments of the
	// span: they count from the guest's start marker, and the span's first
	// event is simulated at the end of the warm-up.
	start := replay.ChangesStart(t.Events)
	offline := map[int]bool{}
	for _, ch := range m.At {
		// Writing 1 to an online CPU's online file changes nothing
		// (device_online returns at once), nor 0 to an offline one's: an
		// online after an offline the kernel refused, which the machine
		// line notes but does not list, is such a write.
		switch ch.Kind {
		case ftrace.ChangeOnline:
			if !offline[ch.CPU] {
				continue
			}
			delete(offline, ch.CPU)
		case ftrace.ChangeOffline:
			if offline[ch.CPU] {
				continue
			}
			offline[ch.CPU] = true
		}
		at := o.Warmup + time.Duration(start+int64(ch.At)-first)
		if at < 0 || at >= cfg.Warmup+cfg.Duration {
			continue // before or after what is simulated
		}
		a, err := sim.ActionOf(ch, at)
		if err != nil {
			return nil, fmt.Errorf("machine: at=: %v", err)
		}
		cfg.Actions = append(cfg.Actions, a)
	}
	kernel := ExtractStructure(t.Events, first, last+1)
	c := &Comparison{File: t.File, Machine: m.String(), Policy: cfg.Policy.String(), PreemptRT: cfg.PreemptRT,
		Span: span, Kernel: side("kernel", "", kernel)}
	if c.Prediction, err = CheckPrediction(t); err != nil {
		return nil, fmt.Errorf("predicting %s: %v", t.File, err)
	}
	for _, src := range o.Sources {
		var timers sim.Workload
		switch src {
		case RecordedBackground:
			timers = newRecordedBackground(t.Events, first, last, int64(o.Warmup), loads.Busy.Or(loads.Sleepers))
		case HousekeepingMix:
			timers = workload.NewHousekeeping()
		default:
			return nil, fmt.Errorf("compare: unknown timer source %q (want %q or %q)", src, RecordedBackground, HousekeepingMix)
		}
		var buf bytes.Buffer
		run := cfg
		run.Trace = &buf
		if _, err := sim.Run(run, loads, timers); err != nil {
			return nil, fmt.Errorf("simulating %s: %v", t.File, err)
		}
		if w := o.SimTraces[src]; w != nil {
			if _, err := w.Write(buf.Bytes()); err != nil {
				return nil, err
			}
		}
		simTrace, err := replay.Read(&buf)
		if err != nil {
			return nil, fmt.Errorf("reading the simulator's trace: %v", err)
		}
		w := int64(o.Warmup)
		s := ExtractStructure(simTrace.Events, w, w+int64(o.Duration))
		sd := side("sim ("+sourceName(src)+")", src, s)
		ag := Agree(kernel, s)
		sd.Agreement = &ag
		c.Sims = append(c.Sims, sd)
	}
	return c, nil
}

func sourceName(src TimerSource) string {
	if src == RecordedBackground {
		return "recorded background"
	}
	return "housekeeping mix"
}

func side(name string, src TimerSource, s Structure) Side {
	return Side{Name: name, Timers: src, Total: s.Total(), Pulls: s.Sorted(), s: s}
}

// simConfig is the simulated machine of a recording's machine line, and
// its load.
func simConfig(m *ftrace.Machine, t *replay.Trace) (sim.Config, *workload.Loads, error) {
	load, err := replay.LoadOf(m)
	if err != nil {
		return sim.Config{}, nil, err
	}
	iso, err := m.Isolation()
	if err != nil {
		return sim.Config{}, nil, fmt.Errorf("machine: command line: %v", err)
	}
	km, err := modelOf(m.Kernel)
	if err != nil {
		return sim.Config{}, nil, err
	}
	policy := km.Policy(true)
	nodeOf := make([]int, m.CPUs)
	for c := range nodeOf {
		nodeOf[c] = m.Node(c)
	}
	rt := load.PreemptRT
	for i := 0; i < len(t.Events) && !rt; i++ {
		rt = strings.HasPrefix(t.Events[i].Task, "ktimers/")
	}
	p, err := sim.PlatformByName("kvm-guest")
	if err != nil {
		return sim.Config{}, nil, err
	}
	cfg := sim.Config{CPUs: m.CPUs, Nodes: m.Nodes, NodeOf: nodeOf, HZ: m.HZ,
		Isolcpus: iso.Domain, NohzFull: iso.NohzFull, Policy: policy, ImbalancedNUMA: km.ImbalancedNUMA(),
		PreemptRT: rt, Sleepers: hrtimer.SleepersByPolicy, Platform: p.Name, Costs: p.Costs}
	loads := &workload.Loads{Busy: load.Busy, Sleepers: load.Sleepers, FIFO: load.FIFOSleepers,
		Period: load.Period, Absolute: load.Absolute}
	if loads.Period == 0 {
		loads.Period = lab.DefaultPeriod // the recordings from before the note said it
	}
	if err := loads.Validate(m.CPUs); err != nil {
		return sim.Config{}, nil, fmt.Errorf("machine: %v", err)
	}
	return cfg, loads, nil
}

// modelOf is the kernel model of a recording's release (package kernel);
// a trace without one is taken as the replay takes it (replay.DefaultKernel).
func modelOf(release string) (kernel.Model, error) {
	if release == "" {
		return kernel.For(replay.DefaultKernel), nil
	}
	rel, err := kernel.ParseRelease(release)
	if err != nil {
		return kernel.Model{}, fmt.Errorf("machine: %v", err)
	}
	return kernel.For(rel.Version), nil
}

// WriteText prints the comparison: the pulls of every side, level by
// level, handler by handler (targets as CPU:count), then the agreement,
// then the prediction and its check.
//
//	level  handler  kernel            sim (recorded timers)  sim (housekeeping mix)
//	0      1        0:4 2:8           0:5 2:7                0:36
func (c *Comparison) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  machine: %s\n", c.File, c.Machine)
	rt := ""
	if c.PreemptRT {
		rt = ", PREEMPT_RT"
	}
	fmt.Fprintf(&b, "  simulated: policy %s%s, %.3f s\n", c.Policy, rt, c.Span.Seconds())
	sides := append([]Side{c.Kernel}, c.Sims...)
	type row struct {
		level, handler int
		cells          []string
	}
	keys := map[[2]int]*row{}
	var rows []*row
	for si, s := range sides {
		for _, p := range s.Pulls {
			k := [2]int{p.Level, p.Handler}
			r := keys[k]
			if r == nil {
				r = &row{level: p.Level, handler: p.Handler, cells: make([]string, len(sides))}
				keys[k] = r
				rows = append(rows, r)
			}
			if r.cells[si] != "" {
				r.cells[si] += " "
			}
			r.cells[si] += fmt.Sprintf("%d:%d", p.Target, p.Count)
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].level < rows[j].level || rows[i].level == rows[j].level && rows[i].handler < rows[j].handler
	})
	width := make([]int, len(sides))
	for i, s := range sides {
		width[i] = len(s.Name)
		for _, r := range rows {
			width[i] = max(width[i], len(r.cells[i]))
		}
	}
	var line strings.Builder
	endLine := func() {
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
		line.Reset()
	}
	fmt.Fprintf(&line, "  %-5s  %-7s", "level", "handler")
	for i, s := range sides {
		fmt.Fprintf(&line, "  %-*s", width[i], s.Name)
	}
	endLine()
	if len(rows) == 0 {
		b.WriteString("  (no remote expiry on any side)\n")
	}
	for _, r := range rows {
		lvl := strconv.Itoa(r.level)
		if r.level < 0 {
			lvl = "?"
		}
		fmt.Fprintf(&line, "  %-5s  %-7d", lvl, r.handler)
		for i, cell := range r.cells {
			if cell == "" {
				cell = "-"
			}
			fmt.Fprintf(&line, "  %-*s", width[i], cell)
		}
		endLine()
	}
	fmt.Fprintf(&b, "  remote expiries: kernel %d", c.Kernel.Total)
	for _, s := range c.Sims {
		fmt.Fprintf(&b, ", %s %d", s.Name, s.Total)
	}
	b.WriteString("\n")
	for _, s := range c.Sims {
		a := s.Agreement
		fmt.Fprintf(&b, "  agreement, %s: pulls %s, handlers of the common targets %d/%d, weighted %.2f",
			s.Name, a, a.HandlersShared, a.HandlersUnion, a.Weighted)
		for _, l := range a.Levels {
			lvl := strconv.Itoa(l.Level)
			if l.Level < 0 {
				lvl = "?"
			}
			fmt.Fprintf(&b, "; level %s %d/%d", lvl, l.Shared, l.Union)
		}
		b.WriteString("\n")
	}
	if c.Prediction != nil {
		b.WriteString(c.Prediction.Text())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
