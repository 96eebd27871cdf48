package ftrace

import (
	"errors"
	"strings"
	"testing"
)

const (
	p1 = 0x000000006ac7c0b3
	p2 = 0x0000000033ba0247
	p3 = 0xffff888003e1c000
)

// payloadCases are payload texts in the layout of each tracepoint's
// TP_printk (those of the timer and tmigr systems as in the recordings; the
// others written from the kernel's format strings) with what they decode to.
var payloadCases = []struct {
	text string
	want Payload
}{
	{"timer=000000006ac7c0b3", TimerInit{Timer: p1}},
	{"timer=000000006ac7c0b3 function=process_timeout expires=4295013810 [timeout=1] bucket_expiry=4295013811 cpu=0 idx=51 flags=",
		TimerStart{Timer: p1, Function: "process_timeout", Expires: 4295013810, Timeout: 1, BucketExpiry: 4295013811, CPU: 0, Idx: 51}},
	{"timer=ffff888003e1c000 function=nf_ct_gc_expired [nf_conntrack] expires=4294967290 [timeout=-6] bucket_expiry=4294967296 cpu=262143 idx=1023 flags=M|D|P|I",
		TimerStart{Timer: p3, Function: "nf_ct_gc_expired [nf_conntrack]", Expires: 4294967290, Timeout: -6, BucketExpiry: 4294967296, CPU: 262143, Idx: 1023,
			Flags: TimerMigrating | TimerDeferrable | TimerPinned | TimerIrqsafe}},
	{"timer=000000006ac7c0b3 function=0xffffffffc0a01230 expires=18446744073709551615 [timeout=9223372036854775807] bucket_expiry=0 cpu=7 idx=0 flags=D|I",
		TimerStart{Timer: p1, Function: "0xffffffffc0a01230", Expires: 1<<64 - 1, Timeout: 1<<63 - 1, CPU: 7, Flags: TimerDeferrable | TimerIrqsafe}},
	// Linux 6.1: no bucket_expiry.
	{"timer=00000000b9e6ba6c function=delayed_work_timer_fn expires=4294893296 [timeout=250] cpu=1 idx=96 flags=D|I",
		TimerStart{Timer: 0xb9e6ba6c, Function: "delayed_work_timer_fn", Expires: 4294893296, Timeout: 250, NoBucketExpiry: true, CPU: 1, Idx: 96,
			Flags: TimerDeferrable | TimerIrqsafe}},
	{"timer=000000006ac7c0b3 function=process_timeout now=4295013809 baseclk=4295013808",
		TimerExpireEntry{Timer: p1, Function: "process_timeout", Now: 4295013809, BaseClk: 4295013808}},
	{"timer=000000006ac7c0b3", TimerExpireExit{Timer: p1}},
	{"timer=000000006ac7c0b3", TimerCancel{Timer: p1}},
	{"is_idle=1 cpu=3", TimerBaseIdle{IsIdle: true, CPU: 3}},
	{"is_idle=0 cpu=0", TimerBaseIdle{}},
	{"hrtimer=ffff888003e1c000 clockid=CLOCK_MONOTONIC mode=REL|PINNED|HARD", HrtimerInit{Hrtimer: p3, ClockID: ClockMonotonic, Mode: HrtimerModeRel | HrtimerModePinned | HrtimerModeHard}},
	{"hrtimer=ffff888003e1c000 clockid=CLOCK_TAI mode=ABS", HrtimerSetup{Hrtimer: p3, ClockID: ClockTAI}},
	{"hrtimer=ffff888003e1c000 clockid=0xfffffffffffffffe mode=0xc", HrtimerSetup{Hrtimer: p3, ClockID: -2, Mode: HrtimerModeSoft | HrtimerModeHard}},
	{"hrtimer=ffff888003e1c000 clockid=CLOCK_BOOTTIME mode=ABS|PINNED|SOFT", HrtimerSetup{Hrtimer: p3, ClockID: ClockBoottime, Mode: HrtimerModePinned | HrtimerModeSoft}},
	{"hrtimer=00000000a1b2c3d4 function=hrtimer_wakeup expires=123456789000 softexpires=123456739000 mode=ABS|HARD",
		HrtimerStart{Hrtimer: 0xa1b2c3d4, Function: "hrtimer_wakeup", Expires: 123456789000, SoftExpires: 123456739000, Mode: HrtimerModeHard}},
	{"hrtimer=00000000a1b2c3d4 function=tick_nohz_handler expires=9223372036854775807 softexpires=18446744073709551615 mode=REL|SOFT was_armed=1",
		HrtimerStart{Hrtimer: 0xa1b2c3d4, Function: "tick_nohz_handler", Expires: KtimeMax, SoftExpires: -1, Mode: HrtimerModeRel | HrtimerModeSoft, WasArmed: true, HasWasArmed: true}},
	{"hrtimer=00000000a1b2c3d4 function=hrtimer_wakeup expires=5 softexpires=5 mode=REL was_armed=0",
		HrtimerStart{Hrtimer: 0xa1b2c3d4, Function: "hrtimer_wakeup", Expires: 5, SoftExpires: 5, Mode: HrtimerModeRel, HasWasArmed: true}},
	{"hrtimer=00000000541af2bd", HrtimerStartExpired{Hrtimer: 0x541af2bd}},
	{"next_event=4706361139 deferred=1", HrtimerRearm{NextEvent: 4706361139, Deferred: true}},
	{"next_event=9223372036854775807 deferred=0", HrtimerRearm{NextEvent: KtimeMax}},
	{"hrtimer=00000000a1b2c3d4 function=tick_nohz_handler now=123456789123", HrtimerExpireEntry{Hrtimer: 0xa1b2c3d4, Function: "tick_nohz_handler", Now: 123456789123}},
	{"hrtimer=00000000a1b2c3d4", HrtimerExpireExit{Hrtimer: 0xa1b2c3d4}},
	{"hrtimer=00000000a1b2c3d4", HrtimerCancel{Hrtimer: 0xa1b2c3d4}},
	{"which=0 expires=4295013810 it_value=1.500000 it_interval=0.000250", ItimerState{Expires: 4295013810, ValueSec: 1, ValueUsec: 500000, IntervalUsec: 250}},
	{"which=2 expires=0 it_value=-1.1234567 it_interval=9.000001", ItimerState{Which: 2, ValueSec: -1, ValueUsec: 1234567, IntervalSec: 9, IntervalUsec: 1}},
	{"which=1 pid=1234 now=4295013810", ItimerExpire{Which: 1, PID: 1234, Now: 4295013810}},
	{"success=0 dependency=SCHED", TickStop{Dependency: TickDepSched}},
	{"success=1 dependency=NONE", TickStop{Success: true}},
	{"success=0 dependency=RCU_EXP", TickStop{Dependency: TickDepRCUExp}},
	{"success=0 dependency=0x40", TickStop{Dependency: 0x40}},
	{"group=0000000033ba0247 lvl=2 numa=-1", TmigrGroupSet{Group: p2, Lvl: 2, Numa: -1}},
	{"group=0000000033ba0247 groupmask=2 parent=000000006ac7c0b3 lvl=1 numa=0 num_children=2",
		TmigrConnectChildParent{Group: p2, Groupmask: 2, Parent: p1, Lvl: 1, NumChildren: 2}},
	{"group=0000000033ba0247 groupmask=80 parent=000000006ac7c0b3 lvl=1 numa=1 capacity=1024 num_children=8",
		TmigrConnectChildParent{Group: p2, Groupmask: 0x80, Parent: p1, Lvl: 1, Numa: 1, Capacity: 1024, HasCapacity: true, NumChildren: 8}},
	{"cpu=9 groupmask=2 parent=0000000033ba0247 lvl=0 numa=1 num_children=8",
		TmigrConnectCPUParent{CPU: 9, Groupmask: 2, Parent: p2, Numa: 1, NumChildren: 8}},
	{"cpu=9 groupmask=2 parent=0000000033ba0247 lvl=0 numa=1 capacity=0 num_children=8",
		TmigrConnectCPUParent{CPU: 9, Groupmask: 2, Parent: p2, Numa: 1, HasCapacity: true, NumChildren: 8}},
	{"group=0000000033ba0247 lvl=0 numa=0 active=3 migrator=2 parent=0000000000000000 childmask=1",
		TmigrGroupSetCPUActive{Group: p2, Active: 3, Migrator: 2, Childmask: 1}},
	{"group=0000000033ba0247 lvl=1 numa=-1 active=0 migrator=ff parent=000000006ac7c0b3 childmask=80",
		TmigrGroupSetCPUInactive{Group: p2, Lvl: 1, Numa: -1, Migrator: 0xff, Parent: p1, Childmask: 0x80}},
	{"cpu=10 parent=000000004e18cba9 wakeup=9223372036854775807", TmigrCPUNewTimer{CPU: 10, Parent: 0x4e18cba9, Wakeup: KtimeMax}},
	{"cpu=0 parent=0000000033ba0247 wakeup=9223372036854775807", TmigrCPUActive{Parent: p2, Wakeup: KtimeMax}},
	{"cpu=3 parent=0000000033ba0247 wakeup=0", TmigrCPUAvailable{CPU: 3, Parent: p2}},
	{"cpu=3 parent=0000000033ba0247 wakeup=9223372036854775807", TmigrCPUUnavailable{CPU: 3, Parent: p2, Wakeup: KtimeMax}},
	{"cpu=3 parent=0000000033ba0247 wakeup=12", TmigrCPUOnline{CPU: 3, Parent: p2, Wakeup: 12}},
	{"cpu=3 parent=0000000033ba0247 wakeup=9223372036854775807", TmigrCPUOffline{CPU: 3, Parent: p2, Wakeup: KtimeMax}},
	{"cpu=1 parent=0000000033ba0247 wakeup=486628000000", TmigrHandleRemoteCPU{CPU: 1, Parent: p2, Wakeup: 486628000000}},
	{"cpu=0 parent=0000000033ba0247 nextevt=491140000000 wakeup=9223372036854775807", TmigrCPUIdle{Parent: p2, NextEvt: 491140000000, Wakeup: KtimeMax}},
	{"cpu=2 parent=00000000f33ee926 nextevt=4772000000 wakeup=9223372036854775807", TmigrCPUNewTimerIdle{CPU: 2, Parent: 0xf33ee926, NextEvt: 4772000000, Wakeup: KtimeMax}},
	{"child=000000004e18cba9 group=000000004d625602 group_lvl=1 child_active=0 group_active=1 nextevt=9223372036854775807 next_expiry=9223372036854775807 child_evt_expiry=14500000000 child_evtcpu=8",
		TmigrUpdateEvents{Child: 0x4e18cba9, Group: 0x4d625602, GroupLvl: 1, GroupActive: 1, NextEvt: KtimeMax, NextExpiry: KtimeMax, ChildEvtExpiry: 14500000000, ChildEvtCPU: 8}},
	{"group=000000004d625602 lvl=1", TmigrHandleRemote{Group: 0x4d625602, Lvl: 1}},
	{"tmigr-lab: 1s partition 9-15", TracingMark{Text: "tmigr-lab: 1s partition 9-15"}},
	{"x=1 [free] text", TracingMark{Text: "x=1 [free] text"}},
}

func TestPayloadDecodeFormat(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range payloadCases {
		name := tc.want.Name()
		covered[name] = true
		got, err := DecodePayload(name, tc.text)
		if err != nil {
			t.Errorf("%s: %q: %v", name, tc.text, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %q\ndecoded %+v\nwant    %+v", name, tc.text, got, tc.want)
		}
		text, err := FormatPayload(tc.want)
		if err != nil || text != tc.text {
			t.Errorf("%s: formatted %q (%v)\nwant %q", name, text, err, tc.text)
		}
	}
	for _, name := range Events() {
		if !covered[name] {
			t.Errorf("no payload case for %s", name)
		}
	}
	if len(covered) != len(Events()) {
		t.Errorf("cases cover %d events, Events() lists %d", len(covered), len(Events()))
	}
}

// TestPayloadLenient covers text the kernel does not print but whose meaning
// is plain: it decodes, and prints back in the kernel's form.
func TestPayloadLenient(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Payload
		canonical  string
	}{
		// A field a newer kernel adds is dropped.
		{"tmigr_cpu_active", "cpu=1 parent=0000000033ba0247 wakeup=5 extra=foo", TmigrCPUActive{CPU: 1, Parent: p2, Wakeup: 5},
			"cpu=1 parent=0000000033ba0247 wakeup=5"},
		{"tmigr_handle_remote", "lvl=1 group=000000004d625602 new_field=[a b]", TmigrHandleRemote{Group: 0x4d625602, Lvl: 1},
			"group=000000004d625602 lvl=1"},
		// trace-cmd report prints raw pointers as 0x...
		{"timer_cancel", "timer=0xffff888003e1c000", TimerCancel{Timer: p3}, "timer=ffff888003e1c000"},
		// timeout without its brackets, flags in another order.
		{"timer_start", "timer=000000006ac7c0b3 function=f expires=10 timeout=2 bucket_expiry=10 cpu=0 idx=0 flags=I|D",
			TimerStart{Timer: p1, Function: "f", Expires: 10, Timeout: 2, BucketExpiry: 10, Flags: TimerDeferrable | TimerIrqsafe},
			"timer=000000006ac7c0b3 function=f expires=10 [timeout=2] bucket_expiry=10 cpu=0 idx=0 flags=D|I"},
		// A symbolic value in hex.
		{"hrtimer_cancel", "hrtimer=00000000a1b2c3d4  ", HrtimerCancel{Hrtimer: 0xa1b2c3d4}, "hrtimer=00000000a1b2c3d4"},
		{"tick_stop", "success=1 dependency=0x4", TickStop{Success: true, Dependency: TickDepSched}, "success=1 dependency=SCHED"},
	} {
		got, err := DecodePayload(tc.name, tc.text)
		if err != nil || got != tc.want {
			t.Errorf("%s %q: got %+v, %v; want %+v", tc.name, tc.text, got, err, tc.want)
			continue
		}
		if s, err := FormatPayload(got); err != nil || s != tc.canonical {
			t.Errorf("%s: formatted %q (%v), want %q", tc.name, s, err, tc.canonical)
		}
	}
}

func TestPayloadErrors(t *testing.T) {
	const ts = "timer=000000006ac7c0b3 function=process_timeout expires=4295013810 [timeout=1] bucket_expiry=4295013811 cpu=0 idx=51 flags="
	const idle = "cpu=0 parent=0000000033ba0247 nextevt=491140000000 wakeup=9223372036854775807"
	const grp = "group=0000000033ba0247 lvl=0 numa=0 active=3 migrator=2 parent=0000000000000000 childmask=1"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"timer_start", strings.Replace(ts, "expires=4295013810", "expires=abc", 1), `timer_start: field "expires": "abc" is not a number`},
		{"timer_start", strings.Replace(ts, "expires=4295013810 ", "", 1), `timer_start: missing field "expires"`},
		{"timer_start", strings.Replace(ts, "[timeout=1] ", "", 1), `timer_start: missing field "timeout"`},
		{"timer_start", strings.Replace(ts, "expires=4295013810", "expires=18446744073709551616", 1), `timer_start: field "expires": "18446744073709551616" is out of range`},
		{"timer_start", strings.Replace(ts, "expires=4295013810", "expires=-1", 1), `timer_start: field "expires": "-1" is not a number`},
		{"timer_start", strings.Replace(ts, "cpu=0", "cpu=262144", 1), `timer_start: field "cpu": "262144" is out of range`},
		{"timer_start", strings.Replace(ts, "idx=51", "idx=1024", 1), `timer_start: field "idx": "1024" is out of range`},
		{"timer_start", strings.Replace(ts, "flags=", "flags=X", 1), `timer_start: field "flags": "X" is not a set of M|D|P|I`},
		{"timer_start", strings.Replace(ts, "flags=", "flags=D|D", 1), `timer_start: field "flags": "D|D" is not a set of M|D|P|I`},
		{"timer_start", strings.Replace(ts, "flags=", "flags=D|", 1), `timer_start: field "flags": "D|" is not a set of M|D|P|I`},
		{"timer_start", strings.Replace(ts, "function=process_timeout", "function=", 1), `timer_start: field "function": "" is empty`},
		{"timer_start", strings.Replace(ts, "[timeout=1]", "[timeout=1] junk", 1), `timer_start: payload unexpected "junk" after [timeout=1]`},
		{"timer_start", strings.Replace(ts, "cpu=0", "cpu=0 cpu=1", 1), `timer_start: payload field "cpu" appears twice`},
		{"timer_start", "junk " + ts, `timer_start: payload does not start with key=value: "junk"`},
		{"timer_start", "", `timer_start: missing field "timer"`},
		{"timer_cancel", "timer=6ac7c0b3", `timer_cancel: field "timer": "6ac7c0b3" is not a pointer (16 hex digits)`},
		{"timer_cancel", "timer=000000006AC7C0B3", `timer_cancel: field "timer": "000000006AC7C0B3" is not a pointer (16 hex digits)`},
		{"timer_cancel", "timer=0x", `timer_cancel: field "timer": "0x" is not a pointer (16 hex digits)`},
		{"timer_cancel", "timer=(____ptrval____)", `timer_cancel: field "timer": "(____ptrval____)" is not a pointer (16 hex digits)`},
		{"tmigr_cpu_idle", strings.Replace(idle, "wakeup=9223372036854775807", "wakeup=9223372036854775808", 1), `tmigr_cpu_idle: field "wakeup": "9223372036854775808" exceeds KTIME_MAX`},
		{"tmigr_cpu_idle", strings.Replace(idle, "cpu=0", "cpu=2147483648", 1), `tmigr_cpu_idle: field "cpu": "2147483648" is out of range`},
		{"tmigr_cpu_idle", strings.Replace(idle, "cpu=0", "cpu=-", 1), `tmigr_cpu_idle: field "cpu": "-" is not a number`},
		{"tmigr_cpu_idle", strings.Replace(idle, "cpu=0", "cpu=1 2", 1), `tmigr_cpu_idle: field "cpu": "1 2" is not a number`},
		{"tmigr_group_set_cpu_active", strings.Replace(grp, "migrator=2", "migrator=100", 1), `tmigr_group_set_cpu_active: field "migrator": "100" is out of range`},
		{"tmigr_group_set_cpu_active", strings.Replace(grp, "active=3", "active=FF", 1), `tmigr_group_set_cpu_active: field "active": "FF" is not a hex number`},
		{"tmigr_group_set_cpu_active", strings.Replace(grp, "childmask=1", "childmask=", 1), `tmigr_group_set_cpu_active: field "childmask": "" is empty`},
		{"timer_base_idle", "is_idle=2 cpu=0", `timer_base_idle: field "is_idle": "2" is not 0 or 1`},
		{"hrtimer_start", "hrtimer=00000000a1b2c3d4 function=f expires=1 softexpires=1 mode=FOO", `hrtimer_start: field "mode": "FOO" is not a known name`},
		{"hrtimer_rearm", "next_event=4706361139 deferred=2", `hrtimer_rearm: field "deferred": "2" is not 0 or 1`},
		{"hrtimer_rearm", "next_event=-1 deferred=0", `hrtimer_rearm: field "next_event": "-1" is not a number`},
		{"hrtimer_rearm", "deferred=0", `hrtimer_rearm: missing field "next_event"`},
		{"hrtimer_start_expired", "hrtimer=1234", `hrtimer_start_expired: field "hrtimer": "1234" is not a pointer (16 hex digits)`},
		{"hrtimer_start", "hrtimer=00000000a1b2c3d4 function=f expires=1 softexpires=1 mode=SOFT|HARD", `hrtimer_start: field "mode": "SOFT|HARD" is not a known name`},
		{"hrtimer_setup", "hrtimer=00000000a1b2c3d4 clockid=0x80000000 mode=ABS", `hrtimer_setup: field "clockid": "0x80000000" is out of range`},
		{"tick_stop", "success=1 dependency=WHATEVER", `tick_stop: field "dependency": "WHATEVER" is not a known name`},
		{"itimer_state", "which=0 expires=0 it_value=1 it_interval=0.000000", `itimer_state: field "it_value": "1" is not seconds.microseconds`},
		{"tmigr_handle_remote", "group=000000004d625602 lvl=1" + strings.Repeat(" x=1", 40), `tmigr_handle_remote: payload field "x" appears twice`},
	} {
		_, err := DecodePayload(tc.name, tc.text)
		var fe *FieldError
		if err == nil || err.Error() != tc.want || !errors.As(err, &fe) {
			t.Errorf("%s %q:\ngot  %v\nwant %s", tc.name, tc.text, err, tc.want)
		}
	}
	if _, err := DecodePayload("sched_switch", "prev_comm=sh"); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("sched_switch: %v", err)
	}
}

func TestPayloadTooManyFields(t *testing.T) {
	var b strings.Builder
	b.WriteString("group=000000004d625602 lvl=1")
	for i := range maxFields {
		b.WriteString(" f" + itoa(i) + "=1")
	}
	_, err := DecodePayload("tmigr_handle_remote", b.String())
	if err == nil || err.Error() != "tmigr_handle_remote: payload more than 32 fields" {
		t.Errorf("got %v", err)
	}
}

// TestFormatRejects checks that values the kernel cannot print are refused
// instead of printed wrong.
func TestFormatRejects(t *testing.T) {
	for _, tc := range []struct {
		p    Payload
		want string
	}{
		{TimerStart{Function: "f", CPU: 1 << 18}, `timer_start: field "cpu": "262144" is out of range`},
		{TimerStart{Function: "f", Idx: -1}, `timer_start: field "idx": "-1" is out of range`},
		{TimerStart{Function: ""}, `timer_start: field "function": "" is empty`},
		{TimerStart{Function: "a b "}, `timer_start: field "function": "a b " is not a symbol (stray blank)`},
		{TimerStart{Function: "a  [m]"}, `timer_start: field "function": "a  [m]" is not a symbol (stray blank)`},
		{TimerStart{Function: "a=b"}, `timer_start: field "function": "a=b" is not a symbol`},
		{TimerStart{Function: "f", Flags: 1}, `timer_start: field "flags": "0x1" holds bits other than M|D|P|I`},
		{TmigrCPUActive{Wakeup: -1}, `tmigr_cpu_active: field "wakeup": "-1" is negative (a u64 time)`},
		{TmigrGroupSet{Lvl: 1 << 31}, `tmigr_group_set: field "lvl": "2147483648" is out of range`},
		{TmigrConnectCPUParent{Capacity: 5}, `tmigr_connect_cpu_parent: field "capacity": "5" is set but HasCapacity is false`},
		{HrtimerStart{Function: "f", WasArmed: true}, `hrtimer_start: field "was_armed": "1" is set but HasWasArmed is false`},
		{TimerStart{Function: "f", BucketExpiry: 5, NoBucketExpiry: true}, `timer_start: field "bucket_expiry": "5" is set but NoBucketExpiry is true`},
		{TracingMark{Text: "a\nb"}, `tracing_mark_write: payload holds a line break`},
		{TracingMark{Text: "a "}, `tracing_mark_write: payload starts or ends with blanks`},
		{TracingMark{Text: " a"}, `tracing_mark_write: payload starts or ends with blanks`},
		{ItimerState{ValueUsec: -1}, `itimer_state: field "it_value": "0.-1" has negative microseconds`},
		{Lost{Count: -2}, `LOST: field "count": "-2" is negative`},
	} {
		b, err := AppendPayload([]byte("keep"), tc.p)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %s", tc.p, err, tc.want)
		}
		if string(b) != "keep" {
			t.Errorf("%+v: failed append left %q", tc.p, b)
		}
	}
}

func TestSymbolicStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{(TimerDeferrable | TimerPinned).String(), "D|P"},
		{TimerFlags(0).String(), ""},
		{(TimerMigrating | 0x1).String(), "M|0x1"},
		{(HrtimerModeRel | HrtimerModePinned | HrtimerModeHard).String(), "REL|PINNED|HARD"},
		{(HrtimerModeSoft | HrtimerModeHard).String(), "0xc"},
		{ClockMonotonic.String(), "CLOCK_MONOTONIC"},
		{ClockID(-2).String(), "0xfffffffffffffffe"},
		{TickDepClockUnstable.String(), "CLOCK_UNSTABLE"},
		{TickDep(3).String(), "0x3"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	m := HrtimerModeRel | HrtimerModeSoft
	if !m.Rel() || m.Pinned() || !m.Soft() || m.Hard() {
		t.Errorf("mode bits of %v", m)
	}
	if ts := (TimerStart{Expires: 100, Timeout: 3}); ts.Now() != 97 {
		t.Errorf("TimerStart.Now = %d", ts.Now())
	}
}

// sampleEvents wraps every payload case in an event line, with task names
// of every shape.
func sampleEvents() []Event {
	tasks := []string{"<idle>", "kworker/u32:1", "rcu_preempt", "sh", "Web Content", "a-b-c", "<...>", "x-1", "kworker/0:1H-kblockd", "exactly16chars__", "a name longer than sixteen"}
	flags := []Flags{"d..2.", ".Ns1.", "dNs2.", "....", "", "DLHff"}
	var out []Event
	ts := int64(486_273_468_000)
	for i, tc := range payloadCases {
		ts += int64(i) * 1_017_000
		out = append(out, Event{
			Task:  tasks[i%len(tasks)],
			PID:   []int{0, 15, 5465, 123, 2147483647, 1234567}[i%6],
			CPU:   []int{0, 1, 3, 17, 127, 999, 1023}[i%7] % 4,
			Flags: flags[i%len(flags)],
			TS:    ts,
			Data:  tc.want,
		})
	}
	return out
}
