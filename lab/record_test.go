package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"github.com/tmigr/tmigr/ftrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeQEMU stands in for qemu-system-x86_64: it reads the run's nonce from
// the /init in the initramfs it is given, and prints what a guest prints,
// with the trace of $FAKE_TRACE. Its first $FAKE_CRASHES runs print a
// kernel panic instead, and its first $FAKE_LATE runs one after the guest
// booted; with $FAKE_SLEEP it hangs first.
const fakeQEMU = `#!/bin/sh
while [ $# -gt 0 ]; do
	case "$1" in -initrd) initrd=$2; shift;; esac
	shift
done
[ -n "$FAKE_SLEEP" ] && exec sleep "$FAKE_SLEEP"
n=$(cat "$FAKE_STATE" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$FAKE_STATE"
echo "SeaBIOS (version fake)"
if [ $n -le "$FAKE_CRASHES" ]; then
	echo "[    7.332421] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
	echo "[    7.340429] Kernel panic - not syncing: Fatal exception in interrupt"
	exit 0
fi
M=$(gzip -dc "$initrd" | grep -a "^M='" | sed "s/^M='\(.*\)'\$/\1/")
echo "$M stage booted"
if [ $n -le "$FAKE_LATE" ]; then
	echo "[   17.744536] RIP: 0010:call_timer_fn+0x1d/0x110"
	echo "[   17.744536] Kernel panic - not syncing: Fatal exception in interrupt"
	exit 0
fi
echo "$M begin uname"; echo "6.12.117+deb13-cloud-amd64"; echo "$M end uname"
echo "$M begin nodes"; echo "0 0-1"; echo "$M end nodes"
echo "$M begin online"; echo "0-1"; echo "$M end online"
echo "$M begin dmesg"
echo "[    0.527354] Timer migration: 1 hierarchy levels; 8 children per group; 1 crossnode level"
echo "$M end dmesg"
echo "$M begin trace.gz.b64"; gzip -c "$FAKE_TRACE" | base64; echo "$M end trace.gz.b64"
echo "$M done"
`

// staticELF returns the smallest file checkStatic takes for a static
// x86-64 executable: an ELF header and one PT_LOAD program header.
func staticELF() []byte {
	b := make([]byte, 64+56)
	copy(b, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2)  // ET_EXEC
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)  // EV_CURRENT
	le.PutUint64(b[32:], 64) // e_phoff
	le.PutUint16(b[52:], 64) // e_ehsize
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[56:], 1)  // e_phnum
	le.PutUint32(b[64:], 1)  // PT_LOAD
	return b
}

// fakeHost sets up a host whose QEMU is fakeQEMU, and returns the spec
// and the trace the fake guest sends.
func fakeHost(t *testing.T, crashes int) (Spec, []byte) {
	for _, tool := range []string{"sh", "gzip", "grep", "sed", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the fake QEMU needs %s", tool)
		}
	}
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var config strings.Builder
	for _, k := range requiredConfig {
		config.WriteString(k + "=y\n")
	}
	config.WriteString("CONFIG_HZ=250\n")
	// The kernel's part of a real recording: everything after our two
	// header lines.
	rec, err := os.ReadFile(filepath.Join("..", "testdata", "traces", "vm2-1node-busy-sleeper.txt"))
	if err != nil {
		t.Fatal(err)
	}
	trace := rec[bytes.Index(rec, []byte("# tracer:")):]
	t.Setenv("FAKE_TRACE", write("trace", trace, 0o644))
	t.Setenv("FAKE_STATE", filepath.Join(dir, "count"))
	t.Setenv("FAKE_CRASHES", strconv.Itoa(crashes))
	t.Setenv("FAKE_SLEEP", "")
	t.Setenv("FAKE_LATE", "0")
	s := Spec{
		CPUs: 2,
		Host: Host{
			CacheDir:     filepath.Join(dir, "cache"),
			QEMU:         write("qemu", []byte(fakeQEMU), 0o755),
			Busybox:      write("busybox", staticELF(), 0o755),
			Guest:        write("guest", staticELF(), 0o755),
			KernelImage:  write("vmlinuz", []byte("kernel"), 0o644),
			KernelConfig: write("config", []byte(config.String()), 0o644),
		},
	}
	return s, trace
}

func runs(t *testing.T) string {
	b, _ := os.ReadFile(os.Getenv("FAKE_STATE"))
	return strings.TrimSpace(string(b))
}

// TestRecordRetries: a guest that panics before its /init is booted again,
// and the recording is what the guest sent under our two header lines.
func TestRecordRetries(t *testing.T) {
	s, trace := fakeHost(t, 2)
	var progress, out bytes.Buffer
	s.Progress = &progress
	if err := Record(context.Background(), s, &out); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	want := "# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.12.117 hz=250 cmdline=\"\" busy= sleepers= (QEMU TCG)\n" +
		"# Timer migration: 1 hierarchy levels; 8 children per group; 1 crossnode level\n" + string(trace)
	if out.String() != want {
		t.Errorf("recording differs from the guest's trace under the two header lines")
	}
	if runs(t) != "3" {
		t.Errorf("QEMU ran %s times, want 3", runs(t))
	}
	for _, w := range []string{"crashed before its /init ran (Kernel panic - not syncing: Fatal exception in interrupt); booting it again (1 of 2 retries)", "(2 of 2 retries)", "guest: booted", "events written"} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, progress.String())
		}
	}
	// A successful run leaves no run directory behind.
	if runs, _ := filepath.Glob(filepath.Join(s.Host.CacheDir, "run-*")); len(runs) != 0 {
		t.Errorf("run directories left: %v", runs)
	}
}

// TestRecordRetriesAPanicWhileRecording: a guest whose kernel panics
// after its /init ran, while it records, sends no trace: it is booted
// again, and the recording is the next run's.
func TestRecordRetriesAPanicWhileRecording(t *testing.T) {
	s, trace := fakeHost(t, 0)
	t.Setenv("FAKE_LATE", "1")
	var progress, out bytes.Buffer
	s.Progress = &progress
	if err := Record(context.Background(), s, &out); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !strings.HasSuffix(out.String(), string(trace)) {
		t.Errorf("recording differs from the guest's trace")
	}
	if runs(t) != "2" {
		t.Errorf("QEMU ran %s times, want 2", runs(t))
	}
	for _, w := range []string{"crashed while it recorded (Kernel panic - not syncing: Fatal exception in interrupt); booting it again (1 of 2 retries)", "recorded on attempt 2: 1 retry covered a crash"} {
		if !strings.Contains(progress.String(), w) {
			t.Errorf("progress lacks %q:\n%s", w, progress.String())
		}
	}
}

func TestRecordGivesUp(t *testing.T) {
	s, _ := fakeHost(t, 10)
	var out bytes.Buffer
	err := Record(context.Background(), s, &out)
	var ce *ConsoleError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Kernel panic") || !strings.Contains(err.Error(), "console-3.log") {
		t.Fatalf("error %v", err)
	}
	if runs(t) != "3" || out.Len() != 0 {
		t.Errorf("QEMU ran %s times, %d bytes written", runs(t), out.Len())
	}
	// The run directory stays, for the console logs the error names.
	if runs, _ := filepath.Glob(filepath.Join(s.Host.CacheDir, "run-*", "console-3.log")); len(runs) != 1 {
		t.Errorf("console logs kept: %v", runs)
	}
}

func TestRecordTimeout(t *testing.T) {
	s, _ := fakeHost(t, 0)
	t.Setenv("FAKE_SLEEP", "30")
	s.Duration = time.Millisecond
	s.Timeout = 300 * time.Millisecond
	start := time.Now()
	err := Record(context.Background(), s, &bytes.Buffer{})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Stage != "boot" || !strings.Contains(err.Error(), "raise the timeout") {
		t.Fatalf("error %v", err)
	}
	// Under 5 s, QEMU's WaitDelay: the process was killed, not waited out.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("QEMU was killed after %v", d)
	}

	// Cancelling the context (Ctrl-C) stops QEMU too.
	s.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start = time.Now()
	err = Record(ctx, s, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("QEMU was stopped after %v", d)
	}
}

func TestCrashLine(t *testing.T) {
	for log, want := range map[string]string{
		"a\n[ 7.3] Oops: int3: 0000 [#1]\n[ 7.4] Kernel panic - not syncing: x\n": "Kernel panic - not syncing: x",
		"[ 1.0] BUG: kernel NULL pointer dereference\n":                           "BUG: kernel NULL pointer dereference",
		"SeaBIOS\n": "no panic message",
	} {
		if got := crashLine([]byte(log)); got != want {
			t.Errorf("crashLine(%q) = %q, want %q", log, got, want)
		}
	}
}

func TestDoneTimes(t *testing.T) {
	planned, err := ftrace.ParseChanges("1s partition 9-15; 2s timer_migration=0", 16)
	if err != nil {
		t.Fatal(err)
	}
	const trace = "# tracer: nop\n" +
		"     tmigr-guest-130     [000] ...1.    23.515021: tracing_mark_write: tmigr-lab: start\n" +
		"          <idle>-0       [002] d..2.    24.000000: tmigr_cpu_idle: cpu=2 parent=0000000000000001 nextevt=1 wakeup=1\n" +
		"     tmigr-guest-130     [000] ...1.    33.023218: tracing_mark_write: tmigr-lab: 1s partition 9-15\n" +
		"     tmigr-guest-130     [000] ...1.    33.100499: tracing_mark_write: tmigr-lab: 2s timer_migration=0\n"
	got, refused, err := doneTimes([]byte(trace), planned)
	if err != nil {
		t.Fatal(err)
	}
	if s := ftrace.FormatChanges(got); s != "9.508s partition 9-15; 9.585s timer_migration=0" || len(refused) != 0 {
		t.Errorf("done at %q, refused %v", s, refused)
	}
	// A change the kernel refused (EBUSY from a CPU's online file) did
	// not happen: it is left out, and said refused, at its marker.
	planned2, err := ftrace.ParseChanges("1s offline 1; 2s timer_migration=0", 16)
	if err != nil {
		t.Fatal(err)
	}
	got, refused, err = doneTimes([]byte(strings.Replace(trace, "tmigr-lab: 1s partition 9-15", "tmigr-lab: refused 1s offline 1", 1)), planned2)
	if err != nil {
		t.Fatal(err)
	}
	if s, r := ftrace.FormatChanges(got), ftrace.FormatChanges(refused); s != "9.585s timer_migration=0" || r != "9.508s offline 1" {
		t.Errorf("done %q, refused %q", s, r)
	}
	for _, tc := range []struct{ trace, want string }{
		{strings.Replace(trace, "tmigr-lab: start", "tmigr-lab: begin", 1), `the trace marks the change "begin"`},
		{strings.Split(trace, "     tmigr-guest-130     [000] ...1.    33.023218")[0], "marks 0 of the 2 run-time changes"},
		{"# tracer: nop\n", "lacks the guest's start marker"},
		{strings.Replace(trace, "tmigr-lab: 2s timer_migration=0", "tmigr-lab: failed 2s timer_migration=0", 1), `could not make the change "2s timer_migration=0"`},
	} {
		if _, _, err := doneTimes([]byte(tc.trace), planned); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v; want an error with %q", err, tc.want)
		}
	}
}
