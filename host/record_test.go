package host

import (
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// The recording's machine line is host's, without the load, with the state
// the line carries as changes written as changes at 0s; it parses back.
func TestRecordingMachine(t *testing.T) {
	f := machine("6.19.0", "isolcpus=1-3 root=UUID=secret", "0-7")
	f[dirCPU+"/online"] = "0-6\n"
	f[fileTimerMigration] = "0\n"
	f[dirCgroup+"/cgroup.controllers"] = "cpuset\n"
	f[dirCgroup+"/rt/cpuset.cpus.partition"] = "isolated\n"
	f[dirCgroup+"/rt/cpuset.cpus.effective"] = "4-5\n"
	s := newSnapshot()
	for p, v := range f {
		s.Files[p] = []byte(v)
	}
	h, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	m, r, err := RecordingMachine(h, "tmigr record")
	if err != nil {
		t.Fatal(err)
	}
	hostLine, err := Analyze(h, Options{NoPredict: true})
	if err != nil {
		t.Fatal(err)
	}
	hm := hostLine.Machine
	if m.CPUs != hm.CPUs || m.Kernel != hm.Kernel || m.HZ != hm.HZ || m.Cmdline != hm.Cmdline || m.Nodes != hm.Nodes {
		t.Errorf("record's line %q differs from host's %q", m.String(), hm.String())
	}
	if m.Cmdline != "isolcpus=1-3" || strings.Contains(m.String(), "secret") {
		t.Errorf("cmdline %q: want the isolation alone", m.Cmdline)
	}
	if !m.Busy.Empty() || hm.Busy.Empty() {
		t.Errorf("busy: record %s (want none), host %s", m.Busy, hm.Busy)
	}
	if !strings.HasPrefix(m.Note, "tmigr record") || !strings.HasPrefix(hm.Note, "tmigr host") {
		t.Errorf("notes %q, %q", m.Note, hm.Note)
	}
	if got, want := ftrace.FormatChanges(m.At), "0s offline 7; 0s partition 4-5; 0s timer_migration=0"; got != want {
		t.Errorf("at= %q, want %q", got, want)
	}
	back, err := ftrace.ParseMachine(m.String())
	if err != nil || back.String() != m.String() {
		t.Errorf("the line does not parse back: %v\n%s\n%s", err, m.String(), back.String())
	}
	if r == nil || r.Release.Raw != "6.19.0" {
		t.Errorf("report %+v", r)
	}
}
