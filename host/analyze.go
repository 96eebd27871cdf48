package host

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/kernel"
	"github.com/tmigr/tmigr/kernel/cmdline"
	"github.com/tmigr/tmigr/migrators"
)

// Options tune Analyze.
type Options struct {
	// Kernel is a release to model instead of the machine's own
	// ("6.19.0"): what would that kernel do with this setup.
	Kernel string
	// Workload is the simulated workload in tmigr sim's syntax; "" is a
	// busy task (oslat) on every isolated and nohz_full CPU, or only the
	// housekeeping timers ("idle") when there is none.
	Workload string
	// Duration is the measured simulated time (0: 10 s), Warmup the time
	// before it (0: 1 s).
	Duration, Warmup time.Duration
	// Seed seeds the simulation (the same seed, the same prediction).
	Seed uint64
	// NoPredict skips the simulation.
	NoPredict bool

	// recorder names the program in the machine line's note ("tmigr
	// record"); "" is tmigr host.
	recorder string
}

// Report is what Analyze says about a machine.
type Report struct {
	// Release is the kernel modelled; Running is the machine's own release
	// when Options.Kernel replaced it, else "".
	Release kernel.Release
	Running string
	Model   kernel.Model
	// Policy is how the kernel places wheel timers on this machine;
	// PolicyWhy says why in a sentence.
	Policy    cpu.Policy
	PolicyWhy string
	// TimerMigration is kernel.timer_migration (-1: not there).
	TimerMigration int

	// HZ is CONFIG_HZ (HZKnown false: assumed 250). PreemptRT is a
	// PREEMPT_RT kernel. ConfigSource names the config file, "" if none.
	HZ           int
	HZKnown      bool
	PreemptRT    bool
	ConfigSource string

	// CPUs is the number of possible CPUs (the hierarchy is sized for
	// them); Possible, Present and Online are the sets.
	CPUs                      int
	Possible, Present, Online cpumask.Mask
	// NodeOf is each CPU's NUMA node, NodeCPUs each node's CPUs, Nodes the
	// number of possible nodes.
	NodeOf   []int
	NodeCPUs []cpumask.Mask
	Nodes    int

	// The isolation the kernel set up: isolcpus (domain), nohz_full,
	// managed_irq, the isolated cpuset partitions (cgroup v2), rcu_nocbs
	// and irqaffinity (nil when not given).
	Domain, NohzFull, ManagedIRQ cpumask.Mask
	Partition                    cpumask.Mask
	Partitions                   []Partition // the valid isolated ones
	RcuNocbs, IrqAffinity        *cpumask.Mask
	// Timekeeper is the nohz timekeeper (tick_do_timer_cpu at boot).
	Timekeeper int

	// Excluded are the CPUs out of the hierarchy, by reason; Kept the
	// isolated CPUs that stay in it, by reason.
	Excluded, Kept []CPUSet
	// Hierarchy is the timer-migration hierarchy the kernel builds (nil
	// for the push and none models), BootLine its boot message and Picture
	// its drawing as tmigr topo prints it.
	Hierarchy *hier.Hierarchy
	BootLine  string
	Picture   string
	// Migrators is what the kernel's rules determine about who may run
	// other CPUs' timers once the workload's busy CPUs run and the others
	// idle (package migrators): per group, whether it always has a
	// migrator and the candidates; IsolatedHandlers are the isolated or
	// nohz_full CPUs among the handlers.
	Migrators        *migrators.Prediction
	IsolatedHandlers cpumask.Mask

	// Machine is the machine as a "# machine:" line.
	Machine ftrace.Machine
	// Busy are the CPUs the default workload keeps busy.
	Busy cpumask.Mask
	// Workload is the workload; Prediction what one simulated run of it
	// gives (one history of the many the rules allow), or PredictionErr
	// why there is none.
	Workload      string
	Prediction    *Prediction
	PredictionErr string

	// Warnings are where the setup likely does not do what its author
	// meant, Notes what else the reader should know (assumptions,
	// what the kernel logged).
	Warnings, Notes []string

	noHzFull int // the kernel has NO_HZ_FULL: 1, 0, -1 unknown
}

// CPUSet is a set of CPUs with the reason they are in it.
type CPUSet struct {
	CPUs cpumask.Mask
	Why  string
}

func (r *Report) warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

func (r *Report) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Excludes returns every CPU out of the hierarchy.
func (r *Report) Excludes() cpumask.Mask {
	var m cpumask.Mask
	for _, e := range r.Excluded {
		m = m.Or(e.CPUs)
	}
	return m
}

// ErrNoRelease is returned when neither the snapshot nor the options name
// the kernel.
var ErrNoRelease = errors.New("no kernel release: proc/sys/kernel/osrelease is missing (give --kernel VERSION)")

// Analyze works out what the machine's kernel does with its setup: the
// model of its release, the isolation it set up, the hierarchy it built,
// the CPUs it left out and why, the warnings, and (unless NoPredict) the
// machine simulated under that model. The error is for a snapshot that
// does not describe a machine (no CPU list, inconsistent files) or a bad
// option; a setup the simulator refuses leaves PredictionErr set instead.
func Analyze(h *Host, o Options) (*Report, error) {
	r := &Report{TimerMigration: h.TimerMigration}
	relStr := h.Release
	if o.Kernel != "" {
		relStr = o.Kernel
		if h.Release != "" && h.Release != o.Kernel {
			r.Running = h.Release
		}
	}
	if relStr == "" {
		return nil, ErrNoRelease
	}
	rel, err := kernel.ParseRelease(relStr)
	if err != nil {
		return nil, err
	}
	r.Release, r.Model = rel, kernel.For(rel.Version)
	if err := r.cpus(h); err != nil {
		return nil, err
	}
	if err := r.nodes(h); err != nil {
		return nil, err
	}
	r.config(h)
	r.noHzFull = r.isolation(h)
	if err := r.partitions(h); err != nil {
		return nil, err
	}
	r.policy(h)
	r.exclusions()
	r.hierarchy()
	r.warnings(h, r.noHzFull)
	r.Busy = r.Domain.Or(r.NohzFull).Or(r.Partition).And(r.Online)
	r.Machine = ftrace.Machine{CPUs: r.CPUs, Nodes: r.Nodes, NodeCPUs: r.NodeCPUs, Kernel: rel.Raw, HZ: r.HZ,
		Cmdline: h.Cmdline.Isolation(), Note: r.machineNote(o.recorder)}
	r.Workload = o.Workload
	if r.Workload == "" {
		r.Machine.Busy = r.Busy
		r.Workload = "idle"
		if !r.Busy.Empty() {
			r.Workload = "oslat:" + r.Busy.String()
		}
	}
	if err := r.Machine.Validate(); err != nil {
		return nil, fmt.Errorf("the machine read does not validate: %v", err)
	}
	if err := r.migrators(); err != nil {
		return nil, err
	}
	if !o.NoPredict {
		if err := r.predict(o); err != nil {
			return nil, err
		}
	}
	r.migratorWarning()
	return r, nil
}

// cpus takes the CPU sets: possible (else present, else online) sizes the
// machine; present and online default to the larger set.
func (r *Report) cpus(h *Host) error {
	switch {
	case h.HasPossible:
		r.Possible = h.Possible
	case h.HasPresent:
		r.Possible = h.Present
		r.notef("no %s/possible: the present CPUs are taken as the possible ones", dirCPU)
	case h.HasOnline:
		r.Possible = h.Online
		r.notef("no %s/possible or present: the online CPUs are taken as the possible ones", dirCPU)
	default:
		return fmt.Errorf("no CPU list: %s/possible, present and online are all missing", dirCPU)
	}
	if r.Possible.Empty() {
		return fmt.Errorf("%s/possible: no CPU", dirCPU)
	}
	r.CPUs = r.Possible.Last() + 1
	if missing := cpumask.Range(0, r.CPUs-1).AndNot(r.Possible); !missing.Empty() {
		r.notef("possible CPUs %s have gaps (%s missing): the missing ones are treated as not present", r.Possible, missing)
	}
	r.Present, r.Online = r.Possible, r.Possible
	if h.HasPresent {
		r.Present = h.Present
	}
	r.Online = r.Present
	if h.HasOnline {
		r.Online = h.Online
	}
	if extra := r.Present.AndNot(r.Possible); !extra.Empty() {
		return fmt.Errorf("%s: present CPUs %s are not possible (%s)", dirCPU, extra, r.Possible)
	}
	if extra := r.Online.AndNot(r.Present); !extra.Empty() {
		return fmt.Errorf("%s: online CPUs %s are not present (%s)", dirCPU, extra, r.Present)
	}
	if r.Online.Empty() {
		return fmt.Errorf("%s/online: no CPU is online", dirCPU)
	}
	return nil
}

// nodes builds the node map. Without NUMA sysfs the machine has one node.
// A CPU that no node lists (an offline or absent one: nodeN/cpulist holds
// online CPUs) joins the node of the CPU below it.
func (r *Report) nodes(h *Host) error {
	r.NodeOf = make([]int, r.CPUs)
	if len(h.Nodes) == 0 {
		r.Nodes = 1
		r.NodeCPUs = []cpumask.Mask{cpumask.Range(0, r.CPUs-1)}
		if h.Nodes == nil {
			r.notef("no %s: one NUMA node assumed", dirNode)
		}
		return nil
	}
	maxID := -1
	for id := range h.Nodes {
		maxID = max(maxID, id)
	}
	if h.PossibleNodes != nil && !h.PossibleNodes.Empty() {
		maxID = max(maxID, h.PossibleNodes.Last())
	}
	r.Nodes = maxID + 1
	if r.Nodes > hier.MaxNodes {
		return fmt.Errorf("%s: node %d: at most %d nodes are supported", dirNode, maxID, hier.MaxNodes)
	}
	placed := make([]bool, r.CPUs)
	ids := make([]int, 0, len(h.Nodes))
	for id := range h.Nodes {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		m := h.Nodes[id]
		if extra := m.AndNot(r.Possible); !extra.Empty() {
			return fmt.Errorf("%s/node%d/cpulist: CPUs %s are not possible", dirNode, id, extra)
		}
		for c := m.First(); c >= 0; c = m.Next(c) {
			if placed[c] {
				return fmt.Errorf("%s/node%d/cpulist: CPU %d is also on node %d", dirNode, id, c, r.NodeOf[c])
			}
			placed[c], r.NodeOf[c] = true, id
		}
	}
	var guessed cpumask.Mask
	for c := 0; c < r.CPUs; c++ {
		if !placed[c] {
			if c > 0 {
				r.NodeOf[c] = r.NodeOf[c-1]
			} else {
				r.NodeOf[c] = ids[0]
			}
			guessed.Set(c)
		}
	}
	if !guessed.Empty() {
		r.notef("CPUs %s are on no node's cpulist (not online): each is put on the node of the CPU below it", guessed)
	}
	if unplacedOnline := guessed.And(r.Online); !unplacedOnline.Empty() {
		return fmt.Errorf("%s: online CPUs %s are on no node", dirNode, unplacedOnline)
	}
	r.NodeCPUs = make([]cpumask.Mask, r.Nodes)
	for c, n := range r.NodeOf {
		r.NodeCPUs[n].Set(c)
	}
	return nil
}

// config takes HZ and PREEMPT_RT from the kernel config and sysfs.
func (r *Report) config(h *Host) {
	r.HZ = 250
	if h.Config != nil {
		r.ConfigSource = h.Config.Source
		if hz, ok := h.Config.Int("HZ"); ok && hz >= 24 && hz <= 10000 {
			r.HZ, r.HZKnown = hz, true
		}
		r.PreemptRT = h.Config.Enabled("PREEMPT_RT")
	}
	if !r.HZKnown {
		r.notef("HZ unknown (no kernel config): 250 assumed")
	}
	if h.Realtime == 1 {
		r.PreemptRT = true
	}
	if !r.PreemptRT && r.Release.RT && h.Config == nil && h.Realtime < 0 {
		r.notef("the release %q names an rt flavour, but neither a config nor %s says PREEMPT_RT: modelled as not RT", r.Release.Raw, fileRealtime)
	}
}

// isolation derives the boot isolation from the command line as the
// kernel does, then checks it against what the kernel reports in sysfs,
// which wins. It returns whether the kernel has NO_HZ_FULL: 1 yes, 0 no,
// -1 unknown.
func (r *Report) isolation(h *Host) int {
	c := &h.Cmdline
	noHzFull, cpuIsolation := -1, -1
	if h.Config != nil {
		// NO_HZ_FULL is a choice of the tick menu: a config that does not
		// mention it has no such choice. CPU_ISOLATION has a prompt:
		// only an explicit "is not set" turns it off.
		noHzFull, cpuIsolation = b2i(h.Config.Enabled("NO_HZ_FULL")), b2i(!h.Config.Disabled("CPU_ISOLATION"))
	} else if h.HasPossible {
		// The file exists exactly when the kernel has NO_HZ_FULL.
		noHzFull = b2i(h.NohzFull != nil)
	}
	var kept []string
	for _, p := range c.Params {
		isIso, isNohz := p.Is("isolcpus"), p.Is("nohz_full")
		if !isIso && !isNohz {
			continue
		}
		if cpuIsolation == 0 {
			r.warnf("%s does nothing: the kernel is built without CONFIG_CPU_ISOLATION", p)
			continue
		}
		needsNohzFull := isNohz
		if isIso {
			needsNohzFull = cmdline.ParseIsolcpus(p.Value).Has("nohz")
		}
		if needsNohzFull && noHzFull == 0 {
			what := "the tick keeps running on " + listPhrase(paramList(p), r.CPUs)
			if isIso {
				what = "the whole parameter is ignored, its domain and managed_irq isolation included"
			}
			r.warnf("%s is ignored: the kernel is built without CONFIG_NO_HZ_FULL (it logs \"Housekeeping: nohz unsupported. Build with CONFIG_NO_HZ_FULL\"): %s", p, what)
			continue
		}
		kept = append(kept, p.String())
	}
	iso, err := cmdline.ParseIsolation(strings.Join(kept, " "), r.CPUs)
	if err != nil {
		// The parameters were re-quoted by Param.String: cannot happen.
		r.warnf("isolation parameters: %v", err)
	}
	for _, w := range iso.Warnings {
		r.notef("the kernel logs at boot: %s", w)
	}
	r.Domain, r.NohzFull, r.ManagedIRQ = iso.Domain, iso.NohzFull, iso.ManagedIRQ
	if h.NohzFull != nil && !h.NohzFull.Equal(r.NohzFull) {
		r.warnf("the kernel reports nohz_full CPUs %q (%s/nohz_full), the command line gives %q: the kernel's are used",
			h.NohzFull.String(), dirCPU, r.NohzFull.String())
		r.NohzFull = *h.NohzFull
	}
	if h.Isolated != nil && !h.Isolated.Equal(r.Domain) {
		part := h.Cgroup.IsolatedPartitions()
		if h.Isolated.Equal(r.Domain.Or(part)) {
			r.notef("%s/isolated lists the isolated partitions' CPUs too (%s)", dirCPU, h.Isolated)
		} else {
			r.warnf("the kernel reports isolated CPUs %q (%s/isolated), the command line gives %q: the kernel's are used",
				h.Isolated.String(), dirCPU, r.Domain.String())
			r.Domain = h.Isolated.AndNot(part)
		}
	}
	for _, f := range []struct {
		name string
		dst  **cpumask.Mask
	}{{"rcu_nocbs", &r.RcuNocbs}, {"irqaffinity", &r.IrqAffinity}} {
		for _, p := range c.Get(f.name) {
			if !p.HasValue {
				if f.name == "rcu_nocbs" {
					m := cpumask.Mask{}
					*f.dst = &m // "rcu_nocbs" alone: offloading possible at run time on any CPU
				}
				continue
			}
			m, err := cpumask.ParseFor(p.Value, r.CPUs)
			if err != nil {
				r.warnf("%s: %v (the kernel ignores it)", p, err)
				continue
			}
			*f.dst = &m
		}
	}
	return noHzFull
}

// partitions takes the valid isolated cgroup v2 partitions.
func (r *Report) partitions(h *Host) error {
	cg := &h.Cgroup
	for _, p := range cg.Partitions {
		switch {
		case p.State.IsolatedValid():
			if extra := p.Effective.AndNot(r.Possible); !extra.Empty() {
				return fmt.Errorf("%s/%s/cpuset.cpus.effective: CPUs %s are not possible", cg.V2Root, p.Path, extra)
			}
			r.Partitions = append(r.Partitions, p)
			r.Partition = r.Partition.Or(p.Effective)
		case p.State.Kind == "isolated" && p.State.Invalid:
			why := ""
			if p.State.Reason != "" {
				why = " (" + p.State.Reason + ")"
			}
			r.warnf("cpuset %s is an invalid isolated partition%s: it isolates nothing", p.Path, why)
		}
	}
	if cg.RootIsolated != nil && !cg.RootIsolated.Equal(r.Partition) {
		r.warnf("the cgroup root's cpuset.cpus.isolated says %q, the isolated partitions hold %q: the root's is used",
			cg.RootIsolated.String(), r.Partition.String())
		r.Partition = *cg.RootIsolated
	}
	return nil
}

// policy decides how wheel timers are placed: by the model of the release,
// unless the build or the command line turns migration off.
func (r *Report) policy(h *Host) {
	tm := r.TimerMigration != 0 // absent reads as the default, 1
	r.Policy = r.Model.Policy(tm)
	switch r.Policy {
	case cpu.PullIsolated:
		r.PolicyWhy = "the pull hierarchy without isolated CPUs (6.19 and later)"
	case cpu.Pull:
		r.PolicyWhy = "the pull hierarchy; isolated CPUs take part in it (6.9 to 6.18)"
	case cpu.Push:
		r.PolicyWhy = "push at enqueue: a timer armed on an idle CPU goes to a busy one (before 6.9)"
	case cpu.None:
		r.PolicyWhy = "timer_migration=0 before 6.9: every timer runs where it was armed"
	}
	off := func(why string) { r.Policy, r.PolicyWhy = cpu.None, why }
	switch {
	case h.Config != nil && h.Config.Disabled("SMP"):
		off("a uniprocessor kernel (no CONFIG_SMP): nothing migrates")
	case r.CPUs == 1:
		off("one CPU: nothing migrates")
	case h.Config != nil && !h.Config.Enabled("NO_HZ_COMMON"):
		// A hidden option, selected by NO_HZ_IDLE and NO_HZ_FULL: absent
		// when neither is set.
		off("no CONFIG_NO_HZ_COMMON: every CPU keeps its tick and runs its own timers")
	case hasNohzOff(&h.Cmdline):
		off("nohz=off: every CPU keeps its tick and runs its own timers")
	}
}

func hasNohzOff(c *cmdline.Cmdline) bool {
	ps := c.Get("nohz")
	return len(ps) > 0 && ps[len(ps)-1].Value == "off"
}

// timekeeper is the nohz timekeeper: the boot CPU (0), or under nohz_full
// the first online CPU that is not nohz_full.
func (r *Report) timekeeper() int {
	for c := r.Online.First(); c >= 0; c = r.Online.Next(c) {
		if !r.NohzFull.Test(c) {
			return c
		}
	}
	return r.Online.First()
}

// exclusions lists the CPUs out of the hierarchy and the isolated ones in
// it, with the kernel's reasons.
func (r *Report) exclusions() {
	r.Timekeeper = r.timekeeper()
	if r.Policy != cpu.Pull && r.Policy != cpu.PullIsolated {
		return
	}
	add := func(dst *[]CPUSet, m cpumask.Mask, why string) {
		if !m.Empty() {
			*dst = append(*dst, CPUSet{m, why})
		}
	}
	add(&r.Excluded, r.Possible.AndNot(r.Present), "not present: never brought up, so in no group")
	add(&r.Excluded, r.Present.AndNot(r.Online), "offline: unavailable until it comes back")
	isolated := r.Domain.Or(r.Partition).And(r.Online)
	if r.Policy == cpu.Pull {
		add(&r.Kept, isolated, fmt.Sprintf("isolated, but %s keeps isolated CPUs in the hierarchy (the exclusion, %s, came in 6.19)",
			r.Release.Version.Series(), kernel.ExcludeIsolated.Info().Commit))
		return
	}
	add(&r.Kept, isolated.And(r.NohzFull), "nohz_full: stays in the hierarchy, idle there while its tick is stopped")
	rest := isolated.AndNot(r.NohzFull)
	if !r.NohzFull.Empty() && rest.Test(r.Timekeeper) {
		add(&r.Kept, cpumask.Of(r.Timekeeper), "the timekeeper while nohz_full is in use: it must stay to handle the nohz_full CPUs' global timers")
		rest.Clear(r.Timekeeper)
	}
	commit := kernel.ExcludeIsolated.Info().Commit
	add(&r.Excluded, rest.And(r.Domain), "isolcpus (domain): excluded since 6.19 ("+commit+")")
	var paths []string
	for _, p := range r.Partitions {
		paths = append(paths, p.Path)
	}
	where := "an isolated cpuset partition"
	if len(paths) > 0 {
		where = "isolated cpuset partition " + strings.Join(paths, ", ")
	}
	add(&r.Excluded, rest.And(r.Partition).AndNot(r.Domain), where+": excluded since 6.19 ("+commit+")")
}

func (r *Report) machineNote(recorder string) string {
	if recorder == "" {
		recorder = "tmigr host"
	}
	parts := []string{recorder}
	if r.PreemptRT {
		parts = append(parts, "PREEMPT_RT")
	}
	if !r.Partition.Empty() {
		parts = append(parts, "isolated partition "+r.Partition.String())
	}
	if r.TimerMigration == 0 {
		parts = append(parts, "timer_migration=0")
	}
	if off := r.Possible.AndNot(r.Online); !off.Empty() {
		parts = append(parts, "offline "+off.String())
	}
	return strings.Join(parts, "; ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// paramList returns the CPU list of an isolcpus= or nohz_full= parameter.
func paramList(p cmdline.Param) string {
	if p.Is("isolcpus") {
		return cmdline.ParseIsolcpus(p.Value).List
	}
	return p.Value
}
