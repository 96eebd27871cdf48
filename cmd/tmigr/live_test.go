package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/live"
)

// TestLiveCommand: the command runs an experiment and prints its JSON or
// its table.
func TestLiveCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"live", "lateness", "--timers", "20", "--json"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	checkSchema(t, "live-lateness", out.String())
	var r live.LatenessResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.Timers != 20 || r.HZ != 1000 || r.Wheel.N != 20 || r.HR.N != 20 || r.Std.N != 20 || r.Histograms["tmigr_hrtimer"].Cycles != 20 || r.Idle != "haltpoll" || r.Hogs != 0 {
		t.Errorf("result %+v", r)
	}
	// A timer slack: the first timer of each worker to expire runs at its
	// latest expiry, the slack after the time asked for, so the hrtimers'
	// worst lateness is at least the slack.
	out.Reset()
	if rc := run([]string{"live", "lateness", "--timers", "10", "--slack", "3ms", "--json"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	checkSchema(t, "live-lateness", out.String())
	r = live.LatenessResult{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.SlackNs != 3e6 || r.HR.N != 10 || r.HR.Max < 3000 {
		t.Errorf("with --slack 3ms: slack %d ns, %d hrtimers, worst %v µs late (want >= 3000)", r.SlackNs, r.HR.N, r.HR.Max)
	}
	// Re-armed: every timer runs once, after its Reset's duration (an
	// hour's arm that ran would never be waited for), and it says so.
	out.Reset()
	if rc := run([]string{"live", "lateness", "--timers", "10", "--rearm", "--json"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	checkSchema(t, "live-lateness", out.String())
	r = live.LatenessResult{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !r.Rearm || r.Wheel.N != 10 || r.HR.N != 10 || r.Std.N != 10 || r.HR.Min < 0 || r.Std.Min < 0 {
		t.Errorf("with --rearm: %+v", r)
	}
	out.Reset()
	if rc := run([]string{"live", "lateness", "--timers", "3", "--rearm", "--hist", "0"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "armed for an hour, then Reset to random 1-50 ms") {
		t.Errorf("--rearm output does not say how the timers were armed:\n%s", out.String())
	}
	out.Reset()
	if rc := run([]string{"live", "lateness", "--timers", "10", "--hz", "250"}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	for _, want := range []string{"tmigr wheel", "tmigr hrtimer", "time.AfterFunc", "p99 us", "(HZ 250)",
		"T: 0 (    0) P: 0 I:", "T: 2 (", "# Max Latencies:", "idle workers (haltpoll)", "no hogs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// cyclictest -h's block, one column per kind of timer: histogram rows
	// "%06d " then "%06lu" tab-separated, then the summary rows "%05lu".
	for _, re := range []string{`(?m)^# Histogram$`, `(?m)^\d{6} \d{6}\t\d{6}\t\d{6}$`,
		`(?m)^# Min Latencies: \d{5} \d{5} \d{5}$`, `(?m)^# Avg Latencies: \d{5} \d{5} \d{5}$`,
		`(?m)^# Max Latencies: \d{5} \d{5} \d{5}$`, `(?m)^# Histogram Overflows: \d{5} \d{5} \d{5}$`,
		`(?m)^# Thread 2: `} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output lacks a line matching %s:\n%s", re, out.String())
		}
	}
}

func TestLiveBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"live"}, "usage: tmigr live"},
		{[]string{"live", "nope"}, `unknown experiment "nope"`},
		{[]string{"live", "lateness", "--timers", "0"}, "timers 0"},
		{[]string{"live", "lateness", "--cpus", "0-"}, "--cpus"},
		{[]string{"live", "lateness", "--cpus", "0-7:0/2"}, "selects no CPU"},
		{[]string{"live", "idle", "--duration", "-1s"}, "duration -1s"},
		{[]string{"live", "isolation", "--cpus", "0"}, "needs at least 2 CPUs"},
		{[]string{"live", "wakeups", "extra"}, `unexpected argument "extra"`},
		{[]string{"live", "softhard", "--fifo", "200"}, "Priority 200"},
		// The runtime reads HZ 0 as its default; the report said "(HZ 0)".
		{[]string{"live", "lateness", "--hz", "0"}, "--hz must be at least 1 (got 0)"},
		{[]string{"live", "lateness", "--hogs", "17"}, "hogs 17 per CPU outside 0..16"},
		{[]string{"live", "lateness", "--slack", "-1us"}, "--slack must not be negative (got -1µs)"},
	} {
		var out, errb bytes.Buffer
		if rc := run(tc.args, &out, &errb); rc != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, rc)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q, want it to mention %q", tc.args, errb.String(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"live", "idle", "-h"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "usage: tmigr live idle") || errb.Len() != 0 {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", rc, out.String(), errb.String())
	}
}

// Every experiment's --json output holds its schema, with a run per
// setting it compares, each of the length asked for.
func TestLiveJSONSchemas(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("the experiments need 2 CPUs")
	}
	for _, c := range []struct {
		args []string
		runs int
	}{
		{[]string{"isolation"}, 2},
		{[]string{"idle", "--workers", "2"}, 3},
		{[]string{"softhard"}, 2},
		{[]string{"wakeups", "--workers", "2"}, 2},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{"live"}, c.args...), "--duration", "100ms", "--json")
		if rc := run(args, &out, &errb); rc != 0 {
			t.Fatalf("%s: exit %d: %s", c.args[0], rc, errb.String())
		}
		checkSchema(t, "live-"+c.args[0], out.String())
		var r struct {
			SchemaVersion int     `json:"schema_version"`
			DurationS     float64 `json:"duration_s"`
			Runs          []json.RawMessage
		}
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.SchemaVersion != 1 || r.DurationS != 0.1 || len(r.Runs) != c.runs {
			t.Errorf("%s: schema_version %d, %v s, %d runs; want 1, 0.1 s, %d runs", c.args[0], r.SchemaVersion, r.DurationS, len(r.Runs), c.runs)
		}
	}
}
