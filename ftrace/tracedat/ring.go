package tracedat

import (
	"container/heap"
	"fmt"
	"io"
	"math/bits"
)

// Record is one event of the ring buffer.
type Record struct {
	CPU int
	// TS is the record's time: the trace clock's nanoseconds (for the
	// clocks that count them), after the file's offset and TSC
	// conversion options.
	TS uint64
	// Lost is the number of events the kernel lost on this CPU just
	// before this record: 0 for none, -1 for an unknown number.
	Lost int64
	// Data is the event: its common fields, then its own. It is nil for
	// a loss the kernel reported after the CPU's last record; Data is
	// only valid until the next call of Next.
	Data []byte
	// Page and InPage locate the record: the page's index in its CPU's
	// data and the record header's offset in the page.
	Page   int64
	InPage int
}

// Where describes the record's place for an error message.
func (r *Record) Where() string {
	return fmt.Sprintf("CPU %d, page %d, byte %#x", r.CPU, r.Page, r.InPage)
}

// Records iterates the buffer's records of every CPU, merged in time order
// (the lowest CPU first on a tie).
func (b *Buffer) Records() (*Records, error) {
	rs := &Records{}
	for _, c := range b.CPUs {
		if c.Size == 0 {
			continue
		}
		cr, err := newCPUReader(b, c)
		if err != nil {
			return nil, err
		}
		if err := cr.advance(); err != nil {
			return nil, err
		}
		if cr.done {
			if cr.lost != 0 {
				rs.tail = append(rs.tail, Record{CPU: c.CPU, Lost: cr.lost, TS: cr.lastTS})
			}
			continue
		}
		rs.h = append(rs.h, cr)
	}
	heap.Init(&rs.h)
	return rs, nil
}

// Records is an iterator over a buffer's records.
type Records struct {
	h    cpuHeap
	cur  *cpuReader // its record was returned last; advanced on the next call
	tail []Record   // losses after the last record of a CPU
	err  error
}

// Next returns the next record, io.EOF after the last.
func (rs *Records) Next() (Record, error) {
	if rs.err != nil {
		return Record{}, rs.err
	}
	if c := rs.cur; c != nil {
		rs.cur = nil
		if err := c.advance(); err != nil {
			rs.err = err
			return Record{}, err
		}
		if c.done {
			heap.Pop(&rs.h)
			if c.lost != 0 {
				rs.tail = append(rs.tail, Record{CPU: c.cpu, Lost: c.lost, TS: c.lastTS})
			}
		} else {
			heap.Fix(&rs.h, 0)
		}
	}
	if len(rs.h) == 0 {
		if len(rs.tail) > 0 {
			r := rs.tail[0]
			rs.tail = rs.tail[1:]
			return r, nil
		}
		rs.err = io.EOF
		return Record{}, io.EOF
	}
	rs.cur = rs.h[0]
	return rs.cur.rec, nil
}

type cpuHeap []*cpuReader

func (h cpuHeap) Len() int { return len(h) }
func (h cpuHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	return a.rec.TS < b.rec.TS || a.rec.TS == b.rec.TS && a.cpu < b.cpu
}
func (h cpuHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cpuHeap) Push(x any)   { *h = append(*h, x.(*cpuReader)) }
func (h *cpuHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// cpuReader walks one CPU's pages.
type cpuReader struct {
	f        *File
	b        *Buffer
	cpu      int
	pageSize int

	// Uncompressed: the pages lie at [off, off+size) of the file and are
	// read a batch at a time into buf.
	off, size int64
	// Compressed: the chunks, decompressed one at a time into buf.
	chunks []chunk
	next   int // the next chunk to load

	buf     []byte // the pages loaded
	bufPage int64  // index of buf's first page in the CPU's data
	pageIdx int64  // the current page's index
	page    []byte // the current page's data part
	pos     int    // offset of the next record header in page
	pageTS  uint64 // the page header's timestamp
	ts      uint64
	lost    int64 // a loss not yet attached to a record
	lastTS  uint64
	started bool
	done    bool
	rec     Record
}

type chunk struct {
	zoff       int64
	zsize, len uint32
}

func newCPUReader(b *Buffer, c CPUData) (*cpuReader, error) {
	f := b.f
	cr := &cpuReader{f: f, b: b, cpu: c.CPU, pageSize: b.PageSize, off: c.Offset, size: c.Size, pageIdx: -1}
	if f.page.dataOff >= b.PageSize {
		return nil, &Error{Off: c.Offset, Err: fmt.Errorf("buffer %q: page size %d leaves no room after the %d-byte page header", b.Name, b.PageSize, f.page.dataOff)}
	}
	if !b.Compressed {
		return cr, nil
	}
	// count(4) { zsize(4) size(4) data }
	s := &seq{f: f, off: c.Offset}
	n := s.u32("chunk count")
	if s.err != nil {
		return nil, s.err
	}
	// The size trace-cmd 3.1 records leaves out the count's 4 bytes;
	// later versions count them.
	end := min(c.Offset+c.Size+4, f.size)
	if int64(n)*8 > end-s.off {
		return nil, &Error{Off: c.Offset, Err: fmt.Errorf("CPU %d: %d chunks do not fit in its %d bytes", c.CPU, n, c.Size)}
	}
	cr.chunks = make([]chunk, n)
	for i := range cr.chunks {
		at := s.off
		z := s.u32("chunk compressed size")
		l := s.u32("chunk size")
		if s.err != nil {
			return nil, s.err
		}
		if int64(z) > end-s.off {
			return nil, &Error{Off: at, Err: fmt.Errorf("CPU %d: chunk %d of %d compressed bytes runs past the CPU's data", c.CPU, i, z)}
		}
		if l > MaxChunk || int(l)%b.PageSize != 0 {
			return nil, &Error{Off: at, Err: fmt.Errorf("CPU %d: chunk %d decompresses to %d bytes: not whole pages of %d, or more than %d", c.CPU, i, l, b.PageSize, MaxChunk)}
		}
		cr.chunks[i] = chunk{zoff: s.off, zsize: z, len: l}
		s.off += int64(z)
	}
	return cr, nil
}

// batch is how much uncompressed page data is read at once.
const batch = 64 << 10

// loadPage makes the next page current; false at the end of the data.
func (cr *cpuReader) loadPage() (bool, error) {
	cr.pageIdx++
	idx := int(cr.pageIdx-cr.bufPage) * cr.pageSize
	if idx+cr.pageSize > len(cr.buf) {
		ok, err := cr.fill()
		if !ok || err != nil {
			return false, err
		}
		idx = int(cr.pageIdx-cr.bufPage) * cr.pageSize
	}
	p := cr.buf[idx : idx+cr.pageSize]
	lay := cr.f.page
	o := cr.f.order
	cr.pageTS = o.Uint64(p[lay.tsOff:])
	var commit uint64
	if lay.commitSize == 8 {
		commit = o.Uint64(p[lay.commitOff:])
	} else {
		commit = uint64(o.Uint32(p[lay.commitOff:]))
	}
	size := int(commit & (1<<27 - 1))
	data := p[lay.dataOff:]
	if size > len(data) {
		return false, cr.errf(0, "the page header's commit says %d bytes of data, the page holds %d", size, len(data))
	}
	if commit&(1<<31) != 0 {
		n := int64(-1)
		if commit&(1<<30) != 0 {
			l := lay.commitSize
			if size+l > len(data) {
				return false, cr.errf(0, "the lost-events count after the page's %d bytes of data runs past the page", size)
			}
			if l == 8 {
				n = int64(o.Uint64(data[size:]))
			} else {
				n = int64(o.Uint32(data[size:]))
			}
			if n < 0 {
				n = -1
			}
		}
		switch {
		case cr.lost == 0:
			cr.lost = n
		case cr.lost > 0 && n > 0:
			cr.lost += n
		default:
			cr.lost = -1
		}
	}
	cr.page = data[:size]
	cr.pos = 0
	cr.ts = cr.pageTS
	return true, nil
}

// fill loads the pages from cr.pageIdx on; false at the end.
func (cr *cpuReader) fill() (bool, error) {
	if cr.chunks == nil {
		start := cr.pageIdx * int64(cr.pageSize)
		if start >= cr.size {
			return false, nil
		}
		n := min(int64(max(batch, cr.pageSize)), cr.size-start)
		n -= n % int64(cr.pageSize)
		if cap(cr.buf) < int(n) {
			cr.buf = make([]byte, n)
		}
		cr.buf = cr.buf[:n]
		if _, err := cr.f.r.ReadAt(cr.buf, cr.off+start); err != nil {
			return false, &Error{Off: cr.off + start, Err: fmt.Errorf("CPU %d: reading its pages: %w", cr.cpu, err)}
		}
		cr.bufPage = cr.pageIdx
		return true, nil
	}
	for {
		if cr.next >= len(cr.chunks) {
			return false, nil
		}
		c := cr.chunks[cr.next]
		cr.next++
		z := make([]byte, c.zsize)
		if _, err := cr.f.r.ReadAt(z, c.zoff); err != nil {
			return false, &Error{Off: c.zoff, Err: fmt.Errorf("CPU %d: reading chunk %d: %w", cr.cpu, cr.next-1, err)}
		}
		out, err := cr.f.comp.decompress(z, int(c.len))
		if err != nil {
			return false, &Error{Off: c.zoff, Err: fmt.Errorf("CPU %d: chunk %d: %s: %w", cr.cpu, cr.next-1, cr.f.Compression, err)}
		}
		if len(out) != int(c.len) {
			return false, &Error{Off: c.zoff, Err: fmt.Errorf("CPU %d: chunk %d decompressed to %d bytes, its header says %d", cr.cpu, cr.next-1, len(out), c.len)}
		}
		if len(out) == 0 {
			continue
		}
		cr.buf = out
		cr.bufPage = cr.pageIdx
		return true, nil
	}
}

func (cr *cpuReader) errf(inPage int, format string, args ...any) error {
	return &Error{Off: -1, Err: fmt.Errorf("CPU %d, page %d, byte %#x: %s", cr.cpu, cr.pageIdx, inPage+cr.f.page.dataOff, fmt.Sprintf(format, args...))}
}

// Ring-buffer record types (type_len values above the data lengths).
const (
	typePadding    = 29
	typeTimeExtend = 30
	typeTimeStamp  = 31
	tsMSB          = uint64(0xf8) << 56
)

// advance makes cr.rec the CPU's next record, or sets done.
func (cr *cpuReader) advance() error {
	o := cr.f.order
	for {
		if cr.page == nil || cr.pos >= len(cr.page) {
			ok, err := cr.loadPage()
			if err != nil {
				return err
			}
			if !ok {
				cr.done = true
				return nil
			}
			continue
		}
		p, at := cr.page, cr.pos
		if at+4 > len(p) {
			return cr.errf(at, "a record header cut by the end of the page's data")
		}
		w := o.Uint32(p[at:])
		var typeLen, delta uint32
		if cr.f.BigEndian {
			typeLen, delta = w>>27, w&(1<<27-1)
		} else {
			typeLen, delta = w&31, w>>5
		}
		word := func() (uint32, error) {
			if at+8 > len(p) {
				return 0, cr.errf(at, "a record of type %d cut by the end of the page's data", typeLen)
			}
			return o.Uint32(p[at+4:]), nil
		}
		switch typeLen {
		case typePadding:
			n, err := word()
			if err != nil {
				return err
			}
			cr.ts += uint64(delta)
			cr.pos = at + 4 + int(n)
			if int(n) < 0 || cr.pos > len(p) || cr.pos <= at {
				cr.pos = len(p) // padding to the end of the page
			}
			continue
		case typeTimeExtend, typeTimeStamp:
			n, err := word()
			if err != nil {
				return err
			}
			v := uint64(n)<<27 + uint64(delta)
			if typeLen == typeTimeStamp {
				cr.ts = v | cr.pageTS&tsMSB
			} else {
				cr.ts += v
			}
			cr.pos = at + 8
			continue
		}
		var start, n int
		if typeLen == 0 {
			l, err := word()
			if err != nil {
				return err
			}
			if l < 4 || l > uint32(len(p)) {
				return cr.errf(at, "record length %d", l)
			}
			start, n = at+8, int((l-4+3)&^3)
		} else {
			start, n = at+4, int(typeLen)*4
		}
		if start+n > len(p) {
			return cr.errf(at, "a record of %d bytes runs past the page's %d bytes of data", n, len(p))
		}
		cr.ts += uint64(delta)
		cr.pos = start + n
		ts := cr.f.correct(cr.ts)
		if cr.started && ts < cr.lastTS {
			return cr.errf(at, "time goes backwards on this CPU: %d ns after %d ns", ts, cr.lastTS)
		}
		cr.started = true
		cr.lastTS = ts
		cr.rec = Record{CPU: cr.cpu, TS: ts, Lost: cr.lost, Data: p[start : start+n], Page: cr.pageIdx, InPage: at + cr.f.page.dataOff}
		cr.lost = 0
		return nil
	}
}

// correct applies the file's TSC conversion and time offset.
func (f *File) correct(ts uint64) uint64 {
	if f.tscMult != 0 {
		hi, lo := bits.Mul64(ts, uint64(f.tscMult))
		ts = lo>>f.tscShift | hi<<(64-f.tscShift)
		if f.tscShift == 0 {
			ts = lo
		}
	}
	return uint64(int64(ts) + f.tsOffset)
}
