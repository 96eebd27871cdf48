package lab

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\ngot:  %q\nwant: %q\n(go test -update rewrites it after review)", path, i+1, g, w)
			}
		}
	}
}

// goldenSpecs are the shapes the golden files show.
var goldenSpecs = []struct {
	name string
	spec Spec
}{
	{"2cpu", Spec{CPUs: 2}},
	{"16cpu-2node-mixed", Spec{CPUs: 16, Nodes: 2, Busy: cpumask.MustParse("2,3,12"), Sleepers: cpumask.MustParse("5-7,13,14")}},
	{"9cpu-2node-uneven", Spec{CPUs: 9, Nodes: 2, Cmdline: "nohz_full=1-8", Busy: cpumask.MustParse("1-8")}},
	{"4cpu-interleaved-rt", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{cpumask.MustParse("0,2"), cpumask.MustParse("1,3")},
		Kernel: RT, Sleepers: cpumask.MustParse("1"), RTSleepers: cpumask.MustParse("2-3"), Period: time.Millisecond, Absolute: true,
		FIFOPrio: 80, Duration: 1500 * time.Millisecond}},
	{"16cpu-at-partition", Spec{CPUs: 16, Busy: cpumask.MustParse("9-15"), Duration: 3 * time.Second, At: []ftrace.Change{
		{At: time.Second, Kind: ftrace.ChangePartition, CPUs: cpumask.Range(9, 15)},
		{At: 2 * time.Second, Kind: ftrace.ChangeTimerMigration}}}},
}

func TestInitScriptGolden(t *testing.T) {
	for _, g := range goldenSpecs {
		t.Run(g.name, func(t *testing.T) {
			s := g.spec.withDefaults()
			if err := s.validate(); err != nil {
				t.Fatal(err)
			}
			script := initScript(s.plan("0123456789abcdef"))
			golden(t, "init-"+g.name+".golden", script)

			// The script is valid shell: a POSIX sh parses it the way
			// busybox's ash will.
			if sh, err := exec.LookPath("sh"); err == nil {
				cmd := exec.Command(sh, "-n")
				cmd.Stdin = strings.NewReader(script)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("sh -n: %v: %s", err, out)
				}
			}
			// Every applet the script runs is linked into /bin.
			for _, cmd := range []string{"mount ", "dmesg ", "taskset ", "sleep ", "kill ", "uname ", "cat ", "gzip ", "base64", "poweroff ", "mkdir ", "echo "} {
				if strings.Contains(script, cmd) && !contains(applets, strings.TrimSpace(cmd)) {
					t.Errorf("the script runs %q, which is not among the applets", cmd)
				}
			}
		})
	}
}

// TestInitScriptContent checks what the script must do, independently of
// the golden files' exact text.
func TestInitScriptContent(t *testing.T) {
	s := Spec{CPUs: 16, Nodes: 2, Cmdline: "isolcpus=1-7,9-15", Busy: cpumask.MustParse("1-6,9-15"),
		RTSleepers: cpumask.MustParse("7"), HRTimers: true, Duration: 2 * time.Second, BufferKB: 4096}.withDefaults()
	script := initScript(s.plan("feedfacecafebeef"))
	for _, want := range []string{
		"M='@@tmigr-lab feedfacecafebeef'",
		"mount -t tracefs tracefs $T",
		"echo 4096 > $T/buffer_size_kb",
		"echo 1 > $T/events/timer/timer_start/enable",
		"echo 1 > $T/events/timer/timer_cancel/enable",
		"for e in $T/events/timer/hrtimer_*/enable",
		"echo 1 > $T/events/timer_migration/enable",
		// The runtime's threads stay off the isolated and loaded CPUs.
		"taskset -c 0,8 /bin/tmigr-guest run -busy 1-6,9-15 -rt-sleepers 7 -period 3ms -fifo-prio 50 -housekeeping 0,8 -ready /run/tmigr-guest.ready &",
		"sleep 2.000",
		"put trace.gz.b64 sh -c 'gzip -c $T/trace | base64'",
		// The console drains before the guest powers off.
		"off() { /bin/tmigr-guest drain; poweroff -f; }",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q", want)
		}
	}
	// Order: tracing starts after the load is ready, stops before the dump.
	order := []string{"dmesg -n 1", "taskset", "while [ ! -e /run/tmigr-guest.ready ]", "echo > $T/trace", "echo 1 > $T/tracing_on", "echo 0 > $T/tracing_on", "kill $G", "put uname", "put trace.gz.b64", "done\"", "\noff\n"}
	at := 0
	for _, o := range order {
		i := strings.Index(script[at:], o)
		if i < 0 {
			t.Fatalf("%q missing or out of order", o)
		}
		at += i + len(o)
	}
	// Without a load there is no guest program to start.
	idle := Spec{CPUs: 2}.withDefaults()
	if s := initScript(idle.plan("x")); strings.Contains(s, "tmigr-guest run") || strings.Contains(s, "hrtimer") {
		t.Errorf("an idle recording starts the guest program or records hrtimers:\n%s", s)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestQEMUArgsGolden(t *testing.T) {
	for _, g := range goldenSpecs {
		t.Run(g.name, func(t *testing.T) {
			s := g.spec.withDefaults()
			if err := s.validate(); err != nil {
				t.Fatal(err)
			}
			args := qemuArgs(&s, "cache/kernels/k/vmlinuz", "run/initramfs.cpio.gz")
			// One option and its value per line, quoted as a shell
			// would need them.
			var b strings.Builder
			b.WriteString("qemu-system-x86_64")
			for i, a := range args {
				if strings.HasPrefix(a, "-") || i == 0 {
					b.WriteString(" \\\n  ")
				} else {
					b.WriteString(" ")
				}
				if strings.ContainsAny(a, " ;\"'") {
					a = "'" + a + "'"
				}
				b.WriteString(a)
			}
			b.WriteString("\n")
			golden(t, "qemu-"+g.name+".golden", b.String())
		})
	}
}

func TestSMP(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{CPUs: 2}, "2,sockets=1,cores=2,threads=1"},
		{Spec{CPUs: 64, Nodes: 4}, "64,sockets=4,cores=16,threads=1"},
		{Spec{CPUs: 9, Nodes: 2}, "9,sockets=9,cores=1,threads=1"},
		{Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{cpumask.MustParse("0,2"), cpumask.MustParse("1,3")}}, "4,sockets=4,cores=1,threads=1"},
		{Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{cpumask.MustParse("0-1"), cpumask.MustParse("2-3")}}, "4,sockets=2,cores=2,threads=1"},
	} {
		s := tc.spec.withDefaults()
		if got := smp(&s); got != tc.want {
			t.Errorf("%d CPUs over %v: -smp %s, want %s", s.CPUs, s.NodeCPUs, got, tc.want)
		}
	}
}
