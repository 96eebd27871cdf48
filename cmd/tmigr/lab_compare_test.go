package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var labTraces = filepath.Join("..", "..", "testdata", "traces")

func TestLabCompareCommand(t *testing.T) {
	f := filepath.Join(labTraces, "vm40-1node-isol-busy.txt")
	code, stdout, stderr := runLabCmd("compare", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{f, "level  handler  kernel", "sim (recorded background)", "sim (housekeeping mix)", "agreement, sim (recorded background): pulls "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runLabCmd("compare", "--json", "--timers", "recorded", f)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	checkSchema(t, "lab-compare", stdout)
	var out struct {
		Files []struct {
			File   string
			Kernel struct{ Total int }
			Sims   []struct {
				Name      string
				Timers    string
				Agreement struct{ Shared, Union int }
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(out.Files) != 1 || out.Files[0].Kernel.Total == 0 || len(out.Files[0].Sims) != 1 ||
		out.Files[0].Sims[0].Timers != "recorded" || out.Files[0].Sims[0].Agreement.Union == 0 {
		t.Errorf("json %+v", out)
	}

	prefix := filepath.Join(t.TempDir(), "sim")
	if code, _, stderr := runLabCmd("compare", "--timers", "mix", "--sim-trace", prefix, f); code != 0 {
		t.Fatalf("--sim-trace: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(prefix + "-mix.txt"); err != nil || !strings.HasPrefix(string(b), "# machine: cpus=40 ") {
		t.Errorf("the simulator's trace: %v %.80q", err, b)
	}

	for _, bad := range [][]string{
		{"compare"},
		{"compare", "--timers", "frob", f},
		{"compare", "--warmup", "-1s", f},
		{"compare", "--sim-trace", prefix, f, f},
		{"compare", filepath.Join(labTraces, "no-such.txt")},
	} {
		if code, _, _ := runLabCmd(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}

func TestLabMatrixCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "conformance.md")
	code, stdout, stderr := runLabCmd("matrix", "--no-record", "--dir", labTraces, "--shapes", "2,40-isol", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "shape") || !strings.Contains(stdout, "40-isol") || !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The document names the command without the paths given to it.
	if !strings.Contains(string(doc), "    go run ./cmd/tmigr lab matrix --no-record --shapes 2,40-isol\n") {
		t.Errorf("document:\n%s", doc)
	}
	if strings.Contains(string(doc), labTraces) || strings.Contains(string(doc), out) {
		t.Error("the document names a path of this machine")
	}
	// Help goes to standard output, as a Go user expects.
	if code, stdout, stderr := runLabCmd("matrix", "-h"); code != 0 || stderr != "" {
		t.Errorf("-h: %d %s", code, stderr)
	} else if !strings.Contains(stdout, "64x4") || !strings.Contains(stdout, "--kernel rt --cpus 8") {
		t.Errorf("-h does not list the shapes: %s", stdout)
	}
	for _, bad := range [][]string{
		{"matrix", "--shapes", "7", "--no-record"},
		{"matrix", "--no-record", "--duration", "1s"},
		{"matrix", "extra"},
	} {
		if code, _, _ := runLabCmd(bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	if code, _, stderr := runLabCmd("matrix", "--no-record", "--dir", t.TempDir(), "--shapes", "2", "--out", ""); code != 1 || !strings.Contains(stderr, "tmigr lab record --cpus 2") {
		t.Errorf("missing recording: %d %s", code, stderr)
	}
}
