package tracedat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// An event's "print fmt" is the TP_printk of its TRACE_EVENT as the kernel
// stringified it: a C format string, then the arguments as C expressions
// over the record ("REC->field"), with the kernel's helpers:
//
//	"timer=%p function=%ps expires=%lu [timeout=%ld] cpu=%u flags=%s",
//	REC->timer, REC->function, REC->expires, (long)REC->expires - REC->now,
//	REC->flags & 0x0003FFFF, __print_flags(REC->flags & (0x00040000 | ...),
//	"|", { 0x00040000, "M" }, ...)
//
// This file parses that into a format and an expression tree per argument,
// and evaluates it on a record with C's arithmetic (values of 32 or 64
// bits, signed or not, with the usual conversions), printing every
// conversion as the kernel's vsnprintf does. It knows what the events of
// the timer subsystem use and the common C around it; anything else
// (__print_hex, __get_bitmask, ...) is an error when an event needs it,
// never a wrong value.

// Print appends the event's text, as the kernel prints it after "name: ",
// to b.
func (e *Format) Print(b []byte, data []byte) ([]byte, error) {
	if e.print == nil && e.perr == nil {
		e.print, e.perr = parsePrintFmt(e.PrintFmt)
		if e.perr != nil {
			e.perr = fmt.Errorf("%s/%s: print fmt: %w", e.System, e.Name, e.perr)
		}
	}
	if e.perr != nil {
		return b, e.perr
	}
	start := len(b)
	b, err := e.print.eval(b, &evalCtx{e: e, data: data})
	if err != nil {
		return b[:start], fmt.Errorf("%s/%s: %w", e.System, e.Name, err)
	}
	return b, nil
}

type printFmt struct {
	parts []fmtPart
	args  []node
}

// fmtPart is literal text or one conversion.
type fmtPart struct {
	lit  string
	conv *conversion
}

// maxWidth bounds a conversion's field width and precision.
const maxWidth = 1000

type conversion struct {
	flags  string // of "-+ 0#"
	width  int    // -1: none
	prec   int    // -1: none
	length string // "", "h", "hh", "l", "ll", "z", ...
	verb   byte   // d i u x X o c s p
	ext    string // the kernel's %p extension letters ("s" of %ps)
}

func parsePrintFmt(text string) (*printFmt, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var format strings.Builder
	if p.peek().kind != tokString {
		return nil, errors.New("does not start with a format string")
	}
	for p.peek().kind == tokString {
		format.WriteString(p.next().text)
	}
	pf := &printFmt{}
	if pf.parts, err = parseConversions(format.String()); err != nil {
		return nil, err
	}
	for p.peek().kind != tokEOF {
		if !p.accept(",") {
			return nil, fmt.Errorf("expected ',' before %q", p.peek().text)
		}
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		pf.args = append(pf.args, n)
	}
	convs := 0
	for _, part := range pf.parts {
		if part.conv != nil {
			convs++
			if part.conv.width == -2 || part.conv.prec == -2 {
				convs++ // '*' takes an argument too
			}
		}
	}
	if convs != len(pf.args) {
		return nil, fmt.Errorf("%d conversions but %d arguments", convs, len(pf.args))
	}
	return pf, nil
}

// parseConversions splits a printf format into literal text and
// conversions.
func parseConversions(f string) ([]fmtPart, error) {
	var parts []fmtPart
	lit := strings.Builder{}
	for i := 0; i < len(f); {
		c := f[i]
		if c != '%' {
			lit.WriteByte(c)
			i++
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		cv := &conversion{width: -1, prec: -1}
		for i < len(f) && strings.IndexByte("-+ 0#", f[i]) >= 0 {
			cv.flags += f[i : i+1]
			i++
		}
		num := func() int {
			if i < len(f) && f[i] == '*' {
				i++
				return -2
			}
			n := -1
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				if n < 0 {
					n = 0
				}
				n = min(n*10+int(f[i]-'0'), maxWidth)
				i++
			}
			return n
		}
		cv.width = num()
		if i < len(f) && f[i] == '.' {
			i++
			cv.prec = max(num(), 0)
			if cv.prec == 0 && f[i-1] == '*' {
				cv.prec = -2
			}
		}
		for i < len(f) && strings.IndexByte("hlLqjzt", f[i]) >= 0 {
			cv.length += f[i : i+1]
			i++
		}
		if i >= len(f) {
			return nil, fmt.Errorf("format %q ends inside a conversion", clip(f))
		}
		cv.verb = f[i]
		i++
		switch cv.verb {
		case 'd', 'i', 'u', 'x', 'X', 'o', 'c', 's':
		case 'p':
			for i < len(f) && isAlnum(f[i]) {
				cv.ext += f[i : i+1]
				i++
			}
		default:
			return nil, fmt.Errorf("conversion %%%c is not supported", cv.verb)
		}
		if lit.Len() > 0 {
			parts = append(parts, fmtPart{lit: lit.String()})
			lit.Reset()
		}
		parts = append(parts, fmtPart{conv: cv})
	}
	if lit.Len() > 0 {
		parts = append(parts, fmtPart{lit: lit.String()})
	}
	return parts, nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Tokens of the C the print fmt holds.

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber
	tokString
	tokChar
	tokPunct
)

type token struct {
	kind tokKind
	text string // a string's or char's value, unescaped
	num  uint64
	uns  bool // a number with a U suffix
	long bool // a number with an L suffix
}

// maxTokens bounds the tokens of one print fmt (the longest, of
// __print_symbolic tables, have a few hundred).
const maxTokens = 1 << 14

func tokenize(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		if len(toks) == maxTokens {
			return nil, fmt.Errorf("more than %d tokens", maxTokens)
		}
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			var b strings.Builder
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
					switch s[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '0':
						b.WriteByte(0)
					default:
						b.WriteByte(s[j])
					}
					continue
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errors.New("unterminated string")
			}
			k := tokString
			if c == '\'' {
				k = tokChar
				if b.Len() != 1 {
					return nil, fmt.Errorf("character constant %q", b.String())
				}
			}
			toks = append(toks, token{kind: k, text: b.String()})
			i = j + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && isAlnum(s[j]) {
				j++
			}
			lit := s[i:j]
			t := token{kind: tokNumber, text: lit}
			for len(lit) > 0 && strings.IndexByte("uUlL", lit[len(lit)-1]) >= 0 {
				switch lit[len(lit)-1] {
				case 'u', 'U':
					t.uns = true
				default:
					t.long = true
				}
				lit = lit[:len(lit)-1]
			}
			v, err := strconv.ParseUint(lit, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("number %q", s[i:j])
			}
			t.num = v
			toks = append(toks, t)
			i = j
		case isIdent(c):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: s[i:j]})
			i = j
		default:
			op := ""
			for _, o := range []string{"->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if strings.IndexByte("(){}[],?:+-*/%<>&|^!~.", c) < 0 {
					return nil, fmt.Errorf("unexpected character %q", c)
				}
				op = s[i : i+1]
			}
			toks = append(toks, token{kind: tokPunct, text: op})
			i += len(op)
		}
	}
	return append(toks, token{kind: tokEOF}), nil
}

type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() token { return p.toks[p.pos] }
func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

func (p *parser) accept(op string) bool {
	if t := p.peek(); t.kind == tokPunct && t.text == op {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(op string) error {
	if !p.accept(op) {
		return fmt.Errorf("expected %q, found %q", op, p.peek().text)
	}
	return nil
}

// maxDepth bounds the nesting of expressions.
const maxDepth = 200

func (p *parser) expr() (node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, errors.New("expression nested too deeply")
	}
	defer func() { p.depth-- }()
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.accept("?") {
		return c, nil
	}
	a, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	b, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &condNode{c, a, b}, nil
}

// binary operators by precedence, loosest first.
var binOps = [][]string{
	{"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="},
	{"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

func (p *parser) binary(level int) (node, error) {
	if level == len(binOps) {
		return p.unary()
	}
	l, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		found := ""
		if t.kind == tokPunct {
			for _, o := range binOps[level] {
				if t.text == o {
					found = o
				}
			}
		}
		if found == "" {
			return l, nil
		}
		p.next()
		r, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		l = &binNode{op: found, l: l, r: r}
	}
}

func (p *parser) unary() (node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, errors.New("expression nested too deeply")
	}
	defer func() { p.depth-- }()
	t := p.peek()
	if t.kind == tokPunct {
		switch t.text {
		case "-", "+", "!", "~":
			p.next()
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &unNode{op: t.text, x: x}, nil
		case "(":
			if ct, ok := p.castType(); ok {
				x, err := p.unary()
				if err != nil {
					return nil, err
				}
				return &castNode{t: ct, x: x}, nil
			}
		}
	}
	return p.primary()
}

// castType parses "(unsigned long long)" and the like at the cursor.
func (p *parser) castType() (ctype, bool) {
	save := p.pos
	p.next() // (
	var words []string
	ptr := false
	for {
		t := p.peek()
		if t.kind == tokIdent && !ptr {
			words = append(words, t.text)
			p.next()
			continue
		}
		if t.kind == tokPunct && t.text == "*" && len(words) > 0 {
			ptr = true
			p.next()
			continue
		}
		break
	}
	if len(words) == 0 || !p.accept(")") {
		p.pos = save
		return ctype{}, false
	}
	ct, ok := typeOf(words, ptr)
	if !ok {
		p.pos = save
		return ctype{}, false
	}
	return ct, true
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNumber:
		return &constNode{literalType(t)}, nil
	case tokChar:
		return &constNode{val{u: uint64(t.text[0]), size: 4, signed: true}}, nil
	case tokString:
		s := t.text
		for p.peek().kind == tokString {
			s += p.next().text
		}
		return &constNode{val{str: s, isStr: true}}, nil
	case tokPunct:
		switch t.text {
		case "(":
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			return x, p.expect(")")
		case "{":
			var items []node
			for !p.accept("}") {
				if len(items) > 0 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
					if p.accept("}") {
						break
					}
				}
				x, err := p.expr()
				if err != nil {
					return nil, err
				}
				items = append(items, x)
			}
			return &listNode{items}, nil
		}
	case tokIdent:
		if t.text == "REC" {
			if err := p.expect("->"); err != nil {
				return nil, err
			}
			f := p.next()
			if f.kind != tokIdent {
				return nil, fmt.Errorf("REC-> followed by %q", f.text)
			}
			return &fieldNode{name: f.text}, nil
		}
		if p.accept("(") {
			var args []node
			for !p.accept(")") {
				if len(args) > 0 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
				}
				x, err := p.expr()
				if err != nil {
					return nil, err
				}
				args = append(args, x)
			}
			return &callNode{name: t.text, args: args}, nil
		}
		return &identNode{name: t.text}, nil
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

// literalType gives an integer constant C's type: the first of int,
// unsigned int (hex and octal only, or with a U suffix), long, unsigned long
// that holds it; an L suffix skips the 32-bit ones.
func literalType(t token) val {
	v := t.num
	hex := len(t.text) > 1 && t.text[0] == '0'
	switch {
	case !t.long && !t.uns && v <= 0x7fffffff:
		return val{u: v, size: 4, signed: true}
	case !t.long && (t.uns || hex) && v <= 0xffffffff:
		return val{u: v, size: 4}
	case !t.uns && v <= 0x7fffffffffffffff:
		return val{u: v, size: 8, signed: true}
	}
	return val{u: v, size: 8}
}

// ctype is a C scalar type.
type ctype struct {
	size   int // bytes; 0: the kernel's long
	signed bool
	ptr    bool
	bool   bool
}

func typeOf(words []string, ptr bool) (ctype, bool) {
	if ptr {
		return ctype{ptr: true}, true
	}
	ct := ctype{size: 4, signed: true}
	longs := 0
	known := false
	for i, w := range words {
		switch w {
		case "unsigned":
			ct.signed = false
		case "signed", "const", "volatile":
		case "int":
		case "long":
			longs++
		case "short":
			ct.size = 2
		case "char":
			ct.size = 1
		case "bool", "_Bool":
			ct = ctype{size: 1, bool: true}
		case "u8", "__u8", "uint8_t":
			ct = ctype{size: 1}
		case "s8", "__s8", "int8_t":
			ct = ctype{size: 1, signed: true}
		case "u16", "__u16", "uint16_t":
			ct = ctype{size: 2}
		case "s16", "__s16", "int16_t":
			ct = ctype{size: 2, signed: true}
		case "u32", "__u32", "uint32_t":
			ct = ctype{size: 4}
		case "s32", "__s32", "int32_t", "pid_t":
			ct = ctype{size: 4, signed: true}
		case "u64", "__u64", "uint64_t":
			ct = ctype{size: 8}
		case "s64", "__s64", "int64_t", "ktime_t", "loff_t":
			ct = ctype{size: 8, signed: true}
		case "size_t", "uintptr_t", "gfp_t":
			ct = ctype{size: 0}
			if w == "gfp_t" {
				ct.size = 4
			}
		case "ssize_t":
			ct = ctype{size: 0, signed: true}
		case "enum":
			if i+1 < len(words) {
				return ctype{size: 4}, true
			}
			return ct, false
		default:
			return ct, false
		}
		known = true
	}
	if !known {
		return ct, false
	}
	switch {
	case longs == 1:
		ct.size = 0
	case longs >= 2:
		ct.size = 8
	}
	return ct, true
}

// Expression trees.

type node interface {
	eval(c *evalCtx) (val, error)
}

// val is a C value: an integer of size 4 or 8 bytes held in u (sign- or
// zero-extended to 64 bits), or a string.
type val struct {
	u      uint64
	size   int
	signed bool
	isStr  bool
	str    string
	list   []node // a { ... } initializer
}

type evalCtx struct {
	e    *Format
	data []byte
}

func (c *evalCtx) longSize() int {
	if n := c.e.f.KernelLongSize; n == 4 {
		return 4
	}
	return 8
}

// norm truncates v to its size and extends it by its signedness.
func norm(v val) val {
	if v.size == 4 {
		if v.signed {
			v.u = uint64(int64(int32(v.u)))
		} else {
			v.u = uint64(uint32(v.u))
		}
	}
	return v
}

type constNode struct{ v val }

func (n *constNode) eval(*evalCtx) (val, error) { return n.v, nil }

type listNode struct{ items []node }

func (n *listNode) eval(*evalCtx) (val, error) { return val{list: n.items}, nil }

type fieldNode struct{ name string }

func (n *fieldNode) eval(c *evalCtx) (val, error) {
	fl := c.e.Field(n.name)
	if fl == nil {
		return val{}, fmt.Errorf("REC->%s: the event has no such field", n.name)
	}
	if fl.Dynamic || fl.Array > 0 || fl.Size > 8 {
		if strings.Contains(fl.Type, "char") {
			s, err := c.e.String(c.data, fl)
			return val{isStr: true, str: s}, err
		}
		return val{}, fmt.Errorf("REC->%s: an array field as a number", n.name)
	}
	u, err := c.e.Uint(c.data, fl)
	if err != nil {
		return val{}, err
	}
	v := val{u: u, size: 8, signed: fl.Signed}
	if fl.Size < 8 {
		// C's integer promotions: types narrower than int become int.
		v.size = 4
		if fl.Size < 4 {
			v.signed = true
		}
	}
	return v, nil
}

type identNode struct{ name string }

func (n *identNode) eval(*evalCtx) (val, error) {
	if v, ok := enumConstants[n.name]; ok {
		return val{u: v, size: 4, signed: true}, nil
	}
	return val{}, fmt.Errorf("unknown identifier %s", n.name)
}

// enumConstants are the enum values that print fmts of the timer events
// name without the kernel having replaced them by numbers (no
// TRACE_DEFINE_ENUM): include/linux/hrtimer_types.h's enum hrtimer_mode,
// the clock IDs of include/uapi/linux/time.h and the tick dependency bits
// of include/linux/tick.h.
var enumConstants = map[string]uint64{
	"HRTIMER_MODE_ABS": 0x00, "HRTIMER_MODE_REL": 0x01, "HRTIMER_MODE_PINNED": 0x02,
	"HRTIMER_MODE_SOFT": 0x04, "HRTIMER_MODE_HARD": 0x08,
	"HRTIMER_MODE_ABS_PINNED": 0x02, "HRTIMER_MODE_REL_PINNED": 0x03,
	"HRTIMER_MODE_ABS_SOFT": 0x04, "HRTIMER_MODE_REL_SOFT": 0x05,
	"HRTIMER_MODE_ABS_PINNED_SOFT": 0x06, "HRTIMER_MODE_REL_PINNED_SOFT": 0x07,
	"HRTIMER_MODE_ABS_HARD": 0x08, "HRTIMER_MODE_REL_HARD": 0x09,
	"HRTIMER_MODE_ABS_PINNED_HARD": 0x0a, "HRTIMER_MODE_REL_PINNED_HARD": 0x0b,
	"CLOCK_REALTIME": 0, "CLOCK_MONOTONIC": 1, "CLOCK_PROCESS_CPUTIME_ID": 2,
	"CLOCK_THREAD_CPUTIME_ID": 3, "CLOCK_MONOTONIC_RAW": 4, "CLOCK_REALTIME_COARSE": 5,
	"CLOCK_MONOTONIC_COARSE": 6, "CLOCK_BOOTTIME": 7, "CLOCK_REALTIME_ALARM": 8,
	"CLOCK_BOOTTIME_ALARM": 9, "CLOCK_TAI": 11,
	"TICK_DEP_BIT_POSIX_TIMER": 0, "TICK_DEP_BIT_PERF_EVENTS": 1, "TICK_DEP_BIT_SCHED": 2,
	"TICK_DEP_BIT_CLOCK_UNSTABLE": 3, "TICK_DEP_BIT_RCU": 4, "TICK_DEP_BIT_RCU_EXP": 5,
	"TICK_DEP_MASK_NONE": 0, "TICK_DEP_MASK_POSIX_TIMER": 1 << 0, "TICK_DEP_MASK_PERF_EVENTS": 1 << 1,
	"TICK_DEP_MASK_SCHED": 1 << 2, "TICK_DEP_MASK_CLOCK_UNSTABLE": 1 << 3, "TICK_DEP_MASK_RCU": 1 << 4,
	"TICK_DEP_MASK_RCU_EXP": 1 << 5,
	"true":                  1, "false": 0, "NULL": 0,
}

func num(c *evalCtx, n node) (val, error) {
	v, err := n.eval(c)
	if err == nil && (v.isStr || v.list != nil) {
		err = errors.New("a string or list where a number is needed")
	}
	return v, err
}

type castNode struct {
	t ctype
	x node
}

func (n *castNode) eval(c *evalCtx) (val, error) {
	v, err := num(c, n.x)
	if err != nil {
		return v, err
	}
	t := n.t
	size := t.size
	if t.ptr || size == 0 {
		size = c.longSize()
	}
	switch {
	case t.bool:
		b := uint64(0)
		if v.u != 0 {
			b = 1
		}
		return val{u: b, size: 4, signed: true}, nil
	case size == 1:
		u := uint64(uint8(v.u))
		if t.signed {
			u = uint64(int64(int8(v.u)))
		}
		return val{u: u, size: 4, signed: true}, nil
	case size == 2:
		u := uint64(uint16(v.u))
		if t.signed {
			u = uint64(int64(int16(v.u)))
		}
		return val{u: u, size: 4, signed: true}, nil
	}
	return norm(val{u: v.u, size: size, signed: t.signed && !t.ptr}), nil
}

type unNode struct {
	op string
	x  node
}

func (n *unNode) eval(c *evalCtx) (val, error) {
	v, err := num(c, n.x)
	if err != nil {
		return v, err
	}
	switch n.op {
	case "-":
		v.u = -v.u
	case "~":
		v.u = ^v.u
	case "!":
		b := uint64(0)
		if v.u == 0 {
			b = 1
		}
		return val{u: b, size: 4, signed: true}, nil
	}
	return norm(v), nil
}

type binNode struct {
	op   string
	l, r node
}

func truth(b bool) val {
	if b {
		return val{u: 1, size: 4, signed: true}
	}
	return val{size: 4, signed: true}
}

func (n *binNode) eval(c *evalCtx) (val, error) {
	l, err := num(c, n.l)
	if err != nil {
		return l, err
	}
	switch n.op {
	case "&&", "||":
		if (l.u != 0) == (n.op == "||") {
			return truth(n.op == "||"), nil
		}
		r, err := num(c, n.r)
		if err != nil {
			return r, err
		}
		return truth(r.u != 0), nil
	}
	r, err := num(c, n.r)
	if err != nil {
		return r, err
	}
	if n.op == "<<" || n.op == ">>" {
		// The result has the (promoted) left operand's type.
		s := r.u
		bitsz := uint64(l.size * 8)
		if s >= bitsz {
			return val{}, fmt.Errorf("shift by %d of a %d-bit value", int64(s), bitsz)
		}
		if n.op == "<<" {
			l.u <<= s
		} else if l.signed {
			l.u = uint64(int64(l.u) >> s)
		} else {
			l.u >>= s
		}
		return norm(l), nil
	}
	// The usual arithmetic conversions, for operands of 32 and 64 bits.
	t := val{size: max(l.size, r.size)}
	switch {
	case l.size == r.size:
		t.signed = l.signed && r.signed
	case l.size > r.size:
		t.signed = l.signed
	default:
		t.signed = r.signed
	}
	a, b := norm(val{u: l.u, size: t.size, signed: t.signed}).u, norm(val{u: r.u, size: t.size, signed: t.signed}).u
	switch n.op {
	case "+":
		t.u = a + b
	case "-":
		t.u = a - b
	case "*":
		t.u = a * b
	case "/", "%":
		if b == 0 {
			return val{}, errors.New("division by zero")
		}
		switch {
		case t.signed && n.op == "/":
			t.u = uint64(int64(a) / int64(b))
		case t.signed:
			t.u = uint64(int64(a) % int64(b))
		case n.op == "/":
			t.u = a / b
		default:
			t.u = a % b
		}
	case "&":
		t.u = a & b
	case "|":
		t.u = a | b
	case "^":
		t.u = a ^ b
	case "==":
		return truth(a == b), nil
	case "!=":
		return truth(a != b), nil
	case "<", "<=", ">", ">=":
		var lt, eq bool
		if t.signed {
			lt, eq = int64(a) < int64(b), a == b
		} else {
			lt, eq = a < b, a == b
		}
		switch n.op {
		case "<":
			return truth(lt), nil
		case "<=":
			return truth(lt || eq), nil
		case ">":
			return truth(!lt && !eq), nil
		}
		return truth(!lt), nil
	}
	return norm(t), nil
}

type condNode struct{ c, a, b node }

func (n *condNode) eval(c *evalCtx) (val, error) {
	v, err := num(c, n.c)
	if err != nil {
		return v, err
	}
	if v.u != 0 {
		return n.a.eval(c)
	}
	return n.b.eval(c)
}

type callNode struct {
	name string
	args []node
}

func (n *callNode) eval(c *evalCtx) (val, error) {
	switch n.name {
	case "__print_symbolic", "__print_symbolic_u64":
		if len(n.args) < 1 {
			return val{}, fmt.Errorf("%s without a value", n.name)
		}
		v, err := num(c, n.args[0])
		if err != nil {
			return v, err
		}
		for _, a := range n.args[1:] {
			k, name, err := pair(c, a)
			if err != nil {
				return val{}, fmt.Errorf("%s: %w", n.name, err)
			}
			if k == v.u {
				return val{isStr: true, str: name}, nil
			}
		}
		return val{isStr: true, str: "0x" + strconv.FormatUint(unsignedLong(c, v.u), 16)}, nil
	case "__print_flags", "__print_flags_u64":
		if len(n.args) < 2 {
			return val{}, fmt.Errorf("%s without a value and a delimiter", n.name)
		}
		v, err := num(c, n.args[0])
		if err != nil {
			return v, err
		}
		d, err := n.args[1].eval(c)
		if err != nil {
			return d, err
		}
		if !d.isStr {
			return val{}, fmt.Errorf("%s: the delimiter is not a string", n.name)
		}
		// As the kernel's trace_print_flags_seq: each mask fully set
		// prints its name and is cleared; what is left prints in hex.
		flags := unsignedLong(c, v.u)
		var b strings.Builder
		for _, a := range n.args[2:] {
			if flags == 0 {
				break
			}
			mask, name, err := pair(c, a)
			if err != nil {
				return val{}, fmt.Errorf("%s: %w", n.name, err)
			}
			if flags&mask != mask {
				continue
			}
			flags &^= mask
			if b.Len() > 0 {
				b.WriteString(d.str)
			}
			b.WriteString(name)
		}
		if flags != 0 {
			if b.Len() > 0 {
				b.WriteString(d.str)
			}
			b.WriteString("0x" + strconv.FormatUint(flags, 16))
		}
		return val{isStr: true, str: b.String()}, nil
	case "__get_str", "__get_rel_str":
		if len(n.args) != 1 {
			return val{}, fmt.Errorf("%s takes one field", n.name)
		}
		id, ok := n.args[0].(*identNode)
		if !ok {
			return val{}, fmt.Errorf("%s of something other than a field name", n.name)
		}
		fl := c.e.Field(id.name)
		if fl == nil {
			return val{}, fmt.Errorf("%s(%s): the event has no such field", n.name, id.name)
		}
		s, err := c.e.String(c.data, fl)
		return val{isStr: true, str: s}, err
	}
	return val{}, fmt.Errorf("%s() is not supported", n.name)
}

// unsignedLong is v as the kernel's helpers take it: an unsigned long.
func unsignedLong(c *evalCtx, v uint64) uint64 {
	if c.longSize() == 4 {
		return uint64(uint32(v))
	}
	return v
}

// pair evaluates "{ value, "name" }".
func pair(c *evalCtx, n node) (uint64, string, error) {
	l, err := n.eval(c)
	if err != nil {
		return 0, "", err
	}
	if len(l.list) != 2 {
		return 0, "", errors.New("a table entry that is not { value, \"name\" }")
	}
	k, err := num(c, l.list[0])
	if err != nil {
		return 0, "", err
	}
	s, err := l.list[1].eval(c)
	if err != nil {
		return 0, "", err
	}
	if !s.isStr {
		return 0, "", errors.New("a table entry whose name is not a string")
	}
	return k.u, s.str, nil
}

// eval prints the format with its arguments.
func (pf *printFmt) eval(b []byte, c *evalCtx) ([]byte, error) {
	arg := 0
	next := func() (val, error) {
		v, err := pf.args[arg].eval(c)
		arg++
		return v, err
	}
	for _, part := range pf.parts {
		cv := part.conv
		if cv == nil {
			b = append(b, part.lit...)
			continue
		}
		width, prec := cv.width, cv.prec
		if width == -2 {
			v, err := next()
			if err != nil {
				return b, err
			}
			// A negative width left-justifies, as in C; widths are
			// capped (the kernel's vsnprintf refuses ones above 2^23).
			width = min(int(int32(v.u)), maxWidth)
			if width < 0 {
				c := *cv
				c.flags += "-"
				cv = &c
				width = min(-width, maxWidth)
			}
		}
		if prec == -2 {
			v, err := next()
			if err != nil {
				return b, err
			}
			prec = min(max(int(int32(v.u)), 0), maxWidth)
		}
		v, err := next()
		if err != nil {
			return b, err
		}
		if b, err = c.conv(b, cv, width, prec, v); err != nil {
			return b, err
		}
	}
	return b, nil
}

// conv prints one conversion of v.
func (c *evalCtx) conv(b []byte, cv *conversion, width, prec int, v val) ([]byte, error) {
	var s string
	switch cv.verb {
	case 's':
		if !v.isStr {
			return b, errors.New("%s of a number")
		}
		s = v.str
		if prec >= 0 && prec < len(s) {
			s = s[:prec]
		}
		return pad(b, s, width, cv.flags, false), nil
	case 'p':
		if v.isStr || v.list != nil {
			return b, errors.New("%p of a string")
		}
		return c.pointer(b, cv, width, unsignedLong(c, v.u)), nil
	}
	if v.isStr || v.list != nil {
		return b, fmt.Errorf("%%%c of a string", cv.verb)
	}
	// The argument as the conversion's C type.
	size := 4
	switch cv.length {
	case "hh":
		size = 1
	case "h":
		size = 2
	case "l", "z", "t":
		size = c.longSize()
	case "ll", "L", "q", "j":
		size = 8
	}
	u := v.u
	switch size {
	case 1:
		u = uint64(uint8(u))
	case 2:
		u = uint64(uint16(u))
	case 4:
		u = uint64(uint32(u))
	}
	switch cv.verb {
	case 'c':
		return pad(b, string(rune(byte(u))), width, cv.flags, false), nil
	case 'd', 'i':
		var x int64
		switch size {
		case 1:
			x = int64(int8(u))
		case 2:
			x = int64(int16(u))
		case 4:
			x = int64(int32(u))
		default:
			x = int64(u)
		}
		if plain(cv, width, prec) {
			return strconv.AppendInt(b, x, 10), nil
		}
		return append(b, fmt.Sprintf(goFormat(cv, width, prec, 'd'), x)...), nil
	}
	if plain(cv, width, prec) {
		switch cv.verb {
		case 'u':
			return strconv.AppendUint(b, u, 10), nil
		case 'x':
			return strconv.AppendUint(b, u, 16), nil
		}
	}
	verb := rune(cv.verb)
	if verb == 'u' {
		verb = 'd'
	}
	if u == 0 && strings.Contains(cv.flags, "#") {
		// C prints no "0x" prefix for zero.
		cv2 := *cv
		cv2.flags = strings.ReplaceAll(cv.flags, "#", "")
		return append(b, fmt.Sprintf(goFormat(&cv2, width, prec, verb), u)...), nil
	}
	return append(b, fmt.Sprintf(goFormat(cv, width, prec, verb), u)...), nil
}

// plain reports a conversion that prints as strconv does: no width, no
// precision, no flag (a "0" flag without a width, as in the kernel's
// "%0x", pads nothing).
func plain(cv *conversion, width, prec int) bool {
	return width < 0 && prec < 0 && (cv.flags == "" || cv.flags == "0")
}

func goFormat(cv *conversion, width, prec int, verb rune) string {
	f := "%" + cv.flags
	if width >= 0 {
		f += strconv.Itoa(width)
	}
	if prec >= 0 {
		f += "." + strconv.Itoa(prec)
	}
	return f + string(verb)
}

func pad(b []byte, s string, width int, flags string, zero bool) []byte {
	n := width - len(s)
	left := strings.Contains(flags, "-")
	if left {
		b = append(b, s...)
	}
	for ; n > 0; n-- {
		b = append(b, ' ')
	}
	if !left {
		b = append(b, s...)
	}
	return b
}

// pointer prints %p and its kernel extensions: %ps/%pf the symbol ("name",
// "name [module]"), %pS/%pF/%pB with its offset ("name+0x1c/0x90"), plain
// %p (and any other extension) the address in as many hex digits as a
// pointer has.
func (c *evalCtx) pointer(b []byte, cv *conversion, width int, addr uint64) []byte {
	ext := ""
	if cv.ext != "" {
		ext = cv.ext[:1]
	}
	switch ext {
	case "s", "f", "S", "F", "B":
		name, mod, off, ok := c.e.f.syms.lookup(addr)
		if !ok {
			return pad(b, "0x"+strconv.FormatUint(addr, 16), width, cv.flags, false)
		}
		s := name
		if ext != "s" && ext != "f" {
			size := c.e.f.syms.size(addr)
			s += "+0x" + strconv.FormatUint(off, 16)
			if size > 0 {
				s += "/0x" + strconv.FormatUint(size, 16)
			}
		}
		if mod != "" {
			s += " [" + mod + "]"
		}
		return pad(b, s, width, cv.flags, false)
	}
	var tmp [16]byte
	h := strconv.AppendUint(tmp[:0], addr, 16)
	for i := len(h); i < 2*c.longSize(); i++ {
		b = append(b, '0')
	}
	return append(b, h...)
}
