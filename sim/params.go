package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DistKind is the shape of a cost distribution.
type DistKind uint8

const (
	// Const is a fixed value.
	Const DistKind = iota
	// Uniform is uniform over [A, B].
	Uniform
	// LogNormal has median A and shape Sigma: exp(N(ln A, Sigma²)),
	// capped at Max when Max > 0. Kernel code paths have this kind of
	// heavy right tail (cache misses, contention).
	LogNormal
)

// Dist is a distribution of durations in nanoseconds. Its zero value is
// the constant 0.
type Dist struct {
	Kind  DistKind
	A, B  float64 // Const: A; Uniform: [A, B]; LogNormal: median A
	Sigma float64 // LogNormal only
	Max   float64 // LogNormal cap (0: none)
}

// C returns the constant d nanoseconds.
func C(d time.Duration) Dist { return Dist{Kind: Const, A: float64(d)} }

// U returns the uniform distribution over [a, b].
func U(a, b time.Duration) Dist { return Dist{Kind: Uniform, A: float64(a), B: float64(b)} }

// LN returns the lognormal distribution with the given median and sigma.
func LN(median time.Duration, sigma float64) Dist {
	return Dist{Kind: LogNormal, A: float64(median), Sigma: sigma}
}

// Mean returns the distribution's mean (ignoring a lognormal's cap).
func (d Dist) Mean() float64 {
	switch d.Kind {
	case Uniform:
		return (d.A + d.B) / 2
	case LogNormal:
		return d.A * math.Exp(d.Sigma*d.Sigma/2)
	}
	return d.A
}

// String formats d as ParseDist reads it: "1.5µs", "uniform(1µs,3µs)",
// "lognormal(1.2µs,0.25)" or "lognormal(1.2µs,0.25,max=5µs)".
func (d Dist) String() string {
	switch d.Kind {
	case Uniform:
		return "uniform(" + dur(d.A) + "," + dur(d.B) + ")"
	case LogNormal:
		s := "lognormal(" + dur(d.A) + "," + strconv.FormatFloat(d.Sigma, 'g', -1, 64)
		if d.Max > 0 {
			s += ",max=" + dur(d.Max)
		}
		return s + ")"
	}
	return dur(d.A)
}

func dur(ns float64) string { return time.Duration(ns).String() }

// ParseDist reads a distribution: a duration ("1.5us", "2ms"),
// "uniform(MIN,MAX)" or "lognormal(MEDIAN,SIGMA[,max=CAP])".
func ParseDist(s string) (Dist, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		v, err := parseDur(s)
		if err != nil {
			return Dist{}, err
		}
		return Dist{Kind: Const, A: v}, nil
	}
	if !strings.HasSuffix(s, ")") {
		return Dist{}, fmt.Errorf("bad distribution %q: missing ')'", s)
	}
	name, args := s[:open], strings.Split(s[open+1:len(s)-1], ",")
	switch name {
	case "uniform":
		if len(args) != 2 {
			return Dist{}, fmt.Errorf("bad distribution %q: uniform(MIN,MAX) takes two durations", s)
		}
		a, err := parseDur(args[0])
		if err != nil {
			return Dist{}, err
		}
		b, err := parseDur(args[1])
		if err != nil {
			return Dist{}, err
		}
		if b < a {
			return Dist{}, fmt.Errorf("bad distribution %q: MAX below MIN", s)
		}
		return Dist{Kind: Uniform, A: a, B: b}, nil
	case "lognormal":
		if len(args) < 2 || len(args) > 3 {
			return Dist{}, fmt.Errorf("bad distribution %q: lognormal(MEDIAN,SIGMA[,max=CAP])", s)
		}
		a, err := parseDur(args[0])
		if err != nil {
			return Dist{}, err
		}
		sig, err := strconv.ParseFloat(strings.TrimSpace(args[1]), 64)
		if err != nil || sig < 0 || sig > 5 {
			return Dist{}, fmt.Errorf("bad distribution %q: sigma must be a number in 0..5", s)
		}
		d := Dist{Kind: LogNormal, A: a, Sigma: sig}
		if len(args) == 3 {
			v, ok := strings.CutPrefix(strings.TrimSpace(args[2]), "max=")
			if !ok {
				return Dist{}, fmt.Errorf("bad distribution %q: third argument must be max=DURATION", s)
			}
			if d.Max, err = parseDur(v); err != nil {
				return Dist{}, err
			}
		}
		return d, nil
	}
	return Dist{}, fmt.Errorf("bad distribution %q: want a duration, uniform(...) or lognormal(...)", s)
}

func parseDur(s string) (float64, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 1.5us, 2ms)", strings.TrimSpace(s))
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return float64(d), nil
}

// Param is one named, documented input of a run: a cost, a rate, a
// probability. Params are what --explain prints and --set overrides.
type Param struct {
	Name string
	Doc  string
	ptr  any
}

// Value formats the current value.
func (p *Param) Value() string {
	switch v := p.ptr.(type) {
	case *int64:
		return time.Duration(*v).String()
	case *Dist:
		return v.String()
	case *float64:
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case *int:
		return strconv.Itoa(*v)
	case *bool:
		return strconv.FormatBool(*v)
	}
	return "?"
}

// Params is an ordered set of parameters.
type Params struct {
	list []*Param
}

func (ps *Params) add(name, doc string, ptr any) {
	for _, p := range ps.list {
		if p.Name == name {
			panic("sim: parameter registered twice: " + name)
		}
	}
	ps.list = append(ps.list, &Param{Name: name, Doc: doc, ptr: ptr})
}

// Duration registers a duration parameter stored in ns.
func (ps *Params) Duration(name, doc string, v *int64) { ps.add(name, doc, v) }

// Dist registers a distribution parameter.
func (ps *Params) Dist(name, doc string, v *Dist) { ps.add(name, doc, v) }

// Float registers a number.
func (ps *Params) Float(name, doc string, v *float64) { ps.add(name, doc, v) }

// Int registers an integer.
func (ps *Params) Int(name, doc string, v *int) { ps.add(name, doc, v) }

// Bool registers a switch.
func (ps *Params) Bool(name, doc string, v *bool) { ps.add(name, doc, v) }

// List returns the parameters in registration order.
func (ps *Params) List() []*Param { return ps.list }

// Set parses value into the parameter called name.
func (ps *Params) Set(name, value string) error {
	for _, p := range ps.list {
		if p.Name != name {
			continue
		}
		switch v := p.ptr.(type) {
		case *int64:
			d, err := parseDur(value)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			*v = int64(d)
		case *Dist:
			d, err := ParseDist(value)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			*v = d
		case *float64:
			f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return fmt.Errorf("%s: bad number %q (want a non-negative number)", name, value)
			}
			*v = f
		case *int:
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return fmt.Errorf("%s: bad count %q (want a non-negative integer)", name, value)
			}
			*v = n
		case *bool:
			b, err := strconv.ParseBool(strings.TrimSpace(value))
			if err != nil {
				return fmt.Errorf("%s: bad switch %q (want true or false)", name, value)
			}
			*v = b
		}
		return nil
	}
	names := make([]string, len(ps.list))
	for i, p := range ps.list {
		names[i] = p.Name
	}
	sort.Strings(names)
	return fmt.Errorf("unknown parameter %q (see --explain for the %d parameters)", name, len(names))
}

// SetAssignment applies "name=value".
func (ps *Params) SetAssignment(a string) error {
	name, value, ok := strings.Cut(a, "=")
	if !ok {
		return fmt.Errorf("bad setting %q: want NAME=VALUE", a)
	}
	return ps.Set(strings.TrimSpace(name), strings.TrimSpace(value))
}

// ReadFile applies a parameter file: one "name = value" per line, blank
// lines and lines starting with # ignored.
func (ps *Params) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ps.Read(f, path)
}

// Read applies parameter lines from r; name is used in errors.
func (ps *Params) Read(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if err := ps.SetAssignment(s); err != nil {
			return fmt.Errorf("%s:%d: %v", name, line, err)
		}
	}
	return sc.Err()
}

// Explain prints every parameter with its value and what it stands for,
// in the parameter-file format, so the output can be edited and read back
// with --params.
func (ps *Params) Explain(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, p := range ps.list {
		for _, l := range strings.Split(p.Doc, "\n") {
			fmt.Fprintf(bw, "# %s\n", l)
		}
		fmt.Fprintf(bw, "%s = %s\n\n", p.Name, p.Value())
	}
	return bw.Flush()
}
