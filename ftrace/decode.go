package ftrace

// decoderFor returns the decoder of a tracepoint this package knows, nil for
// any other.
func decoderFor(name string) func(*dec) Payload {
	switch name {
	case "timer_init":
		return decTimerInit
	case "timer_start":
		return decTimerStart
	case "timer_expire_entry":
		return decTimerExpireEntry
	case "timer_expire_exit":
		return decTimerExpireExit
	case "timer_cancel":
		return decTimerCancel
	case "timer_base_idle":
		return decTimerBaseIdle
	case "hrtimer_init":
		return decHrtimerInit
	case "hrtimer_setup":
		return decHrtimerSetup
	case "hrtimer_start":
		return decHrtimerStart
	case "hrtimer_start_expired":
		return decHrtimerStartExpired
	case "hrtimer_rearm":
		return decHrtimerRearm
	case "hrtimer_expire_entry":
		return decHrtimerExpireEntry
	case "hrtimer_expire_exit":
		return decHrtimerExpireExit
	case "hrtimer_cancel":
		return decHrtimerCancel
	case "itimer_state":
		return decItimerState
	case "itimer_expire":
		return decItimerExpire
	case "tick_stop":
		return decTickStop
	case "tmigr_group_set":
		return decTmigrGroupSet
	case "tmigr_connect_child_parent":
		return decTmigrConnectChildParent
	case "tmigr_connect_cpu_parent":
		return decTmigrConnectCPUParent
	case "tmigr_group_set_cpu_active":
		return decTmigrGroupSetCPUActive
	case "tmigr_group_set_cpu_inactive":
		return decTmigrGroupSetCPUInactive
	case "tmigr_cpu_new_timer":
		return decTmigrCPUNewTimer
	case "tmigr_cpu_active":
		return decTmigrCPUActive
	case "tmigr_cpu_available":
		return decTmigrCPUAvailable
	case "tmigr_cpu_unavailable":
		return decTmigrCPUUnavailable
	case "tmigr_cpu_online":
		return decTmigrCPUOnline
	case "tmigr_cpu_offline":
		return decTmigrCPUOffline
	case "tmigr_handle_remote_cpu":
		return decTmigrHandleRemoteCPU
	case "tmigr_cpu_idle":
		return decTmigrCPUIdle
	case "tmigr_cpu_new_timer_idle":
		return decTmigrCPUNewTimerIdle
	case "tmigr_update_events":
		return decTmigrUpdateEvents
	case "tmigr_handle_remote":
		return decTmigrHandleRemote
	case "tracing_mark_write":
		return decTracingMark
	}
	return nil
}

// Events lists the tracepoints this package decodes, in the order of the
// kernel's headers (timer.h, then timer_migration.h), then ftrace's own
// tracing_mark_write.
func Events() []string {
	return []string{
		"timer_init", "timer_start", "timer_expire_entry", "timer_expire_exit",
		"timer_cancel", "timer_base_idle", "hrtimer_init", "hrtimer_setup",
		"hrtimer_start", "hrtimer_start_expired", "hrtimer_rearm",
		"hrtimer_expire_entry", "hrtimer_expire_exit",
		"hrtimer_cancel", "itimer_state", "itimer_expire", "tick_stop",
		"tmigr_group_set", "tmigr_connect_child_parent", "tmigr_connect_cpu_parent",
		"tmigr_group_set_cpu_inactive", "tmigr_group_set_cpu_active",
		"tmigr_cpu_new_timer", "tmigr_cpu_active", "tmigr_cpu_available",
		"tmigr_cpu_unavailable", "tmigr_cpu_online", "tmigr_cpu_offline",
		"tmigr_handle_remote_cpu", "tmigr_cpu_idle", "tmigr_cpu_new_timer_idle",
		"tmigr_update_events", "tmigr_handle_remote", "tracing_mark_write",
	}
}

// decode decodes a payload of the named tracepoint into d's scratch space.
// known is false for a tracepoint this package does not decode; otherwise
// d.err tells whether the payload was good.
func decode(d *dec, name, payload string) (p Payload, known bool) {
	f := decoderFor(name)
	if f == nil {
		return nil, false
	}
	d.reset(name, payload)
	p = f(d)
	d.finish()
	if d.err != nil {
		return nil, true
	}
	return p, true
}
