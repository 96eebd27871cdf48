package ftrace

// The timer_migration system (include/trace/events/timer_migration.h): the
// pull hierarchy's setup, its per-group state changes and the per-CPU
// entry points. Groups and parents are %p pointers (hashed, but stable within
// one boot, so they identify a group throughout a trace); 0 is "none" (the
// top level's parent, the child of a level-0 update). Masks print with %0x:
// bit i is child i of the group; a migrator of 0xff (TMIGR_NONE) means none.
// Times are nanoseconds (u64, KtimeMax for "no event").

// TmigrGroupSet is tmigr_group_set: a group was created.
//
//	group=%p lvl=%d numa=%d
type TmigrGroupSet struct {
	Group uint64
	Lvl   int
	Numa  int // -1 (NUMA_NO_NODE) at and above the crossnode level
}

// TmigrConnectChildParent is tmigr_connect_child_parent: a group was linked
// to its parent. Lvl, Numa, Capacity and NumChildren are the parent's.
//
//	group=%p groupmask=%0x parent=%p lvl=%d numa=%d [capacity=%d] num_children=%d
//
// capacity is printed by kernels with per-capacity hierarchies (2026 on).
type TmigrConnectChildParent struct {
	Group       uint64 // the child
	Groupmask   uint32 // the child's bit in the parent
	Parent      uint64
	Lvl         int
	Numa        int
	Capacity    int
	HasCapacity bool // the kernel printed capacity
	NumChildren int
}

// TmigrConnectCPUParent is tmigr_connect_cpu_parent: a CPU was linked to its
// level-0 group.
//
//	cpu=%d groupmask=%0x parent=%p lvl=%d numa=%d [capacity=%d] num_children=%d
type TmigrConnectCPUParent struct {
	CPU         int
	Groupmask   uint32 // the CPU's bit in the group
	Parent      uint64
	Lvl         int
	Numa        int
	Capacity    int
	HasCapacity bool
	NumChildren int
}

// TmigrGroupAndCPU holds the fields of the kernel's tmigr_group_and_cpu event
// class, the new state of a group after an activation or deactivation walked
// through it; TmigrGroupSetCPUActive and TmigrGroupSetCPUInactive are its
// events (convert either to this type to handle both alike).
//
//	group=%p lvl=%d numa=%d active=%0x migrator=%0x parent=%p childmask=%0x
type TmigrGroupAndCPU struct {
	Group     uint64
	Lvl       int
	Numa      int
	Active    uint8  // the group's active children
	Migrator  uint8  // the migrator child's bit, 0xff for none
	Parent    uint64 // 0 at the top level
	Childmask uint32 // the bit of the child that walked up
}

// TmigrGroupSetCPUActive is tmigr_group_set_cpu_active (after the CAS in
// the activation walk).
type TmigrGroupSetCPUActive TmigrGroupAndCPU

// TmigrGroupSetCPUInactive is tmigr_group_set_cpu_inactive (after a
// successful CAS in the deactivation walk).
type TmigrGroupSetCPUInactive TmigrGroupAndCPU

// TmigrCPUGroup holds the fields of the kernel's tmigr_cpugroup event class:
// a CPU, its level-0 group and its wakeup as stored when the event fired.
//
//	cpu=%d parent=%p wakeup=%llu
type TmigrCPUGroup struct {
	CPU    int
	Parent uint64
	Wakeup int64 // ns, KtimeMax for none
}

// The tmigr_cpugroup events; convert any of them to TmigrCPUGroup to handle
// them alike.
type (
	TmigrCPUNewTimer     TmigrCPUGroup // tmigr_cpu_new_timer: a new first timer walks up
	TmigrCPUActive       TmigrCPUGroup // tmigr_cpu_active: the CPU became active
	TmigrCPUAvailable    TmigrCPUGroup // tmigr_cpu_available: joined the hierarchy
	TmigrCPUUnavailable  TmigrCPUGroup // tmigr_cpu_unavailable: left it (offline or isolated)
	TmigrCPUOnline       TmigrCPUGroup // tmigr_cpu_online: tmigr_cpu_available before the 2025 rename
	TmigrCPUOffline      TmigrCPUGroup // tmigr_cpu_offline: tmigr_cpu_unavailable before the 2025 rename
	TmigrHandleRemoteCPU TmigrCPUGroup // tmigr_handle_remote_cpu: a migrator expires this CPU's timers
)

// TmigrIdle holds the fields of the kernel's tmigr_idle event class: a CPU's
// next local event and the wakeup the hierarchy returned for it.
//
//	cpu=%d parent=%p nextevt=%llu wakeup=%llu
type TmigrIdle struct {
	CPU     int
	Parent  uint64
	NextEvt int64 // ns, KtimeMax for none
	Wakeup  int64 // ns, KtimeMax for none
}

// The tmigr_idle events; convert either to TmigrIdle to handle both alike.
type (
	TmigrCPUIdle         TmigrIdle // tmigr_cpu_idle: end of the deactivation
	TmigrCPUNewTimerIdle TmigrIdle // tmigr_cpu_new_timer_idle: end of tmigr_cpu_new_timer
)

// TmigrUpdateEvents is tmigr_update_events: one step of an event propagation
// from child (0 for a CPU's own level-0 update) into group.
//
//	child=%p group=%p group_lvl=%d child_active=%0x group_active=%0x nextevt=%llu next_expiry=%llu child_evt_expiry=%llu child_evtcpu=%d
type TmigrUpdateEvents struct {
	Child          uint64
	Group          uint64
	GroupLvl       int
	ChildActive    uint8
	GroupActive    uint8
	NextEvt        int64 // ns
	NextExpiry     int64 // ns: the group's next_expiry after the update
	ChildEvtExpiry int64 // ns, 0 when there is no child group
	ChildEvtCPU    int   // 0 when there is no child group
}

// TmigrHandleRemote is tmigr_handle_remote: a group visited while expiring
// remote timers.
//
//	group=%p lvl=%d
type TmigrHandleRemote struct {
	Group uint64
	Lvl   int
}

// Name implements Payload: the tracepoint's name.

func (TmigrGroupSet) Name() string            { return "tmigr_group_set" }
func (TmigrConnectChildParent) Name() string  { return "tmigr_connect_child_parent" }
func (TmigrConnectCPUParent) Name() string    { return "tmigr_connect_cpu_parent" }
func (TmigrGroupSetCPUActive) Name() string   { return "tmigr_group_set_cpu_active" }
func (TmigrGroupSetCPUInactive) Name() string { return "tmigr_group_set_cpu_inactive" }
func (TmigrCPUNewTimer) Name() string         { return "tmigr_cpu_new_timer" }
func (TmigrCPUActive) Name() string           { return "tmigr_cpu_active" }
func (TmigrCPUAvailable) Name() string        { return "tmigr_cpu_available" }
func (TmigrCPUUnavailable) Name() string      { return "tmigr_cpu_unavailable" }
func (TmigrCPUOnline) Name() string           { return "tmigr_cpu_online" }
func (TmigrCPUOffline) Name() string          { return "tmigr_cpu_offline" }
func (TmigrHandleRemoteCPU) Name() string     { return "tmigr_handle_remote_cpu" }
func (TmigrCPUIdle) Name() string             { return "tmigr_cpu_idle" }
func (TmigrCPUNewTimerIdle) Name() string     { return "tmigr_cpu_new_timer_idle" }
func (TmigrUpdateEvents) Name() string        { return "tmigr_update_events" }
func (TmigrHandleRemote) Name() string        { return "tmigr_handle_remote" }

// CPUGroupOf returns the CPU, level-0 parent and wakeup of a per-CPU
// timer_migration event (the CPU entry points: active, idle, new timer,
// availability), and false for any other event.
func CPUGroupOf(p Payload) (TmigrCPUGroup, bool) {
	if e, ok := p.(cpuEntry); ok {
		return e.cpuGroup(), true
	}
	return TmigrCPUGroup{}, false
}

// cpuEntry is an event of a per-CPU entry point of the hierarchy.
type cpuEntry interface{ cpuGroup() TmigrCPUGroup }

func (p TmigrCPUActive) cpuGroup() TmigrCPUGroup       { return TmigrCPUGroup(p) }
func (p TmigrCPUNewTimer) cpuGroup() TmigrCPUGroup     { return TmigrCPUGroup(p) }
func (p TmigrCPUAvailable) cpuGroup() TmigrCPUGroup    { return TmigrCPUGroup(p) }
func (p TmigrCPUUnavailable) cpuGroup() TmigrCPUGroup  { return TmigrCPUGroup(p) }
func (p TmigrCPUOnline) cpuGroup() TmigrCPUGroup       { return TmigrCPUGroup(p) }
func (p TmigrCPUOffline) cpuGroup() TmigrCPUGroup      { return TmigrCPUGroup(p) }
func (p TmigrCPUIdle) cpuGroup() TmigrCPUGroup         { return TmigrIdle(p).cpuGroup() }
func (p TmigrCPUNewTimerIdle) cpuGroup() TmigrCPUGroup { return TmigrIdle(p).cpuGroup() }

func (p TmigrIdle) cpuGroup() TmigrCPUGroup {
	return TmigrCPUGroup{CPU: p.CPU, Parent: p.Parent, Wakeup: p.Wakeup}
}
