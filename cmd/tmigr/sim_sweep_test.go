package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func runOut(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

var sweepBase = []string{"sim", "--cpus", "8", "--nodes", "2", "--isolcpus", "1-3,5-7", "--workload", "oslat:1-3,5-7",
	"--duration", "0.5", "--warmup", "0.1"}

// A sweep's output is the same for 1 worker and for 3: one line per run
// in configuration order with its parameters and seed, then the
// summaries; every run is the single run of its flags, without the wall
// time.
func TestSimSweep(t *testing.T) {
	args := append(append([]string(nil), sweepBase...), "--seeds", "1-3", "--grid", "policy=pull,pull-isolated")
	one, stderr, code := runOut(t, append(args, "-j", "1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	three, _, _ := runOut(t, append(args, "-j=3")...)
	if one != three {
		t.Errorf("-j 1 and -j 3 differ:\n%s\n%s", one, three)
	}
	checkSchema(t, "sim-sweep", one)
	lines := strings.Split(strings.TrimSpace(one), "\n")
	if len(lines) != 6+2 {
		t.Fatalf("%d lines, want 6 runs and 2 summaries:\n%s", len(lines), one)
	}
	var l struct {
		Index, Of int
		Seed      uint64
		Params    map[string]string
		Run       map[string]any
	}
	if err := json.Unmarshal([]byte(lines[4]), &l); err != nil {
		t.Fatal(err)
	}
	if l.Index != 4 || l.Of != 6 || l.Seed != 2 || !reflect.DeepEqual(l.Params, map[string]string{"policy": "pull-isolated"}) {
		t.Errorf("line 4: %+v", l)
	}
	if _, ok := l.Run["wall_s"]; ok || l.Run["policy"] != "pull-isolated" || l.Run["seed"] != 2.0 {
		t.Errorf("line 4's run: policy %v seed %v wall %v", l.Run["policy"], l.Run["seed"], l.Run["wall_s"])
	}
	// The run is the single run of those flags.
	single, _, _ := runOut(t, append(append([]string(nil), sweepBase...), "--json", "--quiet", "--seed", "2", "--policy", "pull-isolated")...)
	checkSchema(t, "sim", single)
	var want map[string]any
	json.Unmarshal([]byte(single), &want)
	delete(want, "wall_s")
	if !reflect.DeepEqual(l.Run, want) {
		t.Errorf("the sweep's run differs from the single run of its flags")
	}
	if !strings.Contains(lines[6], `"summary":{"params":{"policy":"pull"},"runs":3,`) {
		t.Errorf("summary line: %.200s", lines[6])
	}

	// Shards, concatenated in any order and summarized, are the sweep.
	dir := t.TempDir()
	var files []string
	for _, s := range []string{"2/3", "0/3", "1/3"} {
		out, stderr, code := runOut(t, append(args, "--shard", s)...)
		if code != 0 || strings.Contains(out, `"summary":{"params"`) {
			t.Fatalf("shard %s: exit %d, %s", s, code, stderr)
		}
		f := filepath.Join(dir, strings.ReplaceAll(s, "/", "-"))
		os.WriteFile(f, []byte(out), 0o644)
		files = append(files, f)
	}
	got, stderr, code := runOut(t, append([]string{"sim", "--summarize"}, files...)...)
	if code != 0 || got != one {
		t.Errorf("--summarize of the shards: exit %d %s; differs from the sweep:\n%s", code, stderr, got)
	}
	if _, stderr, code := runOut(t, "sim", "--summarize", files[1], files[0]); code != 1 || !strings.Contains(stderr, "2 of 6 configurations are missing: 2-3") {
		t.Errorf("--summarize of 2 of 3 shards: exit %d, %s", code, stderr)
	}
}

// Bad sweeps are refused before anything runs, naming the configuration.
func TestSimSweepErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "1-2", "--grid", "cpus=8,x"}, `configuration 2 (cpus=x seed 1): invalid value "x" for flag -cpus`},
		{[]string{"--grid", "cost.tick=1us,fast"}, "configuration 1 (cost.tick=fast seed 1): --set: cost.tick: bad duration"},
		{[]string{"--grid", "nodes=2,9"}, "configuration 1 (nodes=9 seed 1): --nodes 9: more nodes than the 8 CPUs"},
		{[]string{"--seeds", "1-2", "--seed", "3"}, "--seed or --seeds, not both"},
		{[]string{"--seeds", "2-1"}, "bad range"},
		{[]string{"--grid", "seed=1,2"}, "use --seeds"},
		{[]string{"--grid", "json=true"}, "cannot sweep json"},
		{[]string{"--grid", "threads=1,2"}, "cannot sweep threads: the output does not depend on it"},
		{[]string{"--grid", "policy=pull", "--grid", "policy=push"}, "policy is swept twice"},
		{[]string{"--seeds", "1-2", "--trace", "t.txt"}, "--trace cannot be used in a sweep"},
		{[]string{"--seeds", "1-2", "--shard", "2/2"}, "0 <= I < N"},
		{[]string{"--seeds", "1-2", "-j", "x"}, `-j "x"`},
		{[]string{"--seeds"}, "flag needs an argument: -seeds"},
	} {
		_, stderr, code := runOut(t, append(append([]string(nil), sweepBase...), c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, stderr, code := runOut(t, "sim", "--summarize", "--seeds", "1"); code != 2 || !strings.Contains(stderr, "takes files") {
		t.Errorf("--summarize --seeds: exit %d, %s", code, stderr)
	}
}

// A sweep's runs get --threads=1 from more than one worker on, unless
// --threads is given.
func TestHasFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--cpus", "8", "--threads", "2"}, true},
		{[]string{"-threads=2"}, true},
		{[]string{"--cpus", "8", "--workload", "threads"}, false},
		{[]string{"--threadsx=1"}, false},
	} {
		if got := hasFlag(c.args, "threads"); got != c.want {
			t.Errorf("hasFlag(%v) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestSplitSweepArgs(t *testing.T) {
	sw, rest, err := splitSweepArgs([]string{"--cpus", "8", "-seeds=1-3", "--grid", "a=1", "-grid=b=2", "-j", "4", "--shard=1/2", "--json"})
	if err != nil || sw.seeds != "1-3" || !reflect.DeepEqual(sw.grids, []string{"a=1", "b=2"}) || sw.jobs != "4" || sw.shard != "1/2" ||
		!reflect.DeepEqual(rest, []string{"--cpus", "8", "--json"}) {
		t.Errorf("split: %+v %v %v", sw, rest, err)
	}
	if isSweep([]string{"--cpus", "8", "--seed", "3", "--workload", "idle"}) {
		t.Error("a single run was taken for a sweep")
	}
	if boolFlag([]string{"--quiet=false"}, "quiet") || !boolFlag([]string{"--x", "--quiet"}, "quiet") {
		t.Error("boolFlag")
	}
}

// --dry-run checks everything and says how long the run may take.
func TestSimDryRun(t *testing.T) {
	out, stderr, code := runOut(t, "sim", "--cpus", "8192", "--nodes", "64", "--workload", "oslat:1-8191", "--duration", "62", "--dry-run")
	if code != 0 || !strings.Contains(out, "the configuration is valid; it may take about") || !strings.Contains(out, "8192 CPUs x 63 s") {
		t.Errorf("exit %d, %q, %q", code, out, stderr)
	}
	if _, stderr, code := runOut(t, "sim", "--cpus", "8", "--workload", "oslat:9", "--dry-run"); code != 2 || stderr == "" {
		t.Errorf("a bad configuration passed the dry run: exit %d", code)
	}
}

// Interrupted, a run prints the report of what it simulated, marked
// partial, and exits 130; one estimated over a minute warns first.
func TestSimInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, asJSON := range []bool{false, true} {
		args := []string{"--cpus", "1024", "--nodes", "8", "--workload", "oslat:1-127", "--duration", "4000"}
		if asJSON {
			args = append(args, "--json")
		}
		var out, errb bytes.Buffer
		code := runSimContext(ctx, args, &out, &errb)
		if code != exitInterrupted || !strings.Contains(errb.String(), "interrupted: the report covers 0.000 s") {
			t.Errorf("exit %d, %s", code, errb.String())
		}
		if !strings.Contains(errb.String(), "this run may take about 2m") {
			t.Errorf("no warning before a long run: %s", errb.String())
		}
		if asJSON {
			checkSchema(t, "sim", out.String())
		}
		if asJSON && !strings.Contains(out.String(), `"partial":true`) || !asJSON && !strings.HasPrefix(out.String(), "# PARTIAL:") {
			t.Errorf("the report is not marked partial:\n%.300s", out.String())
		}
	}
	// --quiet: no warning.
	var out, errb bytes.Buffer
	runSimContext(ctx, []string{"--cpus", "1024", "--workload", "idle", "--duration", "4000", "--quiet"}, &out, &errb)
	if strings.Contains(errb.String(), "may take") {
		t.Errorf("--quiet warned: %s", errb.String())
	}
}
