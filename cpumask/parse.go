package cpumask

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseError describes a cpulist that could not be parsed. Token is the
// comma-separated region at fault, quoted in Error.
type ParseError struct {
	List   string // the whole input
	Token  string // the region at fault ("" for an empty region)
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("cpulist %q: bad region %q: %s", e.List, e.Token, e.Reason)
}

// Parse reads a cpulist in the kernel's syntax (bitmap_parselist), for CPUs
// numbered below MaxCPUs:
//
//	""            the empty set
//	"5"           one CPU
//	"0-3,8,10-11" ranges and single CPUs, in any order, overlaps allowed
//	"0-31:2/4"    a range with a stride: of every group of 4 starting at 0,
//	              the first 2 (0,1,4,5,...,28,29)
//
// One trailing newline, as sysfs files end, is accepted. Unlike the kernel,
// which silently skips empty regions and blanks ("1,,2", "1, 2"), Parse
// rejects them: a typo in an isolation list should be an error, not a
// different set. Every error is a *ParseError naming the bad region.
func Parse(s string) (Mask, error) { return parse(s, MaxCPUs, false) }

// ParseFor is Parse for a machine of n CPUs: every CPU must be below n, and
// the kernel's keywords are accepted: "N" for the last CPU (n-1) wherever a
// number may stand, and "all" for 0-(n-1), also with a stride ("all:1/2").
func ParseFor(s string, n int) (Mask, error) {
	if n < 1 || n > MaxCPUs {
		return Mask{}, &ParseError{List: s, Reason: fmt.Sprintf("machine size %d outside 1..%d", n, MaxCPUs)}
	}
	return parse(s, n, true)
}

// MustParse is Parse for constants; it panics on error.
func MustParse(s string) Mask {
	m, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return m
}

func parse(s string, limit int, keywords bool) (Mask, error) {
	var m Mask
	body := strings.TrimSuffix(s, "\n")
	if body == "" {
		return m, nil
	}
	for tok := range strings.SplitSeq(body, ",") {
		if err := parseRegion(&m, tok, limit, keywords); err != "" {
			return Mask{}, &ParseError{List: s, Token: tok, Reason: err}
		}
	}
	return m, nil
}

// parseRegion adds one region "a", "a-b" or "a-b:used/group" to m; it
// returns a reason on error.
func parseRegion(m *Mask, tok string, limit int, keywords bool) string {
	if tok == "" {
		return "empty region"
	}
	rng, stride, hasStride := strings.Cut(tok, ":")
	var start, end int
	if keywords && rng == "all" {
		start, end = 0, limit-1
	} else {
		lo, hi, isRange := strings.Cut(rng, "-")
		var err string
		if start, err = parseCPU(lo, limit, keywords); err != "" {
			return err
		}
		end = start
		if isRange {
			if end, err = parseCPU(hi, limit, keywords); err != "" {
				return err
			}
			if end < start {
				return fmt.Sprintf("range end %d is below its start %d", end, start)
			}
		}
	}
	used, group := 1, 1
	if hasStride {
		u, g, ok := strings.Cut(stride, "/")
		if !ok {
			return "stride " + strconv.Quote(stride) + " is not USED/GROUP"
		}
		var err string
		if used, err = parseNum(u); err != "" {
			return "stride: " + err
		}
		if group, err = parseNum(g); err != "" {
			return "stride: " + err
		}
		if group == 0 {
			return "stride group size is 0"
		}
		if used > group {
			return fmt.Sprintf("stride uses %d of every %d", used, group)
		}
	}
	for c := start; c <= end; c++ {
		if (c-start)%group < used {
			m.Set(c)
		}
	}
	return ""
}

func parseCPU(s string, limit int, keywords bool) (int, string) {
	if keywords && s == "N" {
		return limit - 1, ""
	}
	n, err := parseNum(s)
	if err != "" {
		return 0, err
	}
	if n >= limit {
		return 0, fmt.Sprintf("CPU %d beyond the last CPU %d", n, limit-1)
	}
	return n, ""
}

// parseNum reads a decimal number of plain digits: no sign, no blanks, no
// base prefix.
func parseNum(s string) (int, string) {
	if s == "" {
		return 0, "missing number"
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, strconv.Quote(s) + " is not a number"
		}
		n = n*10 + int(r-'0')
		if n > 1<<30 {
			return 0, strconv.Quote(s) + " is too large"
		}
	}
	return n, ""
}
