package main

import (
	"strings"
	"testing"
)

const statBefore = `cpu  100 0 100 1000 0 0 0 0 0 0
cpu0 50 0 50 500 0 0 0 0 0 0
cpu1 50 0 50 500 0 0 0 0 0 0
cpu2 10 0 10 900 0 0 0 0 0 0
intr 12345
`

// The second reading: CPU 0 ran tasks 97% of the time, CPU 1 90%, CPU 2
// was idle (iowait counts as idle).
const statAfter = `cpu  100 0 100 1000 0 0 0 0 0 0
cpu0 147 0 50 503 0 0 0 0 0 0
cpu1 140 0 50 510 0 0 0 0 0 0
cpu2 10 0 10 950 50 0 0 0 0 0
`

func TestBusyCPUs(t *testing.T) {
	b, err := parseCPUTimes(strings.NewReader(statBefore))
	if err != nil {
		t.Fatal(err)
	}
	a, err := parseCPUTimes(strings.NewReader(statAfter))
	if err != nil {
		t.Fatal(err)
	}
	if got := busyCPUs(b, a, 3); got.String() != "0" {
		t.Errorf("busy %v, want 0", got)
	}
	// A CPU beyond the machine's is left out.
	if got := busyCPUs(b, a, 0); !got.Empty() {
		t.Errorf("busy %v with no CPUs", got)
	}
}

func TestParseCPUTimesErrors(t *testing.T) {
	for _, in := range []string{"", "intr 1\n", "cpu0 1 2 x 4\n", "cpu-1 1 2 3 4\n", "cpuX 1 2 3 4\n"} {
		if _, err := parseCPUTimes(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func FuzzParseCPUTimes(f *testing.F) {
	f.Add(statBefore)
	f.Add(statAfter)
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseCPUTimes(strings.NewReader(s))
		if err != nil {
			return
		}
		for c, v := range a {
			if c < 0 || v[1] > v[0] {
				t.Fatalf("cpu %d: %v", c, v)
			}
		}
		// No reading is busy against itself.
		if got := busyCPUs(a, a, 8); !got.Empty() {
			t.Fatalf("busy against itself: %v", got)
		}
	})
}
