package ftrace

import "reflect"

// The table: one row per tracepoint this package decodes, its fields in the
// order of the kernel's TP_printk (include/trace/events/timer.h and
// timer_migration.h, as of Linux 6.18 and the 2026 additions). A row drives
// reading the text, printing it, and reading a trace.dat record, whose
// fields are those of the event's format (src names the ones whose record
// field has another name or is computed, as the print fmt computes it).
// The rows are in the order of the kernel's headers, which is the order
// Events lists them in.

const (
	timerCPUMask     = 1<<18 - 1 // TIMER_CPUMASK
	timerIdxLimit    = 1<<10 - 1 // flags >> TIMER_ARRAYSHIFT
	timerArrayShift  = 22        // TIMER_ARRAYSHIFT
	tracingMarkEvent = "tracing_mark_write"
)

// Fields that several rows share.
var (
	timerPtr   = column{key: "timer", conv: convPtr, gof: "Timer"}
	hrtimerPtr = column{key: "hrtimer", conv: convPtr, gof: "Hrtimer"}
	function   = column{key: "function", conv: convSym, gof: "Function"}
	groupPtr   = column{key: "group", conv: convPtr, gof: "Group"}
	parentPtr  = column{key: "parent", conv: convPtr, gof: "Parent"}
	lvl        = column{key: "lvl", conv: convInt, gof: "Lvl"}
	numa       = column{key: "numa", conv: convInt, gof: "Numa", src: named("numa_node")}
	cpu        = column{key: "cpu", conv: convInt, gof: "CPU"}
	groupmask  = column{key: "groupmask", conv: convHex, gof: "Groupmask"}
	capacity   = column{key: "capacity", conv: convInt, gof: "Capacity", flag: "HasCapacity"}
	children   = column{key: "num_children", conv: convInt, gof: "NumChildren"}
	wakeup     = column{key: "wakeup", conv: convKtime, gof: "Wakeup"}
	nextevt    = column{key: "nextevt", conv: convKtime, gof: "NextEvt"}
	hrtimerSet = []column{hrtimerPtr,
		{key: "clockid", conv: convSymbolic, gof: "ClockID", syms: clockIDs},
		{key: "mode", conv: convSymbolic, gof: "Mode", syms: hrtimerModes}}
	groupAndCPU = []column{groupPtr, lvl, numa,
		{key: "active", conv: convHex, gof: "Active"},
		{key: "migrator", conv: convHex, gof: "Migrator"},
		parentPtr,
		{key: "childmask", conv: convHex, gof: "Childmask"}}
	cpuGroup  = []column{cpu, parentPtr, wakeup}
	tmigrIdle = []column{cpu, parentPtr, nextevt, wakeup}
)

var tracepoints = []*tracepoint{
	row[TimerInit](timerPtr),
	row[TimerStart](timerPtr, function,
		column{key: "expires", conv: convULong, gof: "Expires"},
		column{key: "timeout", conv: convLong, gof: "Timeout", bracket: true, src: difference("expires", "now")},
		column{key: "bucket_expiry", conv: convULong, gof: "BucketExpiry", flag: "NoBucketExpiry", absent: true},
		column{key: "cpu", conv: convUint, gof: "CPU", hi: timerCPUMask, src: masked("flags", timerCPUMask)},
		column{key: "idx", conv: convUint, gof: "Idx", hi: timerIdxLimit, src: shifted("flags", timerArrayShift)},
		column{key: "flags", conv: convTimerFlags, gof: "Flags", src: masked("flags", uint64(timerFlagMask))}),
	row[TimerExpireEntry](timerPtr, function,
		column{key: "now", conv: convULong, gof: "Now"},
		column{key: "baseclk", conv: convULong, gof: "BaseClk"}),
	row[TimerExpireExit](timerPtr),
	row[TimerCancel](timerPtr),
	row[TimerBaseIdle](
		column{key: "is_idle", conv: convBool, gof: "IsIdle"}, cpu),
	row[HrtimerInit](hrtimerSet...),
	row[HrtimerSetup](hrtimerSet...),
	row[HrtimerStart](hrtimerPtr, function,
		column{key: "expires", conv: convS64, gof: "Expires"},
		column{key: "softexpires", conv: convS64, gof: "SoftExpires"},
		// trace-cmd's hrtimer plugin prints no mode (nor did kernels
		// before 4.16).
		column{key: "mode", conv: convSymbolic, gof: "Mode", syms: hrtimerModes, flag: "NoMode", absent: true},
		column{key: "was_armed", conv: convBool, gof: "WasArmed", flag: "HasWasArmed"}),
	row[HrtimerStartExpired](hrtimerPtr),
	row[HrtimerRearm](
		column{key: "next_event", conv: convS64, gof: "NextEvent"},
		column{key: "deferred", conv: convBool, gof: "Deferred"}),
	row[HrtimerExpireEntry](hrtimerPtr, function,
		column{key: "now", conv: convS64, gof: "Now"}),
	row[HrtimerExpireExit](hrtimerPtr),
	row[HrtimerCancel](hrtimerPtr),
	row[ItimerState](
		column{key: "which", conv: convInt, gof: "Which"},
		column{key: "expires", conv: convULong, gof: "Expires"},
		column{key: "it_value", conv: convSecUsec, gof: "Value", src: secNsec("value_sec", "value_nsec")},
		column{key: "it_interval", conv: convSecUsec, gof: "Interval", src: secNsec("interval_sec", "interval_nsec")}),
	row[ItimerExpire](
		column{key: "which", conv: convInt, gof: "Which"},
		column{key: "pid", conv: convInt, gof: "PID"},
		column{key: "now", conv: convULong, gof: "Now"}),
	row[TickStop](
		column{key: "success", conv: convBool, gof: "Success"},
		column{key: "dependency", conv: convSymbolic, gof: "Dependency", syms: tickDeps}),

	row[TmigrGroupSet](groupPtr, lvl, numa),
	row[TmigrConnectChildParent](
		column{key: "group", conv: convPtr, gof: "Group", src: named("child")},
		groupmask, parentPtr, lvl, numa, capacity, children),
	row[TmigrConnectCPUParent](cpu, groupmask, parentPtr, lvl, numa, capacity, children),
	row[TmigrGroupSetCPUInactive](groupAndCPU...),
	row[TmigrGroupSetCPUActive](groupAndCPU...),
	row[TmigrCPUNewTimer](cpuGroup...),
	row[TmigrCPUActive](cpuGroup...),
	row[TmigrCPUAvailable](cpuGroup...),
	row[TmigrCPUUnavailable](cpuGroup...),
	row[TmigrCPUOnline](cpuGroup...),
	row[TmigrCPUOffline](cpuGroup...),
	row[TmigrHandleRemoteCPU](cpuGroup...),
	row[TmigrCPUIdle](tmigrIdle...),
	row[TmigrCPUNewTimerIdle](tmigrIdle...),
	row[TmigrUpdateEvents](
		column{key: "child", conv: convPtr, gof: "Child"},
		groupPtr,
		column{key: "group_lvl", conv: convInt, gof: "GroupLvl"},
		column{key: "child_active", conv: convHex, gof: "ChildActive"},
		column{key: "group_active", conv: convHex, gof: "GroupActive"},
		nextevt,
		column{key: "next_expiry", conv: convKtime, gof: "NextExpiry", src: named("group_next_expiry")},
		column{key: "child_evt_expiry", conv: convKtime, gof: "ChildEvtExpiry"},
		column{key: "child_evtcpu", conv: convInt, gof: "ChildEvtCPU"}),
	row[TmigrHandleRemote](groupPtr, lvl),
}

var (
	byName = map[string]*tracepoint{}
	byType = map[reflect.Type]*tracepoint{}
	// byLen holds the tracepoints by the length of their names, which
	// nearly always tells one from the others: decode finds a line's
	// tracepoint with one comparison rather than hashing its name.
	byLen [64][]*tracepoint
)

func init() {
	for i, t := range tracepoints {
		t.id = i
		if len(t.name) < len(byLen) {
			byLen[len(t.name)] = append(byLen[len(t.name)], t)
		}
		byName[t.name] = t
		byType[t.typ] = t
	}
}

// Events lists the tracepoints this package decodes, in the order of the
// kernel's headers (timer.h, then timer_migration.h), then ftrace's own
// tracing_mark_write.
func Events() []string {
	names := make([]string, 0, len(tracepoints)+1)
	for _, t := range tracepoints {
		names = append(names, t.name)
	}
	return append(names, tracingMarkEvent)
}

// decode decodes a payload of the named tracepoint into d's scratch space.
// known is false for a tracepoint this package does not decode; otherwise
// d.err tells whether the payload was good.
func decode(d *dec, name, payload string) (p Payload, known bool) {
	if name == tracingMarkEvent {
		// The marker's text is free: it is taken as it is.
		return TracingMark{Text: payload}, true
	}
	t := tracepointNamed(name)
	if t == nil {
		return nil, false
	}
	d.reset(name, payload)
	var sl *shareSlot
	if d.share != nil {
		if p, sl = d.share.lookup(t, payload); p != nil {
			return p, true
		}
	}
	p = t.fromText(t, d)
	d.finish()
	if d.err != nil {
		return nil, true
	}
	if sl != nil {
		sl.put(payload, p)
	}
	return p, true
}

// tracepointNamed returns the row of the named tracepoint, nil if none.
func tracepointNamed(name string) *tracepoint {
	if len(name) >= len(byLen) {
		return byName[name]
	}
	for _, t := range byLen[len(name)] {
		if t.name == name {
			return t
		}
	}
	return nil
}

// knownEvent reports whether this package decodes the tracepoint.
func knownEvent(name string) bool {
	return name == tracingMarkEvent || byName[name] != nil
}
