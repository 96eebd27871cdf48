package ftrace

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
)

func TestParseMachine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Machine
	}{
		{"# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.18.44 hz=250 (KVM guest)",
			Machine{CPUs: 2, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 1)}, Kernel: "6.18.44", HZ: 250, Note: "KVM guest"}},
		{`# machine: cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250 cmdline="isolcpus=1-7,9-15" busy=1-7,9-15 sleepers= (QEMU TCG)`,
			Machine{CPUs: 16, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 7), cpumask.Range(8, 15)}, Kernel: "6.12.117", HZ: 250,
				Cmdline: "isolcpus=1-7,9-15", Busy: cpumask.MustParse("1-7,9-15"), Note: "QEMU TCG"}},
		{`cpus=18 nodes=2 node-cpus=0-8;9-17 kernel=6.12.117 hz=250 cmdline="" busy=1,10 sleepers=3,4,12,13,14 (QEMU TCG)`,
			Machine{CPUs: 18, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 8), cpumask.Range(9, 17)}, Kernel: "6.12.117", HZ: 250,
				Busy: cpumask.Of(1, 10), Sleepers: cpumask.Of(3, 4, 12, 13, 14), Note: "QEMU TCG"}},
		// A memory-only node, a quoted command line with blanks and quotes,
		// a note with parentheses, fields in another order.
		{`# machine: hz=1000 kernel=6.19.0-rc1 cmdline="isolcpus=nohz,domain,2-3 foo=\"a b\"" cpus=4 nodes=2 node-cpus=0-3; (lab (rack 3))`,
			Machine{CPUs: 4, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3), {}}, Kernel: "6.19.0-rc1", HZ: 1000,
				Cmdline: `isolcpus=nohz,domain,2-3 foo="a b"`, Note: "lab (rack 3)"}},
		// An offline the kernel refused, beside the changes made.
		{`# machine: cpus=2 nodes=2 node-cpus=0;1 kernel=6.12.118 hz=250 cmdline="isolcpus=1" busy=0-1 sleepers= at="426ms timer_migration=0" refused="350ms offline 1" (QEMU TCG)`,
			Machine{CPUs: 2, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Of(0), cpumask.Of(1)}, Kernel: "6.12.118", HZ: 250, Cmdline: "isolcpus=1",
				Busy: cpumask.Range(0, 1), At: []Change{{At: 426 * time.Millisecond, Kind: ChangeTimerMigration}},
				Refused: []Change{{At: 350 * time.Millisecond, Kind: ChangeOffline, CPU: 1}}, Note: "QEMU TCG"}},
		{"# machine: cpus=8 nodes=2 node-cpus=0-7:2/4;2-3,6-7 kernel=6.12 hz=100",
			Machine{CPUs: 8, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Of(0, 1, 4, 5), cpumask.Of(2, 3, 6, 7)}, Kernel: "6.12", HZ: 100}},
	} {
		got, err := ParseMachine(tc.line)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if !machinesEqual(got, tc.want) {
			t.Errorf("%q:\ngot  %s\nwant %s", tc.line, got.String(), tc.want.String())
		}
		again, err := ParseMachine(got.String())
		if err != nil || !machinesEqual(again, got) {
			t.Errorf("%q: String %q reads back as %s (%v)", tc.line, got.String(), again.String(), err)
		}
	}
}

func TestParseMachineErrors(t *testing.T) {
	const ok = "cpus=16 nodes=2 node-cpus=0-7;8-15 kernel=6.12.117 hz=250"
	for _, tc := range []struct{ line, want string }{
		{"", `machine: field "cpus": missing`},
		{ok + " x", `machine: "x" is not key=value`},
		{ok + " hz=250", `machine: field "hz": appears twice`},
		{strings.Replace(ok, "nodes=2", "nodes=0", 1), `machine: field "nodes": "0" is out of range (want 1..1024)`},
		{strings.Replace(ok, "cpus=16", "cpus=8193", 1), `machine: field "cpus": "8193" is out of range (want 1..8192)`},
		{strings.Replace(ok, "kernel=6.12.117", "kernel=", 1), `machine: field "kernel": "" is not a kernel release`},
		{strings.Replace(ok, "0-7;8-15", "0-7;8-15;", 1), `machine: field "node-cpus": 3 lists for 2 nodes`},
		{strings.Replace(ok, "0-7;8-15", "0-7;7-15", 1), `machine: field "node-cpus": CPU 7 is in node 1 and an earlier node`},
		{strings.Replace(ok, "0-7;8-15", "0-5;8-15", 1), `machine: field "node-cpus": CPUs 6-7 are in no node`},
		{strings.Replace(ok, "0-7;8-15", "0-7;8-x", 1), `machine: field "node-cpus": node 1: cpulist "8-x": bad region "8-x": "x" is not a number`},
		{ok + ` sleepers=3,,4`, `machine: field "sleepers": cpulist "3,,4": bad region "": empty region`},
		{ok + ` cmdline="a"b`, `machine: field "cmdline": text "b" after the quoted value`},
		{ok + ` cmdline="a\q"`, `machine: field "cmdline": unterminated quoted value "a\q"`},
	} {
		_, err := ParseMachine(tc.line)
		var me *MachineError
		if err == nil || err.Error() != tc.want || !errors.As(err, &me) {
			t.Errorf("%q:\ngot  %v\nwant %s", tc.line, err, tc.want)
		}
	}
}

func TestMachineValidate(t *testing.T) {
	good := Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)}, Kernel: "6.12", HZ: 250}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*Machine)
		want string
	}{
		{func(m *Machine) { m.CPUs = 0 }, `machine: field "cpus": 0 is out of range (want 1..8192)`},
		{func(m *Machine) { m.NodeCPUs = []cpumask.Mask{cpumask.Range(0, 4)} }, `machine: field "node-cpus": node 0 holds CPUs 4, beyond cpus=4`},
		{func(m *Machine) { m.HZ = -1 }, `machine: field "hz": -1 is not positive`},
		{func(m *Machine) { m.Kernel = "6 12" }, `machine: field "kernel": "6 12" is not a kernel release`},
		{func(m *Machine) { m.Busy = cpumask.Of(9) }, `machine: field "busy": holds CPUs 9, beyond cpus=4`},
		{func(m *Machine) { m.Cmdline = "a\nb" }, `machine: field "cmdline": holds a newline`},
		{func(m *Machine) { m.Note = "a\nb" }, `machine: note holds a newline`},
	} {
		m := good
		m.NodeCPUs = append([]cpumask.Mask(nil), good.NodeCPUs...)
		tc.edit(&m)
		if err := m.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
	m, _ := ParseMachine("cpus=18 nodes=2 node-cpus=0-8;9-17 kernel=6.12.117 hz=250")
	for cpu, want := range map[int]int{0: 0, 8: 0, 9: 1, 17: 1, 18: -1, -1: -1} {
		if got := m.Node(cpu); got != want {
			t.Errorf("Node(%d) = %d, want %d", cpu, got, want)
		}
	}
}

func TestParseHierarchy(t *testing.T) {
	want := Hierarchy{Levels: 4, ChildrenPerGroup: 8, CrossnodeLevel: 3}
	for _, line := range []string{
		"Timer migration: 4 hierarchy levels; 8 children per group; 3 crossnode level",
		"[    0.088118] Timer migration: 4 hierarchy levels; 8 children per group; 3 crossnode level",
		"# Timer migration: 4 hierarchy levels; 8 children per group; 3 crossnode level  ",
		"<6>[    0.088118] Timer migration: 4 hierarchy levels; 8 children per group; 3 crossnode level",
	} {
		got, err := ParseHierarchy(line)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v", line, got, err)
		}
	}
	if got, err := ParseHierarchy(want.String()); err != nil || got != want {
		t.Errorf("String %q reads back as %+v, %v", want.String(), got, err)
	}
	for _, tc := range []struct{ line, want string }{
		{"Timer migration: 0 hierarchy levels; 8 children per group; 0 crossnode level", "timer migration: 0 hierarchy levels"},
		{"Timer migration: 2 hierarchy levels; 1 children per group; 0 crossnode level", "timer migration: 1 children per group"},
		{"Timer migration: 2 hierarchy levels; 8 children per group; 3 crossnode level", "timer migration: crossnode level 3 outside 0..2"},
		{"Timer migration: 2 hierarchy levels; 8 children per group; 1 crossnode level!", `malformed "Timer migration:" message "Timer migration: 2 hierarchy levels; 8 c..."`},
		{"Timer migration: two hierarchy levels", `malformed "Timer migration:" message "Timer migration: two hierarchy levels"`},
		{"Timer migration: 99999999999999999999 hierarchy levels; 8 children per group; 1 crossnode level", `malformed "Timer migration:" message "Timer migration: 99999999999999999999 hi..."`},
		{"nothing here", `no "Timer migration: " message`},
	} {
		if _, err := ParseHierarchy(tc.line); err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.line, err, tc.want)
		}
	}
}

func TestParseChanges(t *testing.T) {
	cs, err := ParseChanges("1s partition 9-15; 1.5 offline 3;2s timer_migration=0; 2500ms online 3; 3s partition none; 3s timer_migration=1", 16)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{At: time.Second, Kind: ChangePartition, CPUs: cpumask.Range(9, 15)},
		{At: 1500 * time.Millisecond, Kind: ChangeOffline, CPU: 3},
		{At: 2 * time.Second, Kind: ChangeTimerMigration},
		{At: 2500 * time.Millisecond, Kind: ChangeOnline, CPU: 3},
		{At: 3 * time.Second, Kind: ChangePartition},
		{At: 3 * time.Second, Kind: ChangeTimerMigration, On: true},
	}
	if !changesEqual(cs, want) {
		t.Fatalf("got %s\nwant %s", FormatChanges(cs), FormatChanges(want))
	}
	const text = "1s partition 9-15; 1.5s offline 3; 2s timer_migration=0; 2.5s online 3; 3s partition none; 3s timer_migration=1"
	if got := FormatChanges(cs); got != text {
		t.Errorf("printed %q, want %q", got, text)
	}
	if cs, err := ParseChanges("  ", 4); err != nil || cs != nil {
		t.Errorf("blank: %v, %v", cs, err)
	}
	line := `cpus=16 nodes=1 node-cpus=0-15 kernel=7.3.4 hz=250 cmdline="" busy=9-15 sleepers= at="` + text + `" (QEMU TCG)`
	m, err := ParseMachine(line)
	if err != nil {
		t.Fatal(err)
	}
	if !changesEqual(m.At, want) || m.String() != line || m.Note != "QEMU TCG" {
		t.Errorf("machine line %q\nread as %q (at %s)", line, m.String(), FormatChanges(m.At))
	}
	// A machine without changes prints no at=, as the recordings before it.
	m.At = nil
	if strings.Contains(m.String(), "at=") {
		t.Errorf("%q", m.String())
	}
}

func TestParseChangesErrors(t *testing.T) {
	for _, tc := range []struct{ at, want string }{
		{"1s", `change 1: "1s": want 'TIME offline CPU'`},
		{"1s reboot 2", `change 1: "1s reboot 2": unknown change "reboot"`},
		{"1s offline 16", `change 1: "1s offline 16": "16" is not a CPU of 0-15`},
		{"1s offline -1", `"-1" is not a CPU of 0-15`},
		{"1s offline", `want 'TIME offline CPU'`},
		{"1s online 3 4", `want 'TIME online CPU'`},
		{"1s partition 9-16", `change 1: "1s partition 9-16": cpulist "9-16"`},
		{"1s partition", `want 'TIME partition LIST' or 'TIME partition none'`},
		{"1s partition 3-2", `cpulist "3-2"`},
		{"1s timer_migration=2", `timer_migration=2: the sysctl takes 0 or 1`},
		{"1s timer_migration=", `timer_migration=: the sysctl takes 0 or 1`},
		{"1s timer_migration=1 x", `want 'TIME timer_migration=0|1'`},
		{"-1s offline 3", `time "-1s" is outside 0..24h0m0s`},
		{"NaN offline 3", `time "NaN" is not a duration`},
		{"1e9 offline 3", `time "1e9" is outside 0..24h0m0s`},
		{"25h offline 3", `time "25h" is outside`},
		{"soon offline 3", `time "soon" is not a duration`},
		{"2s offline 3; 1s online 3", `change 2 (1s online 3) is listed after a later one (2s offline 3)`},
		{"1s offline 3;", `change 2: "": want`},
	} {
		_, err := ParseChanges(tc.at, 16)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want an error with %q", tc.at, err, tc.want)
		}
	}
	const ok = "cpus=16 nodes=1 node-cpus=0-15 kernel=7.3.4 hz=250"
	for _, tc := range []struct{ line, want string }{
		{ok + ` at="1s offline 99"`, `machine: field "at": change 1: "1s offline 99": "99" is not a CPU of 0-15`},
		{ok + ` at=""`, `machine: field "at": is empty (a machine without changes has no at=)`},
		{ok + ` at="1s partition 1-3" at="2s partition none"`, `machine: field "at": appears twice`},
		{ok + ` refused=""`, `machine: field "refused": is empty (a machine without refused changes has no refused=)`},
		{ok + ` refused="1s offline 20"`, `machine: field "refused": change 1: "1s offline 20": "20" is not a CPU of 0-15`},
	} {
		_, err := ParseMachine(tc.line)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v; want %q", tc.line, err, tc.want)
		}
	}
	// Validate holds a Machine built in code to the same rules.
	m := Machine{CPUs: 4, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3)}, Kernel: "7.3.4", HZ: 250,
		At: []Change{{At: time.Second, Kind: ChangePartition, CPUs: cpumask.Range(2, 5)}}}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "CPUs 4-5 are beyond the 4 CPUs") {
		t.Errorf("Validate: %v", err)
	}
	m.At = []Change{{At: time.Second}}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "unknown kind 0") {
		t.Errorf("Validate: %v", err)
	}
}

func changesEqual(a, b []Change) bool {
	return slices.EqualFunc(a, b, func(x, y Change) bool {
		return x.At == y.At && x.Kind == y.Kind && x.CPU == y.CPU && x.CPUs.Equal(y.CPUs) && x.On == y.On
	})
}

func FuzzParseChanges(f *testing.F) {
	f.Add("1s partition 9-15; 2s timer_migration=0", 16)
	f.Add("0.5 offline 3;1.5 online 3; 3s partition none", 4)
	f.Add("1s partition 0-7:2/4", 8)
	f.Fuzz(func(t *testing.T, s string, cpus int) {
		if cpus < 1 || cpus > cpumask.MaxCPUs {
			return
		}
		cs, err := ParseChanges(s, cpus)
		if err != nil {
			return
		}
		if err := validateChanges(cs, cpus); err != nil {
			t.Fatalf("%q parsed to changes Validate refuses: %v", s, err)
		}
		again, err := ParseChanges(FormatChanges(cs), cpus)
		if err != nil || !changesEqual(cs, again) {
			t.Fatalf("%q printed as %q, which reads as %q (%v)", s, FormatChanges(cs), FormatChanges(again), err)
		}
		// And inside a machine line.
		m := Machine{CPUs: cpus, Nodes: 1, NodeCPUs: []cpumask.Mask{cpumask.Range(0, cpus-1)}, Kernel: "7.3.4", HZ: 250, At: cs}
		if len(cs) > 0 {
			back, err := ParseMachine(m.String())
			if err != nil || !changesEqual(back.At, cs) {
				t.Fatalf("machine line %q reads as %v (%v)", m.String(), back.At, err)
			}
		}
	})
}
