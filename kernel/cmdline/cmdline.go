// Package cmdline reads a Linux kernel command line: how the kernel splits
// it into parameters (next_arg), how it matches their names (parameq), how
// isolcpus= reads its flags, and the CPU isolation the boot-time
// parameters set up (kernel/sched/isolation.c). It is the one reader of
// the command line for every driver: the host inspection reads
// /proc/cmdline with it, a recording's "# machine:" line keeps its
// isolation part, and the replay, the explanation and the lab derive the
// isolated CPUs from it.
package cmdline

import (
	"fmt"
	"strings"
)

// Cmdline is a kernel command line (/proc/cmdline) split as the kernel's
// next_arg splits it: parameters at blanks outside double quotes, quotes
// removed, the kernel's part ending at a lone "--" (what follows goes to
// init).
type Cmdline struct {
	Raw    string
	Params []Param // the kernel's parameters, in order
	Init   []string
}

// Param is one kernel parameter, "name=value" or a bare "name".
type Param struct {
	Name     string
	Value    string
	HasValue bool
}

func (p Param) String() string {
	s := quoteArg(p.Name)
	if p.HasValue {
		s += "=" + quoteArg(p.Value)
	}
	return s
}

// Is says whether the parameter is name, matched as the kernel's parameq
// matches: '-' and '_' alike.
func (p Param) Is(name string) bool { return NameEq(p.Name, name) }

// quoteArg wraps s in double quotes if it holds a blank. It cannot hold a
// quote: splitting removed them, and the kernel has no escapes.
func quoteArg(s string) string {
	if strings.ContainsAny(s, " \t\n") {
		return `"` + s + `"`
	}
	return s
}

// MaxLen bounds the command line Parse accepts: the kernel's
// COMMAND_LINE_SIZE is 2048 to 4096 on the common architectures, a few
// more allow 64 KiB.
const MaxLen = 64 << 10

// Parse splits a kernel command line. The only error is a line that cannot
// be split: one too long to be a command line, with a NUL byte, or with an
// unterminated double quote (the kernel would take the rest of the line as
// one value; we refuse it instead of guessing). The error names the
// parameter at fault.
func Parse(s string) (Cmdline, error) {
	if len(s) > MaxLen {
		return Cmdline{}, fmt.Errorf("command line of %d bytes: longer than any kernel accepts (%d)", len(s), MaxLen)
	}
	c := Cmdline{Raw: strings.TrimRight(s, "\n")}
	rest := c.Raw
	kernelPart := true
	for {
		rest = strings.TrimLeft(rest, " \t\n")
		if rest == "" {
			return c, nil
		}
		var b strings.Builder
		inQuote := false
		i := 0
		for ; i < len(rest); i++ {
			ch := rest[i]
			if ch == '"' {
				inQuote = !inQuote
				continue
			}
			if !inQuote && (ch == ' ' || ch == '\t' || ch == '\n') {
				break
			}
			b.WriteByte(ch)
		}
		if inQuote {
			return Cmdline{}, fmt.Errorf("command line: unterminated quote in %q", clip(rest))
		}
		tok := b.String()
		if strings.IndexByte(tok, 0) >= 0 {
			return Cmdline{}, fmt.Errorf("command line: a NUL byte in %q", clip(rest[:i]))
		}
		rest = rest[i:]
		if tok == "" {
			continue // "" alone: nothing the kernel acts on
		}
		if !kernelPart {
			c.Init = append(c.Init, tok)
			continue
		}
		if tok == "--" {
			kernelPart = false
			continue
		}
		name, value, has := strings.Cut(tok, "=")
		c.Params = append(c.Params, Param{Name: name, Value: value, HasValue: has})
	}
}

// Get returns the parameters of the given name, matched as the kernel's
// parameq matches ('-' and '_' alike), in command-line order.
func (c *Cmdline) Get(name string) []Param {
	var out []Param
	for _, p := range c.Params {
		if p.Is(name) {
			out = append(out, p)
		}
	}
	return out
}

// NameEq compares two parameter names as the kernel's parameq does: '-'
// and '_' alike.
func NameEq(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == '-' {
			x = '_'
		}
		if y == '-' {
			y = '_'
		}
		if x != y {
			return false
		}
	}
	return true
}

// isolationParams are the parameters that shape CPU isolation and timer
// placement; a recording's "# machine:" line keeps these and drops the
// rest (root=, console=, ...).
var isolationParams = []string{"isolcpus", "nohz_full", "nohz", "rcu_nocbs", "irqaffinity", "maxcpus", "nr_cpus"}

// Isolation returns the isolation parameters as a command line of their
// own, in order.
func (c *Cmdline) Isolation() string {
	var parts []string
	for _, p := range c.Params {
		for _, n := range isolationParams {
			if p.Is(n) {
				parts = append(parts, p.String())
				break
			}
		}
	}
	return strings.Join(parts, " ")
}

// Isolcpus is an isolcpus= value read as housekeeping_isolcpus_setup reads
// it: a run of "word," prefixes made of letters (and underscores, which
// only unknown flags may have), then the CPU list.
type Isolcpus struct {
	// Flags are the known flags (nohz, domain, managed_irq), in order.
	// Each must end in a comma: "isolcpus=domain" is the unknown flag
	// "domain" and an empty list, as the kernel reads it.
	Flags []string
	// Unknown are the flags the kernel skips ("isolcpus: Skipped unknown
	// flag").
	Unknown []string
	// Invalid is the first flag with a character other than a letter or
	// an underscore: the kernel then ignores the whole parameter
	// ("isolcpus: Invalid flag"). "" when there is none.
	Invalid string
	// List is the CPU list after the flags ("" when Invalid is set).
	List string
}

// ParseIsolcpus reads the value of an isolcpus= parameter.
func ParseIsolcpus(v string) Isolcpus {
	var r Isolcpus
	s := v
	for s != "" && isAlpha(s[0]) {
		word, rest, comma := strings.Cut(s, ",")
		if comma && (word == "nohz" || word == "domain" || word == "managed_irq") {
			r.Flags = append(r.Flags, word)
			s = rest
			continue
		}
		for i := 0; i < len(word); i++ {
			if !isAlpha(word[i]) && word[i] != '_' {
				r.Invalid = word
				return r
			}
		}
		r.Unknown = append(r.Unknown, word)
		s = rest
	}
	r.List = s
	return r
}

// Has says whether the known flag f was given.
func (v Isolcpus) Has(f string) bool {
	for _, x := range v.Flags {
		if x == f {
			return true
		}
	}
	return false
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
