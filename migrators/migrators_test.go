package migrators_test

import (
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/migrators"
)

func mask(t *testing.T, s string) cpumask.Mask {
	t.Helper()
	if s == "" {
		return cpumask.Mask{}
	}
	m, err := cpumask.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func model(t *testing.T, rel string) kernel.Model {
	t.Helper()
	r, err := kernel.ParseRelease(rel)
	if err != nil {
		t.Fatal(err)
	}
	return kernel.For(r.Version)
}

// setup is a one-node machine of n CPUs (or nodes of the given sizes).
type setup struct {
	kernel                    string
	cpus                      int
	nodes                     int // contiguous blocks of cpus/nodes
	isolcpus, nohzFull, busy  string
	handlers, never, always   string
	groups                    map[string][3]string // name: candidates, pulls from, "always"/""
	partition                 string
	wantNoHierarchy, wantNone bool
}

func (s setup) run(t *testing.T) *migrators.Prediction {
	t.Helper()
	nodes := max(s.nodes, 1)
	nodeOf := make([]int, s.cpus)
	per := (s.cpus + nodes - 1) / nodes
	for c := range nodeOf {
		nodeOf[c] = c / per
	}
	nohz := mask(t, s.nohzFull)
	p, err := migrators.Predict(migrators.Setup{NodeOf: nodeOf, Nodes: nodes, Model: model(t, s.kernel),
		Domain: mask(t, s.isolcpus), NohzFull: nohz, Partition: mask(t, s.partition), Busy: mask(t, s.busy),
		Timekeeper: kernel.Timekeeper(nohz)})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Handlers.String(); got != s.handlers {
		t.Errorf("handlers %q, want %q", got, s.handlers)
	}
	if got := p.Never.String(); got != s.never {
		t.Errorf("never %q, want %q", got, s.never)
	}
	if got := p.Always.String(); got != s.always {
		t.Errorf("always active %q, want %q", got, s.always)
	}
	if p.Hierarchy == s.wantNoHierarchy {
		t.Errorf("hierarchy %v, want %v", p.Hierarchy, !s.wantNoHierarchy)
	}
	for name, want := range s.groups {
		var g *migrators.Group
		for i := range p.Groups {
			if p.Groups[i].Name == name {
				g = &p.Groups[i]
			}
		}
		if g == nil {
			t.Errorf("no group %s", name)
			continue
		}
		always := ""
		if g.Always {
			always = "always"
		}
		if got := [3]string{g.Candidates.String(), g.From.String(), always}; got != want {
			t.Errorf("%s: candidates, pulls from, always %q, want %q", name, got, want)
		}
	}
	if both := p.Handlers.And(p.Never); !both.Empty() || !p.Handlers.Or(p.Never).Equal(cpumask.Range(0, s.cpus-1)) {
		t.Errorf("handlers %s and never %s do not split the CPUs", p.Handlers, p.Never)
	}
	return p
}

func TestOneGroup(t *testing.T) {
	// Eight CPUs, one group: the busy ones are the candidates, whichever
	// came first; the idle one is pulled from and never pulls.
	setup{kernel: "6.12", cpus: 8, busy: "1-7", handlers: "1-7", never: "0", always: "1-7",
		groups: map[string][3]string{"GRP0:0": {"1-7", "0", "always"}}}.run(t)
	setup{kernel: "6.12", cpus: 8, busy: "3", handlers: "3", never: "0-2,4-7", always: "3",
		groups: map[string][3]string{"GRP0:0": {"3", "0-2,4-7", "always"}}}.run(t)
	// Every CPU busy: a migrator always, nobody to pull from.
	setup{kernel: "6.12", cpus: 8, busy: "0-7", handlers: "", never: "0-7", always: "0-7",
		groups: map[string][3]string{"GRP0:0": {"0-7", "", "always"}}}.run(t)
}

func TestNoBusyCPU(t *testing.T) {
	// No CPU always active: no group always has a migrator; any CPU may
	// take the role when it wakes, or be woken as the last one.
	setup{kernel: "6.12", cpus: 16, handlers: "0-15", never: "", always: "",
		groups: map[string][3]string{"GRP0:0": {"0-7", "0-7", ""}, "GRP0:1": {"8-15", "8-15", ""},
			"GRP1:0": {"0-15", "0-15", ""}}}.run(t)
	// One CPU left in the hierarchy (7.3 excludes the isolated ones):
	// nobody to pull from.
	setup{kernel: "7.3", cpus: 16, isolcpus: "1-15", handlers: "", never: "0-15", always: "",
		groups: map[string][3]string{"GRP0:0": {"0", "", ""}, "GRP1:0": {"0", "", ""}}}.run(t)
}

func TestTwoLevels(t *testing.T) {
	// 16 CPUs on one node: two levels. CPU 9 is busy: GRP0:1 and the top
	// always have it as migrator; GRP0:0 is idle but for its transients,
	// and its CPUs pull from each other.
	// CPU 8, under CPU 9's GRP0:1, never pulls.
	setup{kernel: "6.12", cpus: 16, busy: "9", handlers: "0-7,9", never: "8,10-15", always: "9",
		groups: map[string][3]string{"GRP0:0": {"0-7", "0-7", ""}, "GRP0:1": {"9", "8,10-15", "always"},
			"GRP1:0": {"9", "0-7", "always"}}}.run(t)
	// Two nodes of 8, a busy CPU in each: the top's migrator is one of
	// them, and pulls nothing (both children always active).
	setup{kernel: "6.12", cpus: 16, nodes: 2, busy: "1,9", handlers: "1,9", never: "0,2-8,10-15", always: "1,9",
		groups: map[string][3]string{"GRP0:0": {"1", "0,2-7", "always"}, "GRP0:1": {"9", "8,10-15", "always"},
			"GRP1:0": {"1,9", "", "always"}}}.run(t)
}

func TestIsolcpus612Against73(t *testing.T) {
	// The 40-CPU guest: isolcpus=1-9,11-39, every isolated CPU busy. On
	// 6.12 the isolated CPUs stay: GRP0:0's migrator is one of 1-7 and
	// pulls CPU 0, GRP0:1's one of 8-9,11-15 and pulls CPU 10; the other
	// groups are all busy. On 7.3 only CPUs 0 and 10 are left, idle, and
	// may pull each other at the top.
	setup{kernel: "6.12.118", cpus: 40, isolcpus: "1-9,11-39", busy: "1-9,11-39",
		handlers: "1-9,11-15", never: "0,10,16-39", always: "1-9,11-39",
		groups: map[string][3]string{"GRP0:0": {"1-7", "0", "always"}, "GRP0:1": {"8-9,11-15", "10", "always"},
			"GRP0:2": {"16-23", "", "always"}, "GRP1:0": {"1-9,11-39", "", "always"}}}.run(t)
	setup{kernel: "7.3.4", cpus: 40, isolcpus: "1-9,11-39", busy: "1-9,11-39",
		handlers: "0,10", never: "1-9,11-39", always: "",
		groups: map[string][3]string{"GRP0:0": {"0", "", ""}, "GRP0:1": {"10", "", ""},
			"GRP0:2": {"", "", ""}, "GRP1:0": {"0,10", "0,10", ""}}}.run(t)
}

func TestNohzFull(t *testing.T) {
	// nohz_full=1-11, all busy: their ticks stop, they are idle to the
	// hierarchy; the timekeeper (CPU 0) never stops its tick, so it is
	// GRP0:0's and the top's migrator for good. GRP0:1 has none for
	// good: its CPUs take the role when their ticks run.
	for _, k := range []string{"6.12", "7.3"} {
		setup{kernel: k, cpus: 12, nohzFull: "1-11", busy: "1-11", handlers: "0,8-11", never: "1-7", always: "0",
			groups: map[string][3]string{"GRP0:0": {"0", "1-7", "always"}, "GRP0:1": {"8-11", "8-11", ""},
				"GRP1:0": {"0", "8-11", "always"}}}.run(t)
	}
	// The timekeeper isolated on 7.3: it stays (it must, under nohz_full).
	setup{kernel: "7.3", cpus: 4, isolcpus: "0", nohzFull: "1-2", busy: "1-2", handlers: "0", never: "1-3", always: "0",
		groups: map[string][3]string{"GRP0:0": {"0", "1-3", "always"}}}.run(t)
}

func TestPartition(t *testing.T) {
	// An isolated cpuset partition of busy CPUs: kept on 6.12, excluded
	// from 6.19.
	setup{kernel: "6.12", cpus: 16, busy: "9-15", partition: "9-15", handlers: "0-7,9-15", never: "8", always: "9-15"}.run(t)
	setup{kernel: "6.19", cpus: 16, busy: "9-15", partition: "9-15", handlers: "0-8", never: "9-15", always: ""}.run(t)
}

func TestNoHierarchy(t *testing.T) {
	setup{kernel: "6.1", cpus: 4, busy: "1", handlers: "", never: "0-3", always: "", wantNoHierarchy: true}.run(t)
	setup{kernel: "6.12", cpus: 1, busy: "0", handlers: "", never: "0", always: "", wantNoHierarchy: true}.run(t)
}

func TestForMachinePhases(t *testing.T) {
	for _, tc := range []struct {
		line             string
		phases           int
		handlers, second string
	}{
		{`cpus=16 nodes=1 node-cpus=0-15 kernel=6.12.118 hz=250 cmdline="" busy=9-15 sleepers=1-3 at="31.814s partition 9-15"`,
			2, "0-7,9-15", "0-7,9-15"},
		{`cpus=16 nodes=1 node-cpus=0-15 kernel=7.3.4 hz=250 cmdline="" busy=9-15 sleepers=1-3 at="25.728s partition 9-15"`,
			2, "0-15", "0-8"},
		{`cpus=4 nodes=1 node-cpus=0-3 kernel=7.3.4 hz=250 cmdline="nohz_full=1-3" busy=3 sleepers=1-2 at="28ms timer_migration=1"`,
			1, "0", ""},
		{`cpus=4 nodes=1 node-cpus=0-3 kernel=6.12 hz=250 cmdline="" busy=3 sleepers= at="1s offline 3; 2s online 3"`,
			3, "0-3", "0-2"},
		// An offline the kernel refused moved busy CPU 1's loop (campaign
		// 20261226 draw 207): CPU 1, domain-isolated, stayed idle and
		// CPU 0 ran its timers. Where the loop went is history: CPU 0
		// may pull, none may before.
		{`cpus=2 nodes=2 node-cpus=0;1 kernel=6.12.118 hz=250 cmdline="isolcpus=1" busy=0-1 sleepers= at="426ms timer_migration=0" refused="614ms offline 1"`,
			2, "0", "0"},
	} {
		m, err := ftrace.ParseMachine(tc.line)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := kernel.ParseRelease(m.Kernel)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := migrators.ForMachine(&m, kernel.For(rel.Version))
		if err != nil {
			t.Fatal(err)
		}
		if len(tl.Phases) != tc.phases || tl.Handlers.String() != tc.handlers {
			t.Errorf("%s: %d phases, handlers %s; want %d, %s", tc.line, len(tl.Phases), tl.Handlers, tc.phases, tc.handlers)
			continue
		}
		if tc.phases > 1 {
			if got := tl.Phases[1].Prediction.Handlers.String(); got != tc.second {
				t.Errorf("%s: the second phase's handlers %s, want %s", tc.line, got, tc.second)
			}
		}
		if !tl.Never.Equal(cpumask.Range(0, m.CPUs-1).AndNot(tl.Handlers)) {
			t.Errorf("%s: never %s is not the rest of handlers %s", tc.line, tl.Never, tl.Handlers)
		}
	}
}
