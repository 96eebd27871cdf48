package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tracefsState is what a command that traces must leave as it found it:
// tracefs mounted or not, the instances (ours are tmigr-*), the top-level
// switches and buffer.
func tracefsState(t *testing.T) string {
	t.Helper()
	const root = "/sys/kernel/tracing"
	var b strings.Builder
	ents, err := os.ReadDir(filepath.Join(root, "instances"))
	if errors.Is(err, fs.ErrNotExist) {
		return "tracefs not mounted at " + root
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fmt.Fprintf(&b, "instance %s\n", e.Name())
	}
	for _, f := range []string{"tracing_on", "current_tracer", "set_event", "trace_clock", "buffer_size_kb", "tracing_cpumask"} {
		v, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s\n", f, strings.TrimSpace(string(v)))
	}
	return b.String()
}

// TestEndedAnyMomentLeavesTracefs ends tmigr record, top and exporter at a
// random moment of their run (during setup, while tracing, or as they
// write) with SIGINT, SIGTERM or SIGKILL; after a SIGKILL the next run
// removes what it left. Tracefs is then as it was. The moments are drawn
// from a seed the test logs; any moment must do.
func TestEndedAnyMomentLeavesTracefs(t *testing.T) {
	recordable(t)
	before := tracefsState(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	commands := [][]string{
		{"record", "-o", filepath.Join(dir, "r.txt")},
		{"top", "-p", "200ms", "--json"},
		{"exporter", "--listen", "127.0.0.1:0"},
	}
	for _, args := range commands {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
			wait := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "TMIGR_TEST_MAIN=1")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(wait)
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if sig != syscall.SIGKILL {
				// A signal caught ends the command cleanly; one that
				// came before the handler was set kills it (nothing was
				// set up yet).
				if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 0 {
					t.Errorf("%s, %v after %v: %v\n%s", args[0], sig, wait, err, out.String())
				}
			} else {
				// The next run sweeps what a SIGKILL left.
				var o, e strings.Builder
				if rc := run([]string{"top", "-d", "0.3", "-q"}, &o, &e); rc != 0 {
					t.Errorf("top after a SIGKILLed %s: status %d: %s", args[0], rc, e.String())
				}
			}
			if got := tracefsState(t); got != before {
				t.Fatalf("%s, %v after %v: tracefs was\n%s\nand is\n%s\n(its output: %s)", args[0], sig, wait, before, got, out.String())
			}
		}
	}
}
