package ftrace

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace/tracedat"
	"pgregory.net/rapid"
)

// genColumn draws a value the kernel can print in column c.
func genColumn(t *rapid.T, c *column) val {
	draw := func(lo, hi uint64) uint64 {
		return rapid.OneOf(rapid.Uint64Range(lo, hi), rapid.SampledFrom([]uint64{lo, hi})).Draw(t, c.key)
	}
	i64 := func(lo, hi int64) uint64 {
		return uint64(rapid.OneOf(rapid.Int64Range(lo, hi), rapid.SampledFrom([]int64{lo, 0, hi})).Draw(t, c.key))
	}
	switch c.conv {
	case convSym:
		return val{s: genSym.Draw(t, c.key)}
	case convHex, convUint:
		return val{n: draw(0, c.hi)}
	case convInt:
		return val{n: i64(math.MinInt32, math.MaxInt32)}
	case convLong:
		return val{n: i64(math.MinInt64, math.MaxInt64)}
	case convKtime:
		return val{n: draw(0, uint64(KtimeMax))}
	case convBool:
		return val{n: draw(0, 1)}
	case convSymbolic:
		if rapid.Bool().Draw(t, "named") {
			return val{n: rapid.SampledFrom(c.syms).Draw(t, c.key).val}
		}
		if c.kind == reflect.Int32 {
			return val{n: i64(math.MinInt32, math.MaxInt32)}
		}
		return val{n: draw(0, c.hi)}
	case convTimerFlags:
		return val{n: draw(0, math.MaxUint64) & uint64(timerFlagMask)}
	case convSecUsec:
		return val{n: i64(math.MinInt64, math.MaxInt64), usec: int64(draw(0, math.MaxInt64))}
	}
	return val{n: draw(0, math.MaxUint64)} // convPtr, convULong, convS64
}

// genRow draws a payload of tracepoint tp: every column a value the kernel
// can print, every column that some kernels print present or not.
func genRow(t *rapid.T, tp *tracepoint) Payload {
	p := reflect.New(tp.typ)
	for i := range tp.columns {
		c := &tp.columns[i]
		if c.flag != "" {
			has := rapid.Bool().Draw(t, c.flag)
			c.setFlag(p.UnsafePointer(), has != c.absent)
			if !has {
				continue
			}
		}
		c.set(p.UnsafePointer(), genColumn(t, c))
	}
	return p.Elem().Interface().(Payload)
}

// TestTableRoundTrip: for every tracepoint of the table, any payload the
// kernel can print decodes from its text as itself and prints the same text
// again.
func TestTableRoundTrip(t *testing.T) {
	for _, tp := range tracepoints {
		t.Run(tp.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				if !checkPayloadRoundTrip(t, genRow(t, tp)) {
					t.Fatalf("a payload the kernel prints was refused")
				}
			})
		})
	}
}

// TestTableRejects: a value out of a column's range is refused when printed,
// naming the tracepoint and the column, and appends nothing.
func TestTableRejects(t *testing.T) {
	n := 0
	for _, tp := range tracepoints {
		for i := range tp.columns {
			c := &tp.columns[i]
			var bad val
			switch {
			case c.conv == convKtime:
				bad.n = uint64(1 << 63)
			case (c.conv == convHex || c.conv == convUint) && c.hi < math.MaxUint32 && c.kind == reflect.Int:
				bad.n = c.hi + 1
			case c.conv == convInt:
				bad.n = 1 << 31
			case c.conv == convSym:
				bad.s = "a b "
			default:
				continue
			}
			p := reflect.New(tp.typ)
			for j := range tp.columns {
				if d := &tp.columns[j]; d.conv == convSym {
					d.set(p.UnsafePointer(), val{s: "f"})
				}
				if d := &tp.columns[j]; d.flag != "" {
					d.setFlag(p.UnsafePointer(), !d.absent)
				}
			}
			c.set(p.UnsafePointer(), bad)
			b, err := AppendPayload([]byte("keep"), p.Elem().Interface().(Payload))
			fe, ok := err.(*FieldError)
			if !ok || fe.Event != tp.name || fe.Field != c.key || string(b) != "keep" {
				t.Errorf("%s: %s = %+v: %q, %v", tp.name, c.key, bad, b, err)
			}
			n++
		}
	}
	if n < 40 {
		t.Errorf("only %d columns checked", n)
	}
}

// printfOf is the TP_printk format the table's row says a kernel whose
// event has the format e prints: "timer=%p function=%ps expires=%lu
// [timeout=%ld] ...", without the fields of other kernels e lacks.
func printfOf(tp *tracepoint, e *tracedat.Format) string {
	conv := map[conv]string{
		convPtr: "%p", convSym: "%ps", convHex: "%x", convInt: "%d", convUint: "%u",
		convULong: "%lu", convLong: "%ld", convKtime: "%lu", convS64: "%lu", convBool: "%d",
		convSymbolic: "%s", convTimerFlags: "%s", convSecUsec: "%ld.%06ld",
	}
	var parts []string
	for _, c := range tp.columns {
		if c.flag != "" && e.Field(c.key) == nil {
			continue
		}
		s := c.key + "=" + conv[c.conv]
		if c.bracket {
			s = "[" + s + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestTableMatchesKernel: each row's fields, in its order and with its
// conversions, are those of the print fmt of the kernel that recorded the
// trace.dat files in testdata (6.18), and every field a row reads from a
// record is one of the event's format.
func TestTableMatchesKernel(t *testing.T) {
	for _, rec := range []string{"host2", "lost"} {
		data, err := os.ReadFile(filepath.Join(tracecmdDir, rec, "trace.dat"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := tracedat.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, e := range f.Events() {
			tp := byName[e.Name]
			if tp == nil {
				continue
			}
			seen++
			// The format string, with %llu and %0x written as %lu and %x:
			// the same text for the values these fields hold.
			kernel, _, _ := strings.Cut(strings.TrimPrefix(e.PrintFmt, `"`), `"`)
			kernel = strings.NewReplacer("%llu", "%lu", "%0x", "%x").Replace(kernel)
			if want := printfOf(tp, e); kernel != want {
				t.Errorf("%s: the kernel prints\n\t%s\nthe table says\n\t%s", e.Name, kernel, want)
			}
			if _, err := bind(tp, e); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			}
		}
		if seen < 25 {
			t.Errorf("%s: %d of the table's tracepoints in the file", rec, seen)
		}
	}
}

// TestTableMistakes: a row naming a Go field its type lacks, or one its
// conversion cannot fill, is refused when the table is built.
func TestTableMistakes(t *testing.T) {
	typ := reflect.TypeFor[TimerStart]()
	for _, c := range []column{
		{key: "timer", conv: convPtr, gof: "Nope"},
		{key: "timer", conv: convSym, gof: "Timer"},
		{key: "cpu", conv: convInt, gof: "Flags"},
		{key: "bucket_expiry", conv: convULong, gof: "BucketExpiry", flag: "CPU"},
		{key: "it_value", conv: convSecUsec, gof: "Expires"},
	} {
		if err := c.resolve(typ); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	c := column{key: "timer", conv: convPtr, gof: "Timer"}
	if err := c.resolve(typ); err != nil || c.hi != math.MaxUint64 {
		t.Errorf("a good column: %v, hi %#x", err, c.hi)
	}
}
