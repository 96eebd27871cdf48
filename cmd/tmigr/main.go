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

var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	if _, dup := commands[name]; dup {
		panic("tmigr: command registered twice: " + name)
	}
	commands[name] = command{summary, run}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tmigr: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tmigr <command> [flags] [args]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'tmigr <command> -h' for a command's flags.")
}
