package tracedat

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fieldsText prints a record's own fields as "name=value", in the
// format's order: numbers in decimal, strings quoted.
func fieldsText(e *Format, data []byte) (string, error) {
	var parts []string
	for i := range e.Fields {
		fd := &e.Fields[i]
		if strings.HasPrefix(fd.Name, "common_") {
			continue
		}
		if fd.Array > 0 || fd.Dynamic {
			s, err := e.String(data, fd)
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("%s=%q", fd.Name, s))
			continue
		}
		v, err := e.Uint(data, fd)
		if err != nil {
			return "", err
		}
		if fd.Signed {
			parts = append(parts, fmt.Sprintf("%s=%d", fd.Name, int64(v)))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%d", fd.Name, v))
		}
	}
	return strings.Join(parts, " "), nil
}

// readAll opens a file and prints every record as "cpu ts lost pid
// fields".
func readAll(data []byte) ([]string, *File, error) {
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, b := range f.Buffers {
		if b.Empty() {
			continue
		}
		rs, err := b.Records()
		if err != nil {
			return out, f, err
		}
		for {
			r, err := rs.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return out, f, err
			}
			line := fmt.Sprintf("cpu=%d ts=%d lost=%d", r.CPU, r.TS, r.Lost)
			if r.Data != nil {
				c, e, err := f.Common(r.Data)
				if err != nil {
					return out, f, err
				}
				txt, err := fieldsText(e, r.Data)
				if err != nil {
					return out, f, err
				}
				line += fmt.Sprintf(" %s-%d flags=%#x pc=%#x %s: %s", f.Comm(c.PID), c.PID, c.Flags, c.PreemptCount, e.Name, txt)
			}
			out = append(out, line)
		}
	}
	return out, f, nil
}

// TestRingBuffer: the record types of the ring buffer, two CPUs merged by
// time, lost events attached to the next record of their CPU.
func TestRingBuffer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order orderT
		long  int
	}{{"le64", binary.LittleEndian, 8}, {"be64", binary.BigEndian, 8}, {"le32", binary.LittleEndian, 4}, {"be32", binary.BigEndian, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(2)
			b.order, b.long = tc.order, tc.long
			p := b.newPage(1000)
			p.event(5, 42, -1, 3)    // 1005
			p.extend(1 << 30)        // +2^30
			p.event(0, 42, 2, 0)     // 1005+2^30
			p.padding(7, 8)          // +7, skipped
			p.longEvent(3, 42, 3, 4) // +3
			p.stamp(5_000_000_000)   // absolute
			p.event(1, 0, 4, 8)      // 5e9+1
			b.add(0, p)
			q := b.newPage(2000)
			q.commit = 1<<31 | 1<<30
			q.lost = 7
			q.event(10, 99, 5, 1) // 2010, after 7 lost events
			b.add(1, q)
			q = b.newPage(3000)
			q.commit = 1 << 31 // lost, count unknown; no records
			b.add(1, q)
			q = b.newPage(6_000_000_000)
			q.event(0, 99, 6, 2)
			b.add(1, q)
			got, f, err := readAll(b.file())
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"cpu=0 ts=1005 lost=0 worker-42 flags=0x9 pc=0x21 test_ev: v=-1 u=3",
				"cpu=1 ts=2010 lost=7 <...>-99 flags=0x9 pc=0x21 test_ev: v=5 u=1",
				"cpu=0 ts=1073742829 lost=0 worker-42 flags=0x9 pc=0x21 test_ev: v=2 u=0",
				"cpu=0 ts=1073742839 lost=0 worker-42 flags=0x9 pc=0x21 test_ev: v=3 u=4",
				"cpu=0 ts=5000000001 lost=0 <idle>-0 flags=0x9 pc=0x21 test_ev: v=4 u=8",
				"cpu=1 ts=6000000000 lost=-1 <...>-99 flags=0x9 pc=0x21 test_ev: v=6 u=2",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if f.Version != 6 || f.CPUs != 2 || f.KernelLongSize != tc.long || f.Uname != "Linux t 6.18.0 #1" {
				t.Errorf("file %+v", f)
			}
		})
	}
}

// TestLostAtEnd: a loss after a CPU's last record comes as a record
// without data, after every other record.
func TestLostAtEnd(t *testing.T) {
	b := newBuilder(1)
	p := b.newPage(100)
	p.event(0, 42, 1, 0)
	b.add(0, p)
	p = b.newPage(200)
	p.commit = 1<<31 | 1<<30
	p.lost = 12
	b.add(0, p)
	got, _, err := readAll(b.file())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != "cpu=0 ts=100 lost=12" {
		t.Errorf("got %q", got)
	}
}

// TestBadRecords: what a corrupt page holds is an error naming the CPU, the
// page and the byte, never a panic.
func TestBadRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		page func(*builder) *pageBuilder
		want string
	}{
		{"commit beyond the page", func(b *builder) *pageBuilder {
			p := b.newPage(0)
			p.event(0, 1, 1, 1)
			p.commit = 5000
			return p
		}, "commit says"},
		{"record past the data", func(b *builder) *pageBuilder {
			p := b.newPage(0)
			p.event(0, 1, 1, 1)
			p.data = p.data[:len(p.data)-4]
			return p
		}, "runs past the page"},
		{"zero length word", func(b *builder) *pageBuilder {
			p := b.newPage(0)
			p.word(0, 0)
			p.data = b.order.AppendUint32(p.data, 2)
			return p
		}, "record length 2"},
		{"cut header", func(b *builder) *pageBuilder {
			p := b.newPage(0)
			p.data = append(p.data, 1, 2)
			return p
		}, "cut by the end"},
		{"time backwards", func(b *builder) *pageBuilder {
			p := b.newPage(1 << 40)
			p.event(0, 1, 1, 1)
			p.stamp(5)
			p.event(0, 1, 1, 1)
			return p
		}, "time goes backwards"},
		{"unknown event", func(b *builder) *pageBuilder {
			p := b.newPage(0)
			p.event(0, 1, 1, 1)
			b.order.PutUint16(p.data[4:], 99)
			return p
		}, "event ID 99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(1)
			b.add(0, tc.page(b))
			_, _, err := readAll(b.file())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "event ID") && !strings.Contains(err.Error(), "CPU 0, page 0, byte") {
				t.Errorf("error %v does not name the place", err)
			}
		})
	}
}

// TestTruncated: a file cut anywhere is an error, never a panic, and a cut
// in the page data is said to be one.
func TestTruncated(t *testing.T) {
	b := newBuilder(2)
	for cpu := 0; cpu < 2; cpu++ {
		p := b.newPage(uint64(cpu))
		p.event(1, 42, 1, 1)
		b.add(cpu, p)
	}
	full := b.file()
	if _, _, err := readAll(full); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(full); n++ {
		if n > 2048 && n%97 != 0 {
			continue
		}
		_, _, err := readAll(full[:n])
		if err == nil {
			t.Fatalf("cut at %d: no error", n)
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("cut at %d: %T %v", n, err, err)
		}
		if n > len(full)-4096 && !strings.Contains(err.Error(), "truncated") {
			t.Errorf("cut at %d in the pages: %v", n, err)
		}
	}
}

// TestHugeSizes: sizes the file cannot hold are refused before anything is
// allocated for them.
func TestHugeSizes(t *testing.T) {
	full := newBuilder(1).file()
	// The header_page size field follows the fixed header and the tag.
	off := len(Magic) + 2 + 2 + 4 + len("header_page\x00")
	for _, size := range []uint64{1 << 40, MaxSection + 1, uint64(len(full))} {
		bad := bytes.Clone(full)
		binary.LittleEndian.PutUint64(bad[off:], size)
		_, err := Open(bytes.NewReader(bad), int64(len(bad)))
		if err == nil || !strings.Contains(err.Error(), "header_page") {
			t.Errorf("size %d: %v", size, err)
		}
	}
}

// TestNotTraceDat names what is not a trace.dat.
func TestNotTraceDat(t *testing.T) {
	for _, in := range []string{"", "hello", "\x17\x08\x44tracinX6\x00"} {
		_, err := Open(strings.NewReader(in), int64(len(in)))
		if !errors.Is(err, ErrNotTraceDat) {
			t.Errorf("%q: %v", in, err)
		}
	}
	for in, want := range map[string]string{
		Magic + "5\x00\x00\x08\x00\x10\x00\x00":          "only 6 and 7",
		Magic + "6\x00\x02\x08\x00\x10\x00\x00":          "endianness",
		Magic + "6\x00\x00\x03\x00\x10\x00\x00":          "long size",
		Magic + "6\x00\x00\x08\x00\x10\x00\x01":          "page size",
		Magic + "7\x00\x00\x08\x00\x10\x00\x00bzip2\x00": "compression",
	} {
		_, err := Open(strings.NewReader(in), int64(len(in)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

const realDir = "../testdata/tracecmd"

func readReal(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestRealVersions: one recording, as trace-cmd extract wrote it (version
// 7, zstd) and as trace-cmd convert rewrote it (version 6; version 7
// uncompressed), holds the same records.
func TestRealVersions(t *testing.T) {
	for _, rec := range []string{"host2", "lost"} {
		ref, f, err := readAll(readReal(t, rec+"/trace.dat"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Version != 7 || f.Compression != "zstd" || len(ref) == 0 {
			t.Fatalf("%s/trace.dat: version %d %s, %d records", rec, f.Version, f.Compression, len(ref))
		}
		for _, name := range []string{"v6.dat.gz", "v7none.dat.gz"} {
			got, f, err := readAll(readReal(t, rec+"/"+name))
			if err != nil {
				t.Fatalf("%s/%s: %v", rec, name, err)
			}
			if f.Compression != "none" {
				t.Errorf("%s: compression %s", name, f.Compression)
			}
			if len(got) != len(ref) {
				t.Fatalf("%s/%s: %d records, trace.dat %d", rec, name, len(got), len(ref))
			}
			for i := range got {
				if got[i] != ref[i] {
					t.Fatalf("%s/%s record %d:\n%s\ntrace.dat:\n%s", rec, name, i, got[i], ref[i])
				}
			}
		}
	}
}
