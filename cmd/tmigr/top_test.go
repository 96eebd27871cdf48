package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const topTrace = "../../testdata/traces/vm40-1node-isol-busy.txt"

func TestTopInput(t *testing.T) {
	var out, errb strings.Builder
	if rc := run([]string{"top", "--input", topTrace, "--json", "-c", "8,10"}, &out, &errb); rc != 0 {
		t.Fatalf("status %d: %s", rc, errb.String())
	}
	checkSchema(t, "top", out.String())
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var periods int
	var foreign uint64
	for sc.Scan() {
		var p struct {
			SchemaVersion     int    `json:"schema_version"`
			ForeignOnIsolated uint64 `json:"foreign_on_isolated"`
			CPUs              []struct {
				CPU int `json:"cpu"`
			} `json:"cpus"`
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if p.SchemaVersion != 1 || len(p.CPUs) != 2 || p.CPUs[0].CPU != 8 || p.CPUs[1].CPU != 10 {
			t.Fatalf("period %s", sc.Text())
		}
		periods++
		foreign += p.ForeignOnIsolated
	}
	if periods < 3 || foreign == 0 {
		t.Errorf("%d periods, %d foreign timers on isolated CPUs", periods, foreign)
	}
}

func TestTopOnForeign(t *testing.T) {
	save := filepath.Join(t.TempDir(), "hit.txt")
	var out, errb strings.Builder
	if rc := run([]string{"top", "--input", topTrace, "-q", "--on-foreign", "isolated", "--save", save}, &out, &errb); rc != topOnForeignExit {
		t.Fatalf("status %d, want %d: %s%s", rc, topOnForeignExit, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "CPU 8 ran CPU 10's process_timeout") {
		t.Errorf("no explanation: %s", out.String())
	}
	// The trace saved around it explains it again.
	out.Reset()
	if rc := run([]string{"explain", "--cpu", "8", save}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "CPU 8 ran CPU 10's process_timeout") {
		t.Errorf("explain %s: status %d: %s%s", save, rc, out.String(), errb.String())
	}
}

func TestTopBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"top", "--input", topTrace, "-c", "x"},
		{"top", "--input", topTrace, "--on-foreign", "all"},
		{"top", "--input", topTrace, "-p", "0"},
		{"top", "--input", topTrace, "-d", "-1s"},
		{"top", "--input", topTrace, "--on-foreign", "isolated", "--save", "/no/such/dir/x.txt"},
		{"top", "--input", "/no/such/file.txt"},
		{"exporter", "--input", "/no/such/file.txt", "--listen", "127.0.0.1:0"},
	} {
		var out, errb strings.Builder
		if rc := run(args, &out, &errb); rc != 2 || errb.Len() == 0 {
			t.Errorf("%q: status %d, stderr %q", args, rc, errb.String())
		}
	}
}
