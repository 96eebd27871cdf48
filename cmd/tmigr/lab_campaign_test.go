package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/lab"
)

// TestLabCampaignBadInput: every bad flag is refused with status 2 and a
// message naming it, before anything is drawn, fetched or booted.
func TestLabCampaignBadInput(t *testing.T) {
	recorded := false
	defer func(r func(context.Context, lab.Spec, string) error) { campaignRecord = r }(campaignRecord)
	campaignRecord = func(context.Context, lab.Spec, string) error { recorded = true; return nil }
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "camp")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "2"}, "--dir DIR"},
		{[]string{"--dir", dir, "--kernels", "6.12,6.2"}, `--kernels: "6.2" is not a series`},
		{[]string{"--dir", dir, "--kernels", ","}, "--kernels: give at least one"},
		{[]string{"--dir", dir, "--flavours", "generic,lowlatency"}, `--flavours: "lowlatency"`},
		{[]string{"--dir", dir, "--max-cpus", "1"}, "--max-cpus: 1 is outside 2..64"},
		{[]string{"--dir", dir, "--max-cpus", "65"}, "--max-cpus: 65"},
		{[]string{"--dir", dir, "-n", "0"}, "-n: 0"},
		{[]string{"--dir", dir, "-n", "4", "--only", "4"}, "draw 4 is not one of the 4 draws"},
		{[]string{"--dir", dir, "--only", "3-1"}, "--only"},
		{[]string{"--dir", dir, "--only", "x"}, "--only"},
		{[]string{"--dir", dir, "--seed", "-1"}, "--seed"},
		{[]string{"--dir", dir, "--seed", "abc"}, "--seed"},
		{[]string{"--dir", dir, "--duration", "0s"}, "--duration"},
		{[]string{"--dir", dir, "--timeout", "-1s"}, "--timeout"},
		{[]string{"--dir", dir, "--local-every", "-1"}, "--local-every"},
		{[]string{"--dir", filepath.Join(file, "sub")}, "dir:"},
		{[]string{"--dir", dir, "--json", filepath.Join(file, "sum.json")}, "--json"},
		{[]string{"--dir", dir, "stray"}, ""},
	} {
		code, stdout, stderr := runLabCmd(append([]string{"campaign"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: status %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
		if strings.Contains(stdout, "campaign seed") {
			t.Errorf("%v: started: %q", tc.args, stdout)
		}
	}
	if recorded {
		t.Error("a bad command line recorded")
	}
	if code, stdout, _ := runLabCmd("campaign", "-h"); code != 0 || !strings.Contains(stdout, "-max-cpus") {
		t.Errorf("-h: %d %q", code, stdout)
	}
}

// TestLabCampaignRuns: with a fake recorder, a campaign prints its seed
// and table, writes its summary, and run again records nothing.
func TestLabCampaignRuns(t *testing.T) {
	src, err := os.ReadFile("../../testdata/traces/vm2-1node-busy-sleeper-7.3.txt")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	defer func(r func(context.Context, lab.Spec, string) error) { campaignRecord = r }(campaignRecord)
	campaignRecord = func(_ context.Context, s lab.Spec, path string) error {
		calls++
		return os.WriteFile(path, src, 0o644)
	}
	noLocal(t)
	dir := t.TempDir()
	sum := filepath.Join(t.TempDir(), "out", "sum.json")
	args := []string{"campaign", "--seed", "5", "-n", "3", "--max-cpus", "4", "--kernels", "7.3", "--dir", dir, "--json", sum}
	code, stdout, stderr := runLabCmd(args...)
	if code != 0 || calls != 3 {
		t.Fatalf("status %d, %d recordings; stderr:\n%s", code, calls, stderr)
	}
	for _, want := range []string{"campaign seed 5", "3 of 3 draws finished", "7.3", "wheel", "placement"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "lab-campaign", string(b))
	var s lab.Summary
	if err := json.Unmarshal(b, &s); err != nil || s.SchemaVersion != lab.CampaignSchema || s.Seed != 5 || len(s.Results) != 3 {
		t.Errorf("summary: %v %+v", err, s)
	}
	if code, _, _ := runLabCmd(args...); code != 0 || calls != 3 {
		t.Errorf("run again: status %d, %d recordings (want none more)", code, calls)
	}
	// --only draws one of them again elsewhere: the same spec.
	dir2 := t.TempDir()
	if code, _, stderr := runLabCmd("campaign", "--seed", "5", "-n", "3", "--max-cpus", "4", "--kernels", "7.3", "--dir", dir2, "--only", "1"); code != 0 || calls != 4 {
		t.Fatalf("--only: status %d, %d recordings: %s", code, calls, stderr)
	}
	one, _ := os.ReadFile(filepath.Join(dir, "draws", "seed5-0001.json"))
	again, _ := os.ReadFile(filepath.Join(dir2, "draws", "seed5-0001.json"))
	var r1, r2 lab.DrawResult
	json.Unmarshal(one, &r1)
	json.Unmarshal(again, &r2)
	if r1.Command == "" || r1.Command != r2.Command {
		t.Errorf("draw 1 again: %q, first %q", r2.Command, r1.Command)
	}
}

// TestLabCampaignDryRun: --dry-run prints the draws' commands, whose
// flags are all flags of "tmigr lab record".
func TestLabCampaignDryRun(t *testing.T) {
	code, stdout, stderr := runLabCmd("campaign", "--seed", "11", "-n", "12", "--max-cpus", "8", "--dry-run")
	if code != 0 {
		t.Fatalf("status %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 13 || lines[0] != "campaign seed 11" {
		t.Fatalf("%q", stdout)
	}
	_, help, _ := runLabCmd("record", "-h")
	for _, l := range lines[1:] {
		_, cmd, ok := strings.Cut(l, ": tmigr lab record ")
		if !ok {
			t.Fatalf("line %q", l)
		}
		for _, a := range splitShell(t, cmd) {
			name := "\n  -" + strings.TrimLeft(a, "-")
			if strings.HasPrefix(a, "-") && !strings.Contains(help, name+" ") && !strings.Contains(help, name+"\n") {
				t.Errorf("%s: %s is not a flag of tmigr lab record", cmd, a)
			}
		}
	}
	// The same draws again.
	if _, again, _ := runLabCmd("campaign", "--seed", "11", "-n", "12", "--max-cpus", "8", "--dry-run"); again != stdout {
		t.Errorf("the dry run drew other draws:\n%s\n%s", stdout, again)
	}
}

// splitShell splits a command line of words and single-quoted strings.
func splitShell(t *testing.T, s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if inQuote {
		t.Fatalf("unterminated quote in %q", s)
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// noLocal keeps the campaigns of a test from recording the machine it
// runs on.
func noLocal(t *testing.T) {
	t.Helper()
	can := canRecordLocal
	canRecordLocal = func() error { return errors.New("a test") }
	t.Cleanup(func() { canRecordLocal = can })
}

// TestLabCampaignRecordsLocal: as root (faked), a campaign also records
// the machine it runs on before the first draw and after every
// --local-every draws; the summary counts those recordings apart, under
// their own kernel, and a run again records none of them anew. Not root,
// it says so and records the guests only.
func TestLabCampaignRecordsLocal(t *testing.T) {
	guest, err := os.ReadFile("../../testdata/traces/vm2-1node-busy-sleeper-7.3.txt")
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile("../../testdata/traces/kvm2-6.18-claim-printed-just-after-round.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer func(r func(context.Context, lab.Spec, string) error) { campaignRecord = r }(campaignRecord)
	campaignRecord = func(_ context.Context, s lab.Spec, path string) error { return os.WriteFile(path, guest, 0o644) }
	var locals []time.Duration
	defer func(r func(context.Context, string, time.Duration) error) { campaignRecordLocal = r }(campaignRecordLocal)
	campaignRecordLocal = func(_ context.Context, path string, d time.Duration) error {
		locals = append(locals, d)
		return os.WriteFile(path, local, 0o644)
	}
	defer func(f func() error) { canRecordLocal = f }(canRecordLocal)
	canRecordLocal = func() error { return nil }

	dir := t.TempDir()
	args := []string{"campaign", "--seed", "5", "-n", "3", "--max-cpus", "4", "--kernels", "7.3", "--duration", "3s", "--local-every", "2", "--dir", dir}
	code, stdout, stderr := runLabCmd(args...)
	if code != 0 || len(locals) != 2 || locals[0] != 3*time.Second {
		t.Fatalf("status %d, local recordings %v; stderr:\n%s", code, locals, stderr)
	}
	for _, want := range []string{"3 of 3 draws finished, 2 recordings of this machine", "6.18 (local)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "lab-campaign", string(b))
	var s lab.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Finished != 3 || s.Local != 2 || len(s.Results) != 5 {
		t.Errorf("summary: %d draws finished, %d local, %d results; want 3, 2, 5", s.Finished, s.Local, len(s.Results))
	}
	var g *lab.Group
	for i := range s.Groups {
		if s.Groups[i].Local {
			g = &s.Groups[i]
		}
	}
	if g == nil || g.Series != "6.18" || g.Draws != 2 || g.Checks["tmigr"] == nil || g.Checks["tmigr"].Checked == 0 {
		t.Errorf("local group %+v, want 6.18 with 2 recordings, the tmigr check's decisions", g)
	}
	for _, r := range s.Results {
		if r.Local && (r.Status != lab.StatusOK || r.Release == "" || r.Command != "tmigr record -d 3s -o "+fmt.Sprintf("local-seed5-%04d.txt", r.Index)) {
			t.Errorf("local result %+v", r)
		}
	}
	if code, _, _ := runLabCmd(args...); code != 0 || len(locals) != 2 {
		t.Errorf("run again: status %d, %d local recordings (want none more)", code, len(locals))
	}

	canRecordLocal = func() error { return errors.New("not root") }
	code, _, stderr = runLabCmd(append(args[:len(args)-1], t.TempDir())...)
	if code != 0 || len(locals) != 2 || !strings.Contains(stderr, "this machine is not recorded (not root)") {
		t.Errorf("not root: status %d, %d local recordings; stderr:\n%s", code, len(locals), stderr)
	}
}
