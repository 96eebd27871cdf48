package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	isol612 = "../../testdata/traces/vm16-2node-isol-busy-sleepers.txt"
	isol72  = "../../testdata/traces/vm4-1node-isol-busy-sleeper-7.2.txt"
)

type explainOut struct {
	Files []struct {
		File    string `json:"file"`
		Kernel  string `json:"kernel"`
		Foreign []struct {
			Handler, Owner int
			Function, Why  string
			Count          int
		} `json:"foreign"`
		Events []struct {
			Handler int
			Owner   *int
			Kind    string
			Why     string
			Steps   []struct{ Kind, Text string }
		} `json:"events"`
	} `json:"files"`
}

func explainJSON(t *testing.T, args ...string) explainOut {
	t.Helper()
	code, out, errs := runCmd(append([]string{"explain", "--json"}, args...)...)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "explain", out)
	var j explainOut
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return j
}

// The 6.12 recording names isolated CPU 1 running housekeeping CPU 0's
// timers, with a why; the 7.2 one has no foreign timer at all.
func TestExplainJSON(t *testing.T) {
	j := explainJSON(t, isol612, isol72)
	if len(j.Files) != 2 || j.Files[0].Kernel != "6.12.118" || j.Files[1].Kernel != "7.2.13" {
		t.Fatalf("files %+v", j.Files)
	}
	found := false
	for _, f := range j.Files[0].Foreign {
		if f.Why == "" || f.Count < 1 {
			t.Errorf("foreign %+v", f)
		}
		if f.Handler == 1 && f.Owner == 0 && f.Function == "process_timeout" && strings.Contains(f.Why, "GRP0:0") {
			found = true
		}
	}
	if !found {
		t.Errorf("no CPU 1 running CPU 0's process_timeout: %+v", j.Files[0].Foreign)
	}
	if len(j.Files[1].Foreign) != 0 {
		t.Errorf("7.2: foreign %+v", j.Files[1].Foreign)
	}
	for _, f := range j.Files {
		for _, e := range f.Events {
			if e.Why == "" || len(e.Steps) == 0 {
				t.Errorf("%s: event %+v", f.File, e)
			}
		}
	}
}

// Text: the summary per CPU, then the events; --cpu keeps one CPU's.
func TestExplainText(t *testing.T) {
	code, out, errs := runCmd("explain", isol612)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Linux 6.12.118, 16 CPUs, isolcpus=1-7,9-15",
		"CPU 1, isolated (isolcpus domain): 6 foreign timers",
		"CPU 0   process_timeout",
		"events:",
		"CPU 1 ran CPU 0's process_timeout at ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCmd("explain", "--cpu", "5", isol612)
	if code != 0 || strings.Contains(out, "CPU 1 ran") || !strings.Contains(out, "CPU 5 ran mix_interrupt_randomness") {
		t.Errorf("--cpu 5: exit %d\n%s", code, out)
	}
	code, out, _ = runCmd("explain", "--events", "1", isol612)
	if code != 0 || !strings.Contains(out, "more (--events 0 prints them all)") {
		t.Errorf("--events 1: exit %d\n%s", code, out)
	}
}

// "-" reads standard input, and gives what the file gives.
func TestExplainStdin(t *testing.T) {
	f, err := os.Open(isol612)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	j := explainJSON(t, "-")
	k := explainJSON(t, isol612)
	if len(j.Files) != 1 || j.Files[0].File != "-" || len(j.Files[0].Foreign) != len(k.Files[0].Foreign) || len(j.Files[0].Events) != len(k.Files[0].Events) {
		t.Errorf("stdin %+v, file %+v", j, k)
	}
}

// Bad input: one line naming the file and the problem, status 2.
func TestExplainErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", bad}, "bad.txt: line 1: not ftrace text"},
		{[]string{"explain", filepath.Join(dir, "none.txt")}, "no such file"},
		{[]string{"explain", "--cpu", "x-y", isol612}, "--cpu"},
		{[]string{"explain", "--kernel", "banana", isol612}, "banana"},
		{[]string{"explain", "--nodes", "2", isol612}, "--nodes needs --cpus"},
		{[]string{"explain", "--cpus", "4", isol612}, "beyond the machine's CPUs 0-3"},
		{[]string{"explain", "-", "-"}, "standard input (-) given twice"},
		{[]string{"explain"}, "usage: tmigr explain"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errs, tc.want)
		}
		if tc.want != "usage: tmigr explain" && strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: not one line: %q", tc.args, errs)
		}
	}
	code, out, errs := runCmd("explain", "-h")
	if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: tmigr explain") || !strings.Contains(out, "-json") {
		t.Errorf("-h: exit %d %q %q", code, out, errs)
	}
}
