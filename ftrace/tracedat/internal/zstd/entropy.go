package zstd

import (
	"errors"
	"fmt"
	"math/bits"
)

// FSE (finite state entropy, RFC 8878 section 4.1).

type fseEntry struct {
	sym      uint8
	nbBits   uint8
	baseline uint16
}

type fseTable struct {
	log   int
	cells []fseEntry
}

// forward reads a bitstream from its first byte, low bits first.
type forward struct {
	b   []byte
	pos int // bits read
}

func (r *forward) read(n int) (uint32, error) {
	if r.pos+n > 8*len(r.b) {
		return 0, errors.New("table description runs past its data")
	}
	var v uint32
	for i := 0; i < n; i++ {
		bit := r.pos + i
		v |= uint32(r.b[bit>>3]>>(bit&7)&1) << i
	}
	r.pos += n
	return v, nil
}

func (r *forward) peek(n int) uint32 {
	var v uint32
	for i := 0; i < n; i++ {
		bit := r.pos + i
		if bit>>3 < len(r.b) {
			v |= uint32(r.b[bit>>3]>>(bit&7)&1) << i
		}
	}
	return v
}

// readFSE reads an FSE table description (section 4.1.1) of symbols up to
// maxSym and accuracy up to maxLog; n is the bytes it took.
func readFSE(b []byte, maxSym, maxLog int) (*fseTable, int, error) {
	r := &forward{b: b}
	v, err := r.read(4)
	if err != nil {
		return nil, 0, err
	}
	log := int(v) + 5
	if log > maxLog {
		return nil, 0, fmt.Errorf("accuracy log %d above %d", log, maxLog)
	}
	size := 1 << log
	remaining := size + 1
	threshold := size
	nbBits := log + 1
	norm := make([]int16, 0, maxSym+1)
	for remaining > 1 {
		if len(norm) > maxSym {
			return nil, 0, fmt.Errorf("probabilities for more than %d symbols", maxSym+1)
		}
		max := 2*threshold - 1 - remaining
		var count int
		low := int(r.peek(nbBits - 1))
		if low&(threshold-1) < max {
			count = low & (threshold - 1)
			if _, err := r.read(nbBits - 1); err != nil {
				return nil, 0, err
			}
		} else {
			c, err := r.read(nbBits)
			if err != nil {
				return nil, 0, err
			}
			count = int(c) & (2*threshold - 1)
			if count >= threshold {
				count -= max
			}
		}
		count-- // -1 means "less than 1": one cell
		if count < 0 {
			remaining--
		} else {
			remaining -= count
		}
		if remaining < 1 {
			return nil, 0, errors.New("probabilities exceed the table")
		}
		norm = append(norm, int16(count))
		if count == 0 {
			for {
				rep, err := r.read(2)
				if err != nil {
					return nil, 0, err
				}
				for i := uint32(0); i < rep; i++ {
					if len(norm) > maxSym {
						return nil, 0, fmt.Errorf("probabilities for more than %d symbols", maxSym+1)
					}
					norm = append(norm, 0)
				}
				if rep != 3 {
					break
				}
			}
		}
		for remaining < threshold && threshold > 1 {
			nbBits--
			threshold >>= 1
		}
	}
	if remaining != 1 {
		return nil, 0, errors.New("probabilities do not fill the table")
	}
	t, err := buildFSE(norm, log)
	return t, (r.pos + 7) / 8, err
}

// buildFSE spreads the symbols over the table (section 4.1.1).
func buildFSE(norm []int16, log int) (*fseTable, error) {
	size := 1 << log
	t := &fseTable{log: log, cells: make([]fseEntry, size)}
	high := size - 1
	next := make([]int, len(norm))
	for s, c := range norm {
		if c == -1 {
			if high < 0 {
				return nil, errors.New("too many low-probability symbols")
			}
			t.cells[high].sym = uint8(s)
			high--
			next[s] = 1
		} else {
			next[s] = int(c)
		}
	}
	pos := 0
	step := size>>1 + size>>3 + 3
	mask := size - 1
	for s, c := range norm {
		for i := 0; i < int(c); i++ {
			t.cells[pos].sym = uint8(s)
			pos = (pos + step) & mask
			for pos > high {
				pos = (pos + step) & mask
			}
		}
	}
	if pos != 0 {
		return nil, errors.New("probabilities do not fill the table")
	}
	for i := range t.cells {
		s := t.cells[i].sym
		n := next[s]
		next[s]++
		nb := log - (bits.Len(uint(n)) - 1)
		t.cells[i].nbBits = uint8(nb)
		t.cells[i].baseline = uint16(n<<nb - size)
	}
	return t, nil
}

// rleTable is the table of one symbol that needs no bits.
func rleTable(sym uint8) *fseTable {
	return &fseTable{log: 0, cells: []fseEntry{{sym: sym}}}
}

// Huffman literals (section 4.2).

type huffEntry struct {
	sym    uint8
	nbBits uint8
}

type huffTable struct {
	log   int
	cells []huffEntry
}

const maxHuffLog = 12

// readHuffTable reads a Huffman tree description; n is the bytes it took.
func readHuffTable(b []byte) (*huffTable, int, error) {
	if len(b) < 1 {
		return nil, 0, errors.New("missing")
	}
	h := int(b[0])
	var weights []uint8
	n := 1
	if h >= 128 {
		// Direct: h-127 weights of 4 bits.
		count := h - 127
		need := (count + 1) / 2
		if 1+need > len(b) {
			return nil, 0, errors.New("direct weights run past the data")
		}
		for i := 0; i < count; i++ {
			w := b[1+i/2]
			if i%2 == 0 {
				w >>= 4
			}
			weights = append(weights, w&15)
		}
		n += need
	} else {
		// FSE-compressed weights in h bytes.
		if 1+h > len(b) {
			return nil, 0, errors.New("compressed weights run past the data")
		}
		data := b[1 : 1+h]
		t, used, err := readFSE(data, 255, 6)
		if err != nil {
			return nil, 0, fmt.Errorf("weights table: %w", err)
		}
		if used >= len(data) {
			return nil, 0, errors.New("no weights after their table")
		}
		r, err := newBackward(data[used:])
		if err != nil {
			return nil, 0, err
		}
		s1 := int(r.read(t.log))
		s2 := int(r.read(t.log))
		for {
			if len(weights) >= 255 {
				return nil, 0, errors.New("more than 255 weights")
			}
			weights = append(weights, t.cells[s1].sym)
			e := t.cells[s1]
			s1 = int(e.baseline) + int(r.read(int(e.nbBits)))
			if r.pos < 0 {
				weights = append(weights, t.cells[s2].sym)
				break
			}
			if len(weights) >= 255 {
				return nil, 0, errors.New("more than 255 weights")
			}
			weights = append(weights, t.cells[s2].sym)
			e = t.cells[s2]
			s2 = int(e.baseline) + int(r.read(int(e.nbBits)))
			if r.pos < 0 {
				weights = append(weights, t.cells[s1].sym)
				break
			}
		}
		n += h
	}
	t, err := buildHuff(weights)
	return t, n, err
}

// buildHuff makes the decoding table of the weights; the last symbol's
// weight is implied (the weights' sum must reach a power of two).
func buildHuff(weights []uint8) (*huffTable, error) {
	if len(weights) > 255 {
		return nil, errors.New("more than 255 weights")
	}
	total := 0
	for _, w := range weights {
		if w > maxHuffLog {
			return nil, fmt.Errorf("weight %d", w)
		}
		if w > 0 {
			total += 1 << (w - 1)
		}
	}
	if total == 0 {
		return nil, errors.New("all weights zero")
	}
	log := bits.Len(uint(total))
	if log > maxHuffLog {
		return nil, fmt.Errorf("codes of %d bits", log)
	}
	left := 1<<log - total
	if left&(left-1) != 0 {
		return nil, errors.New("weights do not complete a prefix code")
	}
	weights = append(weights, uint8(bits.Len(uint(left))))
	var rankStart [maxHuffLog + 2]int
	var count [maxHuffLog + 2]int
	for _, w := range weights {
		count[w]++
	}
	pos := 0
	for w := 1; w <= log; w++ {
		rankStart[w] = pos
		pos += count[w] << (w - 1)
	}
	if pos != 1<<log {
		return nil, errors.New("weights do not fill the code")
	}
	t := &huffTable{log: log, cells: make([]huffEntry, 1<<log)}
	for s, w := range weights {
		if w == 0 {
			continue
		}
		l := 1 << (w - 1)
		e := huffEntry{sym: uint8(s), nbBits: uint8(log + 1 - int(w))}
		for i := rankStart[w]; i < rankStart[w]+l; i++ {
			t.cells[i] = e
		}
		rankStart[w] += l
	}
	return t, nil
}

// decode fills out from one Huffman stream, which it must use up.
func (t *huffTable) decode(out, in []byte) error {
	r, err := newBackward(in)
	if err != nil {
		return err
	}
	for i := range out {
		e := t.cells[r.peek(t.log)]
		out[i] = e.sym
		r.pos -= int(e.nbBits)
		if r.pos < 0 {
			return errors.New("Huffman stream ends before its literals")
		}
	}
	if r.pos != 0 {
		return fmt.Errorf("Huffman stream has %d bits left after its literals", r.pos)
	}
	return nil
}
