package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// The "at" command makes the machine line's run-time changes (see
// ftrace.Change) while the recording runs:
//
//	tmigr-guest at -changes '1s partition 9-15; 2s timer_migration=0' [-for D] [-pid PID] [-marker FILE] [-say PREFIX]
//
// Times count from its own start, which /init makes the moment it turns
// tracing on. Each change is made at its time, then announced on the trace
// marker ("tmigr-lab: 1s partition 9-15"), so the trace holds the moment
// it was done; "tmigr-lab: start" marks the start. A change may take long
// under TCG (making a partition of 16 vCPUs took 5 to 9 s on a loaded
// 2-core host), so after the last one it waits as long as was planned
// between that change and the end (-for, the recording's length) before
// it exits, and /init records until it does. With -say it prints the
// recorder's stage lines "changing" and "changed" around each change, for
// the host to give the busy vCPUs their share meanwhile. The first failure
// ends it with status 1 and the kernel's words.
//
// The changes, done as an administrator would:
//
//	offline N, online N      write 0 or 1 to /sys/devices/system/cpu/cpuN/online
//	timer_migration=V        write V to /proc/sys/kernel/timer_migration
//	partition LIST           an isolated cpuset partition of LIST (cgroup v2):
//	                           mkdir /sys/fs/cgroup/tmigr-iso (a threaded cgroup,
//	                           so that single threads can join it), cpuset.cpus
//	                           LIST, the load's threads pinned inside LIST moved
//	                           into it (-pid: the load's process), then
//	                           cpuset.cpus.partition "isolated", read back
//	partition none           the partition made "member" again, its threads
//	                           moved back to the root, the cgroup removed
//
// The load's threads have to move with their CPUs: a thread of the root
// cgroup loses the CPUs the partition takes (the kernel moves it to the
// CPUs the root keeps), while one inside the partition keeps its own
// affinity (the kernel intersects the cgroup's CPUs with the affinity the
// thread asked for).

const (
	cgroupRoot = "/sys/fs/cgroup"
	isoCgroup  = cgroupRoot + "/tmigr-iso"
	markerText = "tmigr-lab: "
)

func runAt(args []string) error {
	fs := flag.NewFlagSet("at", flag.ContinueOnError)
	spec := fs.String("changes", "", "the changes, as the machine line's at= field")
	pid := fs.Int("pid", 0, "the load's process, whose threads follow their CPUs into a partition")
	total := fs.Duration("for", 0, "the recording's planned length: the time after the last change is kept")
	say := fs.String("say", "", "print PREFIX changing and PREFIX changed on standard output around each change (the recorder's stage lines)")
	marker := fs.String("marker", "/sys/kernel/tracing/trace_marker", "trace marker file (\"\": none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("at: unexpected argument %q", fs.Arg(0))
	}
	ncpu, err := possibleCPUs()
	if err != nil {
		return err
	}
	cs, err := ftrace.ParseChanges(*spec, ncpu)
	if err != nil {
		return fmt.Errorf("at: %v", err)
	}
	start := time.Now()
	mark := func(s string) {
		if *marker != "" {
			os.WriteFile(*marker, []byte(markerText+s+"\n"), 0)
		}
	}
	mark("start")
	var part partition
	last := time.Duration(0)
	for _, c := range cs {
		if d := time.Until(start.Add(c.At)); d > 0 {
			time.Sleep(d)
		}
		if *say != "" {
			fmt.Println(*say, "changing")
		}
		err := apply(c, *pid, &part)
		if *say != "" {
			fmt.Println(*say, "changed")
		}
		if err != nil && refusable(c, err) {
			// The kernel's own rule refused it (a CPU the scheduler's
			// deadline bandwidth or the timekeeping duty keeps online):
			// the machine goes on as it was, and the trace says so.
			fmt.Fprintf(os.Stderr, "tmigr-guest: at %s: %v: refused by the kernel, going on\n", c, err)
			mark("refused " + c.String())
			continue
		}
		if err != nil {
			mark("failed " + c.String())
			return fmt.Errorf("at %s: %v", c, err)
		}
		mark(c.String())
		last = c.At
	}
	end := start.Add(*total)
	if tail := time.Now().Add(*total - last); *total > 0 && tail.After(end) {
		end = tail
	}
	time.Sleep(time.Until(end))
	return nil
}

// refusable reports whether err is the kernel refusing change c by one of
// its rules, not a failure of the recording: EBUSY from a CPU's online
// file (cpu_down: dl_bw_deactivate when the CPU's root domain could not
// hold the deadline servers' bandwidth without it, tick_nohz_cpu_down for
// the nohz_full timekeeper).
func refusable(c ftrace.Change, err error) bool {
	return (c.Kind == ftrace.ChangeOffline || c.Kind == ftrace.ChangeOnline) && errors.Is(err, syscall.EBUSY)
}

// possibleCPUs reads how many CPUs the kernel may bring up.
func possibleCPUs() (int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return 0, err
	}
	m, err := cpumask.Parse(strings.TrimSpace(string(b)))
	if err != nil || m.Empty() {
		return 0, fmt.Errorf("/sys/devices/system/cpu/possible: %q (%v)", b, err)
	}
	return m.Last() + 1, nil
}

func apply(c ftrace.Change, pid int, part *partition) error {
	switch c.Kind {
	case ftrace.ChangeOffline, ftrace.ChangeOnline:
		v := "0"
		if c.Kind == ftrace.ChangeOnline {
			v = "1"
		}
		return writeFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/online", c.CPU), v)
	case ftrace.ChangeTimerMigration:
		v := "0"
		if c.On {
			v = "1"
		}
		return writeFile("/proc/sys/kernel/timer_migration", v)
	case ftrace.ChangePartition:
		if part.made {
			if err := part.remove(); err != nil {
				return err
			}
		}
		if c.CPUs.Empty() {
			return nil
		}
		return part.make(c.CPUs, pid)
	}
	return fmt.Errorf("unknown change kind %d", c.Kind)
}

// writeFile writes v to a sysfs, procfs or cgroup file, with the kernel's
// error.
func writeFile(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", v, path, err)
	}
	return nil
}

// partition is the isolated cpuset partition the changes made.
type partition struct {
	made    bool
	threads []int // the load's threads moved into it
}

func (p *partition) make(cpus cpumask.Mask, pid int) error {
	// Which of the load's threads go: those pinned inside the
	// partition, read before the partition changes anyone's CPUs.
	var move []int
	if pid > 0 {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return fmt.Errorf("the load's threads: %v", err)
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var set unix.CPUSet
			if unix.SchedGetaffinity(tid, &set) != nil {
				continue
			}
			if in := maskOf(set); !in.Empty() && in.Subset(&cpus) {
				move = append(move, tid)
			}
		}
	}
	if err := writeFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), "+cpuset"); err != nil {
		return err
	}
	if err := os.Mkdir(isoCgroup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	p.made = true
	if err := writeFile(filepath.Join(isoCgroup, "cgroup.type"), "threaded"); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(isoCgroup, "cpuset.cpus"), cpus.String()); err != nil {
		return err
	}
	for _, tid := range move {
		if err := writeFile(filepath.Join(isoCgroup, "cgroup.threads"), strconv.Itoa(tid)); err != nil {
			return err
		}
		p.threads = append(p.threads, tid)
	}
	if err := writeFile(filepath.Join(isoCgroup, "cpuset.cpus.partition"), "isolated"); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(isoCgroup, "cpuset.cpus.partition"))
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(b)); got != "isolated" {
		return fmt.Errorf("the kernel made the partition %q, not \"isolated\"", got)
	}
	return nil
}

func (p *partition) remove() error {
	if err := writeFile(filepath.Join(isoCgroup, "cpuset.cpus.partition"), "member"); err != nil {
		return err
	}
	for _, tid := range p.threads {
		if err := writeFile(filepath.Join(cgroupRoot, "cgroup.threads"), strconv.Itoa(tid)); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	p.threads = nil
	// A load's short-lived children (the storm's) are born into the
	// partition with the thread that forks them: the cgroup empties
	// when they exit, or when they are moved out too.
	var err error
	for range 100 {
		if err = os.Remove(isoCgroup); !errors.Is(err, unix.EBUSY) {
			break
		}
		if b, rerr := os.ReadFile(filepath.Join(isoCgroup, "cgroup.threads")); rerr == nil {
			for _, f := range strings.Fields(string(b)) {
				writeFile(filepath.Join(cgroupRoot, "cgroup.threads"), f)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.made = false
	return nil
}

func maskOf(set unix.CPUSet) cpumask.Mask {
	var m cpumask.Mask
	for c := 0; c < cpumask.MaxCPUs && c < len(set)*64; c++ {
		if set.IsSet(c) {
			m.Set(c)
		}
	}
	return m
}
