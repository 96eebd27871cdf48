package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRun runs the example and checks what it prints: the hrtimer first,
// both on a worker, neither early.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("output:\n%s", out.String())
	}
	for i, want := range []struct {
		prefix string
		min    time.Duration
	}{{"hrtimer (300µs)", 300 * time.Microsecond}, {"wheel timer (5ms)", 5 * time.Millisecond}} {
		var worker int
		var after time.Duration
		var rest string
		if !strings.HasPrefix(lines[i], want.prefix) {
			t.Fatalf("line %d: %q, want it to start with %q", i, lines[i], want.prefix)
		}
		if _, err := fmt.Sscanf(strings.TrimPrefix(lines[i], want.prefix), " ran on worker %d after %s", &worker, &rest); err != nil {
			t.Fatalf("line %d: %q: %v", i, lines[i], err)
		}
		after, err := time.ParseDuration(rest)
		if err != nil || after < want.min || worker < 0 {
			t.Fatalf("line %d: %q: worker %d after %v", i, lines[i], worker, after)
		}
	}
}
