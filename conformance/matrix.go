package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/lab"
	"github.com/tmigr/tmigr/replay"
)

// The conformance matrix: recordings of machines of many shapes, each
// checked by the replay (wheel, tmigr, hrtimer) and compared with the
// simulator (Compare), summed up in one document.
//
//	tmigr lab matrix                  record every shape, check, write docs/conformance.md
//	tmigr lab matrix --no-record      check the recordings already in testdata/traces
//	tmigr lab matrix --shapes 2 ...   a subset (CI records the 2-CPU shape)

// Shape is one row of the matrix: what to record and the file it goes to.
type Shape struct {
	Name string   // "16x2", "40-isol", ...
	File string   // the recording's file name
	Spec lab.Spec // what "tmigr lab record" records
	Note string   // what the shape is for
}

// Flags returns the "tmigr lab record" flags that record the shape.
func (sh *Shape) Flags() string {
	s := sh.Spec
	f := []string{fmt.Sprintf("--cpus %d", s.CPUs)}
	if s.Kernel == lab.RT {
		f = append([]string{"--kernel rt"}, f...)
	}
	if s.KernelVersion != "" {
		f = append([]string{"--kernel-version " + s.KernelVersion}, f...)
	}
	if s.Nodes > 1 {
		f = append(f, fmt.Sprintf("--nodes %d", s.Nodes))
	}
	if s.Cmdline != "" {
		c := s.Cmdline
		if strings.ContainsRune(c, ' ') {
			c = "'" + c + "'"
		}
		f = append(f, "--cmdline "+c)
	}
	if s.HRTimers && s.Kernel != lab.RT {
		f = append(f, "--hrtimers")
	}
	for _, l := range []struct {
		flag string
		m    cpumask.Mask
	}{{"--busy", s.Busy}, {"--sleepers", s.Sleepers}, {"--rt-sleepers", s.RTSleepers}} {
		if !l.m.Empty() {
			f = append(f, l.flag+" "+l.m.String())
		}
	}
	if s.Period != 0 && s.Period != lab.DefaultPeriod {
		f = append(f, "--period "+shortDuration(s.Period))
	}
	if s.Absolute {
		f = append(f, "--abs")
	}
	for _, c := range s.At {
		f = append(f, "--at '"+c.String()+"'")
	}
	f = append(f, "--duration "+shortDuration(s.Duration))
	if s.Timeout != 0 {
		f = append(f, "--timeout "+shortDuration(s.Timeout))
	}
	return strings.Join(f, " ")
}

// shortDuration prints d as a person would write the flag: "10m", not
// "10m0s".
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func mask(s string) cpumask.Mask { return cpumask.MustParse(s) }

// Matrix returns the shapes of the conformance matrix: the first ten, of
// Linux 6.12 (1 to 3 hierarchy levels, 1 to 4 NUMA nodes, isolcpus,
// nohz_full, the hrtimer sleepers of both flavours), then shapes of the
// other kernels, named NAME@SERIES: the same questions asked of 6.1 (no
// hierarchy: timers pushed at enqueue), 6.19 (isolated CPUs excluded from
// the hierarchy), 7.2 and 7.3, a run-time isolated partition, and the
// kernel.timer_migration sysctl at 0 and 1.
func Matrix() []Shape {
	shapes := []Shape{
		{Name: "2", File: "vm2-1node-busy-sleeper.txt", Note: "one group",
			Spec: lab.Spec{CPUs: 2, Busy: mask("1"), Sleepers: mask("0"), Duration: 3 * time.Second}},
		{Name: "4-hrtimers", File: "vm4-1node-hrtimers-fifo-other-sleepers.txt", Note: "hrtimer sleepers without PREEMPT_RT",
			Spec: lab.Spec{CPUs: 4, HRTimers: true, Busy: mask("3"), Sleepers: mask("1"), RTSleepers: mask("2"), Duration: time.Second}},
		{Name: "rt8", File: "vm8-1node-rt-fifo-other-sleepers.txt", Note: "PREEMPT_RT: SCHED_FIFO and SCHED_OTHER sleepers",
			Spec: lab.Spec{Kernel: lab.RT, CPUs: 8, Busy: mask("7"), Sleepers: mask("1-3"), RTSleepers: mask("4-6"), Duration: 800 * time.Millisecond}},
		{Name: "9", File: "vm9-1node-mixed.txt", Note: "two levels, a lone CPU in the second group",
			Spec: lab.Spec{CPUs: 9, Busy: mask("1,8"), Sleepers: mask("2-4"), Duration: 2 * time.Second}},
		{Name: "16x2", File: "vm16-2node-busy-sleepers.txt", Note: "two nodes",
			Spec: lab.Spec{CPUs: 16, Nodes: 2, Busy: mask("1,9"), Sleepers: mask("2-4,10-12"), Duration: 3 * time.Second}},
		{Name: "16x2-isol", File: "vm16-2node-isol-busy-sleepers.txt", Note: "two nodes, isolcpus: busy and sleeping isolated CPUs",
			Spec: lab.Spec{CPUs: 16, Nodes: 2, Cmdline: "isolcpus=1-7,9-15", Busy: mask("1-6,9-14"), Sleepers: mask("7,15"), Duration: 3 * time.Second}},
		{Name: "18x2", File: "vm18-2node-busy-sleepers.txt", Note: "two nodes of 9: three levels",
			Spec: lab.Spec{CPUs: 18, Nodes: 2, Busy: mask("1,10"), Sleepers: mask("3-4,12-14"), Duration: 3 * time.Second}},
		{Name: "24-nohzfull", File: "vm24-1node-nohzfull-busy-sleepers.txt", Note: "nohz_full: busy CPUs idle to the hierarchy",
			Spec: lab.Spec{CPUs: 24, Cmdline: "nohz_full=1-23", Busy: mask("4-23"), Sleepers: mask("1-3"), Duration: 3 * time.Second}},
		{Name: "40-isol", File: "vm40-1node-isol-busy.txt", Note: "isolcpus with two housekeeping CPUs",
			Spec: lab.Spec{CPUs: 40, Cmdline: "isolcpus=1-9,11-39", Busy: mask("1-9,11-39"), Duration: 3 * time.Second}},
		{Name: "64x4", File: "vm64-4node-mixed.txt", Note: "four nodes, three levels",
			Spec: lab.Spec{CPUs: 64, Nodes: 4, Busy: mask("1,17,33,49"), Sleepers: mask("2-3,18-19,34-35,50-51"),
				Duration: 3 * time.Second, Timeout: 10 * time.Minute}},
	}
	// The shapes asked of every kernel, by series.
	type shape struct {
		file, note string
		spec       lab.Spec
	}
	at := func(cs ...ftrace.Change) []ftrace.Change { return cs }
	partition := func(t time.Duration, cpus string) ftrace.Change {
		return ftrace.Change{At: t, Kind: ftrace.ChangePartition, CPUs: mask(cpus)}
	}
	tm := func(on bool) ftrace.Change { return ftrace.Change{Kind: ftrace.ChangeTimerMigration, On: on} }
	common := map[string]shape{
		"2": {"vm2-1node-busy-sleeper", "one group",
			lab.Spec{CPUs: 2, Busy: mask("1"), Sleepers: mask("0"), Duration: 2 * time.Second}},
		"4-isol": {"vm4-1node-isol-busy-sleeper", "isolcpus: busy isolated CPUs, one housekeeping CPU",
			lab.Spec{CPUs: 4, Cmdline: "isolcpus=1-3", Busy: mask("1-2"), Sleepers: mask("3"), Duration: 2 * time.Second}},
		"rt8": {"vm8-1node-rt-fifo-other-sleepers", "PREEMPT_RT: SCHED_FIFO and SCHED_OTHER sleepers",
			lab.Spec{Kernel: lab.RT, CPUs: 8, Busy: mask("7"), Sleepers: mask("1-3"), RTSleepers: mask("4-6"), Duration: 800 * time.Millisecond}},
		"9": {"vm9-1node-mixed", "two levels, a lone CPU in the second group",
			lab.Spec{CPUs: 9, Busy: mask("1,8"), Sleepers: mask("2-4"), Duration: 2 * time.Second}},
		"12-nohzfull": {"vm12-1node-nohzfull-busy-sleepers", "nohz_full: busy CPUs idle to the hierarchy, two levels",
			lab.Spec{CPUs: 12, Cmdline: "nohz_full=1-11", Busy: mask("4-11"), Sleepers: mask("1-3"), Duration: 2 * time.Second}},
		"16x2-isol": {"vm16-2node-isol-busy-sleepers", "isolcpus at two levels, two nodes: busy and sleeping isolated CPUs",
			lab.Spec{CPUs: 16, Nodes: 2, Cmdline: "isolcpus=1-7,9-15", Busy: mask("1-6,9-14"), Sleepers: mask("7,15"), Duration: 2 * time.Second}},
		"18x2-isol": {"vm18-2node-isol-busy-sleepers", "isolcpus at three levels: two nodes of 9",
			lab.Spec{CPUs: 18, Nodes: 2, Cmdline: "isolcpus=1-8,10-17", Busy: mask("1-6,10-15"), Sleepers: mask("7-8,16-17"), Duration: 2 * time.Second}},
		"16-partition": {"vm16-1node-partition-busy-sleepers", "a run-time isolated cpuset partition of busy CPUs, made after 1 s",
			lab.Spec{CPUs: 16, Busy: mask("9-15"), Sleepers: mask("1-3"), Duration: 2500 * time.Millisecond, At: at(partition(time.Second, "9-15"))}},
		"40-isol": {"vm40-1node-isol-busy", "isolcpus with two housekeeping CPUs",
			lab.Spec{CPUs: 40, Cmdline: "isolcpus=1-9,11-39", Busy: mask("1-9,11-39"), Duration: 2 * time.Second}},
		// kernel.timer_migration, written as the recording starts, with
		// the hrtimer events: sleepers on nohz_full CPUs arm hrtimers
		// that the kernel may place on a housekeeping CPU.
		"4-tm0": {"vm4-1node-nohzfull-hrtimers-tm0", "kernel.timer_migration=0: hrtimers of nohz_full sleepers",
			lab.Spec{CPUs: 4, Cmdline: "nohz_full=1-3", HRTimers: true, Busy: mask("3"), Sleepers: mask("1-2"), Period: 10 * time.Millisecond,
				Duration: 1500 * time.Millisecond, At: at(tm(false))}},
		"4-tm1": {"vm4-1node-nohzfull-hrtimers-tm1", "kernel.timer_migration=1 (the default, written anyway): hrtimers of nohz_full sleepers",
			lab.Spec{CPUs: 4, Cmdline: "nohz_full=1-3", HRTimers: true, Busy: mask("3"), Sleepers: mask("1-2"), Period: 10 * time.Millisecond,
				Duration: 1500 * time.Millisecond, At: at(tm(true))}},
	}
	for _, k := range []struct {
		series string
		names  []string
	}{
		{"6.12", []string{"4-isol", "16-partition", "4-tm0", "4-tm1"}},
		{"6.1", []string{"2", "4-isol", "9", "16x2-isol"}},
		{"6.19", []string{"2", "4-isol", "rt8", "9", "12-nohzfull", "16x2-isol", "18x2-isol", "16-partition", "40-isol"}},
		{"7.2", []string{"2", "4-isol", "16x2-isol", "16-partition"}},
		{"7.3", []string{"2", "4-isol", "rt8", "9", "12-nohzfull", "16x2-isol", "18x2-isol", "16-partition", "4-tm0", "4-tm1", "40-isol"}},
	} {
		for _, n := range k.names {
			c := common[n]
			sp := c.spec
			sp.KernelVersion = k.series
			file := c.file + "-" + k.series + ".txt"
			shapes = append(shapes, Shape{Name: n + "@" + k.series, File: file, Note: c.note, Spec: sp})
		}
	}
	return shapes
}

// MatrixOptions says which shapes to record or check, and where.
type MatrixOptions struct {
	// Shapes names the shapes (Shape.Name); nil means all of Matrix().
	Shapes []string
	// Dir holds the recordings: Record writes them there, and without
	// Record they are read from there.
	Dir string
	// Record records every shape anew (QEMU); otherwise the recordings in
	// Dir are checked as they are.
	Record bool
	// Duration, when set, replaces every shape's recording length.
	Duration time.Duration
	// Host is where the recorder finds its tools (the cache).
	Host lab.Host
	// Retries is how many times a shape whose recording failed is
	// recorded again (the guest died after its boot, for one); the
	// recorder itself boots again a guest that died before its /init.
	Retries int
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
	// Compare tunes the simulations.
	Compare CompareOptions
}

// MatrixRow is the outcome for one shape.
type MatrixRow struct {
	Shape  Shape
	Path   string // the recording
	Kernel string // "6.12.118", with " PREEMPT_RT" for the rt kernel
	// BootLine is the kernel's boot line, which BootLine found to be
	// the model's.
	BootLine string
	Events   int           // events in the recording
	Record   time.Duration // wall time of the recording; 0 when not recorded
	Result   *replay.Result
	Comp     *Comparison
}

// Totals sums the row's checks: every decision checked, matched,
// undetermined and mismatched.
func (r *MatrixRow) Totals() (checked, matched, undetermined, mismatched int) {
	for _, c := range []*replay.Counts{r.Result.Wheel, r.Result.Tmigr, r.Result.Hrtimer} {
		if c != nil {
			checked += c.Checked
			matched += c.Matched
			undetermined += c.Undetermined
			mismatched += len(c.Mismatches)
		}
	}
	return
}

// SelectShapes returns the named shapes of the matrix, in its order.
func SelectShapes(names []string) ([]Shape, error) {
	all := Matrix()
	if len(names) == 0 {
		return all, nil
	}
	var out []Shape
	seen := map[string]bool{}
	for _, n := range names {
		found := false
		for _, sh := range all {
			if sh.Name == n {
				if !seen[n] {
					out = append(out, sh)
					seen[n] = true
				}
				found = true
			}
		}
		if !found {
			var known []string
			for _, sh := range all {
				known = append(known, sh.Name)
			}
			return nil, fmt.Errorf("no shape %q in the matrix (shapes: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// RunMatrix records (with Record) and checks every selected shape. A
// failed recording or check ends the run with its error; the rows done so
// far are returned with it.
func RunMatrix(ctx context.Context, o MatrixOptions) ([]MatrixRow, error) {
	shapes, err := SelectShapes(o.Shapes)
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("matrix: no directory for the recordings")
	}
	if o.Duration < 0 {
		return nil, errors.New("matrix: negative duration")
	}
	p := progress{o.Progress}
	var rows []MatrixRow
	for _, sh := range shapes {
		// Checking the recordings alone takes seconds a shape: a
		// Ctrl-C must end it between shapes too, not only a recording.
		if err := ctx.Err(); err != nil {
			return rows, fmt.Errorf("interrupted before shape %s: %w", sh.Name, err)
		}
		row := MatrixRow{Shape: sh, Path: filepath.Join(o.Dir, sh.File)}
		if o.Duration > 0 {
			row.Shape.Spec.Duration = o.Duration
		}
		if o.Record {
			spec := row.Shape.Spec
			spec.Host = o.Host
			spec.Progress = o.Progress
			start := time.Now()
			p.printf("recording shape %s: tmigr lab record %s -o %s", sh.Name, row.Shape.Flags(), row.Path)
			for attempt := 0; ; attempt++ {
				err := lab.RecordFile(ctx, spec, row.Path)
				if err == nil {
					break
				}
				if ctx.Err() != nil || attempt >= o.Retries {
					return rows, fmt.Errorf("shape %s: %w", sh.Name, err)
				}
				// Multi-threaded TCG races the kernel patching its own
				// code (tracepoints turned on, static keys) now and then,
				// after boot too, and the guest dies; record again.
				p.printf("shape %s: %v; recording it again (%d of %d retries)", sh.Name, err, attempt+1, o.Retries)
			}
			row.Record = time.Since(start)
			p.printf("shape %s recorded in %.1f s", sh.Name, row.Record.Seconds())
		}
		tr, err := replay.ReadFile(row.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				err = fmt.Errorf("%w: record it with \"tmigr lab record %s -o %s\", or run the matrix without --no-record", err, row.Shape.Flags(), row.Path)
			}
			return rows, fmt.Errorf("shape %s: %w", sh.Name, err)
		}
		m := tr.Header.Machine
		if m == nil {
			return rows, fmt.Errorf("shape %s: %s has no \"# machine:\" line", sh.Name, row.Path)
		}
		if m.CPUs != sh.Spec.CPUs {
			return rows, fmt.Errorf("shape %s: %s is of a %d-CPU machine, the shape has %d", sh.Name, row.Path, m.CPUs, sh.Spec.CPUs)
		}
		if row.BootLine, err = BootLine(&tr.Header); err != nil {
			return rows, fmt.Errorf("shape %s: %s: %w", sh.Name, row.Path, err)
		}
		row.Kernel = m.Kernel
		if l, err := replay.LoadOf(m); err == nil && l.PreemptRT {
			row.Kernel += " PREEMPT_RT"
		}
		row.Events = len(tr.Events)
		if row.Result, err = replay.Run(tr, replay.Options{Wheel: hasBucketExpiry(tr), Tmigr: true, Hrtimer: true}); err != nil {
			return rows, fmt.Errorf("shape %s: replay: %w", sh.Name, err)
		}
		if row.Comp, err = Compare(tr, o.Compare); err != nil {
			return rows, fmt.Errorf("shape %s: compare: %w", sh.Name, err)
		}
		if err := ctx.Err(); err != nil {
			return rows, fmt.Errorf("interrupted in shape %s: %w", sh.Name, err)
		}
		_, matched, undet, mism := row.Totals()
		p.printf("shape %s: %d events, %d matched, %d undetermined, %d mismatched", sh.Name, row.Events, matched, undet, mism)
		rows = append(rows, row)
	}
	return rows, nil
}

// hasBucketExpiry reports whether the trace's timer_start events print
// the bucket expiry the wheel check compares (Linux 6.1's do not): only
// then is the wheel checked.
func hasBucketExpiry(t *replay.Trace) bool {
	for _, ev := range t.Events {
		if p, ok := ev.Data.(ftrace.TimerStart); ok && p.NoBucketExpiry {
			return false
		}
	}
	return true
}

// Mismatched reports whether any row's checks found a mismatch.
func Mismatched(rows []MatrixRow) bool {
	for i := range rows {
		if rows[i].Result.Mismatched() {
			return true
		}
	}
	return false
}

// WriteConformance writes the matrix as a Markdown document. dir is the
// recordings' directory as the reader should see it (a path relative to
// writeByKernel writes the grid of shapes by kernel series: for each
// shape (the name before "@") and series, the decisions matched over
// checked, with the undetermined and mismatched, and the compare's pulls
// agreement (recorded background).
func writeByKernel(b *strings.Builder, rows []MatrixRow) {
	var names, series []string
	cell := map[[2]string]string{}
	for i := range rows {
		r := &rows[i]
		name, ser, ok := strings.Cut(r.Shape.Name, "@")
		if !ok {
			ser = seriesOfRelease(r.Kernel)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
		if !slices.Contains(series, ser) {
			series = append(series, ser)
		}
		c, m, u, x := r.Totals()
		text := fmt.Sprintf("%d/%d (%d u, %d x)", m, c, u, x)
		if s := r.Comp.Sim(RecordedBackground); s != nil {
			text += fmt.Sprintf("; pulls %d/%d", s.Agreement.Shared, s.Agreement.Union)
		}
		cell[[2]string{name, ser}] = text
	}
	if len(series) < 2 {
		return
	}
	slices.SortFunc(series, func(a, b string) int {
		if versionBefore(a+".0", b+".0") {
			return -1
		}
		if versionBefore(b+".0", a+".0") {
			return 1
		}
		return 0
	})
	b.WriteString("## By kernel\n\n")
	b.WriteString("Each shape on each kernel series: decisions matched/checked (undetermined u,\n" +
		"mismatched x), then the compare's pulls agreement with the recorded background\n" +
		"(shared/union). Linux 6.1 has no hierarchy: its timers are pushed when queued, and only\n" +
		"the wheel's decisions are checked. From 6.19 isolated CPUs leave the hierarchy, and the\n" +
		"replay leaves many of their decisions undetermined until it learns that exclusion.\n\n")
	b.WriteString("| shape |")
	for _, s := range series {
		b.WriteString(" " + s + " |")
	}
	b.WriteString("\n|---|")
	for range series {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, n := range names {
		b.WriteString("| " + n + " |")
		for _, s := range series {
			c := cell[[2]string{n, s}]
			if c == "" {
				c = "-"
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// seriesOfRelease returns "6.12" of "6.12.118 PREEMPT_RT".
func seriesOfRelease(release string) string {
	p := versionParts(strings.Fields(release + " x")[0])
	if p == nil {
		return release
	}
	return fmt.Sprintf("%d.%d", p[0], p[1])
}

// the repository); cmd is the command that wrote the document.
func WriteConformance(w io.Writer, rows []MatrixRow, dir, cmd string) error {
	var b strings.Builder
	b.WriteString("# Conformance matrix\n\n")
	fmt.Fprintf(&b, "Real Linux kernels of many shapes, recorded under QEMU with `tmigr lab record`, run\n"+
		"through the model (`tmigr replay`) and the simulator (`tmigr lab compare`). Written by\n\n"+
		"    %s\n\n"+
		"from the recordings in `%s`; `go run ./cmd/tmigr lab matrix --out docs/conformance.md`\n"+
		"records them all anew first (QEMU: about 25 minutes on a 2-core host, the 40- and 64-CPU\n"+
		"guests' boots the most of it), `--shapes NAME,NAME` takes a subset. A shape named\n"+
		"NAME@SERIES is NAME on that kernel series; the first ten are of 6.12. Every recording's\n"+
		"boot line was checked against the hierarchy the model builds for its machine (what\n"+
		"`tmigr topo` prints; none before 6.9).\n\n", cmd, dir)
	writeByKernel(&b, rows)

	b.WriteString("## The kernel's decisions\n\n")
	b.WriteString("Every decision the recording shows, checked against the model: the wheel's bucket of\n" +
		"every `timer_start`, every decision of the migration hierarchy (tmigr), and the hard or\n" +
		"soft mode of every sleeper's hrtimer. A decision is matched, mismatched, or\n" +
		"undetermined when it depends on what the recording does not hold (state from before it\n" +
		"began), with the reason; nothing is guessed.\n\n")
	b.WriteString("| shape | kernel | events | checked | matched | undetermined | mismatched | wheel | tmigr | hrtimer |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|---|---|---|\n")
	for i := range rows {
		r := &rows[i]
		c, m, u, x := r.Totals()
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %s | %s | %s |\n",
			r.Shape.Name, r.Kernel, r.Events, c, m, u, x,
			countsCell(r.Result.Wheel), countsCell(r.Result.Tmigr), countsCell(r.Result.Hrtimer))
	}
	b.WriteString("\nEach check's cell is matched/checked, with the undetermined in parentheses.\n")
	var undet []string
	for i := range rows {
		r := &rows[i]
		for _, ck := range []struct {
			name string
			c    *replay.Counts
		}{{"tmigr", r.Result.Tmigr}, {"hrtimer", r.Result.Hrtimer}} {
			if ck.c != nil && ck.c.Undetermined > 0 {
				undet = append(undet, fmt.Sprintf("- %s, %s: %s", r.Shape.Name, ck.name, ck.c.Reasons()))
			}
		}
	}
	if len(undet) > 0 {
		b.WriteString("Why the undetermined are:\n\n" + strings.Join(undet, "\n") + "\n")
	}
	var mism []string
	for i := range rows {
		r := &rows[i]
		for _, ck := range []struct {
			name string
			c    *replay.Counts
		}{{"wheel", r.Result.Wheel}, {"tmigr", r.Result.Tmigr}, {"hrtimer", r.Result.Hrtimer}} {
			if ck.c == nil {
				continue
			}
			for k, mm := range ck.c.Mismatches {
				if k == 5 {
					mism = append(mism, fmt.Sprintf("- %s, %s: %d more", r.Shape.Name, ck.name, len(ck.c.Mismatches)-k))
					break
				}
				mism = append(mism, fmt.Sprintf("- %s, %s, line %d: %s: kernel %s, model %s", r.Shape.Name, ck.name, mm.Line, mm.Event, mm.Kernel, mm.Model))
			}
		}
	}
	if len(mism) > 0 {
		b.WriteString("\nMismatches:\n\n" + strings.Join(mism, "\n") + "\n")
		b.WriteString("\nThe replay takes a machine as it booted and applies no run-time change (`at=`)\n" +
			"yet, so a recording with one may show mismatches after it; testdata/traces/README.md\n" +
			"says what each of those is.\n")
	} else {
		b.WriteString("\nNo mismatch: every determined decision of every recording is the model's.\n")
	}

	b.WriteString("\n## Who pulls whom: kernel against simulator\n\n")
	b.WriteString("`tmigr lab compare` simulates each recording's machine (shape, isolation, the policy of\n" +
		"its kernel, PREEMPT_RT, the busy loops and sleepers) and compares which CPUs expired other\n" +
		"CPUs' timers, and whose, at which level of the hierarchy. Both sides are read from their\n" +
		"trace by the same code. The simulated timers are the recording's background (its own\n" +
		"timers on the same CPUs at the same moments, and its unloaded CPUs active when it shows\n" +
		"them active) or the simulator's housekeeping mix (what `tmigr sim` runs).\n\n" +
		"- *pulls*: the pulls (handler, target, level) both sides show, over those either shows\n" +
		"  (each counted once: how often is timing, which emulation changes);\n" +
		"- *handlers*: the same over the targets both sides pulled: given that a CPU's timers\n" +
		"  were pulled, do both agree on who pulled them and at which level;\n" +
		"- *weighted*: the share of the remote expiries on pulls both sides show\n" +
		"  (Σ min of the two shares).\n\n")
	b.WriteString("| shape | kernel pulls | background: pulls | handlers | weighted | mix: pulls | handlers | weighted |\n")
	b.WriteString("|---|--:|---|---|--:|---|---|--:|\n")
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(&b, "| %s | %d |", r.Shape.Name, r.Comp.Kernel.Total)
		for _, src := range []TimerSource{RecordedBackground, HousekeepingMix} {
			s := r.Comp.Sim(src)
			if s == nil {
				b.WriteString(" - | - | - |")
				continue
			}
			a := s.Agreement
			fmt.Fprintf(&b, " %d/%d | %d/%d | %.2f |", a.Shared, a.Union, a.HandlersShared, a.HandlersUnion, a.Weighted)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nThe replay above checks every decision of the kernel's; the compare asks more of the\n" +
		"simulator: to run the machine on its own and end up with the same pulls. Where the sides\n" +
		"differ, the usual causes are when CPUs sleep, not whom the hierarchy picks: a guest CPU\n" +
		"awake at an expiry the simulated one slept through, or the other way round (under TCG the\n" +
		"guest's jiffies often lag its clock, so it stops its tick for a timer one jiffy away, which\n" +
		"the simulator, whose jiffies never lag, does not), and a pull seen once in a few seconds. The mix places\n" +
		"its global timers on the first housekeeping CPU of the machine and of each node, where the\n" +
		"guest's kernel threads put theirs elsewhere. *handlers* isolates the hierarchy's choice.\n")
	b.WriteString("\nThe pulls themselves, as `tmigr lab compare FILE` prints them (level, handler, then\n" +
		"target:count on each side):\n\n")
	for i := range rows {
		b.WriteString("```\n")
		var t strings.Builder
		if err := rows[i].Comp.WriteText(&t); err != nil {
			return err
		}
		// Name the recording by its file alone: the document must not
		// carry the paths of the machine that wrote it.
		text := strings.Replace(t.String(), rows[i].Comp.File, rows[i].Shape.File, 1)
		b.WriteString(text)
		b.WriteString("```\n\n")
	}

	b.WriteString("## The recordings\n\n")
	b.WriteString("| shape | file | `tmigr lab record` flags | what for |\n|---|---|---|---|\n")
	for i := range rows {
		r := &rows[i]
		fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", r.Shape.Name, r.Shape.File, r.Shape.Flags(), r.Shape.Note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func countsCell(c *replay.Counts) string {
	if c == nil {
		return "-"
	}
	s := fmt.Sprintf("%d/%d", c.Matched, c.Checked)
	if c.Undetermined > 0 {
		s += fmt.Sprintf(" (%d)", c.Undetermined)
	}
	if n := len(c.Mismatches); n > 0 {
		s += fmt.Sprintf(", **%d mismatched**", n)
	}
	return s
}

// progress prints progress lines, or nothing without a writer.
type progress struct{ w io.Writer }

func (p progress) printf(format string, args ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}
