package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tmigr/tmigr/report"
)

// CyclictestRun is what rt-tests' cyclictest measured beside an
// experiment: the operating system's wake-up floor for the workers'
// scheduling class on their CPUs, over the same span.
type CyclictestRun struct {
	// Command is the command line it ran.
	Command string `json:"command"`
	// Threads are its threads as its --json file gives them.
	Threads []report.CyclicThreadJSON `json:"threads"`
	// Dist is every thread's cycles together; a quantile that fell
	// beyond the histogram is the largest maximum.
	Dist Dist `json:"all_threads"`
	// Report is the run in cyclictest's text format, its histogram cut to
	// the experiment's buckets.
	Report report.Cyclictest `json:"-"`
}

// cyclictestBuckets is the histogram cyclictest runs with, wide enough
// that its quantiles rarely fall beyond it.
const cyclictestBuckets = 100_000

// cyclictestInterval is its period, µs (cyclictest's default).
const cyclictestInterval = 1000

type cyclictestJob struct {
	cmd      *exec.Cmd
	out      bytes.Buffer
	dir      string
	hist     int
	prio     int
	done     chan error
	cancel   context.CancelFunc
	finished bool
}

// cyclictestWarmUp is how long cyclictest is given to start (exec, its
// threads) before the experiment beside it begins.
const cyclictestWarmUp = 100 * time.Millisecond

// startCyclictest starts cyclictest: one thread per CPU of cpus, pinned,
// SCHED_FIFO at prio (SCHED_OTHER for 0), every millisecond until stop
// (for at most limit), leaving the system's power management as it is
// (--default-system: the experiment beside it must run on the same
// system), its statistics written to a JSON file and its histogram to a
// file of its own, not to our pipe. It returns after cyclictestWarmUp.
//
// The experiment runs between the two: cyclictest's start-up and the
// writing of its report (a line per bucket, 100,000 of them a thread)
// are the load of a process beginning or ending, and a run of -l loops
// sized beforehand put both inside the experiment: the timers still due
// when it ended ran while cyclictest wrote its histogram into our pipe,
// and were up to 3 ms late for it (seen with sched_switch events: a
// thread of ours reading the pipe held the worker's CPU).
func startCyclictest(ctx context.Context, bin string, cpus []int, prio int, limit time.Duration, hist int) (*cyclictestJob, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("cyclictest: %w (Debian and Ubuntu: apt-get install rt-tests)", err)
	}
	dir, err := os.MkdirTemp("", "tmigr-cyclictest")
	if err != nil {
		return nil, err
	}
	secs := int64((limit + time.Second - 1) / time.Second)
	args := []string{"-q", "--default-system", "-t", strconv.Itoa(len(cpus)), "-a", listOf(cpus),
		"-i", strconv.Itoa(cyclictestInterval), "-d", "0", "-D", strconv.FormatInt(secs, 10),
		"-h", strconv.Itoa(cyclictestBuckets), "--histfile=" + filepath.Join(dir, "histogram"),
		"--json=" + filepath.Join(dir, "cyclictest.json")}
	if prio > 0 {
		args = append(args, "--policy=fifo", "-p", strconv.Itoa(prio))
	} else {
		args = append(args, "--policy=other")
	}
	ctx, cancel := context.WithTimeout(ctx, limit+30*time.Second)
	j := &cyclictestJob{cmd: exec.CommandContext(ctx, path, args...), dir: dir, hist: hist, prio: prio, done: make(chan error, 1), cancel: cancel}
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	// If we die, so does it: it runs for limit otherwise. (Linux sends
	// the signal when the thread that started it ends; a Go thread ends
	// only with a goroutine locked to it, and the runtime's workers, the
	// only ones here, started before cyclictest and end after stop.)
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		cancel()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cyclictest: %w", err)
	}
	go func() { j.done <- j.cmd.Wait() }()
	select {
	case <-time.After(cyclictestWarmUp):
	case <-ctx.Done():
	}
	return j, nil
}

// command is the command line as run, without the temporary file's path.
func (j *cyclictestJob) command() string {
	args := make([]string, 0, len(j.cmd.Args))
	for _, a := range j.cmd.Args {
		for _, f := range []string{"--json=", "--histfile="} {
			if strings.HasPrefix(a, f) {
				a = f + "FILE"
			}
		}
		args = append(args, a)
	}
	args[0] = filepath.Base(args[0])
	return strings.Join(args, " ")
}

// stop stops cyclictest as a user does (SIGINT: it stops its threads and
// writes its report), waits for it and reads what it measured.
func (j *cyclictestJob) stop() (*CyclictestRun, error) {
	if err := j.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return nil, fmt.Errorf("cyclictest: %w", err)
	}
	err := <-j.done
	j.finished = true
	defer j.cleanup()
	if err != nil {
		return nil, fmt.Errorf("cyclictest: %v: %s", err, strings.TrimSpace(j.out.String()))
	}
	f, err := os.Open(filepath.Join(j.dir, "cyclictest.json"))
	if err != nil {
		return nil, fmt.Errorf("cyclictest wrote no JSON: %v: %s", err, strings.TrimSpace(j.out.String()))
	}
	defer f.Close()
	rep, err := report.ReadCyclictestJSON(f, cyclictestBuckets)
	if err != nil {
		return nil, err
	}
	return cyclictestRun(j.command(), rep, j.hist, j.prio)
}

// cyclictestRun summarises cyclictest's report, and cuts its histogram to
// hist buckets for printing beside the experiment's; prio is the
// priority it ran at (its JSON does not say).
func cyclictestRun(command string, rep *report.Cyclictest, hist, prio int) (*CyclictestRun, error) {
	if len(rep.Threads) == 0 {
		return nil, errors.New("cyclictest ran no thread")
	}
	run := &CyclictestRun{Command: command}
	all := report.NewCyclicThread(0, 0, 0, -1, -1, rep.Histogram)
	all.Min = rep.Threads[0].Min
	for i := range rep.Threads {
		t := &rep.Threads[i]
		run.Threads = append(run.Threads, t.JSON())
		for b, n := range t.Hist {
			all.Hist[b] += n
		}
		all.Cycles += t.Cycles
		all.Min, all.Max = min(all.Min, t.Min), max(all.Max, t.Max)
	}
	if all.Cycles == 0 {
		return nil, errors.New("cyclictest counted no cycle")
	}
	q := func(p float64) float64 { v, _ := all.Quantile(p); return float64(v) }
	run.Dist = Dist{N: int(all.Cycles), Min: float64(all.Min), P50: q(0.5), P99: q(0.99), P999: q(0.999), Max: float64(all.Max)}
	run.Report.Histogram = hist
	for i := range rep.Threads {
		t := rep.Threads[i]
		cut := report.NewCyclicThread(0, prio, cyclictestInterval, t.CPU, t.Node, hist)
		cut.Cycles, cut.Min, cut.Max, cut.Act, cut.Sum = t.Cycles, t.Min, t.Max, t.Act, t.Sum
		var in uint64
		for b := 0; b < hist && b < len(t.Hist); b++ {
			cut.Hist[b] = t.Hist[b]
			in += t.Hist[b]
		}
		cut.OflowCount = t.Cycles - in
		run.Report.Threads = append(run.Report.Threads, cut)
	}
	return run, nil
}

// kill stops a cyclictest that is still running (the experiment failed).
func (j *cyclictestJob) kill() {
	if !j.finished {
		j.cancel()
		<-j.done
		j.finished = true
		j.cleanup()
	}
}

func (j *cyclictestJob) cleanup() {
	j.cancel()
	os.RemoveAll(j.dir)
}
