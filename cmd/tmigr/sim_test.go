package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
)

// Bad input is a clear error naming the problem, with exit status 2.
func TestSimErrors(t *testing.T) {
	base := []string{"sim", "--quiet", "--duration", "0.1"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad cpulist", []string{"--cpus", "8", "--isolcpus", "1-x", "--workload", "idle"}, "--isolcpus: "},
		{"cpulist beyond the machine", []string{"--cpus", "8", "--nohz-full", "4-9", "--workload", "idle"}, "--nohz-full: "},
		{"isolating every CPU", []string{"--cpus", "4", "--isolcpus", "0-3", "--workload", "idle"}, "isolate every CPU"},
		{"isolcpus and nohz_full cover all", []string{"--cpus", "4", "--isolcpus", "0-1", "--nohz-full", "2-3", "--workload", "idle"}, "isolate every CPU"},
		{"partition takes the rest", []string{"--cpus", "4", "--isolcpus", "1-3", "--isolated-partition", "0", "--workload", "idle"}, "no housekeeping CPU"},
		{"no CPUs", []string{"--cpus", "0", "--workload", "idle"}, "--cpus must be 1 to 8192"},
		{"too many CPUs", []string{"--cpus", "9000", "--workload", "idle"}, "--cpus must be 1 to 8192"},
		{"more nodes than CPUs", []string{"--cpus", "4", "--nodes", "5", "--workload", "idle"}, "more nodes than the 4 CPUs"},
		{"too many nodes", []string{"--cpus", "128", "--nodes", "65", "--workload", "idle"}, "at most 64 nodes"},
		{"unknown workload", []string{"--cpus", "4", "--workload", "stress-ng"}, `unknown workload "stress-ng"`},
		{"no workload", []string{"--cpus", "4"}, "--workload is required"},
		{"unknown policy", []string{"--cpus", "4", "--policy", "pul", "--workload", "idle"}, `unknown policy "pul"`},
		{"bad kernel", []string{"--cpus", "4", "--kernel", "linux", "--workload", "idle"}, "--kernel: "},
		{"bad sysctl", []string{"--cpus", "4", "--at", "1s timer_migration=2", "--workload", "idle"}, "timer_migration"},
		{"unknown platform", []string{"--cpus", "4", "--platform", "pdp11", "--workload", "idle"}, `unknown platform "pdp11"`},
		{"unknown parameter", []string{"--cpus", "4", "--set", "cost.nope=1us", "--workload", "idle"}, `unknown parameter "cost.nope"`},
		{"bad parameter value", []string{"--cpus", "4", "--set", "cost.tick=fast", "--workload", "idle"}, "cost.tick: bad duration"},
		{"bad duration", []string{"--cpus", "4", "--duration", "soon", "--workload", "idle"}, "--duration: bad duration"},
		{"bad hz", []string{"--cpus", "4", "--hz", "7", "--workload", "idle"}, "--hz 7"},
		{"bad sleepers", []string{"--cpus", "4", "--sleepers", "some", "--workload", "idle"}, `unknown rule "some"`},
		{"bad action", []string{"--cpus", "4", "--at", "1s reboot 2", "--workload", "idle"}, `unknown change "reboot"`},
		{"action CPU out of range", []string{"--cpus", "4", "--at", "1s offline 4", "--workload", "idle"}, "is not a CPU of 0-3"},
		{"workload list out of range", []string{"--cpus", "4", "--workload", "oslat:2-5"}, "beyond the last CPU 3"},
		{"missing params file", []string{"--cpus", "4", "--params", "no-such-file", "--workload", "idle"}, "--params: "},
		{"stray argument", []string{"--cpus", "4", "--workload", "idle", "extra"}, `unexpected argument "extra"`},
		// Each of these was taken without a word, or with a wrong one.
		{"NaN duration", []string{"--cpus", "4", "--duration", "NaN", "--workload", "idle"}, `--duration: "NaN" is not a number of seconds`},
		{"NaN warm-up", []string{"--cpus", "4", "--warmup", "nan", "--workload", "idle"}, `--warmup: "nan" is not a number of seconds`},
		{"action after the end", []string{"--cpus", "4", "--at", "5s offline 3", "--workload", "idle"}, `action "5s offline 3": at or after the run's end at 1.1s`},
		{"action at the end", []string{"--cpus", "4", "--at", "1.1 offline 3", "--workload", "idle"}, "at or after the run's end"},
		{"no nodes", []string{"--cpus", "4", "--nodes", "0", "--workload", "idle"}, "--nodes must be at least 1 (got 0)"},
		{"negative nodes", []string{"--cpus", "4", "--nodes", "-1", "--workload", "idle"}, "--nodes must be at least 1 (got -1)"},
		{"empty oslat list", []string{"--cpus", "8", "--workload", "oslat:"}, "selects no CPU"},
		{"isolcpus selecting none", []string{"--cpus", "8", "--isolcpus", "0-7:0/2", "--workload", "idle"}, `--isolcpus: "0-7:0/2" selects no CPU`},
		{"negative threads", []string{"--cpus", "4", "--threads", "-1", "--workload", "idle"}, "--threads must be at least 0 (got -1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCmd(append(base, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) || out != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want 2 and %q", code, errs, out, tc.want)
			}
		})
	}
}

func TestSimOslatReport(t *testing.T) {
	args := []string{"sim", "--quiet", "--cpus", "16", "--nodes", "2", "--isolcpus", "1-7,9-15", "--policy", "pull",
		"--workload", "oslat", "--duration", "1", "--seed", "4", "--check"}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"oslat V 2.10\n", "CPU list: \t\t1-7,9-15\n", "     Maximum:\t", "# tmigr sim: 16 CPUs on 2 node(s), HZ=250, policy pull",
		"remote_from(cpu:timers)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The same seed prints the same, byte for byte.
	if _, again, _ := runCmd(args...); again != out {
		t.Error("same seed, different output")
	}
}

func TestSimJSON(t *testing.T) {
	code, out, errs := runCmd("sim", "--quiet", "--cpus", "2", "--workload", "cyclictest:stress=2", "--duration", "0.5",
		"--preempt-rt", "--platform", "atom-e3825", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "sim", out)
	var v struct {
		Machine   map[string]any `json:"machine"`
		Policy    string         `json:"policy"`
		DurationS float64        `json:"duration_s"`
		Seed      uint64         `json:"seed"`
		Events    uint64         `json:"events"`
		WallS     *float64       `json:"wall_s"`
		CPUs      []struct {
			CPU       int                `json:"cpu"`
			LatencyUS map[string]float64 `json:"latency_us"`
			Wakeups   *uint64            `json:"wakeups"`
			Ticks     *uint64            `json:"ticks"`
			BusyPct   *float64           `json:"busy_pct"`
			Remote    *uint64            `json:"remote_expired"`
			From      map[string]uint64  `json:"remote_from"`
		} `json:"cpus"`
		Workload map[string]json.RawMessage `json:"workload"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Machine["cpus"] != 2.0 || v.Machine["preempt_rt"] != true || v.Policy != "pull-isolated" || v.DurationS != 0.5 ||
		v.Seed != 1 || v.Events == 0 || v.WallS == nil || len(v.CPUs) != 2 {
		t.Fatalf("JSON %s", out)
	}
	for _, c := range v.CPUs {
		if c.LatencyUS["max"] <= 0 || c.Wakeups == nil || c.Ticks == nil || c.BusyPct == nil || c.Remote == nil || c.From == nil {
			t.Errorf("CPU entry %+v", c)
		}
	}
	if _, ok := v.Workload["cyclictest"]; !ok {
		t.Errorf("no cyclictest section: %v", v.Workload)
	}
}

// --threads changes the speed only: 1024 busy CPUs give the same JSON,
// but for the wall time, on one goroutine, two and the default.
func TestSimThreadsSameOutput(t *testing.T) {
	var want string
	for _, th := range []string{"1", "2", "0"} {
		code, out, errs := runCmd("sim", "--quiet", "--cpus", "1024", "--nodes", "8", "--workload", "oslat:1-127,129-1023",
			"--duration", "0.1", "--warmup", "0.05", "--json", "--threads", th)
		if code != 0 {
			t.Fatalf("--threads %s: exit %d: %s", th, code, errs)
		}
		checkSchema(t, "sim", out)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "wall_s")
		b, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		if want == "" {
			want = string(b)
		} else if string(b) != want {
			t.Errorf("--threads %s: the JSON differs from --threads 1's", th)
		}
	}
}

// --explain prints every parameter in the --params format: what it prints
// reads back, and an edited copy changes the run.
func TestExplainAndParams(t *testing.T) {
	code, out, errs := runCmd("sim", "--explain", "--platform", "zynq-7020")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"platform zynq-7020", "cost.tick = lognormal(", "hk.driver.heavy_prob = 0.02", "kernbench.work = 6m35s", "panic.sample_hz = 4000"} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain lacks %q", want)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "p.params")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, again, errs := runCmd("sim", "--explain", "--platform", "zynq-7020", "--params", f)
	if code != 0 || again != out {
		t.Fatalf("reading --explain back changed it (exit %d, %s)", code, errs)
	}
	edited := strings.Replace(out, "hk.driver.heavy_prob = 0.02", "hk.driver.heavy_prob = 0.5", 1)
	if err := os.WriteFile(f, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, third, _ := runCmd("sim", "--explain", "--platform", "zynq-7020", "--params", f)
	if !strings.Contains(third, "hk.driver.heavy_prob = 0.5") {
		t.Error("an edited parameter file did not apply")
	}
}

func TestSimActionsAndTrace(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.txt")
	code, out, errs := runCmd("sim", "--quiet", "--cpus", "8", "--nodes", "2", "--workload", "kernbench:4", "--duration", "3",
		"--set", "kernbench.work=2s", "--set", "kernbench.serial=100ms", "--check",
		"--at", "1.2s offline 3", "--at", "1.5 online 3", "--at", "1.7s partition 4-5", "--trace", trace)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "kernbench: make -j4 on 8 CPUs: elapsed") {
		t.Errorf("output:\n%s", out)
	}
	b, err := os.ReadFile(trace)
	if err != nil || !strings.Contains(string(b), "# tracer: nop") || !strings.Contains(string(b), "tmigr_cpu_unavailable: cpu=3") {
		t.Errorf("trace: %v\n%.500s", err, b)
	}
}

func FuzzParseAction(f *testing.F) {
	for _, s := range []string{"1s offline 3", "1.5 online 0", "2s partition 4-5", "3s partition none", "0s timer_migration=0", "2s timer_migration=1", "1s", "x offline 1", "1s offline -1", "1s partition 1-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseAction(s, 8)
		if err != nil {
			return
		}
		if a.At < 0 || a.CPU < 0 || a.CPU >= 8 {
			t.Fatalf("%q parsed to an impossible action %+v", s, a)
		}
		if back, err := parseAction(a.String(), 8); err != nil || back.Kind != a.Kind || back.CPU != a.CPU || !back.Mask.Equal(a.Mask) || back.On != a.On {
			t.Fatalf("%q -> %q -> %+v, %v", s, a.String(), back, err)
		}
	})
}

func TestParseSeconds(t *testing.T) {
	for in, want := range map[string]float64{"62": 62, "62s": 62, "1.5": 1.5, "500ms": 0.5, "2m": 120} {
		d, err := parseSeconds("--duration", in)
		if err != nil || d.Seconds() != want {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v s", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "1e9", "soon", "-2s", "NaN", "nan", "Inf", "-Inf", "+Inf"} {
		if _, err := parseSeconds("--duration", bad); err == nil {
			t.Errorf("parseSeconds(%q) accepted", bad)
		}
	}
}

// A run that fails leaves the file --trace names as it was: the trace is
// written to a temporary file and renamed over it only on success.
func TestSimTraceKeptOnFailure(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.txt")
	if err := os.WriteFile(trace, []byte("a good trace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Taking the only housekeeping CPU offline fails the run at 0.5 s.
	code, _, errs := runCmd("sim", "--quiet", "--cpus", "1", "--workload", "idle", "--duration", "1", "--at", "0.5 offline 0", "--trace", trace)
	if code != 1 || !strings.Contains(errs, "offline 0") {
		t.Fatalf("exit %d, %q; want the run to fail", code, errs)
	}
	if b, _ := os.ReadFile(trace); string(b) != "a good trace\n" {
		t.Errorf("the failed run left %q in the trace file", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	// A run that succeeds replaces it, keeping its permissions.
	if code, _, errs := runCmd("sim", "--quiet", "--cpus", "2", "--workload", "idle", "--duration", "0.2", "--trace", trace); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(trace)
	st, _ := os.Stat(trace)
	if !strings.HasPrefix(string(b), "# machine: cpus=2 ") || st.Mode().Perm() != 0o600 {
		t.Errorf("trace %v %.60q", st.Mode(), b)
	}
	// A trace that cannot be written is refused before the run.
	code, _, errs = runCmd("sim", "--quiet", "--cpus", "2", "--workload", "idle", "--duration", "0.2", "--trace", filepath.Join(dir, "no", "such", "dir", "t.txt"))
	if code != 2 || !strings.Contains(errs, "--trace: ") {
		t.Errorf("exit %d, %q", code, errs)
	}
}

// TestSimByKernel: --kernel picks the model. On the seed machine's shapes
// (the 16x2 isolcpus one here; the 128-CPU one in the report) busy isolated
// CPUs pull the housekeeping CPUs' timers under 6.12 and none does under
// 6.19 or 7.3; --policy overrides the kernel; the default is the newest.
func TestSimByKernel(t *testing.T) {
	pullers := func(args ...string) string {
		t.Helper()
		var o, e strings.Builder
		base := []string{"sim", "--quiet", "--duration", "3", "--cpus", "16", "--nodes", "2", "--isolcpus", "1-7,9-15", "--workload", "oslat"}
		if code := run(append(base, args...), &o, &e); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, e.String())
		}
		for _, l := range strings.Split(o.String(), "\n") {
			if strings.HasPrefix(l, "# isolated CPUs that ran other CPUs' timers:") {
				return strings.TrimSpace(strings.TrimPrefix(l, "# isolated CPUs that ran other CPUs' timers:"))
			}
		}
		t.Fatalf("%v: no summary line in %q", args, o.String())
		return ""
	}
	old := pullers("--kernel", "6.12")
	if !strings.Contains(old, "CPU 1 (") || !strings.Contains(old, "CPU 9 (") {
		t.Errorf("6.12: isolated pullers %q, want CPUs 1 and 9 (the lowest of each housekeeping CPU's group)", old)
	}
	for _, k := range []string{"6.19", "7.3.4"} {
		if got := pullers("--kernel", k); got != "none" {
			t.Errorf("%s: isolated pullers %q, want none", k, got)
		}
	}
	if got := pullers(); got != "none" {
		t.Errorf("default kernel: isolated pullers %q, want none", got)
	}
	if got := pullers("--kernel", "7.3", "--policy", "pull"); got != old {
		t.Errorf("7.3 with --policy pull: %q, want 6.12's %q", got, old)
	}
}

// The summary's run is one history; beside it, the candidates the
// kernel's rules allow, which hold the simulated pullers.
func TestSimPrediction(t *testing.T) {
	args := []string{"sim", "--cpus", "40", "--isolcpus", "1-9,11-39", "--kernel", "6.12", "--workload", "oslat", "--duration", "1s"}
	code, out, errs := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"# that is one history",
		"#   GRP0:0 (CPUs 0-7): always has a migrator, one of isolated CPUs 1-7 (busy; whichever became active first): the timers of CPU 0\n",
		"#   CPUs that may run other CPUs' timers: 1-9,11-15\n",
		"#   never: 0,10,16-39\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	code, out, errs = runCmd(append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	checkSchema(t, "sim", out)
	var j struct {
		Summary struct {
			Pulls []struct {
				Handler int `json:"handler"`
			} `json:"pulls"`
		} `json:"summary"`
		Prediction struct {
			Handlers string `json:"handlers"`
			Never    string `json:"never"`
			Phases   []struct {
				Prediction struct {
					Groups []struct {
						Group      string `json:"group"`
						Candidates string `json:"candidates"`
					} `json:"groups"`
				} `json:"prediction"`
			} `json:"phases"`
		} `json:"prediction"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if j.Prediction.Handlers != "1-9,11-15" || j.Prediction.Never != "0,10,16-39" || len(j.Prediction.Phases) != 1 ||
		j.Prediction.Phases[0].Prediction.Groups[1].Candidates != "8-9,11-15" {
		t.Errorf("prediction %+v", j.Prediction)
	}
	handlers, _ := cpumask.Parse(j.Prediction.Handlers)
	if len(j.Summary.Pulls) == 0 {
		t.Error("no simulated pull")
	}
	for _, p := range j.Summary.Pulls {
		if !handlers.Test(p.Handler) {
			t.Errorf("simulated puller %d is not among the handlers %s", p.Handler, handlers)
		}
	}
}
