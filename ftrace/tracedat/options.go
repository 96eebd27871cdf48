package tracedat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Option and section IDs (trace-cmd's enum tracecmd_option_id).
const (
	optDone         = 0
	optDate         = 1
	optCPUStat      = 2
	optBuffer       = 3
	optTraceClock   = 4
	optUname        = 5
	optHook         = 6
	optOffset       = 7
	optCPUCount     = 8
	optVersion      = 9
	optProcMaps     = 10
	optTraceID      = 11
	optTimeShift    = 12
	optGuest        = 13
	optTSC2NSec     = 14
	optStrings      = 15
	optHeaderInfo   = 16
	optFtraceEvents = 17
	optEventFormats = 18
	optKallsyms     = 19
	optPrintk       = 20
	optCmdlines     = 21
	optBufferText   = 22
	optBTF          = 23
	optLastBoot     = 24
	optModules      = 25
)

// Section flag: the section's data is compressed.
const secCompressed = 1

func (f *File) openV7(s *seq) error {
	f.Compression = s.cstr(64, "compression name")
	f.CompressionVersion = s.cstr(64, "compression version")
	opts := s.u64("options offset")
	if s.err != nil {
		return s.err
	}
	var err error
	if f.comp, err = newCodec(f.Compression); err != nil {
		return &Error{Off: s.off - 8, Err: err}
	}
	var bufs []*Buffer
	seen := map[uint64]bool{}
	for opts != 0 {
		if seen[opts] {
			return &Error{Off: int64(opts), Err: errors.New("the options sections form a loop")}
		}
		seen[opts] = true
		os, err := f.openSection(int64(opts), optDone, "options")
		if err != nil {
			return err
		}
		b, next, err := f.readOptionsV7(os)
		if err != nil {
			return err
		}
		bufs = append(bufs, b...)
		opts = next
	}
	for _, sec := range []struct {
		id   uint16
		name string
		read func(*seq) error
	}{
		{optHeaderInfo, "header info", f.readHeaders},
		{optFtraceEvents, "ftrace event formats", f.readFtraceFormats},
		{optEventFormats, "event formats", f.readEventFormats},
		{optKallsyms, "kallsyms", func(s *seq) error { f.syms = parseKallsyms(s.block(4, "kallsyms")); return s.err }},
		{optCmdlines, "saved cmdlines", func(s *seq) error { f.comms = parseCmdlines(s.block(8, "saved cmdlines")); return s.err }},
	} {
		off, ok := f.sections[sec.id]
		if !ok {
			if sec.id == optHeaderInfo || sec.id == optEventFormats {
				return &Error{Off: -1, Err: fmt.Errorf("no %s section", sec.name)}
			}
			continue
		}
		ss, err := f.openSection(off, sec.id, sec.name)
		if err != nil {
			return err
		}
		if err := sec.read(ss); err != nil {
			return err
		}
	}
	if f.CPUs == 0 {
		for _, b := range bufs {
			for _, c := range b.CPUs {
				f.CPUs = max(f.CPUs, c.CPU+1)
			}
		}
	}
	for _, b := range bufs {
		if b.Name == "" {
			f.Clock = b.Clock
		}
		if b.at != 0 {
			hs := &seq{f: f, off: b.at}
			id := hs.u16("buffer section id")
			flags := hs.u16("buffer section flags")
			if hs.err != nil {
				return hs.err
			}
			if id != optBuffer {
				return &Error{Off: b.at, Err: fmt.Errorf("buffer %q: section id %d where the flyrecord section (%d) should be", b.Name, id, optBuffer)}
			}
			b.Compressed = flags&secCompressed != 0 && f.comp != nil
		}
	}
	f.Buffers = bufs
	if len(bufs) == 0 {
		return &Error{Off: -1, Err: errors.New("no BUFFER option: the file holds no ring-buffer data (a latency text trace?)")}
	}
	return f.checkBuffers()
}

// openSection reads the header of the section at off, which must be id,
// and returns a reader of its (decompressed) data.
func (f *File) openSection(off int64, id uint16, name string) (*seq, error) {
	s := &seq{f: f, off: off}
	got := s.u16(name + " section id")
	flags := s.u16(name + " section flags")
	s.u32(name + " section description")
	size := s.u64(name + " section size")
	if s.err != nil {
		return nil, s.err
	}
	if got != id {
		return nil, &Error{Off: off, Err: fmt.Errorf("section id %d where the %s section (%d) should be", got, name, id)}
	}
	if size > MaxSection || int64(size) > s.left() {
		return nil, &Error{Off: off, Err: fmt.Errorf("%s section of %d bytes: the file has %d left (at most %d accepted)", name, size, max(s.left(), 0), MaxSection)}
	}
	data := s.bytes(int64(size), name+" section")
	if s.err != nil {
		return nil, s.err
	}
	if flags&secCompressed != 0 {
		if f.comp == nil {
			return nil, &Error{Off: off, Err: fmt.Errorf("%s section is marked compressed in a file whose compression is %q", name, f.Compression)}
		}
		var err error
		if data, err = f.uncompressBlock(data, MaxSection); err != nil {
			return nil, &Error{Off: off, Err: fmt.Errorf("%s section: %w", name, err)}
		}
	}
	return &seq{f: f, mem: data, base: off}, nil
}

// uncompressBlock decompresses "zsize(4) size(4) data".
func (f *File) uncompressBlock(b []byte, limit int) ([]byte, error) {
	if len(b) < 8 {
		return nil, errors.New("compressed block shorter than its 8-byte header")
	}
	zsize := f.order.Uint32(b)
	size := f.order.Uint32(b[4:])
	if uint64(zsize) > uint64(len(b)-8) {
		return nil, fmt.Errorf("compressed block claims %d bytes, holds %d", zsize, len(b)-8)
	}
	if uint64(size) > uint64(limit) {
		return nil, fmt.Errorf("compressed block would decompress to %d bytes, more than the %d accepted", size, limit)
	}
	out, err := f.comp.decompress(b[8:8+zsize], int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Compression, err)
	}
	if len(out) != int(size) {
		return nil, fmt.Errorf("%s: decompressed to %d bytes, the header says %d", f.Compression, len(out), size)
	}
	return out, nil
}

// readOptionsV7 reads one options section; next is the offset of the next
// one (0: none).
func (f *File) readOptionsV7(s *seq) (bufs []*Buffer, next uint64, err error) {
	for {
		id := s.u16("option id")
		data := s.block(4, "option")
		if s.err != nil {
			return nil, 0, s.err
		}
		if id == optDone {
			if len(data) < 8 {
				return nil, 0, &Error{Off: s.base, Err: errors.New("DONE option shorter than 8 bytes")}
			}
			return bufs, f.order.Uint64(data), nil
		}
		b, err := f.option(id, data, true)
		if err != nil {
			return nil, 0, &Error{Off: s.base, Err: err}
		}
		if b != nil {
			bufs = append(bufs, b)
		}
	}
}

// readOptions reads version 6's options, which end with option id 0.
func (f *File) readOptions(s *seq, _ bool) ([]*Buffer, error) {
	var bufs []*Buffer
	for {
		at := s.off
		id := s.u16("option id")
		if s.err != nil {
			return nil, s.err
		}
		if id == optDone {
			return bufs, nil
		}
		data := s.block(4, "option")
		if s.err != nil {
			return nil, s.err
		}
		b, err := f.option(id, data, false)
		if err != nil {
			return nil, &Error{Off: at, Err: err}
		}
		if b != nil {
			bufs = append(bufs, b)
		}
	}
}

// option applies one option; it returns the buffer a BUFFER option
// describes.
func (f *File) option(id uint16, data []byte, v7 bool) (*Buffer, error) {
	o := &seq{f: f, mem: data}
	str := func() string { return string(bytes.TrimRight(data, "\x00")) }
	switch id {
	case optDate, optOffset:
		v, err := strconv.ParseInt(strings.TrimSpace(str()), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("option %d: %q is not a number", id, str())
		}
		if id == optDate {
			v *= 1000 // trace-cmd stores the date offset in microseconds
		}
		f.tsOffset += v
	case optCPUStat:
		f.cpuStats = append(f.cpuStats, str())
	case optBuffer, optBufferText:
		b := &Buffer{PageSize: f.PageSize, f: f}
		at := o.u64("buffer offset")
		b.Name = o.cstr(256, "buffer name")
		if !v7 {
			if o.err != nil {
				return nil, o.err
			}
			if at == 0 || int64(at) >= f.size {
				return nil, fmt.Errorf("buffer %q: data offset %#x outside the file", b.Name, at)
			}
			b.at = int64(at)
			return b, nil
		}
		b.Clock = o.cstr(64, "buffer clock")
		if id == optBufferText {
			if o.err != nil {
				return nil, o.err
			}
			return nil, fmt.Errorf("buffer %q holds a latency tracer's text, not ring-buffer pages; read it with trace-cmd report", b.Name)
		}
		ps := o.u32("buffer page size")
		n := o.u32("buffer CPU count")
		if o.err != nil {
			return nil, o.err
		}
		if ps < 256 || ps > MaxPage || ps&(ps-1) != 0 {
			return nil, fmt.Errorf("buffer %q: page size %d is not a power of two in [256, %d]", b.Name, ps, MaxPage)
		}
		b.PageSize = int(ps)
		if int64(n)*20 > o.left() {
			return nil, fmt.Errorf("buffer %q: %d CPUs, but the option holds %d bytes for them", b.Name, n, o.left())
		}
		b.CPUs = make([]CPUData, n)
		for i := range b.CPUs {
			b.CPUs[i] = CPUData{CPU: int(o.u32("CPU")), Offset: int64(o.u64("CPU data offset")), Size: int64(o.u64("CPU data size"))}
		}
		b.at = int64(at)
		return b, o.err
	case optTraceClock:
		// The trace_clock file: "[local] global counter ...".
		s := str()
		if i := strings.IndexByte(s, '['); i >= 0 {
			if j := strings.IndexByte(s[i:], ']'); j > 0 {
				f.Clock = s[i+1 : i+j]
			}
		}
	case optUname:
		f.Uname = str()
	case optVersion:
		f.TraceCmdVersion = str()
	case optCPUCount:
		n := o.u32("CPU count")
		if o.err != nil {
			return nil, o.err
		}
		if n == 0 || n > maxCPU {
			return nil, fmt.Errorf("CPU count %d", n)
		}
		f.CPUs = int(n)
	case optTSC2NSec:
		// The offset after the multiplier and shift is trace-cmd's
		// business with guests; its reader does not add it either.
		f.tscMult = o.u32("TSC multiplier")
		f.tscShift = o.u32("TSC shift")
		if o.err != nil {
			return nil, o.err
		}
		if f.tscShift > 63 {
			return nil, fmt.Errorf("TSC2NSEC shift %d", f.tscShift)
		}
	case optTimeShift:
		f.Ignored = append(f.Ignored, "TIME_SHIFT (a guest's clock synchronisation with its host)")
	case optStrings:
		f.strs = append(f.strs, data...)
	case optHeaderInfo, optFtraceEvents, optEventFormats, optKallsyms, optPrintk, optCmdlines, optBTF, optModules:
		off := o.u64("section offset")
		if o.err != nil {
			return nil, o.err
		}
		f.sections[id] = int64(off)
	}
	return nil, nil
}
