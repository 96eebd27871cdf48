package ftrace

import (
	"math"
	"strconv"
	"strings"
)

// A tracepoint payload is a row of key=value fields separated by single
// blanks, in the order of the event's TP_printk format:
//
//	timer=000000006ac7c0b3 function=process_timeout expires=4295013810 [timeout=1] bucket_expiry=4295013811 cpu=0 idx=51 flags=
//
// Two shapes break the simple rule and are handled here:
//   - "[timeout=1]": a field in brackets (timer_start prints the timeout so);
//   - "function=nf_ct_gc [nf_conntrack]": %ps names a module symbol with a
//     blank and the module in brackets. A token that is not key=value
//     continues the value before it, so the function is the whole
//     "nf_ct_gc [nf_conntrack]".
//
// Decoding looks fields up by key, so fields a newer kernel adds are
// tolerated (and dropped from the typed event), while a field the event needs
// and does not find is an error. Nothing here allocates: keys and values are
// substrings of the payload.

// maxFields bounds the fields of one payload; the widest event we decode has
// nine, so a payload with more than this is not one of ours.
const maxFields = 32

type field struct {
	key, val string
	bracket  bool // printed as "[key=val]"
}

type fields struct {
	n int
	f [maxFields]field
}

// split tokenizes payload into fields. It fails on a payload that does not
// start with key=value, on text after a bracketed field, on a repeated key and
// on too many fields.
func (fs *fields) split(payload string) error {
	fs.n = 0
	valStart := 0 // offset of the current field's value in payload
	for i := 0; i < len(payload); {
		if payload[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(payload) && payload[j] != ' ' {
			j++
		}
		tok := payload[i:j]
		if k, v, ok := bracketField(tok); ok {
			if err := fs.add(field{key: k, val: v, bracket: true}); err != nil {
				return err
			}
		} else if eq := indexByte(tok, '='); eq > 0 && validKey(tok[:eq]) {
			if err := fs.add(field{key: tok[:eq], val: tok[eq+1:]}); err != nil {
				return err
			}
			valStart = i + eq + 1
		} else {
			// A continuation of the previous value ("[module]" after a %ps
			// symbol, or stray text that the value check will reject).
			if fs.n == 0 {
				return &payloadError{msg: "does not start with key=value: " + strconv.Quote(clip(tok))}
			}
			last := &fs.f[fs.n-1]
			if last.bracket {
				return &payloadError{msg: "unexpected " + strconv.Quote(clip(tok)) + " after [" + last.key + "=" + last.val + "]"}
			}
			last.val = payload[valStart:j]
		}
		i = j
	}
	return nil
}

func (fs *fields) add(f field) error {
	for i := 0; i < fs.n; i++ {
		if fs.f[i].key == f.key {
			return &payloadError{msg: "field " + strconv.Quote(f.key) + " appears twice"}
		}
	}
	if fs.n == maxFields {
		return &payloadError{msg: "more than " + strconv.Itoa(maxFields) + " fields"}
	}
	fs.f[fs.n] = f
	fs.n++
	return nil
}

func (fs *fields) lookup(key string) (field, bool) {
	for i := 0; i < fs.n; i++ {
		if fs.f[i].key == key {
			return fs.f[i], true
		}
	}
	return field{}, false
}

// bracketField recognises "[key=val]".
func bracketField(tok string) (key, val string, ok bool) {
	if len(tok) < 4 || tok[0] != '[' || tok[len(tok)-1] != ']' {
		return "", "", false
	}
	in := tok[1 : len(tok)-1]
	eq := indexByte(in, '=')
	if eq <= 0 || !validKey(in[:eq]) {
		return "", "", false
	}
	return in[:eq], in[eq+1:], true
}

// validKey reports whether s can be a TP_printk field name: lower-case
// letters, digits and underscores, starting with a letter.
func validKey(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// payloadError is a payload that cannot be split into fields.
type payloadError struct{ msg string }

func (e *payloadError) Error() string { return e.msg }

// Numbers. The kernel prints them with printf conversions; each reader below
// accepts exactly what its conversion can print (decimal digits, an optional
// minus sign for the signed ones, lower-case hex) in the range of the C type,
// and reports why it does not.

// parseUint reads decimal digits into a uint64; hi is the largest value the
// C type holds.
func parseUint(s string, hi uint64) (uint64, string) {
	// Nineteen digits or fewer cannot overflow a uint64: the common case
	// tests the bound once, at the end, rather than at every digit.
	if s != "" && len(s) <= 19 {
		var n uint64
		for i := 0; i < len(s); i++ {
			d := s[i] - '0'
			if d > 9 {
				return parseUintSlow(s, hi)
			}
			n = n*10 + uint64(d)
		}
		if n > hi {
			return 0, "is out of range"
		}
		return n, ""
	}
	return parseUintSlow(s, hi)
}

// parseUintSlow is parseUint digit by digit: which of "is not a number"
// and "is out of range" it says is that of the first digit at fault.
func parseUintSlow(s string, hi uint64) (uint64, string) {
	if s == "" {
		return 0, "is empty"
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, "is not a number"
		}
		d := uint64(c - '0')
		if d > hi || n > (hi-d)/10 {
			return 0, "is out of range"
		}
		n = n*10 + d
	}
	return n, ""
}

// parseInt reads an optionally negative decimal in [lo, hi].
func parseInt(s string, lo, hi int64) (int64, string) {
	neg := false
	if s != "" && s[0] == '-' {
		neg = true
		s = s[1:]
		if s == "" {
			return 0, "is not a number"
		}
	}
	lim := uint64(hi)
	if neg {
		lim = uint64(-(lo + 1)) + 1
	}
	u, why := parseUint(s, lim)
	if why != "" {
		return 0, why
	}
	if neg {
		return -int64(u-1) - 1, ""
	}
	return int64(u), ""
}

// parseHex reads lower-case hex digits (%x, %p) into a value <= hi.
func parseHex(s string, hi uint64) (uint64, string) {
	// Sixteen digits or fewer cannot overflow a uint64 (see parseUint).
	if s != "" && len(s) <= 16 {
		var n uint64
		for i := 0; i < len(s); i++ {
			d := hexDigits[s[i]]
			if d > 15 {
				return parseHexSlow(s, hi)
			}
			n = n<<4 | uint64(d)
		}
		if n > hi {
			return 0, "is out of range"
		}
		return n, ""
	}
	return parseHexSlow(s, hi)
}

// hexDigits maps a lower-case hex digit to its value, any other byte to
// 0xff.
var hexDigits = func() (t [256]uint8) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = uint8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = uint8(c-'a') + 10
	}
	return t
}()

// parseHexSlow is parseHex digit by digit (see parseUintSlow).
func parseHexSlow(s string, hi uint64) (uint64, string) {
	if s == "" {
		return 0, "is empty"
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, "is not a hex number"
		}
		if d > hi || n > (hi-d)>>4 {
			return 0, "is out of range"
		}
		n = n<<4 | d
	}
	return n, ""
}

// parsePtr reads a %p pointer: the kernel prints a hashed (or, with
// no_hash_pointers, the real) address as 16 lower-case hex digits;
// libtraceevent (trace-cmd report) prints the raw address as "0x...".
func parsePtr(s string) (uint64, string) {
	const bad = "is not a pointer (16 hex digits)"
	if h, ok := strings.CutPrefix(s, "0x"); ok && len(h) >= 1 && len(h) <= 16 {
		s = h
	} else if len(s) != 16 {
		return 0, bad
	}
	v, why := parseHex(s, math.MaxUint64)
	if why != "" {
		return 0, bad
	}
	return v, ""
}

// appendPtr prints v as %p does on a 64-bit kernel.
func appendPtr(b []byte, v uint64) []byte {
	const hex = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, hex[(v>>uint(shift))&0xf])
	}
	return b
}
