package hier

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/tmigr/tmigr/cpumask"
)

// The scenario files in testdata/scenarios drive a hierarchy with these commands
// (every argument is key=value unless noted):
//
//	topo cpus=N [nodes=K | node-cpus=L;L;..] [exclude-isolated] [isolcpus=L]
//	     [nohz_full=L] [cpuset=L] [timekeeper=C] [prepare=L|none]
//	                              new hierarchy, prepare CPUs (default all,
//	                              ascending); prints boot line and drawing
//	prepare cpu=C                 Prepare
//	online cpus=L [idle]          SetAvailable for each (base idle or not)
//	offline cpu=C                 ClearAvailable
//	timer cpu=C at=T              queue a global timer on C's fake wheel
//	cancel cpu=C at=T             remove it
//	activate cpu=C
//	deactivate cpu=C [next=T]     next defaults to C's first fake timer
//	new-timer cpu=C [next=T]      idem
//	handle-remote cpu=C now=T
//	requires cpu=C now=T          RequiresHandleRemote
//	quick-check cpu=C next=T
//	exclude cpus=L                ExcludeIsolated
//	init-isolation                InitIsolation
//	set-isolation [isolcpus=L] [nohz_full=L] [cpuset=L] [timekeeper=C]
//	state                         print State
//	drawing                       print Drawing
//	resume cpu=C                  resume a paused call of C
//
// T is a number or "max". Calls that return print "-> value". Adding
// "trace" prints the tracepoints the call emitted (TextTracer format).
// Adding "pause=POINT@GRP" runs the call on its own goroutine and stops it
// at the hook POINT (inactive-cas, active-cas, update-lock) in group GRP,
// or "pause=remote-expire" / "pause=remote-relock" before / after a remote
// expiry runs the target's timers; "resume" lets it go on. After every command the state is printed (unless "quiet") and,
// if nothing is paused, the hierarchy is checked (Check).
func TestScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/scenarios/*.txt")
	if len(files) < 5 {
		t.Fatalf("found %d scenario files in testdata/scenarios, want at least 5", len(files))
	}
	datadriven.Walk(t, "testdata/scenarios", func(t *testing.T, path string) {
		s := newScenario(t)
		defer s.close()
		datadriven.RunTest(t, path, s.run)
	})
}

type scenario struct {
	t      *testing.T
	h      *Hierarchy
	wheel  *fakeWheel
	trace  lockedBuffer
	pauses sync.Map // "cpu:point:group" -> struct{}
	paused map[int]*asyncCall
	mu     sync.Mutex
}

type asyncCall struct {
	release chan struct{} // closed (replaced) to resume the paused walk
	stopped chan string   // where it paused
	done    chan string   // the call's result line
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

var hookNames = map[Point]string{
	PointInactiveCAS:    "inactive-cas",
	PointActiveCAS:      "active-cas",
	PointUpdateLock:     "update-lock",
	PointRemoteExpire:   "remote-expire",
	PointRemoteRelock:   "remote-relock",
	PointNewTimerRemote: "new-timer-remote",
}

func newScenario(t *testing.T) *scenario {
	s := &scenario{t: t, paused: map[int]*asyncCall{}}
	return s
}

func (s *scenario) close() {
	for cpu, c := range s.paused {
		s.t.Errorf("cpu%d still paused at the end of the file", cpu)
		close(c.release)
	}
}

// hook pauses the calling walk if a pause was requested for this point.
func (s *scenario) hook(p Point, cpu int, g GroupID, target int) {
	where := "-"
	if g != NoGroup {
		where = g.String()
	}
	key := fmt.Sprintf("%d:%s:%s", cpu, hookNames[p], where)
	if _, ok := s.pauses.LoadAndDelete(key); !ok {
		return
	}
	s.mu.Lock()
	c := s.paused[cpu]
	s.mu.Unlock()
	desc := fmt.Sprintf("cpu%d paused at %s", cpu, hookNames[p])
	if g != NoGroup {
		desc += " in " + where
	} else {
		desc += fmt.Sprintf(" of cpu%d", target)
	}
	rel := c.release
	c.stopped <- desc
	<-rel
}

func (s *scenario) run(t *testing.T, d *datadriven.TestData) string {
	s.t = t
	var out strings.Builder
	quiet := d.HasArg("quiet") || d.Cmd == "timer" || d.Cmd == "cancel" // fake-wheel changes show nothing new
	switch d.Cmd {
	case "topo":
		s.topo(t, d, &out)
		return out.String()
	case "resume":
		cpu := s.intArg(t, d, "cpu")
		s.mu.Lock()
		c := s.paused[cpu]
		s.mu.Unlock()
		if c == nil {
			t.Fatalf("%s: cpu%d is not paused", d.Pos, cpu)
		}
		if d.HasArg("pause") {
			s.requestPause(t, d, cpu)
		}
		old := c.release
		c.release = make(chan struct{})
		close(old)
		s.await(t, cpu, c, &out)
	case "state":
		// printed below
	case "drawing":
		return s.h.Drawing()
	default:
		cpu := -1
		if d.HasArg("cpu") {
			cpu = s.intArg(t, d, "cpu")
		}
		op := s.op(t, d, cpu)
		if d.HasArg("pause") {
			s.requestPause(t, d, cpu)
			c := &asyncCall{release: make(chan struct{}), stopped: make(chan string), done: make(chan string, 1)}
			s.mu.Lock()
			s.paused[cpu] = c
			s.mu.Unlock()
			go func() { c.done <- op() }()
			s.await(t, cpu, c, &out)
		} else if r := op(); r != "" {
			out.WriteString(r + "\n")
		}
	}
	if d.HasArg("trace") {
		out.WriteString(s.trace.take())
	} else {
		s.trace.take()
	}
	// Check only a quiescent hierarchy; the state can be shown anyway.
	// "broken" documents a state the kernel itself reaches that breaks an
	// invariant: Check must then fail, and its error is printed.
	if len(s.paused) == 0 {
		err := s.h.Check()
		switch {
		case d.HasArg("broken") && err == nil:
			t.Fatalf("%s: Check passed, but the scenario expects a broken invariant", d.Pos)
		case d.HasArg("broken"):
			fmt.Fprintf(&out, "Check: %v\n", err)
		case err != nil:
			t.Fatalf("%s: %v\n%s", d.Pos, err, s.h.State())
		}
	}
	if !quiet {
		out.WriteString(s.h.State())
	}
	if s.h.Warnings() != 0 {
		t.Fatalf("%s: %d kernel WARN conditions met", d.Pos, s.h.Warnings())
	}
	return out.String()
}

func (s *scenario) requestPause(t *testing.T, d *datadriven.TestData, cpu int) {
	var v string
	d.ScanArgs(t, "pause", &v)
	point, grp, _ := strings.Cut(v, "@")
	if grp == "" {
		grp = "-"
	}
	s.pauses.Store(fmt.Sprintf("%d:%s:%s", cpu, point, grp), struct{}{})
}

// await waits until the call of cpu pauses again or finishes.
func (s *scenario) await(t *testing.T, cpu int, c *asyncCall, out *strings.Builder) {
	select {
	case desc := <-c.stopped:
		out.WriteString(desc + "\n")
	case r := <-c.done:
		s.mu.Lock()
		delete(s.paused, cpu)
		s.mu.Unlock()
		if r != "" {
			out.WriteString(r + "\n")
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("cpu%d neither paused nor finished (deadlock?)", cpu)
	}
}

// op returns the call the command stands for.
func (s *scenario) op(t *testing.T, d *datadriven.TestData, cpu int) func() string {
	h := s.h
	switch d.Cmd {
	case "prepare":
		return func() string { return errString(h.Prepare(cpu)) }
	case "online":
		m := s.maskArg(t, d, "cpus")
		idle := d.HasArg("idle")
		return func() string {
			var errs []string
			for c := m.First(); c >= 0; c = m.Next(c) {
				if err := h.SetAvailable(c, idle); err != nil {
					errs = append(errs, err.Error())
				}
			}
			return strings.Join(errs, "\n")
		}
	case "offline":
		return func() string {
			trig, err := h.ClearAvailable(cpu)
			if err != nil {
				return err.Error()
			}
			return "-> trigger " + strconv.Itoa(trig)
		}
	case "timer":
		at := s.timeArg(t, d, "at")
		return func() string { s.wheel.add(cpu, at); return "" }
	case "cancel":
		at := s.timeArg(t, d, "at")
		return func() string { s.wheel.cancel(cpu, at); return "" }
	case "activate":
		return func() string { h.Activate(cpu); return "" }
	case "deactivate":
		next := s.nextArg(t, d, cpu)
		return func() string { return "-> " + fmtTime(h.Deactivate(cpu, next)) }
	case "new-timer":
		next := s.nextArg(t, d, cpu)
		return func() string { return "-> " + fmtTime(h.NewTimer(cpu, next)) }
	case "handle-remote":
		now := s.timeArg(t, d, "now")
		return func() string {
			s.wheel.setNow(now)
			h.HandleRemote(cpu, now, uint64(now), s.wheel)
			return strings.TrimRight(s.wheel.takeLog(), "\n")
		}
	case "requires":
		now := s.timeArg(t, d, "now")
		return func() string { return "-> " + strconv.FormatBool(h.RequiresHandleRemote(cpu, now)) }
	case "quick-check":
		next := s.timeArg(t, d, "next")
		return func() string { return "-> " + fmtTime(h.QuickCheck(cpu, next)) }
	case "exclude":
		m := s.maskArg(t, d, "cpus")
		return func() string { return "-> triggers " + fmt.Sprint(h.ExcludeIsolated(m, nil)) }
	case "init-isolation":
		return func() string { return "-> triggers " + fmt.Sprint(h.InitIsolation(nil)) }
	case "set-isolation":
		iso := s.isoArgs(t, d)
		return func() string { return errString(h.SetIsolation(iso)) }
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return nil
}

func errString(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ""
}

func (s *scenario) topo(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	n := s.intArg(t, d, "cpus")
	nodeOf := make([]int, n)
	switch {
	case d.HasArg("node-cpus"):
		var v string
		d.ScanArgs(t, "node-cpus", &v)
		for node, l := range strings.Split(v, ";") {
			m, err := cpumask.ParseFor(l, n)
			if err != nil {
				t.Fatal(err)
			}
			for c := m.First(); c >= 0; c = m.Next(c) {
				nodeOf[c] = node
			}
		}
	case d.HasArg("nodes"):
		k := s.intArg(t, d, "nodes")
		for i := range nodeOf {
			nodeOf[i] = i * k / n
		}
	}
	o := Options{NodeOf: nodeOf, ExcludeIsolated: d.HasArg("exclude-isolated"), Isolation: s.isoArgs(t, d),
		Tracer: &TextTracer{W: &s.trace}, Interleave: s.hook}
	h, err := New(o)
	if err != nil {
		fmt.Fprintf(out, "error: %v\n", err)
		return
	}
	s.h = h
	s.wheel = newFakeWheel(n)
	prep := h.possible
	if d.HasArg("prepare") {
		var v string
		d.ScanArgs(t, "prepare", &v)
		if v == "none" {
			prep = cpumask.Mask{}
		} else {
			prep = s.maskArg(t, d, "prepare")
		}
	}
	for c := prep.First(); c >= 0; c = prep.Next(c) {
		if err := h.Prepare(c); err != nil {
			fmt.Fprintf(out, "error: %v\n", err)
		}
	}
	if d.HasArg("trace") {
		out.WriteString(s.trace.take())
	}
	s.trace.take()
	if err := h.Check(); err != nil {
		t.Fatalf("%s: %v", d.Pos, err)
	}
	if bl := h.BootLine(); bl != "" {
		out.WriteString(bl + "\n")
	} else {
		out.WriteString("(no hierarchy on a uniprocessor)\n")
	}
	out.WriteString(h.Drawing())
}

func (s *scenario) isoArgs(t *testing.T, d *datadriven.TestData) Isolation {
	iso := Isolation{Timekeeper: -1}
	if d.HasArg("isolcpus") {
		iso.Domain = s.maskArg(t, d, "isolcpus")
	}
	if d.HasArg("nohz_full") {
		iso.NohzFull = s.maskArg(t, d, "nohz_full")
	}
	if d.HasArg("cpuset") {
		iso.CpusetIsolated = s.maskArg(t, d, "cpuset")
	}
	if d.HasArg("timekeeper") {
		iso.Timekeeper = s.intArg(t, d, "timekeeper")
	}
	return iso
}

func (s *scenario) intArg(t *testing.T, d *datadriven.TestData, key string) int {
	var v int
	d.ScanArgs(t, key, &v)
	return v
}

func (s *scenario) maskArg(t *testing.T, d *datadriven.TestData, key string) cpumask.Mask {
	var v string
	d.ScanArgs(t, key, &v)
	m, err := cpumask.Parse(v)
	if err != nil {
		t.Fatalf("%s: %s: %v", d.Pos, key, err)
	}
	return m
}

func (s *scenario) timeArg(t *testing.T, d *datadriven.TestData, key string) int64 {
	var v string
	d.ScanArgs(t, key, &v)
	return parseTime(t, v)
}

func parseTime(t *testing.T, v string) int64 {
	if v == "max" {
		return KtimeMax
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("bad time %q", v)
	}
	return n
}

// nextArg is next=T, or the CPU's first fake timer.
func (s *scenario) nextArg(t *testing.T, d *datadriven.TestData, cpu int) int64 {
	if d.HasArg("next") {
		return s.timeArg(t, d, "next")
	}
	return s.wheel.first(cpu)
}

// fakeWheel is a per-CPU sorted list of global timer expiries standing for
// the timer code behind Expirer. Its bases are real mutexes.
type fakeWheel struct {
	mu     []sync.Mutex
	timers [][]int64
	now    int64
	logMu  sync.Mutex
	log    strings.Builder
}

func newFakeWheel(n int) *fakeWheel {
	return &fakeWheel{mu: make([]sync.Mutex, n), timers: make([][]int64, n)}
}

func (w *fakeWheel) add(cpu int, at int64) {
	w.mu[cpu].Lock()
	defer w.mu[cpu].Unlock()
	w.timers[cpu] = append(w.timers[cpu], at)
	sort.Slice(w.timers[cpu], func(i, j int) bool { return w.timers[cpu][i] < w.timers[cpu][j] })
}

func (w *fakeWheel) cancel(cpu int, at int64) {
	w.mu[cpu].Lock()
	defer w.mu[cpu].Unlock()
	for i, x := range w.timers[cpu] {
		if x == at {
			w.timers[cpu] = append(w.timers[cpu][:i], w.timers[cpu][i+1:]...)
			return
		}
	}
}

func (w *fakeWheel) first(cpu int) int64 {
	w.mu[cpu].Lock()
	defer w.mu[cpu].Unlock()
	if len(w.timers[cpu]) == 0 {
		return KtimeMax
	}
	return w.timers[cpu][0]
}

func (w *fakeWheel) setNow(now int64) {
	w.logMu.Lock()
	w.now = now
	w.logMu.Unlock()
}

func (w *fakeWheel) takeLog() string {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	s := w.log.String()
	w.log.Reset()
	return s
}

func (w *fakeWheel) ExpireRemote(handler, target int) {
	w.logMu.Lock()
	now := w.now
	w.logMu.Unlock()
	w.mu[target].Lock()
	var ran []int64
	for len(w.timers[target]) > 0 && w.timers[target][0] <= now {
		ran = append(ran, w.timers[target][0])
		w.timers[target] = w.timers[target][1:]
	}
	w.mu[target].Unlock()
	w.logMu.Lock()
	fmt.Fprintf(&w.log, "cpu%d expires cpu%d's global timers: %v\n", handler, target, ran)
	w.logMu.Unlock()
}

func (w *fakeWheel) LockBases(target int)   { w.mu[target].Lock() }
func (w *fakeWheel) UnlockBases(target int) { w.mu[target].Unlock() }

func (w *fakeWheel) NextGlobalRemote(target int, basej uint64, now int64) int64 {
	if len(w.timers[target]) == 0 {
		return KtimeMax
	}
	return max(w.timers[target][0], now) // an overdue timer is reported as now
}
