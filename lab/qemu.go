package lab

import (
	"fmt"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
)

// kernelArgs is the kernel command line: the recorder's parameters, then
// the user's. quiet keeps the boot fast (every console line crosses the
// emulated UART); the log is read back from dmesg anyway. panic=-1 turns a
// panic into a reboot, which -no-reboot turns into QEMU's exit, so a guest
// that crashes ends at once instead of at the timeout.
//
// tsc=unstable: under TCG the kernel finds the vCPUs' TSCs out of sync at
// bring-up in some boots and not in others, and in the others its clock
// watchdog may still mark the TSC unstable a few seconds later. That late
// change flips the __sched_clock_stable static key, patching
// sched_clock_cpu() while every vCPU runs it, and multi-threaded TCG then
// sometimes executes the patch's int3 after the kernel's patching is done:
// "Oops: int3" in sched_clock_cpu, a panic (seen booting 24 and 40 vCPUs
// of 6.12.118 on QEMU 7.2). Declaring the TSC unstable from the start
// makes every boot take the same path, with the key never flipped; the
// clocksource is then the HPET, as in the boots that found the TSCs out of
// sync by themselves. Timers and timer migration do not look at the
// clocksource.
//
// no_timer_check: at boot the kernel checks that the timer interrupt
// arrives through the IO-APIC within a short busy wait (check_timer), and
// on a host loaded far beyond its cores the vCPU that waits gets no
// interrupt in time: "Kernel panic - not syncing: IO-APIC + timer doesn't
// work!" (seen on 6.12 and 6.19 guests at host load 11-19). KVM guests
// skip the check the same way; it verifies the board, not the timers.
//
// noirqdebug: the serial port's interrupt, raised far more often than
// handled while a loaded host's vCPU dumps the trace, looks spurious to
// the kernel's detector, which disables it ("Disabling IRQ #4"): the dump
// stalls and the run times out (a 4-vCPU 6.1 PREEMPT_RT guest of the lab
// campaign at host load 8-12). The detector guards broken hardware, not
// timers.
func kernelArgs(s *Spec) string {
	a := "console=" + consoleDevice + " quiet panic=-1 tsc=unstable no_timer_check noirqdebug rdinit=/init"
	if s.Cmdline != "" {
		a += " " + s.Cmdline
	}
	return a
}

// smp returns QEMU's -smp value. When the nodes are equal contiguous
// blocks, each is one socket of cores; otherwise every vCPU is a socket of
// its own, so that no socket (and no cache the scheduler shares) spans two
// nodes. The timer migration hierarchy only looks at nodes either way.
func smp(s *Spec) string {
	per := s.CPUs / s.Nodes
	even := s.CPUs%s.Nodes == 0
	for i := 0; even && i < s.Nodes; i++ {
		even = s.NodeCPUs[i].Equal(cpumask.Range(i*per, (i+1)*per-1))
	}
	if even {
		return fmt.Sprintf("%d,sockets=%d,cores=%d,threads=1", s.CPUs, s.Nodes, per)
	}
	return fmt.Sprintf("%d,sockets=%d,cores=1,threads=1", s.CPUs, s.CPUs)
}

// qemuArgs returns QEMU's arguments (without the program) for a guest of s
// booting kernel with initrd: q35 under multi-threaded TCG, one memory
// backend per NUMA node, the serial console on standard output, no other
// devices, no reboot.
func qemuArgs(s *Spec, kernel, initrd string) []string {
	args := []string{
		// debug-threads names the vCPU threads "CPU <n>/TCG", for
		// deprioritize.
		"-name", "tmigr-lab,debug-threads=on",
		"-machine", "q35",
		"-accel", "tcg,thread=multi",
		"-cpu", "max",
		"-smp", smp(s),
		"-m", fmt.Sprintf("%dM", s.MemoryMB),
	}
	perNode := s.MemoryMB / s.Nodes
	for i, cpus := range s.NodeCPUs {
		args = append(args, "-object", fmt.Sprintf("memory-backend-ram,id=mem%d,size=%dM", i, perNode))
		node := fmt.Sprintf("node,nodeid=%d", i)
		// One cpus= per range: QEMU takes "a" or "a-b" only.
		for _, r := range strings.Split(cpus.String(), ",") {
			node += ",cpus=" + r
		}
		args = append(args, "-numa", node+fmt.Sprintf(",memdev=mem%d", i))
	}
	return append(args,
		"-nographic", "-nodefaults",
		"-serial", "stdio",
		"-monitor", "none",
		"-no-reboot",
		"-kernel", kernel,
		"-initrd", initrd,
		"-append", kernelArgs(s),
	)
}
