package viz

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WritePerfetto writes the timeline as Chrome trace-event JSON (the Trace
// Event Format that ui.perfetto.dev and chrome://tracing open):
//
//	process "CPU 3 (isolated)"         pid 10003
//	  thread "hierarchy state"         active / idle / inactive / unknown ... (X slices)
//	  thread "migrator"                "migrator of GRP0:0, GRP1:0" while it was
//	  thread "timers"                  one slice per wheel timer it ran, named by function
//	  thread "hrtimers"                one per hrtimer ("hrtimers 2" for one that interrupted another)
//	process "timer-migration hierarchy" pid 1
//	  thread "GRP0:0 (CPUs 0-7)"       its migrator over time: "CPU 1", "GRP0:1 → CPU 9", "none"
//
// A timer run by another CPU than its owner is a flow arrow ("s" bound to
// the owner's state slice, "f" with binding point "e" bound to the
// handler's timer slice) from the owner's track to the handler's.
// Timestamps are the trace clock in µs; the state slices cover the whole
// trace, "unknown" where it does not show the state. Viewers bind a flow
// event to the slice open at its timestamp and order events by timestamp,
// so slices of one track never share a timestamp: a slice that would start
// before its predecessor ended (the simulator prints no timer_expire_exit,
// so its slices get a nominal 1 µs) is moved to that end, and its args say
// by how much.
func WritePerfetto(w io.Writer, tl *Timeline) error {
	pw := &perfettoWriter{w: bufio.NewWriterSize(w, 256<<10), tl: tl}
	pw.raw(`{"traceEvents":[` + "\n")
	pw.metadata()
	flows := pw.timers()
	pw.states(flows)
	pw.roles()
	pw.groups()
	pw.raw("\n],\n")
	other, err := json.Marshal(pw.otherData())
	if err != nil {
		return err
	}
	pw.raw(`"otherData":`)
	pw.raw(string(other))
	pw.raw("}\n")
	if pw.err != nil {
		return pw.err
	}
	return pw.w.Flush()
}

// Track numbers. A CPU is a process of its own; its tracks are threads.
const (
	hierPID    = 1
	cpuPIDBase = 10000
	groupTID   = 200000 // + group index
	tidState   = 1
	tidRoles   = 2
	tidTimers  = 3
	tidHR      = 4 // + nesting depth
	maxHRDepth = 4
)

func cpuPID(c int) int        { return cpuPIDBase + c }
func cpuTID(c, track int) int { return cpuPID(c)*10 + track }

// Display quanta, ns: the shortest slice drawn, where a flow event sits
// inside its slice, and the nominal length of a slice whose end the trace
// does not print. Viewers read µs with three decimals as doubles; these
// keep clear of their rounding.
const (
	minDur      = 20
	flowOffset  = 10
	stateMargin = 5
	nominalDur  = 1000
)

type perfettoWriter struct {
	w     *bufio.Writer
	tl    *Timeline
	n     int
	err   error
	flows int
}

type traceEvent struct {
	Name string      `json:"name"`
	Cat  string      `json:"cat,omitempty"`
	Ph   string      `json:"ph"`
	TS   json.Number `json:"ts,omitempty"`
	Dur  json.Number `json:"dur,omitempty"`
	PID  int         `json:"pid"`
	TID  *int        `json:"tid,omitempty"`
	ID   int         `json:"id,omitempty"`
	BP   string      `json:"bp,omitempty"`
	S    string      `json:"s,omitempty"`
	Args any         `json:"args,omitempty"`
}

func (pw *perfettoWriter) raw(s string) {
	if pw.err == nil {
		_, pw.err = pw.w.WriteString(s)
	}
}

func (pw *perfettoWriter) emit(ev traceEvent) {
	if pw.err != nil {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		pw.err = err
		return
	}
	if pw.n > 0 {
		pw.raw(",\n")
	}
	pw.n++
	if pw.err == nil {
		_, pw.err = pw.w.Write(b)
	}
}

// us prints ns as µs with three decimals.
func us(ns int64) json.Number {
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	return json.Number(fmt.Sprintf("%s%d.%03d", sign, ns/1000, ns%1000))
}

func tid(t int) *int { return &t }

func (pw *perfettoWriter) slice(pid, t int, cat, name string, start, dur int64, args any) {
	pw.emit(traceEvent{Name: name, Cat: cat, Ph: "X", TS: us(start), Dur: us(dur), PID: pid, TID: tid(t), Args: args})
}

func (pw *perfettoWriter) meta(pid int, t *int, name, value string, sortIndex int) {
	pw.emit(traceEvent{Name: name, Ph: "M", PID: pid, TID: t, Args: map[string]string{"name": value}})
	sortName := "process_sort_index"
	if t != nil {
		sortName = "thread_sort_index"
	}
	pw.emit(traceEvent{Name: sortName, Ph: "M", PID: pid, TID: t, Args: map[string]int{"sort_index": sortIndex}})
}

// CPUTitle names a CPU with its class: "CPU 3 (isolated)", "CPU 5
// (isolated, excluded)".
func CPUTitle(c *CPU) string {
	s := "CPU " + strconv.Itoa(c.CPU) + " (" + c.Class()
	if c.Excluded {
		s += ", excluded"
	}
	return s + ")"
}

func (pw *perfettoWriter) metadata() {
	tl := pw.tl
	pw.meta(hierPID, nil, "process_name", "timer-migration hierarchy: each group's migrator", 0)
	for g := range tl.Groups {
		pw.meta(hierPID, tid(groupTID+g), "thread_name", tl.Groups[g].Describe(), g)
	}
	for c := range tl.CPUs {
		cp := &tl.CPUs[c]
		pw.meta(cpuPID(c), nil, "process_name", CPUTitle(cp), c+1)
		pw.meta(cpuPID(c), tid(cpuTID(c, tidState)), "thread_name", "hierarchy state", tidState)
		if len(cp.Roles) > 0 {
			pw.meta(cpuPID(c), tid(cpuTID(c, tidRoles)), "thread_name", "migrator", tidRoles)
		}
	}
}

// placed is a slice as drawn: its track and display start and length.
type placed struct {
	e          *Expiry
	start, dur int64
	moved      int64
}

// place lays out one track's expiries (in trace order) so that none
// starts before the previous one ended.
func place(list []*Expiry) []placed {
	sort.SliceStable(list, func(i, j int) bool { return list[i].Start < list[j].Start })
	out := make([]placed, len(list))
	end := int64(-1 << 62)
	for i, e := range list {
		start := max(e.Start, end)
		var dur int64
		if e.End >= e.Start {
			dur = max(e.End-e.Start, minDur)
		} else {
			dur = nominalDur
			if i+1 < len(list) && list[i+1].Start > start {
				dur = min(dur, list[i+1].Start-start)
			}
			dur = max(dur, minDur)
		}
		out[i] = placed{e: e, start: start, dur: dur, moved: start - e.Start}
		end = start + dur
	}
	return out
}

// hrDepth returns each hrtimer expiry's nesting depth on its CPU.
func hrDepth(list []*Expiry) []int {
	depth := make([]int, len(list))
	var open []int64 // ends of the enclosing expiries
	for i, e := range list {
		for len(open) > 0 && open[len(open)-1] <= e.Start {
			open = open[:len(open)-1]
		}
		depth[i] = min(len(open), maxHRDepth)
		end := e.End
		if end < e.Start {
			end = e.Start
		}
		open = append(open, end)
	}
	return depth
}

// timers writes the expiry slices and returns where the flow of each
// remote one ends: inside its slice on the handler's timers track.
func (pw *perfettoWriter) timers() map[*Expiry]int64 {
	tl := pw.tl
	wheel := make([][]*Expiry, len(tl.CPUs))
	hr := make([][]*Expiry, len(tl.CPUs))
	for i := range tl.Expiries {
		e := &tl.Expiries[i]
		if e.Handler < 0 || e.Handler >= len(tl.CPUs) {
			continue
		}
		if e.Kind == HRTimer {
			hr[e.Handler] = append(hr[e.Handler], e)
		} else {
			wheel[e.Handler] = append(wheel[e.Handler], e)
		}
	}
	flows := map[*Expiry]int64{}
	for c := range tl.CPUs {
		if len(wheel[c]) > 0 {
			pw.meta(cpuPID(c), tid(cpuTID(c, tidTimers)), "thread_name", "timers", tidTimers)
			for _, p := range place(wheel[c]) {
				pw.timerSlice(c, tidTimers, p)
				if p.e.Remote() {
					flows[p.e] = p.start + flowOffset
				}
			}
		}
		if len(hr[c]) == 0 {
			continue
		}
		list := hr[c]
		sort.SliceStable(list, func(i, j int) bool { return list[i].Start < list[j].Start })
		depth := hrDepth(list)
		byDepth := make([][]*Expiry, maxHRDepth+1)
		for i, e := range list {
			byDepth[depth[i]] = append(byDepth[depth[i]], e)
		}
		for d, l := range byDepth {
			if len(l) == 0 {
				continue
			}
			name := "hrtimers"
			if d > 0 {
				name = fmt.Sprintf("hrtimers %d (interrupting those above)", d+1)
			}
			pw.meta(cpuPID(c), tid(cpuTID(c, tidHR+d)), "thread_name", name, tidHR+d)
			for _, p := range place(l) {
				pw.timerSlice(c, tidHR+d, p)
			}
		}
	}
	return flows
}

func cpuName(c int) string { return "CPU " + strconv.Itoa(c) }

// timerArgs are a timer slice's args.
type timerArgs struct {
	Owner     string `json:"owner"`
	Handler   string `json:"handler"`
	OwnerFrom string `json:"owner_from"`
	Timer     string `json:"timer"`
	Expires   string `json:"expires,omitempty"`
	Now       string `json:"now"`
	Late      string `json:"late,omitempty"`
	QueuedBy  string `json:"queued_by,omitempty"`
	Line      int    `json:"line,omitempty"`
	Duration  string `json:"duration,omitempty"`
	Moved     string `json:"moved,omitempty"`
}

func (pw *perfettoWriter) timerSlice(c, track int, p placed) {
	e := p.e
	a := timerArgs{Owner: cpuName(e.Owner), Handler: cpuName(e.Handler), OwnerFrom: e.From.String(),
		Timer: fmt.Sprintf("%016x", e.Timer), Line: e.Line}
	unit := " jiffies"
	if e.Kind == HRTimer {
		unit = " ns"
	}
	a.Now = strconv.FormatInt(e.Now, 10) + unit
	if e.HasDue {
		a.Expires = strconv.FormatInt(e.Due, 10) + unit
	}
	if late, ok := e.Late(pw.tl.HZ); ok {
		a.Late = lateText(e, late)
	}
	if e.QueuedBy >= 0 {
		a.QueuedBy = cpuName(e.QueuedBy)
	}
	if e.End < e.Start {
		a.Duration = "unknown: the trace has no expire_exit for it"
	}
	if p.moved > 0 {
		a.Moved = fmt.Sprintf("drawn %d ns later than it started, after the slice before it", p.moved)
	}
	cat := "timer"
	switch {
	case e.Kind == HRTimer:
		cat = "hrtimer"
	case e.Remote():
		cat = "timer,remote"
	}
	name := e.Function
	if name == "" {
		name = "timer " + a.Timer
	}
	pw.slice(cpuPID(c), cpuTID(c, track), cat, name, p.start, p.dur, a)
}

// lateText prints lateness: "2 jiffies (8 ms)", "1.250 µs".
func lateText(e *Expiry, ns int64) string {
	if e.Kind == HRTimer {
		return fmt.Sprintf("%s µs", us(ns))
	}
	return fmt.Sprintf("%d jiffies (%s ms) after it was due, %d after its wheel bucket", e.Now-e.Due,
		strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64), e.Now-e.Bucket)
}

// displaySpans returns a CPU's state slices as drawn: covering from to
// to, "unknown" in the gaps, none shorter than minDur (a shorter one is
// drawn as part of the one before). A state known at the end of the trace
// (end) is drawn on to to.
func displaySpans(states []StateSpan, from, end, to int64) []StateSpan {
	var out []StateSpan
	add := func(sp StateSpan) {
		if sp.End <= sp.Start {
			return
		}
		if n := len(out); n > 0 && (sp.End-sp.Start < minDur || out[n-1].End-out[n-1].Start < minDur) {
			out[n-1].End = sp.End
			return
		}
		out = append(out, sp)
	}
	t := from
	for _, sp := range states {
		if sp.Start > t {
			add(StateSpan{Start: t, End: sp.Start, State: Unknown})
		}
		sp.Start = max(sp.Start, t)
		add(sp)
		t = max(t, sp.End)
	}
	if n := len(out); n > 0 && t == end && out[n-1].End == end {
		out[n-1].End = to
	} else {
		add(StateSpan{Start: t, End: to, State: Unknown})
	}
	if n := len(out); n > 0 && out[n-1].End-out[n-1].Start < minDur {
		out[n-1].End = out[n-1].Start + minDur
	}
	return out
}

type stateArgs struct {
	Inferred string `json:"inferred,omitempty"`
	Note     string `json:"note,omitempty"`
}

type flowPoint struct {
	ts int64
	e  *Expiry
}

// states writes each CPU's state slices and the flow starts of the remote
// expiries of its timers, bound to them.
func (pw *perfettoWriter) states(flows map[*Expiry]int64) {
	tl := pw.tl
	from, to := tl.Start, tl.End+nominalDur+minDur
	starts := make([][]flowPoint, len(tl.CPUs))
	for i := range tl.Expiries {
		e := &tl.Expiries[i]
		if ts, ok := flows[e]; ok && e.Owner >= 0 && e.Owner < len(tl.CPUs) {
			starts[e.Owner] = append(starts[e.Owner], flowPoint{ts, e})
		}
	}
	id := 0
	for c := range tl.CPUs {
		spans := displaySpans(tl.CPUs[c].States, from, tl.End, to)
		for _, sp := range spans {
			var a *stateArgs
			switch {
			case sp.Inferred:
				a = &stateArgs{Inferred: "the CPU printed nothing before the first event that shows this state"}
			case sp.State == Unknown:
				a = &stateArgs{Note: "the trace does not show the CPU's state here"}
			case sp.State == Inactive:
				a = &stateArgs{Note: "its group's active mask shows it not active: idle, or out of the hierarchy"}
			}
			name := sp.State.String()
			if a != nil && a.Inferred != "" {
				name += " (inferred)"
			}
			pw.slice(cpuPID(c), cpuTID(c, tidState), "state", name, sp.Start, sp.End-sp.Start, a)
		}
		for _, l := range tl.Lost {
			if l.CPU != c {
				continue
			}
			name := "buffer started (earlier events overwritten)"
			if l.Count != 0 {
				name = "LOST " + lostCount(l.Count)
			}
			pw.emit(traceEvent{Name: name, Cat: "lost", Ph: "i", S: "t", TS: us(l.TS), PID: cpuPID(c), TID: tid(cpuTID(c, tidState))})
		}
		fp := starts[c]
		sort.SliceStable(fp, func(i, j int) bool { return fp[i].e.Start < fp[j].e.Start })
		k := 0
		for _, f := range fp {
			t := f.e.Start
			for k+1 < len(spans) && spans[k].End <= t {
				k++
			}
			sp := spans[k]
			ts := min(max(t, sp.Start+stateMargin), sp.End-stateMargin)
			id++
			pw.flows++
			pw.emit(traceEvent{Name: "remote expiry", Cat: "pull", Ph: "s", TS: us(ts), PID: cpuPID(c), TID: tid(cpuTID(c, tidState)), ID: id})
			h := f.e.Handler
			pw.emit(traceEvent{Name: "remote expiry", Cat: "pull", Ph: "f", BP: "e", TS: us(f.ts), PID: cpuPID(h), TID: tid(cpuTID(h, tidTimers)), ID: id})
		}
	}
}

// roles writes each CPU's migrator slices.
func (pw *perfettoWriter) roles() {
	tl := pw.tl
	for c := range tl.CPUs {
		for _, r := range tl.CPUs[c].Roles {
			names := make([]string, 0, len(r.Groups))
			for _, g := range r.Groups {
				if g >= 0 && g < len(tl.Groups) {
					names = append(names, tl.Groups[g].Name)
				}
			}
			pw.slice(cpuPID(c), cpuTID(c, tidRoles), "migrator", "migrator of "+strings.Join(names, ", "), r.Start, max(r.End-r.Start, 1), nil)
		}
	}
}

type migratorArgs struct {
	ChildBit int    `json:"child_bit"`
	CPU      string `json:"cpu,omitempty"`
}

// MigratorText names a group's migrator: "CPU 3", "GRP0:1 → CPU 9",
// "GRP0:1", "none".
func (tl *Timeline) MigratorText(g int, m MigratorSpan) string {
	if m.Child < 0 {
		return "none"
	}
	ch := tl.Groups[g].child(m.Child)
	switch {
	case ch.CPU >= 0:
		return cpuName(ch.CPU)
	case ch.Group >= 0 && m.CPU >= 0:
		return tl.Groups[ch.Group].Name + " → " + cpuName(m.CPU)
	case ch.Group >= 0:
		return tl.Groups[ch.Group].Name
	}
	return "child " + strconv.Itoa(m.Child)
}

// groups writes each group's migrator slices.
func (pw *perfettoWriter) groups() {
	tl := pw.tl
	for g := range tl.Groups {
		for _, m := range tl.Groups[g].Migrators {
			a := migratorArgs{ChildBit: m.Child}
			if m.CPU >= 0 {
				a.CPU = cpuName(m.CPU)
			}
			pw.slice(hierPID, groupTID+g, "group", tl.MigratorText(g, m), m.Start, max(m.End-m.Start, 1), a)
		}
	}
}

func (pw *perfettoWriter) otherData() map[string]any {
	tl := pw.tl
	d := map[string]any{
		"generator":       "tmigr",
		"remote_expiries": pw.flows,
		"clock":           "timestamps are the trace's clock in µs",
	}
	if tl.Machine != nil {
		d["machine"] = tl.Machine.String()
	}
	if len(tl.Warnings) > 0 {
		d["warnings"] = tl.Warnings
	}
	if tl.FromMachine {
		d["hierarchy"] = "the groups the kernel builds for the machine line"
	} else {
		d["hierarchy"] = "the groups the trace shows, pieced together from its group pointers"
	}
	return d
}
