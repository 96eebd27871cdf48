package ftrace

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The recordings in testdata/tracecmd (testdata/tracecmd/README.md says how
// they were made) hold one kernel run each in every form trace-cmd writes:
// the tracefs text read before trace-cmd extract, the trace.dat it wrote
// (version 7, zstd), the same converted to version 6 and to uncompressed
// version 7, and trace-cmd report's text with and without plugins (-N),
// latency columns (-l) and nanoseconds (-t). Each form must give the events
// of the trace.dat.

const tracecmdDir = "testdata/tracecmd"

// openAll reads a trace of any form with Open.
func openAll(t testing.TB, path string) ([]Event, *Reader) {
	t.Helper()
	r, c, err := Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer c.Close()
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, r
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		evs = append(evs, ev)
	}
}

// form is one file of a recording and what its text holds less than the
// trace.dat.
type form struct {
	file   string
	format Format
	usec   bool // timestamps in microseconds
	flags  bool // latency flags present
	comm8  bool // comms cut to 8 characters (report -l)
	plugin bool // the hrtimer plugin: no mode in hrtimer_start
	exact  bool // the payload text is the kernel's, byte for byte
}

func forms(rec string) []form {
	dir := filepath.Join(tracecmdDir, rec)
	tracefs := filepath.Join(dir, "tracefs.txt")
	if rec == "host2" {
		tracefs = filepath.Join(tracesDir, "kvm2-1node-sleepers.txt")
	}
	j := func(f string) string { return filepath.Join(dir, f) }
	return []form{
		{file: tracefs, format: FormatTracefs, usec: true, flags: true, exact: true},
		{file: j("v6.dat.gz"), format: FormatTraceDat, flags: true, exact: true},
		{file: j("v7none.dat.gz"), format: FormatTraceDat, flags: true, exact: true},
		{file: j("report.txt.gz"), format: FormatReport, usec: true, plugin: true},
		{file: j("report-N.txt.gz"), format: FormatReport, usec: true},
		{file: j("report-t.txt.gz"), format: FormatReport, plugin: true},
		{file: j("report-Nt.txt.gz"), format: FormatReport},
		{file: j("report-l.txt.gz"), format: FormatReport, usec: true, flags: true, comm8: true, plugin: true},
		{file: j("report-Nl.txt.gz"), format: FormatReport, usec: true, flags: true, comm8: true},
	}
}

// sameEvent compares an event of a form with the trace.dat's.
func sameEvent(f form, got, dat Event) string {
	want := dat
	if f.usec {
		want.TS = (dat.TS + 500) / 1000 * 1000 // the kernel's ns2usecs rounds
	}
	if !f.flags {
		want.Flags = ""
	}
	if f.comm8 && len(want.Task) > 8 {
		want.Task = want.Task[:8]
	}
	if f.flags && f.format == FormatReport {
		want.Flags = libtraceeventFlags(want.Flags)
	}
	if h, ok := want.Data.(HrtimerStart); ok && f.plugin {
		// The plugin prints neither the mode nor was_armed.
		h.Mode, h.NoMode, h.WasArmed, h.HasWasArmed = 0, true, false, false
		want.Data = h
	}
	if p, ok := want.Data.(TimerStart); ok && f.format == FormatReport {
		// libtraceevent's D|P|I on every timer (checkReportFlags).
		p.Flags = p.Flags&TimerMigrating | TimerDeferrable | TimerPinned | TimerIrqsafe
		p.FlagsUnknown = true
		want.Data = p
	}
	switch {
	case got.CPU != want.CPU || got.PID != want.PID || got.Task != want.Task || got.TS != want.TS || got.Flags != want.Flags:
		return fmt.Sprintf("%q-%d [%d] %s %d, trace.dat %q-%d [%d] %s %d", got.Task, got.PID, got.CPU, got.Flags, got.TS,
			want.Task, want.PID, want.CPU, want.Flags, want.TS)
	case !reflect.DeepEqual(got.Data, want.Data):
		return fmt.Sprintf("%s\ntrace.dat %s", describePayload(got.Data), describePayload(want.Data))
	case f.exact && got.Payload != want.Payload:
		return fmt.Sprintf("payload %q\ntrace.dat %q", got.Payload, want.Payload)
	}
	return ""
}

// libtraceeventFlags is how trace-cmd report -l shows the flags the
// kernel shows as k: libtraceevent's data_latency_format knows only
// irqs-off, one need-resched bit, hard and soft irq.
func libtraceeventFlags(k Flags) Flags {
	b := []byte(k)
	switch b[0] {
	case 'D':
		b[0] = 'd'
	case 'b':
		b[0] = '.'
	}
	switch b[1] {
	case 'N', 'n', 'B', 'b':
		b[1] = 'N'
	default:
		b[1] = '.'
	}
	switch b[2] {
	case 'Z':
		b[2] = 'h'
	case 'z':
		b[2] = '.'
	}
	return Flags(b)
}

// markersOf lists the Lost and BufferStarted markers: the event index
// they precede, CPU and count.
func markersOf(evs []Event) (events []Event, markers []string) {
	for _, ev := range evs {
		switch p := ev.Data.(type) {
		case Lost:
			markers = append(markers, fmt.Sprintf("before %d: CPU %d lost %d", len(events), ev.CPU, p.Count))
		case BufferStarted:
			markers = append(markers, fmt.Sprintf("before %d: CPU %d buffer started", len(events), ev.CPU))
		default:
			events = append(events, ev)
		}
	}
	return events, markers
}

func TestTraceCmdForms(t *testing.T) {
	for _, rec := range []string{"host2", "lost"} {
		datEvents, dr := openAll(t, filepath.Join(tracecmdDir, rec, "trace.dat"))
		if s := dr.Source(); s.Format != FormatTraceDat || s.DatVersion != 7 || s.Compression != "zstd" || s.Buffer != "ftin" || s.Clock != "local" {
			t.Fatalf("%s: source %+v", rec, s)
		}
		dat, datMarkers := markersOf(datEvents)
		if len(dat) < 500 {
			t.Fatalf("%s: only %d events", rec, len(dat))
		}
		for _, f := range forms(rec) {
			t.Run(rec+"/"+filepath.Base(f.file), func(t *testing.T) {
				all, r := openAll(t, f.file)
				if s := r.Source(); s.Format != f.format || s.Gzip != strings.HasSuffix(f.file, ".gz") {
					t.Errorf("source %+v, want format %v", s, f.format)
				}
				evs, markers := markersOf(all)
				if len(evs) != len(dat) {
					t.Fatalf("%d events, trace.dat %d", len(evs), len(dat))
				}
				for i := range evs {
					if d := sameEvent(f, evs[i], dat[i]); d != "" {
						t.Fatalf("event %d (line %d): %s", i, evs[i].Line, d)
					}
				}
				// The text of trace-cmd shows the losses of the
				// trace.dat; the kernel's text has only its
				// "buffer started" lines.
				if f.format == FormatTracefs {
					for _, m := range markers {
						if !strings.HasSuffix(m, "buffer started") {
							t.Errorf("tracefs marker %s", m)
						}
					}
					if (len(datMarkers) > 0) != (len(markers) > 0) {
						t.Errorf("tracefs markers %q, trace.dat %q", markers, datMarkers)
					}
				} else if !reflect.DeepEqual(markers, datMarkers) {
					t.Errorf("markers %q, trace.dat %q", markers, datMarkers)
				}
			})
		}
		if rec == "lost" && len(datMarkers) != 2 {
			t.Errorf("lost: trace.dat markers %q, want one per CPU", datMarkers)
		}
	}
}

// TestLostStats: the losses are where the kernel's statistics, read
// after the recording (stats.txt: per_cpu/cpuN/stats), say they are: each
// CPU's count is its overrun.
func TestLostStats(t *testing.T) {
	for _, rec := range []string{"host2", "lost"} {
		overrun := map[int]int64{}
		cpu := -1
		for _, l := range strings.Split(string(gunzip(t, filepath.Join(tracecmdDir, rec, "stats.txt"))), "\n") {
			if _, err := fmt.Sscanf(l, "cpu%d:", &cpu); err == nil {
				continue
			}
			var n int64
			if _, err := fmt.Sscanf(l, "overrun: %d", &n); err == nil {
				overrun[cpu] = n
			}
		}
		for _, f := range []string{"trace.dat", "report.txt.gz"} {
			evs, r := openAll(t, filepath.Join(tracecmdDir, rec, f))
			lost := map[int]int64{}
			for _, ev := range evs {
				if l, ok := ev.Data.(Lost); ok {
					lost[ev.CPU] += l.Count
				}
			}
			for c, n := range overrun {
				if lost[c] != n {
					t.Errorf("%s/%s: CPU %d lost %d, the kernel counted %d overrun", rec, f, c, lost[c], n)
				}
			}
			var sum int64
			for _, n := range overrun {
				sum += n
			}
			if s := r.Stats(); s.Lost != sum || s.LostUnknown != 0 {
				t.Errorf("%s/%s: stats %+v, overrun %d", rec, f, s, sum)
			}
		}
	}
}

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(path, ".gz") {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTemp(t testing.TB, name string, data []byte) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPerCPUFilesConcatenated (issue 14): the kernel's per-CPU files of one
// recording, concatenated, read as the merged file does; a streaming
// Reader refuses them, naming the line.
func TestPerCPUFilesConcatenated(t *testing.T) {
	dir := filepath.Join(tracecmdDir, "host2")
	cpu0, cpu1 := gunzip(t, filepath.Join(dir, "cpu0.txt.gz")), gunzip(t, filepath.Join(dir, "cpu1.txt.gz"))
	want, _ := openAll(t, filepath.Join(tracesDir, "kvm2-1node-sleepers.txt"))
	// Within one microsecond the merged file holds the CPUs' events in
	// the kernel's nanosecond order, which per-CPU text cannot give: the
	// sorted files put them lowest CPU first.
	slices.SortStableFunc(want, func(a, b Event) int { return cmp.Or(cmp.Compare(a.TS, b.TS), a.CPU-b.CPU) })
	for _, order := range [][]byte{append(bytes.Clone(cpu1), cpu0...), append(bytes.Clone(cpu0), cpu1...)} {
		got, _ := openAll(t, writeTemp(t, "cat.txt", order))
		if len(got) != len(want) {
			t.Fatalf("%d events, the merged file %d", len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			g.Line, w.Line = 0, 0
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("event %d: %s, merged %s", i, describeEvent(got[i]), describeEvent(want[i]))
			}
		}
	}
	// Each CPU's file alone is refused: its header counts the events of
	// both, as a cut file's would.
	for _, b := range [][]byte{cpu0, cpu1} {
		_, _, err := readWhole(t, string(b))
		if err == nil || !strings.Contains(err.Error(), "one CPU's file per_cpu/cpuN/trace") {
			t.Errorf("one CPU's file: %v", err)
		}
	}
	r := NewReader(bytes.NewReader(append(bytes.Clone(cpu1), cpu0...)))
	var err error
	for err == nil {
		_, err = r.Next()
	}
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "out of time order") || !strings.Contains(err.Error(), "on CPU 1 (line ") {
		t.Errorf("streaming reader: %v", err)
	}
	if le != nil && le.Line != bytes.Count(cpu1, []byte("\n"))+13 {
		t.Errorf("error at line %d, want the first line of CPU 0's events", le.Line)
	}
}

// TestTimeBackwards: an event earlier than one before it on the same CPU
// is an error naming both lines, sorted or not.
func TestTimeBackwards(t *testing.T) {
	text := `# tracer: nop
          <idle>-0       [000] d..2.   100.000010: timer_cancel: timer=000000006ac7c0b3
          <idle>-0       [001] d..2.   100.000011: timer_cancel: timer=000000006ac7c0b4
          <idle>-0       [000] d..2.   100.000009: timer_cancel: timer=000000006ac7c0b3
`
	want := "line 4: time goes backwards on CPU 0: 100.000009 after 100.000010 on line 2"
	r := NewReader(strings.NewReader(text))
	var err error
	for err == nil {
		_, err = r.Next()
	}
	if err == nil || err.Error() != want+" (a broken recording, or recordings spliced together?)" {
		t.Errorf("NewReader: %v", err)
	}
	_, _, err = readWhole(t, text)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("OpenReader: %v", err)
	}
}

func readWhole(t testing.TB, text string) ([]Event, *Reader, error) {
	r, c, err := OpenReader(strings.NewReader(text), "test")
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs, r, nil
		}
		if err != nil {
			return evs, r, err
		}
		evs = append(evs, ev)
	}
}

// TestRawClockTraceDat: a trace.dat whose clock counts no nanoseconds is
// refused, not read as if it did.
func TestRawClockTraceDat(t *testing.T) {
	data := gunzip(t, filepath.Join(tracecmdDir, "host2", "v7none.dat.gz"))
	if !bytes.Contains(data, []byte("ftin\x00local\x00")) {
		t.Fatal("no buffer option with the local clock")
	}
	data = bytes.ReplaceAll(data, []byte("ftin\x00local\x00"), []byte("ftin\x00count\x00"))
	_, _, err := readWhole(t, string(data))
	if err == nil || !strings.Contains(err.Error(), `trace clock "count" counts no nanoseconds`) {
		t.Errorf("error %v", err)
	}
}

// TestSimulatorTrace: the simulator's own traces, which stamp a CPU's
// events out of order, are read as written, with a warning.
func TestSimulatorTrace(t *testing.T) {
	text := `# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.19.0-tmigr-sim hz=250 cmdline="" busy= sleepers= (tmigr sim, policy pull-isolated)
# tracer: nop
          <idle>-0       [000] d.h2.     0.052018: timer_cancel: timer=0000000000000001
          <idle>-0       [000] d..2.     0.052000: timer_cancel: timer=0000000000000002
`
	evs, r, err := readWhole(t, text)
	if err != nil || len(evs) != 2 || evs[0].TS != 52018000 {
		t.Fatalf("%v %v", evs, err)
	}
	if w := r.Source().Warnings; len(w) != 1 || !strings.Contains(w[0], "simulator") {
		t.Errorf("warnings %q", w)
	}
	// The same lines from a kernel are refused.
	if _, _, err := readWhole(t, strings.Replace(text, "-tmigr-sim", "", 1)); err == nil {
		t.Error("a kernel's trace with time going backwards read")
	}
}

// describeWhole reads text with OpenReader and describes every event.
func describeWhole(t *testing.T, text string) ([]string, *Reader) {
	t.Helper()
	evs, r, err := readWhole(t, text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, describeEvent(ev))
	}
	return got, r
}

// TestSortMarkers: sorting keeps a CPU's Lost marker just before that CPU's
// next event, with the time of the event before it.
func TestSortMarkers(t *testing.T) {
	text := `# tracer: nop
          <idle>-0       [001] d..2.   100.000020: timer_cancel: timer=0000000000000001
CPU:1 [LOST 5 EVENTS]
          <idle>-0       [001] d..2.   100.000040: timer_cancel: timer=0000000000000002
          <idle>-0       [000] d..2.   100.000010: timer_cancel: timer=0000000000000003
          <idle>-0       [000] d..2.   100.000030: timer_cancel: timer=0000000000000004
`
	got, _ := describeWhole(t, text)
	want := []string{
		"L5 \"<idle>\" pid=0 cpu=0 flags=d..2. ts=100.000010000 TimerCancel{Timer:0x3}",
		"L2 \"<idle>\" pid=0 cpu=1 flags=d..2. ts=100.000020000 TimerCancel{Timer:0x1}",
		"L6 \"<idle>\" pid=0 cpu=0 flags=d..2. ts=100.000030000 TimerCancel{Timer:0x4}",
		"L3 cpu=1 ts=100.000030000 Lost{Count:5}",
		"L4 \"<idle>\" pid=0 cpu=1 flags=d..2. ts=100.000040000 TimerCancel{Timer:0x2}",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOpenStdin: "-" reads standard input, a file or a pipe, text or
// trace.dat, compressed or not.
func TestOpenStdin(t *testing.T) {
	dir := filepath.Join(tracecmdDir, "lost")
	want, _ := openAll(t, filepath.Join(dir, "trace.dat"))
	for _, name := range []string{"trace.dat", "v6.dat.gz", "report-Nl.txt.gz", "report-Nl.txt"} {
		var data []byte
		if name == "report-Nl.txt" {
			data = gunzip(t, filepath.Join(dir, name+".gz"))
		} else {
			var err error
			if data, err = os.ReadFile(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		for _, pipe := range []bool{false, true} {
			stdin := os.Stdin
			var f *os.File
			if pipe {
				pr, pw, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				go func() { pw.Write(data); pw.Close() }()
				f = pr
			} else {
				f, _ = os.Open(writeTemp(t, "in", data))
			}
			os.Stdin = f
			got, r := openAll(t, "-")
			os.Stdin = stdin
			f.Close()
			if r.Source().Name != "-" || len(got) != len(want) {
				t.Errorf("%s (pipe %v): source %v, %d events, want %d", name, pipe, r.Source(), len(got), len(want))
			}
		}
	}
}

// TestOpenForeign: what is no trace is named.
func TestOpenForeign(t *testing.T) {
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	for _, tc := range []struct{ name, data, want string }{
		{"random binary", "\x00\x13\x9f\x02\xff\xfe\x01\x80binary\n", "binary data"},
		{"perf.data", "PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00", "perf.data"},
		{"JSON", `{"traceEvents": []}` + "\n", "JSON"},
		{"Perfetto JSON", `[{"name": "x"}]` + "\n", "JSON"},
		{"PNG", "\x89PNG\r\n\x1a\n", "PNG"},
		{"ELF", "\x7fELF\x02\x01\x01", "ELF"},
		{"zstd", "\x28\xb5\x2f\xfd\x00\x00", "zstd"},
		{"empty", "", "no ftrace header"},
		{"gzip'd JSON", gz(`{"a": 1}` + "\n"), "JSON"},
		{"bad gzip", "\x1f\x8b\x08\x00junk", "gzip"},
		{"prose", "Dear diary,\ntoday I traced.\n", "neither a header comment nor an event line"},
		{"broken trace.dat", "\x17\x08\x44tracing7\x00\x00\x08\x00\x10\x00\x00none\x00\x00\xff\xff\x00\x00\x00\x00\x00\x00", "trace.dat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readWhole(t, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, _, err := Open(t.TempDir()); err == nil {
		t.Error("a directory opened")
	}
	if _, _, err := Open(filepath.Join(t.TempDir(), "nosuch")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestReportForms: trace-cmd report's own lines, one form each.
func TestReportForms(t *testing.T) {
	text := `version = 6
CPU 3 is empty
cpus=4
ftin:        record.sh-10478 [001]   503.191711: hrtimer_expire_entry: hrtimer=0xffff888627d206f8 now=503168061112 function=tick_nohz_handler/0x0
ftin: CPU:0 [12 EVENTS DROPPED]
          apt-get-10356 [000]   503.191716: hrtimer_start:        hrtimer=0xffff888627c206f8 function=hrtimer_wakeup/0xffffffffffffffd0 expires=503172000000 softexpires=503172000000
ftin: CPU:2 [EVENTS DROPPED]
ftin: record.s-10478   2d.h3.   503.191720: hrtimer_setup:        hrtimer=0xffff8881047c8220 clockid=CLOCK_MONOTONIC mode=0x9
ftin: CPU:2 [SUBBUFFER START]
ftin:      kworker/0:0-9     [002]   503.199717: (+5)     tmigr_group_set_cpu_active: group=0xffff8881003d8500 lvl=0 numa=0 active=3 migrator=2 parent=(nil) childmask=1
`
	got, r := describeWhole(t, text)
	want := []string{
		`L4 "record.sh" pid=10478 cpu=1 ts=503.191711000 HrtimerExpireEntry{Hrtimer:0xffff888627d206f8 Function:"tick_nohz_handler" Now:503168061112}`,
		`L5 cpu=0 ts=503.191711000 Lost{Count:12}`,
		`L6 "apt-get" pid=10356 cpu=0 ts=503.191716000 HrtimerStart{Hrtimer:0xffff888627c206f8 Function:"hrtimer_wakeup" Expires:503172000000 SoftExpires:503172000000 Mode:ABS WasArmed:false HasWasArmed:false NoMode:true}`,
		`L7 cpu=2 ts=503.191716000 Lost{Count:-1}`,
		`L8 "record.s" pid=10478 cpu=2 flags=d.h3. ts=503.191720000 HrtimerSetup{Hrtimer:0xffff8881047c8220 ClockID:CLOCK_MONOTONIC Mode:REL|HARD}`,
		`L10 "kworker/0:0" pid=9 cpu=2 ts=503.199717000 TmigrGroupSetCPUActive{Group:0xffff8881003d8500 Lvl:0 Numa:0 Active:3 Migrator:2 Parent:0x0 Childmask:1}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Source().Format != FormatReport || r.Header().CPUs != 4 {
		t.Errorf("source %v, header %+v", r.Source(), r.Header())
	}
	s := r.Stats()
	if s.Lost != 12 || s.LostUnknown != 1 {
		t.Errorf("stats %+v", s)
	}
	// trace-cmd report -R: raw fields.
	_, _, err := readWhole(t, "cpus=1\n          <idle>-0     [000]  1.000001: hrtimer_setup:        hrtimer=0x1 clockid=1 mode=1\n")
	if err == nil || !strings.Contains(err.Error(), `field "clockid": "1" is not a known name (trace-cmd report -R`) {
		t.Errorf("raw fields: %v", err)
	}
	// Newer trace-cmd prints the latency flags after the CPU.
	evs, _, err := readWhole(t, "cpus=1\n          <idle>-0     [000] d..2.  1.000001: timer_cancel:         timer=0x1\n")
	if err != nil || len(evs) != 1 || evs[0].Flags != "d..2." {
		t.Errorf("flags after the CPU: %v %v", evs, err)
	}
	// A raw clock count (trace-cmd report of a clock like x86-tsc).
	_, _, err = readWhole(t, "cpus=1\n          <idle>-0     [000] 1234567890123: timer_cancel: timer=0x1\n")
	if err == nil || !strings.Contains(err.Error(), "raw clock count") {
		t.Errorf("raw count: %v", err)
	}
}
