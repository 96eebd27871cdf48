// Command tmigr runs Linux's timer-migration model: simulations of machines
// of any shape, replays of real kernel traces through the model, and live
// experiments with the runtime on the machine it runs on.
//
// Usage:
//
//	tmigr <command> [flags] [args]
//
// Each command lives in a file of its own and registers itself in init.
// Commands are thin: they parse flags and call the packages that hold the
// logic.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand. run returns the process exit status: 0 on
// success, 1 when the command ran but found a problem (a mismatch, a failed
// check), 2 for bad usage or bad input.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commandSet is a table of commands that register themselves from the init
// of their own files, and dispatches on the first argument: tmigr's
// commands, and the subcommands of "tmigr lab".
type commandSet struct {
	path  string // "tmigr", "tmigr lab"
	noun  string // "command", "subcommand"
	usage string // the usage line's arguments after the noun
	more  string // the closing hint
	table map[string]command
}

var commands = &commandSet{
	path: "tmigr", noun: "command", usage: "[flags] [args]",
	more:  "Run 'tmigr <command> -h' for a command's flags.",
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

func run(args []string, stdout, stderr io.Writer) int { return commands.run(args, stdout, stderr) }

func (s *commandSet) run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		s.printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := s.table[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown %s %q\n\n", s.path, s.noun, args[0])
		s.printUsage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func (s *commandSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <%s> %s\n", s.path, s.noun, s.usage)
	fmt.Fprintf(w, "\n%ss:\n", s.noun)
	names := make([]string, 0, len(s.table))
	for n := range s.table {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, s.table[n].summary)
	}
	fmt.Fprintln(w, "\n"+s.more)
}
