package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/kernel"
)

// What a newcomer tripped over (issue 26), each checked here.

// TestDocPictureExamplesRun: every `tmigr replay|explain ... --html|--perfetto
// F ...` example in the manual runs as written, brace expansion included
// (docs/simulator.md's `--html F ...{,-7.3}.txt` named two files, which
// the pictures refuse).
func TestDocPictureExamplesRun(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	example := regexp.MustCompile("`(tmigr (?:replay|explain) [^`]*--(?:html|perfetto) [^`]*)`")
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range example.FindAllStringSubmatch(string(b), -1) {
			n++
			var args []string
			for i, w := range strings.Fields(m[1])[1:] {
				switch {
				case i > 0 && strings.HasPrefix(w, "testdata/"):
					args = append(args, expandBraces("../../"+w)...)
				case strings.HasSuffix(w, ".html") || strings.HasSuffix(w, ".json") || w == "F":
					args = append(args, filepath.Join(t.TempDir(), "out"))
				default:
					args = append(args, w)
				}
			}
			if code, _, errs := runCmd(args...); code != 0 {
				t.Errorf("%s: `%s` exits %d: %s", filepath.Base(doc), m[1], code, errs)
			}
		}
	}
	if n == 0 {
		t.Fatal("no picture example found in the docs")
	}
}

// expandBraces expands one shell brace list, "a{,-7.3}.txt" to "a.txt"
// and "a-7.3.txt", as the reader's shell would.
func expandBraces(w string) []string {
	i, j := strings.Index(w, "{"), strings.Index(w, "}")
	if i < 0 || j < i {
		return []string{w}
	}
	var out []string
	for _, alt := range strings.Split(w[i+1:j], ",") {
		out = append(out, w[:i]+alt+w[j+1:])
	}
	return out
}

// TestSimTraceNamesItsKernel: the trace and the page of `sim --kernel V`
// name V, not a release of its policy's generation (6.12 was labelled
// "6.18.0-tmigr-sim", 6.1 "6.8.0"); a --policy of another generation
// keeps the generation's release, which is what the trace's rules are.
func TestSimTraceNamesItsKernel(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kernel", "6.12"}, "kernel=6.12.0-tmigr-sim"},
		{[]string{"--kernel", "6.1"}, "kernel=6.1.0-tmigr-sim"},
		{[]string{"--kernel", "6.18.5"}, "kernel=6.18.5-tmigr-sim"},
		{[]string{"--kernel", "6.12", "--policy", "pull-isolated"}, "kernel=6.19.0-tmigr-sim"},
	} {
		trace, page := filepath.Join(dir, "t.txt"), filepath.Join(dir, "p.html")
		args := append([]string{"sim", "--quiet", "--cpus", "4", "--duration", "0.1", "--workload", "oslat:1-3", "--trace", trace, "--html", page}, tc.args...)
		if code, _, errs := runCmd(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		tr, _ := os.ReadFile(trace)
		html, _ := os.ReadFile(page)
		first, _, _ := strings.Cut(string(tr), "\n")
		if !strings.Contains(first, tc.want) || !bytes.Contains(html, []byte(strings.TrimPrefix(tc.want, "kernel="))) {
			t.Errorf("%v: machine line %q, page names it: %v; want %s in both", tc.args, first,
				bytes.Contains(html, []byte(strings.TrimPrefix(tc.want, "kernel="))), tc.want)
		}
	}
}

// TestPictureTargetsCheckedFirst: a --html or --perfetto that cannot be
// written is refused before the work, with exit status 2 from every
// command that draws (sim simulated first, then failed naming its
// temporary file with status 1 and lost the report; replay failed with 2
// after reading, explain with 1).
func TestPictureTargetsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	trace := "../../testdata/traces/kvm2-1node-sleepers.txt"
	for _, flag := range []string{"--html", "--perfetto"} {
		for _, target := range []struct{ path, want string }{
			{"/no/such/dir/x.html", "directory /no/such/dir does not exist"},
			{dir, "is a directory"},
		} {
			for _, args := range [][]string{
				{"sim", "--cpus", "4", "--duration", "0.1", "--workload", "idle", flag, target.path},
				{"replay", flag, target.path, trace},
				{"explain", flag, target.path, trace},
			} {
				code, out, errs := runCmd(args...)
				if code != 2 || out != "" || !strings.Contains(errs, flag+": ") || !strings.Contains(errs, target.want) || strings.Contains(errs, ".tmp") {
					t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want 2, nothing, and %s: ... %s", args, code, len(out), errs, flag, target.want)
				}
			}
		}
	}
}

// TestKernelOutsideTheModelRefused: a --kernel the model does not cover is
// refused, naming the series it does (5.4, 99.0 and 42.0 were taken in
// silence and modelled with the nearest rules).
func TestKernelOutsideTheModelRefused(t *testing.T) {
	trace := "../../testdata/traces/kvm2-1node-sleepers.txt"
	series := "6.1-6.19, 7.0-" + kernel.Newest.Series()
	for _, k := range []string{"5.4", "99.0", "42.0", "6.20"} {
		for _, args := range [][]string{
			{"sim", "--cpus", "4", "--duration", "0.1", "--workload", "idle", "--kernel", k},
			{"repro", "isolation", "--short", "--kernel", k},
			{"replay", "--kernel", k, trace},
			{"explain", "--kernel", k, trace},
		} {
			code, out, errs := runCmd(args...)
			if code != 2 || out != "" || !strings.Contains(errs, "--kernel: kernel "+k) || !strings.Contains(errs, series) {
				t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want 2 naming %s", args, code, len(out), errs, series)
			}
		}
	}
	if code, _, errs := runCmd("sim", "--quiet", "--cpus", "4", "--duration", "0.1", "--workload", "idle", "--kernel", "6.13"); code != 0 {
		t.Errorf("--kernel 6.13, a series inside the model: exit %d: %s", code, errs)
	}
}

// TestReproProgressOnlyOnATerminal: repro's progress line, redrawn with
// carriage returns, goes to stderr only when it is a terminal; a pipe or a
// log got every redraw.
func TestReproProgressOnlyOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	if w := progressWriter(&buf, false); w != nil {
		t.Error("progress lines go to a stderr that is not a terminal")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if w := progressWriter(f, false); w != nil {
		t.Error("progress lines go to a log file")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if progressWriter(tty, false) == nil || progressWriter(tty, true) != nil {
			t.Error("a terminal gets no progress line, or gets one with --quiet")
		}
	}
}

// TestExplainWrapsItsLines: explain's text is wrapped to the width asked
// for, each continuation indented under its line, and says the same words
// as unwrapped (a "why" was one line of up to 1,091 characters).
func TestExplainWrapsItsLines(t *testing.T) {
	_, flat, _ := runCmd("explain", "--width", "0", isol612)
	_, wrapped, _ := runCmd("explain", "--width", "80", isol612)
	longest := 0
	for _, l := range strings.Split(flat, "\n") {
		longest = max(longest, len([]rune(l)))
	}
	if longest <= 80 {
		t.Fatalf("no line of the unwrapped text is longer than 80 (%d): the test shows nothing", longest)
	}
	for _, l := range strings.Split(wrapped, "\n") {
		if n := len([]rune(l)); n > 80 && strings.Contains(strings.TrimSpace(l), " ") {
			t.Errorf("a line of %d columns at --width 80: %q", n, l)
		}
	}
	if a, b := strings.Fields(flat), strings.Fields(wrapped); strings.Join(a, " ") != strings.Join(b, " ") {
		t.Error("wrapping changed the words")
	}
	if code, _, errs := runCmd("explain", "--width", "-3", isol612); code != 2 || !strings.Contains(errs, "--width") {
		t.Errorf("--width -3: exit %d, %q", code, errs)
	}
}

// TestExplainHelpNamesEveryForm: explain -h names the forms it reads
// (it said "tracefs text" only, and it reads trace.dat and trace-cmd
// report too, gzip'd or not).
func TestExplainHelpNamesEveryForm(t *testing.T) {
	code, out, _ := runCmd("explain", "-h")
	if code != 0 {
		t.Fatalf("explain -h exits %d", code)
	}
	for _, w := range []string{"tracefs", "trace.dat", "report", "gzip", "standard input"} {
		if !strings.Contains(out, w) {
			t.Errorf("explain -h does not name %q", w)
		}
	}
}

// TestLabRecordKernelVersionHint: `lab record --kernel 6.12` points at
// --kernel-version (it said only "neither generic nor rt").
func TestLabRecordKernelVersionHint(t *testing.T) {
	code, _, errs := runCmd("lab", "record", "--cpus", "2", "--kernel", "6.12", "-o", filepath.Join(t.TempDir(), "x"))
	if code != 2 || !strings.Contains(errs, "--kernel-version 6.12") {
		t.Errorf("exit %d, %q; want 2 and a pointer to --kernel-version 6.12", code, errs)
	}
}

// TestDocsNameFilesThatExist: a README a doc sends the reader to exists
// (testdata/traces/README.md named one in ftrace/testdata/tracecmd/host2,
// which has none), and so does every repository path a doc names in
// backquotes.
func TestDocsNameFilesThatExist(t *testing.T) {
	docs := []string{"../../README.md", "../../testdata/traces/README.md"}
	more, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, more...)
	its := regexp.MustCompile("`([a-z][\\w./-]*)` \\(its README")
	path := regexp.MustCompile("`((?:cmd|docs|ftrace|testdata|sim|replay|explain|host|lab|live|viz|hier|tick|wheel|hrtimer|cpu|bench|examples|conformance|migrators|report|internal)/[\\w./-]+)`")
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range its.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join("../..", m[1], "README.md")); err != nil {
				t.Errorf("%s sends the reader to %s's README: %v", doc, m[1], err)
			}
		}
		for _, m := range path.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[1], ".")
			if strings.ContainsAny(p, "*{") {
				continue
			}
			if _, err := os.Stat(filepath.Join("../..", p)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, p)
			}
		}
	}
}

// TestSimPageSaysWhichCPUsItsTableShows: the page's table of latency by
// CPU says it holds the 10 worst of the measuring CPUs when there are
// more (it showed 10 of 13 without a word).
func TestSimPageSaysWhichCPUsItsTableShows(t *testing.T) {
	for _, tc := range []struct {
		cpus, workload, want string
	}{
		{"14", "oslat:1-13", "The 10 worst of the 13 measuring CPUs"},
		{"4", "oslat:1-3", "All 3 measuring CPUs"},
	} {
		page := filepath.Join(t.TempDir(), "p.html")
		if code, _, errs := runCmd("sim", "--quiet", "--cpus", tc.cpus, "--duration", "0.2", "--workload", tc.workload, "--html", page); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		html, _ := os.ReadFile(page)
		if !bytes.Contains(html, []byte(tc.want)) {
			t.Errorf("--cpus %s --workload %s: the page does not say %q", tc.cpus, tc.workload, tc.want)
		}
	}
}
