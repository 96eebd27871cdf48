package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/internal/tracefslock"
	"github.com/tmigr/tmigr/replay"
)

// TestMain lets a test run this test binary as tmigr itself
// (TMIGR_TEST_MAIN=1), to send it signals.
func TestMain(m *testing.M) {
	if os.Getenv("TMIGR_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestRecordFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-d", "soon"}, `-d: bad duration "soon"`},
		{[]string{"-d", "-1s"}, "-d: negative duration"},
		{[]string{"--buffer-kb", "-4"}, "--buffer-kb must be positive"},
		{[]string{"-c", "1-x"}, "-c: "},
		{[]string{"-c", "4095"}, "-c: CPUs 4095: the machine has CPUs 0-"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-o", filepath.Join(dir, "no", "such", "dir.txt")}, "cannot write it: no such file or directory"},
		{[]string{"-o", dir}, "cannot write it: not a regular file"},
	} {
		var out, errb bytes.Buffer
		rc := run(append([]string{"record"}, c.args...), &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("record %q: status %d, stderr %q; want 2 and %q", c.args, rc, errb.String(), c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused runs left %d files", len(ents))
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"record", "-h"}, &out, &errb); rc != 0 || !strings.Contains(out.String(), "-buffer-kb") {
		t.Errorf("record -h: %d %q", rc, out.String())
	}
}

func TestRecordNeedsRoot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.txt")
	var rc int
	var errb bytes.Buffer
	if os.Geteuid() != 0 {
		rc = run([]string{"record", "-d", "1", "-o", path}, io.Discard, &errb)
	} else {
		// As root, run a copy of this binary as nobody.
		bin := filepath.Join(dir, "tmigr")
		b, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil { // the test's own
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "record", "-d", "1", "-o", path)
		cmd.Env = append(os.Environ(), "TMIGR_TEST_MAIN=1")
		cmd.Dir = dir
		cmd.Stderr = &errb
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		err = cmd.Run()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			rc = ee.ExitCode()
		case err != nil:
			t.Skipf("cannot run as nobody: %v", err)
		}
	}
	if rc != 1 || !strings.Contains(errb.String(), "needs root") {
		t.Errorf("status %d, stderr %q; want 1 and \"needs root\"", rc, errb.String())
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("a refused recording wrote %s", path)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".r.txt*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}

// recordable skips a test that records this machine where it cannot.
func recordable(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("recording the machine needs root (tracefs instances)")
	}
	if _, err := os.Stat("/sys/kernel/tracing"); err != nil {
		t.Skipf("no tracefs mount point (%v): a kernel without CONFIG_TRACING", err)
	}
	tracefslock.Hold(t)
}

// checkRecording reads a recording back: the machine line, timer events,
// and lines whole to the last.
func checkRecording(t *testing.T, b []byte) *replay.Trace {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the recording does not end with a whole line (%d bytes)", len(b))
	}
	tr, err := replay.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	if tr.Header.Machine == nil || tr.Header.Machine.Kernel == "" {
		t.Fatalf("no machine line: %+v", tr.Header)
	}
	timers := 0
	for _, ev := range tr.Events {
		if _, ok := ev.Data.(ftrace.TimerStart); ok {
			timers++
		}
	}
	if timers == 0 {
		t.Fatalf("no timer_start in %d events", len(tr.Events))
	}
	return tr
}

func noInstanceOf(t *testing.T, pid int) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join("/sys/kernel/tracing/instances", "tmigr-"+strconv.Itoa(pid)+"*"))
	if len(m) != 0 {
		t.Errorf("instances left: %q", m)
	}
}

func TestRecordThisMachine(t *testing.T) {
	recordable(t)
	path := filepath.Join(t.TempDir(), "r.txt")
	var out, errb bytes.Buffer
	if rc := run([]string{"record", "-d", "1", "-o", path}, &out, &errb); rc != 0 {
		t.Fatalf("status %d: %s", rc, errb.String())
	}
	if !strings.Contains(errb.String(), "events in") {
		t.Errorf("stderr %q", errb.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRecording(t, b)
	noInstanceOf(t, os.Getpid())
	// Replay and explain read it with no flag.
	for _, cmd := range [][]string{{"replay", path}, {"explain", path}} {
		out.Reset()
		errb.Reset()
		if rc := run(cmd, &out, &errb); rc == 2 || strings.Contains(out.String(), "give it with --") || strings.Contains(out.String(), "--cmdline") {
			t.Errorf("%s: status %d, asks for a flag: %s%s", cmd[0], rc, out.String(), errb.String())
		}
	}
	// Standard output.
	out.Reset()
	errb.Reset()
	if rc := run([]string{"record", "-d", "1", "-o", "-", "-c", "0"}, &out, &errb); rc != 0 {
		t.Fatalf("-o -: status %d: %s", rc, errb.String())
	}
	tr := checkRecording(t, out.Bytes())
	for _, ev := range tr.Events {
		if ev.CPU != 0 {
			t.Errorf("-c 0 recorded an event of CPU %d: %+v", ev.CPU, ev)
			break
		}
	}
}

// Ctrl-C ends a recording: the file is whole and the instance gone.
func TestRecordSIGINT(t *testing.T) {
	recordable(t)
	path := filepath.Join(t.TempDir(), "r.txt")
	cmd := exec.Command(os.Args[0], "record", "-o", path)
	cmd.Env = append(os.Environ(), "TMIGR_TEST_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "recording all CPUs") {
			break
		}
	}
	if len(said) == 0 || !strings.Contains(said[len(said)-1], "recording all CPUs") {
		t.Fatalf("the recorder did not start: %q", said)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s exists before the recording ended", path)
	}
	time.Sleep(time.Second) // a second of the machine's timers to record
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		said = append(said, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGINT: %v; it said %q", err, said)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checkRecording(t, b)
	noInstanceOf(t, cmd.Process.Pid)
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".r.txt*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}

// replay --cmdline gives a recording without a machine line its isolation
// and must agree with a machine line's.
func TestReplayCmdline(t *testing.T) {
	trace := filepath.Join("..", "..", "testdata", "traces", "vm18-2node-mixed.txt") // cmdline=""
	var out, errb bytes.Buffer
	if rc := run([]string{"replay", "--cmdline", "isolcpus=1-8", trace}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), `--cmdline "isolcpus=1-8" isolates CPUs 1-8`) {
		t.Errorf("a disagreeing --cmdline: status %d, %s", rc, errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := run([]string{"replay", "--cmdline", "quiet splash", trace}, &out, &errb); rc == 2 || !strings.Contains(out.String(), "wheel ") {
		t.Errorf("an agreeing --cmdline: status %d, %s%s", rc, out.String(), errb.String())
	}
	// Without a machine line it sets the isolation: replay's membership
	// check then judges the isolated CPUs by it, and the hrtimer_* lines
	// read alike.
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(b), "\n")
	bare := filepath.Join(t.TempDir(), "bare.txt")
	if err := os.WriteFile(bare, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, cmdline := range []string{"", "isolcpus=1-8"} {
		out.Reset()
		errb.Reset()
		args := []string{"replay", "--json", "--cpus", "18", "--node-cpus", "0-8;9-17", "--hz", "250", "--kernel", "6.19.0", bare}
		if cmdline != "" {
			args = append(args, "--cmdline", cmdline)
		}
		if rc := run(args, &out, &errb); rc == 2 {
			t.Fatalf("--cmdline %q: %s", cmdline, errb.String())
		}
		checkSchema(t, "replay", out.String())
		outs = append(outs, out.String())
	}
	if outs[0] == outs[1] {
		t.Errorf("--cmdline isolcpus=1-8 on 6.19 changed nothing in the replay")
	}
}
