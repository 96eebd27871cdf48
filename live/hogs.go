package live

import (
	"errors"
	"fmt"
	"os/exec"

	"github.com/tmigr/tmigr/internal/osthread"
)

// hogs are CPU hogs: busy-looping processes pinned one CPU each, SCHED_OTHER
// at nice 0, the load of a machine whose every CPU is taken by another
// program. They are separate processes (a shell's empty loop), not
// goroutines, so they take no P from the Go scheduler: package time's
// timers and the runtime's workers compete with them as with any other
// program, through the kernel's scheduler alone.
type hogs struct{ cmds []*exec.Cmd }

// maxHogs bounds the hogs per CPU.
const maxHogs = 16

// startHogs starts perCPU hogs on each CPU of cpus.
func startHogs(cpus []int, perCPU int) (*hogs, error) {
	if perCPU < 0 || perCPU > maxHogs {
		return nil, fmt.Errorf("hogs %d per CPU outside 0..%d", perCPU, maxHogs)
	}
	h := &hogs{}
	if perCPU == 0 {
		return h, nil
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("hogs: %w", err)
	}
	for _, c := range cpus {
		for range perCPU {
			cmd := exec.Command(sh, "-c", "while :; do :; done")
			if err := cmd.Start(); err != nil {
				h.stop()
				return nil, fmt.Errorf("hogs: %w", err)
			}
			h.cmds = append(h.cmds, cmd)
			if err := osthread.PinThread(cmd.Process.Pid, c); err != nil {
				h.stop()
				return nil, fmt.Errorf("hogs: %w", err)
			}
		}
	}
	return h, nil
}

// stop kills the hogs and reaps them.
func (h *hogs) stop() error {
	var errs []error
	for _, cmd := range h.cmds {
		if err := cmd.Process.Kill(); err != nil {
			errs = append(errs, err)
		}
		cmd.Wait()
	}
	h.cmds = nil
	return errors.Join(errs...)
}
