package hier

import (
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tmigr/tmigr/cpumask"
)

// MaxNodes is the largest number of possible NUMA nodes accepted (the
// kernel's MAX_NUMNODES with NODES_SHIFT = 6).
const MaxNodes = 64

// NoNode is NUMA_NO_NODE, the node of groups at or above the crossnode
// level.
const NoNode = -1

// Options configures a Hierarchy.
type Options struct {
	// NodeOf is the NUMA node of each possible CPU; len(NodeOf) is the
	// number of possible CPUs (1 to cpumask.MaxCPUs). Node ids are 0 to
	// MaxNodes-1.
	NodeOf []int

	// Nodes is the number of possible NUMA nodes (num_possible_nodes). Zero
	// means the highest node id in NodeOf plus one: node ids are dense in
	// the kernel, and a node without CPUs (memory only) still counts.
	Nodes int

	// ExcludeIsolated selects the kernel generation. false: 6.9 to 6.18,
	// isolated CPUs stay in the hierarchy and pull other CPUs' timers (the
	// behaviour behind the oslat spikes); ExcludeIsolated and InitIsolation
	// do nothing. true: the Nov 2025 behaviour, where the static key
	// tmigr_exclude_isolated is switched on by InitIsolation (the late
	// initcall) and isolated CPUs are withdrawn.
	ExcludeIsolated bool

	// ImbalancedNUMA builds the tree as kernels before 5eb579dfd46b
	// ("timers/migration: Fix imbalanced NUMA trees", 6.19; 6.18.2) did:
	// a CPU of another node than the root's stops its climb at the first
	// level with a single group, so that a node's first CPU can hang an
	// earlier node's root below a group of its own node, under the
	// crossnode level (docs/hierarchy.md T3). The trees differ only when
	// that root is still below the level under the crossnode level then:
	// a node much smaller than the average, or CPUs numbered across nodes.
	ImbalancedNUMA bool

	// Isolation is the housekeeping setup the isolation predicate reads.
	// It can be changed later with SetIsolation (a cpuset update).
	Isolation Isolation

	// Tracer, if not nil, receives every tracepoint of the
	// timer_migration trace system, synchronously, at the places and with
	// the values the kernel emits them. A nil Tracer costs one compare.
	Tracer Tracer

	// Interleave, if not nil, is called at the points between the
	// kernel's tracepoints where another CPU's operation can come in
	// between (see Point). A simulator leaves it nil: it costs one
	// compare per point.
	Interleave Interleave
}

// Isolation is the CPU-isolation setup the 2025 exclusion reads: the
// housekeeping masks of kernel/sched/isolation.c and the nohz timekeeper.
type Isolation struct {
	// Domain is the isolcpus= (domain) list: CPUs outside the
	// HK_TYPE_DOMAIN housekeeping mask.
	Domain cpumask.Mask
	// NohzFull is the nohz_full= list: CPUs outside the
	// HK_TYPE_KERNEL_NOISE housekeeping mask. Such CPUs always stay in the
	// hierarchy (they are idle in it while their tick is stopped).
	NohzFull cpumask.Mask
	// CpusetIsolated holds the CPUs of isolated cpuset partitions
	// (cpuset_cpu_is_isolated).
	CpusetIsolated cpumask.Mask
	// Timekeeper is the nohz timekeeper (tick_do_timer_cpu), or -1. While
	// nohz_full is in use it cannot go offline and is never made
	// unavailable by isolation: it is the last-resort global migrator of
	// the nohz_full CPUs.
	Timekeeper int
}

// IsIsolated is the predicate tmigr_is_isolated as merged (7dec062cfcf2),
// without the static key: the CPU is in the isolcpus domain list or in an
// isolated cpuset, and not nohz_full. The timekeeper exception is not part
// of it; the callers enforce it (see Hierarchy.ExcludeIsolated).
func (iso *Isolation) IsIsolated(cpu int) bool {
	return (iso.Domain.Test(cpu) || iso.CpusetIsolated.Test(cpu)) && !iso.NohzFull.Test(cpu)
}

// tickHotpluggable is tick_nohz_cpu_hotpluggable: false only for the
// timekeeper while nohz_full is running.
func (iso *Isolation) tickHotpluggable(cpu int) bool {
	return iso.NohzFull.Empty() || cpu != iso.Timekeeper
}

// GroupID names a group by its level and its index: the order of creation
// within its level, starting at 0. The kernel prints group pointers; a
// GroupID is the stable equivalent, and String gives the kernel comment's
// notation "GRPl:i".
type GroupID struct {
	Level, Index int
}

// NoGroup stands for a nil group pointer (the parent of the top group, the
// child of a level-0 update).
var NoGroup = GroupID{-1, -1}

// String returns "GRPl:i", or "none" for NoGroup.
func (id GroupID) String() string {
	if id == NoGroup {
		return "none"
	}
	return "GRP" + strconv.Itoa(id.Level) + ":" + strconv.Itoa(id.Index)
}

// Hierarchy is the timer-migration hierarchy of one machine: the groups,
// the per-CPU state and the availability bookkeeping. All methods are safe
// for concurrent use, with the kernel's locking; the per-CPU entry points
// (Activate, Deactivate, NewTimer, QuickCheck, RequiresHandleRemote,
// HandleRemote) must be called by the CPU they name, i.e. never
// concurrently for the same CPU, as the kernel calls them on that CPU with
// interrupts off.
type Hierarchy struct {
	ncpus, nnodes    int
	nodeOf           []int
	levels           int // tmigr_hierarchy_levels (0: uniprocessor, nothing built)
	crossnode        int // tmigr_crossnode_level
	tr               Tracer
	interleave       Interleave
	excludeSupported bool
	imbalancedNUMA   bool // the tree before 5eb579dfd46b (Options.ImbalancedNUMA)
	possible         cpumask.Mask

	cpus []tmcpu

	// setupMu is tmigr_mutex: it protects lists, root and the setup fields
	// of groups (numChildren, groupmask writes).
	setupMu sync.Mutex
	lists   [][]*group // per level, in creation order (the kernel adds at the head)
	root    *group     // tmigr_root

	// hotplugMu stands for the CPU-hotplug lock and the cpuset mutex: it
	// serialises online/offline callbacks, the exclusion function and
	// isolation updates, and protects online, iso and keyOn.
	hotplugMu sync.Mutex
	online    cpumask.Mask
	iso       Isolation
	keyOn     bool // static key tmigr_exclude_isolated

	// availMu is tmigr_available_mutex; it serialises set/clear available
	// and protects availMask (tmigr_available_cpumask). Writers also hold
	// hotplugMu, so holders of hotplugMu may read availMask.
	availMu   sync.Mutex
	availMask cpumask.Mask

	warnings atomic.Uint64
}

// New sizes the hierarchy exactly as tmigr_init does: with C possible CPUs
// and N possible nodes, cpus_per_node = ceil(C/N), cpulvl =
// ceil(ceil_log2(cpus_per_node)/3), nodelvl = ceil(ceil_log2(N)/3), levels =
// cpulvl + nodelvl and crossnode level = cpulvl. On a uniprocessor nothing
// is built (Levels is 0) and every entry point is the identity. No CPU is
// part of the hierarchy until Prepare.
func New(o Options) (*Hierarchy, error) {
	n := len(o.NodeOf)
	if n == 0 {
		return nil, fmt.Errorf("hier: no CPUs: NodeOf must name the node of every possible CPU")
	}
	if n > cpumask.MaxCPUs {
		return nil, fmt.Errorf("hier: %d CPUs: at most %d are supported", n, cpumask.MaxCPUs)
	}
	maxNode := 0
	for cpu, node := range o.NodeOf {
		if node < 0 || node >= MaxNodes {
			return nil, fmt.Errorf("hier: CPU %d: node id %d out of range 0..%d", cpu, node, MaxNodes-1)
		}
		maxNode = max(maxNode, node)
	}
	nnodes := o.Nodes
	switch {
	case nnodes == 0:
		nnodes = maxNode + 1
	case nnodes < 0 || nnodes > MaxNodes:
		return nil, fmt.Errorf("hier: %d nodes: between 1 and %d are supported", nnodes, MaxNodes)
	case nnodes <= maxNode:
		return nil, fmt.Errorf("hier: %d nodes, but a CPU is on node %d", nnodes, maxNode)
	}
	h := &Hierarchy{
		ncpus:            n,
		nnodes:           nnodes,
		nodeOf:           append([]int(nil), o.NodeOf...),
		tr:               o.Tracer,
		interleave:       o.Interleave,
		excludeSupported: o.ExcludeIsolated,
		imbalancedNUMA:   o.ImbalancedNUMA,
		possible:         cpumask.Range(0, n-1),
		cpus:             make([]tmcpu, n),
	}
	if err := h.validIsolation(&o.Isolation); err != nil {
		return nil, err
	}
	h.iso = o.Isolation
	for i := range h.cpus {
		t := &h.cpus[i]
		t.cpu = i
		t.evt.ownerCPU = i
		t.evt.cpu = i
		t.evt.expires = KtimeMax
		t.evt.ignore.Store(true)
		t.wakeup.Store(KtimeMax)
	}
	if n == 1 {
		return h, nil // "Nothing to do if running on UP"
	}
	cpusPerNode := (n + nnodes - 1) / nnodes
	cpulvl := divRoundUp(orderBase2(cpusPerNode), childBits)
	nodelvl := divRoundUp(orderBase2(nnodes), childBits)
	h.levels = cpulvl + nodelvl
	h.crossnode = cpulvl
	h.lists = make([][]*group, h.levels)
	return h, nil
}

// orderBase2 is the kernel's order_base_2: ceil(log2(n)), 0 for n <= 1.
func orderBase2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

func divRoundUp(a, b int) int { return (a + b - 1) / b }

func (h *Hierarchy) validIsolation(iso *Isolation) error {
	for _, m := range []struct {
		name string
		mask *cpumask.Mask
	}{{"isolcpus (Domain)", &iso.Domain}, {"nohz_full", &iso.NohzFull}, {"cpuset-isolated", &iso.CpusetIsolated}} {
		if !m.mask.Subset(&h.possible) {
			extra := m.mask.AndNot(h.possible)
			return fmt.Errorf("hier: %s list holds CPUs %s beyond the %d possible CPUs", m.name, extra, h.ncpus)
		}
	}
	if iso.Timekeeper < -1 || iso.Timekeeper >= h.ncpus {
		return fmt.Errorf("hier: timekeeper CPU %d out of range -1..%d", iso.Timekeeper, h.ncpus-1)
	}
	if iso.Timekeeper >= 0 && iso.NohzFull.Test(iso.Timekeeper) {
		return fmt.Errorf("hier: timekeeper CPU %d is in nohz_full; the timekeeper must keep its tick", iso.Timekeeper)
	}
	hk := h.possible.AndNot(iso.Domain).AndNot(iso.NohzFull)
	if hk.Empty() && !(iso.Domain.Empty() && iso.NohzFull.Empty()) {
		return fmt.Errorf("hier: isolcpus and nohz_full together leave no housekeeping CPU (the kernel requires one CPU in neither)")
	}
	return nil
}

// CPUs returns the number of possible CPUs.
func (h *Hierarchy) CPUs() int { return h.ncpus }

// Nodes returns the number of possible NUMA nodes.
func (h *Hierarchy) Nodes() int { return h.nnodes }

// NodeOf returns the NUMA node of cpu.
func (h *Hierarchy) NodeOf(cpu int) int { return h.nodeOf[cpu] }

// Levels returns tmigr_hierarchy_levels, the most levels the hierarchy can
// have (0 on a uniprocessor). Fewer exist while few CPUs are prepared.
func (h *Hierarchy) Levels() int { return h.levels }

// CrossnodeLevel returns tmigr_crossnode_level: groups below it hold
// members of one NUMA node only.
func (h *Hierarchy) CrossnodeLevel() int { return h.crossnode }

// BootLine returns the line tmigr_init logs, or "" on a uniprocessor where
// the kernel logs nothing.
func (h *Hierarchy) BootLine() string {
	if h.levels == 0 {
		return ""
	}
	return fmt.Sprintf("Timer migration: %d hierarchy levels; %d children per group; %d crossnode level",
		h.levels, ChildrenPerGroup, h.crossnode)
}

// Warnings returns how many times a kernel WARN_ON condition was met
// (activating a CPU that is not idle, a quick check on an idle CPU, a
// setup inconsistency). Each of those returns early as the kernel does;
// a correct driver never triggers one.
func (h *Hierarchy) Warnings() uint64 { return h.warnings.Load() }

func (h *Hierarchy) warn() { h.warnings.Add(1) }

// tmc returns the per-CPU state of cpu, or nil for a CPU number out of
// range (treated as unavailable by every entry point).
func (h *Hierarchy) tmc(cpu int) *tmcpu {
	if uint(cpu) >= uint(len(h.cpus)) {
		return nil
	}
	return &h.cpus[cpu]
}

// notAvailable is tmigr_is_not_available.
func notAvailable(t *tmcpu) bool {
	return t == nil || t.tmgroup.Load() == nil || !t.available.Load()
}

func (h *Hierarchy) checkCPU(cpu int) error {
	if cpu < 0 || cpu >= h.ncpus {
		return fmt.Errorf("hier: CPU %d out of range 0..%d", cpu, h.ncpus-1)
	}
	return nil
}
