package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// flagSet is one command's flags, help text and operands. Every command
// parses its arguments with one, so that all of them behave alike:
//
//  1. -h, --help, or "help" as the only operand: the help (the usage text,
//     then the flags) on standard output, status 0.
//  2. Flags may come before, between and after the operands
//     ("tmigr replay a.txt --json"); "--" ends the flags, so that an
//     operand may start with '-'.
//  3. An unknown flag, a bad flag value, a missing or extra operand: one
//     line naming the problem and a hint on standard error, status 2. With
//     no argument at all a command that needs operands prints its whole
//     usage on standard error instead, status 2.
//  4. "tmigr completion" and "tmigr help" learn the flags, their kinds of
//     values and the operands from the flagSet the command builds (see
//     describer), so completion cannot drift from the parser.
//
// A command adopts it in three lines:
//
//	fs := newFlagSet("tmigr lab record", labRecordUsage, stdout, stderr)
//	... fs.IntVar(...), fs.String(...) as with a flag.FlagSet ...
//	if rc, ok := fs.parse(args); !ok {
//		return rc
//	}
//
// and, where it helps completion, says what its values are: fs.files("o"),
// fs.dirs("cache"), fs.words("kernel", "generic", "rt"), and its operands
// with fs.operands.
type flagSet struct {
	*flag.FlagSet
	path           string // "tmigr sim"
	usage          string // printed by -h before the flags
	stdout, stderr io.Writer

	ops    operandSpec
	values map[string]completion // by flag name
	args   []string              // the operands, once parsed
}

// operandSpec says what operands a command takes.
type operandSpec struct {
	name     string // "FILE", "NAME": for the messages
	min, max int    // max < 0: no limit
	complete completion
}

// completion is what a flag's value or an operand completes to.
type completion struct {
	kind  completionKind
	words []string // for completeWords
}

type completionKind uint8

const (
	completeNothing completionKind = iota // any text: no suggestion
	completeFile
	completeDir
	completeWords
)

func newFlagSet(path, usage string, stdout, stderr io.Writer) *flagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse prints what the flag package would
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, path: path, usage: usage, stdout: stdout, stderr: stderr, values: map[string]completion{}}
}

// operands sets the operands the command takes: between min and max (max
// < 0: any number) of what name says.
func (f *flagSet) operands(name string, min, max int, c completion) {
	f.ops = operandSpec{name: name, min: min, max: max, complete: c}
}

// files marks flags whose values are file names, dirs directory names.
func (f *flagSet) files(names ...string) {
	for _, n := range names {
		f.values[n] = completion{kind: completeFile}
	}
}

func (f *flagSet) dirs(names ...string) {
	for _, n := range names {
		f.values[n] = completion{kind: completeDir}
	}
}

// words marks a flag whose value is one of words.
func (f *flagSet) words(name string, words ...string) {
	f.values[name] = completion{kind: completeWords, words: words}
}

// parse parses args. When the command must stop (help, bad usage, or a
// describer asking what the command is) it returns the exit status and
// false.
func (f *flagSet) parse(args []string) (int, bool) {
	if d, ok := f.stdout.(*describer); ok {
		d.flags = f
		return 0, false
	}
	if len(args) == 0 && f.ops.min > 0 {
		f.printHelp(f.stderr)
		return 2, false
	}
	flags, ops := f.split(args)
	if err := f.FlagSet.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.printHelp(f.stdout)
			return 0, false
		}
		return f.usageError(err.Error()), false
	}
	if len(ops) == 1 && ops[0] == "help" && f.NFlag() == 0 && !f.operandHelp(ops) {
		f.printHelp(f.stdout)
		return 0, false
	}
	switch {
	case len(ops) < f.ops.min:
		return f.usageError("missing " + f.ops.name), false
	case f.ops.max >= 0 && len(ops) > f.ops.max:
		return f.usageError(fmt.Sprintf("unexpected argument %q", ops[f.ops.max])), false
	}
	f.args = ops
	return 0, true
}

// operandHelp reports whether "help" is a valid operand of the command (a
// word it completes to), which it then is rather than a request for help.
func (f *flagSet) operandHelp(ops []string) bool {
	for _, w := range f.ops.complete.words {
		if w == ops[0] {
			return true
		}
	}
	return false
}

// split separates the flags (with their values) from the operands, so
// that flags may follow operands. A flag's value is the next argument
// unless the flag is boolean or written -name=value; "--" ends the flags.
func (f *flagSet) split(args []string) (flags, ops []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(ops, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			ops = append(ops, a) // "-" is an operand: standard input
			continue
		}
		flags = append(flags, a)
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if fl := f.Lookup(name); fl != nil && !hasValue && !isBoolFlag(fl) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, ops
}

func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Args, NArg and Arg are the operands (the flag package's would be empty:
// parse hands it the flags alone).
func (f *flagSet) Args() []string   { return f.args }
func (f *flagSet) NArg() int        { return len(f.args) }
func (f *flagSet) Arg(i int) string { return f.args[i] }

// isSet reports whether the flag was given on the command line (as opposed
// to holding its default).
func (f *flagSet) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// printHelp prints the usage text and the flags.
func (f *flagSet) printHelp(w io.Writer) {
	io.WriteString(w, f.usage)
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// usageError prints a problem with the command line as one line and the
// hint, and returns status 2.
func (f *flagSet) usageError(msg string) int {
	fmt.Fprintf(f.stderr, "%s: %s\nRun '%s -h' for help.\n", f.path, msg, f.path)
	return 2
}

// fail prints err as the command's one-line error and returns status 2
// (bad input); failf formats it.
func (f *flagSet) fail(err error) int {
	fmt.Fprintf(f.stderr, "%s: %v\n", f.path, err)
	return 2
}

func (f *flagSet) failf(format string, args ...any) int {
	return f.fail(fmt.Errorf(format, args...))
}

// ───────────────────────────────────────────── describing commands

// describer, passed to a command as its standard output, asks it what it
// is instead of running it: a flagSet's parse records itself in flags, a
// commandSet's run records itself in set, and both return at once. A
// command that does not use a flagSet yet is asked with "-h", and its help
// (on help) is read for the flags the flag package prints.
type describer struct {
	flags *flagSet
	set   *commandSet
	help  bytes.Buffer
}

func (*describer) Write(p []byte) (int, error) { return len(p), nil }

// describe asks the command run what it is. Every command must reach its
// flagSet's parse before it does anything else.
func describe(run func([]string, io.Writer, io.Writer) int) *describer {
	d := &describer{}
	run([]string{"-h"}, d, &d.help)
	return d
}

// flagInfo is one flag as completion sees it.
type flagInfo struct {
	name     string
	usage    string // the first line of its usage
	value    bool   // takes a value
	complete completion
}

// flagInfos lists the flags d describes, by name.
func (d *describer) flagInfos() []flagInfo {
	var out []flagInfo
	if f := d.flags; f != nil {
		f.VisitAll(func(fl *flag.Flag) {
			usage, _, _ := strings.Cut(fl.Usage, "\n")
			out = append(out, flagInfo{name: fl.Name, usage: usage, value: !isBoolFlag(fl), complete: f.values[fl.Name]})
		})
		return out
	}
	// The flag package's PrintDefaults: "  -name type" (a value) or
	// "  -name" (a boolean), then the usage, indented.
	lines := strings.Split(d.help.String(), "\n")
	for i, l := range lines {
		m := defaultsLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		fi := flagInfo{name: m[1], value: strings.TrimSpace(m[2]) != ""}
		if m[3] != "" {
			fi.usage = strings.TrimSpace(m[3])
		} else if i+1 < len(lines) {
			fi.usage = strings.TrimSpace(lines[i+1])
		}
		out = append(out, fi)
	}
	return out
}

var defaultsLine = regexp.MustCompile(`^  -([A-Za-z0-9][-A-Za-z0-9_.]*)( [^\t]*)?(?:\t(.*))?$`)
