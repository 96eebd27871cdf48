package host

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

// quoteArg wraps s in double quotes if it holds a blank. It cannot hold a
// quote: splitting removed them, and the kernel has no escapes.
func quoteArg(s string) string {
	if strings.ContainsAny(s, " \t\n") {
		return `"` + s + `"`
	}
	return s
}

// maxCmdline bounds the command line we accept: the kernel's
// COMMAND_LINE_SIZE is 2048 to 4096 on the common architectures, a few
// more allow 64 KiB.
const maxCmdline = 64 << 10

// ParseCmdline splits a kernel command line. The only error is a line
// that cannot be split: one too long to be a command line, with a NUL byte,
// or with an unterminated double quote (the kernel would take the rest of
// the line as one value; we refuse it instead of guessing).
func ParseCmdline(s string) (Cmdline, error) {
	c := Cmdline{Raw: strings.TrimRight(s, "\n")}
	if len(s) > maxCmdline {
		return Cmdline{}, fmt.Errorf("command line of %d bytes: longer than any kernel accepts", len(s))
	}
	if strings.IndexByte(s, 0) >= 0 {
		return Cmdline{}, fmt.Errorf("command line holds a NUL byte")
	}
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
		if paramEq(p.Name, name) {
			out = append(out, p)
		}
	}
	return out
}

func paramEq(a, b string) bool {
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
// placement; the "# machine:" line keeps these and drops the rest (root=,
// console=, ...).
var isolationParams = []string{"isolcpus", "nohz_full", "nohz", "rcu_nocbs", "irqaffinity", "maxcpus", "nr_cpus"}

// Isolation returns the isolation parameters as a command line of their
// own, in order.
func (c *Cmdline) Isolation() string {
	var parts []string
	for _, p := range c.Params {
		for _, n := range isolationParams {
			if paramEq(p.Name, n) {
				parts = append(parts, p.String())
				break
			}
		}
	}
	return strings.Join(parts, " ")
}

// IsolcpusFlags splits an isolcpus= value into its flags and CPU list as
// housekeeping_isolcpus_setup does: a run of "word," prefixes made of
// letters (and underscores, which only unknown flags may have), then the
// list. Known flags are nohz, domain and managed_irq; unknown ones are
// skipped by the kernel ("isolcpus: Skipped unknown flag"). invalid is set
// when a flag holds another character: the kernel then ignores the whole
// parameter ("isolcpus: Invalid flag").
func IsolcpusFlags(v string) (flags, unknown []string, list string, invalid bool) {
	s := v
	for s != "" && isAlpha(s[0]) {
		// A known flag must end in a comma ("isolcpus=domain" is the
		// unknown flag "domain" and an empty list, as the kernel reads it).
		word, rest, comma := strings.Cut(s, ",")
		if comma && (word == "nohz" || word == "domain" || word == "managed_irq") {
			flags = append(flags, word)
			s = rest
			continue
		}
		for i := 0; i < len(word); i++ {
			if !isAlpha(word[i]) && word[i] != '_' {
				return flags, unknown, "", true
			}
		}
		unknown = append(unknown, word)
		s = rest
	}
	return flags, unknown, s, false
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
