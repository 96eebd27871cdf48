package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostJSON mirrors the part of tmigr host --json that issue 12 fixes.
type hostJSON struct {
	Kernel     string   `json:"kernel"`
	Model      string   `json:"model"`
	CPUs       string   `json:"cpus"`
	Nodes      []string `json:"nodes"`
	Isolated   string   `json:"isolated"`
	NohzFull   string   `json:"nohz_full"`
	Partitions string   `json:"partitions"`
	Excluded   string   `json:"excluded"`
	Prediction *struct {
		Handlers string `json:"handlers"`
		Never    string `json:"never"`
		Groups   []struct {
			Group      string `json:"group"`
			Always     bool   `json:"always_migrator"`
			Candidates string `json:"candidates"`
			From       string `json:"pulls_from"`
		} `json:"groups"`
	} `json:"prediction"`
	Simulation *struct {
		Pulls []struct {
			Handler int `json:"handler"`
			Owner   int `json:"owner"`
			Count   int `json:"count"`
		} `json:"pulls"`
		IsolatedPullers string `json:"isolated_pullers"`
	} `json:"simulation"`
	Warnings []string `json:"warnings"`
}

func hostRun(t *testing.T, args ...string) (hostJSON, string) {
	t.Helper()
	code, out, errs := runCmd(append([]string{"host", "--json", "--duration", "2s"}, args...)...)
	if code != 0 {
		t.Fatalf("tmigr host %q: exit %d: %s", args, code, errs)
	}
	checkSchema(t, "host", out)
	var j hostJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("tmigr host %q: %v\n%s", args, err, out)
	}
	return j, out
}

func TestHostJSON(t *testing.T) {
	j, out := hostRun(t, "--root", "../../host/testdata/seed128-6.12")
	if j.Kernel != "6.12.118" || j.Model != "pull" || j.CPUs != "0-127" || len(j.Nodes) != 2 ||
		j.Isolated != "1-31,33-63,65-95,97-127" || j.NohzFull != "" || j.Partitions != "" || j.Excluded != "" {
		t.Errorf("JSON %+v", j)
	}
	if j.Simulation == nil || len(j.Simulation.Pulls) == 0 || j.Simulation.Pulls[0].Handler != 1 || j.Simulation.Pulls[0].Owner != 0 ||
		j.Simulation.Pulls[0].Count <= 0 {
		t.Errorf("simulation %+v", j.Simulation)
	}
	if p := j.Prediction; p == nil || p.Handlers != "1-7,33-39,65-71,97-103" || !strings.HasPrefix(p.Never, "0,8-32,") ||
		len(p.Groups) == 0 || p.Groups[0].Group != "GRP0:0" || !p.Groups[0].Always || p.Groups[0].Candidates != "1-7" || p.Groups[0].From != "0" {
		t.Errorf("prediction %+v", j.Prediction)
	}
	if len(j.Warnings) == 0 || !strings.Contains(out, `"isolated_handlers": "1-7,33-39,65-71,97-103"`) {
		t.Errorf("warnings %q", j.Warnings)
	}
	j2, _ := hostRun(t, "--root", "../../host/testdata/seed128-6.12", "--kernel", "7.3.0")
	if j2.Model != "pull-isolated" || j2.Excluded != "1-31,33-63,65-95,97-127" || j2.Simulation.IsolatedPullers != "" || j2.Prediction.Handlers != "0,32,64,96" {
		t.Errorf("--kernel 7.3.0: %+v", j2)
	}
	j3, _ := hostRun(t, "--root", "../../host/testdata/partition-7.3", "--workload", "idle")
	if j3.Partitions != "8-15" || j3.Excluded != "8-15" {
		t.Errorf("partition: %+v", j3)
	}
}

func TestHostText(t *testing.T) {
	code, out, errs := runCmd("host", "--root", "../../host/testdata/seed128-6.19", "--duration", "1s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"# machine: cpus=128 nodes=2 node-cpus=0-63;64-127 kernel=6.19.3 hz=250",
		"model pull-isolated",
		"Timer migration: 3 hierarchy levels; 8 children per group; 2 crossnode level",
		"1-31,33-63,65-95,97-127: isolcpus (domain): excluded since 6.19 (7dec062cfcf2)",
		"no isolated or nohz_full CPU ran another CPU's timers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestHostSave(t *testing.T) {
	dir := t.TempDir()
	src := "../../host/testdata/rpi5-nohz-unsupported"
	n := 0
	filepath.WalkDir(src, func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			n++
		}
		return nil
	})
	for _, dst := range []string{filepath.Join(dir, "snap"), filepath.Join(dir, "snap.tar.gz")} {
		code, out, errs := runCmd("host", "--root", src, "--save", dst)
		if code != 0 || !strings.Contains(out, fmt.Sprintf("saved %d files", n)) {
			t.Fatalf("--save %s: exit %d: %s%s", dst, code, out, errs)
		}
		a, _ := hostRun(t, "--root", src)
		b, _ := hostRun(t, "--root", dst)
		if a.Kernel != b.Kernel || a.Isolated != b.Isolated || len(a.Warnings) != len(b.Warnings) {
			t.Errorf("%s reads back differently: %+v / %+v", dst, a, b)
		}
		// A second save never replaces the first.
		before, _ := os.Stat(dst)
		if code, _, errs := runCmd("host", "--root", src, "--save", dst); code != 2 || errs == "" {
			t.Errorf("--save over %s: exit %d", dst, code)
		}
		if after, _ := os.Stat(dst); after.ModTime() != before.ModTime() || after.Size() != before.Size() {
			t.Errorf("%s changed", dst)
		}
	}
}

func TestHostBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "m")
	for p, v := range map[string]string{
		"proc/sys/kernel/osrelease":             "6.12.118\n",
		"sys/devices/system/cpu/possible":       "0-3\n",
		"sys/devices/system/cpu/online":         "0-9\n",
		"sys/devices/system/cpu/present":        "0-3\n",
		"sys/devices/system/node/node0/cpulist": "0-3\n",
	} {
		f := filepath.Join(bad, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, []byte(v), 0o644)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--root", bad}, "online CPUs 4-9 are not present"},
		{[]string{"--root", filepath.Join(dir, "nope")}, "--root"},
		{[]string{"--root", "../../host/testdata/seed128-6.12", "--workload", "bogus"}, "--workload"},
		{[]string{"--root", "../../host/testdata/seed128-6.12", "--duration", "0"}, "--duration"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		code, _, errs := runCmd(append([]string{"host"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

func TestHostUnknownKernel(t *testing.T) {
	var out, errb strings.Builder
	if rc := run([]string{"host", "--no-predict", "--kernel", "5.4"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "modelled") {
		t.Errorf("status %d: %s", rc, errb.String())
	}
}
