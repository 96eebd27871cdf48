package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/tracefs"
)

func init() {
	register("record", "record this machine's timer events, for tmigr replay and explain", runRecord)
}

const recordUsage = `usage: tmigr record [-d DURATION] [-o FILE] [--hrtimers] [-c CPULIST] [--buffer-kb N]

Records the timer and timer_migration trace events of the machine it runs
on, for tmigr replay and tmigr explain to read with no flag: the file
starts with the "# machine:" line that tmigr host prints (kernel release,
CPUs and NUMA nodes, HZ, the command line's isolation; an isolated cpuset
partition, kernel.timer_migration=0 and offline CPUs in effect are written
as changes at 0s), then the kernel's trace_pipe text.

It records in a tracefs instance of its own (instances/tmigr-<pid>), so
that the top-level tracing setup and other tracers are left as they were,
and removes it on every exit, Ctrl-C and SIGTERM included (an instance
left by a recorder killed with SIGKILL is removed by the next one). It
needs root; tracefs is mounted for the recording if it is not.

It records until DURATION has passed, or until Ctrl-C or SIGTERM, into a
temporary file beside FILE that is renamed to FILE at the end: FILE
appears whole or not at all. The default FILE is
tmigr-record-YYYYMMDD-HHMMSS.txt in the current directory; "-" writes
standard output. Events the ring buffer lost are reported: the replay
counts the decisions around them undetermined; a larger --buffer-kb
loses fewer.

Exit status: 0 when recorded, 1 when the recording failed (not root, no
tracefs, a write error), 2 for bad flags or an unwritable FILE.

flags:
`

func runRecord(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr record", recordUsage, stdout, stderr)
	var duration, out, cpuList string
	fs.StringVar(&duration, "d", "0", "how long to record (a Go duration, or seconds); 0 records until Ctrl-C or SIGTERM")
	fs.StringVar(&out, "o", "", `the file to write ("-": standard output; default tmigr-record-YYYYMMDD-HHMMSS.txt)`)
	hrtimers := fs.Bool("hrtimers", false, "also record the hrtimer events (for replay's hrtimer check)")
	fs.StringVar(&cpuList, "c", "", "record only these CPUs (a cpulist; default all)")
	bufKB := fs.Int("buffer-kb", 0, fmt.Sprintf("per-CPU trace buffer in KiB (default %d, less above 64 CPUs)", tracefs.DefaultBufferKB(1)))
	fs.files("o")
	fs.operands("", 0, 0, completion{})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	d, err := parseSeconds("-d", duration)
	if err != nil {
		return fs.fail(err)
	}
	if *bufKB < 0 {
		return fs.failf("--buffer-kb must be positive, or 0 for the default (got %d)", *bufKB)
	}
	var cpus cpumask.Mask
	if cpuList != "" {
		if cpus, err = cpumask.Parse(cpuList); err != nil {
			return fs.failf("-c: %v", err)
		}
		if cpus.Empty() {
			return fs.failf("-c %q names no CPU", cpuList)
		}
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "tmigr record: %v\n", err)
		return 1
	}

	// The machine, before anything changes it.
	m, err := thisMachine()
	if err != nil {
		return fail(err)
	}
	if !cpus.Empty() {
		if extra := cpus.AndNot(cpumask.Range(0, m.CPUs-1)); !extra.Empty() {
			return fs.failf("-c: CPUs %s: the machine has CPUs 0-%d", extra, m.CPUs-1)
		}
	}

	// The output, before recording: an unwritable one is refused now.
	if out == "" {
		out = time.Now().Format("tmigr-record-20060102-150405.txt")
	}
	var dst io.Writer = stdout
	var file *outputFile
	if out != "-" {
		if file, err = createOutput(out); err != nil {
			var pe *iofs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fs.failf("-o %s: cannot write it: %v", out, err)
		}
		defer file.abort()
		dst = file
	}

	ctx, stop := signalContext()
	defer stop()
	what := "all CPUs"
	switch {
	case cpus.Weight() == 1:
		what = "CPU " + cpus.String()
	case !cpus.Empty():
		what = "CPUs " + cpus.String()
	}
	until := "Ctrl-C"
	if d > 0 {
		until = d.String() + " or Ctrl-C"
	}
	name := out
	if out == "-" {
		name = "standard output"
	}
	rec, err := recordMachine(ctx, dst, m, tracefs.Options{HRTimers: *hrtimers, CPUs: cpus, BufferKB: *bufKB}, d, func(in *tracefs.Instance) {
		for _, n := range in.Notes() {
			fmt.Fprintf(stderr, "tmigr record: note: %s\n", n)
		}
		fmt.Fprintf(stderr, "tmigr record: recording %s of Linux %s (%d KiB buffer per CPU) to %s until %s\n", what, m.Kernel, in.BufferKB(), name, until)
	})
	if err != nil {
		return fail(err)
	}
	if file != nil {
		if err := file.commit(); err != nil {
			return fail(err)
		}
	}
	fmt.Fprintf(stderr, "tmigr record: %d events in %.1f s (%.0f/s) written to %s\n", rec.lines, rec.took.Seconds(), float64(rec.lines)/rec.took.Seconds(), name)
	switch {
	case rec.lostErr != nil:
		fmt.Fprintf(stderr, "tmigr record: the lost events could not be counted: %v\n", rec.lostErr)
	case rec.lost > 0:
		fmt.Fprintf(stderr, "tmigr record: %d events lost (the buffer overran; a larger --buffer-kb loses fewer): the replay counts the decisions around them undetermined\n", rec.lost)
	}
	if out != "-" {
		fmt.Fprintf(stderr, "tmigr record: read it with tmigr replay %s, tmigr explain %s\n", out, out)
	}
	return 0
}

// thisMachine reads the machine it runs on, before anything changes it,
// as the "# machine:" line of a recording.
func thisMachine() (ftrace.Machine, error) {
	snap, err := host.Read(os.DirFS("/"))
	if err != nil {
		return ftrace.Machine{}, err
	}
	h, err := host.Parse(snap)
	if err != nil {
		return ftrace.Machine{}, err
	}
	m, _, err := host.RecordingMachine(h, "tmigr record")
	return m, err
}

// recorded is what recordMachine wrote.
type recorded struct {
	lines   int // the lines after the machine line: events and lost-events lines
	took    time.Duration
	lost    uint64
	lostErr error // the lost events could not be counted
}

// recordMachine records this machine's timer events into w in a tracefs
// instance of its own, after the machine line m, for d (from the start of
// the recording: setting up the instance, sizing its buffers, takes
// seconds on a slow machine) or until ctx ends when d is 0. started is
// called once the instance is set up. The instance is gone when it
// returns, whatever happened.
func recordMachine(ctx context.Context, w io.Writer, m ftrace.Machine, o tracefs.Options, d time.Duration, started func(*tracefs.Instance)) (recorded, error) {
	in, err := tracefs.Open(o)
	if err != nil {
		return recorded{}, err
	}
	defer in.Close()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if started != nil {
		started(in)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := fmt.Fprintf(bw, "# machine: %s\n", m.String()); err != nil {
		return recorded{}, err
	}
	cw := &lineCounter{w: bw}
	start := time.Now()
	_, err = in.Record(ctx, cw)
	rec := recorded{lines: cw.lines, took: time.Since(start)}
	if err != nil {
		return rec, err
	}
	rec.lost, rec.lostErr = in.Lost()
	if err := in.Close(); err != nil {
		return rec, err
	}
	return rec, bw.Flush()
}

// lineCounter counts the lines written through it: the events, and the
// kernel's lost-events lines among them.
type lineCounter struct {
	w     io.Writer
	lines int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.lines += bytes.Count(p[:n], []byte{'\n'})
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}
