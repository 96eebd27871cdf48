package tracefs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/internal/tracefslock"
	"github.com/tmigr/tmigr/replay"
)

// realMachine skips the test unless this machine's tracefs can be used:
// root, and a kernel with tracefs.
func realMachine(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("recording the machine needs root (tracefs instances)")
	}
	if _, err := os.Stat(DefaultRoot); err != nil {
		t.Skipf("no tracefs mount point (%v): a kernel without CONFIG_TRACING", err)
	}
	tracefslock.Hold(t)
}

// mounted reports whether tracefs is mounted at one of the usual points.
func mounted() bool {
	for _, p := range []string{DefaultRoot, debugRoot} {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && st.Type == unix.TRACEFS_MAGIC {
			return true
		}
	}
	return false
}

// topState is the top-level tracing state an instance must leave alone.
func topState(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"tracing_on", "current_tracer", "set_event", "trace_clock", "buffer_size_kb", "events/timer/timer_start/enable"} {
		v, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s\n", f, bytes.TrimSpace(v))
	}
	return b.String()
}

// ours lists the instances of this process under root: another tmigr
// recording on the machine at the same time has instances of its own.
func ours(t *testing.T, root string) []string {
	t.Helper()
	base := instanceName(os.Getpid(), 1)
	m, err := filepath.Glob(filepath.Join(root, "instances", base+"*"))
	if err != nil {
		t.Fatal(err)
	}
	var own []string
	for _, p := range m {
		if n := filepath.Base(p); n == base || strings.HasPrefix(n, base+"-") {
			own = append(own, p)
		}
	}
	return own
}

// machineLine is the recording's first line, as tmigr record writes it.
func machineLine(t *testing.T) string {
	t.Helper()
	s, err := host.Read(os.DirFS("/"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := host.RecordingMachine(h, "tmigr record")
	if err != nil {
		t.Fatal(err)
	}
	return "# machine: " + m.String() + "\n"
}

// Recording a second of this machine leaves a trace that replays without
// a mismatch, and leaves the machine as it was.
func TestRecordThisMachine(t *testing.T) {
	realMachine(t)
	wasMounted := mounted()
	in, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	root := in.root
	before := topState(t, root)
	var buf bytes.Buffer
	buf.WriteString(machineLine(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() {
		// Some timers of our own, besides the machine's.
		for ctx.Err() == nil {
			time.Sleep(3 * time.Millisecond)
		}
	}()
	if _, err := in.Record(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	lost, err := in.Lost()
	if err != nil {
		t.Fatal(err)
	}
	dir := in.Dir()
	hierarchy := strings.Contains(strings.Join(in.Events(), " "), "timer_migration")
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Close: %v", dir, err)
	}
	switch {
	case !wasMounted:
		// Open mounted it: Close took it down, instances and all.
		if mounted() {
			t.Errorf("tracefs was not mounted before Open, and is after Close")
		}
	default:
		if left := ours(t, root); len(left) != 0 {
			t.Errorf("instances left: %q", left)
		}
		if after := topState(t, root); after != before {
			t.Errorf("the top-level tracing state changed:\n%s\nbecame\n%s", before, after)
		}
	}
	tr, err := replay.Read(&buf)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	timers := 0
	for _, ev := range tr.Events {
		switch ev.Data.(type) {
		case ftrace.TimerStart, ftrace.TimerExpireEntry:
			timers++
		}
	}
	if timers == 0 || tr.Header.Machine == nil {
		t.Fatalf("%d timer events, machine line %v in %d events", timers, tr.Header.Machine, len(tr.Events))
	}
	r, err := replay.Run(tr, replay.Options{Wheel: true, Tmigr: true, Placement: true})
	if err != nil {
		t.Fatal(err)
	}
	// The wheel and placement checks read every timer_start's fields and
	// CPU: a line the recorder garbled, cut or misordered is a mismatch
	// there. The hierarchy's checks also judge the model against races
	// between CPUs that a second of a real machine may or may not hold:
	// the lab's campaigns measure those; here they must run.
	for name, c := range map[string]*replay.Counts{"wheel": r.Wheel, "placement": r.Placement, "tmigr": r.Tmigr} {
		switch {
		case name == "tmigr" && !hierarchy:
			t.Logf("no tmigr check: %s", strings.Join(in.Notes(), "; "))
		case c == nil || c.Checked == 0:
			t.Errorf("the %s check checked nothing", name)
		case len(c.Mismatches) > 0 && name != "tmigr":
			t.Errorf("%s: %d mismatches, the first %+v", name, len(c.Mismatches), c.Mismatches[0])
		default:
			t.Logf("%s: %d/%d matched, %d mismatched", name, c.Matched, c.Checked, len(c.Mismatches))
		}
	}
	t.Logf("%d events, %d lost", len(tr.Events), lost)
}

// A recorder killed by SIGKILL leaves its instance, and the tracefs mount
// it made; Sweep removes both.
func TestSweepAfterSIGKILL(t *testing.T) {
	if os.Getenv("TMIGR_TRACEFS_CHILD") == "1" {
		return // the child's own run of this test: see child below
	}
	realMachine(t)
	wasMounted := mounted()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRecorder$")
	cmd.Env = append(os.Environ(), "TMIGR_TRACEFS_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the child said nothing: %v", err)
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "instance ")
	if !ok {
		t.Fatalf("the child said %q", line)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the child's instance: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed child's instance is already gone (%v): nothing to sweep", err)
	}
	if !wasMounted && !mounted() {
		t.Fatal("the killed child's tracefs mount is already gone: nothing to sweep")
	}
	if err := Sweep(""); err != nil {
		t.Fatal(err)
	}
	if !wasMounted && mounted() {
		t.Errorf("Sweep left the tracefs mount the killed child made")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Sweep left %s: %v", dir, err)
	}
}

// TestChildRecorder is the recorder TestSweepAfterSIGKILL kills: it
// opens an instance, records, and waits to be killed.
func TestChildRecorder(t *testing.T) {
	if os.Getenv("TMIGR_TRACEFS_CHILD") != "1" {
		t.Skip("run by TestSweepAfterSIGKILL")
	}
	in, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("instance %s\n", in.Dir())
	in.Record(context.Background(), &bytes.Buffer{}) // until killed
}

// Close, from another goroutine, unblocks a Read of the pipe that waits
// for events, and removes the instance though the pipe was open.
func TestCloseUnblocksPipe(t *testing.T) {
	realMachine(t)
	in, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := in.Pipe()
	if err != nil {
		in.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Read(make([]byte, 4096)) // not started: nothing comes
		done <- err
	}()
	dir := in.Dir()
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("the blocked Read returned no error after Close")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not unblock the Read")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", dir, err)
	}
	if _, err := in.Pipe(); err == nil {
		t.Errorf("Pipe after Close succeeded")
	}
}
