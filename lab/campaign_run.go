package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
)

// CampaignSchema is the schema_version of a campaign's summary and of the
// state files of its draws.
const CampaignSchema = 1

// Checks are the replay's checks, in the order the summary lists them.
var Checks = []string{"wheel", "tmigr", "nextevt", "hrtimer", "placement"}

// Draw outcomes.
const (
	StatusOK       = "ok"       // recorded and replayed, no mismatch
	StatusMismatch = "mismatch" // the replay found a mismatch: the recording is kept
	StatusError    = "error"    // the recording or the replay failed
)

// maxMismatchesKept is how many mismatches a draw's state keeps per check;
// the reproducer has them all.
const maxMismatchesKept = 20

// Campaign is a campaign of draws (see Draw): each is recorded, replayed
// under its own kernel with every check, and kept in Dir when the replay
// finds a mismatch.
//
// Dir holds the state: one JSON file per finished draw,
// draws/seed<SEED>-<INDEX>.json, written atomically when the draw is done
// (a draw whose recording failed is done too, with its error; RetryErrors
// draws it again). Run skips the draws whose state is there, so a campaign
// stopped (Ctrl-C) goes on where it stopped when run again with the same
// seed. The recordings are seed<SEED>-<INDEX>.txt: kept when they show a
// mismatch (or with Keep), with a cut of each to its shortest mismatching
// window beside it (seed<SEED>-<INDEX>.cut.txt; see CutRecording).
type Campaign struct {
	Seed   uint64
	N      int   // draws 0..N-1
	Only   []int // when set, only these draws (each below N)
	Limits DrawLimits
	Dir    string
	// Keep keeps every recording, not only those with a mismatch.
	Keep bool
	// NoCut leaves the reproducers whole.
	NoCut bool
	// RetryErrors draws again the draws whose state says they failed.
	RetryErrors bool
	// Host, Timeout and Retries go into every draw's spec.
	Host    Host
	Timeout time.Duration
	Retries int
	// Progress receives a line per step; nil discards them. The
	// recorder's own lines go there too, prefixed with the draw.
	Progress io.Writer

	// Record records s into the file path (whole or not at all);
	// default RecordFile. Tests replace it.
	Record func(ctx context.Context, s Spec, path string) error
	// RecordLocal, when set, records the machine the campaign runs on for
	// a duration into the file path (whole or not at all), with its
	// "# machine:" line, as "tmigr record" does: fresh recordings of
	// this machine's own kernel beside the guests'. It runs before the
	// first draw and after every LocalEvery draws (none when LocalEvery
	// is 0, or when Only picks the draws), each recording replayed and
	// kept like a draw's (local-seed<SEED>-<K>.txt, its state
	// draws/local-seed<SEED>-<K>.json).
	RecordLocal func(ctx context.Context, path string, d time.Duration) error
	LocalEvery  int
	// Check replays a recording; default ReplayChecks.
	Check func(t *replay.Trace) (*replay.Result, error)
	// Windows is how many windows of each recording are replayed too: a
	// user's recording begins anywhere in a running system, in the middle
	// of operations and with the clock not yet pinned, so each window
	// begins at an event drawn from the seed, the draw and the window's
	// number, and holds windowSizes[k] events (the recording's header
	// and the markers of the changes before it kept, as a cut keeps
	// them). A window that mismatches, or that the replay refuses, is
	// kept as <stem>-w<FIRST>-<END>.txt. Windows do not change a draw's
	// status: they are counted apart (DrawResult.Windows, Group).
	Windows int
}

// windowSizes are the lengths of the windows, in events, in turn.
var windowSizes = []int{1500, 3000, 6000}

// WindowResult is one window of a recording, replayed (Campaign.Windows).
type WindowResult struct {
	// First and Events are the window's first event, counted from 0
	// among the recording's events, and its length.
	First  int `json:"first"`
	Events int `json:"events"`
	// Mismatches counts the window's mismatches; Error is the replay's
	// refusal, if any. File is the kept window, when either.
	Mismatches int          `json:"mismatches"`
	Error      string       `json:"error,omitempty"`
	File       string       `json:"file,omitempty"`
	Mismatch   *MismatchRef `json:"mismatch,omitempty"`
}

// failed reports whether the window showed a mismatch or was refused.
func (w WindowResult) failed() bool { return w.Mismatches > 0 || w.Error != "" }

// replayWindows replays c.Windows windows of the recording text of draw
// (or local recording) index, stem its file name stem.
func (c *Campaign) replayWindows(text []byte, index int, local bool, stem string, check func(*replay.Trace) (*replay.Result, error)) []WindowResult {
	if c.Windows <= 0 {
		return nil
	}
	rec, err := splitRecording(text)
	if err != nil {
		return nil
	}
	n := len(rec.events)
	stream := uint64(index) << 8
	if local {
		stream |= 1 << 40
	}
	rng := rand.New(rand.NewPCG(c.Seed, stream))
	var out []WindowResult
	for k := range c.Windows {
		size := windowSizes[k%len(windowSizes)]
		if n < 2*size {
			continue // too short for a window that is not most of it
		}
		a := 1 + rng.IntN(n-size)
		w := WindowResult{First: a, Events: size}
		name := fmt.Sprintf("%s-w%d-%d.txt", stem, a, a+size)
		win := rec.build(a, a+size)
		t, err := replay.Read(bytes.NewReader(win))
		var res *replay.Result
		if err == nil {
			t.File = name
			res, err = check(t)
		}
		switch {
		case err != nil:
			w.Error = err.Error()
		case res.Mismatched():
			_, ms := tally(res)
			w.Mismatches = len(ms)
			m := firstMismatch(res)
			w.Mismatch = &m
		}
		if w.failed() {
			if writeFileAtomic(filepath.Join(c.Dir, name), win) == nil {
				w.File = name
			}
		}
		out = append(out, w)
	}
	return out
}

// ReplayChecks replays t under its own kernel with every check.
func ReplayChecks(t *replay.Trace) (*replay.Result, error) {
	return replay.Run(t, replay.Options{Wheel: true, Tmigr: true, Hrtimer: true, Placement: true})
}

// DrawSpec is a drawn spec as a draw's state and the summary hold it, in
// the words of "tmigr lab record".
type DrawSpec struct {
	Series     string   `json:"series"`
	Flavour    Flavour  `json:"flavour"`
	CPUs       int      `json:"cpus"`
	Nodes      int      `json:"nodes"`
	NodeCPUs   []string `json:"node_cpus"`
	Cmdline    string   `json:"cmdline"`
	Busy       string   `json:"busy"`
	Sleepers   string   `json:"sleepers"`
	RTSleepers string   `json:"rt_sleepers"`
	// TimerLoads are the other loads by name ("timerfd": "2-3").
	TimerLoads map[string]string `json:"timer_loads,omitempty"`
	Period     string            `json:"period,omitempty"`
	Absolute   bool              `json:"absolute,omitempty"`
	FIFOPrio   int               `json:"fifo_prio,omitempty"`
	HRTimers   bool              `json:"hrtimers"`
	Duration   string            `json:"duration"`
	At         string            `json:"at,omitempty"`
}

// DescribeSpec returns s as a DrawSpec.
func DescribeSpec(s Spec) DrawSpec {
	d := s.withDefaults()
	ds := DrawSpec{
		Series: s.KernelVersion, Flavour: d.Kernel, CPUs: d.CPUs, Nodes: d.Nodes,
		Cmdline: d.Cmdline, Busy: d.Busy.String(), Sleepers: d.Sleepers.String(), RTSleepers: d.RTSleepers.String(),
		HRTimers: d.HRTimers, Duration: d.Duration.String(), At: ftrace.FormatChanges(d.At),
	}
	if ds.Series == "" {
		ds.Series = defaultSeries
	}
	for _, m := range d.NodeCPUs {
		ds.NodeCPUs = append(ds.NodeCPUs, m.String())
	}
	for _, t := range d.timerLoads() {
		if !t.m.Empty() {
			if ds.TimerLoads == nil {
				ds.TimerLoads = map[string]string{}
			}
			ds.TimerLoads[t.name] = t.m.String()
		}
	}
	if d.periodic() {
		ds.Period, ds.Absolute = d.Period.String(), d.Absolute
		if !d.RTSleepers.Empty() {
			ds.FIFOPrio = d.FIFOPrio
		}
	}
	return ds
}

// RecordCommand returns the "tmigr lab record" command that records s by
// hand, writing to out.
func RecordCommand(s Spec, out string) string {
	d := s.withDefaults()
	q := shellQuote
	args := []string{"tmigr lab record", "--cpus", fmt.Sprint(d.CPUs)}
	if s.NodeCPUs != nil {
		var l []string
		for _, m := range d.NodeCPUs {
			l = append(l, m.String())
		}
		args = append(args, "--node-cpus", q(strings.Join(l, ";")))
	} else if d.Nodes > 1 {
		args = append(args, "--nodes", fmt.Sprint(d.Nodes))
	}
	if d.Cmdline != "" {
		args = append(args, "--cmdline", q(d.Cmdline))
	}
	for _, l := range []struct {
		flag string
		m    cpumask.Mask
	}{{"--busy", d.Busy}, {"--sleepers", d.Sleepers}, {"--rt-sleepers", d.RTSleepers}} {
		if !l.m.Empty() {
			args = append(args, l.flag, l.m.String())
		}
	}
	for _, t := range d.timerLoads() {
		if !t.m.Empty() {
			args = append(args, "--"+t.name, t.m.String())
		}
	}
	if d.periodic() {
		args = append(args, "--period", d.Period.String())
		if d.Absolute {
			args = append(args, "--abs")
		}
		if !d.RTSleepers.Empty() {
			args = append(args, "--fifo-prio", fmt.Sprint(d.FIFOPrio))
		}
	}
	for _, c := range d.At {
		args = append(args, "--at", q(c.String()))
	}
	args = append(args, "--kernel", string(d.Kernel))
	if s.KernelVersion != "" {
		args = append(args, "--kernel-version", s.KernelVersion)
	}
	if d.HRTimers && d.Kernel != RT {
		args = append(args, "--hrtimers")
	}
	args = append(args, "--duration", d.Duration.String(), "-o", q(out))
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,/=:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CheckTotals are the decisions of one check.
type CheckTotals struct {
	Checked      int `json:"checked"`
	Matched      int `json:"matched"`
	Undetermined int `json:"undetermined"`
	// UndeterminedReasons counts the undetermined decisions by reason;
	// absent when there are none.
	UndeterminedReasons map[string]int `json:"undetermined_reasons,omitempty"`
	Mismatched          int            `json:"mismatched"`
}

func (t *CheckTotals) add(o *CheckTotals) {
	t.Checked += o.Checked
	t.Matched += o.Matched
	t.Undetermined += o.Undetermined
	t.Mismatched += o.Mismatched
	for r, n := range o.UndeterminedReasons {
		if t.UndeterminedReasons == nil {
			t.UndeterminedReasons = map[string]int{}
		}
		t.UndeterminedReasons[r] += n
	}
}

// MismatchRef is one mismatch of a draw: the check, the line of the
// recording, and the replay's words.
type MismatchRef struct {
	Check string `json:"check"`
	replay.Mismatch
}

// CutInfo describes a reproducer's cut (see CutRecording).
type CutInfo struct {
	File string `json:"file"`
	// From and To are the window's first and last event times, seconds
	// of the trace clock.
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Events are the events kept of the recording's.
	Events int `json:"events"`
	Of     int `json:"of"`
	// Mismatch is the mismatch the cut keeps, at its line in the cut.
	Mismatch MismatchRef `json:"mismatch"`
}

// DrawResult is a finished draw: its state file and its entry in the
// summary.
type DrawResult struct {
	SchemaVersion int      `json:"schema_version"`
	Seed          uint64   `json:"seed"`
	Index         int      `json:"index"`
	Spec          DrawSpec `json:"spec"`
	Command       string   `json:"command"`
	Status        string   `json:"status"`
	Error         string   `json:"error,omitempty"`
	// Release is the kernel release that booted (the machine line's).
	Release string `json:"release,omitempty"`
	Events  int    `json:"events,omitempty"`
	// Checks are the replay's counts, by check (Checks); a check the
	// replay did not run (hrtimer without hrtimer events) is absent.
	Checks     map[string]*CheckTotals `json:"checks,omitempty"`
	Mismatches []MismatchRef           `json:"mismatches,omitempty"`
	// Reproducer is the kept recording, relative to the campaign's
	// directory.
	Reproducer string   `json:"reproducer,omitempty"`
	Cut        *CutInfo `json:"cut,omitempty"`
	// CutNote says why a reproducer was not cut.
	CutNote       string  `json:"cut_note,omitempty"`
	RecordSeconds float64 `json:"record_seconds,omitempty"`
	// Local marks a recording of the machine the campaign ran on (its
	// Index counts those): its spec is that machine's, read back from
	// its machine line.
	Local bool `json:"local,omitempty"`
	// Windows are the windows of the recording replayed too
	// (Campaign.Windows).
	Windows []WindowResult `json:"windows,omitempty"`
}

// name is the draw's file name stem, seed<SEED>-<INDEX>.
func drawName(seed uint64, i int) string { return fmt.Sprintf("seed%d-%04d", seed, i) }

// localName is the file name stem of the campaign's k-th recording of the
// machine it runs on, local-seed<SEED>-<K>.
func localName(seed uint64, k int) string { return "local-" + drawName(seed, k) }

func (c *Campaign) statePath(i int) string {
	return filepath.Join(c.Dir, "draws", drawName(c.Seed, i)+".json")
}

func (c *Campaign) recordingPath(i int) string {
	return filepath.Join(c.Dir, drawName(c.Seed, i)+".txt")
}

// Indices returns the draws the campaign makes, in order.
func (c *Campaign) Indices() []int {
	if len(c.Only) > 0 {
		out := slices.Clone(c.Only)
		slices.Sort(out)
		return slices.Compact(out)
	}
	out := make([]int, c.N)
	for i := range out {
		out[i] = i
	}
	return out
}

// Validate checks the campaign before any long work: the limits, the
// draws, and that Dir can be written.
func (c *Campaign) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.N < 1 {
		return fmt.Errorf("draws: %d; a campaign makes at least 1", c.N)
	}
	for _, i := range c.Only {
		if i < 0 || i >= c.N {
			return fmt.Errorf("only: draw %d is not one of the %d draws (0-%d)", i, c.N, c.N-1)
		}
	}
	if c.LocalEvery < 0 {
		return fmt.Errorf("local-every: %d; give 0 (never) or a number of draws", c.LocalEvery)
	}
	if c.Dir == "" {
		return errors.New("dir: the campaign needs a directory")
	}
	if err := CheckWritableDir(c.Dir); err != nil {
		return fmt.Errorf("dir: %v", err)
	}
	return nil
}

// CheckWritableDir makes dir (and its parents) if needed and checks that a
// file can be made in it.
func CheckWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".writable-*")
	if err != nil {
		return fmt.Errorf("%s cannot be written: %v", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// LoadDraw reads draw i's state from the campaign's directory; nil when
// the draw has not finished.
func (c *Campaign) LoadDraw(i int) (*DrawResult, error) {
	return c.loadState(c.statePath(i), i, false)
}

func (c *Campaign) loadState(path string, i int, local bool) (*DrawResult, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r DrawResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if r.SchemaVersion != CampaignSchema || r.Seed != c.Seed || r.Index != i || r.Local != local {
		return nil, fmt.Errorf("%s: the state of another campaign (schema %d, seed %d, draw %d)", path, r.SchemaVersion, r.Seed, r.Index)
	}
	return &r, nil
}

// ErrInterrupted is Run's error when its context ended (Ctrl-C) before
// every draw finished.
var ErrInterrupted = errors.New("interrupted")

// Run makes the campaign's draws that have not finished and returns the
// results of all of them, finished before or now, in the order of
// Indices. It stops at the first error that is not a draw's own (a state
// file that cannot be written), and with ErrInterrupted, and the results
// so far, when ctx ends.
func (c *Campaign) Run(ctx context.Context) ([]DrawResult, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := newProgress(c.Progress)
	if c.Record == nil {
		// Every draw needs the guest program: a setup error that would
		// fail each of them stops the campaign before the first.
		if _, err := PrepareGuest(ctx, c.Host, c.Progress); err != nil {
			return nil, err
		}
	}
	var out []DrawResult
	idx := c.Indices()
	for k, i := range idx {
		if c.RecordLocal != nil && c.LocalEvery > 0 && len(c.Only) == 0 && k%c.LocalEvery == 0 {
			r, err := c.local(ctx, k/c.LocalEvery, p)
			if err != nil {
				return out, err
			}
			out = append(out, *r)
		}
		s, err := Draw(c.Seed, i, c.Limits)
		if err != nil {
			return out, err
		}
		ds := DescribeSpec(s)
		prev, err := c.LoadDraw(i)
		if err != nil {
			return out, err
		}
		if prev != nil && !specEqual(prev.Spec, ds) {
			return out, fmt.Errorf("draw %d of seed %d in %s was drawn with other limits (%+v, now %+v): use another --dir or the same limits",
				i, c.Seed, c.Dir, prev.Spec, ds)
		}
		if prev != nil && (prev.Status != StatusError || !c.RetryErrors) {
			p.printf("draw %d (%d of %d): finished before: %s", i, k+1, len(idx), prev.Status)
			out = append(out, *prev)
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, ErrInterrupted
		}
		p.printf("draw %d (%d of %d): %s", i, k+1, len(idx), RecordCommand(s, filepath.Base(c.recordingPath(i))))
		r, err := c.runDraw(ctx, i, s, p)
		if err != nil {
			return out, err
		}
		if err := writeJSONFile(c.statePath(i), r); err != nil {
			return out, err
		}
		p.printf("%s", outcome("draw", r))
		out = append(out, *r)
	}
	return out, nil
}

func specEqual(a, b DrawSpec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func countMismatches(r *DrawResult) int {
	n := 0
	for _, t := range r.Checks {
		n += t.Mismatched
	}
	return n
}

// runDraw records and replays draw i. Its error is one that stops the
// campaign (ctx ended); what goes wrong with the draw itself is in the
// result.
func (c *Campaign) runDraw(ctx context.Context, i int, s Spec, p *progress) (*DrawResult, error) {
	r := &DrawResult{SchemaVersion: CampaignSchema, Seed: c.Seed, Index: i, Spec: DescribeSpec(s),
		Command: RecordCommand(s, filepath.Base(c.recordingPath(i)))}
	s.Host, s.Timeout, s.Retries = c.Host, c.Timeout, c.Retries
	s.Progress = prefixed{p, fmt.Sprintf("draw %d: ", i)}
	path := c.recordingPath(i)
	record := c.Record
	if record == nil {
		record = RecordFile
	}

	// A recording left by a run stopped between recording and replay
	// is used again when it is of this draw's machine.
	if !c.reusable(path, s) {
		start := time.Now()
		if err := record(ctx, s, path); err != nil {
			return failed(ctx, r, err)
		}
		r.RecordSeconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	} else {
		p.printf("draw %d: replaying the recording %s left by an earlier run", i, path)
	}
	return c.replayRecording(ctx, r, path, drawName(c.Seed, i), fmt.Sprintf("draw %d", i), p)
}

// failed is a draw's result when err ended it: an error of the draw, or
// ErrInterrupted when ctx ended.
func failed(ctx context.Context, r *DrawResult, err error) (*DrawResult, error) {
	if ctx.Err() != nil {
		return nil, ErrInterrupted
	}
	r.Status, r.Error = StatusError, err.Error()
	return r, nil
}

// local makes the campaign's k-th recording of the machine it runs on,
// unless an earlier run finished it.
func (c *Campaign) local(ctx context.Context, k int, p *progress) (*DrawResult, error) {
	stem := localName(c.Seed, k)
	state := filepath.Join(c.Dir, "draws", stem+".json")
	prev, err := c.loadState(state, k, true)
	if err != nil {
		return nil, err
	}
	if prev != nil && (prev.Status != StatusError || !c.RetryErrors) {
		p.printf("local %d: finished before: %s", k, prev.Status)
		return prev, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, ErrInterrupted
	}
	d := c.Limits.withDefaults().Duration
	path := filepath.Join(c.Dir, stem+".txt")
	r := &DrawResult{SchemaVersion: CampaignSchema, Seed: c.Seed, Index: k, Local: true,
		Command: fmt.Sprintf("tmigr record -d %v -o %s", d, filepath.Base(path))}
	p.printf("local %d: recording the machine the campaign runs on: %s", k, r.Command)
	start := time.Now()
	if err := c.RecordLocal(ctx, path, d); err != nil {
		if r, err = failed(ctx, r, err); err != nil {
			return nil, err
		}
	} else {
		r.RecordSeconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
		if r, err = c.replayRecording(ctx, r, path, stem, fmt.Sprintf("local %d", k), p); err != nil {
			return nil, err
		}
	}
	if err := writeJSONFile(state, r); err != nil {
		return nil, err
	}
	p.printf("%s", outcome("local", r))
	return r, nil
}

// outcome is the progress line that ends a draw (what: draw, or local for
// a recording of this machine).
func outcome(what string, r *DrawResult) string {
	line := fmt.Sprintf("%s %d: %s", what, r.Index, r.Status)
	switch r.Status {
	case StatusError:
		line += ": " + r.Error
	case StatusMismatch:
		line += fmt.Sprintf(": %d mismatches, kept in %s", countMismatches(r), r.Reproducer)
		if r.Cut != nil {
			line += fmt.Sprintf(", cut to %s (%d of %d events)", r.Cut.File, r.Cut.Events, r.Cut.Of)
		}
	}
	return line
}

// localSpec describes the machine a local recording's machine line
// names.
func localSpec(m *ftrace.Machine, d time.Duration) DrawSpec {
	ds := DrawSpec{Series: seriesOf(m.Kernel), Flavour: Generic, CPUs: m.CPUs, Nodes: m.Nodes, Cmdline: m.Cmdline,
		Busy: m.Busy.String(), Sleepers: m.Sleepers.String(), Duration: d.String(), At: ftrace.FormatChanges(m.At)}
	if l, err := replay.LoadOf(m); err == nil && l.PreemptRT {
		ds.Flavour = RT
	}
	for _, c := range m.NodeCPUs {
		ds.NodeCPUs = append(ds.NodeCPUs, c.String())
	}
	return ds
}

// replayRecording replays the recording at path for result r (label
// names it in the progress lines) and keeps it, with a cut named after
// stem, when it shows a mismatch. Its error is one that stops the
// campaign (ctx ended).
func (c *Campaign) replayRecording(ctx context.Context, r *DrawResult, path, stem, label string, p *progress) (*DrawResult, error) {
	check := c.Check
	if check == nil {
		check = ReplayChecks
	}
	fail := func(err error) (*DrawResult, error) { return failed(ctx, r, err) }
	text, err := os.ReadFile(path)
	if err != nil {
		return fail(err)
	}
	tr, err := replay.Read(bytes.NewReader(text))
	if err != nil {
		return fail(fmt.Errorf("reading the recording back: %v", err))
	}
	tr.File = filepath.Base(path)
	if m := tr.Header.Machine; m != nil {
		r.Release = m.Kernel
		if r.Local {
			r.Spec = localSpec(m, c.Limits.withDefaults().Duration)
		}
	}
	r.Events = len(tr.Events)
	res, err := check(tr)
	if err != nil {
		return fail(fmt.Errorf("replay: %v", err))
	}
	r.Checks, r.Mismatches = tally(res)
	r.Windows = c.replayWindows(text, r.Index, r.Local, stem, check)
	if !res.Mismatched() {
		r.Status = StatusOK
		if !c.Keep {
			os.Remove(path)
		} else {
			r.Reproducer = filepath.Base(path)
		}
		return r, nil
	}
	r.Status = StatusMismatch
	r.Reproducer = filepath.Base(path)
	if c.NoCut {
		r.CutNote = "not cut (--no-cut)"
		return r, nil
	}
	target := firstMismatch(res)
	p.printf("%s: cutting the recording to the shortest window that shows %s line %d: %s", label, target.Check, target.Line, target.Event)
	cut, err := CutRecording(ctx, text, target, check)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
		r.CutNote = "not cut: " + err.Error()
		return r, nil
	}
	cutPath := filepath.Join(c.Dir, stem+".cut.txt")
	if err := writeFileAtomic(cutPath, cut.Text); err != nil {
		r.CutNote = "not cut: " + err.Error()
		return r, nil
	}
	r.Cut = &CutInfo{File: filepath.Base(cutPath), From: float64(cut.From) / 1e9, To: float64(cut.To) / 1e9,
		Events: cut.Events, Of: cut.Of, Mismatch: cut.Mismatch}
	return r, nil
}

// reusable reports whether path holds a recording of s's machine.
func (c *Campaign) reusable(path string, s Spec) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	rd := ftrace.NewReader(f)
	if _, err := rd.Next(); err != nil {
		return false
	}
	m := rd.Header().Machine
	d := s.withDefaults()
	return m != nil && m.CPUs == d.CPUs && m.Cmdline == d.Cmdline && m.Busy.Equal(d.Busy) &&
		m.Sleepers.Equal(d.Sleepers.Or(d.RTSleepers)) && len(m.At) == len(d.At) &&
		strings.HasPrefix(m.Kernel, d.KernelVersion+".") == (d.KernelVersion != "")
}

// tally turns a replay's result into the counts and mismatches a draw
// keeps.
func tally(res *replay.Result) (map[string]*CheckTotals, []MismatchRef) {
	checks := map[string]*CheckTotals{}
	var ms []MismatchRef
	for _, rc := range res.Checks {
		k, c := rc.Name, rc.Counts
		t := &CheckTotals{Checked: c.Checked, Matched: c.Matched, Undetermined: c.Undetermined,
			Mismatched: len(c.Mismatches)}
		if len(c.UndeterminedReasons) > 0 {
			t.UndeterminedReasons = map[string]int{}
			for r, n := range c.UndeterminedReasons {
				t.UndeterminedReasons[r] = n
			}
		}
		checks[k] = t
		for j, m := range c.Mismatches {
			if j == maxMismatchesKept {
				break
			}
			ms = append(ms, MismatchRef{Check: k, Mismatch: m})
		}
	}
	return checks, ms
}

// firstMismatch returns the mismatch of the result on the earliest line.
func firstMismatch(res *replay.Result) MismatchRef {
	var best MismatchRef
	found := false
	for _, c := range res.Checks {
		for _, m := range c.Mismatches {
			if !found || m.Line < best.Line {
				best, found = MismatchRef{Check: c.Name, Mismatch: m}, true
			}
		}
	}
	return best
}

// Group is the totals of the draws of one kernel series and flavour, or
// of the recordings of the machine the campaign ran on (Local).
type Group struct {
	Series  string  `json:"series"`
	Flavour Flavour `json:"flavour"`
	Local   bool    `json:"local,omitempty"`
	Draws   int     `json:"draws"`
	// Errors are the draws that failed; Mismatching those with a mismatch.
	Errors      int                     `json:"errors"`
	Mismatching int                     `json:"mismatching"`
	Checks      map[string]*CheckTotals `json:"checks"`
	// Windows are the windows replayed (Campaign.Windows);
	// FailedWindows those that mismatched or were refused.
	Windows       int `json:"windows,omitempty"`
	FailedWindows int `json:"failed_windows,omitempty"`
}

// Summary is a campaign's outcome.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	Seed          uint64 `json:"seed"`
	// Draws are the draws asked for; Finished those with a result.
	Draws    int `json:"draws_asked"`
	Finished int `json:"finished"`
	// Local counts the recordings of the machine the campaign ran on
	// (Campaign.RecordLocal) among Results.
	Local       int  `json:"local,omitempty"`
	Interrupted bool `json:"interrupted,omitempty"`
	Limits      struct {
		MaxCPUs  int       `json:"max_cpus"`
		Kernels  []string  `json:"kernels"`
		Flavours []Flavour `json:"flavours"`
		Duration string    `json:"duration"`
	} `json:"limits"`
	Groups  []Group                 `json:"groups"`
	Totals  map[string]*CheckTotals `json:"totals"`
	Results []DrawResult            `json:"draws"`
}

// Summarize aggregates the results of a campaign of seed and limits, asked
// for asked draws, per kernel series and flavour (in the order of Series,
// then generic before rt) and in all.
func Summarize(seed uint64, limits DrawLimits, asked int, results []DrawResult) *Summary {
	l := limits.withDefaults()
	s := &Summary{SchemaVersion: CampaignSchema, Seed: seed, Draws: asked,
		Totals: map[string]*CheckTotals{}, Results: results}
	for _, r := range results {
		if r.Local {
			s.Local++
		} else {
			s.Finished++
		}
	}
	s.Limits.MaxCPUs, s.Limits.Kernels, s.Limits.Flavours, s.Limits.Duration = l.MaxCPUs, l.Kernels, l.Flavours, l.Duration.String()
	if s.Results == nil {
		s.Results = []DrawResult{}
	}
	type key struct {
		series  string
		flavour Flavour
		local   bool
	}
	groups := map[key]*Group{}
	for _, r := range results {
		k := key{r.Spec.Series, r.Spec.Flavour, r.Local}
		g := groups[k]
		if g == nil {
			g = &Group{Series: k.series, Flavour: k.flavour, Local: k.local, Checks: map[string]*CheckTotals{}}
			groups[k] = g
		}
		g.Draws++
		for _, w := range r.Windows {
			g.Windows++
			if w.failed() {
				g.FailedWindows++
			}
		}
		switch r.Status {
		case StatusError:
			g.Errors++
		case StatusMismatch:
			g.Mismatching++
		}
		for k, t := range r.Checks {
			if g.Checks[k] == nil {
				g.Checks[k] = &CheckTotals{}
			}
			g.Checks[k].add(t)
			if s.Totals[k] == nil {
				s.Totals[k] = &CheckTotals{}
			}
			s.Totals[k].add(t)
		}
	}
	for _, g := range groups {
		s.Groups = append(s.Groups, *g)
	}
	sort.Slice(s.Groups, func(i, j int) bool {
		a, b := s.Groups[i], s.Groups[j]
		if a.Local != b.Local {
			return !a.Local
		}
		if a.Series != b.Series {
			return seriesRank(a.Series) < seriesRank(b.Series)
		}
		return a.Flavour < b.Flavour
	})
	if s.Groups == nil {
		s.Groups = []Group{}
	}
	return s
}

// seriesRank orders series as Series does, unknown ones last by name.
func seriesRank(v string) string {
	if i := slices.Index(Series, v); i >= 0 {
		return fmt.Sprintf("%03d", i)
	}
	return "999" + v
}

// WriteTable prints the summary as a table, one row per series, flavour
// and check, then the mismatches and errors of the draws.
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "campaign seed %d: %d of %d draws finished", s.Seed, s.Finished, s.Draws)
	if s.Local > 0 {
		fmt.Fprintf(&b, ", %d recordings of this machine", s.Local)
	}
	if s.Interrupted {
		b.WriteString(" (interrupted: run it again to go on)")
	}
	b.WriteString("\n")
	rows := [][]string{{"series", "flavour", "draws", "errors", "check", "checked", "matched", "undetermined", "mismatched"}}
	for _, g := range s.Groups {
		series := g.Series
		if g.Local {
			series += " (local)"
		}
		first := true
		for _, k := range Checks {
			t := g.Checks[k]
			if t == nil {
				continue
			}
			row := []string{"", "", "", "", k, fmt.Sprint(t.Checked), fmt.Sprint(t.Matched), fmt.Sprint(t.Undetermined), fmt.Sprint(t.Mismatched)}
			if first {
				row[0], row[1], row[2], row[3] = series, string(g.Flavour), fmt.Sprint(g.Draws), fmt.Sprint(g.Errors)
				first = false
			}
			rows = append(rows, row)
		}
		if first {
			rows = append(rows, []string{series, string(g.Flavour), fmt.Sprint(g.Draws), fmt.Sprint(g.Errors), "-", "", "", "", ""})
		}
	}
	for _, k := range Checks {
		if t := s.Totals[k]; t != nil {
			rows = append(rows, []string{"all", "", fmt.Sprint(len(s.Results)), "", k, fmt.Sprint(t.Checked), fmt.Sprint(t.Matched), fmt.Sprint(t.Undetermined), fmt.Sprint(t.Mismatched)})
		}
	}
	writeColumns(&b, rows)
	for _, r := range s.Results {
		what := "draw"
		if r.Local {
			what = "local"
		}
		switch r.Status {
		case StatusError:
			fmt.Fprintf(&b, "%s %d: error: %s\n", what, r.Index, r.Error)
		case StatusMismatch:
			fmt.Fprintf(&b, "%s %d: %d mismatches in %s", what, r.Index, countMismatches(&r), r.Reproducer)
			if r.Cut != nil {
				fmt.Fprintf(&b, " (cut: %s, %d of %d events)", r.Cut.File, r.Cut.Events, r.Cut.Of)
			}
			b.WriteString("\n")
			for _, m := range r.Mismatches {
				fmt.Fprintf(&b, "  %s line %d: %s: kernel %s, model %s\n", m.Check, m.Line, m.Event, m.Kernel, m.Model)
			}
		}
	}
	windows, failedWindows := 0, 0
	for _, g := range s.Groups {
		windows, failedWindows = windows+g.Windows, failedWindows+g.FailedWindows
	}
	if windows > 0 {
		fmt.Fprintf(&b, "windows: %d replayed, %d mismatching or refused\n", windows, failedWindows)
		for _, r := range s.Results {
			for _, x := range r.Windows {
				switch {
				case x.Error != "":
					fmt.Fprintf(&b, "  %s: %s\n", x.File, x.Error)
				case x.Mismatch != nil:
					m := x.Mismatch
					fmt.Fprintf(&b, "  %s: %d mismatches, %s line %d: %s: kernel %s, model %s\n", x.File, x.Mismatches, m.Check, m.Line, m.Event, m.Kernel, m.Model)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeColumns writes rows as left-aligned columns two spaces apart.
func writeColumns(b *strings.Builder, rows [][]string) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", width[i]-len(c)))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// WriteSummary writes the summary as indented JSON to path, atomically.
func WriteSummary(path string, s *Summary) error {
	return writeJSONFile(path, s)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// writeFileAtomic writes path whole or not at all.
func writeFileAtomic(path string, data []byte) error {
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// prefixed writes each line to a progress with a prefix.
type prefixed struct {
	p      *progress
	prefix string
}

func (w prefixed) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.p.printf("%s%s", w.prefix, l)
	}
	return len(b), nil
}
