package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/replay"
)

// TestToolsInGuests runs tmigr itself in two guests of the same shape (4
// CPUs, isolcpus=2-3 with busy isolated CPUs, a TCP load on housekeeping
// CPU 1 whose delayed-ACK timers expire while CPU 1 idles), one of 6.12 and
// one of 7.3, and checks what their rules say: on 6.12 an isolated CPU is
// GRP0:0's migrator and runs CPU 1's timers, so tmigr top names it with
// why, and the exporter's foreign-on-isolated counter rises; on 7.3 the
// isolated CPUs are out of the hierarchy and both stay at zero. On both,
// tmigr record's file replays without a mismatch, tmigr host --verify
// passes, and every command left tracefs as it found it.
//
// It runs only when asked to (TMIGR_LAB=1, as TestRecordEndToEnd) with
// QEMU on PATH and both kernels cached ($TMIGR_LAB_CACHE): "tmigr lab
// record --kernel-version 6.12 ..." and "--kernel-version 7.3" fill it.
func TestToolsInGuests(t *testing.T) {
	if os.Getenv("TMIGR_LAB") != "1" {
		t.Skip("skipped: the guests run only with TMIGR_LAB=1 in the environment")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("skipped: no qemu-system-x86_64 on PATH (package qemu-system-x86)")
	}
	host := Host{CacheDir: os.Getenv("TMIGR_LAB_CACHE"), NoInstall: true}
	for _, tc := range []struct {
		series string
		pulls  bool // the isolated CPUs pull (before 6.19)
	}{{"6.12", true}, {"7.3", false}} {
		t.Run(tc.series, func(t *testing.T) {
			f, err := newFetcher(host, func(string, ...any) {})
			if err != nil {
				t.Skipf("skipped: no cache directory: %v", err)
			}
			if _, ok := cachedKernel(filepath.Join(f.host.CacheDir, "kernels"), Generic, tc.series); !ok {
				t.Skipf("skipped: no cached %s kernel in %s", tc.series, f.host.CacheDir)
			}
			dir := t.TempDir()
			s := Spec{
				CPUs: 4, Cmdline: "isolcpus=2-3", Busy: cpumask.MustParse("2-3"),
				Sleepers: cpumask.Of(0), TCP: cpumask.Of(1), Period: 60 * time.Millisecond,
				Duration: time.Second, KernelVersion: tc.series, Host: host, ToolsDir: dir,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if err := RecordFile(ctx, s, filepath.Join(dir, "raw.txt")); err != nil {
				t.Fatal(err)
			}
			checkTools(t, dir, tc.pulls)
		})
	}
}

// checkTools checks the outputs of a guest's tools phase.
func checkTools(t *testing.T, dir string, pulls bool) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, cmd := range []string{"record", "top", "exporter", "verify"} {
		if rc := strings.TrimSpace(read(cmd + ".rc")); rc != "0" {
			t.Errorf("%s exited %s", cmd, rc)
		}
	}
	if t.Failed() {
		t.Logf("verify:\n%s", read("verify.txt"))
	}
	if b, a := read("tracefs-before.txt"), read("tracefs-after.txt"); b != a {
		t.Errorf("tracefs changed:\nbefore:\n%s\nafter:\n%s", b, a)
	}

	tr, err := replay.ReadFile(filepath.Join(dir, "record.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) == 0 {
		t.Error("tmigr record wrote no events")
	}
	res, err := replay.Run(tr, replay.Options{Wheel: true, Tmigr: true, Placement: true, Hrtimer: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mismatched() {
		t.Errorf("tmigr record's file replays with mismatches: %+v", res)
	}

	// top: per period, the foreign timers of the isolated CPUs.
	var foreign uint64
	var named bool
	sc := bufio.NewScanner(strings.NewReader(read("top.json")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	periods := 0
	for sc.Scan() {
		var p struct {
			ForeignOnIsolated uint64 `json:"foreign_on_isolated"`
			CPUs              []struct {
				CPU         int      `json:"cpu"`
				Class       string   `json:"class"`
				InHierarchy bool     `json:"in_hierarchy"`
				MigratorOf  []string `json:"migrator_of"`
				Foreign     uint64   `json:"foreign"`
				Why         string   `json:"why"`
			} `json:"cpus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("top.json: %v", err)
		}
		periods++
		foreign += p.ForeignOnIsolated
		for _, c := range p.CPUs {
			if c.Class != "isolated" {
				continue
			}
			if c.InHierarchy != pulls {
				t.Errorf("top: isolated CPU %d in the hierarchy: %v", c.CPU, c.InHierarchy)
			}
			if c.Foreign > 0 && len(c.MigratorOf) > 0 && strings.Contains(c.Why, "isolated") {
				named = true
			}
		}
	}
	if periods == 0 {
		t.Error("top printed no period")
	}
	if pulls && (foreign == 0 || !named) {
		t.Errorf("top: %d foreign timers on isolated CPUs, an isolated migrator named with why: %v", foreign, named)
	}
	if !pulls && foreign != 0 {
		t.Errorf("top: %d foreign timers on isolated CPUs", foreign)
	}

	// The exporter: the counter rises between the scrapes on 6.12, stays
	// at zero on 7.3.
	m0, m1 := sumMetric(t, read("metrics-0.txt"), "tmigr_foreign_timer_on_isolated_total"), sumMetric(t, read("metrics-1.txt"), "tmigr_foreign_timer_on_isolated_total")
	if pulls && !(m1 > m0) {
		t.Errorf("exporter: foreign on isolated %v then %v: did not rise", m0, m1)
	}
	if !pulls && (m0 != 0 || m1 != 0) {
		t.Errorf("exporter: foreign on isolated %v then %v", m0, m1)
	}
	if !strings.Contains(read("verify.txt"), "verify: passed") || strings.Contains(read("verify.txt"), "verify: failed") {
		t.Errorf("host --verify:\n%s", read("verify.txt"))
	}
}

// sumMetric adds the samples of a metric in Prometheus's text format.
func sumMetric(t *testing.T, text, name string) float64 {
	t.Helper()
	var sum float64
	found := false
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		sum += v
		found = true
	}
	if !found {
		t.Fatalf("no %s in the metrics", name)
	}
	return sum
}
