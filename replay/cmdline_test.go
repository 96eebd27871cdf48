package replay

import (
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel/cmdline"
)

// --cmdline gives a trace without a machine line its isolation, and must
// agree with a machine line that has one.
func TestCmdlineOption(t *testing.T) {
	bare := &Trace{}
	s, err := shapeOf(bare, Options{CPUs: 8, Cmdline: "root=/dev/sda isolcpus=1-3 nohz_full=2-3"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := cmdline.ParseIsolation(s.Cmdline, s.CPUs)
	if got.Domain.String() != "1-3" || got.NohzFull.String() != "2-3" {
		t.Errorf("isolation %s / %s from %q", got.Domain, got.NohzFull, s.Cmdline)
	}
	m, err := ftrace.ParseMachine(`cpus=8 nodes=1 node-cpus=0-7 kernel=6.12.1 hz=250 cmdline="isolcpus=nohz,domain,2-3"`)
	if err != nil {
		t.Fatal(err)
	}
	described := &Trace{Header: ftrace.Header{Machine: &m}}
	// The same CPUs in other words: accepted.
	if s, err := shapeOf(described, Options{Cmdline: "quiet isolcpus=2-3 nohz_full=2-3"}); err != nil || s.Cmdline != "quiet isolcpus=2-3 nohz_full=2-3" {
		t.Errorf("an agreeing --cmdline: %v (%q)", err, s.Cmdline)
	}
	for _, c := range []struct{ cmdline, want string }{
		{"isolcpus=1-3", `isolates CPUs 1-3 (nohz_full none), the trace's machine line "isolcpus=nohz,domain,2-3" CPUs 2-3 (nohz_full 2-3)`},
		{"nohz_full=9", `"nohz_full=9" isolates CPUs none`}, // beyond the machine: the kernel ignores it
	} {
		if _, err := shapeOf(described, Options{Cmdline: c.cmdline}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--cmdline %q: %v, want %q", c.cmdline, err, c.want)
		}
	}
}
