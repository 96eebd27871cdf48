package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Magic is how every trace.dat starts.
const Magic = "\x17\x08\x44tracing"

// Limits on what a file may make the reader allocate.
const (
	// MaxSection bounds one metadata block (the kallsyms of a large
	// kernel are about 15 MB) and the decompressed size of a section.
	MaxSection = 64 << 20
	// MaxChunk bounds one decompressed chunk of ring-buffer pages
	// (trace-cmd writes ten pages a chunk).
	MaxChunk = 64 << 20
	// MaxPage bounds the ring buffer's page (sub-buffer) size.
	MaxPage = 1 << 20
	maxCPU  = 1 << 20
)

// Error is a problem at one place of the file.
type Error struct {
	Off int64 // file offset; -1 when unknown
	Err error
}

func (e *Error) Error() string {
	if e.Off < 0 {
		return "trace.dat: " + e.Err.Error()
	}
	return fmt.Sprintf("trace.dat: offset %#x: %v", e.Off, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNotTraceDat is wrapped by Open's error for input that does not start
// with Magic.
var ErrNotTraceDat = errors.New("not a trace.dat (no trace-cmd magic)")

// File is an open trace.dat.
type File struct {
	Version   int // 6 or 7
	BigEndian bool
	// LongSize is the byte size of a long in the recording machine's
	// user space (the file header); KernelLongSize that of the kernel,
	// from the page header's commit field.
	LongSize, KernelLongSize int
	PageSize                 int    // the recording machine's page size
	Compression              string // "none", "zstd" or "zlib"
	CompressionVersion       string
	CPUs                     int    // CPUs of the recording machine
	Uname                    string // the UNAME option ("Linux host 6.18.44 #1 SMP ..."), "" without
	TraceCmdVersion          string // the VERSION option, "" without
	Clock                    string // the trace clock of the top buffer ("local"), "" if unknown
	Buffers                  []*Buffer
	// Ignored lists options this reader does not apply (a guest's
	// TIME_SHIFT, ...), so that a caller can say so.
	Ignored []string

	r     io.ReaderAt
	size  int64
	order binary.ByteOrder

	page      pageLayout
	events    map[int]*Format
	ftrace    []*Format
	syms      symtab
	comms     map[int32]string
	comp      codec
	tsOffset  int64
	tscMult   uint32
	tscShift  uint32
	strs      []byte // v7 string table
	sections  map[uint16]int64
	cpuStats  []string
	flyOffset int64 // v6: offset of the top buffer's "flyrecord"
}

// Buffer is one trace instance's recorded data.
type Buffer struct {
	Name     string // "" for the top instance
	Clock    string // its trace clock, "" if unknown
	PageSize int
	CPUs     []CPUData
	// Compressed reports page data stored as compressed chunks.
	Compressed bool

	f  *File
	at int64 // v6: where the instance's "flyrecord" and CPU table are
}

// CPUData is where one CPU's pages lie in the file.
type CPUData struct {
	CPU          int
	Offset, Size int64 // in the file; Size is the compressed size when compressed
}

// Empty reports whether the buffer holds no pages.
func (b *Buffer) Empty() bool {
	for _, c := range b.CPUs {
		if c.Size > 0 {
			return false
		}
	}
	return true
}

// Open reads the metadata of the trace.dat of the given size.
func Open(r io.ReaderAt, size int64) (*File, error) {
	f := &File{r: r, size: size, events: map[int]*Format{}, sections: map[uint16]int64{}}
	if err := f.open(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) open() error {
	s := &seq{f: f}
	magic := s.bytes(int64(len(Magic)), "magic")
	if s.err != nil || string(magic) != Magic {
		return &Error{Off: 0, Err: ErrNotTraceDat}
	}
	v := s.cstr(16, "file version")
	if s.err != nil {
		return s.err
	}
	n, err := strconv.Atoi(v)
	if err != nil || (n != 6 && n != 7) {
		return &Error{Off: int64(len(Magic)), Err: fmt.Errorf("file version %q: only 6 and 7 are known", v)}
	}
	f.Version = n
	endian := s.bytes(1, "endianness")
	long := s.bytes(1, "long size")
	if s.err != nil {
		return s.err
	}
	switch endian[0] {
	case 0:
		f.order = binary.LittleEndian
	case 1:
		f.order, f.BigEndian = binary.BigEndian, true
	default:
		return &Error{Off: s.off - 2, Err: fmt.Errorf("endianness byte %d is neither 0 nor 1", endian[0])}
	}
	if long[0] != 4 && long[0] != 8 {
		return &Error{Off: s.off - 1, Err: fmt.Errorf("long size %d is neither 4 nor 8", long[0])}
	}
	f.LongSize = int(long[0])
	ps := s.u32("page size")
	if s.err != nil {
		return s.err
	}
	if ps < 256 || ps > MaxPage || ps&(ps-1) != 0 {
		return &Error{Off: s.off - 4, Err: fmt.Errorf("page size %d is not a power of two in [256, %d]", ps, MaxPage)}
	}
	f.PageSize = int(ps)
	if f.Version == 6 {
		f.Compression = "none"
		return f.openV6(s)
	}
	return f.openV7(s)
}

// seq reads the file from an offset on, checking every size against what
// is left: sizes come from the file and may be garbage.
type seq struct {
	f   *File
	off int64
	err error
	// mem, when set, is read instead of the file (a decompressed
	// section); off then counts within it and base is reported.
	mem  []byte
	base int64
}

func (s *seq) fail(format string, args ...any) {
	if s.err == nil {
		off := s.off
		if s.mem != nil {
			off = s.base
		}
		s.err = &Error{Off: off, Err: fmt.Errorf(format, args...)}
	}
}

func (s *seq) left() int64 {
	if s.mem != nil {
		return int64(len(s.mem)) - s.off
	}
	return s.f.size - s.off
}

// bytes reads n bytes.
func (s *seq) bytes(n int64, what string) []byte {
	if s.err != nil {
		return nil
	}
	if n < 0 || n > s.left() {
		s.fail("%s: %d bytes, but only %d are left (truncated file?)", what, n, max(s.left(), 0))
		return nil
	}
	if s.mem != nil {
		b := s.mem[s.off : s.off+n]
		s.off += n
		return b
	}
	b := make([]byte, n)
	if _, err := s.f.r.ReadAt(b, s.off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		s.fail("%s: %v", what, err)
		return nil
	}
	s.off += n
	return b
}

func (s *seq) u16(what string) uint16 {
	b := s.bytes(2, what)
	if b == nil {
		return 0
	}
	return s.f.order.Uint16(b)
}

func (s *seq) u32(what string) uint32 {
	b := s.bytes(4, what)
	if b == nil {
		return 0
	}
	return s.f.order.Uint32(b)
}

func (s *seq) u64(what string) uint64 {
	b := s.bytes(8, what)
	if b == nil {
		return 0
	}
	return s.f.order.Uint64(b)
}

// cstr reads a NUL-terminated string of at most limit bytes.
func (s *seq) cstr(limit int, what string) string {
	if s.err != nil {
		return ""
	}
	n := int64(limit) + 1
	if l := s.left(); n > l {
		n = l
	}
	var b []byte
	if s.mem != nil {
		b = s.mem[s.off : s.off+max(n, 0)]
	} else {
		b = make([]byte, max(n, 0))
		if k, err := s.f.r.ReadAt(b, s.off); k < len(b) {
			s.fail("%s: %v", what, err)
			return ""
		}
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		s.fail("%s: no terminating NUL within %d bytes", what, len(b))
		return ""
	}
	s.off += int64(i) + 1
	return string(b[:i])
}

// block reads a size-prefixed block (size of sizeBytes bytes) of at most
// MaxSection bytes.
func (s *seq) block(sizeBytes int, what string) []byte {
	var n uint64
	if sizeBytes == 4 {
		n = uint64(s.u32(what + " size"))
	} else {
		n = s.u64(what + " size")
	}
	if s.err != nil {
		return nil
	}
	if n > MaxSection {
		s.fail("%s: %d bytes, more than the %d this reader accepts", what, n, MaxSection)
		return nil
	}
	return s.bytes(int64(n), what)
}

func (f *File) openV6(s *seq) error {
	if err := f.readHeaders(s); err != nil {
		return err
	}
	if err := f.readFormats(s); err != nil {
		return err
	}
	f.syms = parseKallsyms(s.block(4, "kallsyms"))
	s.block(4, "printk formats")
	f.comms = parseCmdlines(s.block(8, "saved cmdlines"))
	cpus := s.u32("CPU count")
	if s.err != nil {
		return s.err
	}
	if cpus == 0 || cpus > maxCPU {
		return &Error{Off: s.off - 4, Err: fmt.Errorf("CPU count %d", cpus)}
	}
	f.CPUs = int(cpus)
	kind := s.bytes(10, "data kind")
	if s.err != nil {
		return s.err
	}
	var bufs []*Buffer
	if string(kind) == "options  \x00" {
		var err error
		if bufs, err = f.readOptions(s, false); err != nil {
			return err
		}
		kind = s.bytes(10, "data kind")
		if s.err != nil {
			return s.err
		}
	}
	top := &Buffer{Clock: f.Clock, PageSize: f.PageSize, f: f}
	switch string(kind) {
	case "flyrecord\x00":
		f.flyOffset = s.off - 10
		top.CPUs = f.readFlyrecordV6(s)
	case "latency  \x00":
		return &Error{Off: s.off - 10, Err: errors.New("a latency tracer's trace.dat (its data is the text of the trace file, not ring-buffer pages); read it with trace-cmd report")}
	default:
		return &Error{Off: s.off - 10, Err: fmt.Errorf("%q is neither \"flyrecord\" nor \"latency\"", clipBytes(kind))}
	}
	if s.err != nil {
		return s.err
	}
	f.Buffers = append([]*Buffer{top}, bufs...)
	// Instances: each BUFFER option's offset points at its own
	// "flyrecord" and CPU table.
	for _, b := range bufs {
		b.Clock = f.Clock // version 6 has one clock, the TRACECLOCK option's
		bs := &seq{f: f, off: b.at}
		if k := bs.bytes(10, "buffer "+b.Name+" data kind"); bs.err == nil && string(k) != "flyrecord\x00" {
			return &Error{Off: bs.off - 10, Err: fmt.Errorf("buffer %q: %q is not \"flyrecord\"", b.Name, clipBytes(k))}
		}
		b.CPUs = f.readFlyrecordV6(bs)
		if bs.err != nil {
			return bs.err
		}
	}
	return f.checkBuffers()
}

func (f *File) readFlyrecordV6(s *seq) []CPUData {
	if int64(f.CPUs)*16 > s.left() {
		s.fail("CPU table of %d CPUs: only %d bytes are left", f.CPUs, max(s.left(), 0))
		return nil
	}
	cpus := make([]CPUData, f.CPUs)
	for i := range cpus {
		cpus[i] = CPUData{CPU: i, Offset: int64(s.u64("CPU data offset")), Size: int64(s.u64("CPU data size"))}
	}
	return cpus
}

// checkBuffers checks that every CPU's pages lie within the file.
func (f *File) checkBuffers() error {
	for _, b := range f.Buffers {
		if b.PageSize < 256 || b.PageSize > MaxPage || b.PageSize&(b.PageSize-1) != 0 {
			return &Error{Off: -1, Err: fmt.Errorf("buffer %q: page size %d is not a power of two in [256, %d]", b.Name, b.PageSize, MaxPage)}
		}
		seen := map[int]bool{}
		for _, c := range b.CPUs {
			if c.CPU < 0 || c.CPU >= maxCPU || seen[c.CPU] {
				return &Error{Off: -1, Err: fmt.Errorf("buffer %q: CPU %d listed twice or out of range", b.Name, c.CPU)}
			}
			seen[c.CPU] = true
			if c.Size == 0 {
				continue
			}
			if c.Offset < 0 || c.Size < 0 || c.Offset > f.size || c.Size > f.size-c.Offset {
				return &Error{Off: c.Offset, Err: fmt.Errorf("buffer %q: CPU %d's %d bytes of data at offset %#x lie beyond the file's end (%d bytes): truncated file?",
					b.Name, c.CPU, c.Size, c.Offset, f.size)}
			}
			if !b.Compressed && c.Size%int64(b.PageSize) != 0 {
				return &Error{Off: c.Offset, Err: fmt.Errorf("buffer %q: CPU %d's %d bytes of data are not whole pages of %d", b.Name, c.CPU, c.Size, b.PageSize)}
			}
		}
	}
	return nil
}

// readHeaders reads the header_page and header_event blocks.
func (f *File) readHeaders(s *seq) error {
	if string(s.bytes(12, "header_page tag")) != "header_page\x00" && s.err == nil {
		s.fail("no \"header_page\" block")
	}
	hp := s.block(8, "header_page")
	if string(s.bytes(13, "header_event tag")) != "header_event\x00" && s.err == nil {
		s.fail("no \"header_event\" block")
	}
	he := s.block(8, "header_event")
	if s.err != nil {
		return s.err
	}
	var err error
	if f.page, err = parsePageLayout(string(hp)); err != nil {
		return &Error{Off: s.off, Err: fmt.Errorf("header_page: %w", err)}
	}
	f.KernelLongSize = f.page.commitSize
	if !strings.Contains(string(he), "type_len") {
		return &Error{Off: s.off, Err: errors.New("header_event: the ring buffer's record header is not the type_len/time_delta one (a kernel older than 2.6.31?)")}
	}
	return nil
}

// readFormats reads the ftrace formats and the event systems' formats.
func (f *File) readFormats(s *seq) error {
	if err := f.readFtraceFormats(s); err != nil {
		return err
	}
	return f.readEventFormats(s)
}

func (f *File) readFtraceFormats(s *seq) error {
	n := s.u32("ftrace format count")
	for i := uint32(0); i < n && s.err == nil; i++ {
		at := s.off
		b := s.block(8, "ftrace format")
		if s.err != nil {
			break
		}
		// ftrace's own formats (function, print, ...) may use what this
		// parser does not know; only their IDs matter here.
		ev, err := ParseFormat("ftrace", string(b))
		if err != nil {
			continue
		}
		if err := f.addFormat(ev, at); err != nil {
			return err
		}
	}
	return s.err
}

func (f *File) readEventFormats(s *seq) error {
	systems := s.u32("event system count")
	for i := uint32(0); i < systems && s.err == nil; i++ {
		sys := s.cstr(256, "event system name")
		n := s.u32("event count")
		for j := uint32(0); j < n && s.err == nil; j++ {
			at := s.off
			b := s.block(8, "event format")
			if s.err != nil {
				break
			}
			ev, err := ParseFormat(sys, string(b))
			if err != nil {
				return &Error{Off: at, Err: fmt.Errorf("event format of system %q: %w", sys, err)}
			}
			if err := f.addFormat(ev, at); err != nil {
				return err
			}
		}
	}
	return s.err
}

func (f *File) addFormat(ev *Format, at int64) error {
	if old, dup := f.events[ev.ID]; dup {
		return &Error{Off: at, Err: fmt.Errorf("event ID %d given to both %s/%s and %s/%s", ev.ID, old.System, old.Name, ev.System, ev.Name)}
	}
	ev.f = f
	f.events[ev.ID] = ev
	return nil
}

// Event returns the format of the event with the given ID, nil if the file
// has none.
func (f *File) Event(id int) *Format { return f.events[id] }

// Events returns the formats the file carries.
func (f *File) Events() []*Format {
	l := make([]*Format, 0, len(f.events))
	for _, e := range f.events {
		l = append(l, e)
	}
	return l
}

// Comm returns the command name saved for pid, as trace-cmd and the kernel
// print it: "<idle>" for PID 0, "<...>" when none was saved.
func (f *File) Comm(pid int32) string {
	if pid == 0 {
		return "<idle>"
	}
	if c, ok := f.comms[pid]; ok {
		return c
	}
	return "<...>"
}

// Symbol returns the kernel symbol that addr lies in and its offset in it;
// ok is false when the file's kallsyms have none.
func (f *File) Symbol(addr uint64) (name, module string, off uint64, ok bool) {
	return f.syms.lookup(addr)
}

// Nanoseconds reports whether the records' times of a buffer with the given
// trace clock count nanoseconds: the kernel's clocks that do (local,
// global, perf, mono, mono_raw, boot, tai; an unknown clock is taken for
// the default, local), or any clock the file converts (its TSC2NSEC
// option). "counter", "uptime" (jiffies) and "x86-tsc" do not.
func (f *File) Nanoseconds(clock string) bool {
	if f.tscMult != 0 {
		return true
	}
	switch clock {
	case "", "local", "global", "perf", "mono", "mono_raw", "boot", "tai":
		return true
	}
	return false
}

// CPUStats returns the per-CPU statistics the file saved (the kernel's
// per_cpu/cpuN/stats text: entries, overrun, dropped events, ...), in CPU
// order; nil if none.
func (f *File) CPUStats() []string { return f.cpuStats }

func clipBytes(b []byte) string {
	if len(b) > 16 {
		b = b[:16]
	}
	return string(b)
}
