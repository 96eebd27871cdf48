package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// converted are the commands that parse with a flagSet. The others (lab's,
// until they adopt it) are described from their -h output.
var converted = []string{"sim", "replay", "repro", "topo", "version", "completion",
	"live lateness", "live isolation", "live idle", "live softhard", "live wakeups"}

// Help goes to standard output with status 0, however it is asked for,
// and is the same text each way.
func TestHelpOnStdout(t *testing.T) {
	for _, path := range converted {
		words := strings.Fields(path)
		var first string
		for i, args := range [][]string{
			append(append([]string{}, words...), "-h"),
			append(append([]string{}, words...), "--help"),
			append(append([]string{}, words...), "-help"),
			append(append([]string{}, words...), "help"),
			append([]string{"help"}, words...),
		} {
			code, out, errs := runCmd(args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: tmigr "+words[0]) || !strings.Contains(out, "\n  -") && words[0] != "version" && words[0] != "completion" {
				t.Errorf("%v: exit %d, stderr %q, stdout %.80q", args, code, errs, out)
				continue
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Errorf("%v prints another help than %v -h", args, path)
			}
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"live", "help"}, {"help", "live"}, {"lab", "-h"}, {"help", "lab"}} {
		code, out, errs := runCmd(args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: tmigr") {
			t.Errorf("%v: exit %d, stderr %q, stdout %.80q", args, code, errs, out)
		}
	}
	// "help" is an operand where the command takes it as one.
	if code, _, errs := runCmd("repro", "help", "--short"); code != 2 || !strings.Contains(errs, `unknown experiment "help"`) {
		t.Errorf("repro help --short: exit %d, %q", code, errs)
	}
}

// Bad usage is one line naming the problem and a hint, on standard error,
// with status 2; the usage is not printed after it.
func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--bogus"}, "tmigr sim: flag provided but not defined: -bogus\nRun 'tmigr sim -h' for help.\n"},
		{[]string{"sim", "--cpus", "x"}, "tmigr sim: invalid value \"x\" for flag -cpus: parse error\nRun 'tmigr sim -h' for help.\n"},
		{[]string{"sim", "--cpus"}, "tmigr sim: flag needs an argument: -cpus\nRun 'tmigr sim -h' for help.\n"},
		{[]string{"replay", "--json"}, "tmigr replay: missing FILE\nRun 'tmigr replay -h' for help.\n"},
		{[]string{"repro", "panic", "isolation"}, "tmigr repro: unexpected argument \"isolation\"\nRun 'tmigr repro -h' for help.\n"},
		{[]string{"live", "idle", "--nope"}, "tmigr live idle: flag provided but not defined: -nope\nRun 'tmigr live idle -h' for help.\n"},
		{[]string{"frob"}, "tmigr: unknown command \"frob\"\nRun 'tmigr help' for the list.\n"},
		{[]string{"live", "frob"}, "tmigr live: unknown experiment \"frob\"\nRun 'tmigr live help' for the list.\n"},
		{[]string{"help", "frob"}, "tmigr help: unknown command \"frob\"\nRun 'tmigr help' for the list.\n"},
		{[]string{"help", "sim", "x"}, "tmigr help: sim has no command \"x\"\n"},
		{[]string{"completion", "tcsh"}, "tmigr completion: unknown shell \"tcsh\" (want bash, zsh or fish)\nRun 'tmigr completion -h' for help.\n"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != 2 || out != "" || errs != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	// With no argument at all, the usage is the answer (on stderr).
	for _, args := range [][]string{{}, {"replay"}, {"repro"}, {"live"}, {"lab"}} {
		if code, out, errs := runCmd(args...); code != 2 || out != "" || !strings.HasPrefix(errs, "usage: tmigr") {
			t.Errorf("%v: exit %d, stdout %q, stderr %.60q", args, code, out, errs)
		}
	}
}

// Flags may follow the operands, and "--" ends the flags.
func TestFlagsAfterOperands(t *testing.T) {
	trace := filepath.Join(labTraces, "vm2-1node-busy-sleeper.txt")
	code, before, errs := runCmd("replay", "--json", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "replay", before)
	code, after, errs := runCmd("replay", trace, "--json")
	if code != 0 || after != before {
		t.Fatalf("replay FILE --json: exit %d, %s; output differs: %v", code, errs, after != before)
	}
	var v struct{ Files []json.RawMessage }
	if err := json.Unmarshal([]byte(after), &v); err != nil || len(v.Files) != 1 {
		t.Fatalf("not the JSON: %v %.80q", err, after)
	}
	// A file whose name starts with '-', after "--".
	dash := filepath.Join(t.TempDir(), "-x.txt")
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dash, b, 0o644); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Chdir(filepath.Dir(dash))
	code, out, errs := runCmd("replay", "--wheel", "--", "-x.txt")
	if code != 0 || !strings.HasPrefix(out, "-x.txt: wheel ") {
		t.Errorf("replay -- -x.txt: exit %d, %q %q", code, out, errs)
	}
	t.Chdir(wd)
	// The flag helper itself: values, booleans, -name=value, "-" and "--".
	fs := newFlagSet("tmigr t", "", &strings.Builder{}, &strings.Builder{})
	n := fs.Int("n", 0, "")
	j := fs.Bool("json", false, "")
	s := fs.String("s", "", "")
	fs.operands("X", 0, -1, completion{})
	if _, ok := fs.parse([]string{"a", "-n", "3", "b", "--json", "-", "--s=v", "--", "--n", "c"}); !ok {
		t.Fatal("parse failed")
	}
	if *n != 3 || !*j || *s != "v" || !reflect.DeepEqual(fs.Args(), []string{"a", "b", "-", "--n", "c"}) {
		t.Errorf("n %d json %v s %q args %q", *n, *j, *s, fs.Args())
	}
}

// The flags that are 0 for "not given": given as 0 they are refused, not
// read as the default.
func TestZeroFlagsRefused(t *testing.T) {
	trace := filepath.Join(labTraces, "vm2-1node-busy-sleeper.txt")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topo", "--cpus", "4", "--nodes", "0"}, "--nodes must be at least 1 (got 0)"},
		{[]string{"replay", "--nodes", "0", trace}, "--nodes must be at least 1 (got 0)"},
		{[]string{"replay", "--hz", "0", trace}, "--hz must be at least 1 (got 0)"},
		{[]string{"replay", "--cpus", "-1", trace}, "--cpus must be at least 1 (got -1)"},
	} {
		if code, _, errs := runCmd(tc.args...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// A trace without a machine line whose events name a CPU beyond --cpus is
// refused, naming the CPU and the line (it gave "tmigr 0/0", status 0).
func TestReplayEventBeyondCPUs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(labTraces, "..", "traces", "mixed-3s.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, "# machine:") {
			kept = append(kept, l)
		}
	}
	f := filepath.Join(t.TempDir(), "no-machine.txt")
	if err := os.WriteFile(f, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd("replay", "--hz", "250", "--cpus", "1", f)
	if code != 2 || out != "" || !strings.Contains(errs, "an event of CPU 1, beyond the machine's CPUs 0-0") || !strings.Contains(errs, ": line ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, out, errs := runCmd("replay", "--hz", "250", "--cpus", "2", f); code != 0 || !strings.Contains(out, "tmigr ") {
		t.Errorf("--cpus 2: exit %d, %q %q", code, out, errs)
	}
}

func TestVersion(t *testing.T) {
	code, out, errs := runCmd("version")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "tmigr ") || !strings.HasSuffix(out, runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Errorf("version: exit %d, %q %q", code, out, errs)
	}
	if code, again, _ := runCmd("--version"); code != 0 || again != out {
		t.Errorf("--version: exit %d, %q", code, again)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "3fca651a2b4c5d6e7f8091a2b3c4d5e6f7a8b9c0"},
		{Key: "vcs.time", Value: "2026-12-01T18:23:09Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	want := "tmigr v1.2.0, revision 3fca651a2b4c (modified, 2026-12-01T18:23:09Z), go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH
	if got := versionLine(bi); got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	bi.Settings = bi.Settings[:1]
	if got := versionLine(bi); !strings.Contains(got, "revision 3fca651a2b4c, go1.26.8") {
		t.Errorf("clean tree: %q", got)
	}
	if got := versionLine(nil); !strings.HasPrefix(got, "tmigr (unknown), revision unknown, "+runtime.Version()) {
		t.Errorf("no build info: %q", got)
	}
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.txt")
	if err := writeFileAtomic(p, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	out, err := createOutput(p)
	if err != nil {
		t.Fatal(err)
	}
	out.WriteString("half a")
	out.abort()
	if b, _ := os.ReadFile(p); string(b) != "one\n" {
		t.Errorf("an aborted output changed the file: %q", b)
	}
	// Through a symbolic link: the target is replaced, the link stays.
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("out.txt", link); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(link, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "two\n" {
		t.Errorf("the link's target holds %q", b)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temporary files left: %v", ents)
	}
	if err := writeFileAtomic(dir, []byte("x")); err == nil {
		t.Error("a directory was overwritten")
	}
	if err := writeFileAtomic(filepath.Join(dir, "no", "x"), []byte("x")); err == nil {
		t.Error("a file in a missing directory was written")
	}
}

// FuzzFlagParse: whatever the arguments, parse does not panic, and the
// operands it returns are arguments in their order, never a flag it
// consumed.
func FuzzFlagParse(f *testing.F) {
	for _, s := range []string{"a -n 3 b", "--json -- -x", "-n", "--s=v a", "- --", "---x", "-n=-1 -s -- --", "help"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		var out, errb strings.Builder
		fs := newFlagSet("tmigr t", "usage\n", &out, &errb)
		fs.Int("n", 0, "")
		fs.Bool("json", false, "")
		fs.String("s", "", "")
		fs.operands("X", 0, -1, completion{})
		rc, ok := fs.parse(args)
		if !ok {
			if rc != 0 && rc != 2 || rc == 2 && errb.Len() == 0 {
				t.Fatalf("%q: status %d, stderr %q", args, rc, errb.String())
			}
			return
		}
		i := 0
		for _, op := range fs.Args() {
			for i < len(args) && args[i] != op {
				i++
			}
			if i == len(args) {
				t.Fatalf("%q: operands %q are not arguments in order", args, fs.Args())
			}
			i++
		}
	})
}
