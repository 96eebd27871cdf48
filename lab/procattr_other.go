//go:build !linux

package lab

import (
	"errors"
	"os/exec"

	"github.com/tmigr/tmigr/cpumask"
)

func setChildAttrs(cmd *exec.Cmd) {}

func renice(pid int, cpus cpumask.Mask, nice int) (int, error) {
	return 0, errors.New("changing a thread's priority is implemented for Linux hosts only")
}
