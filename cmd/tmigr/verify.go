package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tmigr/tmigr/conformance"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/host"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/tracefs"
)

// verifyBusyShare is the share of a CPU's time it must run tasks, over the
// recording, to count as busy: a CPU that never idles keeps its tick and
// so never leaves the hierarchy (package migrators, "always active").
const verifyBusyShare = 0.95

// verifyShown is how many mismatches of the model --verify prints.
const verifyShown = 5

// hostVerify records this machine for d and checks the prediction of what
// its kernel's rules allow against it, printing one "verify:" line per
// claim, as tuned-adm verify does. It returns false when a claim failed.
//
// The prediction is for the load the machine ran while recorded: the CPUs
// that were busy (from /proc/stat, over the recording) are the always-active
// ones. The claims:
//
//  1. every CPU that ran another CPU's timer is one the rules allow
//     (conformance.CheckPrediction, which tells history from contradiction);
//  2. the same, for the isolated and nohz_full CPUs, which users care about;
//  3. the model of the machine's kernel reproduces the recording (package
//     replay: every decision it checks, 0 mismatches).
func hostVerify(ctx context.Context, h *host.Host, root, tracefsRoot string, d time.Duration, stdout, stderr io.Writer) (bool, error) {
	m, rep, err := host.RecordingMachine(h, "tmigr host --verify")
	if err != nil {
		return false, err
	}
	in, err := tracefs.Open(tracefs.Options{Root: tracefsRoot, HRTimers: rep.PreemptRT})
	if err != nil {
		return false, err
	}
	defer in.Close()
	statPath := filepath.Join(root, "proc", "stat")
	before, err := readCPUTimes(statPath)
	if err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var trace bytes.Buffer
	if _, err := in.Record(rctx, &trace); err != nil {
		return false, err
	}
	if ctx.Err() != nil {
		return false, fmt.Errorf("interrupted")
	}
	after, err := readCPUTimes(statPath)
	if err != nil {
		return false, err
	}
	lost, _ := in.Lost()
	m.Busy = busyCPUs(before, after, m.CPUs)

	var text bytes.Buffer
	fmt.Fprintf(&text, "# machine: %s\n", m.String())
	text.Write(trace.Bytes())
	t, err := replay.Read(&text)
	if err != nil {
		return false, fmt.Errorf("reading the recording: %v", err)
	}
	check, err := conformance.CheckPrediction(t)
	if err != nil {
		return false, err
	}
	res, err := replay.Run(t, replay.Options{Wheel: true, Tmigr: true, Placement: true, Hrtimer: true})
	if err != nil {
		return false, err
	}

	isolated := rep.Domain.Or(rep.NohzFull).Or(rep.Partition)
	var outside cpumask.Mask
	for _, c := range check.Contradictions {
		outside.Set(c.Handler)
	}
	p := func(format string, args ...any) { fmt.Fprintf(stdout, "verify: "+format+"\n", args...) }
	p("recorded %v of this machine: %d events, %d lost; busy CPUs (over %.0f%% of the time, /proc/stat): %s",
		d, len(t.Events), lost, verifyBusyShare*100, dash(m.Busy))
	p("CPUs that may run other CPUs' timers: predicted %s, seen %s", dash(check.Handlers), dash(check.Pullers))
	p("isolated or nohz_full CPUs that may run them: predicted %s, seen %s", dash(check.Handlers.And(isolated)), dash(check.Pullers.And(isolated)))
	if len(check.History) > 0 {
		p("note: %d pulls by CPUs the steady state rules out were history (a role held before the load settled)", len(check.History))
	}
	ok := true
	claim := func(pass bool, what string) {
		ok = ok && pass
		p("%s: %s", map[bool]string{true: "passed", false: "failed"}[pass], what)
	}
	outsideIso := outside.And(isolated)
	claim(outside.Empty(), fmt.Sprintf("every CPU that ran another CPU's timer is one the rules of Linux %s allow%s", rep.Release.Raw, orList(outside)))
	claim(outsideIso.Empty(), "every isolated or nohz_full CPU that ran another CPU's timer is one the rules allow"+orList(outsideIso))
	checked, mismatched := 0, 0
	var shown []string
	for _, c := range res.Checks {
		checked += c.Checked
		mismatched += len(c.Mismatches)
		for _, x := range c.Mismatches {
			if len(shown) < verifyShown {
				shown = append(shown, fmt.Sprintf("%s line %d: %s: kernel %s, model %s",
					c.Name, x.Line, x.Event, x.Kernel, x.Model))
			}
		}
	}
	claim(mismatched == 0, fmt.Sprintf("the model of Linux %s reproduces the recording (%d decisions checked, %d mismatched)", rep.Release.Raw, checked, mismatched))
	for _, l := range shown {
		p("  %s", l)
	}
	if mismatched > 0 {
		p("  (tmigr record -d %v keeps a recording of this machine for tmigr replay and a report)", d)
	}
	if lost > 0 {
		fmt.Fprintf(stderr, "tmigr host: %d events were lost while recording: the checks around them are undetermined\n", lost)
	}
	return ok, nil
}

// orList is ": CPUs X did not" for a failed claim's CPUs, "" for none.
func orList(m cpumask.Mask) string {
	if m.Empty() {
		return ""
	}
	return fmt.Sprintf(" (CPUs %s ran some the rules do not allow)", m)
}

// cpuTimes are each CPU's jiffies from /proc/stat: total and idle (idle
// and iowait).
type cpuTimes map[int][2]uint64

// readCPUTimes reads the per-CPU lines of /proc/stat.
func readCPUTimes(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseCPUTimes(f)
}

// parseCPUTimes reads the "cpuN user nice system idle iowait irq softirq
// steal ..." lines of /proc/stat (proc(5)); guest time is already in user.
func parseCPUTimes(r io.Reader) (cpuTimes, error) {
	out := cpuTimes{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		cpu, err := strconv.Atoi(f[0][3:])
		if err != nil || cpu < 0 {
			return nil, fmt.Errorf("/proc/stat: bad line %q", sc.Text())
		}
		var total, idle uint64
		for i, s := range f[1:min(len(f), 9)] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || total+v < total {
				return nil, fmt.Errorf("/proc/stat: bad line %q", sc.Text())
			}
			total += v
			if i == 3 || i == 4 {
				idle += v
			}
		}
		out[cpu] = [2]uint64{total, idle}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("/proc/stat: no per-CPU lines")
	}
	return out, nil
}

// busyCPUs are the CPUs below n that ran tasks at least verifyBusyShare of
// the time between two readings.
func busyCPUs(before, after cpuTimes, n int) cpumask.Mask {
	var busy cpumask.Mask
	for c, a := range after {
		b, ok := before[c]
		if !ok || c >= n || a[0] <= b[0] {
			continue
		}
		total, idle := float64(a[0]-b[0]), float64(a[1]-b[1])
		if (total-idle)/total >= verifyBusyShare {
			busy.Set(c)
		}
	}
	return busy
}

// dash prints a CPU set, "-" for none.
func dash(m cpumask.Mask) string {
	if m.Empty() {
		return "-"
	}
	return m.String()
}
