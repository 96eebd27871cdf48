package tracedat

import (
	"encoding/binary"
	"strings"
	"testing"
)

// A format with fields of every kind the print fmts use.
const exprFormat = `name: expr
ID: 1
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:unsigned long a;	offset:8;	size:8;	signed:0;
	field:unsigned long b;	offset:16;	size:8;	signed:0;
	field:int neg;	offset:24;	size:4;	signed:1;
	field:unsigned int flags;	offset:28;	size:4;	signed:0;
	field:void * fn;	offset:32;	size:8;	signed:0;
	field:u8 small;	offset:40;	size:1;	signed:0;
	field:char comm[8];	offset:41;	size:8;	signed:0;
	field:__data_loc char[] name;	offset:52;	size:4;	signed:0;
	field:s64 t;	offset:56;	size:8;	signed:1;

print fmt: "x"
`

func exprRecord() []byte {
	d := make([]byte, 72)
	le := binary.LittleEndian
	le.PutUint64(d[8:], 10)
	le.PutUint64(d[16:], 25)
	le.PutUint32(d[24:], uint32(0xfffffff9)) // -7
	le.PutUint32(d[28:], 0x00500042)
	le.PutUint64(d[32:], 0xffffffff81000104)
	d[40] = 200
	copy(d[41:], "bash\x00\x00\x00\x00")
	copy(d[64:], "kworker\x00")
	le.PutUint32(d[52:], 8<<16|64)
	le.PutUint64(d[56:], uint64(0xffffffffffffff9c)) // -100
	return d
}

func TestPrintFmt(t *testing.T) {
	f := &File{order: binary.LittleEndian, KernelLongSize: 8,
		syms: parseKallsyms([]byte("ffffffff81000000 T first\nffffffff81000100 t second\nffffffff81000200 t third\tmymod\n"))}
	for _, tc := range []struct{ fmt, want string }{
		{`"a=%lu b=%lu", REC->a, REC->b`, "a=10 b=25"},
		// (long)a - b is unsigned long in C, printed by %ld as signed.
		{`"d=%ld", (long)REC->a - REC->b`, "d=-15"},
		{`"u=%lu", REC->a - REC->b`, "u=18446744073709551601"},
		{`"n=%d n/2=%d n%%4=%d", REC->neg, REC->neg / 2, REC->neg % 4`, "n=-7 n/2=-3 n%4=-3"},
		{`"%u", REC->neg`, "4294967289"},
		{`"%llu", (unsigned long long) REC->t`, "18446744073709551516"},
		{`"%lld", REC->t`, "-100"},
		{`"cpu=%u idx=%u", REC->flags & 0x0003FFFF, REC->flags >> 22`, "cpu=66 idx=1"},
		{`"%s", __print_flags(REC->flags & (0x00100000 | 0x00400000), "|", { 0x00100000, "P" }, { 0x00200000, "I" })`, "P|0x400000"},
		{`"%s", __print_flags(0, "|", { 1, "A" })`, ""},
		{`"%s", __print_symbolic(REC->small, { 1, "ONE" }, { 200, "TWO HUNDRED" })`, "TWO HUNDRED"},
		{`"%s", __print_symbolic(REC->a, { HRTIMER_MODE_ABS, "ABS" }, { HRTIMER_MODE_REL_PINNED, "REL|PINNED" })`, "0xa"},
		{`"%s", __print_symbolic(3, { HRTIMER_MODE_ABS, "ABS" }, { HRTIMER_MODE_REL_PINNED, "REL|PINNED" })`, "REL|PINNED"},
		{`"%p %ps %pS", REC->fn, REC->fn, REC->fn`, "ffffffff81000104 second second+0x4/0x100"},
		{`"%ps", REC->a`, "0xa"},
		{`"%ps", 0xffffffff81000200UL`, "third [mymod]"},
		{`"%s|%s|", REC->comm, __get_str(name)`, "bash|kworker|"},
		{`"%5d|%-5d|%05d|%x|%#x|%#x|%08lx", REC->neg, REC->neg, 42, 255, 255, 0, REC->a`, "   -7|-7   |00042|ff|0xff|0|0000000a"},
		{`"%c%c", 'o', 107`, "ok"},
		{`"%d %d %d", REC->a > REC->b ? 1 : 2, !REC->a, ~0`, "2 0 -1"},
		{`"%d", (int)(REC->small) + (u8)511 + (bool)REC->b`, "456"},
		{`"%d", REC->a && REC->b || REC->neg`, "1"},
		{`"%.3s|%*d", REC->comm, 4, 7`, "bas|   7"},
		{`"%d", (1 << 4) | (1 << 0)`, "17"},
		{`"%*d|", -3, 7`, "7  |"},
		{`"%*d|", 0x7fffffff, 7`, strings.Repeat(" ", 999) + "7|"},
	} {
		ev, err := ParseFormat("test", strings.Replace(exprFormat, `"x"`, tc.fmt, 1))
		if err != nil {
			t.Fatal(err)
		}
		ev.f = f
		got, err := ev.Print(nil, exprRecord())
		if err != nil {
			t.Errorf("%s: %v", tc.fmt, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.fmt, got, tc.want)
		}
	}
}

// TestPrintFmtErrors: what this evaluator does not know is an error when
// an event needs it, never a made-up value.
func TestPrintFmtErrors(t *testing.T) {
	f := &File{order: binary.LittleEndian, KernelLongSize: 8}
	for _, tc := range []struct{ fmt, want string }{
		{`"%d", REC->nosuch`, "no such field"},
		{`"%d", UNKNOWN_ENUM`, "unknown identifier"},
		{`"%s", __print_hex(REC->a, 8)`, "not supported"},
		{`"%d", REC->a / 0`, "division by zero"},
		{`"%d %d", REC->a`, "2 conversions but 1 arguments"},
		{`"%d", (REC->a`, `expected ")"`},
		{`"%y", REC->a`, "%y is not supported"},
		{`"%d", REC->a << 64`, "shift"},
		{`"%s", REC->a`, "%s of a number"},
		{`REC->a`, "format string"},
		{`"%d", REC->a @ 1`, "unexpected character"},
		{`"%d", ` + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "nested too deeply"},
	} {
		ev, err := ParseFormat("test", strings.Replace(exprFormat, `"x"`, tc.fmt, 1))
		if err != nil {
			t.Fatal(err)
		}
		ev.f = f
		_, err = ev.Print(nil, exprRecord())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.fmt, err, tc.want)
		}
	}
	// A record too short for its fields.
	ev, _ := ParseFormat("test", strings.Replace(exprFormat, `"x"`, `"%lu", REC->b`, 1))
	ev.f = f
	if _, err := ev.Print(nil, make([]byte, 12)); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("short record: %v", err)
	}
}

func TestParseFormatErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"ID: 3\n", "without \"name:\""},
		{"name: x\n", "no \"ID:\""},
		{"name: x\nID: 70000\n", "16-bit"},
		{"name: x\nID: 1\nformat:\n\tfield:int a;\toffset:x;\tsize:4;\n", "not a small number"},
		{"name: x\nID: 1\nformat:\n\tfield:int a;\tsize:4;\n", "lacks its offset"},
	} {
		_, err := ParseFormat("s", tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
		}
	}
}
