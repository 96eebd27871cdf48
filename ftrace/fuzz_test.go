package ftrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// buildPayload makes a payload of one of the 31 kinds from raw numbers and a
// symbol. With valid, every value is first brought into the range of its
// field, so the payload is one the kernel could print; without, the numbers
// go in as they are and the writer must refuse what it cannot print.
func buildPayload(kind int, v [5]uint64, sym string, valid bool) Payload {
	i32 := func(x uint64) int { // %d
		if valid {
			return int(int32(x))
		}
		return int(int64(x))
	}
	lim := func(x, n uint64) int { // %u below n
		if valid {
			return int(x % n)
		}
		return int(int64(x))
	}
	kt := func(x uint64) int64 { // u64 ns <= KTIME_MAX
		if valid {
			return int64(x >> 1)
		}
		return int64(x)
	}
	u8 := func(x uint64) uint8 { return uint8(x) }
	u32 := func(x uint64) uint32 { return uint32(x) }
	tf := func(x uint64) TimerFlags {
		if valid {
			return TimerFlags(x) & timerFlagMask
		}
		return TimerFlags(x)
	}
	usec := func(x uint64) int64 {
		if valid {
			return int64(x % 2_000_000)
		}
		return int64(x)
	}
	mode := HrtimerMode(v[4] % 16)
	cpuGroup := TmigrCPUGroup{CPU: i32(v[0]), Parent: v[1], Wakeup: kt(v[2])}
	idle := TmigrIdle{CPU: i32(v[0]), Parent: v[1], NextEvt: kt(v[2]), Wakeup: kt(v[3])}
	gac := TmigrGroupAndCPU{Group: v[0], Lvl: i32(v[1]), Numa: i32(v[1] >> 32), Active: u8(v[2]), Migrator: u8(v[2] >> 8), Parent: v[3], Childmask: u32(v[4])}
	hasCap := v[4]&1 == 1
	capacity := i32(v[4] >> 1)
	if valid && !hasCap {
		capacity = 0
	}
	switch kind % 34 {
	case 0:
		return TimerInit{Timer: v[0]}
	case 1:
		noBE := v[0]&1 == 1 && v[3]&1 == 1
		be := v[3]
		if noBE && valid {
			be = 0
		}
		return TimerStart{Timer: v[0], Function: sym, Expires: v[1], Timeout: int64(v[2]), BucketExpiry: be, NoBucketExpiry: noBE,
			CPU: lim(v[4], 1<<18), Idx: lim(v[4]>>18, 1<<10), Flags: tf(v[4] >> 28)}
	case 2:
		return TimerExpireEntry{Timer: v[0], Function: sym, Now: v[1], BaseClk: v[2]}
	case 3:
		return TimerExpireExit{Timer: v[0]}
	case 4:
		return TimerCancel{Timer: v[0]}
	case 5:
		return TimerBaseIdle{IsIdle: v[0]&1 == 1, CPU: i32(v[1])}
	case 6:
		return HrtimerInit{Hrtimer: v[0], ClockID: ClockID(int32(v[1])), Mode: mode}
	case 7:
		return HrtimerSetup{Hrtimer: v[0], ClockID: ClockID(int32(v[1])), Mode: mode}
	case 8:
		has := v[3]&1 == 1
		armed := v[3]&2 == 2
		if valid && !has {
			armed = false
		}
		return HrtimerStart{Hrtimer: v[0], Function: sym, Expires: int64(v[1]), SoftExpires: int64(v[2]), Mode: mode, WasArmed: armed, HasWasArmed: has}
	case 9:
		return HrtimerExpireEntry{Hrtimer: v[0], Function: sym, Now: int64(v[1])}
	case 10:
		return HrtimerExpireExit{Hrtimer: v[0]}
	case 11:
		return HrtimerCancel{Hrtimer: v[0]}
	case 12:
		return ItimerState{Which: i32(v[0]), Expires: v[1], ValueSec: int64(v[2]), ValueUsec: usec(v[3]), IntervalSec: int64(v[4]), IntervalUsec: usec(v[0] >> 7)}
	case 13:
		return ItimerExpire{Which: i32(v[0]), PID: i32(v[1]), Now: v[2]}
	case 14:
		return TickStop{Success: v[0]&1 == 1, Dependency: TickDep(v[1])}
	case 15:
		return TmigrGroupSet{Group: v[0], Lvl: i32(v[1]), Numa: i32(v[2])}
	case 16:
		return TmigrConnectChildParent{Group: v[0], Groupmask: u32(v[1]), Parent: v[2], Lvl: i32(v[3]), Numa: i32(v[3] >> 32),
			Capacity: capacity, HasCapacity: hasCap, NumChildren: i32(v[1] >> 32)}
	case 17:
		return TmigrConnectCPUParent{CPU: i32(v[0]), Groupmask: u32(v[1]), Parent: v[2], Lvl: i32(v[3]), Numa: i32(v[3] >> 32),
			Capacity: capacity, HasCapacity: hasCap, NumChildren: i32(v[1] >> 32)}
	case 18:
		return TmigrGroupSetCPUActive(gac)
	case 19:
		return TmigrGroupSetCPUInactive(gac)
	case 20:
		return TmigrCPUNewTimer(cpuGroup)
	case 21:
		return TmigrCPUActive(cpuGroup)
	case 22:
		return TmigrCPUAvailable(cpuGroup)
	case 23:
		return TmigrCPUUnavailable(cpuGroup)
	case 24:
		return TmigrCPUOnline(cpuGroup)
	case 25:
		return TmigrCPUOffline(cpuGroup)
	case 26:
		return TmigrHandleRemoteCPU(cpuGroup)
	case 27:
		return TmigrCPUIdle(idle)
	case 28:
		return TmigrCPUNewTimerIdle(idle)
	case 29:
		return TmigrUpdateEvents{Child: v[0], Group: v[1], GroupLvl: i32(v[2]), ChildActive: u8(v[2] >> 32), GroupActive: u8(v[2] >> 40),
			NextEvt: kt(v[3]), NextExpiry: kt(v[4]), ChildEvtExpiry: kt(v[0] ^ v[4]), ChildEvtCPU: i32(v[3] >> 32)}
	case 30:
		return HrtimerStartExpired{Hrtimer: v[0]}
	case 31:
		return HrtimerRearm{NextEvent: int64(v[0]), Deferred: v[1]&1 == 1}
	case 32:
		if valid {
			return TracingMark{Text: strings.Trim(strings.NewReplacer("\n", " ", "\r", " ").Replace(sym), " ")}
		}
		return TracingMark{Text: sym}
	default:
		return TmigrHandleRemote{Group: v[0], Lvl: i32(v[1])}
	}
}

// checkPayloadRoundTrip formats p and decodes the text: the result must be
// p, and must print the same text again. ok is false when the writer (rightly,
// with a *FieldError) refused p.
func checkPayloadRoundTrip(t interface{ Fatalf(string, ...any) }, p Payload) (ok bool) {
	text, err := AppendPayload(nil, p)
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("%+v: refused without a FieldError: %v", p, err)
		}
		return false
	}
	got, err := DecodePayload(p.Name(), string(text))
	if err != nil {
		t.Fatalf("%T %+v printed as %q, which does not decode: %v", p, p, text, err)
	}
	if got != p {
		t.Fatalf("%T printed as %q\ndecoded %+v\nwant    %+v", p, text, got, p)
	}
	again, err := AppendPayload(nil, got)
	if err != nil || !bytes.Equal(again, text) {
		t.Fatalf("%q printed again as %q (%v)", text, again, err)
	}
	return true
}

func FuzzRoundTrip(f *testing.F) {
	for k := range 34 {
		f.Add(uint8(k), uint64(0x6ac7c0b3), uint64(4295013810), uint64(1), uint64(9223372036854775807), uint64(51), "process_timeout", true)
		f.Add(uint8(k), uint64(math.MaxUint64), uint64(1<<63), uint64(1<<31), uint64(0), uint64(1<<40), "fn [mod]", false)
	}
	f.Fuzz(func(t *testing.T, kind uint8, a, b, c, d, e uint64, sym string, valid bool) {
		p := buildPayload(int(kind), [5]uint64{a, b, c, d, e}, sym, valid)
		if !checkPayloadRoundTrip(t, p) {
			return
		}
		// The same payload in an event line.
		ev := Event{Task: "t-1", PID: int(a % 1e6), CPU: int(b % 8192), Flags: "d..2.", TS: int64(c%1e15) * 1000, Data: p}
		line, err := AppendEvent(nil, ev, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseLine(strings.TrimSuffix(string(line), "\n"))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ev.Name, ev.Payload = p.Name(), got.Payload
		if got != ev {
			t.Fatalf("%q read as %+v, want %+v", line, got, ev)
		}
	})
}

// FuzzReader feeds arbitrary text to the Reader: it must not panic, every
// error must carry the line it happened on, and every event it returns must
// print and read back the same.
func FuzzReader(f *testing.F) {
	for _, name := range []string{"cpu0-busy-3s.txt", "vm18-2node-mixed.txt"} {
		data, err := os.ReadFile(tracesDir + "/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(firstLines(data, 40))
	}
	for _, s := range []string{
		"",
		"# tracer: nop\n",
		"# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline=\"isolcpus=1-7,9-15\" busy=1-7,9-15 sleepers= (QEMU TCG)\n",
		"[    0.088118] Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n",
		"CPU:3 [LOST 12 EVENTS]\n##### CPU 2 buffer started ####\nCPU:1 [LOST EVENTS]\n",
		"     Web Content-4567    [1023] d..1   100.000000001: timer_start: timer=0xffff888003e1c000 function=nf_ct_gc [nf_conntrack] expires=1 [timeout=-1] bucket_expiry=2 cpu=3 idx=4 flags=D|I\n",
		"          <idle>-0     [001]  5087.590163: hrtimer_start:   hrtimer=00000000a1b2c3d4 function=f expires=1 softexpires=1 mode=REL|PINNED|HARD was_armed=1\n",
		"          <idle>-0       [000] d..2.   100.000001: tmigr_connect_cpu_parent: cpu=9 groupmask=2 parent=0000000033ba0247 lvl=0 numa=1 capacity=1024 num_children=8 more=x\n",
		"          <idle>-0       [000] d..2.   100.000001: sched_switch: prev_comm=a\n",
		"\x17\x08\x44tracing6",
		"{\"traceEvents\":[]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		lines := bytes.Count(data, []byte("\n")) + 1
		for range 100000 {
			ev, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line < 1 || le.Line > lines ||
					!strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", le.Line)) {
					t.Fatalf("error without a good line number (of %d): %v", lines, err)
				}
				if r.err != nil {
					return
				}
				continue
			}
			if ev.Line < 1 || ev.Line > lines {
				t.Fatalf("event at line %d of %d", ev.Line, lines)
			}
			checkEventReadsBack(t, ev, r.Header().Nanoseconds)
		}
		t.Fatal("the reader does not end")
	})
}

// checkEventReadsBack prints ev and reads the line back in a fresh trace.
func checkEventReadsBack(t *testing.T, ev Event, nano bool) {
	line, err := AppendEvent(nil, ev, nano)
	if err != nil {
		t.Fatalf("read %+v, which does not print: %v", ev, err)
	}
	var got Event
	switch ev.Data.(type) {
	case Lost, BufferStarted:
		r := NewReader(strings.NewReader("# tracer: nop\n" + string(line)))
		got, err = r.Next()
		got.TS = ev.TS // a marker carries the time of the line before
	default:
		got, err = ParseLine(strings.TrimSuffix(string(line), "\n"))
	}
	if err != nil {
		t.Fatalf("%+v printed as %q, which reads as %v", ev, line, err)
	}
	if got.Task != ev.Task || got.PID != ev.PID || got.CPU != ev.CPU || got.Flags != ev.Flags ||
		got.TS != ev.TS || got.Name != ev.Name || got.Data != ev.Data {
		t.Fatalf("%+v printed as %q, which reads as %+v", ev, line, got)
	}
}

func firstLines(data []byte, n int) []byte {
	i := 0
	for ; n > 0 && i < len(data); n-- {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return data
		}
		i += j + 1
	}
	return data[:i]
}

func FuzzParseMachine(f *testing.F) {
	f.Add(`cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="isolcpus=1-7,9-15" busy=1-7,9-15 sleepers= (QEMU TCG)`)
	f.Add(`cpus=2 nodes=1 node-cpus=0-1 kernel=6.18.44 hz=250 (KVM guest)`)
	f.Add(`cpus=16 nodes=1 node-cpus=0-15 kernel=7.3.4 hz=250 cmdline="" busy=9-15 sleepers= at="1s partition 9-15; 2s timer_migration=0" (QEMU TCG)`)
	f.Add(`cpus=4 nodes=2 node-cpus=0-3; kernel=x hz=1 cmdline="a \"b\""`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMachine(s)
		if err != nil {
			var me *MachineError
			if !errors.As(err, &me) {
				t.Fatalf("%q: error of type %T: %v", s, err, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("%q parsed to an invalid machine: %v", s, err)
		}
		again, err := ParseMachine(m.String())
		if err != nil || !machinesEqual(m, again) {
			t.Fatalf("%q printed as %q, which reads as %v (%v)", s, m.String(), again.String(), err)
		}
	})
}
