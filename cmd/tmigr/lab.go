package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tmigr/tmigr/conformance"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/lab"
)

func init() {
	register("lab", "record real kernels' timer traces under QEMU, and check the model against them", runLab)
	registerLab("record", "boot a Linux guest of any CPU/NUMA shape under QEMU and record its timer trace", runLabRecord)
}

// labCommands are the subcommands of "tmigr lab". Each lives in a file of
// its own and registers itself with registerLab from its init.
var labCommands = &commandSet{
	path: "tmigr lab", noun: "subcommand", usage: "[flags]",
	more:  "Run 'tmigr lab <subcommand> -h' for its flags.",
	table: map[string]command{},
}

func registerLab(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	labCommands.register(name, summary, run)
}

func runLab(args []string, stdout, stderr io.Writer) int {
	return labCommands.run(args, stdout, stderr)
}

const labRecordUsage = `usage: tmigr lab record --cpus N [--nodes K | --node-cpus LIST;LIST...] [flags] -o FILE

Boots a Debian Linux kernel under QEMU (TCG) as a guest of N CPUs on K NUMA
nodes, runs a load pinned to its CPUs, records the kernel's timer and
timer_migration trace events for --duration, and writes them to FILE as
ftrace text that starts with a "# machine:" line ("tmigr replay" reads it).
--kernel-version picks the kernel: a series (6.1, 6.12, 6.19, 7.0, 7.2, 7.3,
or any other Debian ships for amd64) means its newest release, a release
(7.3.4, 6.1.192) that one; the default is 6.12. The machine line names the
release that booted.
The kernel, busybox and the guest program are fetched or built into a cache
on first use; QEMU is installed with apt-get if missing (as root).

Loads, one per CPU, as cpulists ("1-7,9-15"):
  --busy         a busy loop
  --sleepers     a SCHED_OTHER task sleeping --period at a time
  --rt-sleepers  the same as SCHED_FIFO (--fifo-prio); on --kernel rt these
                 are woken from hard interrupt context, the others from the
                 timer softirq
The machine line's sleepers= lists both kinds; its note names the SCHED_FIFO
ones and the period.
More timer loads, each every --period on its CPUs, named on the note:
  --timerfd       a periodic timerfd read in a loop
  --posix-timers  a periodic POSIX timer (timer_create) whose signal the
                  worker waits for
  --epoll         epoll_wait on an empty set with --period (in ms) as timeout
  --tcp           a TCP connection over loopback, a byte each way, keepalive
                  on: the kernel's retransmit, delayed-ACK, keepalive timers
  --storm         every 10 periods a child that arms 32 timerfds and 32 POSIX
                  timers 1-5 s ahead and exits (the kernel cancels them)

Run-time changes (--at, repeatable, in the words of "tmigr sim --at"):
  'TIME partition LIST'   an isolated cgroup-v2 cpuset partition of LIST
                          (cpuset.cpus.partition=isolated); the loads on
                          those CPUs move into it; 'TIME partition none'
                          removes it
  'TIME timer_migration=V'  write the sysctl kernel.timer_migration
  'TIME offline CPU', 'TIME online CPU'  CPU hotplug
TIME counts from the start of the recording. The machine line's at= lists
them, and the trace marks each with a "tmigr-lab: ..." marker line.

flags:
`

func runLabRecord(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr lab record", labRecordUsage, stdout, stderr)
	var s lab.Spec
	fs.IntVar(&s.CPUs, "cpus", 0, "vCPUs of the guest (1-288)")
	fs.IntVar(&s.Nodes, "nodes", 0, "NUMA nodes, the CPUs spread in contiguous blocks (default 1)")
	nodeCPUs := fs.String("node-cpus", "", "each node's CPUs as cpulists, node 0 first, separated by ';'")
	fs.StringVar(&s.Cmdline, "cmdline", "", "kernel parameters to add (isolcpus=..., nohz_full=...)")
	busy := fs.String("busy", "", "CPUs that run a busy loop")
	sleepers := fs.String("sleepers", "", "CPUs that run a periodic SCHED_OTHER sleeper")
	rtSleepers := fs.String("rt-sleepers", "", "CPUs that run a periodic SCHED_FIFO sleeper")
	timerfd := fs.String("timerfd", "", "CPUs that run a periodic timerfd reader")
	posixTimers := fs.String("posix-timers", "", "CPUs that run a periodic POSIX timer's signal waiter")
	epoll := fs.String("epoll", "", "CPUs that run epoll_wait with --period as its timeout")
	tcp := fs.String("tcp", "", "CPUs that run a TCP loopback ping-pong every --period")
	storm := fs.String("storm", "", "CPUs that start a child arming 64 timers and exiting every 10 periods")
	fs.DurationVar(&s.Period, "period", 0, "the sleepers' period (default 3ms)")
	fs.BoolVar(&s.Absolute, "abs", false, "sleepers sleep to absolute deadlines (TIMER_ABSTIME)")
	fs.IntVar(&s.FIFOPrio, "fifo-prio", 0, "SCHED_FIFO priority of the rt sleepers (default 50)")
	fs.DurationVar(&s.Duration, "duration", 0, "how long to record (default 3s)")
	var at []string
	fs.Func("at", "change the machine while it is recorded: 'TIME partition LIST|none', 'TIME timer_migration=0|1',\n'TIME offline CPU' or 'TIME online CPU', TIME from the start of the recording (repeatable)", func(v string) error {
		at = append(at, v)
		return nil
	})
	kernel := fs.String("kernel", "generic", "the kernel: generic (Debian cloud-amd64) or rt (rt-amd64, PREEMPT_RT)")
	fs.StringVar(&s.KernelVersion, "kernel-version", "", "the kernel: a series (6.1, 6.12, 6.19, 7.0, 7.2, 7.3: its newest release cached, else in Debian) or a release (7.3.4) (default 6.12)")
	fs.BoolVar(&s.HRTimers, "hrtimers", false, "record the hrtimer_* events too (always on with --kernel rt)")
	fs.IntVar(&s.BufferKB, "buffer-kb", 0, "per-CPU trace buffer in KiB (default 2048)")
	fs.IntVar(&s.MemoryMB, "mem", 0, "guest memory in MiB (default from the CPUs and the buffer)")
	fs.DurationVar(&s.Timeout, "timeout", 0, "limit on each QEMU run (default: 1m + 2 x duration + 1s per vCPU x vCPUs per free host core)")
	fs.StringVar(&s.Host.CacheDir, "cache", "", "cache directory (default $XDG_CACHE_HOME/tmigr/lab or ~/.cache/tmigr/lab)")
	fs.StringVar(&s.Host.Mirror, "mirror", "", "Debian archive base URL (default http://deb.debian.org)")
	fs.BoolVar(&s.Host.NoInstall, "no-install", false, "never run apt-get install; fail naming what is missing")
	fs.StringVar(&s.Host.QEMU, "qemu", "", "qemu-system-x86_64 to use")
	fs.StringVar(&s.Host.Busybox, "busybox", "", "static busybox to use")
	fs.StringVar(&s.Host.Guest, "guest", "", "built tmigr-guest to use (static)")
	fs.StringVar(&s.Host.KernelImage, "kernel-image", "", "kernel image to boot instead of Debian's (needs --kernel-config)")
	fs.StringVar(&s.Host.KernelConfig, "kernel-config", "", "the config of --kernel-image")
	fs.StringVar(&s.Host.SourceDir, "source", "", "the tmigr module's directory, to build the guest program from (default: the working directory's module)")
	fs.StringVar(&s.ToolsDir, "tools", "", "also run tmigr itself in the guest (record, top --json, exporter, host --verify) and write their outputs to this directory")
	console := fs.String("console", "", "also write the guest's serial console log to this file")
	out := fs.String("o", "", "the recording's file (\"-\" for standard output)")
	fs.files("o", "console", "qemu", "busybox", "guest", "kernel-image", "kernel-config")
	fs.dirs("cache", "source", "tools")
	fs.words("kernel", "generic", "rt")
	fs.words("kernel-version", "6.1", "6.12", "6.19", "7.0", "7.2", "7.3")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	bad := fs.failf
	if *out == "" {
		return bad("give the output file with -o FILE")
	}
	if s.CPUs < 1 || s.CPUs > cpumask.MaxCPUs {
		return bad("--cpus: %d; give the guest's CPUs, 1 to %d", s.CPUs, lab.MaxCPUs)
	}
	if isRelease(*kernel) {
		// A version where the flavour goes: say which flag takes it.
		return bad("--kernel %s: --kernel is the flavour (generic or rt); the version is --kernel-version %s", *kernel, *kernel)
	}
	s.Kernel = lab.Flavour(*kernel)
	if *nodeCPUs != "" {
		if s.Nodes != 0 {
			return bad("give either --nodes or --node-cpus, not both")
		}
		for i, l := range strings.Split(*nodeCPUs, ";") {
			m, err := cpumask.ParseFor(strings.TrimSpace(l), s.CPUs)
			if err != nil {
				return bad("--node-cpus: node %d: %v", i, err)
			}
			s.NodeCPUs = append(s.NodeCPUs, m)
		}
	}
	for _, l := range []struct {
		flag string
		text string
		m    *cpumask.Mask
	}{{"--busy", *busy, &s.Busy}, {"--sleepers", *sleepers, &s.Sleepers}, {"--rt-sleepers", *rtSleepers, &s.RTSleepers},
		{"--timerfd", *timerfd, &s.TimerFD}, {"--posix-timers", *posixTimers, &s.PosixTimers}, {"--epoll", *epoll, &s.Epoll},
		{"--tcp", *tcp, &s.TCP}, {"--storm", *storm, &s.Storm}} {
		m, err := cpumask.ParseFor(l.text, s.CPUs)
		if err != nil {
			return bad("%s: %v", l.flag, err)
		}
		*l.m = m
	}
	for _, a := range at {
		c, err := ftrace.ParseChange(a, s.CPUs)
		if err != nil {
			return bad("--at %v", err)
		}
		s.At = append(s.At, c)
	}
	if err := s.Validate(); err != nil {
		return bad("%v", err)
	}

	s.Progress = prefixWriter{stderr, "tmigr lab: "}
	if *console != "" {
		f, err := os.Create(*console)
		if err != nil {
			return bad("--console: %v", err)
		}
		defer f.Close()
		s.Console = f
	}
	ctx, stop := labContext()
	defer stop()
	var buf bytes.Buffer
	if err := lab.Record(ctx, s, &buf); err != nil {
		fmt.Fprintf(stderr, "tmigr lab record: %v\n", err)
		return 1
	}
	if err := writeOutput(*out, buf.Bytes(), stdout); err != nil {
		fmt.Fprintf(stderr, "tmigr lab record: %v\n", err)
		return 1
	}
	if *out != "-" {
		fmt.Fprintf(stderr, "tmigr lab: wrote %s\n", *out)
	}
	return checkBootLine(buf.Bytes(), stderr)
}

// labContext is the context of a lab command: done at Ctrl-C or SIGTERM.
// Tests replace it.
var labContext = signalContext

// writeOutput writes the recording to path atomically (a file appears
// whole or not at all), or to stdout for "-".
func writeOutput(path string, data []byte, stdout io.Writer) error {
	if path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkBootLine compares the kernel's "Timer migration:" boot line with the
// hierarchy our model builds for the same machine (conformance.BootLine);
// a difference is a finding about the model (exit status 1), the recording
// stands.
func checkBootLine(rec []byte, stderr io.Writer) int {
	r := ftrace.NewReader(bytes.NewReader(rec))
	if _, err := r.Next(); err != nil && err != io.EOF {
		fmt.Fprintf(stderr, "tmigr lab record: reading the recording back: %v\n", err)
		return 1
	}
	h := r.Header()
	line, err := conformance.BootLine(&h)
	if err != nil {
		fmt.Fprintf(stderr, "tmigr lab: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "tmigr lab: kernel boot line matches the model: %s\n", line)
	return 0
}

// prefixWriter prefixes every write (one line each) with a label.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}
