package kernel

import (
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
)

func TestParseRelease(t *testing.T) {
	for _, c := range []struct {
		in           string
		v            Version
		local        string
		rc           int
		patchUnknown bool
		rt           bool
	}{
		{"6.12.118", V(6, 12, 118), "", 0, false, false},
		{"6.12.118\n", V(6, 12, 118), "", 0, false, false},
		{"7.3.0-1-rt-amd64", V(7, 3, 0), "-1-rt-amd64", 0, true, true},
		{"6.19.0-tmigr-sim", V(6, 19, 0), "-tmigr-sim", 0, false, false},
		{"6.18.44-fc-v1045", V(6, 18, 44), "-fc-v1045", 0, false, false},
		{"6.19-rc1", V(6, 19, 0), "-rc1", 1, false, false},
		{"6.19.0-rc3+", V(6, 19, 0), "-rc3+", 3, false, false},
		{"6.1.0-18-amd64", V(6, 1, 0), "-18-amd64", 0, true, false},
		{"6.12.38+deb13-amd64", V(6, 12, 38), "+deb13-amd64", 0, false, false},
		{"7.0.13-200.fc44.x86_64", V(7, 0, 13), "-200.fc44.x86_64", 0, false, false},
		{"5.14.0-427.13.1.el9_4.x86_64+rt", V(5, 14, 0), "-427.13.1.el9_4.x86_64+rt", 0, true, true},
		{"5.15.0-1034-realtime", V(5, 15, 0), "-1034-realtime", 0, true, true},
		{"2.6.32", V(2, 6, 32), "", 0, false, false},
		{"6.12", V(6, 12, 0), "", 0, false, false},
		{"6.12.1v1", V(6, 12, 1), "v1", 0, false, false},
	} {
		r, err := ParseRelease(c.in)
		if err != nil {
			t.Errorf("ParseRelease(%q): %v", c.in, err)
			continue
		}
		if r.Version != c.v || r.Local != c.local || r.RC != c.rc || r.PatchUnknown != c.patchUnknown || r.RT != c.rt {
			t.Errorf("ParseRelease(%q) = %+v, want %v local %q rc %d patchUnknown %v rt %v",
				c.in, r, c.v, c.local, c.rc, c.patchUnknown, c.rt)
		}
		if r.Raw != strings.TrimSpace(c.in) {
			t.Errorf("ParseRelease(%q).Raw = %q", c.in, r.Raw)
		}
	}
}

func TestParseReleaseErrors(t *testing.T) {
	for _, in := range []string{"", "  ", "linux", "6", "6.", "6..1", "v6.12", "0.1", "100.1", "6.1000",
		"6.12.1 extra", "1234567.1"} {
		if r, err := ParseRelease(in); err == nil {
			t.Errorf("ParseRelease(%q) = %+v, want an error", in, r)
		}
	}
}

// The table of the package doc, release by release.
func TestModelByVersion(t *testing.T) {
	type row struct {
		rel    string
		policy cpu.Policy // with timer_migration=1
		off    cpu.Policy // with timer_migration=0
		on     []Switch
	}
	for _, c := range []row{
		{"4.19.0", cpu.Push, cpu.None, []Switch{PushAtEnqueue}},
		{"6.1.76", cpu.Push, cpu.None, []Switch{PushAtEnqueue}},
		{"6.8.12", cpu.Push, cpu.None, []Switch{PushAtEnqueue}},
		{"6.9.0", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned}},
		{"6.12.93", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned}},
		{"6.12.94", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, RemoteSelfExpiry}},
		{"6.12.118", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, RemoteSelfExpiry}},
		{"6.17.13", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned}},
		{"6.18.1", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned}},
		{"6.18.2", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree}},
		{"6.18.44", cpu.Pull, cpu.Pull, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, RemoteSelfExpiry}},
		{"6.19.0-rc1", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated}},
		{"6.19.3", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated}},
		{"7.0.12", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated, PartitionDomain}},
		{"7.0.13", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated, PartitionDomain, RemoteSelfExpiry}},
		{"7.1.0", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated, PartitionDomain, RemoteSelfExpiry, HrtimerPreferLocal}},
		{"7.3.0-1-rt-amd64", cpu.PullIsolated, cpu.PullIsolated, []Switch{PullHierarchy, SysctlHrtimerOnly, AddTimerOnPinned, NUMABalancedTree, ExcludeIsolated, PartitionDomain, RemoteSelfExpiry, PerCapacity, HrtimerPreferLocal}},
	} {
		r, err := ParseRelease(c.rel)
		if err != nil {
			t.Fatal(err)
		}
		m := For(r.Version)
		if got := m.Policy(true); got != c.policy {
			t.Errorf("%s: Policy(true) = %v, want %v", c.rel, got, c.policy)
		}
		if got := m.Policy(false); got != c.off {
			t.Errorf("%s: Policy(false) = %v, want %v", c.rel, got, c.off)
		}
		if got := m.Switches(); !equalSwitches(got, c.on) {
			t.Errorf("%s: switches %v, want %v", c.rel, got, c.on)
		}
	}
}

func equalSwitches(a, b []Switch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSwitchInfo(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Switches() {
		i := s.Info()
		if i.Name == "" || len(i.Commit) != 12 || i.Title == "" || i.Since == (Version{}) {
			t.Errorf("switch %d: incomplete info %+v", s, i)
		}
		if seen[i.Name] || seen[i.Commit] {
			t.Errorf("switch %d: name or commit %q/%q used twice", s, i.Name, i.Commit)
		}
		seen[i.Name], seen[i.Commit] = true, true
		back, err := ParseSwitch(i.Name)
		if err != nil || back != s {
			t.Errorf("ParseSwitch(%q) = %v, %v", i.Name, back, err)
		}
		// A switch is in its first release and, unless removed, in every
		// later one; never in the release before.
		if !s.In(i.Since) {
			t.Errorf("%s: not in its own release %v", s, i.Since)
		}
		before := V(i.Since.Major, i.Since.Minor-1, 999)
		if i.Since.Minor == 0 {
			before = V(i.Since.Major-1, 99, 999)
		}
		if s.In(before) {
			if _, ok := s.Backport(before); !ok {
				t.Errorf("%s: in %v, before its release %v, without a backport", s, before, i.Since)
			}
		}
		for _, st := range i.Stable {
			if !s.In(st) || s.In(V(st.Major, st.Minor, st.Patch-1)) {
				t.Errorf("%s: backport %v is not where the switch starts in its series", s, st)
			}
		}
	}
	if _, err := ParseSwitch("nope"); err == nil {
		t.Error("ParseSwitch(nope) succeeded")
	}
	if Switch(200).String() == "" || Switch(200).In(V(7, 3, 0)) {
		t.Error("an unknown switch has no name or is in a kernel")
	}
}

func TestWithAndUnmodelled(t *testing.T) {
	m := For(V(6, 12, 118))
	// The pre-fix NUMA tree is modelled (ImbalancedNUMA); the pre-fix
	// remote walk and 7.1's hrtimer_prefer_local are not.
	if len(m.Unmodelled()) != 0 || !m.ImbalancedNUMA() {
		t.Errorf("6.12.118: unmodelled %q, imbalanced tree %v; want none and true", m.Unmodelled(), m.ImbalancedNUMA())
	}
	if n := len(For(V(6, 12, 10)).Unmodelled()); n != 1 {
		t.Errorf("6.12.10: %d unmodelled behaviours, want 1 (the walk before the livelock fix)", n)
	}
	if u := For(V(7, 3, 0)).Unmodelled(); len(u) != 1 || !strings.Contains(u[0], "3288cd486376") {
		t.Errorf("7.3: unmodelled %q, want hrtimer_prefer_local only", u)
	}
	if For(V(6, 19, 0)).ImbalancedNUMA() || For(V(6, 1, 0)).ImbalancedNUMA() {
		t.Error("6.19 (fixed) and 6.1 (no hierarchy) build no imbalanced tree")
	}
	if got := m.With(ExcludeIsolated, true).Policy(true); got != cpu.PullIsolated {
		t.Errorf("6.12 with exclude-isolated: %v", got)
	}
	if got := For(V(7, 3, 0)).With(ExcludeIsolated, false).Policy(true); got != cpu.Pull {
		t.Errorf("7.3 without exclude-isolated: %v", got)
	}
	if got := For(V(6, 12, 0)).With(PullHierarchy, false).Policy(true); got != cpu.None {
		t.Errorf("neither push nor pull: %v", got)
	}
	if !For(V(7, 3, 0)).PerCapacityActive(true, false, true) || For(V(7, 3, 0)).PerCapacityActive(false, false, true) ||
		For(V(7, 3, 0)).PerCapacityActive(true, true, true) || For(V(6, 19, 0)).PerCapacityActive(true, false, true) {
		t.Error("PerCapacityActive: wrong")
	}
	if !strings.Contains(For(V(6, 12, 0)).TimerMigration(false), "hrtimer") ||
		!strings.Contains(For(V(6, 8, 0)).TimerMigration(false), "every timer") {
		t.Error("TimerMigration sentences do not say what the sysctl does")
	}
	if s := For(V(6, 19, 0)).String(); !strings.Contains(s, "exclude-isolated") {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"6.12.118", "7.3.0-1-rt-amd64", "6.19.0-tmigr-sim", "6.19-rc1", "6.1.0-18-amd64", "", "6.", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRelease(s)
		if err != nil {
			return
		}
		if r.Major < 1 || r.Minor < 0 || r.Patch < 0 || r.RC < 0 {
			t.Fatalf("ParseRelease(%q) = %+v: negative or zero version", s, r)
		}
		// The release is the numbers followed by Local.
		if !strings.HasSuffix(r.Raw, r.Local) {
			t.Fatalf("ParseRelease(%q): Local %q is not the tail of %q", s, r.Local, r.Raw)
		}
		m := For(r.Version)
		if m.Has(PushAtEnqueue) && m.Has(PullHierarchy) {
			t.Fatalf("%v: push and pull together", r.Version)
		}
		if r.Version.AtLeast(V(2, 6, 31)) != (m.Has(PushAtEnqueue) || m.Has(PullHierarchy)) {
			t.Fatalf("%v: push %v, pull %v", r.Version, m.Has(PushAtEnqueue), m.Has(PullHierarchy))
		}
		if m.Has(ExcludeIsolated) && !m.Has(PullHierarchy) {
			t.Fatalf("%v: exclusion without a hierarchy", r.Version)
		}
	})
}

// TestExcluded: the CPUs each kernel keeps out of the hierarchy for
// isolation, by the rules of docs/kernels.md K6 and K7.
func TestExcluded(t *testing.T) {
	all := cpumask.Range(0, 15)
	m := func(s string) cpumask.Mask {
		x, err := cpumask.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, c := range []struct {
		v                        Version
		domain, nohz, part, excl string
		timekeeper               int
	}{
		{V(6, 12, 118), "1-7,9-15", "", "", "", -1},       // kept before 6.19
		{V(6, 19, 0), "1-7,9-15", "", "", "1-7,9-15", -1}, // domain-isolated out
		{V(7, 3, 4), "", "", "9-15", "9-15", -1},          // an isolated partition out
		{V(6, 18, 44), "", "", "9-15", "", -1},            // ... not before 6.19
		{V(7, 0, 0), "1-7", "4-7", "", "1-3", 0},          // nohz_full CPUs stay
		{V(6, 19, 14), "0-3", "1-3", "", "", 0},           // the timekeeper under nohz_full stays
		{V(6, 1, 192), "1-3", "", "", "", -1},             // no hierarchy at all
	} {
		km := For(c.v)
		var d, n, p cpumask.Mask
		if c.domain != "" {
			d = m(c.domain)
		}
		if c.nohz != "" {
			n = m(c.nohz)
		}
		if c.part != "" {
			p = m(c.part)
		}
		got := km.Excluded(km.Isolation(d, n, p, c.timekeeper), all)
		if got.String() != c.excl {
			t.Errorf("%v domain=%q nohz_full=%q partition=%q: excluded %q, want %q", c.v, c.domain, c.nohz, c.part, got, c.excl)
		}
	}
	if Timekeeper(cpumask.Mask{}) != -1 || Timekeeper(m("1-3")) != 0 || Timekeeper(m("0-3")) != -1 {
		t.Error("Timekeeper: the boot CPU under nohz_full only")
	}
}

// TestModelled: the modelled series are accepted, and a version outside
// them is refused naming them (5.4, 99.0 and 42.0 were taken in silence
// and modelled with the nearest rules).
func TestModelled(t *testing.T) {
	for _, v := range []Version{V(6, 1, 0), V(6, 12, 118), V(6, 13, 0), V(6, 19, 14), V(7, 0, 0), Newest} {
		if err := Modelled(v); err != nil {
			t.Errorf("%v: %v", v, err)
		}
	}
	for _, tc := range []struct {
		v    Version
		want string
	}{
		{V(5, 4, 0), "kernel 5.4 is older than the oldest modelled"},
		{V(99, 0, 0), "kernel 99.0 is newer than the newest modelled"},
		{V(42, 0, 0), "kernel 42.0 is newer"},
		{V(Newest.Major, Newest.Minor+1, 0), "is newer than the newest modelled"},
		{V(6, 20, 0), "kernel 6.20 is not a Linux series"},
	} {
		err := Modelled(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "6.1-6.19, 7.0-"+Newest.Series()) {
			t.Errorf("%v: %v, want %q and the series", tc.v, err, tc.want)
		}
	}
	if s := Series(); s[0] != "6.1" || s[len(s)-1] != Newest.Series() {
		t.Errorf("Series() = %v", s)
	}
}
