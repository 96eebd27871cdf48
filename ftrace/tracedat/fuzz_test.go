package tracedat

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strings"
	"testing"
)

// TestZlib: trace-cmd's zlib blocks (compress2) decompress, and a size
// that does not match is an error.
func TestZlib(t *testing.T) {
	want := bytes.Repeat([]byte("timer_start timer_expire_entry "), 1000)
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(want)
	w.Close()
	c, err := newCodec("zlib")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.decompress(z.Bytes(), len(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("err %v, equal %v", err, bytes.Equal(got, want))
	}
	for _, n := range []int{len(want) - 1, len(want) + 1} {
		if _, err := c.decompress(z.Bytes(), n); err == nil {
			t.Errorf("size %d: no error", n)
		}
	}
	bad := bytes.Clone(z.Bytes())
	bad[len(bad)-1] ^= 1 // the Adler-32 checksum
	if _, err := c.decompress(bad, len(want)); err == nil {
		t.Error("bad checksum: no error")
	}
}

// FuzzTraceDat: any bytes, read as a trace.dat to the end with every
// field of every record read, give records or an *Error, never a panic, a hang or a
// giant allocation.
func FuzzTraceDat(f *testing.F) {
	b := newBuilder(2)
	p := b.newPage(1000)
	p.event(5, 42, -1, 3)
	p.extend(1 << 30)
	p.longEvent(3, 42, 3, 4)
	p.padding(1, 8)
	p.stamp(5_000_000_000)
	p.event(1, 0, 4, 8)
	b.add(0, p)
	q := b.newPage(2000)
	q.commit = 1<<31 | 1<<30
	q.lost = 7
	q.event(10, 99, 5, 1)
	b.add(1, q)
	f.Add(b.file())
	b.order, b.long = binary.BigEndian, 4
	f.Add(b.file())
	for _, name := range []string{"lost/trace.dat", "lost/v6.dat.gz", "lost/v7none.dat.gz"} {
		data := readReal(f, name)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, _, err := readAll(data)
		if err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		if err == nil && len(data) > 0 && recs == nil && !bytes.HasPrefix(data, []byte(Magic)) {
			t.Fatal("not a trace.dat, yet no error")
		}
	})
}

// FuzzFormat: any format text parses or is an error, and every field of a
// format that parses reads from a record, or is an error, without a panic.
func FuzzFormat(f *testing.F) {
	f.Add(exprFormat, exprRecord())
	f.Add(strings.Replace(exprFormat, "offset:52;", "offset:70;", 1), exprRecord()[:30])
	fl := &File{order: binary.LittleEndian, KernelLongSize: 8}
	f.Fuzz(func(t *testing.T, text string, rec []byte) {
		ev, err := ParseFormat("test", text)
		if err != nil {
			return
		}
		ev.f = fl
		for i := range ev.Fields {
			fd := &ev.Fields[i]
			if fd.Array > 0 || fd.Dynamic {
				ev.String(rec, fd)
			} else {
				ev.Uint(rec, fd)
			}
		}
	})
}
