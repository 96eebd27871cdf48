package lab

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tmigr/tmigr/cpumask"
)

// setChildAttrs makes the kernel kill QEMU when the recorder dies, however
// it dies: a guest of many vCPUs left running would hold the host's CPUs.
// (The signal follows the thread that started QEMU; Go's runtime does not
// end its threads while the program runs.)
func setChildAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// renice sets the nice value of the host threads of QEMU's vCPUs in cpus
// (19: the lowest priority, 0: the normal one) and returns how many it
// found. QEMU names them "CPU <n>/TCG".
func renice(pid int, cpus cpumask.Mask, nice int) (int, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(dir, e.Name(), "comm"))
		if err != nil {
			continue
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(string(comm)), "CPU ")
		if !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, "/")
		cpu, err := strconv.Atoi(num)
		if !ok || err != nil || cpu < 0 || cpu >= cpumask.MaxCPUs || !cpus.Test(cpu) {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return n, fmt.Errorf("renice vCPU %d (thread %d): %v", cpu, tid, err)
		}
		n++
	}
	return n, nil
}
