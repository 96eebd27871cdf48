package conformance

import (
	"bytes"
	"context"
	"fmt"
	"github.com/tmigr/tmigr/lab"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var tracesDir = filepath.Join("..", "testdata", "traces")

// readmeFlags returns the "tmigr lab record" flags testdata/traces/README.md
// gives for each recording it lists.
func readmeFlags(t *testing.T) map[string]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(tracesDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "| "), " | `")
		if ok && strings.HasSuffix(name, ".txt") {
			out[name], _, _ = strings.Cut(rest, "`")
		}
	}
	return out
}

// TestMatrixShapes: every shape is a valid spec, names are unique, and a
// shape whose recording testdata/traces/README.md lists is recorded with
// the flags the README gives.
func TestMatrixShapes(t *testing.T) {
	flags := readmeFlags(t)
	names, files := map[string]bool{}, map[string]bool{}
	for _, sh := range Matrix() {
		if names[sh.Name] || files[sh.File] {
			t.Errorf("shape %s (%s) twice", sh.Name, sh.File)
		}
		names[sh.Name], files[sh.File] = true, true
		if err := sh.Spec.Validate(); err != nil {
			t.Errorf("shape %s: %v", sh.Name, err)
		}
		if f, ok := flags[sh.File]; ok && f != sh.Flags() {
			t.Errorf("shape %s: README: %q, matrix: %q", sh.Name, f, sh.Flags())
		}
	}
	if len(flags) < 7 {
		t.Errorf("README lists %d recordings with their flags", len(flags))
	}
	// The matrix the issue asks for.
	for _, n := range []string{"2", "9", "16x2", "18x2", "24-nohzfull", "40-isol", "64x4", "rt8"} {
		if !names[n] {
			t.Errorf("no shape %s", n)
		}
	}
	if got, err := SelectShapes([]string{"9", "2", "9"}); err != nil || len(got) != 2 || got[0].Name != "9" || got[1].Name != "2" {
		t.Errorf("SelectShapes(9,2,9) = %v, %v", got, err)
	}
	if _, err := SelectShapes([]string{"7"}); err == nil || !strings.Contains(err.Error(), "40-isol") {
		t.Errorf("SelectShapes(7): %v", err)
	}
	sh := Shape{Spec: lab.Spec{CPUs: 4, Kernel: lab.RT, Cmdline: "isolcpus=1 nohz_full=1", Busy: mask("1"), Period: time.Millisecond, Absolute: true, Duration: time.Second}}
	if f := sh.Flags(); f != "--kernel rt --cpus 4 --cmdline 'isolcpus=1 nohz_full=1' --busy 1 --period 1ms --abs --duration 1s" {
		t.Errorf("flags %q", f)
	}
}

// TestMatrixNoRecord checks recordings of testdata/traces as "tmigr lab
// matrix --no-record" does and writes the document.
func TestMatrixNoRecord(t *testing.T) {
	var progress bytes.Buffer
	rows, err := RunMatrix(context.Background(), MatrixOptions{Shapes: []string{"2", "rt8", "40-isol"}, Dir: tracesDir, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || Mismatched(rows) {
		t.Fatalf("%d rows, mismatched %v", len(rows), Mismatched(rows))
	}
	var doc bytes.Buffer
	if err := WriteConformance(&doc, rows, "testdata/traces", "go run ./cmd/tmigr lab matrix --no-record"); err != nil {
		t.Fatal(err)
	}
	d := doc.String()
	for _, r := range rows {
		c, m, u, x := r.Totals()
		if c != m+u+x || m == 0 {
			t.Errorf("shape %s: %d checked, %d matched, %d undetermined, %d mismatched", r.Shape.Name, c, m, u, x)
		}
		row := fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d |", r.Shape.Name, r.Kernel, r.Events, c, m, u, x)
		if !strings.Contains(d, row) {
			t.Errorf("the document lacks %q", row)
		}
		if !strings.Contains(d, "| "+r.Shape.File+" | `"+r.Shape.Flags()+"` |") {
			t.Errorf("the document lacks the flags of %s", r.Shape.Name)
		}
	}
	if rows[1].Result.Hrtimer == nil || rows[0].Result.Hrtimer != nil || !strings.Contains(rows[1].Kernel, "PREEMPT_RT") {
		t.Errorf("hrtimer check: rt8 %v, 2 %v; kernel %q", rows[1].Result.Hrtimer, rows[0].Result.Hrtimer, rows[1].Kernel)
	}
	for _, want := range []string{"No mismatch", "sim (recorded background)", "vm40-1node-isol-busy.txt\n  machine:", "\n    go run ./cmd/tmigr lab matrix --no-record\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("the document lacks %q", want)
		}
	}
	if strings.Contains(d, "..") {
		t.Error("the document names a path outside the repository")
	}
	if !strings.Contains(progress.String(), "shape 40-isol:") {
		t.Errorf("progress: %q", progress.String())
	}
}

// TestMatrixMismatch: a recording with one decision changed makes the
// matrix report the mismatch, at its line.
func TestMatrixMismatch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(tracesDir, "vm8-1node-rt-fifo-other-sleepers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	line := 0
	for i, l := range lines {
		if strings.Contains(l, "function=hrtimer_wakeup") && strings.Contains(l, "mode=REL|HARD") {
			lines[i] = strings.Replace(l, "mode=REL|HARD", "mode=REL", 1)
			line = i + 1
			break
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vm8-1node-rt-fifo-other-sleepers.txt"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := RunMatrix(context.Background(), MatrixOptions{Shapes: []string{"rt8"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !Mismatched(rows) {
		t.Fatal("no mismatch found")
	}
	var doc bytes.Buffer
	if err := WriteConformance(&doc, rows, "x", "y"); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("- rt8, hrtimer, line %d: hrtimer_start: kernel mode=REL", line); !strings.Contains(doc.String(), want) {
		t.Errorf("the document lacks %q:\n%s", want, doc.String())
	}

	// A missing recording names the command that makes it.
	if _, err := RunMatrix(context.Background(), MatrixOptions{Shapes: []string{"2"}, Dir: dir}); err == nil ||
		!strings.Contains(err.Error(), "tmigr lab record --cpus 2 --busy 1 --sleepers 0 --duration 3s") {
		t.Errorf("missing recording: %v", err)
	}
	if _, err := RunMatrix(context.Background(), MatrixOptions{Shapes: []string{"2"}}); err == nil {
		t.Error("no directory: no error")
	}
}

// TestMatrixRecord records the CI shape (2 CPUs, 1 s) under QEMU and checks
// it. It runs only with TMIGR_LAB=1 on a host with QEMU; it fetches what
// the cache lacks.
func TestMatrixRecord(t *testing.T) {
	if os.Getenv("TMIGR_LAB") != "1" {
		t.Skip("skipped: recording a guest needs TMIGR_LAB=1 in the environment (and QEMU; it fetches a kernel)")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("skipped: recording a guest needs qemu-system-x86_64 on PATH (package qemu-system-x86)")
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rows, err := RunMatrix(ctx, MatrixOptions{Shapes: []string{"2"}, Dir: dir, Record: true, Duration: time.Second,
		Host: lab.Host{CacheDir: os.Getenv("TMIGR_LAB_CACHE")}, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(rows) != 1 || rows[0].Record == 0 || Mismatched(rows) {
		t.Fatalf("rows %+v", rows)
	}
	if _, m, _, _ := rows[0].Totals(); m == 0 {
		t.Error("nothing matched")
	}
	t.Logf("recorded and checked in %v", rows[0].Record)
}
