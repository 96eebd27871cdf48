package ftrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestReaderScenarios runs testdata/reader.txt: each "read" directive feeds
// its input (with a final newline unless "no-newline") to a Reader and shows
// what Next returns, then the header and the counters.
func TestReaderScenarios(t *testing.T) {
	datadriven.RunTest(t, "testdata/reader.txt", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "read":
			in := td.Input
			if !td.HasArg("no-newline") {
				in += "\n"
			}
			return describeRead(in)
		default:
			t.Fatalf("unknown directive %q", td.Cmd)
			return ""
		}
	})
}

// describeRead reads in to the end (or to a sticky error) and describes
// everything Next returned.
func describeRead(in string) string {
	var b strings.Builder
	r := NewReader(strings.NewReader(in))
	var last error
	for range 1000 {
		ev, err := r.Next()
		if err == io.EOF {
			b.WriteString("EOF\n")
			break
		}
		if err != nil {
			if last != nil && err.Error() == last.Error() {
				b.WriteString("(sticky)\n")
				break
			}
			last = err
			fmt.Fprintf(&b, "error: %v\n", err)
			continue
		}
		last = nil
		b.WriteString(describeEvent(ev))
		b.WriteByte('\n')
	}
	h := r.Header()
	fmt.Fprintf(&b, "header: tracer=%q", h.Tracer)
	if h.HasEntries {
		fmt.Fprintf(&b, " entries=%d/%d", h.Entries, h.Written)
	}
	fmt.Fprintf(&b, " cpus=%d", h.CPUs)
	if h.Nanoseconds {
		b.WriteString(" ns")
	}
	if h.Machine != nil {
		fmt.Fprintf(&b, " machine={%s}", h.Machine)
	}
	if h.Hierarchy != nil {
		fmt.Fprintf(&b, " hierarchy=%+v", *h.Hierarchy)
	}
	s := r.Stats()
	fmt.Fprintf(&b, "\nstats: lines=%d events=%d lost=%d lost-unknown=%d", s.Lines, s.Events, s.Lost, s.LostUnknown)
	if len(s.Skipped) > 0 {
		keys := make([]string, 0, len(s.Skipped))
		for k := range s.Skipped {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteString(" skipped:")
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, s.Skipped[k])
		}
	}
	b.WriteByte('\n')
	return b.String()
}

func describeEvent(ev Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d ", ev.Line)
	if ev.Name != "" {
		fmt.Fprintf(&b, "%q pid=%d ", ev.Task, ev.PID)
	}
	fmt.Fprintf(&b, "cpu=%d", ev.CPU)
	if ev.Flags != "" {
		fmt.Fprintf(&b, " flags=%s", ev.Flags)
	}
	fmt.Fprintf(&b, " ts=%d.%09d %s", ev.TS/1e9, ev.TS%1e9, describePayload(ev.Data))
	return b.String()
}

// describePayload prints a payload as Type{Field:value ...}, pointers in hex.
func describePayload(p Payload) string {
	v := reflect.ValueOf(p)
	var b strings.Builder
	b.WriteString(v.Type().Name())
	b.WriteByte('{')
	for i := range v.NumField() {
		f := v.Type().Field(i)
		fv := v.Field(i)
		if (f.Name == "NoMode" || f.Name == "FlagsUnknown") && !fv.Bool() {
			continue // marks of trace-cmd's text, shown only when set
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Name + ":")
		switch {
		case f.Name == "Timer" || f.Name == "Hrtimer" || f.Name == "Group" || f.Name == "Parent" || f.Name == "Child":
			fmt.Fprintf(&b, "%#x", fv.Uint())
		case fv.Kind() == reflect.String && f.Type.Name() == "string":
			fmt.Fprintf(&b, "%q", fv.String())
		default:
			fmt.Fprintf(&b, "%v", fv.Interface())
		}
	}
	b.WriteByte('}')
	return b.String()
}

// TestNotFtrace feeds files of other kinds: each fails at once, naming what
// it looks like, with a line number.
func TestNotFtrace(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "line 1: not ftrace text: no ftrace header and no event lines"},
		{"blank lines", "\n\n\n", "line 3: not ftrace text: no ftrace header and no event lines"},
		{"comments only", "# just a comment\n# another\n", "line 2: not ftrace text: no ftrace header and no event lines"},
		{"trace.dat", "\x17\x08\x44tracing6\x00\x00\x00\x00\x10\x00\x00", "line 1: not ftrace text: a trace-cmd trace.dat (binary): read it with ftrace.Open, or convert it with \"trace-cmd report\""},
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "line 1: not ftrace text: a PNG image"},
		{"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00", "line 1: not ftrace text: gzip-compressed data; decompress it first"},
		{"json", `{"traceEvents":[{"name":"x","ph":"X"}]}` + "\n", "line 1: not ftrace text: JSON"},
		{"json array", "[{\"a\":1}]", "line 1: not ftrace text: JSON"},
		{"text", "hello world\nsecond line\n", `line 1: not ftrace text: "hello world" is neither a header comment nor an event line`},
		{"text no newline", "hello", `line 1: not ftrace text: "hello" is neither a header comment nor an event line`},
		{"binary", "\x00\x01\x02\x03binary\n", "line 1: not ftrace text: binary data (byte 0x00 in line 1)"},
		{"comment then binary", "# x\n\x00\x01\n", "line 2: not ftrace text: binary data (byte 0x00 in line 2)"},
		{"csv", "cpu,ts,event\n0,1.5,timer_start\n", `line 1: not ftrace text: "cpu,ts,event" is neither a header comment nor an event line`},
		{"long line", strings.Repeat("x", MaxLineLen+10), "line 1: not ftrace text: a line longer than 65536 bytes"},
	} {
		r := NewReader(strings.NewReader(tc.in))
		_, err := r.Next()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
			continue
		}
		if !errors.Is(err, ErrNotFtrace) {
			t.Errorf("%s: %v is not ErrNotFtrace", tc.name, err)
		}
		var le *LineError
		if !errors.As(err, &le) || le.Line < 1 {
			t.Errorf("%s: %v carries no line", tc.name, err)
		}
		if _, err2 := r.Next(); err2 != err {
			t.Errorf("%s: second Next gave %v, want the same error", tc.name, err2)
		}
	}
}

// TestReaderContinuesAfterBadLine checks that a malformed line costs only
// that line.
func TestReaderContinuesAfterBadLine(t *testing.T) {
	in := "# tracer: nop\n" +
		"          <idle>-0       [000] d..2.   100.000001: timer_cancel: timer=000000006ac7c0b3\n" +
		"          <idle>-0       [000] d..2.   100.000002: timer_cancel: timer=xyz\n" +
		"          <idle>-0       [000] d..2.   100.000003: timer_cancel: timer=000000006ac7c0b4\n"
	r := NewReader(strings.NewReader(in))
	var got []string
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("%d %#x", ev.Line, ev.Data.(TimerCancel).Timer))
	}
	want := []string{
		"2 0x6ac7c0b3",
		`line 3: timer_cancel: field "timer": "xyz" is not a pointer (16 hex digits)`,
		"4 0x6ac7c0b4",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestReaderLongTrace reads a long generated trace through a reader that
// hands out one byte at a time, to exercise buffer refills.
func TestReaderOneByteReads(t *testing.T) {
	var buf bytes.Buffer
	events := sampleEvents()
	if err := WriteTrace(&buf, Header{CPUs: 4}, events); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&oneByteReader{buf.Bytes()})
	for i := 0; ; i++ {
		ev, err := r.Next()
		if err == io.EOF {
			if i != len(events) {
				t.Fatalf("read %d events, wrote %d", i, len(events))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Data != events[i].Data || ev.TS != events[i].TS || ev.Task != events[i].Task {
			t.Fatalf("event %d: got %+v, want %+v", i, ev, events[i])
		}
	}
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}

// TestReaderReadError passes a read error on, with the line it hit.
func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("# tracer: nop\n"), &errReader{boom}))
	_, err := r.Next()
	if !errors.Is(err, boom) || err.Error() != "line 2: read: boom" {
		t.Fatalf("got %v", err)
	}
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

// TestReaderStreams checks that Next returns an event as soon as its line
// has arrived, without waiting for more input: what following a live
// trace_pipe needs.
func TestReaderStreams(t *testing.T) {
	lines := []string{
		"# tracer: nop\n",
		"          <idle>-0       [000] d..2.   100.000001: timer_cancel: timer=000000006ac7c0b3\n",
		"          <idle>-0       [000] d..2.   100.000002: timer_cancel: timer=000000006ac7c0b4\n",
	}
	f := &feeder{t: t, lines: lines}
	r := NewReader(f)
	for i, want := range []uint64{0x6ac7c0b3, 0x6ac7c0b4} {
		f.allowed = i + 2 // the header, then one event line per Next
		ev, err := r.Next()
		if err != nil || ev.Data != (TimerCancel{Timer: want}) {
			t.Fatalf("Next %d: %+v, %v", i, ev, err)
		}
	}
	f.allowed = len(lines) + 1
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

// feeder hands out one line per Read, and fails the test if asked for more
// than allowed.
type feeder struct {
	t       *testing.T
	lines   []string
	sent    int
	allowed int
}

func (f *feeder) Read(p []byte) (int, error) {
	if f.sent == len(f.lines) {
		return 0, io.EOF
	}
	if f.sent >= f.allowed {
		f.t.Fatalf("read of line %d before the consumer needed it", f.sent+1)
	}
	n := copy(p, f.lines[f.sent])
	if n < len(f.lines[f.sent]) {
		f.t.Fatal("short buffer")
	}
	f.sent++
	return n, nil
}

// TestHeadsCache: a line's head taken from the cache of the last heads is
// the one parsing the line gives, over every line of the recordings (each
// CPU's head repeats, and changes at its context switches) and over heads
// built to mislead a cache keyed by the line's first bytes.
func TestHeadsCache(t *testing.T) {
	var lines []string
	files, _ := filepath.Glob("../testdata/traces/*.txt")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	lines = append(lines,
		"          <idle>-0       [001] d..2.   100.000001: timer_cancel: timer=00000000deadbeef",
		"          <idle>-0       [001]d..2.   100.000002: timer_cancel: timer=00000000deadbeef",
		"          <idle>-0       [0012] d..2.   100.000002: timer_cancel: timer=00000000deadbeef",
		"  kworker/[1]-12 [3]-0       [001] d..2.   100.000003: timer_cancel: timer=00000000deadbeef",
		"  kworker/[1]-12 [3]-0       [002] d..2.   100.000004: timer_cancel: timer=00000000deadbeef",
		"  kworker/[1]-12 [3]-0   ",
		"  a-b-12 [003] d..2.   100.000005: timer_cancel: timer=00000000deadbeef",
		"  a-b-12 [003] d..2.   100.000006: timer_cancel: timer=00000000deadbeef",
		"  a-b-13 [003] d..2.   100.000007: timer_cancel: timer=00000000deadbeef",
		"  -12 [003] d..2.   100.000008: timer_cancel: timer=00000000deadbeef",
		"  x-99999999999 [003] d..2.   100.000009: timer_cancel: timer=00000000deadbeef",
		"  x-1 [99999] d..2.   100.000010: timer_cancel: timer=00000000deadbeef",
	)
	if len(lines) < 1000 {
		t.Fatalf("only %d lines", len(lines))
	}
	var c heads
	cached := 0
	for _, l := range lines {
		var want, got lineHead
		wantErr := want.parse(l)
		slot := &c[headSlot(l)]
		hit := len(slot.text) > 0 && strings.HasPrefix(l, slot.text) && len(l) > len(slot.text)
		gotErr := c.parse(l, &got)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Fatalf("%q: error %v, want %v", l, gotErr, wantErr)
		}
		if wantErr == nil && (got.task != want.task || got.pid != want.pid || got.cpu != want.cpu || got.end != want.end || got.taskAt != want.taskAt) {
			t.Fatalf("%q: head %+v, want %+v", l, got, want)
		}
		if hit {
			cached++
		}
	}
	if cached < len(lines)/2 {
		t.Errorf("%d of %d heads from the cache: it does not keep them", cached, len(lines))
	}
}
