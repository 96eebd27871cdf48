package tmigr

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
)

// Offline takes worker cpu offline, as CPU hotplug does: it leaves the
// migration hierarchy (tmigr_cpu_offline) and every timer it holds, wheel
// and hrtimer, pinned or not, moves to the first online housekeeping worker
// (timers_dead_cpu, hrtimers_cpu_dying), as do its queued tasks. Its thread
// then sleeps until Online. A task running on it is waited for. The last
// online worker cannot go offline, a worker cannot take itself offline,
// and a timer function may not call it (ErrOnWorker).
func (rt *Runtime) Offline(c int) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	return apiErr(rt.e.Offline(w))
}

// Online brings an offline worker back (an isolated one stays out of the
// hierarchy under PullIsolated, as the kernel keeps it). A timer function
// may not call it (ErrOnWorker).
func (rt *Runtime) Online(c int) error {
	w, err := rt.worker(c)
	if err != nil {
		return err
	}
	return apiErr(rt.e.Online(w))
}

// Exclude sets the isolated workers at run time, as an isolated cpuset
// partition does: list holds every worker to be isolated besides
// Config.Isolated (which stays isolated), "" for none. Under PullIsolated
// the hierarchy's exclusion runs with the kernel's set arithmetic
// (tmigr_isolated_exclude_cpumask): workers in list that take part leave
// it, and workers out of it that had left come back. Under the other
// policies only the housekeeping set changes (where AfterFunc from outside
// the workers queues). At least one housekeeping worker must remain. It
// waits for idle workers running a timer function to finish it, and a timer
// function may not call it (ErrOnWorker).
func (rt *Runtime) Exclude(list string) error {
	if !rt.started() {
		return ErrNotStarted
	}
	e, err := cpumask.Parse(list)
	if err != nil {
		return fmt.Errorf("tmigr: Exclude: %w", err)
	}
	return apiErr(rt.e.Exclude(e, list))
}
