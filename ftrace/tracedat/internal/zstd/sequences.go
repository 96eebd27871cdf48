package zstd

import (
	"errors"
	"fmt"
)

// Literal length codes (RFC 8878 section 3.1.1.3.2.1.1): baseline and extra
// bits.
var llBase = [36]uint32{
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
	8192, 16384, 32768, 65536,
}
var llBits = [36]uint8{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16,
}

// Match length codes.
var mlBase = [53]uint32{
	3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
	19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
	35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
	4099, 8195, 16387, 32771, 65539,
}
var mlBits = [53]uint8{
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
	12, 13, 14, 15, 16,
}

// The predefined distributions (section 3.1.1.3.2.2).
var (
	llDefault = []int16{4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1}
	mlDefault = []int16{1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1}
	ofDefault = []int16{1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1}

	llPredef = mustFSE(llDefault, 6)
	mlPredef = mustFSE(mlDefault, 6)
	ofPredef = mustFSE(ofDefault, 5)
)

func mustFSE(norm []int16, log int) *fseTable {
	t, err := buildFSE(norm, log)
	if err != nil {
		panic(err)
	}
	return t
}

// Largest symbols and accuracy logs of the three codes.
const (
	maxLL, maxLLLog = 35, 9
	maxML, maxMLLog = 52, 9
	maxOF, maxOFLog = 31, 8
)

// sequences decodes a block's sequences section and executes it with the
// block's literals.
func (d *decoder) sequences(b []byte, lits []byte) error {
	if len(b) < 1 {
		return errors.New("missing sequence count")
	}
	n := int(b[0])
	b = b[1:]
	switch {
	case n == 0:
		return d.literalsOnly(lits)
	case n == 255:
		if len(b) < 2 {
			return errors.New("truncated sequence count")
		}
		n = int(b[0]) + int(b[1])<<8 + 0x7f00
		b = b[2:]
	case n >= 128:
		if len(b) < 1 {
			return errors.New("truncated sequence count")
		}
		n = (n-128)<<8 + int(b[0])
		b = b[1:]
	}
	if len(b) < 1 {
		return errors.New("missing compression modes")
	}
	modes := b[0]
	b = b[1:]
	if modes&3 != 0 {
		return errors.New("reserved bits set in the compression modes")
	}
	var err error
	for _, c := range []struct {
		mode   uint8
		t      **fseTable
		predef *fseTable
		maxSym int
		maxLog int
		name   string
	}{
		{modes >> 6, &d.ll, llPredef, maxLL, maxLLLog, "literal lengths"},
		{modes >> 4 & 3, &d.of, ofPredef, maxOF, maxOFLog, "offsets"},
		{modes >> 2 & 3, &d.ml, mlPredef, maxML, maxMLLog, "match lengths"},
	} {
		switch c.mode {
		case 0:
			*c.t = c.predef
		case 1:
			if len(b) < 1 {
				return fmt.Errorf("%s: RLE mode without its symbol", c.name)
			}
			if int(b[0]) > c.maxSym {
				return fmt.Errorf("%s: symbol %d", c.name, b[0])
			}
			*c.t = rleTable(b[0])
			b = b[1:]
		case 2:
			var used int
			if *c.t, used, err = readFSE(b, c.maxSym, c.maxLog); err != nil {
				return fmt.Errorf("%s table: %w", c.name, err)
			}
			b = b[used:]
		case 3:
			if *c.t == nil {
				return fmt.Errorf("%s: repeat mode without an earlier table", c.name)
			}
		}
	}
	r, err := newBackward(b)
	if err != nil {
		return err
	}
	ll := int(r.read(d.ll.log))
	of := int(r.read(d.of.log))
	ml := int(r.read(d.ml.log))
	for i := 0; i < n; i++ {
		llc, ofc, mlc := d.ll.cells[ll].sym, d.of.cells[of].sym, d.ml.cells[ml].sym
		if int(llc) > maxLL || int(mlc) > maxML || int(ofc) > maxOF {
			return errors.New("code out of range")
		}
		offVal := uint64(1)<<ofc + r.read(int(ofc))
		matchLen := uint64(mlBase[mlc]) + r.read(int(mlBits[mlc]))
		litLen := uint64(llBase[llc]) + r.read(int(llBits[llc]))
		if r.pos < 0 {
			return errors.New("bitstream ends inside the sequences")
		}
		if i < n-1 {
			e := d.ll.cells[ll]
			ll = int(e.baseline) + int(r.read(int(e.nbBits)))
			e = d.ml.cells[ml]
			ml = int(e.baseline) + int(r.read(int(e.nbBits)))
			e = d.of.cells[of]
			of = int(e.baseline) + int(r.read(int(e.nbBits)))
			if r.pos < 0 {
				return errors.New("bitstream ends inside the sequences")
			}
			if ll >= len(d.ll.cells) || ml >= len(d.ml.cells) || of >= len(d.of.cells) {
				return errors.New("state out of range")
			}
		}
		off := d.offset(offVal, litLen)
		if litLen > uint64(len(lits)) {
			return fmt.Errorf("sequence needs %d literals, %d are left", litLen, len(lits))
		}
		if err := d.grow(int(litLen)); err != nil {
			return err
		}
		d.out = append(d.out, lits[:litLen]...)
		lits = lits[litLen:]
		if off == 0 || off > uint64(len(d.out)-d.frameStart) {
			return fmt.Errorf("match offset %d beyond the %d bytes decoded", off, len(d.out)-d.frameStart)
		}
		if d.window > 0 && off > d.window {
			return fmt.Errorf("match offset %d beyond the window of %d", off, d.window)
		}
		if matchLen > uint64(d.limit-len(d.out)) {
			return d.grow(int(min(matchLen, 1<<40)))
		}
		from := len(d.out) - int(off)
		if off >= matchLen {
			d.out = append(d.out, d.out[from:from+int(matchLen)]...)
			continue
		}
		for j := 0; j < int(matchLen); j++ { // the match overlaps its copy
			d.out = append(d.out, d.out[from+j])
		}
	}
	if r.pos != 0 {
		return fmt.Errorf("%d bits left after the sequences", r.pos)
	}
	return d.literalsOnly(lits)
}

func (d *decoder) literalsOnly(lits []byte) error {
	if err := d.grow(len(lits)); err != nil {
		return err
	}
	d.out = append(d.out, lits...)
	return nil
}

// offset turns an offset value into a distance, updating the repeat
// offsets (section 3.1.1.5).
func (d *decoder) offset(v, litLen uint64) uint64 {
	if v > 3 {
		off := v - 3
		d.reps = [3]uint64{off, d.reps[0], d.reps[1]}
		return off
	}
	idx := v
	if litLen == 0 {
		idx++
	}
	var off uint64
	switch idx {
	case 1:
		return d.reps[0]
	case 2:
		off = d.reps[1]
		d.reps = [3]uint64{off, d.reps[0], d.reps[2]}
	case 3:
		off = d.reps[2]
		d.reps = [3]uint64{off, d.reps[0], d.reps[1]}
	default:
		off = d.reps[0] - 1
		d.reps = [3]uint64{off, d.reps[0], d.reps[1]}
	}
	return off
}

// xxh64 is XXH64 with seed 0, whose low 32 bits are a frame's checksum.
func xxh64(b []byte) uint64 {
	const (
		p1 = 11400714785074694791
		p2 = 14029467366897019727
		p3 = 1609587929392839161
		p4 = 9650029242287828579
		p5 = 2870177450012600261
	)
	rotl := func(x uint64, r uint) uint64 { return x<<r | x>>(64-r) }
	round := func(acc, in uint64) uint64 { return rotl(acc+in*p2, 31) * p1 }
	le64 := func(b []byte) uint64 {
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	}
	n := uint64(len(b))
	var h uint64
	if len(b) >= 32 {
		var v1, v2, v3, v4 uint64 = p1, p2, 0, 0
		v1 += p2
		v4 -= p1
		for len(b) >= 32 {
			v1 = round(v1, le64(b))
			v2 = round(v2, le64(b[8:]))
			v3 = round(v3, le64(b[16:]))
			v4 = round(v4, le64(b[24:]))
			b = b[32:]
		}
		h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)
		for _, v := range []uint64{v1, v2, v3, v4} {
			h ^= round(0, v)
			h = h*p1 + p4
		}
	} else {
		h = p5
	}
	h += n
	for len(b) >= 8 {
		h ^= round(0, le64(b))
		h = rotl(h, 27)*p1 + p4
		b = b[8:]
	}
	if len(b) >= 4 {
		h ^= (uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24) * p1
		h = rotl(h, 23)*p2 + p3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * p5
		h = rotl(h, 11) * p1
	}
	h ^= h >> 33
	h *= p2
	h ^= h >> 29
	h *= p3
	h ^= h >> 32
	return h
}
