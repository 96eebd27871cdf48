//go:build !linux

package lab

import (
	"errors"
	"os/exec"

	"github.com/tmigr/tmigr/cpumask"
)

func setChildAttrs(cmd *exec.Cmd) {}

func deprioritize(pid int, cpus cpumask.Mask) (int, error) {
	return 0, errors.New("changing a thread's priority is implemented for Linux hosts only")
}
