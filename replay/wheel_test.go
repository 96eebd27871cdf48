package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func traceFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../testdata/traces/*.txt")
	if len(files) == 0 {
		t.Fatal("no traces in testdata/traces")
	}
	return files
}

// readTrace reads a recording and the shape of its machine.
func readTrace(t *testing.T, f string) (*Trace, Shape) {
	t.Helper()
	tr, err := ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := shapeOf(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, s
}

// TestWheelTraces: every timer_start of the recordings is reproduced by our
// wheel, none left undetermined.
func TestWheelTraces(t *testing.T) {
	total := 0
	for _, f := range traceFiles(t) {
		tr, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := CheckWheel(tr, tr.Header.Machine.HZ)
		t.Logf("%s: wheel %d/%d matched, %d undetermined", filepath.Base(f), c.Matched, c.Checked, c.Undetermined)
		if c.Checked == 0 || c.Matched != c.Checked {
			t.Errorf("%s: %d/%d matched, %d undetermined, mismatches %v", f, c.Matched, c.Checked, c.Undetermined, c.Mismatches)
		}
		total += c.Checked
	}
	if total < 1600 {
		t.Errorf("only %d timer_start events checked", total)
	}
}

// TestWheelCatchesMismatch: a bucket the kernel could not have chosen is
// reported with its line.
func TestWheelCatchesMismatch(t *testing.T) {
	b, err := os.ReadFile("../testdata/traces/cpu0-busy-3s.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The first timer_start: expires=4295013810 [timeout=1] bucket_expiry=4295013811 idx=51.
	const good = "bucket_expiry=4295013811 cpu=0 idx=51"
	lines := strings.Split(string(b), "\n")
	n := -1
	for i, l := range lines {
		if strings.Contains(l, good) {
			lines[i] = strings.Replace(l, good, "bucket_expiry=4295013816 cpu=0 idx=80", 1)
			n = i + 1
			break
		}
	}
	if n < 0 {
		t.Fatal("test line not found")
	}
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	c := CheckWheel(tr, 250)
	if len(c.Mismatches) != 1 || c.Mismatches[0].Line != n {
		t.Fatalf("mismatches %v, want one at line %d", c.Mismatches, n)
	}
	if !strings.Contains(c.Mismatches[0].Model, "idx=51 bucket_expiry=4295013811") {
		t.Fatalf("model side %q", c.Mismatches[0].Model)
	}
}

// TestWheelUndetermined: a base holding a timer armed before the recording,
// whose bucket the trace never shows, leaves a start that a lagging clock
// could explain undetermined rather than matched or mismatched.
func TestWheelUndetermined(t *testing.T) {
	const trace = `# machine: cpus=1 nodes=1 node-cpus=0 kernel=6.12.117 hz=250 cmdline="" busy= sleepers=
          <idle>-0       [000] d.s2.   100.000000: timer_start: timer=00000000000000aa function=f expires=1510 [timeout=10] bucket_expiry=1512 cpu=0 idx=125 flags=D
          <idle>-0       [000] d.s2.   100.000100: timer_cancel: timer=00000000000000bb
`
	tr, err := Read(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	c := CheckWheel(tr, 250)
	if c.Checked != 1 || c.Undetermined != 1 {
		t.Fatalf("got %+v, want 1 undetermined", c)
	}
	// Without the earlier timer the same start is a plain mismatch.
	tr.Events = tr.Events[:1]
	c = CheckWheel(tr, 250)
	if len(c.Mismatches) != 1 {
		t.Fatalf("got %+v, want a mismatch", c)
	}
}
