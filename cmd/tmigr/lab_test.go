package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/lab"
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
	if code, _, stderr := runLabCmd("record", "-h"); code != 0 || !strings.Contains(stderr, "-rt-sleepers") {
		t.Errorf("tmigr lab record -h: %d %q", code, stderr)
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
		{[]string{"--cpus", "4", "--kernel-version", "6.1.140", "-o", out}, "not a 6.12 kernel"},
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
	s := &lab.Spec{CPUs: 16, Nodes: 2}
	for _, tc := range []struct {
		rec  string
		code int
		want string
	}{
		{machine + "# Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level\n" + body, 0, "matches the model"},
		{machine + "# Timer migration: 3 hierarchy levels; 8 children per group; 2 crossnode level\n" + body, 1, "differs from the model's"},
		{machine + body, 1, `boot line ""`},
		{body, 1, "lacks its machine line"},
	} {
		var stderr bytes.Buffer
		code := checkBootLine(s, []byte(tc.rec), &stderr)
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
