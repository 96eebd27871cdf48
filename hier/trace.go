package hier

import (
	"fmt"
	"io"
	"strconv"
)

// Tracer receives the tracepoints of the kernel's timer_migration trace
// system (include/trace/events/timer_migration.h), one method each, with
// the fields the kernel prints. Groups are identified by GroupID where the
// kernel prints a pointer; NoGroup stands for a NULL pointer. Levels are in
// the GroupIDs. Masks are the raw 8-bit child masks; a migrator of
// MigratorNone prints as ff.
//
// The methods are called synchronously, at the kernel's places, often with
// per-CPU and group locks held: an implementation must not call back into
// the Hierarchy. Events of one walk arrive in program order; events of
// concurrent walks interleave as the walks do.
//
// The wakeup values follow the kernel exactly: each CPU tracepoint prints
// the wakeup stored at that instant (see the methods).
type Tracer interface {
	// GroupSet: tmigr_group_set, a group was created (node is NoNode
	// for groups at or above the crossnode level).
	GroupSet(group GroupID, node int)
	// ConnectChildParent: tmigr_connect_child_parent, child was linked
	// below parent; node and numChildren are the parent's, groupmask the
	// child's new bit in it.
	ConnectChildParent(child, parent GroupID, node, numChildren int, groupmask uint8)
	// ConnectCPUParent: tmigr_connect_cpu_parent, cpu joined its level-0
	// group parent.
	ConnectCPUParent(cpu int, parent GroupID, node, numChildren int, groupmask uint8)

	// GroupSetCPUActive: tmigr_group_set_cpu_active, after the CAS in the
	// activation walk; active and migrator are the new state.
	GroupSetCPUActive(group, parent GroupID, node int, active, migrator, childmask uint8)
	// GroupSetCPUInactive: tmigr_group_set_cpu_inactive, after the
	// successful CAS in the deactivation walk; active and migrator are the
	// new state.
	GroupSetCPUInactive(group, parent GroupID, node int, active, migrator, childmask uint8)

	// CPUActive: tmigr_cpu_active, before the wakeup reset, so wakeup is
	// the value of the idle period that just ended.
	CPUActive(cpu int, parent GroupID, wakeup int64)
	// CPUNewTimer: tmigr_cpu_new_timer, when an idle CPU's new first
	// global timer is walked up; wakeup is the old value.
	CPUNewTimer(cpu int, parent GroupID, wakeup int64)
	// CPUAvailable: tmigr_cpu_available (tmigr_cpu_online before the 2025
	// rename).
	CPUAvailable(cpu int, parent GroupID, wakeup int64)
	// CPUUnavailable: tmigr_cpu_unavailable (tmigr_cpu_offline); wakeup
	// is always KtimeMax.
	CPUUnavailable(cpu int, parent GroupID, wakeup int64)
	// HandleRemoteCPU: tmigr_handle_remote_cpu, a remote expiry of cpu's
	// global timers starts. cpu is the target (the handler is the CPU that
	// called HandleRemote, possibly the target itself); wakeup is the
	// target's value before the reset.
	HandleRemoteCPU(cpu int, parent GroupID, wakeup int64)

	// CPUIdle: tmigr_cpu_idle at the end of Deactivate; nextevt is the
	// argument, wakeup the value returned.
	CPUIdle(cpu int, parent GroupID, nextevt, wakeup int64)
	// CPUNewTimerIdle: tmigr_cpu_new_timer_idle at the end of every
	// NewTimer of an available CPU; nextevt is the argument, wakeup the
	// value returned.
	CPUNewTimerIdle(cpu int, parent GroupID, nextevt, wakeup int64)

	// UpdateEvents: tmigr_update_events, at the end of an event update
	// that did not exit early. child is NoGroup at level 0, and then
	// childEvtExpiry and childEvtCPU are 0; otherwise they are the child's
	// group event as stored (stale values are normal for an ignored
	// event). nextevt is the expiry propagated (KtimeMax when the child has
	// nothing), nextExpiry the group's after the update.
	UpdateEvents(child, group GroupID, childActive, groupActive uint8, nextevt, nextExpiry, childEvtExpiry int64, childEvtCPU int)
	// HandleRemote: tmigr_handle_remote, each group visited by the remote
	// expiry walk, before its migrator check.
	HandleRemote(group GroupID)
}

// TextTracer writes each tracepoint as the kernel's TP_printk text, one
// line each, with group names ("GRP1:0") in place of pointers and
// 0000000000000000 for NULL, e.g.
//
//	tmigr_cpu_idle: cpu=3 parent=GRP0:0 nextevt=6728000000 wakeup=9223372036854775807
//
// The lines carry no timestamp and no [cpu] column: the caller knows which
// CPU ran the call that emitted them. Writes are not synchronised; give it
// a writer that tolerates the caller's concurrency. Its Prefix, if set, is
// written before every line.
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

func (t *TextTracer) printf(format string, args ...any) {
	if t.Prefix != nil {
		io.WriteString(t.W, t.Prefix())
	}
	fmt.Fprintf(t.W, format+"\n", args...)
}

func u64(v int64) string { return strconv.FormatUint(uint64(v), 10) }

// GroupSet implements Tracer.
func (t *TextTracer) GroupSet(g GroupID, node int) {
	t.printf("tmigr_group_set: group=%s lvl=%d numa=%d", ptr(g), g.Level, node)
}

// ConnectChildParent implements Tracer, in the format of the kernels
// before the 2026 per-capacity hierarchies (no capacity field).
func (t *TextTracer) ConnectChildParent(child, parent GroupID, node, numChildren int, groupmask uint8) {
	t.printf("tmigr_connect_child_parent: group=%s groupmask=%x parent=%s lvl=%d numa=%d num_children=%d",
		ptr(child), groupmask, ptr(parent), parent.Level, node, numChildren)
}

// ConnectCPUParent implements Tracer (no capacity field either).
func (t *TextTracer) ConnectCPUParent(cpu int, parent GroupID, node, numChildren int, groupmask uint8) {
	t.printf("tmigr_connect_cpu_parent: cpu=%d groupmask=%x parent=%s lvl=%d numa=%d num_children=%d",
		cpu, groupmask, ptr(parent), parent.Level, node, numChildren)
}

func (t *TextTracer) groupAndCPU(name string, g, parent GroupID, node int, active, migrator, childmask uint8) {
	t.printf("%s: group=%s lvl=%d numa=%d active=%x migrator=%x parent=%s childmask=%x",
		name, ptr(g), g.Level, node, active, migrator, ptr(parent), childmask)
}

// GroupSetCPUActive implements Tracer.
func (t *TextTracer) GroupSetCPUActive(g, parent GroupID, node int, active, migrator, childmask uint8) {
	t.groupAndCPU("tmigr_group_set_cpu_active", g, parent, node, active, migrator, childmask)
}

// GroupSetCPUInactive implements Tracer.
func (t *TextTracer) GroupSetCPUInactive(g, parent GroupID, node int, active, migrator, childmask uint8) {
	t.groupAndCPU("tmigr_group_set_cpu_inactive", g, parent, node, active, migrator, childmask)
}

func (t *TextTracer) cpugroup(name string, cpu int, parent GroupID, wakeup int64) {
	t.printf("%s: cpu=%d parent=%s wakeup=%s", name, cpu, ptr(parent), u64(wakeup))
}

// CPUActive implements Tracer.
func (t *TextTracer) CPUActive(cpu int, parent GroupID, wakeup int64) {
	t.cpugroup("tmigr_cpu_active", cpu, parent, wakeup)
}

// CPUNewTimer implements Tracer.
func (t *TextTracer) CPUNewTimer(cpu int, parent GroupID, wakeup int64) {
	t.cpugroup("tmigr_cpu_new_timer", cpu, parent, wakeup)
}

// CPUAvailable implements Tracer.
func (t *TextTracer) CPUAvailable(cpu int, parent GroupID, wakeup int64) {
	t.cpugroup("tmigr_cpu_available", cpu, parent, wakeup)
}

// CPUUnavailable implements Tracer.
func (t *TextTracer) CPUUnavailable(cpu int, parent GroupID, wakeup int64) {
	t.cpugroup("tmigr_cpu_unavailable", cpu, parent, wakeup)
}

// HandleRemoteCPU implements Tracer.
func (t *TextTracer) HandleRemoteCPU(cpu int, parent GroupID, wakeup int64) {
	t.cpugroup("tmigr_handle_remote_cpu", cpu, parent, wakeup)
}

// CPUIdle implements Tracer.
func (t *TextTracer) CPUIdle(cpu int, parent GroupID, nextevt, wakeup int64) {
	t.printf("tmigr_cpu_idle: cpu=%d parent=%s nextevt=%s wakeup=%s", cpu, ptr(parent), u64(nextevt), u64(wakeup))
}

// CPUNewTimerIdle implements Tracer.
func (t *TextTracer) CPUNewTimerIdle(cpu int, parent GroupID, nextevt, wakeup int64) {
	t.printf("tmigr_cpu_new_timer_idle: cpu=%d parent=%s nextevt=%s wakeup=%s", cpu, ptr(parent), u64(nextevt), u64(wakeup))
}

// UpdateEvents implements Tracer.
func (t *TextTracer) UpdateEvents(child, g GroupID, childActive, groupActive uint8, nextevt, nextExpiry, childEvtExpiry int64, childEvtCPU int) {
	t.printf("tmigr_update_events: child=%s group=%s group_lvl=%d child_active=%x group_active=%x nextevt=%s next_expiry=%s child_evt_expiry=%s child_evtcpu=%d",
		ptr(child), ptr(g), g.Level, childActive, groupActive, u64(nextevt), u64(nextExpiry), u64(childEvtExpiry), childEvtCPU)
}

// HandleRemote implements Tracer.
func (t *TextTracer) HandleRemote(g GroupID) {
	t.printf("tmigr_handle_remote: group=%s lvl=%d", ptr(g), g.Level)
}
