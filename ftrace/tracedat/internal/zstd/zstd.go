// Package zstd decompresses Zstandard frames (RFC 8878), which trace-cmd
// uses to compress trace.dat version 7 files.
//
// Go's standard library has no zstd, and the project keeps to the standard
// library where it can: this is a hand-written decoder, written from the
// RFC, of what a decoder needs and nothing more (no dictionaries, no
// streaming, no encoder). Every size it reads is checked, its output is
// bounded by the size the caller expects, and corrupt input is an error,
// never a panic: the fuzz test holds it to that. Frames are checked against
// their content size and XXH64 checksum when they carry them.
//
// # Layout (RFC 8878 section 3)
//
//	frame    magic(4) header blocks... [checksum(4)]
//	block    header(3: last bit, type 2 bits, size 21 bits) data
//	         raw: size bytes; RLE: one byte repeated size times;
//	         compressed: literals section, then sequences section
//	literals raw, RLE, or Huffman-coded in 1 or 4 streams (section 3.1.1.3.1)
//	sequences (literal length, offset, match length) triples, FSE-coded
//	         with three interleaved states over one backward bitstream
package zstd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

const (
	frameMagic     = 0xFD2FB528
	skippableMagic = 0x184D2A50 // to 0x184D2A5F
	maxBlockSize   = 128 << 10
)

// Decode decompresses every frame of src and returns the result, which
// must be exactly n bytes long.
func Decode(src []byte, n int) ([]byte, error) {
	if n < 0 {
		return nil, errors.New("zstd: negative size")
	}
	d := &decoder{out: make([]byte, 0, min(n, 1<<20)), limit: n}
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("zstd: data ends inside a frame's magic number")
		}
		m := binary.LittleEndian.Uint32(src)
		if m&^0xF == skippableMagic {
			if len(src) < 8 {
				return nil, errors.New("zstd: truncated skippable frame")
			}
			size := uint64(binary.LittleEndian.Uint32(src[4:]))
			if size > uint64(len(src)-8) {
				return nil, errors.New("zstd: skippable frame runs past the data")
			}
			src = src[8+size:]
			continue
		}
		if m != frameMagic {
			return nil, fmt.Errorf("zstd: bad magic number %#08x", m)
		}
		rest, err := d.frame(src[4:])
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		src = rest
	}
	if len(d.out) != n {
		return nil, fmt.Errorf("zstd: decompressed %d bytes, expected %d", len(d.out), n)
	}
	return d.out, nil
}

// decoder holds what one Decode call carries from block to block.
type decoder struct {
	out   []byte
	limit int

	// Per frame.
	frameStart int
	window     uint64
	reps       [3]uint64
	huff       *huffTable // the last Huffman table, for treeless literals
	ll, of, ml *fseTable  // the last sequence tables, for repeat mode
	lits       []byte     // scratch for a block's literals
}

func (d *decoder) frame(src []byte) ([]byte, error) {
	if len(src) < 1 {
		return nil, errors.New("truncated frame header")
	}
	desc := src[0]
	src = src[1:]
	fcsFlag := desc >> 6
	single := desc&0x20 != 0
	if desc&0x08 != 0 {
		return nil, errors.New("reserved bit set in the frame header")
	}
	checksum := desc&0x04 != 0
	dictBytes := [4]int{0, 1, 2, 4}[desc&3]
	var window uint64
	if !single {
		if len(src) < 1 {
			return nil, errors.New("truncated frame header")
		}
		wd := src[0]
		src = src[1:]
		log := uint(wd>>3) + 10
		if log > 41 {
			return nil, fmt.Errorf("window of 2^%d bytes", log)
		}
		base := uint64(1) << log
		window = base + base/8*uint64(wd&7)
	}
	if len(src) < dictBytes {
		return nil, errors.New("truncated frame header")
	}
	var dict uint64
	for i := 0; i < dictBytes; i++ {
		dict |= uint64(src[i]) << (8 * i)
	}
	src = src[dictBytes:]
	if dict != 0 {
		return nil, fmt.Errorf("frame needs dictionary %d; dictionaries are not supported", dict)
	}
	fcsBytes := [4]int{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsBytes = 1
	}
	if len(src) < fcsBytes {
		return nil, errors.New("truncated frame header")
	}
	contentSize, hasSize := uint64(0), fcsBytes > 0
	for i := 0; i < fcsBytes; i++ {
		contentSize |= uint64(src[i]) << (8 * i)
	}
	if fcsBytes == 2 {
		contentSize += 256
	}
	src = src[fcsBytes:]
	if single {
		window = contentSize
	}
	if hasSize && contentSize > uint64(d.limit-len(d.out)) {
		return nil, fmt.Errorf("frame holds %d bytes, more than the %d expected", contentSize, d.limit-len(d.out))
	}
	d.frameStart = len(d.out)
	d.window = window
	d.reps = [3]uint64{1, 4, 8}
	d.huff, d.ll, d.of, d.ml = nil, nil, nil, nil
	blockMax := min(window, maxBlockSize)
	for {
		if len(src) < 3 {
			return nil, errors.New("truncated block header")
		}
		h := uint32(src[0]) | uint32(src[1])<<8 | uint32(src[2])<<16
		src = src[3:]
		last := h&1 != 0
		typ := (h >> 1) & 3
		size := int(h >> 3)
		switch typ {
		case 0: // raw
			if size > len(src) {
				return nil, errors.New("raw block runs past the data")
			}
			if err := d.grow(size); err != nil {
				return nil, err
			}
			d.out = append(d.out, src[:size]...)
			src = src[size:]
		case 1: // RLE
			if len(src) < 1 {
				return nil, errors.New("RLE block without its byte")
			}
			if err := d.grow(size); err != nil {
				return nil, err
			}
			for i := 0; i < size; i++ {
				d.out = append(d.out, src[0])
			}
			src = src[1:]
		case 2:
			if size > len(src) {
				return nil, errors.New("compressed block runs past the data")
			}
			if uint64(size) > blockMax {
				return nil, fmt.Errorf("compressed block of %d bytes, more than the %d allowed", size, blockMax)
			}
			if err := d.compressedBlock(src[:size], int(blockMax)); err != nil {
				return nil, err
			}
			src = src[size:]
		default:
			return nil, errors.New("reserved block type")
		}
		if last {
			break
		}
	}
	produced := d.out[d.frameStart:]
	if hasSize && uint64(len(produced)) != contentSize {
		return nil, fmt.Errorf("frame decompressed to %d bytes, its header says %d", len(produced), contentSize)
	}
	if checksum {
		if len(src) < 4 {
			return nil, errors.New("truncated frame checksum")
		}
		want := binary.LittleEndian.Uint32(src)
		if got := uint32(xxh64(produced)); got != want {
			return nil, fmt.Errorf("checksum %#08x, the frame says %#08x", got, want)
		}
		src = src[4:]
	}
	return src, nil
}

// grow checks that n more bytes fit the expected output.
func (d *decoder) grow(n int) error {
	if n > d.limit-len(d.out) {
		return fmt.Errorf("data decompresses to more than the %d bytes expected", d.limit)
	}
	return nil
}

func (d *decoder) compressedBlock(b []byte, blockMax int) error {
	lits, rest, err := d.literals(b, blockMax)
	if err != nil {
		return fmt.Errorf("literals: %w", err)
	}
	start := len(d.out)
	if err := d.sequences(rest, lits); err != nil {
		return fmt.Errorf("sequences: %w", err)
	}
	if len(d.out)-start > blockMax {
		return fmt.Errorf("block decompressed to %d bytes, more than the %d allowed", len(d.out)-start, blockMax)
	}
	return nil
}

// literals decodes a block's literals section; rest is the sequences
// section.
func (d *decoder) literals(b []byte, blockMax int) (lits, rest []byte, err error) {
	if len(b) < 1 {
		return nil, nil, errors.New("empty block")
	}
	typ := b[0] & 3
	sf := (b[0] >> 2) & 3
	if typ < 2 { // raw, RLE
		var regen, hdr int
		switch sf {
		case 0, 2:
			regen, hdr = int(b[0]>>3), 1
		case 1:
			if len(b) < 2 {
				return nil, nil, errors.New("truncated header")
			}
			regen, hdr = int(b[0]>>4)+int(b[1])<<4, 2
		case 3:
			if len(b) < 3 {
				return nil, nil, errors.New("truncated header")
			}
			regen, hdr = int(b[0]>>4)+int(b[1])<<4+int(b[2])<<12, 3
		}
		if regen > blockMax {
			return nil, nil, fmt.Errorf("%d literals in a block of at most %d bytes", regen, blockMax)
		}
		b = b[hdr:]
		if typ == 0 {
			if regen > len(b) {
				return nil, nil, errors.New("raw literals run past the block")
			}
			return b[:regen], b[regen:], nil
		}
		if len(b) < 1 {
			return nil, nil, errors.New("RLE literals without their byte")
		}
		d.lits = d.lits[:0]
		for i := 0; i < regen; i++ {
			d.lits = append(d.lits, b[0])
		}
		return d.lits, b[1:], nil
	}
	// Huffman-coded: compressed (2) with its table, or treeless (3).
	var regen, comp, hdr int
	streams := 4
	switch sf {
	case 0, 1:
		if len(b) < 3 {
			return nil, nil, errors.New("truncated header")
		}
		v := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		regen, comp, hdr = int(v>>4&0x3ff), int(v>>14&0x3ff), 3
		if sf == 0 {
			streams = 1
		}
	case 2:
		if len(b) < 4 {
			return nil, nil, errors.New("truncated header")
		}
		v := binary.LittleEndian.Uint32(b)
		regen, comp, hdr = int(v>>4&0x3fff), int(v>>18), 4
	case 3:
		if len(b) < 5 {
			return nil, nil, errors.New("truncated header")
		}
		v := binary.LittleEndian.Uint32(b)
		regen, comp, hdr = int(v>>4&0x3ffff), int(v>>22)+int(b[4])<<10, 5
	}
	if regen > blockMax {
		return nil, nil, fmt.Errorf("%d literals in a block of at most %d bytes", regen, blockMax)
	}
	b = b[hdr:]
	if comp > len(b) {
		return nil, nil, errors.New("compressed literals run past the block")
	}
	data, rest := b[:comp], b[comp:]
	if typ == 2 {
		t, n, err := readHuffTable(data)
		if err != nil {
			return nil, nil, fmt.Errorf("Huffman table: %w", err)
		}
		d.huff = t
		data = data[n:]
	} else if d.huff == nil {
		return nil, nil, errors.New("treeless literals without an earlier Huffman table")
	}
	if cap(d.lits) < regen {
		d.lits = make([]byte, regen)
	}
	d.lits = d.lits[:regen]
	if streams == 1 {
		if err := d.huff.decode(d.lits, data); err != nil {
			return nil, nil, err
		}
		return d.lits, rest, nil
	}
	if len(data) < 6 {
		return nil, nil, errors.New("4-stream literals without their jump table")
	}
	s1 := int(binary.LittleEndian.Uint16(data))
	s2 := int(binary.LittleEndian.Uint16(data[2:]))
	s3 := int(binary.LittleEndian.Uint16(data[4:]))
	data = data[6:]
	if s1+s2+s3 > len(data) {
		return nil, nil, errors.New("literal streams run past their data")
	}
	seg := (regen + 3) / 4
	if 3*seg > regen {
		return nil, nil, fmt.Errorf("%d literals cannot be split in 4 streams", regen)
	}
	ins := [4][]byte{data[:s1], data[s1 : s1+s2], data[s1+s2 : s1+s2+s3], data[s1+s2+s3:]}
	for i := 0; i < 4; i++ {
		end := (i + 1) * seg
		if i == 3 {
			end = regen
		}
		if err := d.huff.decode(d.lits[i*seg:end], ins[i]); err != nil {
			return nil, nil, fmt.Errorf("stream %d: %w", i+1, err)
		}
	}
	return d.lits, rest, nil
}

// backward reads a bitstream written forward and read from its end: the
// last byte's highest set bit marks where the stream starts. Reads past the
// beginning give zeros and leave pos negative (an overflow).
type backward struct {
	b   []byte
	pos int // bits left to read
}

func newBackward(b []byte) (backward, error) {
	if len(b) == 0 {
		return backward{}, errors.New("empty bitstream")
	}
	last := b[len(b)-1]
	if last == 0 {
		return backward{}, errors.New("bitstream without its end marker")
	}
	return backward{b: b, pos: 8*(len(b)-1) + bits.Len8(last) - 1}, nil
}

// read takes the next n (<= 56) bits.
func (r *backward) read(n int) uint64 {
	v := r.peek(n)
	r.pos -= n
	return v
}

// peek returns the next n bits without taking them.
func (r *backward) peek(n int) uint64 {
	if n == 0 {
		return 0
	}
	lo := r.pos - n // bit index of the value's lowest bit
	if lo >= 0 && lo>>3+8 <= len(r.b) {
		v := binary.LittleEndian.Uint64(r.b[lo>>3:])
		return v >> (lo & 7) & (1<<n - 1)
	}
	// Near either end: gather the bytes one at a time; bits before the
	// stream's start read as zeros.
	first := lo >> 3 // floor, also for negative lo
	shift := lo - first*8
	var v uint64
	for i := 0; i < 8; i++ {
		if idx := first + i; idx >= 0 && idx < len(r.b) {
			v |= uint64(r.b[idx]) << (8 * i)
		}
	}
	return v >> shift & (1<<n - 1)
}
