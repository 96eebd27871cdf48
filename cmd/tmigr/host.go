package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/sim/workload"
)

func init() {
	register("host", "read a machine and say what its kernel will do to timers", runHost)
}

const hostUsage = `usage: tmigr host [--root DIR|FILE.tar.gz] [--kernel VERSION] [--workload W]
                 [--duration D] [--seed S] [--json]
       tmigr host [--root DIR] --save DIR|FILE.tar.gz

Reads a machine's kernel release, command line (isolcpus, nohz_full,
rcu_nocbs, irqaffinity), kernel.timer_migration, CPU and NUMA sysfs,
cpuset partitions (cgroup v2; cgroup v1 cpusets) and kernel config, and
says what its kernel does to timers: the machine as a "# machine:" line,
the kernel's model (the rules of its version, each named after its
commit), the timer-migration hierarchy it builds (as tmigr topo draws it),
the CPUs out of it and why, and what the kernel's rules determine about
who may run other CPUs' timers once the workload runs (by default a busy
task, oslat, on every isolated and nohz_full CPU): per group with idle CPUs
to pull from, whether it always has a migrator and which CPUs may be it
(which busy CPU of a group is its migrator depends on the order they became
active, which no configuration fixes), the CPUs that may run other CPUs'
timers and those that never do. Then one possible history: the machine
simulated under that model, summarised as who ran whose timers, how
often, and the worst latency on the isolated CPUs. Warnings name setups that likely do not do what
their author meant. Rare long timer callbacks set the worst latency, so it
grows with the time simulated: the seed post's oslat -D 62s is
--duration 62s (under a second of wall time on 128 CPUs).

--root reads another machine: a directory holding its files at the same
paths (proc/cmdline, sys/devices/system/cpu/online, ...), or a tarball
that --save wrote. --save writes this machine's files (only those read;
nothing under /proc or /sys that names a person or a secret) to a new
directory, or to a .tar.gz/.tgz file, so that a user can send theirs.
--kernel models another release on the same machine ("what would 6.19
do here").

Workloads (--workload, as tmigr sim takes them):
%s

--verify D then records this machine for D (as root, in a tracefs instance
of its own, as tmigr record does) and checks the prediction against it,
for the load that ran meanwhile (the CPUs busy over the recording are the
always-active ones), printing one line per claim, as tuned-adm verify:
the CPUs that may run other CPUs' timers predicted and seen, the isolated
ones among them, then "verify: passed|failed: CLAIM" for: every CPU that
ran another CPU's timer is one the rules allow; the same for the isolated
and nohz_full CPUs; the model of the kernel reproduces the recording.

Exit status: 0 when the machine was read and predicted (and every claim of
--verify passed), 1 when the simulation could not run or a claim failed,
2 for bad flags or unreadable files.

flags:
`

func runHost(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr host", fmt.Sprintf(hostUsage, indent(workload.Usage, "  ")), stdout, stderr)
	root := fs.String("root", "/", "the machine's root: a directory, or a snapshot tarball")
	save := fs.String("save", "", "write the snapshot to a new directory, or to FILE.tar.gz, and exit")
	kern := fs.String("kernel", "", "model this kernel release instead of the machine's")
	wl := fs.String("workload", "", "the simulated workload (default: oslat on the isolated and nohz_full CPUs)")
	duration := fs.String("duration", "10s", "simulated time measured (a Go duration, or seconds)")
	warmup := fs.String("warmup", "1s", "simulated time before the measurement")
	seed := fs.Uint64("seed", 1, "random seed of the simulation")
	noPredict := fs.Bool("no-predict", false, "skip the simulation")
	asJSON := fs.Bool("json", false, "print one JSON object")
	verify := fs.String("verify", "", "then record this machine for this long (a Go duration or seconds) and check the prediction against it")
	tracefsRoot := fs.String("tracefs", "", "with --verify: the tracefs mount (default: found, or mounted at /sys/kernel/tracing)")
	fs.dirs("tracefs")
	fs.files("root", "save")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "tmigr host: %v\n", err)
		return code
	}
	opts := host.Options{Kernel: *kern, Workload: *wl, Seed: *seed, NoPredict: *noPredict}
	var err error
	if opts.Duration, err = parseSeconds("--duration", *duration); err != nil {
		return fail(2, err)
	}
	if opts.Warmup, err = parseSeconds("--warmup", *warmup); err != nil {
		return fail(2, err)
	}
	if opts.Duration == 0 {
		return fail(2, errors.New("--duration must be positive"))
	}
	if *kern != "" {
		if _, err := parseKernelFlag(*kern); err != nil {
			return fail(2, fmt.Errorf("--kernel: %v", err))
		}
	}
	var verifyFor time.Duration
	if *verify != "" {
		if verifyFor, err = parseSeconds("--verify", *verify); err != nil || verifyFor <= 0 {
			return fail(2, fmt.Errorf("--verify: want a positive duration, got %q", *verify))
		}
		if *asJSON || *save != "" || *kern != "" {
			return fail(2, errors.New("--verify checks this machine's own kernel, in text: not with --json, --save or --kernel"))
		}
	}
	snap, err := readSnapshot(*root)
	if err != nil {
		return fail(2, err)
	}
	for _, n := range snap.Notes {
		fmt.Fprintf(stderr, "tmigr host: note: %s\n", n)
	}
	if *save != "" {
		return saveSnapshot(snap, *save, stdout, stderr)
	}
	h, err := host.Parse(snap)
	if err != nil {
		return fail(2, err)
	}
	rep, err := host.Analyze(h, opts)
	if err != nil {
		return fail(2, err)
	}
	if *asJSON {
		b, err := json.MarshalIndent(hostOutput{schemaVersion, rep.JSON()}, "", "  ")
		if err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "%s\n", b)
	} else if err := rep.WriteText(stdout); err != nil {
		return fail(1, err)
	}
	if rep.PredictionErr != "" {
		fmt.Fprintf(stderr, "tmigr host: %s\n", rep.PredictionErr)
		return 1
	}
	if verifyFor > 0 {
		ctx, stop := signalContext()
		defer stop()
		fmt.Fprintln(stdout)
		ok, err := hostVerify(ctx, h, *root, *tracefsRoot, verifyFor, stdout, stderr)
		if err != nil {
			return fail(1, fmt.Errorf("--verify: %v", err))
		}
		if !ok {
			return 1
		}
	}
	return 0
}

// readSnapshot reads the machine at root: a directory or a tarball.
func readSnapshot(root string) (*host.Snapshot, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("--root: %v", err)
	}
	if st.IsDir() {
		return host.Read(os.DirFS(root))
	}
	f, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("--root: %v", err)
	}
	defer f.Close()
	s, err := host.ReadTar(f)
	if err != nil {
		return nil, fmt.Errorf("--root %s: %v", root, err)
	}
	return s, nil
}

// saveSnapshot writes the snapshot to a new directory or tarball; it
// never replaces an existing file.
func saveSnapshot(s *host.Snapshot, dst string, stdout, stderr io.Writer) int {
	if len(s.Files) == 0 {
		fmt.Fprintf(stderr, "tmigr host: --save: nothing to save: none of the files was found\n")
		return 2
	}
	if strings.HasSuffix(dst, ".tar.gz") || strings.HasSuffix(dst, ".tgz") {
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "tmigr host: --save: %v\n", err)
			return 2
		}
		werr := s.SaveTar(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(dst) // ours, half written
			fmt.Fprintf(stderr, "tmigr host: --save: %v\n", werr)
			return 1
		}
	} else if err := s.Save(dst); err != nil {
		fmt.Fprintf(stderr, "tmigr host: --save: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "saved %d files to %s (read them back with tmigr host --root %s)\n", len(s.Files), dst, dst)
	return 0
}
