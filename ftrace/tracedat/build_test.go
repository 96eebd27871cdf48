package tracedat

import (
	"bytes"
	"encoding/binary"
)

// A builder of small version 6 files, for tests: the real files in
// ../testdata/tracecmd prove the reader against trace-cmd; these reach the
// corners real recordings rarely show (time extends, absolute stamps,
// padding, lost events, big-endian, 32-bit kernels).

const headerPage64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n" +
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"

const headerPage32 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n" +
	"\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n" +
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n" +
	"\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n"

const headerEvent = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n"

// A test event: "v=%d u=%u f=%s", with a flags table.
const testFormat = `name: test_ev
ID: 7
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:int v;	offset:8;	size:4;	signed:1;
	field:unsigned int u;	offset:12;	size:4;	signed:0;

print fmt: "v=%d u=%u f=%s", REC->v, REC->u, __print_flags(REC->u, "|", { 1, "A" }, { 2, "B" })
`

// orderT is a byte order that can also append.
type orderT interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

type builder struct {
	order  orderT
	long   int // kernel long size: 8 or 4
	page   int
	cpus   int
	pages  [][][]byte // per CPU, its pages
	kallsy string
	comms  string
}

func newBuilder(cpus int) *builder {
	return &builder{order: binary.LittleEndian, long: 8, page: 4096, cpus: cpus, pages: make([][][]byte, cpus),
		kallsy: "ffffffff81000000 T first\nffffffff81000100 t second\nffffffffc0000000 t modfn\t[mymod]\n",
		comms:  "42 worker\n"}
}

// pageBuilder assembles one ring-buffer page.
type pageBuilder struct {
	b      *builder
	ts     uint64
	data   []byte
	commit uint64 // flags OR'ed into commit
	lost   int64  // stored after the data when commit has bit 30
}

func (b *builder) newPage(ts uint64) *pageBuilder { return &pageBuilder{b: b, ts: ts} }

func (p *pageBuilder) word(typeLen, delta uint32) {
	var w uint32
	if p.b.order == binary.BigEndian {
		w = typeLen<<27 | delta
	} else {
		w = delta<<5 | typeLen
	}
	p.data = p.b.order.AppendUint32(p.data, w)
}

// event appends a test_ev record with the given delta.
func (p *pageBuilder) event(delta uint32, pid int32, v int32, u uint32) {
	rec := p.b.record(pid, v, u)
	p.word(uint32(len(rec)/4), delta)
	p.data = append(p.data, rec...)
}

// longEvent appends a record with type_len 0 (an explicit length word).
func (p *pageBuilder) longEvent(delta uint32, pid int32, v int32, u uint32) {
	rec := p.b.record(pid, v, u)
	p.word(0, delta)
	p.data = p.b.order.AppendUint32(p.data, uint32(len(rec)+4))
	p.data = append(p.data, rec...)
}

func (p *pageBuilder) extend(delta uint64) {
	p.word(typeTimeExtend, uint32(delta&(1<<27-1)))
	p.data = p.b.order.AppendUint32(p.data, uint32(delta>>27))
}

func (p *pageBuilder) stamp(ts uint64) {
	p.word(typeTimeStamp, uint32(ts&(1<<27-1)))
	p.data = p.b.order.AppendUint32(p.data, uint32(ts>>27))
}

func (p *pageBuilder) padding(delta uint32, n int) {
	// The length counts from the end of the header word: the length
	// word itself and the n bytes after it.
	p.word(typePadding, delta)
	p.data = p.b.order.AppendUint32(p.data, uint32(4+n))
	p.data = append(p.data, make([]byte, n)...)
}

func (b *builder) record(pid int32, v int32, u uint32) []byte {
	r := make([]byte, 16)
	b.order.PutUint16(r, 7)
	r[2], r[3] = 0x09, 0x21 // irqs off + hardirq; preempt 1, migrate 2
	b.order.PutUint32(r[4:], uint32(pid))
	b.order.PutUint32(r[8:], uint32(v))
	b.order.PutUint32(r[12:], u)
	return r
}

// bytes lays the page out.
func (p *pageBuilder) bytes() []byte {
	b := p.b
	hdr := 16
	if b.long == 4 {
		hdr = 12
	}
	pg := make([]byte, b.page)
	b.order.PutUint64(pg, p.ts)
	commit := uint64(len(p.data)) | p.commit
	if b.long == 8 {
		b.order.PutUint64(pg[8:], commit)
	} else {
		b.order.PutUint32(pg[8:], uint32(commit))
	}
	copy(pg[hdr:], p.data)
	if p.commit&(1<<30) != 0 {
		if b.long == 8 {
			b.order.PutUint64(pg[hdr+len(p.data):], uint64(p.lost))
		} else {
			b.order.PutUint32(pg[hdr+len(p.data):], uint32(p.lost))
		}
	}
	return pg
}

func (b *builder) add(cpu int, p *pageBuilder) { b.pages[cpu] = append(b.pages[cpu], p.bytes()) }

// file writes the whole version 6 file.
func (b *builder) file() []byte {
	var w bytes.Buffer
	o := b.order
	w.WriteString(Magic)
	w.WriteString("6\x00")
	if o == binary.BigEndian {
		w.WriteByte(1)
	} else {
		w.WriteByte(0)
	}
	w.WriteByte(8)
	w.Write(o.AppendUint32(nil, uint32(b.page)))
	hp := headerPage64
	if b.long == 4 {
		hp = headerPage32
	}
	w.WriteString("header_page\x00")
	w.Write(o.AppendUint64(nil, uint64(len(hp))))
	w.WriteString(hp)
	w.WriteString("header_event\x00")
	w.Write(o.AppendUint64(nil, uint64(len(headerEvent))))
	w.WriteString(headerEvent)
	w.Write(o.AppendUint32(nil, 0)) // ftrace formats
	w.Write(o.AppendUint32(nil, 1)) // one system
	w.WriteString("test\x00")
	w.Write(o.AppendUint32(nil, 1))
	w.Write(o.AppendUint64(nil, uint64(len(testFormat))))
	w.WriteString(testFormat)
	w.Write(o.AppendUint32(nil, uint32(len(b.kallsy))))
	w.WriteString(b.kallsy)
	w.Write(o.AppendUint32(nil, 0)) // printk
	w.Write(o.AppendUint64(nil, uint64(len(b.comms))))
	w.WriteString(b.comms)
	w.Write(o.AppendUint32(nil, uint32(b.cpus)))
	w.WriteString("options  \x00")
	uname := "Linux t 6.18.0 #1\x00"
	w.Write(o.AppendUint16(nil, optUname))
	w.Write(o.AppendUint32(nil, uint32(len(uname))))
	w.WriteString(uname)
	w.Write(o.AppendUint16(nil, 0))
	w.WriteString("flyrecord\x00")
	table := w.Len()
	w.Write(make([]byte, 16*b.cpus))
	out := w.Bytes()
	for cpu := 0; cpu < b.cpus; cpu++ {
		for len(out)%b.page != 0 {
			out = append(out, 0)
		}
		off := len(out)
		for _, pg := range b.pages[cpu] {
			out = append(out, pg...)
		}
		o.PutUint64(out[table+16*cpu:], uint64(off))
		o.PutUint64(out[table+16*cpu+8:], uint64(len(out)-off))
		if len(b.pages[cpu]) == 0 {
			o.PutUint64(out[table+16*cpu:], 0)
		}
	}
	return out
}
