// Command tmigr runs Linux's timer-migration model: simulations of machines
// of any shape, replays of real kernel traces through the model, and live
// experiments with the runtime on the machine it runs on.
//
// Usage:
//
//	tmigr <command> [flags] [args]
//	tmigr help <command>
//	tmigr version
//	tmigr completion bash|zsh|fish
//
// Each command lives in a file of its own and registers itself in init.
// Commands are thin: they parse flags with a flagSet (flags.go) and call
// the packages that hold the logic. A group of subcommands ("tmigr lab",
// "tmigr live") is a commandSet of its own.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand. run returns the process exit status: 0 on
// success, 1 when the command ran but found a problem (a mismatch, a failed
// check) or could not write an output after the work, 2 for bad usage or
// bad input found before the work (output paths included), 130 when
// interrupted; docs/commands.md's table is the user's copy.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commandSet is a table of commands that register themselves from the init
// of their own files, and dispatches on the first argument: tmigr's
// commands, and the subcommands of "tmigr lab" and "tmigr live".
//
// Help (-h, --help, help) goes to standard output with status 0; with no
// argument at all the usage goes to standard error with status 2, as an
// unknown name's one-line error does. "help NAME..." is NAME's help.
type commandSet struct {
	path  string // "tmigr", "tmigr lab"
	noun  string // "command", "subcommand"
	usage string // the usage line's arguments after the noun
	doc   string // optional paragraph printed under the usage line
	more  string // the closing hint
	table map[string]command
}

var commands = &commandSet{
	path: "tmigr", noun: "command", usage: "[flags] [args]",
	more: "Run 'tmigr help <command>' or 'tmigr <command> -h' for a command's flags,\n" +
		"'tmigr version' for the build, 'tmigr completion bash|zsh|fish' for shell completion.",
	table: map[string]command{},
}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	commands.register(name, summary, run)
}

func (s *commandSet) register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	if _, dup := s.table[name]; dup {
		panic(s.path + ": " + s.noun + " registered twice: " + name)
	}
	s.table[name] = command{summary, run}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		return runVersion(args[1:], stdout, stderr)
	}
	return commands.run(args, stdout, stderr)
}

func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

func (s *commandSet) run(args []string, stdout, stderr io.Writer) int {
	if d, ok := stdout.(*describer); ok {
		d.set = s
		return 0
	}
	switch {
	case len(args) == 0:
		s.printUsage(stderr)
		return 2
	case args[0] == "help" && len(args) > 1:
		return s.help(args[1:], stdout, stderr)
	case isHelp(args[0]):
		s.printUsage(stdout)
		return 0
	}
	c, ok := s.table[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown %s %q\nRun '%s help' for the list.\n", s.path, s.noun, args[0], s.path)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

// help prints the help of the command that path names ("help lab record"):
// a group's list, or a command's own -h.
func (s *commandSet) help(path []string, stdout, stderr io.Writer) int {
	c, ok := s.table[path[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s help: unknown %s %q\nRun '%s help' for the list.\n", s.path, s.noun, path[0], s.path)
		return 2
	}
	if describe(c.run).set != nil {
		return c.run(append([]string{"help"}, path[1:]...), stdout, stderr)
	}
	if len(path) > 1 {
		fmt.Fprintf(stderr, "%s help: %s has no %s %q\n", s.path, path[0], s.noun, path[1])
		return 2
	}
	return c.run([]string{"-h"}, stdout, stderr)
}

// names returns the table's names in order.
func (s *commandSet) names() []string {
	names := make([]string, 0, len(s.table))
	for n := range s.table {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *commandSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <%s> %s\n", s.path, s.noun, s.usage)
	if s.doc != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(s.doc, "\n"))
	}
	fmt.Fprintf(w, "\n%ss:\n", s.noun)
	width := 8
	for _, n := range s.names() {
		width = max(width, len(n))
	}
	for _, n := range s.names() {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, s.table[n].summary)
	}
	fmt.Fprintln(w, "\n"+s.more)
}
