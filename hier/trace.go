package hier

import (
	"fmt"
	"io"
	"strconv"
)

// EventKind names a tracepoint of the kernel's timer_migration trace system
// (include/trace/events/timer_migration.h).
type EventKind uint8

// The tracepoints, in the order of the kernel's header. Each says which
// fields of Event it sets.
const (
	// EvGroupSet: tmigr_group_set, a group was created (Group, Node;
	// Node is NoNode for groups at or above the crossnode level).
	EvGroupSet EventKind = iota
	// EvConnectChildParent: tmigr_connect_child_parent, Child was linked
	// below Parent; Node and NumChildren are the parent's, Groupmask the
	// child's new bit in it.
	EvConnectChildParent
	// EvConnectCPUParent: tmigr_connect_cpu_parent, CPU joined its
	// level-0 group Parent (Node, NumChildren, Groupmask as above).
	EvConnectCPUParent
	// EvGroupSetCPUActive: tmigr_group_set_cpu_active, after the CAS in
	// the activation walk: Group, Parent, Node, and the new Active and
	// Migrator; Childmask is the bit of the child that walked up.
	EvGroupSetCPUActive
	// EvGroupSetCPUInactive: tmigr_group_set_cpu_inactive, after the
	// successful CAS in the deactivation walk (fields as above).
	EvGroupSetCPUInactive
	// EvCPUNewTimer: tmigr_cpu_new_timer, an idle CPU's new first global
	// timer is walked up; Wakeup is the old value (CPU, Parent, Wakeup).
	EvCPUNewTimer
	// EvCPUActive: tmigr_cpu_active, before the wakeup reset, so Wakeup
	// is the value of the idle period that just ended.
	EvCPUActive
	// EvCPUAvailable: tmigr_cpu_available (tmigr_cpu_online before the
	// 2025 rename).
	EvCPUAvailable
	// EvCPUUnavailable: tmigr_cpu_unavailable (tmigr_cpu_offline); Wakeup
	// is always KtimeMax.
	EvCPUUnavailable
	// EvHandleRemoteCPU: tmigr_handle_remote_cpu, a remote expiry of CPU's
	// global timers starts. CPU is the target (the handler is the CPU
	// whose walk emits it, possibly the target itself); Wakeup is the
	// target's value before the reset.
	EvHandleRemoteCPU
	// EvCPUIdle: tmigr_cpu_idle at the end of Deactivate; NextEvt is the
	// argument, Wakeup the value returned.
	EvCPUIdle
	// EvCPUNewTimerIdle: tmigr_cpu_new_timer_idle at the end of every
	// NewTimer of an available CPU; NextEvt is the argument, Wakeup the
	// value returned.
	EvCPUNewTimerIdle
	// EvUpdateEvents: tmigr_update_events, at the end of an event update
	// that did not exit early. Child is NoGroup at level 0, and then
	// ChildEvtExpiry and ChildEvtCPU are 0; otherwise they are the child's
	// group event as stored (stale values are normal for an ignored
	// event). NextEvt is the expiry propagated (KtimeMax when the child
	// has nothing), NextExpiry the group's after the update; ChildActive
	// and GroupActive are the two states' active masks.
	EvUpdateEvents
	// EvHandleRemote: tmigr_handle_remote, each Group visited by the
	// remote expiry walk, before its migrator check.
	EvHandleRemote
	numEventKinds
)

var eventNames = [numEventKinds]string{
	EvGroupSet:            "tmigr_group_set",
	EvConnectChildParent:  "tmigr_connect_child_parent",
	EvConnectCPUParent:    "tmigr_connect_cpu_parent",
	EvGroupSetCPUActive:   "tmigr_group_set_cpu_active",
	EvGroupSetCPUInactive: "tmigr_group_set_cpu_inactive",
	EvCPUNewTimer:         "tmigr_cpu_new_timer",
	EvCPUActive:           "tmigr_cpu_active",
	EvCPUAvailable:        "tmigr_cpu_available",
	EvCPUUnavailable:      "tmigr_cpu_unavailable",
	EvHandleRemoteCPU:     "tmigr_handle_remote_cpu",
	EvCPUIdle:             "tmigr_cpu_idle",
	EvCPUNewTimerIdle:     "tmigr_cpu_new_timer_idle",
	EvUpdateEvents:        "tmigr_update_events",
	EvHandleRemote:        "tmigr_handle_remote",
}

// String returns the tracepoint's name ("tmigr_cpu_idle").
func (k EventKind) String() string {
	if k < numEventKinds {
		return eventNames[k]
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one tracepoint hit, with the fields the kernel prints. Groups
// are GroupIDs where the kernel prints a pointer; NoGroup stands for NULL.
// Levels are in the GroupIDs. Masks are the raw 8-bit child masks; a
// migrator of MigratorNone prints as ff. Kind says which fields are set
// (see the EventKind constants); the others are zero.
//
// An Event is a plain value with no pointers: the hierarchy builds it on
// its stack and hands it over by value, so tracing allocates nothing.
// Package ftrace turns it into the kernel's payload type for the
// tracepoint (ftrace.TmigrPayload), which its writer formats; the
// simulator, the replay and explain read the values themselves.
type Event struct {
	Kind EventKind
	CPU  int

	Group, Parent, Child GroupID
	Node                 int // NoNode above the crossnode level
	NumChildren          int
	Groupmask            uint8 // connect: the child's bit in its parent

	Active, Migrator, Childmask uint8 // group transitions
	ChildActive, GroupActive    uint8 // event updates

	Wakeup, NextEvt int64
	NextExpiry      int64 // event updates
	ChildEvtExpiry  int64
	ChildEvtCPU     int
}

// Tracer receives the hierarchy's tracepoints as Events.
//
// Trace is called synchronously, at the kernel's places, often with per-CPU
// and group locks held: an implementation must not call back into the
// Hierarchy. Events of one walk arrive in program order; events of
// concurrent walks interleave as the walks do, so a Tracer shared by
// concurrent users must synchronise itself.
//
// The wakeup values follow the kernel exactly: each CPU tracepoint carries
// the wakeup stored at that instant (see the EventKind constants).
type Tracer interface {
	Trace(e Event)
}

// TextTracer writes each tracepoint as the kernel's TP_printk text, one
// line each, with group names ("GRP1:0") in place of pointers and
// 0000000000000000 for NULL, e.g.
//
//	tmigr_cpu_idle: cpu=3 parent=GRP0:0 nextevt=6728000000 wakeup=9223372036854775807
//
// It is for tests and debugging (the hierarchy's scenario files print it);
// a kernel-format trace file is written by package ftrace from the Events.
// The lines carry no timestamp and no [cpu] column. Writes are not
// synchronised. Its Prefix, if set, is written before every line.
type TextTracer struct {
	W      io.Writer
	Prefix func() string
}

func ptr(id GroupID) string {
	if id == NoGroup {
		return "0000000000000000"
	}
	return id.String()
}

func u64(v int64) string { return strconv.FormatUint(uint64(v), 10) }

// Trace implements Tracer, in the format of the kernels before the 2026
// per-capacity hierarchies (no capacity field).
func (t *TextTracer) Trace(e Event) {
	if t.Prefix != nil {
		io.WriteString(t.W, t.Prefix())
	}
	name := e.Kind.String()
	switch e.Kind {
	case EvGroupSet:
		fmt.Fprintf(t.W, "%s: group=%s lvl=%d numa=%d\n", name, ptr(e.Group), e.Group.Level, e.Node)
	case EvConnectChildParent:
		fmt.Fprintf(t.W, "%s: group=%s groupmask=%x parent=%s lvl=%d numa=%d num_children=%d\n",
			name, ptr(e.Child), e.Groupmask, ptr(e.Parent), e.Parent.Level, e.Node, e.NumChildren)
	case EvConnectCPUParent:
		fmt.Fprintf(t.W, "%s: cpu=%d groupmask=%x parent=%s lvl=%d numa=%d num_children=%d\n",
			name, e.CPU, e.Groupmask, ptr(e.Parent), e.Parent.Level, e.Node, e.NumChildren)
	case EvGroupSetCPUActive, EvGroupSetCPUInactive:
		fmt.Fprintf(t.W, "%s: group=%s lvl=%d numa=%d active=%x migrator=%x parent=%s childmask=%x\n",
			name, ptr(e.Group), e.Group.Level, e.Node, e.Active, e.Migrator, ptr(e.Parent), e.Childmask)
	case EvCPUNewTimer, EvCPUActive, EvCPUAvailable, EvCPUUnavailable, EvHandleRemoteCPU:
		fmt.Fprintf(t.W, "%s: cpu=%d parent=%s wakeup=%s\n", name, e.CPU, ptr(e.Parent), u64(e.Wakeup))
	case EvCPUIdle, EvCPUNewTimerIdle:
		fmt.Fprintf(t.W, "%s: cpu=%d parent=%s nextevt=%s wakeup=%s\n", name, e.CPU, ptr(e.Parent), u64(e.NextEvt), u64(e.Wakeup))
	case EvUpdateEvents:
		fmt.Fprintf(t.W, "%s: child=%s group=%s group_lvl=%d child_active=%x group_active=%x nextevt=%s next_expiry=%s child_evt_expiry=%s child_evtcpu=%d\n",
			name, ptr(e.Child), ptr(e.Group), e.Group.Level, e.ChildActive, e.GroupActive,
			u64(e.NextEvt), u64(e.NextExpiry), u64(e.ChildEvtExpiry), e.ChildEvtCPU)
	case EvHandleRemote:
		fmt.Fprintf(t.W, "%s: group=%s lvl=%d\n", name, ptr(e.Group), e.Group.Level)
	default:
		fmt.Fprintf(t.W, "%s\n", name)
	}
}
