package ftrace

import (
	"strings"

	"github.com/tmigr/tmigr/hier"
)

// Our own events.
//
// The migration hierarchy (package hier) reports its tracepoints as
// hier.Event values, the one typed stream every consumer reads: the
// simulator writes them as a kernel-format trace, the replay compares them
// with the recording's, and explain tells from them why a timer ran where.
// TmigrPayload turns one into the payload type this package reads from a
// kernel trace, so that our events and the kernel's are the same values and
// the Writer formats both alike. Nothing is formatted and parsed back.

// GroupPtr is the pointer a trace of ours prints for group id, in place of
// the kernel's hashed struct pointer: ffff8880 0000LLII with level and
// index in hex, so that a trace of ours reads back like a kernel's (the
// same group is always the same pointer). NoGroup is the NULL pointer, 0.
func GroupPtr(id hier.GroupID) uint64 {
	if id == hier.NoGroup {
		return 0
	}
	return 0xffff8880_0000_0000 | uint64(id.Level&0xffff)<<16 | uint64(id.Index&0xffff)
}

// TmigrPayload returns the kernel's payload for the tracepoint e stands
// for, with GroupPtr pointers, in the format of the kernels before the 2026
// per-capacity hierarchies (no capacity field). It returns nil for an
// unknown kind.
func TmigrPayload(e hier.Event) Payload {
	if f := classPayloads[e.Kind]; f != nil {
		return f(e)
	}
	switch e.Kind {
	case hier.EvGroupSet:
		return TmigrGroupSet{Group: GroupPtr(e.Group), Lvl: e.Group.Level, Numa: e.Node}
	case hier.EvConnectChildParent:
		return TmigrConnectChildParent{Group: GroupPtr(e.Child), Groupmask: uint32(e.Groupmask),
			Parent: GroupPtr(e.Parent), Lvl: e.Parent.Level, Numa: e.Node, NumChildren: e.NumChildren}
	case hier.EvConnectCPUParent:
		return TmigrConnectCPUParent{CPU: e.CPU, Groupmask: uint32(e.Groupmask),
			Parent: GroupPtr(e.Parent), Lvl: e.Parent.Level, Numa: e.Node, NumChildren: e.NumChildren}
	case hier.EvUpdateEvents:
		return TmigrUpdateEvents{Child: GroupPtr(e.Child), Group: GroupPtr(e.Group), GroupLvl: e.Group.Level,
			ChildActive: e.ChildActive, GroupActive: e.GroupActive, NextEvt: e.NextEvt,
			NextExpiry: e.NextExpiry, ChildEvtExpiry: e.ChildEvtExpiry, ChildEvtCPU: e.ChildEvtCPU}
	case hier.EvHandleRemote:
		return TmigrHandleRemote{Group: GroupPtr(e.Group), Lvl: e.Group.Level}
	}
	return nil
}

// classPayloads makes the payloads of the events of the kernel's event
// classes (tmigr_cpugroup, tmigr_idle, tmigr_group_and_cpu): the class's
// fields, converted to the event's type.
var classPayloads = map[hier.EventKind]func(hier.Event) Payload{
	hier.EvCPUNewTimer:         func(e hier.Event) Payload { return TmigrCPUNewTimer(cpuGroupOf(e)) },
	hier.EvCPUActive:           func(e hier.Event) Payload { return TmigrCPUActive(cpuGroupOf(e)) },
	hier.EvCPUAvailable:        func(e hier.Event) Payload { return TmigrCPUAvailable(cpuGroupOf(e)) },
	hier.EvCPUUnavailable:      func(e hier.Event) Payload { return TmigrCPUUnavailable(cpuGroupOf(e)) },
	hier.EvHandleRemoteCPU:     func(e hier.Event) Payload { return TmigrHandleRemoteCPU(cpuGroupOf(e)) },
	hier.EvCPUIdle:             func(e hier.Event) Payload { return TmigrCPUIdle(idleOf(e)) },
	hier.EvCPUNewTimerIdle:     func(e hier.Event) Payload { return TmigrCPUNewTimerIdle(idleOf(e)) },
	hier.EvGroupSetCPUActive:   func(e hier.Event) Payload { return TmigrGroupSetCPUActive(groupAndCPUOf(e)) },
	hier.EvGroupSetCPUInactive: func(e hier.Event) Payload { return TmigrGroupSetCPUInactive(groupAndCPUOf(e)) },
}

func cpuGroupOf(e hier.Event) TmigrCPUGroup {
	return TmigrCPUGroup{CPU: e.CPU, Parent: GroupPtr(e.Parent), Wakeup: e.Wakeup}
}

func idleOf(e hier.Event) TmigrIdle {
	return TmigrIdle{CPU: e.CPU, Parent: GroupPtr(e.Parent), NextEvt: e.NextEvt, Wakeup: e.Wakeup}
}

func groupAndCPUOf(e hier.Event) TmigrGroupAndCPU {
	return TmigrGroupAndCPU{Group: GroupPtr(e.Group), Lvl: e.Group.Level, Numa: e.Node,
		Active: e.Active, Migrator: e.Migrator, Parent: GroupPtr(e.Parent), Childmask: uint32(e.Childmask)}
}

// IsTmigr reports whether p is a tracepoint of the timer_migration system
// (every one of them, those of later kernels included, is named tmigr_*).
func IsTmigr(p Payload) bool {
	return p != nil && strings.HasPrefix(p.Name(), "tmigr_")
}
