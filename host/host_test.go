package host

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
)

// analyzeDir reads a snapshot directory of testdata and analyzes it.
func analyzeDir(t *testing.T, dir string, o Options) *Report {
	t.Helper()
	s, err := Read(os.DirFS(filepath.Join("testdata", dir)))
	if err != nil {
		t.Fatalf("%s: Read: %v", dir, err)
	}
	if len(s.Notes) > 0 {
		t.Fatalf("%s: Read notes %q", dir, s.Notes)
	}
	h, err := Parse(s)
	if err != nil {
		t.Fatalf("%s: Parse: %v", dir, err)
	}
	r, err := Analyze(h, o)
	if err != nil {
		t.Fatalf("%s: Analyze: %v", dir, err)
	}
	return r
}

func mustMask(t *testing.T, s string) cpumask.Mask {
	t.Helper()
	m, err := cpumask.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// warned returns the warning holding every part, or "".
func warned(r *Report, parts ...string) string {
	for _, w := range r.Warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return w
		}
	}
	return ""
}

func excludedWhy(r *Report, why string) cpumask.Mask {
	var m cpumask.Mask
	for _, e := range r.Excluded {
		if strings.Contains(e.Why, why) {
			m = m.Or(e.CPUs)
		}
	}
	return m
}

const seedIsolated = "1-31,33-63,65-95,97-127"

// The machine of the seed posts (128 CPUs, two sockets, every 32nd CPU
// housekeeping) on 6.12: the isolated CPUs stay in the hierarchy, and the
// busy ones first in the groups of CPUs 0, 32, 64 and 96 are their
// migrators.
func TestSeedMachineBefore619(t *testing.T) {
	r := analyzeDir(t, "seed128-6.12", Options{})
	iso := mustMask(t, seedIsolated)
	if r.Policy != cpu.Pull || r.CPUs != 128 || r.Nodes != 2 || !r.Domain.Equal(iso) || r.HZ != 250 || !r.HZKnown {
		t.Fatalf("model %v, %d CPUs, %d nodes, isolcpus %s, HZ %d", r.Policy, r.CPUs, r.Nodes, r.Domain, r.HZ)
	}
	if ex := r.Excludes(); !ex.Empty() {
		t.Errorf("excluded %s, want none on 6.12", ex)
	}
	if len(r.Kept) != 1 || !r.Kept[0].CPUs.Equal(iso) {
		t.Errorf("kept %+v, want the isolated CPUs", r.Kept)
	}
	// Which busy CPU of each group with a housekeeping CPU is its
	// migrator depends on the order they became active: the candidates
	// are all of them, and the housekeeping CPUs never pull.
	if want := mustMask(t, "1-7,33-39,65-71,97-103"); !r.IsolatedHandlers.Equal(want) || !r.Migrators.Handlers.Equal(want) {
		t.Errorf("isolated handlers %s, handlers %s, want %s", r.IsolatedHandlers, r.Migrators.Handlers, want)
	}
	if !r.Migrators.Never.Test(0) || !r.Migrators.Never.Test(8) || r.Migrators.Never.Test(1) {
		t.Errorf("never %s", r.Migrators.Never)
	}
	if g := r.Migrators.Groups[0]; g.Name != "GRP0:0" || !g.Always || g.Candidates.String() != "1-7" || g.From.String() != "0" {
		t.Errorf("GRP0:0: %+v", g)
	}
	p := r.Prediction
	if p == nil {
		t.Fatalf("no prediction: %s", r.PredictionErr)
	}
	// Which of them runs timers depends on where the simulated mix arms
	// global timers (each node's first housekeeping CPU); every puller is
	// one of the candidates, and the two the post names are among them.
	if !p.IsolatedPullers.Subset(&r.IsolatedHandlers) || !p.IsolatedPullers.Test(1) || !p.IsolatedPullers.Test(65) {
		t.Errorf("isolated pullers %s, want 1 and 65 among the candidates %s", p.IsolatedPullers, r.IsolatedHandlers)
	}
	for _, pl := range p.Pulls {
		if iso.Test(pl.Handler) && iso.Test(pl.Owner) {
			t.Errorf("isolated CPU %d ran isolated CPU %d's timers", pl.Handler, pl.Owner)
		}
	}
	if w := warned(r, "stay in the timer-migration hierarchy on 6.12", "the candidates are CPUs 1-7,33-39,65-71,97-103", "6.19"); w == "" {
		t.Errorf("no warning on the isolated migrators in %q", r.Warnings)
	}
	if warned(r, "managed_irq") == "" || warned(r, "5eb579dfd46b") != "" {
		t.Errorf("warnings %q: want managed_irq, and none on the NUMA tree (two blocks of 64 build the same tree)", r.Warnings)
	}
	if got := r.Machine.String(); !strings.Contains(got, `cmdline="isolcpus=`+seedIsolated+`"`) || !strings.Contains(got, "node-cpus=0-63;64-127") ||
		!strings.Contains(got, "busy="+seedIsolated+" ") || strings.Contains(got, "root=") {
		t.Errorf("machine line %q", got)
	}

	// The same machine under a 6.19 kernel, by --kernel.
	r2 := analyzeDir(t, "seed128-6.12", Options{Kernel: "6.19.0", NoPredict: true})
	if r2.Policy != cpu.PullIsolated || !excludedWhy(r2, "isolcpus").Equal(iso) || r2.Running != "6.12.118" {
		t.Errorf("--kernel 6.19.0: model %v, excluded %+v, running %q", r2.Policy, r2.Excluded, r2.Running)
	}
}

func TestSeedMachine619(t *testing.T) {
	r := analyzeDir(t, "seed128-6.19", Options{})
	iso := mustMask(t, seedIsolated)
	if r.Policy != cpu.PullIsolated {
		t.Fatalf("model %v", r.Policy)
	}
	if got := excludedWhy(r, "isolcpus (domain)"); !got.Equal(iso) || !r.Excludes().Equal(iso) {
		t.Errorf("excluded %+v, want the isolated CPUs", r.Excluded)
	}
	if !r.IsolatedHandlers.Empty() || r.Prediction == nil || !r.Prediction.IsolatedPullers.Empty() {
		t.Errorf("isolated handlers %s, prediction %+v", r.IsolatedHandlers, r.Prediction)
	}
	for _, pl := range r.Prediction.Pulls {
		if iso.Test(pl.Handler) || iso.Test(pl.Owner) {
			t.Errorf("pull %+v touches an isolated CPU", pl)
		}
	}
	if warned(r, "timer-migration hierarchy") != "" || warned(r, "5eb579dfd46b") != "" {
		t.Errorf("warnings %q", r.Warnings)
	}
	// Nobody is always active: the four housekeeping CPUs may each pull
	// the others' timers, when awake or woken as the last to go idle.
	if m := r.Migrators; m.Handlers.String() != "0,32,64,96" || !m.Always.Empty() {
		t.Errorf("handlers %s, always active %s", m.Handlers, m.Always)
	}
}

// A 7.3 PREEMPT_RT machine whose CPUs 8-15 were isolated at run time by a
// cgroup v2 partition, with an invalid one beside it.
func TestRuntimePartition(t *testing.T) {
	r := analyzeDir(t, "partition-7.3", Options{})
	part := mustMask(t, "8-15")
	if r.Policy != cpu.PullIsolated || !r.PreemptRT || r.HZ != 1000 || !r.Partition.Equal(part) || !r.Domain.Empty() {
		t.Fatalf("model %v, rt %v, HZ %d, partition %s, isolcpus %s", r.Policy, r.PreemptRT, r.HZ, r.Partition, r.Domain)
	}
	if got := excludedWhy(r, "partition rt.slice"); !got.Equal(part) {
		t.Errorf("excluded %+v", r.Excluded)
	}
	if warned(r, "batch.slice", "invalid isolated partition", "not exclusive") == "" {
		t.Errorf("no warning on the invalid partition: %q", r.Warnings)
	}
	if r.Prediction == nil || !r.Prediction.IsolatedPullers.Empty() {
		t.Errorf("prediction %+v", r.Prediction)
	}
	// Before 6.19 the partition changes nothing for timers.
	r2 := analyzeDir(t, "partition-7.3", Options{Kernel: "6.12.118"})
	if r2.Policy != cpu.Pull || !empty(r2.Excludes()) || r2.IsolatedHandlers.String() != "8-15" {
		t.Errorf("6.12: model %v, excluded %s, isolated handlers %s", r2.Policy, r2.Excludes(), r2.IsolatedHandlers)
	}
	if warned(r2, "isolated partition's CPUs 8-15 stay") == "" {
		t.Errorf("6.12: warnings %q", r2.Warnings)
	}
}

// nohz_full= on a kernel without CONFIG_NO_HZ_FULL (a Raspberry Pi 5 on
// its stock kernel), no NUMA sysfs, irqaffinity over the isolated CPU.
func TestNohzFullUnsupported(t *testing.T) {
	r := analyzeDir(t, "rpi5-nohz-unsupported", Options{})
	if !r.NohzFull.Empty() || !r.Domain.Equal(cpumask.Of(3)) || r.Nodes != 1 {
		t.Fatalf("nohz_full %s, isolcpus %s, %d nodes", r.NohzFull, r.Domain, r.Nodes)
	}
	for _, want := range [][]string{
		{"nohz_full=3 is ignored", "CONFIG_NO_HZ_FULL"},
		{"irqaffinity=0-3 includes isolated CPU 3", "irqaffinity=0-2"},
		{"isolated CPU 3 stays", "without CONFIG_NO_HZ_FULL"},
	} {
		if warned(r, want...) == "" {
			t.Errorf("no warning with %q in %q", want, r.Warnings)
		}
	}
	if !r.IsolatedHandlers.Equal(cpumask.Of(3)) || r.Prediction == nil || !r.Prediction.IsolatedPullers.Equal(cpumask.Of(3)) {
		t.Errorf("isolated handlers %s, prediction %+v", r.IsolatedHandlers, r.Prediction)
	}
	if r.RcuNocbs == nil || !r.RcuNocbs.Equal(cpumask.Of(3)) || r.IrqAffinity == nil || r.IrqAffinity.String() != "0-3" {
		t.Errorf("rcu_nocbs %v, irqaffinity %v", r.RcuNocbs, r.IrqAffinity)
	}
}

// cgroup v1 cpusets on a 5.15 kernel: push at enqueue, no hierarchy, and a
// sched_load_balance=0 cpuset that does nothing for timers.
func TestCgroupV1(t *testing.T) {
	r := analyzeDir(t, "cgroup-v1-5.15", Options{})
	if r.Policy != cpu.Push || r.Hierarchy != nil || !r.NohzFull.Equal(mustMask(t, "4-7")) || !r.Release.PatchUnknown {
		t.Fatalf("model %v, hierarchy %v, nohz_full %s, release %+v", r.Policy, r.Hierarchy != nil, r.NohzFull, r.Release)
	}
	if warned(r, "cgroup v1 cpuset cpuset/rt", "sched_load_balance=0") == "" {
		t.Errorf("no warning on the v1 cpuset: %q", r.Warnings)
	}
	if warned(r, "cgroup v1 cpuset cpuset (") != "" {
		t.Errorf("a warning on the root cpuset: %q", r.Warnings)
	}
	if warned(r, "nohz_full CPUs 4-7 are in neither") == "" || warned(r, "hrtimer started on a nohz_full CPU") == "" {
		t.Errorf("warnings %q", r.Warnings)
	}
	if r.Prediction == nil {
		t.Fatalf("no prediction: %s", r.PredictionErr)
	}
}

// The CI machine's own snapshot, saved with tmigr host --save: a 2-CPU
// Firecracker guest with cgroup v1 and /proc/config.gz.
func TestCIMachine(t *testing.T) {
	r := analyzeDir(t, "ci-6.18-firecracker", Options{})
	if r.Policy != cpu.Pull || r.CPUs != 2 || r.ConfigSource != "proc/config.gz" || !r.HZKnown || r.Workload != "idle" {
		t.Fatalf("model %v, %d CPUs, config %q, workload %q", r.Policy, r.CPUs, r.ConfigSource, r.Workload)
	}
	if len(r.Warnings) != 0 || !empty(r.Excludes()) || r.Prediction == nil {
		t.Errorf("warnings %q, excluded %s, prediction %v", r.Warnings, r.Excludes(), r.Prediction)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	ents, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || e.Name() == "fuzz" {
			continue
		}
		n++
		s, err := Read(os.DirFS(filepath.Join("testdata", e.Name())))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "snap")
		if err := s.Save(dir); err != nil {
			t.Fatalf("%s: Save: %v", e.Name(), err)
		}
		back, err := Read(os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		sameFiles(t, e.Name()+" dir", s, back)
		if err := s.Save(dir); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("%s: Save over a snapshot: %v", e.Name(), err)
		}
		var buf bytes.Buffer
		if err := s.SaveTar(&buf); err != nil {
			t.Fatal(err)
		}
		first := append([]byte(nil), buf.Bytes()...)
		tb, err := ReadTar(&buf)
		if err != nil {
			t.Fatalf("%s: ReadTar: %v", e.Name(), err)
		}
		sameFiles(t, e.Name()+" tar", s, tb)
		var again bytes.Buffer
		if err := tb.SaveTar(&again); err != nil || !bytes.Equal(first, again.Bytes()) {
			t.Errorf("%s: the same snapshot gave another tarball (%v)", e.Name(), err)
		}
	}
	if n < 6 {
		t.Errorf("%d snapshots in testdata, want at least 6", n)
	}
}

func sameFiles(t *testing.T, what string, a, b *Snapshot) {
	t.Helper()
	if len(a.Files) != len(b.Files) {
		t.Errorf("%s: %d files, then %d", what, len(a.Files), len(b.Files))
	}
	for p, v := range a.Files {
		if w, ok := b.Files[p]; !ok || !bytes.Equal(v, w) {
			t.Errorf("%s: %s differs after the round trip", what, p)
		}
	}
}

// machine is a small consistent machine to change for one case.
func machine(rel, cmdline string, cpus string) map[string]string {
	return map[string]string{
		fileRelease:                rel + "\n",
		fileCmdline:                cmdline + "\n",
		fileTimerMigration:         "1\n",
		dirCPU + "/possible":       cpus + "\n",
		dirCPU + "/present":        cpus + "\n",
		dirCPU + "/online":         cpus + "\n",
		fileBootConfig + rel:       "CONFIG_SMP=y\nCONFIG_NO_HZ_COMMON=y\nCONFIG_NO_HZ_FULL=y\nCONFIG_HZ=250\nCONFIG_CPU_ISOLATION=y\n",
		dirNode + "/node0/cpulist": cpus + "\n",
	}
}

func analyzeFiles(t *testing.T, files map[string]string, o Options) (*Report, error) {
	t.Helper()
	s := newSnapshot()
	for p, v := range files {
		s.Files[p] = []byte(v)
	}
	h, err := Parse(s)
	if err != nil {
		return nil, err
	}
	if o.Duration == 0 {
		o.Duration = 2 * time.Second
	}
	return Analyze(h, o)
}

func TestConstructedMachines(t *testing.T) {
	type check func(t *testing.T, r *Report)
	cases := []struct {
		name  string
		edit  func(f map[string]string)
		check check
	}{
		{"timekeeper stays under nohz_full", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=0-3 nohz_full=1-3\n"
			f[dirCPU+"/isolated"] = "0-3\n"
			f[dirCPU+"/nohz_full"] = "1-3\n"
		}, func(t *testing.T, r *Report) {
			if r.Timekeeper != 0 || !empty(r.Excludes()) || len(r.Kept) != 2 {
				t.Errorf("timekeeper %d, excluded %s, kept %+v", r.Timekeeper, r.Excludes(), r.Kept)
			}
		}},
		{"isolcpus=nohz,domain without NO_HZ_FULL isolates nothing", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=nohz,domain,1-3\n"
			f[fileBootConfig+"6.19.0"] = "CONFIG_SMP=y\nCONFIG_NO_HZ_COMMON=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_HZ=250\n"
		}, func(t *testing.T, r *Report) {
			if !r.Domain.Empty() || !r.NohzFull.Empty() || warned(r, "the whole parameter is ignored") == "" {
				t.Errorf("isolcpus %s nohz_full %s warnings %q", r.Domain, r.NohzFull, r.Warnings)
			}
		}},
		{"isolcpus flags without domain", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=managed_irq,1-3\n"
		}, func(t *testing.T, r *Report) {
			if !r.Domain.Empty() || !r.ManagedIRQ.Equal(mustMask(t, "1-3")) || warned(r, `not "domain"`, "isolcpus=managed_irq,domain,1-3") == "" {
				t.Errorf("isolcpus %s managed_irq %s warnings %q", r.Domain, r.ManagedIRQ, r.Warnings)
			}
		}},
		{"unknown isolcpus flag", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=domian,1-3\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, `unknown flag "domian"`) == "" || warned(r, `not "domain"`) == "" {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"nohz=off", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=1-3 nohz=off\n"
		}, func(t *testing.T, r *Report) {
			if r.Policy != cpu.None || r.Hierarchy != nil || !strings.Contains(r.PolicyWhy, "nohz=off") {
				t.Errorf("model %v (%s)", r.Policy, r.PolicyWhy)
			}
		}},
		{"uniprocessor kernel", func(f map[string]string) {
			f[fileBootConfig+"6.19.0"] = "# CONFIG_SMP is not set\nCONFIG_HZ=100\n"
		}, func(t *testing.T, r *Report) {
			if r.Policy != cpu.None || r.HZ != 100 {
				t.Errorf("model %v HZ %d", r.Policy, r.HZ)
			}
		}},
		{"timer_migration=0 on 6.12", func(f map[string]string) {
			f[fileRelease] = "6.12.118\n"
			f[fileBootConfig+"6.12.118"] = f[fileBootConfig+"6.19.0"]
			f[fileTimerMigration] = "0\n"
		}, func(t *testing.T, r *Report) {
			if r.Policy != cpu.Pull || warned(r, "timer_migration=0 does not keep timers local on 6.12") == "" {
				t.Errorf("model %v warnings %q", r.Policy, r.Warnings)
			}
		}},
		{"timer_migration=0 on 6.8", func(f map[string]string) {
			f[fileRelease] = "6.8.12\n"
			f[fileTimerMigration] = "0\n"
		}, func(t *testing.T, r *Report) {
			if r.Policy != cpu.None || warned(r, "timer_migration=0") != "" {
				t.Errorf("model %v warnings %q", r.Policy, r.Warnings)
			}
		}},
		{"sysfs disagrees with the command line", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=1-3\n"
			f[dirCPU+"/isolated"] = "2-3\n"
		}, func(t *testing.T, r *Report) {
			if !r.Domain.Equal(mustMask(t, "2-3")) || warned(r, `reports isolated CPUs "2-3"`) == "" {
				t.Errorf("isolcpus %s warnings %q", r.Domain, r.Warnings)
			}
		}},
		{"a partition that isolates every CPU", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=1-3\n"
			f[dirCgroup+"/cgroup.controllers"] = "cpuset\n"
			f[dirCgroup+"/rt/cpuset.cpus.partition"] = "isolated\n"
			f[dirCgroup+"/rt/cpuset.cpus.effective"] = "0\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "no housekeeping CPU is left") == "" || r.PredictionErr == "" || r.Prediction != nil {
				t.Errorf("warnings %q prediction error %q", r.Warnings, r.PredictionErr)
			}
		}},
		{"offline and absent CPUs", func(f map[string]string) {
			f[dirCPU+"/possible"] = "0-7\n"
			f[dirCPU+"/present"] = "0-5\n"
			f[dirCPU+"/online"] = "0-3,5\n"
			f[dirNode+"/node0/cpulist"] = "0-3,5\n"
		}, func(t *testing.T, r *Report) {
			if !excludedWhy(r, "not present").Equal(mustMask(t, "6-7")) || !excludedWhy(r, "offline").Equal(cpumask.Of(4)) {
				t.Errorf("excluded %+v", r.Excluded)
			}
			if r.Prediction == nil {
				t.Errorf("no prediction: %s", r.PredictionErr)
			}
		}},
		{"a Debian ABI release on two nodes", func(f map[string]string) {
			f[fileRelease] = "6.18.0-3-amd64\n"
			f[fileBootConfig+"6.18.0-3-amd64"] = f[fileBootConfig+"6.19.0"]
			f[dirNode+"/node0/cpulist"] = "0-1\n"
			f[dirNode+"/node1/cpulist"] = "2-3\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "distribution ABI", "numa-balanced-tree (from 6.18.2)") == "" || r.Nodes != 2 {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"an imbalanced NUMA tree before 6.19: a small first node", func(f map[string]string) {
			f[fileRelease] = "6.12.118\n"
			f[fileBootConfig+"6.12.118"] = f[fileBootConfig+"6.19.0"]
			for _, n := range []string{"possible", "present", "online"} {
				f[dirCPU+"/"+n] = "0-23\n"
			}
			f[dirNode+"/node0/cpulist"] = "0-7\n"
			f[dirNode+"/node1/cpulist"] = "8-23\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "5eb579dfd46b", "node 1's first CPU (8) comes up when 8 CPU(s) of node 0 are up") == "" {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"an imbalanced NUMA tree before 6.19: interleaved nodes", func(f map[string]string) {
			f[fileRelease] = "6.12.118\n"
			f[fileBootConfig+"6.12.118"] = f[fileBootConfig+"6.19.0"]
			for _, n := range []string{"possible", "present", "online"} {
				f[dirCPU+"/"+n] = "0-31\n"
			}
			f[dirNode+"/node0/cpulist"] = "0-31:1/2\n"
			f[dirNode+"/node1/cpulist"] = "1-31:1/2\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "5eb579dfd46b", "node 1's first CPU (1)") == "" {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"the balanced tree on 6.19: no NUMA warning", func(f map[string]string) {
			for _, n := range []string{"possible", "present", "online"} {
				f[dirCPU+"/"+n] = "0-31\n"
			}
			f[dirNode+"/node0/cpulist"] = "0-31:1/2\n"
			f[dirNode+"/node1/cpulist"] = "1-31:1/2\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "5eb579dfd46b") != "" || r.Nodes != 2 {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"per-capacity hierarchies with CONFIG_BROKEN", func(f map[string]string) {
			f[fileRelease] = "7.3.0\n"
			f[fileBootConfig+"7.3.0"] = f[fileBootConfig+"6.19.0"] + "CONFIG_BROKEN=y\n"
			for c, v := range []string{"1024", "1024", "512", "512"} {
				f[dirCPU+"/cpu"+string(rune('0'+c))+"/cpu_capacity"] = v + "\n"
			}
		}, func(t *testing.T, r *Report) {
			if warned(r, "one hierarchy per capacity", "098cbaad8e57") == "" {
				t.Errorf("warnings %q", r.Warnings)
			}
		}},
		{"irqaffinity and rcu_nocbs", func(f map[string]string) {
			f[fileCmdline] = "isolcpus=domain,managed_irq,2-3 irqaffinity=0-2 rcu_nocbs\n"
		}, func(t *testing.T, r *Report) {
			if warned(r, "irqaffinity=0-2 includes isolated CPU 2") == "" || r.RcuNocbs == nil || !r.RcuNocbs.Empty() ||
				warned(r, "managed_irq flag") != "" {
				t.Errorf("warnings %q rcu_nocbs %v", r.Warnings, r.RcuNocbs)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := machine("6.19.0", "quiet", "0-3")
			c.edit(f)
			r, err := analyzeFiles(t, f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
			var b strings.Builder
			if err := r.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "# machine: ") {
				t.Errorf("WriteText: %v", err)
			}
			if j := r.JSON(); j.Kernel == "" || j.Model != r.Policy.String() {
				t.Errorf("JSON %+v", j)
			}
		})
	}
}

func TestBadSnapshots(t *testing.T) {
	cases := []struct {
		name string
		edit func(f map[string]string)
		want string
	}{
		{"no release", func(f map[string]string) { delete(f, fileRelease) }, "no kernel release"},
		{"no CPU list", func(f map[string]string) {
			delete(f, dirCPU+"/possible")
			delete(f, dirCPU+"/present")
			delete(f, dirCPU+"/online")
		}, "no CPU list"},
		{"online not present", func(f map[string]string) { f[dirCPU+"/online"] = "0-4\n" }, "online CPUs 4 are not present"},
		{"bad cpulist", func(f map[string]string) { f[dirCPU+"/possible"] = "0-x\n" }, dirCPU + "/possible"},
		{"node overlap", func(f map[string]string) { f[dirNode+"/node1/cpulist"] = "3\n" }, "CPU 3 is also on node 0"},
		{"bad partition", func(f map[string]string) {
			f[dirCgroup+"/cgroup.controllers"] = "cpuset\n"
			f[dirCgroup+"/x/cpuset.cpus.partition"] = "isolate\n"
		}, "x/cpuset.cpus.partition"},
		{"bad timer_migration", func(f map[string]string) { f[fileTimerMigration] = "2\n" }, fileTimerMigration},
		{"bad config", func(f map[string]string) { f[fileBootConfig+"6.19.0"] = "HZ=250\n" }, "not CONFIG_NAME=value"},
		{"bad release", func(f map[string]string) { f[fileRelease] = "linux\n" }, "kernel release"},
		{"unterminated quote", func(f map[string]string) { f[fileCmdline] = "isolcpus=\"1-3\n" }, "unterminated quote"},
	}
	for _, c := range cases {
		f := machine("6.19.0", "quiet", "0-3")
		c.edit(f)
		_, err := analyzeFiles(t, f, Options{NoPredict: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	// --kernel stands in for a missing release.
	f := machine("6.19.0", "quiet", "0-3")
	delete(f, fileRelease)
	if r, err := analyzeFiles(t, f, Options{Kernel: "6.12.118", NoPredict: true}); err != nil || r.Policy != cpu.Pull {
		t.Errorf("--kernel without osrelease: %v", err)
	}
	// A bad workload is an error, not an empty prediction.
	if _, err := analyzeFiles(t, machine("6.19.0", "quiet", "0-3"), Options{Workload: "nope"}); err == nil || !strings.Contains(err.Error(), "--workload") {
		t.Errorf("bad workload: %v", err)
	}
}

func TestReadTarRefuses(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"../etc/passwd", "unsafe"},
		{"/proc/cmdline", "unsafe"},
		{"proc/../../x", "unsafe"},
	} {
		var buf bytes.Buffer
		s := newSnapshot()
		s.Files[c.name] = []byte("x\n")
		if err := s.SaveTar(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTar(&buf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := ReadTar(strings.NewReader("not a tarball at all")); err == nil {
		t.Error("ReadTar of text succeeded")
	}
	var buf bytes.Buffer
	s := newSnapshot()
	s.Files["etc/shadow"] = []byte("x\n")
	_ = s.SaveTar(&buf)
	if _, err := ReadTar(&buf); err == nil || !strings.Contains(err.Error(), "none of the files") {
		t.Errorf("a tarball of other files: %v", err)
	}
}

func TestWanted(t *testing.T) {
	for p, want := range map[string]bool{
		fileRelease: true, fileCmdline: true, "boot/config-6.12.118": true, "boot/vmlinuz-6.12": false,
		dirCPU + "/cpu12/cpu_capacity": true, dirCPU + "/cpu12/online": false, dirCPU + "/cpufreq/cpu_capacity": false,
		dirNode + "/node1/cpulist": true, dirNode + "/node1/meminfo": false,
		dirCgroup + "/a/b/cpuset.cpus.partition": true, dirCgroup + "/a/memory.max": false,
		dirCgroup + "/cpuset/rt/cpus": true, dirCgroup + "/memory/rt/cpus": false, "etc/passwd": false,
	} {
		if Wanted(p) != want {
			t.Errorf("Wanted(%q) = %v", p, !want)
		}
	}
}

func empty(m cpumask.Mask) bool { return m.Empty() }
