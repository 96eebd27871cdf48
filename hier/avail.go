package hier

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
)

// SetAvailable is the CPUHP_AP_TMIGR_ONLINE startup callback
// (tmigr_set_cpu_available), run on cpu as it comes online. With isolation
// exclusion switched on (InitIsolation), an isolated CPU stays out: that is
// how an isolated CPU that goes offline and comes back stays excluded.
// Otherwise cpu becomes available; if its timer base is not idle
// (baseIdle false) it is activated first, becoming migrator of every group
// on its path that had none. An idle CPU walks nothing: its event is
// published by its next NewTimer. Setting an available CPU again only
// re-sets its bit in the available mask. It fails for a CPU out of range
// or not prepared (the kernel's -EINVAL); on a uniprocessor it does
// nothing.
func (h *Hierarchy) SetAvailable(cpu int, baseIdle bool) error {
	if err := h.checkCPU(cpu); err != nil {
		return err
	}
	if h.levels == 0 {
		return nil
	}
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	h.online.Set(cpu)
	return h.setAvailableChecked(cpu, baseIdle)
}

// setAvailableChecked is tmigr_set_cpu_available: the isolation gate, then
// the common part (hotplugMu held).
func (h *Hierarchy) setAvailableChecked(cpu int, baseIdle bool) error {
	if h.keyOn && h.iso.IsIsolated(cpu) {
		return nil
	}
	return h.setAvailable(cpu, baseIdle)
}

// setAvailable is __tmigr_set_cpu_available (hotplugMu held).
func (h *Hierarchy) setAvailable(cpu int, baseIdle bool) error {
	t := &h.cpus[cpu]
	if t.tmgroup.Load() == nil {
		h.warn()
		return fmt.Errorf("hier: CPU %d made available before Prepare", cpu)
	}
	h.availMu.Lock()
	defer h.availMu.Unlock()
	h.availMask.Set(cpu) // also in the idempotent case
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.available.Load() {
		return nil
	}
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUAvailable, CPU: cpu, Parent: t.parentID(), Wakeup: t.wakeup.Load()})
	}
	t.idle.Store(baseIdle)
	if !baseIdle {
		h.activate(t)
	}
	t.available.Store(true) // after the walk, as the kernel does
	return nil
}

// ClearAvailable is the CPUHP_AP_TMIGR_ONLINE teardown callback
// (tmigr_clear_cpu_available), run on cpu, which is active, as it goes
// offline. The CPU withdraws from the hierarchy (an ordinary "idle without
// event" walk: the migrator role is handed over) and handles its own
// timers from now on. If it was the last active CPU and events are pending,
// the result is the CPU that must be forced active to take over
// (tmigr_trigger_active runs a work item there: the driver must wake that
// CPU, i.e. Activate it if it is idle): the lowest-numbered available CPU.
// Otherwise the result is -1.
//
// Withdrawing an idle CPU is outside the kernel's contract: its event is
// then re-queued with expiry KtimeMax instead of removed (docs/hierarchy.md A3), as the
// kernel would do.
func (h *Hierarchy) ClearAvailable(cpu int) (trigger int, err error) {
	if err := h.checkCPU(cpu); err != nil {
		return -1, err
	}
	if h.levels == 0 {
		return -1, nil
	}
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	h.online.Clear(cpu)
	return h.clearAvailable(cpu), nil
}

// clearAvailable is tmigr_clear_cpu_available (hotplugMu held).
func (h *Hierarchy) clearAvailable(cpu int) int {
	t := &h.cpus[cpu]
	h.availMu.Lock()
	defer h.availMu.Unlock()
	h.availMask.Clear(cpu)
	t.mu.Lock()
	if !t.available.Load() {
		t.mu.Unlock()
		return -1
	}
	t.available.Store(false)
	t.wakeup.Store(KtimeMax)
	firstexp := h.deactivate(t, KtimeMax)
	if h.tr != nil {
		h.tr.Trace(Event{Kind: EvCPUUnavailable, CPU: cpu, Parent: t.parentID(), Wakeup: t.wakeup.Load()})
	}
	t.mu.Unlock()
	if firstexp != KtimeMax {
		return h.availMask.First() // cpumask_any; -1 if none is left
	}
	return -1
}

// SetIsolation replaces the isolation setup the predicate reads, as a
// cpuset partition change does (cpuset updates its isolated CPUs, then
// calls the exclusion function: follow SetIsolation with ExcludeIsolated).
func (h *Hierarchy) SetIsolation(iso Isolation) error {
	if err := h.validIsolation(&iso); err != nil {
		return err
	}
	h.hotplugMu.Lock()
	h.iso = iso
	h.hotplugMu.Unlock()
	return nil
}

// Isolation returns the current isolation setup.
func (h *Hierarchy) Isolation() Isolation {
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	return h.iso
}

// InitIsolation is tmigr_init_isolation, the late initcall of the 2025
// kernels: it switches the static key tmigr_exclude_isolated on and, if an
// isolcpus domain list is configured, excludes it (ExcludeIsolated with the
// possible CPUs outside the HK_TYPE_DOMAIN housekeeping mask). Until it
// runs, isolated CPUs come online as available, as they do during boot.
// Without Options.ExcludeIsolated it does nothing. idle and the result are
// as for ExcludeIsolated.
func (h *Hierarchy) InitIsolation(idle func(cpu int) bool) (triggers []int) {
	if !h.excludeSupported || h.levels == 0 {
		return nil
	}
	h.hotplugMu.Lock()
	h.keyOn = true
	dom := h.iso.Domain.And(h.possible)
	h.hotplugMu.Unlock()
	if dom.Empty() {
		return nil
	}
	return h.ExcludeIsolated(dom, idle)
}

// ExcludeIsolated is tmigr_isolated_exclude_cpumask: e is the complete set
// of CPUs that must be out of the hierarchy (cpuset passes all its
// isolated CPUs). With A the available CPUs, ON the online ones and NK the
// CPUs that are not nohz_full:
//
//  1. unisolate U = (ON \ e) \ A: each becomes available unless the
//     predicate still finds it isolated (the merged version's checking
//     variant, kept as docs/hierarchy.md X4 explains, so boot-isolated CPUs
//     not in e stay out), and
//     active unless idle(cpu) reports its timer base idle (idle may be
//     nil: never idle);
//  2. isolate I = (e ∩ A) ∩ NK, with A re-read, minus the timekeeper while
//     nohz_full runs; each withdraws as ClearAvailable does.
//
// In the kernel each CPU does this on itself, in a work item, so the CPUs
// of I are running (active) when they withdraw; a driver should wake them
// first. The result lists, in order and without repeats, the CPUs that must
// be forced active because a withdrawn CPU was the last active one with
// events pending. Calling it twice with the same e changes nothing the
// second time. Without Options.ExcludeIsolated (the 6.9-6.18 model) the
// function does not exist in the kernel and this does nothing.
func (h *Hierarchy) ExcludeIsolated(e cpumask.Mask, idle func(cpu int) bool) (triggers []int) {
	if !h.excludeSupported || h.levels == 0 {
		return nil
	}
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()

	u := h.online.AndNot(e).AndNot(h.availMask)
	for c := u.First(); c >= 0; c = u.Next(c) {
		// Errors are impossible: online CPUs are prepared.
		_ = h.setAvailableChecked(c, idle != nil && idle(c))
	}

	nk := h.possible.AndNot(h.iso.NohzFull)
	is := e.And(h.availMask).And(nk)
	for c := is.First(); c >= 0; c = is.Next(c) {
		if !h.iso.tickHotpluggable(c) {
			is.Clear(c)
			break
		}
	}
	for c := is.First(); c >= 0; c = is.Next(c) {
		if t := h.clearAvailable(c); t >= 0 && !contains(triggers, t) {
			triggers = append(triggers, t)
		}
	}
	return triggers
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Available returns tmigr_available_cpumask.
func (h *Hierarchy) Available() cpumask.Mask {
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	return h.availMask
}

// Online returns the CPUs between SetAvailable and ClearAvailable: those
// the online callback ran for, available or isolated.
func (h *Hierarchy) Online() cpumask.Mask {
	h.hotplugMu.Lock()
	defer h.hotplugMu.Unlock()
	return h.online
}
