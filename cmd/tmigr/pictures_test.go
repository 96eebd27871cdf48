package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tmigr sim says its answer first: in the text before oslat's report, and
// in the JSON as "summary", whose pulls are the per-CPU remote counts.
func TestSimAnswerFirst(t *testing.T) {
	args := []string{"sim", "--quiet", "--cpus", "16", "--nodes", "2", "--isolcpus", "1-7,9-15", "--policy", "pull",
		"--workload", "oslat", "--duration", "1", "--seed", "4"}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	answer, rest, ok := strings.Cut(out, "oslat V 2.10\n")
	if !ok || !strings.HasPrefix(answer, "# who ran whose timers (") || !strings.Contains(answer, "#   CPU 1 ran CPU 0's timers ") ||
		!strings.Contains(answer, "# isolated CPUs that ran other CPUs' timers: CPU 1 (") || !strings.Contains(answer, "# worst latency: ") ||
		!strings.Contains(rest, "remote_from(cpu:timers)") {
		t.Fatalf("output:\n%.1500s", out)
	}
	code, out, errs = runCmd(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "sim", out)
	var v struct {
		Summary struct {
			Pulls []struct {
				Handler, Owner int
				Count          uint64
			} `json:"pulls"`
			Isolated []struct {
				CPU int `json:"cpu"`
			} `json:"isolated_foreign"`
			Worst *struct {
				CPU   int     `json:"cpu"`
				MaxUS float64 `json:"max_us"`
			} `json:"worst_latency"`
		} `json:"summary"`
		CPUs []struct {
			CPU  int                `json:"cpu"`
			From map[string]uint64  `json:"remote_from"`
			Lat  map[string]float64 `json:"latency_us"`
		} `json:"cpus"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	n := 0
	worst := 0.0
	for _, c := range v.CPUs {
		n += len(c.From)
		worst = max(worst, c.Lat["max"])
	}
	if len(v.Summary.Pulls) == 0 || len(v.Summary.Pulls) != n || len(v.Summary.Isolated) == 0 || v.Summary.Worst == nil || v.Summary.Worst.MaxUS != worst {
		t.Errorf("summary %+v for %d pairs, worst %v", v.Summary, n, worst)
	}
	for _, p := range v.Summary.Pulls {
		if v.CPUs[p.Handler].From[itoa(p.Owner)] != p.Count {
			t.Errorf("pull %+v: remote_from says %d", p, v.CPUs[p.Handler].From[itoa(p.Owner)])
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestSimPictures(t *testing.T) {
	dir := t.TempDir()
	html, pf, trace := filepath.Join(dir, "run.html"), filepath.Join(dir, "run.json"), filepath.Join(dir, "run.txt")
	code, _, errs := runCmd("sim", "--quiet", "--cpus", "8", "--isolcpus", "1-7", "--policy", "pull", "--workload", "oslat",
		"--duration", "0.5", "--html", html, "--perfetto", pf, "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "Who ran whose timers") || !strings.Contains(string(page), `id="hist"`) {
		t.Errorf("page: %v\n%.300s", err, page)
	}
	b, err := os.ReadFile(pf)
	var v struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err != nil || json.Unmarshal(b, &v) != nil || len(v.TraceEvents) == 0 {
		t.Errorf("perfetto: %v, %d events", err, len(v.TraceEvents))
	}
	// --trace still gets the whole trace.
	if tb, err := os.ReadFile(trace); err != nil || !strings.Contains(string(tb), "# tracer: nop") {
		t.Errorf("trace: %v", err)
	}
	// A picture that cannot be written is refused before the run (bad
	// input, 2), and leaves nothing.
	code, _, errs = runCmd("sim", "--quiet", "--cpus", "4", "--workload", "idle", "--duration", "0.1", "--html", filepath.Join(dir, "no", "such", "dir", "x.html"))
	if code != 2 || !strings.Contains(errs, "--html: ") {
		t.Errorf("exit %d: %s", code, errs)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestReplayPictures(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join("..", "..", "testdata", "traces", "vm16-2node-isol-busy-sleepers.txt")
	html, pf := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.json")
	code, out, errs := runCmd("replay", "--html", html, "--perfetto", pf, rec)
	if code != 0 || !strings.Contains(out, "matched") {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "CPU 1 ran CPU 0&#39;s timers 6 times.") {
		t.Errorf("page: %v", err)
	}
	if b, err := os.ReadFile(pf); err != nil || !json.Valid(b) {
		t.Errorf("perfetto: %v", err)
	}
	// One picture per trace file.
	code, _, errs = runCmd("replay", "--html", html, rec, rec)
	if code != 2 || !strings.Contains(errs, "picture one trace file, not 2") {
		t.Errorf("two files: exit %d, %s", code, errs)
	}
	// A trace that cannot be read leaves the old picture as it was.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("# tracer: nop\n          <idle>-0       [000] d..2.     1.000000: tmigr_cpu_idle: cpu=x\n"), 0o644)
	before, _ := os.ReadFile(html)
	code, _, _ = runCmd("replay", "--html", html, bad)
	after, _ := os.ReadFile(html)
	if code != 2 || string(before) != string(after) {
		t.Errorf("a bad trace: exit %d, picture changed: %v", code, string(before) != string(after))
	}
}
