package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRun runs the example and checks what it prints: both timers, each on
// a worker and neither early. Not their order: on a loaded machine the
// hrtimer's worker may not get its CPU for the 5 ms between them (the
// example prints them as they arrive).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, want := range []struct {
		prefix string
		min    time.Duration
	}{{"hrtimer (300µs)", 300 * time.Microsecond}, {"wheel timer (5ms)", 5 * time.Millisecond}} {
		n := 0
		for _, line := range lines {
			if !strings.HasPrefix(line, want.prefix) {
				continue
			}
			n++
			var worker int
			var rest string
			if _, err := fmt.Sscanf(strings.TrimPrefix(line, want.prefix), " ran on worker %d after %s", &worker, &rest); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			after, err := time.ParseDuration(rest)
			if err != nil || after < want.min || worker < 0 {
				t.Fatalf("%q: worker %d after %v, want a worker and at least %v", line, worker, after, want.min)
			}
		}
		if n != 1 {
			t.Fatalf("%d lines start with %q, want 1:\n%s", n, want.prefix, out.String())
		}
	}
}
