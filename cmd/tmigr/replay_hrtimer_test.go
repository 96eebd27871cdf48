package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReplayHrtimer: the replay prints the hrtimer check for a trace with
// sleepers, and only for such a trace.
func TestReplayHrtimer(t *testing.T) {
	rt := filepath.Join(labTraces, "vm8-1node-rt-fifo-other-sleepers.txt")
	plain := filepath.Join(labTraces, "vm40-1node-isol-busy.txt")
	var o, e bytes.Buffer
	if code := run([]string{"replay", rt, plain}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	lines := strings.Split(o.String(), "\n")
	if !regexp.MustCompile(`^.*vm8-1node-rt-fifo-other-sleepers.txt: wheel \d+/\d+, tmigr \d+/\d+, nextevt \d+/\d+, hrtimer \d+/\d+, placement \d+/\d+ matched$`).MatchString(lines[0]) {
		t.Errorf("rt line %q", lines[0])
	}
	for _, l := range lines {
		if strings.Contains(l, "vm40") && strings.Contains(l, "hrtimer") {
			t.Errorf("hrtimer check on a trace without sleepers: %q", l)
		}
	}
	o.Reset()
	if code := run([]string{"replay", "--hrtimer", "--json", rt}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	checkSchema(t, "replay", o.String())
	var out struct {
		Files []map[string]json.RawMessage
	}
	if err := json.Unmarshal(o.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	f := out.Files[0]
	if _, ok := f["hrtimer"]; !ok || f["wheel"] != nil || f["tmigr"] != nil {
		t.Errorf("--hrtimer alone: keys %v", f)
	}
	var c struct{ Checked, Matched int }
	if err := json.Unmarshal(f["hrtimer"], &c); err != nil || c.Checked == 0 || c.Matched == 0 {
		t.Errorf("hrtimer %s: %v", f["hrtimer"], err)
	}
}
