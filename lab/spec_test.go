package lab

import (
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

func TestValidate(t *testing.T) {
	m := cpumask.MustParse
	for _, tc := range []struct {
		name string
		spec Spec
		want string // "" for valid; else a substring of the error
	}{
		{"minimal", Spec{CPUs: 1}, ""},
		{"typical", Spec{CPUs: 16, Nodes: 2, Cmdline: "isolcpus=1-7,9-15", Busy: m("1-7,9-15")}, ""},
		{"node lists", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{m("0,2"), m("1,3")}}, ""},
		{"rt", Spec{CPUs: 4, Kernel: RT, Sleepers: m("1"), RTSleepers: m("2"), Busy: m("3")}, ""},
		{"zero CPUs", Spec{}, "at least 1 CPU"},
		{"negative CPUs", Spec{CPUs: -3}, "at least 1 CPU"},
		{"too many CPUs", Spec{CPUs: 289}, "at most 288"},
		{"negative nodes", Spec{CPUs: 4, Nodes: -1}, "at least 1 node"},
		{"more nodes than CPUs", Spec{CPUs: 2, Nodes: 3}, "3 nodes for 2 CPUs"},
		{"lists and nodes disagree", Spec{CPUs: 4, Nodes: 3, NodeCPUs: []cpumask.Mask{m("0-1"), m("2-3")}}, "2 lists for 3 nodes"},
		{"empty node", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{m("0-3"), {}}}, "node 1 has no CPUs"},
		{"node beyond", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{m("0-1"), m("2-4")}}, "node 1 holds CPUs 4, beyond"},
		{"node overlap", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{m("0-2"), m("2-3")}}, "CPUs 2 are on node 1 and on an earlier node"},
		{"CPU on no node", Spec{CPUs: 4, NodeCPUs: []cpumask.Mask{m("0-1"), m("3")}}, "CPUs 2 are on no node"},
		{"busy beyond", Spec{CPUs: 4, Busy: m("3-4")}, "busy: CPUs 4 are beyond the 4 CPUs (0-3)"},
		{"sleepers beyond", Spec{CPUs: 4, Sleepers: m("9")}, "sleepers: CPUs 9"},
		{"busy and sleepers", Spec{CPUs: 4, Busy: m("1-2"), Sleepers: m("2-3")}, "busy and sleepers overlap on CPUs 2"},
		{"sleepers and rt", Spec{CPUs: 4, Sleepers: m("1"), RTSleepers: m("1")}, "sleepers and rt-sleepers overlap on CPUs 1"},
		{"busy and rt", Spec{CPUs: 4, Busy: m("3"), RTSleepers: m("3")}, "busy and rt-sleepers overlap"},
		{"short period", Spec{CPUs: 2, Period: time.Microsecond}, "period"},
		{"long period", Spec{CPUs: 2, Period: time.Minute}, "period"},
		{"negative duration", Spec{CPUs: 2, Duration: -time.Second}, "duration"},
		{"long duration", Spec{CPUs: 2, Duration: time.Hour}, "duration"},
		{"fractional ms", Spec{CPUs: 2, Duration: 1500 * time.Microsecond}, "whole number of milliseconds"},
		{"fifo prio", Spec{CPUs: 2, FIFOPrio: 100}, "fifo priority"},
		{"flavour", Spec{CPUs: 2, Kernel: "lowlatency"}, `"lowlatency" is neither`},
		{"buffer", Spec{CPUs: 2, BufferKB: 1}, "buffer"},
		{"memory", Spec{CPUs: 2, MemoryMB: 64}, "too little"},
		{"memory over nodes", Spec{CPUs: 3, Nodes: 3, MemoryMB: 1000}, "does not divide evenly over 3 nodes"},
		{"timeout", Spec{CPUs: 2, Duration: 5 * time.Second, Timeout: 5 * time.Second}, "timeout"},
		{"image without config", Spec{CPUs: 2, Host: Host{KernelImage: "bzImage"}}, "needs its config"},
		{"version syntax", Spec{CPUs: 2, KernelVersion: "6"}, "neither a series"},
		{"at after the end", Spec{CPUs: 4, Duration: time.Second, At: []ftrace.Change{{At: time.Second, Kind: ftrace.ChangeTimerMigration}}},
			"comes at or after the end of the 1s recording"},
		{"at out of order", Spec{CPUs: 4, At: []ftrace.Change{{At: 2 * time.Second, Kind: ftrace.ChangeTimerMigration}, {At: time.Second, Kind: ftrace.ChangeTimerMigration}}},
			"listed after a later one"},
		{"at beyond the CPUs", Spec{CPUs: 4, At: []ftrace.Change{{At: time.Second, Kind: ftrace.ChangeOffline, CPU: 4}}}, "CPU 4 is not a CPU of 0-3"},
		{"at offline CPU 0", Spec{CPUs: 4, At: []ftrace.Change{{At: time.Second, Kind: ftrace.ChangeOffline}}}, "CPU 0 cannot go offline"},
		{"at partition of every housekeeping CPU", Spec{CPUs: 4, Busy: cpumask.MustParse("2-3"),
			At: []ftrace.Change{{At: time.Second, Kind: ftrace.ChangePartition, CPUs: cpumask.Range(0, 1)}}}, "every housekeeping CPU (0-1)"},
		{"version suffix", Spec{CPUs: 2, KernelVersion: "6.19.1+deb13"}, "neither a series"},
		{"version four parts", Spec{CPUs: 2, KernelVersion: "6.1.0.56"}, "neither a series"},
		{"cmdline newline", Spec{CPUs: 2, Cmdline: "isolcpus=1\nquiet"}, "byte 0x0a at offset 10"},
		{"cmdline non-ascii", Spec{CPUs: 2, Cmdline: "isolcpus=1\u00a0"}, "printable ASCII"},
		{"cmdline quote", Spec{CPUs: 2, Cmdline: `foo="a b"`}, "quotes"},
		{"cmdline dashdash", Spec{CPUs: 2, Cmdline: "nohz_full=1 -- x"}, `"--"`},
		{"cmdline console", Spec{CPUs: 2, Cmdline: "console=ttyS1"}, "set by the recorder"},
		{"cmdline rdinit", Spec{CPUs: 2, Cmdline: "rdinit=/bin/sh"}, "set by the recorder"},
		{"cmdline trace buf dashed", Spec{CPUs: 2, Cmdline: "trace-buf-size=1M"}, "set by the recorder"},
		{"cmdline long", Spec{CPUs: 2, Cmdline: strings.Repeat("a", 1025)}, "at most 1024"},
		{"cmdline bad list", Spec{CPUs: 4, Cmdline: "isolcpus=1-9"}, "would ignore part of it"},
		{"cmdline bad flag", Spec{CPUs: 4, Cmdline: "isolcpus=bogus,1"}, "Skipped unknown flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestSpreadNodes(t *testing.T) {
	for _, tc := range []struct {
		cpus, nodes int
		want        string
	}{
		{1, 1, "0"},
		{16, 2, "0-7;8-15"},
		{9, 2, "0-4;5-8"},
		{18, 2, "0-8;9-17"},
		{64, 4, "0-15;16-31;32-47;48-63"},
		{10, 3, "0-3;4-6;7-9"},
		{3, 3, "0;1;2"},
	} {
		var got []string
		for _, m := range SpreadNodes(tc.cpus, tc.nodes) {
			got = append(got, m.String())
		}
		if s := strings.Join(got, ";"); s != tc.want {
			t.Errorf("SpreadNodes(%d, %d) = %s, want %s", tc.cpus, tc.nodes, s, tc.want)
		}
	}
}

// TestSpreadNodesAsTopo: the blocks are those of "tmigr topo", CPU c on
// node c*K/N, contiguous, differing in size by at most one.
func TestSpreadNodesAsTopo(t *testing.T) {
	for cpus := 1; cpus <= 70; cpus++ {
		for nodes := 1; nodes <= cpus && nodes <= 8; nodes++ {
			s := Spec{CPUs: cpus, Nodes: nodes}.withDefaults()
			if err := s.validate(); err != nil {
				t.Fatalf("%d CPUs, %d nodes: %v", cpus, nodes, err)
			}
			lo, hi := cpus, 0
			for i, m := range s.NodeCPUs {
				for c := m.First(); c >= 0; c = m.Next(c) {
					if c*nodes/cpus != i {
						t.Fatalf("%d CPUs, %d nodes: CPU %d on node %d", cpus, nodes, c, i)
					}
				}
				if m.Last()-m.First()+1 != m.Weight() {
					t.Fatalf("%d CPUs, %d nodes: node %d = %s is not contiguous", cpus, nodes, i, m)
				}
				lo, hi = min(lo, m.Weight()), max(hi, m.Weight())
			}
			if hi-lo > 1 {
				t.Fatalf("%d CPUs, %d nodes: blocks of %d to %d CPUs", cpus, nodes, lo, hi)
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	s := Spec{CPUs: 16, Nodes: 2}.withDefaults()
	if s.Period != 3*time.Millisecond || s.Duration != 3*time.Second || s.FIFOPrio != 50 ||
		s.Kernel != Generic || s.HRTimers || s.BufferKB != 2048 || s.Host.Mirror != "http://deb.debian.org" {
		t.Errorf("defaults %+v", s)
	}
	// 256 + 16*8 + 16*2*2048/1024 = 448, 224 per node, rounded to 256.
	if s.MemoryMB != 512 {
		t.Errorf("memory %d MiB, want 512", s.MemoryMB)
	}
	if want := min(DefaultTimeout(16, 3*time.Second, hostNow())+DumpTime(16, 2048), maxTimeout); s.Timeout < want-time.Minute || s.Timeout > want+time.Minute {
		t.Errorf("timeout %v, want about %v (DefaultTimeout for this host, and the dump's)", s.Timeout, want)
	}
	if r := (Spec{CPUs: 2, Kernel: RT}).withDefaults(); !r.HRTimers {
		t.Error("the rt kernel records without hrtimer events")
	}
	// Memory: 256 + 64*8 + 64*4 = 1024, 256 per node.
	if m := (Spec{CPUs: 64, Nodes: 4}).withDefaults().MemoryMB; m != 1024 {
		t.Errorf("64 CPUs: %d MiB", m)
	}
	// Every default shape divides its memory evenly over its nodes.
	for cpus := 1; cpus <= 100; cpus += 3 {
		for nodes := 1; nodes <= 8 && nodes <= cpus; nodes++ {
			if s := (Spec{CPUs: cpus, Nodes: nodes}).withDefaults(); s.MemoryMB%nodes != 0 || s.MemoryMB < 512 {
				t.Fatalf("%d CPUs, %d nodes: %d MiB", cpus, nodes, s.MemoryMB)
			}
		}
	}
}

func TestHousekeeping(t *testing.T) {
	m := cpumask.MustParse
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{CPUs: 4}, "0-3"},
		{Spec{CPUs: 4, Busy: m("1-3")}, "0"},
		{Spec{CPUs: 16, Cmdline: "isolcpus=1-7,9-15", Busy: m("1-7,9-15")}, "0,8"},
		{Spec{CPUs: 8, Cmdline: "nohz_full=1-7", Sleepers: m("2")}, "0"},
		{Spec{CPUs: 4, Cmdline: "isolcpus=1-3", Busy: m("0")}, "1-3"}, // all free CPUs isolated: use them anyway
		{Spec{CPUs: 2, Busy: m("0"), RTSleepers: m("1")}, "0"},        // no free CPU: CPU 0
		{Spec{CPUs: 4, Busy: m("0"), Sleepers: m("1-2")}, "3"},
	} {
		s := tc.spec.withDefaults()
		if got := s.housekeeping(); got.String() != tc.want {
			t.Errorf("%+v: housekeeping %s, want %s", tc.spec, got, tc.want)
		}
	}
}

func TestMachineLine(t *testing.T) {
	m := cpumask.MustParse
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{CPUs: 16, Nodes: 2, Cmdline: "isolcpus=1-7,9-15", Busy: m("1-7,9-15")},
			`cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="isolcpus=1-7,9-15" busy=1-7,9-15 sleepers= (QEMU TCG)`},
		{Spec{CPUs: 16, Nodes: 2, Busy: m("2,3,12"), Sleepers: m("5-7,13,14")},
			`cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="" busy=2-3,12 sleepers=5-7,13-14 (QEMU TCG; period=3ms)`},
		{Spec{CPUs: 4, Kernel: RT, Sleepers: m("1"), RTSleepers: m("2-3"), Period: time.Millisecond, Absolute: true},
			`cpus=4 nodes=1 node-cpus=0-3 kernel=6.12.117 hz=250 cmdline="" busy= sleepers=1-3 (QEMU TCG; PREEMPT_RT; fifo-sleepers=2-3; period=1ms absolute)`},
		{Spec{CPUs: 8, Busy: m("1"), TimerFD: m("2-3"), PosixTimers: m("4"), Epoll: m("5"), TCP: m("6"), Storm: m("7"), Period: 5 * time.Millisecond},
			`cpus=8 nodes=1 node-cpus=0-7 kernel=6.12.117 hz=250 cmdline="" busy=1 sleepers= (QEMU TCG; timerfd=2-3; posix-timers=4; epoll=5; tcp=6; storm=7; period=5ms)`},
	} {
		s := tc.spec.withDefaults()
		mach := s.machine("6.12.117", 250, "")
		if got := mach.String(); got != tc.want {
			t.Errorf("machine line\n%s\nwant\n%s", got, tc.want)
		}
		// The line is one ftrace reads back as the same machine.
		back, err := ftrace.ParseMachine(mach.String())
		if err != nil {
			t.Fatal(err)
		}
		if back.String() != mach.String() {
			t.Errorf("read back as %s", back.String())
		}
	}
}

// TestTimerLoads: the timer loads are validated like the others (on the
// machine's CPUs, one load per CPU), go to the guest program's command
// line, and take their CPUs out of housekeeping.
func TestTimerLoads(t *testing.T) {
	m := cpumask.MustParse
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{CPUs: 4, TimerFD: m("4")}, "timerfd: CPUs 4 are beyond"},
		{Spec{CPUs: 4, Busy: m("1-2"), TCP: m("2")}, "busy and tcp overlap on CPUs 2"},
		{Spec{CPUs: 4, Epoll: m("1"), Storm: m("1")}, "epoll and storm overlap"},
		{Spec{CPUs: 4, PosixTimers: m("1"), Period: time.Microsecond}, "period"},
	} {
		if err := tc.spec.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	s := Spec{CPUs: 6, Sleepers: m("1"), TimerFD: m("2"), PosixTimers: m("3"), Epoll: m("4"), TCP: m("5"), Period: 2 * time.Millisecond}.withDefaults()
	if err := s.validate(); err != nil {
		t.Fatal(err)
	}
	p := s.plan("n")
	got := strings.Join(p.guestArgs(), " ")
	want := "run -sleepers 1 -timerfd 2 -posix-timers 3 -epoll 4 -tcp 5 -period 2ms -housekeeping 0 -ready " + guestReadyFile
	if got != want {
		t.Errorf("guest args\n%s\nwant\n%s", got, want)
	}
	if hk := s.housekeeping(); !hk.Equal(m("0")) {
		t.Errorf("housekeeping %s, want 0", hk)
	}
	only := Spec{CPUs: 2, Storm: m("1")}.withDefaults()
	if p := only.plan("n"); !p.hasLoad() || !strings.Contains(strings.Join(p.guestArgs(), " "), "-storm 1 -period 3ms") {
		t.Errorf("a storm alone: %v", p.guestArgs())
	}
}
