package tracedat

import (
	"encoding/binary"
	"strings"
	"testing"
)

// A format with fields of every kind the events use.
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

// TestFieldValues: scalars read in the file's order, sign-extended when
// signed; char arrays and __data_loc strings up to their NUL; a record
// shorter than a field is an error.
func TestFieldValues(t *testing.T) {
	ev, err := ParseFormat("test", exprFormat)
	if err != nil {
		t.Fatal(err)
	}
	ev.f = &File{order: binary.LittleEndian}
	rec := exprRecord()
	for name, want := range map[string]uint64{
		"a": 10, "b": 25, "neg": uint64(1<<64 - 7), "flags": 0x00500042,
		"fn": 0xffffffff81000104, "small": 200, "t": uint64(1<<64 - 100),
	} {
		got, err := ev.Uint(rec, ev.Field(name))
		if err != nil || got != want {
			t.Errorf("%s: %#x, %v; want %#x", name, got, err, want)
		}
	}
	for name, want := range map[string]string{"comm": "bash", "name": "kworker"} {
		got, err := ev.String(rec, ev.Field(name))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := ev.Uint(rec[:20], ev.Field("b")); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Errorf("short record: %v", err)
	}
	if _, err := ev.String(rec[:60], ev.Field("name")); err == nil {
		t.Error("__data_loc beyond the record: no error")
	}
	if ev.Field("nosuch") != nil {
		t.Error("a field that is not there")
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
