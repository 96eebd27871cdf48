package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// replayOut runs "tmigr replay ARGS..." and returns its output with the
// file names taken out, and its exit status.
func replayOut(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var o, e bytes.Buffer
	code := run(append([]string{"replay"}, args...), &o, &e)
	if code == 2 {
		t.Fatalf("replay %v: exit 2: %s", args, e.String())
	}
	out := o.String()
	for _, a := range args {
		out = strings.ReplaceAll(out, a+":", "FILE:")
	}
	return out, code
}

// perCPUConcat rewrites a recording as its per-CPU files concatenated
// (what "cat per_cpu/cpu1/trace per_cpu/cpu0/trace" gives): the header
// lines, then every line of CPU 1, then every line of CPU 0.
func perCPUConcat(t *testing.T, text string) string {
	var head, cpu0, cpu1 []string
	cpuOf := regexp.MustCompile(`^(?:CPU:(\d+) |##### CPU (\d+) |.*?-\d+ +\[0*(\d+)\] )`)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		m := cpuOf.FindStringSubmatch(l)
		switch {
		case m == nil:
			head = append(head, l)
		case m[1]+m[2]+m[3] == "1":
			cpu1 = append(cpu1, l)
		case m[1]+m[2]+m[3] == "0":
			cpu0 = append(cpu0, l)
		default:
			t.Fatalf("line %q of a CPU beyond 1", l)
		}
	}
	if len(cpu0) == 0 || len(cpu1) == 0 {
		t.Fatal("the recording does not have events of both CPUs")
	}
	return strings.Join(append(append(head, cpu1...), cpu0...), "\n") + "\n"
}

// TestReplayOutOfOrder (issue 14): a recording whose lines are out of
// time order, as per-CPU files concatenated are, replays as the recording
// itself, and a CPU whose time runs backwards is refused, naming the line.
func TestReplayOutOfOrder(t *testing.T) {
	orig := filepath.Join(labTraces, "mixed-3s.txt")
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(t.TempDir(), "cat.txt")
	if err := os.WriteFile(cat, []byte(perCPUConcat(t, string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	want, wcode := replayOut(t, orig)
	got, gcode := replayOut(t, cat)
	if got != want || gcode != wcode || wcode != 0 {
		t.Errorf("concatenated per-CPU lines (exit %d):\n%s\nthe recording (exit %d):\n%s", gcode, got, wcode, want)
	}

	// Two events of CPU 0 swapped: time runs backwards on one CPU.
	lines := strings.Split(string(data), "\n")
	var at []int
	for i, l := range lines {
		if strings.Contains(l, " [000] ") {
			at = append(at, i)
		}
	}
	i, j := at[10], at[11]
	lines[i], lines[j] = lines[j], lines[i]
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var o, e bytes.Buffer
	if code := run([]string{"replay", bad}, &o, &e); code != 2 ||
		!regexp.MustCompile(`line \d+: time goes backwards on CPU 0: .* on line \d+`).MatchString(e.String()) {
		t.Errorf("exit %d, stderr %q", code, e.String())
	}
}

// TestReplayForms: one recording of this project's development machine's
// kernel, read as the kernel's text, as trace-cmd's trace.dat (versions 7
// with zstd, and 6, gzip-compressed), from standard input and
// gzip-compressed, gives the same replay output; as trace-cmd report -N -l
// text, the same figures (its timer_start flags are libtraceevent's
// D|P|I, marked FlagsUnknown, so the reasons of the undetermined
// decisions may differ, and the nextevt check, which needs each timer's
// base, is undetermined).
func TestReplayForms(t *testing.T) {
	dir := filepath.Join("..", "..", "ftrace", "testdata", "tracecmd", "host2")
	text := filepath.Join(labTraces, "kvm2-1node-sleepers.txt")
	raw, err := os.ReadFile(text)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	gzText := filepath.Join(t.TempDir(), "text.gz")
	if err := os.WriteFile(gzText, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The trace.dat has no "# machine:" line: the flags say what the
	// text's line says.
	flags := []string{"--cpus", "2", "--hz", "250", "--kernel", "6.18.44"}
	want, code := replayOut(t, append(flags, text)...)
	if code != 0 || !strings.Contains(want, "wheel ") || !strings.Contains(want, "hrtimer ") {
		t.Fatalf("the text (exit %d): %s", code, want)
	}
	for _, f := range []string{
		filepath.Join(dir, "trace.dat"),
		filepath.Join(dir, "v6.dat.gz"),
		filepath.Join(dir, "report-Nl.txt.gz"),
		gzText,
		"-",
	} {
		if f == "-" {
			in, err := os.Open(filepath.Join(dir, "trace.dat"))
			if err != nil {
				t.Fatal(err)
			}
			stdin := os.Stdin
			os.Stdin = in
			defer func() { os.Stdin = stdin; in.Close() }()
		}
		got, code := replayOut(t, append(flags, f)...)
		if strings.Contains(f, "report") {
			// The nextevt check needs each timer's base, which the
			// unreliable flags hide: its decisions are undetermined
			// there, so it is left out of the comparison.
			got, want := withoutNextevt(strings.SplitN(got, "\n", 2)[0]), withoutNextevt(strings.SplitN(want, "\n", 2)[0])
			if got != want || code != 0 {
				t.Errorf("%s (exit %d): %s, the text: %s", f, code, got, want)
			}
			continue
		}
		if got != want || code != 0 {
			t.Errorf("%s (exit %d):\n%s\nthe text:\n%s", f, code, got, want)
		}
	}
}

// withoutNextevt drops the "nextevt M/N" figure from a replay summary line.
func withoutNextevt(line string) string {
	return regexp.MustCompile(`, nextevt [0-9]+/[0-9]+`).ReplaceAllString(line, "")
}

// TestReplayReportPlugin: trace-cmd report with its hrtimer plugin prints
// hrtimer_start without a mode; the replay must count the start-mode check
// undetermined, not compare the missing mode (read as 0, ABS) with the
// model's and report false mismatches.
func TestReplayReportPlugin(t *testing.T) {
	f := filepath.Join("..", "..", "ftrace", "testdata", "tracecmd", "host2", "report.txt.gz")
	got, code := replayOut(t, "--cpus", "2", "--hz", "250", "--kernel", "6.18.44", f)
	if code != 0 || strings.Contains(got, "mismatch") {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	if !strings.Contains(got, "start mode not in the trace") {
		t.Errorf("the missing mode is not counted undetermined:\n%s", got)
	}
}
