package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runLabCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(append([]string{"lab"}, args...), &o, &e)
	return code, o.String(), e.String()
}

func TestLabDispatch(t *testing.T) {
	code, _, stderr := runLabCmd()
	if code != 2 || !strings.Contains(stderr, "record") || !strings.Contains(stderr, "subcommands:") {
		t.Errorf("tmigr lab: %d %q", code, stderr)
	}
	if code, stdout, _ := runLabCmd("help"); code != 0 || !strings.Contains(stdout, "record") {
		t.Errorf("tmigr lab help: %d %q", code, stdout)
	}
	code, _, stderr = runLabCmd("frob")
	if code != 2 || !strings.Contains(stderr, `unknown subcommand "frob"`) {
		t.Errorf("tmigr lab frob: %d %q", code, stderr)
	}
	if code, stdout, _ := runLabCmd("record", "-h"); code != 0 || !strings.Contains(stdout, "-rt-sleepers") {
		t.Errorf("tmigr lab record -h: %d %q", code, stdout)
	}
}

// TestLabTableExtends: a later file adds a subcommand with registerLab and
// "tmigr lab" dispatches to it.
func TestLabTableExtends(t *testing.T) {
	registerLab("test-extra", "a subcommand added by a test", func(args []string, stdout, stderr io.Writer) int {
		io.WriteString(stdout, "extra "+strings.Join(args, ","))
		return 7
	})
	defer delete(labCommands.table, "test-extra")
	code, stdout, _ := runLabCmd("test-extra", "a", "b")
	if code != 7 || stdout != "extra a,b" {
		t.Errorf("dispatch: %d %q", code, stdout)
	}
	if _, stdout, _ := runLabCmd("help"); !strings.Contains(stdout, "test-extra") {
		t.Errorf("the usage does not list the new subcommand: %q", stdout)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a subcommand twice did not panic")
		}
	}()
	registerLab("record", "again", nil)
}

// TestLabRecordBadInput: every bad input is refused with status 2 and a
// message naming the problem, before anything is fetched or booted.
func TestLabRecordBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rec.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpus", "2"}, "-o FILE"},
		{[]string{"-o", out}, "--cpus: 0"},
		{[]string{"--cpus", "0", "-o", out}, "--cpus: 0"},
		{[]string{"--cpus", "-4", "-o", out}, "--cpus: -4"},
		{[]string{"--cpus", "300", "-o", out}, "at most 288"},
		{[]string{"--cpus", "2", "--nodes", "3", "-o", out}, "3 nodes for 2 CPUs"},
		{[]string{"--cpus", "4", "--nodes", "2", "--node-cpus", "0-1;2-3", "-o", out}, "either --nodes or --node-cpus"},
		{[]string{"--cpus", "4", "--node-cpus", "0-1;2-4", "-o", out}, "--node-cpus: node 1"},
		{[]string{"--cpus", "4", "--node-cpus", "0-1;3", "-o", out}, "CPUs 2 are on no node"},
		{[]string{"--cpus", "4", "--busy", "4", "-o", out}, "--busy"},
		{[]string{"--cpus", "4", "--sleepers", "1-x", "-o", out}, "--sleepers"},
		{[]string{"--cpus", "4", "--busy", "1-2", "--sleepers", "2-3", "-o", out}, "busy and sleepers overlap on CPUs 2"},
		{[]string{"--cpus", "4", "--sleepers", "1", "--rt-sleepers", "1", "-o", out}, "overlap"},
		{[]string{"--cpus", "4", "--cmdline", "isolcpus=1-3 console=ttyS1", "-o", out}, "set by the recorder"},
		{[]string{"--cpus", "4", "--cmdline", "nohz_full=\"1\"", "-o", out}, "quotes"},
		{[]string{"--cpus", "4", "--cmdline", "isolcpus=2-7", "-o", out}, "would ignore"},
		{[]string{"--cpus", "4", "--kernel", "lowlatency", "-o", out}, "lowlatency"},
		{[]string{"--cpus", "4", "--kernel-version", "6.1.140+deb12", "-o", out}, "neither a series"},
		{[]string{"--cpus", "4", "--duration", "11m", "-o", out}, "duration"},
		{[]string{"--cpus", "4", "--period", "1us", "--sleepers", "1", "-o", out}, "period"},
		{[]string{"--cpus", "4", "--kernel-image", "bzImage", "-o", out}, "needs its config"},
		{[]string{"--cpus", "4", "-o", out, "extra"}, `unexpected argument "extra"`},
		{[]string{"--cpus", "4", "--bogus", "-o", out}, "flag provided but not defined"},
	} {
		code, _, stderr := runLabCmd(append([]string{"record"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused recording left a file")
	}
}

func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.txt")
	if err := writeOutput(p, []byte("one\n"), nil); err != nil {
		t.Fatal(err)
	}
	if err := writeOutput(p, []byte("two\n"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two\n" {
		t.Errorf("file holds %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	var stdout bytes.Buffer
	if err := writeOutput("-", []byte("three\n"), &stdout); err != nil || stdout.String() != "three\n" {
		t.Errorf("stdout: %q %v", stdout.String(), err)
	}
	if err := writeOutput(filepath.Join(dir, "no", "such", "dir"), []byte("x"), nil); err == nil {
		t.Error("a file in a missing directory was written")
	}
}

// TestCheckBootLine: a recording's boot line is compared with the model's
// for its machine; a missing or different line is reported.
func TestCheckBootLine(t *testing.T) {
	const body = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:16\n#\n"
	machine := "# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline=\"\" busy= sleepers= (QEMU TCG)\n"
	for _, tc := range []struct {
		rec  string
		code int
		want string
	}{
		{machine + "# Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n" + body, 0, "matches the model"},
		{machine + "# Timer migration: 3 hierarchy levels; 8 children per group; 2 crossnode level\n" + body, 1, "differs from the model's"},
		{machine + body, 1, `boot line ""`},
		{body, 1, "no \"# machine:\" line"},
		// 6.1 has no hierarchy: no boot line is right, one is wrong.
		{strings.Replace(machine, "6.12.117", "6.1.192", 1) + body, 0, "no timer migration hierarchy (Linux 6.1.192, before 6.9)"},
		{strings.Replace(machine, "6.12.117", "6.1.192", 1) + "# Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n" + body, 1, "but the hierarchy came with 6.9"},
	} {
		var stderr bytes.Buffer
		code := checkBootLine([]byte(tc.rec), &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("status %d %q, want %d %q", code, stderr.String(), tc.code, tc.want)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var b bytes.Buffer
	w := prefixWriter{&b, "tmigr lab: "}
	io.WriteString(w, "one\n")
	io.WriteString(w, "two\n")
	if b.String() != "tmigr lab: one\ntmigr lab: two\n" {
		t.Errorf("%q", b.String())
	}
}

// TestLabMatrixSafeDefault: without --out the document goes to standard
// output; the tracked docs/conformance.md of the working directory is left
// alone (it used to be overwritten).
func TestLabMatrixSafeDefault(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "docs", "conformance.md")
	os.MkdirAll(filepath.Dir(doc), 0o755)
	const before = "# the tracked document\n"
	os.WriteFile(doc, []byte(before), 0o644)
	traces, err := filepath.Abs(labTraces)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, stdout, stderr := runLabCmd("matrix", "--no-record", "--dir", traces, "--shapes", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(doc); string(got) != before {
		t.Errorf("docs/conformance.md was rewritten:\n%s", got)
	}
	if !strings.HasPrefix(stdout, "# Conformance matrix") {
		t.Errorf("standard output is not the document: %.200q", stdout)
	}
}

// TestLabMatrixInterrupted: a Ctrl-C ends "lab matrix --no-record" with
// status 1 and writes no document (it used to check every shape and
// overwrite --out).
func TestLabMatrixInterrupted(t *testing.T) {
	old := labContext
	defer func() { labContext = old }()
	labContext = func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the user pressed Ctrl-C at once
		return ctx, cancel
	}
	out := filepath.Join(t.TempDir(), "conformance.md")
	const before = "the previous document\n"
	os.WriteFile(out, []byte(before), 0o644)
	code, _, stderr := runLabCmd("matrix", "--no-record", "--dir", labTraces, "--out", out)
	if code != 1 || !strings.Contains(stderr, "interrupted") {
		t.Errorf("exit %d, %q; want 1 and \"interrupted\"", code, stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != before {
		t.Errorf("--out was rewritten:\n%s", got)
	}
}
