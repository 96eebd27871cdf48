package lab

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
)

// TestRecordEndToEnd boots a real 2-CPU guest under QEMU and records it for
// a second. It runs only when asked to (TMIGR_LAB=1) on a host that has
// what a recording needs without fetching anything: QEMU on PATH, and a
// kernel and a static busybox in the cache ($TMIGR_LAB_CACHE, default the
// recorder's). "tmigr lab record --cpus 2 -o /dev/null" once fills the
// cache.
func TestRecordEndToEnd(t *testing.T) {
	var missing []string
	if os.Getenv("TMIGR_LAB") != "1" {
		missing = append(missing, "TMIGR_LAB=1 in the environment")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		missing = append(missing, "qemu-system-x86_64 on PATH (package qemu-system-x86)")
	}
	host := Host{CacheDir: os.Getenv("TMIGR_LAB_CACHE"), NoInstall: true}
	f, err := newFetcher(host, func(string, ...any) {})
	if err != nil {
		t.Skipf("skipped: no cache directory: %v", err)
	}
	if _, ok := cachedKernel(filepath.Join(f.host.CacheDir, "kernels"), Generic, defaultSeries); !ok {
		missing = append(missing, "a cached generic kernel in "+filepath.Join(f.host.CacheDir, "kernels"))
	}
	if checkStatic(filepath.Join(f.host.CacheDir, "busybox", "busybox")) != nil {
		if p, err := exec.LookPath("busybox"); err != nil || checkStatic(p) != nil {
			missing = append(missing, "a static busybox in the cache or on PATH")
		}
	}
	if len(missing) > 0 {
		t.Skipf("skipped: the end-to-end recording needs %s", strings.Join(missing, ", "))
	}

	var progress, out bytes.Buffer
	s := Spec{
		CPUs:     2,
		Busy:     cpumask.Of(1),
		Sleepers: cpumask.Of(0),
		Duration: 1500 * time.Millisecond,
		Host:     host,
		Progress: &progress,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := Record(ctx, s, &out); err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	t.Logf("recorded in %v:\n%s", time.Since(start).Round(time.Millisecond), progress.String())

	r := ftrace.NewReader(bytes.NewReader(out.Bytes()))
	events := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		events++
	}
	h := r.Header()
	if m := h.Machine; m == nil || m.CPUs != 2 || m.Nodes != 1 || m.HZ != 250 ||
		!strings.HasPrefix(m.Kernel, defaultSeries+".") || m.Busy.String() != "1" || m.Sleepers.String() != "0" {
		t.Fatalf("machine %+v", h.Machine)
	}
	if h.Hierarchy == nil || h.Hierarchy.Levels != 1 {
		t.Errorf("boot line %+v", h.Hierarchy)
	}
	if events == 0 || h.Entries != int64(events) {
		t.Errorf("%d events, header %d", events, h.Entries)
	}
	tr, err := replay.Read(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if c := replay.CheckWheel(tr, 250); c.Matched != c.Checked {
		t.Errorf("wheel: %d/%d timer_start matched: %v", c.Matched, c.Checked, c.Mismatches)
	}
	if !strings.Contains(progress.String(), "events written") {
		t.Errorf("progress lacks the event count:\n%s", progress.String())
	}
}
