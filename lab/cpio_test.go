package lab

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// cpioEntry is one entry as readCpio finds it.
type cpioEntry struct {
	Name         string
	Ino, Mode    uint32
	NLink        uint32
	RMajor       uint32
	RMinor       uint32
	Data         []byte
	UID, GID, MT uint32
}

// readCpio is a reader of the newc format written from the format's
// description, independently of the writer: it checks the magic, the
// field syntax, the 4-byte alignment of every header and every data block,
// the NUL after each name, and that the archive ends with the trailer
// followed by nothing but NUL padding.
func readCpio(b []byte) ([]cpioEntry, error) {
	var out []cpioEntry
	off := 0
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("header at %d is not 4-byte aligned", off)
		}
		if len(b)-off < cpioHdrLen {
			return nil, fmt.Errorf("truncated header at %d", off)
		}
		h := b[off : off+cpioHdrLen]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("bad magic %q at %d", h[:6], off)
		}
		var f [13]uint32
		for i := range f {
			s := string(h[6+8*i : 14+8*i])
			v, err := strconv.ParseUint(s, 16, 32)
			if err != nil || strings.ToLower(s) != s {
				return nil, fmt.Errorf("field %d %q at %d", i, s, off)
			}
			f[i] = uint32(v)
		}
		nameLen := int(f[11])
		if nameLen < 1 || off+cpioHdrLen+nameLen > len(b) {
			return nil, fmt.Errorf("bad name size %d at %d", nameLen, off)
		}
		name := b[off+cpioHdrLen : off+cpioHdrLen+nameLen]
		if name[nameLen-1] != 0 || bytes.IndexByte(name[:nameLen-1], 0) >= 0 {
			return nil, fmt.Errorf("name at %d not NUL-terminated exactly once", off)
		}
		dataOff := off + cpioHdrLen + nameLen
		for dataOff%4 != 0 {
			if b[dataOff] != 0 {
				return nil, fmt.Errorf("non-NUL name padding at %d", dataOff)
			}
			dataOff++
		}
		size := int(f[6])
		if dataOff+size > len(b) {
			return nil, fmt.Errorf("truncated data of %q", name)
		}
		e := cpioEntry{
			Name: string(name[:nameLen-1]), Ino: f[0], Mode: f[1], UID: f[2], GID: f[3],
			NLink: f[4], MT: f[5], RMajor: f[9], RMinor: f[10],
			Data: b[dataOff : dataOff+size],
		}
		if f[12] != 0 {
			return nil, fmt.Errorf("check field %d in %q", f[12], e.Name)
		}
		off = dataOff + size
		for off%4 != 0 && off < len(b) {
			if b[off] != 0 {
				return nil, fmt.Errorf("non-NUL data padding at %d", off)
			}
			off++
		}
		if e.Name == cpioTrailer {
			for _, c := range b[off:] {
				if c != 0 {
					return nil, fmt.Errorf("bytes after the trailer")
				}
			}
			return out, nil
		}
		out = append(out, e)
	}
}

func TestCpioRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	c := newCpioWriter(&buf)
	steps := []error{
		c.Dir("bin", 0o755),
		c.File("bin/busybox", 0o755, []byte("\x7fELF...")),
		c.Symlink("bin/sh", "busybox"),
		c.CharDev("dev/console", 0o600, 5, 1),
		c.File("init", 0o755, []byte("#!/bin/sh\n")),
		c.File("empty", 0o644, nil),
		c.Close(),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	got, err := readCpio(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []cpioEntry{
		{Name: "bin", Ino: 1, Mode: 0o040755, NLink: 2},
		{Name: "bin/busybox", Ino: 2, Mode: 0o100755, NLink: 1, Data: []byte("\x7fELF...")},
		{Name: "bin/sh", Ino: 3, Mode: 0o120777, NLink: 1, Data: []byte("busybox")},
		{Name: "dev/console", Ino: 4, Mode: 0o020600, NLink: 1, RMajor: 5, RMinor: 1},
		{Name: "init", Ino: 5, Mode: 0o100755, NLink: 1, Data: []byte("#!/bin/sh\n")},
		{Name: "empty", Ino: 6, Mode: 0o100644, NLink: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Ino != w.Ino || g.Mode != w.Mode || g.NLink != w.NLink ||
			g.RMajor != w.RMajor || g.RMinor != w.RMinor || !bytes.Equal(g.Data, w.Data) ||
			g.UID != 0 || g.GID != 0 || g.MT != 0 {
			t.Errorf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestCpioBytes pins the exact bytes of a one-file archive against the
// format's description, so that the reader above cannot share a mistake
// with the writer.
func TestCpioBytes(t *testing.T) {
	var buf bytes.Buffer
	c := newCpioWriter(&buf)
	if err := c.File("ab", 0o644, []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := "070701" + "00000001" + "000081a4" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000003" + "00000000" + "00000000" + "00000000" + "00000000" + "00000003" + "00000000" +
		"ab\x00" + "\x00\x00\x00" + // 110+3 = 113, padded to 116
		"xyz\x00" + // 3 padded to 4
		"070701" + "00000002" + "00000000" + "00000000" + "00000000" + "00000001" + "00000000" +
		"00000000" + "00000000" + "00000000" + "00000000" + "00000000" + "0000000b" + "00000000" +
		"TRAILER!!!\x00" + "\x00\x00\x00" // 110+11 = 121, padded to 124
	if got := buf.String(); got != want {
		t.Fatalf("archive\n%q\nwant\n%q", got, want)
	}
}

func TestCpioRejects(t *testing.T) {
	for _, name := range []string{"", "/abs", "a/", "a//b", "./a", "a/../b", "..", "a\x00b", "TRAILER!!!"} {
		c := newCpioWriter(io.Discard)
		if err := c.File(name, 0o644, nil); err == nil {
			t.Errorf("name %q accepted", name)
		} else if !strings.Contains(err.Error(), "cpio") {
			t.Errorf("name %q: error %q does not say where it comes from", name, err)
		}
	}
	c := newCpioWriter(io.Discard)
	if err := c.File("a", 0o644, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.File("a", 0o644, nil); err == nil {
		t.Error("a duplicate name was accepted")
	}
	// The first error sticks: Close reports it.
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Close after a failed entry: %v", err)
	}
	c = newCpioWriter(io.Discard)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
	c = newCpioWriter(io.Discard)
	c.Close()
	if err := c.Dir("late", 0o755); err == nil {
		t.Error("an entry after Close was accepted")
	}
	if err := newCpioWriter(io.Discard).Symlink("l", ""); err == nil {
		t.Error("a symlink without a target was accepted")
	}
}

// TestCpioProperty: any sequence of valid, distinct entries reads back the
// same, in order.
func TestCpioProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9_.-]{1,12}(/[a-z0-9_-]{1,12}){0,3}`), 0, 20, rapid.ID).Draw(t, "names")
		var buf bytes.Buffer
		c := newCpioWriter(&buf)
		var want []cpioEntry
		for i, n := range names {
			if checkCpioName(n) != nil {
				continue
			}
			data := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, fmt.Sprint("data", i))
			if err := c.File(n, 0o640, data); err != nil {
				t.Fatal(err)
			}
			want = append(want, cpioEntry{Name: n, Mode: modeFile | 0o640, Data: data})
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if buf.Len()%4 != 0 {
			t.Fatalf("archive of %d bytes", buf.Len())
		}
		got, err := readCpio(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || got[i].Mode != want[i].Mode || !bytes.Equal(got[i].Data, want[i].Data) || got[i].Ino != uint32(i+1) {
				t.Fatalf("entry %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
