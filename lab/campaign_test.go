package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel/cmdline"
	"github.com/tmigr/tmigr/replay"
)

// TestDrawDeterministic: draw i of a seed is the same spec every time,
// whatever was drawn before, and draws differ from each other.
func TestDrawDeterministic(t *testing.T) {
	l := DrawLimits{MaxCPUs: 12}
	first := map[int]string{}
	for i := range 20 {
		s, err := Draw(7, i, l)
		if err != nil {
			t.Fatal(err)
		}
		first[i] = RecordCommand(s, "x")
	}
	// Again, in reverse order and interleaved with another seed.
	for i := 19; i >= 0; i-- {
		if _, err := Draw(8, i, l); err != nil {
			t.Fatal(err)
		}
		s, err := Draw(7, i, l)
		if err != nil {
			t.Fatal(err)
		}
		if got := RecordCommand(s, "x"); got != first[i] {
			t.Errorf("draw %d of seed 7 differs:\n%s\n%s", i, first[i], got)
		}
	}
	distinct := map[string]bool{}
	for _, c := range first {
		distinct[c] = true
	}
	if len(distinct) < 18 {
		t.Errorf("20 draws gave only %d distinct specs", len(distinct))
	}
	a, _ := Draw(7, 0, l)
	b, _ := Draw(8, 0, l)
	if RecordCommand(a, "x") == RecordCommand(b, "x") {
		t.Error("seeds 7 and 8 drew the same draw 0")
	}
}

// TestDrawBounds: every draw is a valid spec within the limits, its
// run-time changes are ones the machine's state allows, and over many
// draws every kind of choice comes up.
func TestDrawBounds(t *testing.T) {
	for _, l := range []DrawLimits{
		{MaxCPUs: 2},
		{MaxCPUs: 8, Kernels: []string{"6.1", "7.3"}, Flavours: []Flavour{RT}},
		{MaxCPUs: 64, Duration: 5 * time.Second},
		{},
	} {
		ld := l.withDefaults()
		seen := map[string]bool{}
		for seed := uint64(0); seed < 20; seed++ {
			for i := range 25 {
				s, err := Draw(seed, i, l)
				if err != nil {
					t.Fatalf("%+v: draw %d of seed %d: %v", l, i, seed, err)
				}
				checkDraw(t, ld, s, seen)
			}
		}
		want := []string{"generic", "rt", "nodes=1", "nodes>1", "uneven", "isolcpus", "managed_irq", "nohz_full", "both", "none",
			"busy", "sleepers", "rt-sleepers", "absolute", "relative", "changes=0", "changes=3",
			"offline", "online", "partition", "partition none", "timer_migration", "hrtimers", "no hrtimers",
			"timerfd", "posix-timers", "epoll", "tcp", "storm"}
		for _, w := range want {
			switch {
			case (w == "generic" || w == "no hrtimers") && !slices.Contains(ld.Flavours, Generic),
				w == "rt" && !slices.Contains(ld.Flavours, RT):
				continue
			}
			if !seen[w] {
				t.Errorf("%+v: 500 draws never drew %s", l, w)
			}
		}
		for _, k := range ld.Kernels {
			if !seen["series "+k] {
				t.Errorf("%+v: never drew series %s", l, k)
			}
		}
	}
}

func checkDraw(t *testing.T, l DrawLimits, s Spec, seen map[string]bool) {
	t.Helper()
	cmd := RecordCommand(s, "x")
	if err := s.Validate(); err != nil {
		t.Fatalf("%s: does not validate: %v", cmd, err)
	}
	d := s.withDefaults()
	switch {
	case d.CPUs < 2 || d.CPUs > l.MaxCPUs:
		t.Errorf("%s: %d CPUs, not 2..%d", cmd, d.CPUs, l.MaxCPUs)
	case d.Nodes < 1 || d.Nodes > MaxCampaignNodes || d.Nodes > d.CPUs:
		t.Errorf("%s: %d nodes", cmd, d.Nodes)
	case !slices.Contains(l.Kernels, s.KernelVersion):
		t.Errorf("%s: series %q is not one of %v", cmd, s.KernelVersion, l.Kernels)
	case !slices.Contains(l.Flavours, d.Kernel):
		t.Errorf("%s: flavour %q is not one of %v", cmd, d.Kernel, l.Flavours)
	case d.Duration != l.Duration:
		t.Errorf("%s: duration %v, not %v", cmd, d.Duration, l.Duration)
	case d.periodic() && (d.Period < minPeriodDraw || d.Period > maxPeriodDraw):
		t.Errorf("%s: period %v outside %v..%v", cmd, d.Period, minPeriodDraw, maxPeriodDraw)
	}
	iso, err := cmdline.ParseIsolation(d.Cmdline, d.CPUs)
	if err != nil || len(iso.Warnings) > 0 {
		t.Errorf("%s: isolation %v %v", cmd, err, iso.Warnings)
	}
	if iso.Domain.Test(0) || iso.NohzFull.Test(0) {
		t.Errorf("%s: CPU 0 is isolated", cmd)
	}
	seen[string(d.Kernel)] = true
	seen["series "+s.KernelVersion] = true
	if d.Nodes == 1 {
		seen["nodes=1"] = true
	} else {
		seen["nodes>1"] = true
		if s.NodeCPUs != nil {
			seen["uneven"] = true
		}
	}
	hasIso, hasNF := strings.Contains(d.Cmdline, "isolcpus="), strings.Contains(d.Cmdline, "nohz_full=")
	switch {
	case hasIso && hasNF:
		seen["both"] = true
	case hasIso:
		seen["isolcpus"] = true
	case hasNF:
		seen["nohz_full"] = true
	default:
		seen["none"] = true
	}
	if strings.Contains(d.Cmdline, "managed_irq") {
		seen["managed_irq"] = true
	}
	for _, l := range []struct {
		name string
		m    cpumask.Mask
	}{{"busy", d.Busy}, {"sleepers", d.Sleepers}, {"rt-sleepers", d.RTSleepers}} {
		if !l.m.Empty() {
			seen[l.name] = true
		}
	}
	for _, tl := range d.timerLoads() {
		if !tl.m.Empty() {
			seen[tl.name] = true
		}
	}
	if d.periodic() {
		seen[map[bool]string{true: "absolute", false: "relative"}[d.Absolute]] = true
	}
	seen[map[bool]string{true: "hrtimers", false: "no hrtimers"}[d.HRTimers]] = true
	if d.Kernel == RT && !d.HRTimers {
		t.Errorf("%s: RT without hrtimer events", cmd)
	}

	// The changes, replayed on the machine's state.
	if len(d.At) > 3 {
		t.Errorf("%s: %d changes", cmd, len(d.At))
	}
	seen["changes="+string(rune('0'+len(d.At)))] = true
	loaded := d.Busy.Or(d.Sleepers).Or(d.RTSleepers)
	online := cpumask.Range(0, d.CPUs-1)
	var partition cpumask.Mask
	for i, c := range d.At {
		if c.At < d.Duration*15/100 || c.At > d.Duration*85/100 || (i > 0 && c.At < d.At[i-1].At) {
			t.Errorf("%s: change %d at %v", cmd, i, c.At)
		}
		switch c.Kind {
		case ftrace.ChangeOffline:
			seen["offline"] = true
			if c.CPU == 0 || !online.Test(c.CPU) || partition.Test(c.CPU) {
				t.Errorf("%s: change %d takes CPU %d offline", cmd, i, c.CPU)
			}
			online.Clear(c.CPU)
		case ftrace.ChangeOnline:
			seen["online"] = true
			if online.Test(c.CPU) || loaded.Test(c.CPU) {
				t.Errorf("%s: change %d brings CPU %d online", cmd, i, c.CPU)
			}
			online.Set(c.CPU)
		case ftrace.ChangePartition:
			if c.CPUs.Empty() {
				seen["partition none"] = true
				if partition.Empty() {
					t.Errorf("%s: change %d removes no partition", cmd, i)
				}
			} else {
				seen["partition"] = true
				if s.KernelVersion == "6.1" || !partition.Empty() || c.CPUs.Test(0) || c.CPUs.Intersects(&iso.Domain) || !c.CPUs.Subset(&online) {
					t.Errorf("%s: change %d makes the partition %s", cmd, i, c.CPUs)
				}
			}
			partition = c.CPUs
		case ftrace.ChangeTimerMigration:
			seen["timer_migration"] = true
		}
	}
}

func TestDrawLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l    DrawLimits
		want string
	}{
		{DrawLimits{MaxCPUs: 1}, "max-cpus: 1"},
		{DrawLimits{MaxCPUs: 65}, "max-cpus: 65"},
		{DrawLimits{Kernels: []string{"6.12", "6.2"}}, `kernels: "6.2"`},
		{DrawLimits{Flavours: []Flavour{"lowlatency"}}, `flavours: "lowlatency"`},
		{DrawLimits{Duration: -time.Second}, "duration"},
		{DrawLimits{Duration: 1500 * time.Microsecond}, "duration"},
	} {
		err := tc.l.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
		if _, err := Draw(1, 0, tc.l); err == nil {
			t.Errorf("%+v: drew", tc.l)
		}
	}
	if err := (DrawLimits{}).Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestRecordCommand(t *testing.T) {
	s := Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 2), cpumask.Of(3)}, Cmdline: "isolcpus=domain,managed_irq,2-3",
		Busy: cpumask.Of(3), RTSleepers: cpumask.Of(1), Period: 2 * time.Millisecond, FIFOPrio: 9, Kernel: RT, KernelVersion: "7.3",
		Duration: 2 * time.Second, At: []ftrace.Change{{At: time.Second, Kind: ftrace.ChangeTimerMigration}}}
	want := "tmigr lab record --cpus 4 --node-cpus '0-2;3' --cmdline isolcpus=domain,managed_irq,2-3 --busy 3 --rt-sleepers 1 --period 2ms --fifo-prio 9 --at '1s timer_migration=0' --kernel rt --kernel-version 7.3 --duration 2s -o 'a b.txt'"
	if got := RecordCommand(s, "a b.txt"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// fakeRecorder copies a recording from testdata, counts its calls, and
// after stopAfter of them (when set) ends the campaign's context as a
// Ctrl-C would and fails as Record then does.
type fakeRecorder struct {
	src       string
	calls     []int // the CPUs of each spec recorded
	stopAfter int
	cancel    context.CancelFunc
}

func (f *fakeRecorder) record(ctx context.Context, s Spec, path string) error {
	if f.stopAfter > 0 && len(f.calls) == f.stopAfter {
		f.cancel()
		return errors.New("interrupted; QEMU stopped")
	}
	if err := s.Validate(); err != nil {
		return err
	}
	f.calls = append(f.calls, s.CPUs)
	b, err := os.ReadFile(f.src)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

const campaignTrace = "../testdata/traces/vm2-1node-busy-sleeper-7.3.txt"

// TestCampaignResume: a campaign stopped in the middle keeps the draws it
// finished, and run again records only the others; the state of another
// campaign's limits is refused.
func TestCampaignResume(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeRecorder{src: campaignTrace, stopAfter: 3, cancel: cancel}
	c := &Campaign{Seed: 3, N: 5, Limits: DrawLimits{MaxCPUs: 6}, Dir: dir, Record: f.record}
	res, err := c.Run(ctx)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("stopped campaign: %v", err)
	}
	if len(res) != 3 || len(f.calls) != 3 {
		t.Fatalf("stopped campaign: %d results, %d recordings; want 3", len(res), len(f.calls))
	}
	for i := range 5 {
		_, err := os.Stat(c.statePath(i))
		if done := err == nil; done != (i < 3) {
			t.Errorf("draw %d: state file there: %v", i, done)
		}
	}
	// No recording of the interrupted draw is left behind, nor temporary
	// files.
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}

	f2 := &fakeRecorder{src: campaignTrace}
	c.Record = f2.record
	res, err = c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 5 || len(f2.calls) != 2 {
		t.Fatalf("resumed campaign: %d results, %d recordings; want 5 and 2", len(res), len(f2.calls))
	}
	for i, r := range res {
		if r.Index != i || r.Seed != 3 || r.Status != StatusOK || r.Checks["wheel"] == nil || r.Checks["wheel"].Checked == 0 {
			t.Errorf("draw %d: %+v", i, r)
		}
		s, _ := Draw(3, i, c.Limits)
		if r.Spec.CPUs != s.CPUs || r.Command != RecordCommand(s, drawName(3, i)+".txt") {
			t.Errorf("draw %d: the state's spec is not the draw's: %+v", i, r.Spec)
		}
	}
	// Clean recordings are not kept.
	if m, _ := filepath.Glob(filepath.Join(dir, "*.txt")); len(m) > 0 {
		t.Errorf("clean recordings kept: %v", m)
	}
	// A third run records nothing.
	f3 := &fakeRecorder{src: campaignTrace}
	c.Record = f3.record
	if res, err := c.Run(context.Background()); err != nil || len(res) != 5 || len(f3.calls) != 0 {
		t.Errorf("finished campaign run again: %d results, %d recordings, %v", len(res), len(f3.calls), err)
	}
	// Other limits draw other specs: refused.
	c.Limits.MaxCPUs = 30
	if _, err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "other limits") {
		t.Errorf("other limits: %v", err)
	}
}

// TestCampaignErrorsAndRetry: a failed recording is a finished draw with
// its error; RetryErrors draws it again.
func TestCampaignErrorsAndRetry(t *testing.T) {
	dir := t.TempDir()
	fails := func(ctx context.Context, s Spec, path string) error { return errors.New("the guest did not boot") }
	c := &Campaign{Seed: 1, N: 2, Limits: DrawLimits{MaxCPUs: 4}, Dir: dir, Record: fails}
	res, err := c.Run(context.Background())
	if err != nil || len(res) != 2 || res[0].Status != StatusError || !strings.Contains(res[1].Error, "did not boot") {
		t.Fatalf("%v %+v", err, res)
	}
	f := &fakeRecorder{src: campaignTrace}
	c.Record = f.record
	if _, err := c.Run(context.Background()); err != nil || len(f.calls) != 0 {
		t.Errorf("without RetryErrors: %d recordings, %v", len(f.calls), err)
	}
	c.RetryErrors = true
	res, err = c.Run(context.Background())
	if err != nil || len(f.calls) != 2 || res[0].Status != StatusOK {
		t.Errorf("with RetryErrors: %d recordings, %v, %+v", len(f.calls), err, res)
	}
}

// evKey names one event of a trace: its time and CPU.
type evKey struct {
	ts  int64
	cpu int
}

// markedCheck is a replay check that reports a mismatch when the trace
// holds every one of the events marks.
func markedCheck(marks ...evKey) func(*replay.Trace) (*replay.Result, error) {
	return func(tr *replay.Trace) (*replay.Result, error) {
		res, err := ReplayChecks(tr)
		if err != nil {
			return nil, err
		}
		found := 0
		line := 0
		for _, m := range marks {
			for _, ev := range tr.Events {
				if ev.TS == m.ts && ev.CPU == m.cpu {
					found++
					line = ev.Line
					break
				}
			}
		}
		if found == len(marks) {
			res.Wheel.Mismatches = append(res.Wheel.Mismatches, replay.Mismatch{Line: line, Event: "timer_start", Kernel: "k", Model: "m"})
		}
		return res, nil
	}
}

// TestCampaignMismatchKeptAndCut: a draw whose replay mismatches keeps
// its recording and a cut of it to the events the mismatch needs.
func TestCampaignMismatchKeptAndCut(t *testing.T) {
	dir := t.TempDir()
	text, err := os.ReadFile(campaignTrace)
	if err != nil {
		t.Fatal(err)
	}
	// Two events some way apart: the mismatch needs both.
	a, b := nthEvent(t, text, 400), nthEvent(t, text, 700)
	f := &fakeRecorder{src: campaignTrace}
	c := &Campaign{Seed: 2, N: 1, Limits: DrawLimits{MaxCPUs: 4}, Dir: dir, Record: f.record, Check: markedCheck(a, b)}
	res, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Status != StatusMismatch || r.Reproducer != "seed2-0000.txt" || r.Cut == nil {
		t.Fatalf("%+v", r)
	}
	kept, err := os.ReadFile(filepath.Join(dir, r.Reproducer))
	if err != nil || !bytes.Equal(kept, text) {
		t.Errorf("the reproducer is not the recording: %v", err)
	}
	cut, err := os.ReadFile(filepath.Join(dir, r.Cut.File))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := replay.Read(bytes.NewReader(cut))
	if err != nil {
		t.Fatalf("the cut does not read: %v", err)
	}
	// The window is exactly the events from a to b.
	if n := len(tr.Events); n != r.Cut.Events || (evKey{tr.Events[0].TS, tr.Events[0].CPU}) != a || (evKey{tr.Events[n-1].TS, tr.Events[n-1].CPU}) != b {
		t.Errorf("cut of %d events: first %+v, last %+v; want %+v to %+v", n, tr.Events[0], tr.Events[n-1], a, b)
	}
	if r.Cut.Events != 301 || r.Cut.Of <= r.Cut.Events || r.Cut.From >= r.Cut.To {
		t.Errorf("cut %+v", r.Cut)
	}
	if !strings.HasPrefix(string(cut), "# machine: ") {
		t.Error("the cut lost its machine line")
	}
	var state DrawResult
	b2, _ := os.ReadFile(c.statePath(0))
	if err := json.Unmarshal(b2, &state); err != nil || state.Status != StatusMismatch || len(state.Mismatches) != 1 || state.Mismatches[0].Check != "wheel" {
		t.Errorf("state %v %+v", err, state)
	}
}

// nthEvent returns the n-th event of a recording (from 0, markers not
// counted), which must be the only event of its time and CPU.
func nthEvent(t *testing.T, text []byte, n int) evKey {
	t.Helper()
	tr, err := replay.Read(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	for _, ev := range tr.Events {
		if _, ok := ev.Data.(ftrace.TracingMark); ok {
			continue
		}
		if k == n {
			key := evKey{ev.TS, ev.CPU}
			for _, o := range tr.Events {
				if o.Line != ev.Line && (evKey{o.TS, o.CPU}) == key {
					t.Fatalf("event %d shares its time and CPU with line %d", n, o.Line)
				}
			}
			return key
		}
		k++
	}
	t.Fatalf("no event %d", n)
	return evKey{}
}

// TestCutKeepsChangesBeforeTheEnd: a cut keeps the start marker, the
// changes that begin before its window ends (with their markers) and drops
// the others from the machine line.
func TestCutKeepsChangesBeforeTheEnd(t *testing.T) {
	const src = "../testdata/traces/vm16-1node-partition-busy-sleepers-7.3.txt"
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := splitRecording(text)
	if err != nil {
		t.Fatal(err)
	}
	if rec.start < 0 || len(rec.changeMarks) != 1 || rec.changeMarks[0] < 0 {
		t.Fatalf("start %d, change markers %v", rec.start, rec.changeMarks)
	}
	// A window before the start marker: the change (the first one)
	// begins at the start, so it stays.
	cut := string(rec.build(0, 10))
	if !strings.Contains(cut, "tmigr-lab: start") || !strings.Contains(cut, "partition 9-15") {
		t.Errorf("early cut:\n%s", cut[:min(len(cut), 2000)])
	}
	tr, err := replay.Read(strings.NewReader(cut))
	if err != nil {
		t.Fatalf("the cut does not read: %v", err)
	}
	if len(tr.Events) != 12 {
		t.Errorf("%d events, want 10 and 2 markers", len(tr.Events))
	}
	if !strings.Contains(cut, "entries-written: 12/12") {
		t.Error("the entries line is not rewritten")
	}
}

func TestSummarize(t *testing.T) {
	ct := func(c, m, u, x int, reasons map[string]int) *CheckTotals {
		return &CheckTotals{Checked: c, Matched: m, Undetermined: u, Mismatched: x, UndeterminedReasons: reasons}
	}
	results := []DrawResult{
		{Index: 0, Spec: DrawSpec{Series: "7.3", Flavour: RT}, Status: StatusOK,
			Checks: map[string]*CheckTotals{"wheel": ct(10, 10, 0, 0, nil), "tmigr": ct(5, 3, 2, 0, map[string]int{"before": 2})}},
		{Index: 1, Spec: DrawSpec{Series: "6.1", Flavour: Generic}, Status: StatusError, Error: "boom"},
		{Index: 2, Spec: DrawSpec{Series: "7.3", Flavour: RT}, Status: StatusMismatch, Reproducer: "seed9-0002.txt",
			Checks:     map[string]*CheckTotals{"wheel": ct(4, 3, 0, 1, nil), "tmigr": ct(6, 4, 2, 0, map[string]int{"before": 1, "jiffy": 1})},
			Mismatches: []MismatchRef{{Check: "wheel", Mismatch: replay.Mismatch{Line: 77, Event: "timer_start", Kernel: "a", Model: "b"}}}},
		{Index: 3, Spec: DrawSpec{Series: "7.3", Flavour: Generic}, Status: StatusOK,
			Checks: map[string]*CheckTotals{"wheel": ct(1, 1, 0, 0, nil)}},
	}
	s := Summarize(9, DrawLimits{}, 6, results)
	if s.SchemaVersion != CampaignSchema || s.Draws != 6 || s.Finished != 4 || len(s.Groups) != 3 {
		t.Fatalf("%+v", s)
	}
	order := []string{"6.1 generic", "7.3 generic", "7.3 rt"}
	for i, g := range s.Groups {
		if got := g.Series + " " + string(g.Flavour); got != order[i] {
			t.Errorf("group %d: %s, want %s", i, got, order[i])
		}
	}
	rt := s.Groups[2]
	if rt.Draws != 2 || rt.Mismatching != 1 || rt.Errors != 0 {
		t.Errorf("7.3 rt: %+v", rt)
	}
	if w := rt.Checks["wheel"]; w.Checked != 14 || w.Matched != 13 || w.Mismatched != 1 || w.Undetermined != 0 {
		t.Errorf("7.3 rt wheel: %+v", w)
	}
	if tm := rt.Checks["tmigr"]; tm.Undetermined != 4 || tm.UndeterminedReasons["before"] != 3 || tm.UndeterminedReasons["jiffy"] != 1 {
		t.Errorf("7.3 rt tmigr: %+v", tm)
	}
	if s.Groups[0].Errors != 1 || len(s.Groups[0].Checks) != 0 {
		t.Errorf("6.1 generic: %+v", s.Groups[0])
	}
	if w := s.Totals["wheel"]; w.Checked != 15 || w.Matched != 14 || w.Mismatched != 1 {
		t.Errorf("totals: %+v", w)
	}
	// The input is not changed by the aggregation.
	if results[0].Checks["tmigr"].UndeterminedReasons["before"] != 2 {
		t.Error("Summarize changed a draw's counts")
	}
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 of 6 draws", "7.3     rt", "wheel  14", "draw 1: error: boom", "wheel line 77: timer_start: kernel a, model b", "all"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	j, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(j), `"schema_version":1`) || !strings.Contains(string(j), `"draws":[`) {
		t.Errorf("JSON: %v %s", err, j)
	}
}

// TestCampaignValidate: what Run refuses before any work.
func TestCampaignValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, tc := range []struct {
		c    Campaign
		want string
	}{
		{Campaign{N: 0, Dir: t.TempDir()}, "at least 1"},
		{Campaign{N: 3, Only: []int{3}, Dir: t.TempDir()}, "draw 3 is not one of the 3"},
		{Campaign{N: 3}, "needs a directory"},
		{Campaign{N: 3, Dir: filepath.Join(file, "sub")}, "dir:"},
		{Campaign{N: 3, Dir: t.TempDir(), Limits: DrawLimits{Kernels: []string{"5.15"}}}, "kernels"},
	} {
		called := false
		tc.c.Record = func(context.Context, Spec, string) error { called = true; return nil }
		_, err := tc.c.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || called {
			t.Errorf("%+v: %v (recorded: %v), want %q", tc.c, err, called, tc.want)
		}
	}
}

// TestCampaignOutsideCheckoutStopsAtOnce: a campaign whose guest program
// cannot be built (run outside a checkout) stops before its first draw
// with that error, instead of failing every draw with it.
func TestCampaignOutsideCheckoutStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir()) // outside any Go module
	t.Setenv("GOFLAGS", "")
	t.Setenv("GO111MODULE", "")
	c := &Campaign{Seed: 1, N: 3, Limits: DrawLimits{MaxCPUs: 4}, Dir: dir,
		Host: Host{CacheDir: t.TempDir(), NoInstall: true}}
	res, err := c.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "outside any Go module") || len(res) != 0 {
		t.Fatalf("error %v, %d draws; want the guest program's error before any draw", err, len(res))
	}
	if st, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(st) != 0 {
		t.Errorf("draw states written: %v", st)
	}
}

// TestCampaignWindows: with Windows, each recording is also replayed in
// windows of 1500, 3000 and 6000 events in turn, beginning at events
// drawn from the seed: the same
// again for the same seed. A window that mismatches is kept, reads back
// with its events and machine line, and is counted in the summary apart
// from the draw, whose status it does not change.
func TestCampaignWindows(t *testing.T) {
	const src = "../testdata/traces/vm8-3node-nohzfull-rt-7.0-phantom-bucket-run-by-remote-expiry.txt"
	run := func(dir string) []DrawResult {
		f := &fakeRecorder{src: src}
		// The recording replays clean; its windows are made to fail.
		check := func(tr *replay.Trace) (*replay.Result, error) {
			res, err := ReplayChecks(tr)
			if err == nil && strings.Contains(tr.File, "-w") {
				res.Wheel.Mismatches = append(res.Wheel.Mismatches, replay.Mismatch{Line: 1, Event: "timer_start", Kernel: "k", Model: "m"})
			}
			return res, err
		}
		c := &Campaign{Seed: 7, N: 1, Limits: DrawLimits{MaxCPUs: 4}, Dir: dir, Record: f.record, Check: check, Windows: 3}
		res, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	dir := t.TempDir()
	res := run(dir)
	r := res[0]
	if r.Status != StatusOK {
		t.Fatalf("draw status %s: %+v", r.Status, r)
	}
	if len(r.Windows) != 3 || r.Windows[0].Events != 1500 || r.Windows[1].Events != 3000 || r.Windows[2].Events != 6000 {
		t.Fatalf("windows %+v; want 1500, 3000 and 6000 events", r.Windows)
	}
	for _, w := range r.Windows {
		if !w.failed() || w.File == "" || w.Mismatch == nil {
			t.Errorf("window %+v: not kept as failing", w)
			continue
		}
		text, err := os.ReadFile(filepath.Join(dir, w.File))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := replay.Read(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("%s does not read: %v", w.File, err)
		}
		events := 0
		for _, ev := range tr.Events {
			if _, mark := ev.Data.(ftrace.TracingMark); !mark {
				events++
			}
		}
		if events != w.Events || tr.Header.Machine == nil {
			t.Errorf("%s: %d events, machine line %v; want %d", w.File, events, tr.Header.Machine != nil, w.Events)
		}
	}
	s := Summarize(7, DrawLimits{MaxCPUs: 4}, 1, res)
	if len(s.Groups) != 1 || s.Groups[0].Windows != 3 || s.Groups[0].FailedWindows != 3 || s.Groups[0].Mismatching != 0 {
		t.Errorf("groups %+v", s.Groups)
	}
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil || !strings.Contains(b.String(), "windows: 3 replayed, 3 mismatching or refused") {
		t.Errorf("table %v:\n%s", err, b.String())
	}
	again := run(t.TempDir())[0].Windows
	for k := range again {
		if again[k].First != r.Windows[k].First {
			t.Errorf("window %d begins at %d, then %d: not drawn from the seed", k, r.Windows[k].First, again[k].First)
		}
	}
}
