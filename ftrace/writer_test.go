package ftrace

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
)

// TestWriteHeaderExact writes the header of a recording whose machine line
// is already in canonical form and compares it with the file, byte for byte.
func TestWriteHeaderExact(t *testing.T) {
	for _, f := range []string{"vm16-2node-isol-busy.txt", "vm12-1node-nohzfull-busy.txt"} {
		data, err := os.ReadFile(tracesDir + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := readAll(t, data)
		var b bytes.Buffer
		w := NewWriter(&b)
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, b.Bytes()) || !bytes.HasPrefix(data[b.Len():], []byte("  ")) {
			t.Errorf("%s: header written as\n%s", f, b.String())
		}
	}
}

func TestWriteHierarchyAndNanoseconds(t *testing.T) {
	h := Header{
		CPUs:        16,
		Hierarchy:   &Hierarchy{Levels: 2, ChildrenPerGroup: 8, CrossnodeLevel: 1},
		Nanoseconds: true,
	}
	events := []Event{
		{Task: "swapper/3", PID: 0, CPU: 3, Flags: "d.h1.", TS: 1_000_000_001, Data: HrtimerExpireExit{Hrtimer: p3}},
		{Task: "sh", PID: 5, CPU: 15, TS: 2_123_456_789, Data: TmigrCPUUnavailable{CPU: 15, Parent: p2, Wakeup: KtimeMax}},
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, h, events); err != nil {
		t.Fatal(err)
	}
	want := "# Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n" +
		"# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:16\n#\n" + legend +
		"       swapper/3-0       [003] d.h1.     1.000000001: hrtimer_expire_exit: hrtimer=ffff888003e1c000\n" +
		"              sh-5       [015]     2.123456789: tmigr_cpu_unavailable: cpu=15 parent=0000000033ba0247 wakeup=9223372036854775807\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	r := NewReader(&b)
	for i := 0; ; i++ {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Data != events[i].Data || ev.TS != events[i].TS || ev.Flags != events[i].Flags {
			t.Errorf("event %d read back as %+v", i, ev)
		}
	}
	if got := r.Header(); got.Hierarchy == nil || *got.Hierarchy != *h.Hierarchy || !got.Nanoseconds || got.CPUs != 16 {
		t.Errorf("header read back as %+v", got)
	}
}

func TestAppendEventLines(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		nano bool
		want string
	}{
		{Event{Task: "<idle>", CPU: 1, Flags: "dNs2.", TS: 486_273_468_000, Data: TimerCancel{Timer: p1}}, false,
			"          <idle>-0       [001] dNs2.   486.273468: timer_cancel: timer=000000006ac7c0b3"},
		// Below the microsecond the kernel truncates.
		{Event{Task: "<idle>", CPU: 1, Flags: "dNs2.", TS: 486_273_468_999, Data: TimerCancel{Timer: p1}}, false,
			"          <idle>-0       [001] dNs2.   486.273468: timer_cancel: timer=000000006ac7c0b3"},
		{Event{Task: "a name longer than sixteen", PID: 12345678, CPU: 1234, Flags: "d..2", TS: 123_456_789_000_000, Data: TimerCancel{Timer: p1}}, false,
			"a name longer than sixteen-12345678 [1234] d..2 123456.789000: timer_cancel: timer=000000006ac7c0b3"},
		{Event{Task: "sh", PID: 1, TS: 5, Name: "sched_switch", Payload: "prev_comm=sh prev_pid=1 ==> next_comm=swapper/0"}, true,
			"              sh-1       [000]     0.000000005: sched_switch: prev_comm=sh prev_pid=1 ==> next_comm=swapper/0"},
		{Event{Task: "sh", Name: "timer_cancel", Data: TimerCancel{Timer: p1}}, false,
			"              sh-0       [000]     0.000000: timer_cancel: timer=000000006ac7c0b3"},
		{Event{CPU: 3, Data: Lost{Count: 12}}, false, "CPU:3 [LOST 12 EVENTS]"},
		{Event{CPU: 3, Data: Lost{Count: -1}}, false, "CPU:3 [LOST EVENTS]"},
		{Event{CPU: 2, Data: BufferStarted{}}, false, "##### CPU 2 buffer started ####"},
	} {
		b, err := AppendEvent([]byte("x"), tc.ev, tc.nano)
		if err != nil || string(b) != "x"+tc.want+"\n" {
			t.Errorf("%+v:\ngot  %q (%v)\nwant %q", tc.ev, b, err, tc.want)
		}
	}
}

func TestAppendEventRejects(t *testing.T) {
	ok := Event{Task: "sh", PID: 1, CPU: 0, Flags: "d..2.", TS: 1000, Data: TimerCancel{Timer: p1}}
	for _, tc := range []struct {
		edit func(*Event)
		want string
	}{
		{func(e *Event) { e.Task = "" }, `task "" is empty`},
		{func(e *Event) { e.Task = " sh" }, `task " sh" starts with a blank`},
		{func(e *Event) { e.Task = "a-1 [2] b" }, `task "a-1 [2] b" holds "-PID [CPU]"`},
		{func(e *Event) { e.Task = "a\nb" }, `task "a\nb" holds control character 0x0a`},
		{func(e *Event) { e.PID = -1 }, "PID -1 out of range"},
		{func(e *Event) { e.PID = 1 << 31 }, "PID 2147483648 out of range"},
		{func(e *Event) { e.CPU = -1 }, "CPU -1 out of range"},
		{func(e *Event) { e.CPU = cpumask.MaxCPUs }, "CPU 8192 out of range"},
		{func(e *Event) { e.Flags = "d..2.." }, `flags "d..2.." is not 4, 5 or 7 flag characters`},
		{func(e *Event) { e.Flags = "d .2." }, `flags "d .2." is not 4, 5 or 7 flag characters`},
		{func(e *Event) { e.TS = -1 }, "negative timestamp"},
		{func(e *Event) { e.Name = "timer_init" }, `Name "timer_init" but Data is timer_cancel`},
		{func(e *Event) { e.Data = nil }, `event name "" is not a tracepoint name`},
		{func(e *Event) { e.Data, e.Name = nil, "a b" }, `event name "a b" is not a tracepoint name`},
		{func(e *Event) { e.Data, e.Name, e.Payload = nil, "x", "a\nb" }, "payload holds control character 0x0a"},
	} {
		ev := ok
		tc.edit(&ev)
		b, err := AppendEvent([]byte("keep"), ev, false)
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) || string(b) != "keep" {
			t.Errorf("%+v: got %q, %v; want error ending %q", ev, b, err, tc.want)
		}
	}
	if _, err := AppendEvent(nil, Event{Task: "sh", Data: TimerStart{}}, false); err == nil ||
		err.Error() != `timer_start: field "function": "" is empty` {
		t.Errorf("bad payload: %v", err)
	}
}

func TestWriteHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		h    Header
		want string
	}{
		{Header{}, "ftrace: header: unknown CPU count (set Header.CPUs or Header.Machine)"},
		{Header{CPUs: 2, Entries: 3, Written: 2}, "ftrace: header: entries 3, written 2"},
		{Header{CPUs: 2, Tracer: "a b"}, `ftrace: header: tracer "a b"`},
		{Header{Machine: &Machine{CPUs: 2, Nodes: 1}}, `machine: field "node-cpus": 0 lists for 1 nodes`},
		{Header{CPUs: 2, Hierarchy: &Hierarchy{}}, "timer migration: 0 hierarchy levels"},
	} {
		w := NewWriter(io.Discard)
		if err := w.WriteHeader(tc.h); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %s", tc.h, err, tc.want)
		}
	}
}

// TestWriterStickyError stops at the first write error.
func TestWriterStickyError(t *testing.T) {
	w := NewWriter(&errWriter{})
	if err := w.WriteHeader(Header{CPUs: 1}); err != nil {
		t.Fatal(err) // buffered
	}
	if err := w.Flush(); err == nil {
		t.Fatal("flush succeeded")
	}
	if err := w.WriteEvent(Event{Task: "sh", Data: TimerCancel{}}); err == nil {
		t.Fatal("write after a failed flush succeeded")
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// TestSampleEventsRoundTrip writes an event of every kind and reads the
// whole file back.
func TestSampleEventsRoundTrip(t *testing.T) {
	events := sampleEvents()
	m, err := ParseMachine("cpus=4 nodes=1 node-cpus=0-3 kernel=6.12.117 hz=250")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteTrace(&b, Header{Machine: &m}, events); err != nil {
		t.Fatal(err)
	}
	h, got, _ := readAll(t, b.Bytes())
	if len(got) != len(events) || h.Entries != int64(len(events)) || h.CPUs != 4 {
		t.Fatalf("read %d events, header %+v", len(got), h)
	}
	for i := range got {
		want := events[i]
		want.Line, want.Name = got[i].Line, want.Data.Name()
		want.Payload = got[i].Payload
		if got[i] != want {
			t.Errorf("event %d:\ngot  %+v\nwant %+v", i, got[i], want)
		}
		if text, _ := FormatPayload(want.Data); text != got[i].Payload {
			t.Errorf("event %d: payload %q, want %q", i, got[i].Payload, text)
		}
	}
}

func TestReaderCRLF(t *testing.T) {
	in := "# tracer: nop\r\n          <idle>-0       [000] d..2.   100.000001: timer_cancel: timer=000000006ac7c0b3\r\n"
	_, events, _ := readAll(t, []byte(in))
	if len(events) != 1 || events[0].Data != (TimerCancel{Timer: p1}) {
		t.Errorf("got %+v", events)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		f                                 Flags
		irqsOff, resched, hard, soft, nmi bool
		depth                             int
	}{
		{"d..2.", true, false, false, false, false, 2},
		{"dNs1.", true, true, false, true, false, 1},
		{".Nh..", false, true, true, false, false, 0},
		{"D.H.1", true, false, true, true, false, 0},
		{"d.Z3.", true, false, true, false, true, 3},
		{"..z.", false, false, false, false, true, 0},
		{"...f.", false, false, false, false, false, 15},
		{"", false, false, false, false, false, 0},
		// PREEMPT_RT 6.1's seven columns: need-resched-lazy after
		// need-resched, preempt-lazy depth after the preempt depth.
		{"d..h1..", true, false, true, false, false, 1},
		{"dn.h2..", true, true, true, false, false, 2},
		{"...s.13", false, false, false, true, false, 0},
		{"d..H113", true, false, true, true, false, 1},
	} {
		f := tc.f
		if f.IRQsOff() != tc.irqsOff || f.NeedResched() != tc.resched || f.HardIRQ() != tc.hard ||
			f.SoftIRQ() != tc.soft || f.NMI() != tc.nmi || f.PreemptDepth() != tc.depth {
			t.Errorf("%q: irqsoff=%v resched=%v hard=%v soft=%v nmi=%v depth=%d", f,
				f.IRQsOff(), f.NeedResched(), f.HardIRQ(), f.SoftIRQ(), f.NMI(), f.PreemptDepth())
		}
	}
}

// TestParseLineRT61: the 7-column flags of a PREEMPT_RT 6.1 kernel read
// (lab campaign seed 20261205, draw 1, refused before).
func TestParseLineRT61(t *testing.T) {
	ev, err := ParseLine("       ktimers/5-61      [005] d..H113    10.226495: hrtimer_expire_entry: hrtimer=00000000f82047f6 function=tick_sched_timer now=10203282909")
	if err != nil || ev.Flags != "d..H113" || !ev.Flags.HardIRQ() || !ev.Flags.SoftIRQ() || ev.CPU != 5 || ev.TS != 10_226_495_000 {
		t.Errorf("%+v, %v", ev, err)
	}
}

func TestParseLine(t *testing.T) {
	ev, err := ParseLine("     rcu_preempt-15      [000] d..1.   486.273485: timer_init: timer=000000006ac7c0b3")
	if err != nil || ev != (Event{Task: "rcu_preempt", PID: 15, Flags: "d..1.", TS: 486_273_485_000, Name: "timer_init",
		Payload: "timer=000000006ac7c0b3", Data: TimerInit{Timer: p1}}) {
		t.Errorf("timer_init: %+v, %v", ev, err)
	}
	ev, err = ParseLine("              sh-1       [003] d..1.   486.273485: sched_waking: comm=a pid=2")
	if err != nil || ev.Data != nil || ev.Name != "sched_waking" || ev.Payload != "comm=a pid=2" || ev.CPU != 3 {
		t.Errorf("sched_waking: %+v, %v", ev, err)
	}
	ev, err = ParseLine("          <idle>-0       [000] d..2.   100.000004: hrtimer_cancel <-tick_nohz_idle_exit")
	if err != nil || ev.Data != nil || ev.Name != "hrtimer_cancel" || ev.Payload != "<-tick_nohz_idle_exit" {
		t.Errorf("function tracer: %+v, %v", ev, err)
	}
	if _, err = ParseLine("              sh-1       [003] d..1.   486.273485: timer_init: timer=1"); err == nil ||
		err.Error() != `timer_init: field "timer": "1" is not a pointer (16 hex digits)` {
		t.Errorf("bad payload: %v", err)
	}
	if _, err = ParseLine("# tracer: nop"); err == nil || err.Error() != "not an event line: no TASK-PID [CPU] part" {
		t.Errorf("comment: %v", err)
	}
}
