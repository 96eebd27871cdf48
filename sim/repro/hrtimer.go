package repro

import (
	"fmt"
	"strings"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"github.com/tmigr/tmigr/report"
	"github.com/tmigr/tmigr/sim"
	"github.com/tmigr/tmigr/sim/workload"
)

// HrtimerStress is the number of SCHED_OTHER stress threads of the
// hrtimer-soft reproduction (the post: "configurable number"): a declared
// input, the same on both platforms.
const HrtimerStress = 64

// hrPlatforms are seed 003's two machines and the post's maxima.
var hrPlatforms = []struct {
	platform, label string
	before, after   int64
	estimate        string // the per-wakeup cost latency-anchors §2.3 estimates
}{
	{"atom-e3825", "Atom E3825 1.33 GHz", 107, 66, "1-3 µs"},
	{"zynq-7020", "Zynq 7020 667 MHz", 261, 90, "3-8 µs"},
}

func runHrtimerSoft(o Options) (*Outcome, error) {
	dur := 60 * time.Second
	if o.Short {
		dur = 500 * time.Millisecond
	}
	if o.Duration > 0 {
		dur = o.Duration
	}
	out := &Outcome{Experiment: "hrtimer-soft"}
	type run struct {
		rule hrtimer.SleeperRule
		res  *sim.Result
		ct   *workload.CyclictestResult
	}
	results := make([][2]run, len(hrPlatforms))
	for i, p := range hrPlatforms {
		for j, rule := range []hrtimer.SleeperRule{hrtimer.SleepersAllHard, hrtimer.SleepersByPolicy} {
			mc, err := newMachine(o, p.platform, sim.Config{CPUs: 2, HZ: 250, Policy: o.kernel().Policy(true),
				PreemptRT: true, Sleepers: rule, Duration: dur})
			if err != nil {
				return nil, err
			}
			ct := workload.NewCyclictest(cpumask.Range(0, 1), HrtimerStress)
			res, err := mc.run(ct)
			if err != nil {
				return nil, fmt.Errorf("%s, sleepers %s: %w", p.platform, rule, err)
			}
			results[i][j] = run{rule, res, res.Workload("cyclictest").(*workload.CyclictestResult)}
			out.Runs = append(out.Runs, res)
		}
	}
	out.printf("hrtimer-soft (seed post 003): cyclictest -m -S -p99 -i1000 -h400 with %d SCHED_OTHER stress threads\n", HrtimerStress)
	out.printf("  (clock_nanosleep of 0-1 ms each, 50 µs slack), PREEMPT_RT, 2 CPUs; %.0f s per run (the post: ~30 h), seed %d\n\n", dur.Seconds(), o.Seed)
	out.printf("  %-22s %-26s %-26s\n", "", "simulated max (µs)", "post max (µs)")
	out.printf("  %-22s %7s %7s %10s   %7s %7s %10s\n", "platform", "hard", "soft", "soft/hard", "hard", "soft", "soft/hard")
	for i, p := range hrPlatforms {
		h, s := results[i][0].ct.Report.MaxUS(), results[i][1].ct.Report.MaxUS()
		out.printf("  %-22s %7d %7d %10.2f   %7d %7d %10.2f\n", p.label, h, s, float64(s)/float64(max(h, 1)),
			p.before, p.after, float64(p.after)/float64(p.before))
	}
	out.printf("\n  cyclictest's own summary line, per run (one column per thread):\n")
	for i, p := range hrPlatforms {
		for _, r := range results[i] {
			out.printf("    %-11s sleepers %-9s %s\n", p.platform, r.rule.String()+":", maxLine(&r.ct.Report))
		}
	}
	out.printf("\nWhy: what ran in the hrtimer interrupt that woke cyclictest\n")
	for i, p := range hrPlatforms {
		c := &results[i][0].res.Config.Costs
		per := c.HrtimerExpiry.Mean() + c.Wakeup.Mean()
		out.printf("  %s: hard sleepers: up to %d hrtimers expired in the interrupt that woke cyclictest, each %.1f µs\n",
			p.label, maxInt(results[i][0].ct.HardirqRT), per/1000)
		out.printf("  %s  (hrtimer_expiry + wakeup), all before cyclictest could run; soft sleepers: up to %d.\n",
			strings.Repeat(" ", len(p.label)), maxInt(results[i][1].ct.HardirqRT))
	}
	out.printf("  With every sleeper hard (before the 2017 change) the interrupt that wakes cyclictest also expires every\n")
	out.printf("  stress sleeper whose range [expiry, expiry + 50 µs slack] covers that instant, and those that fall due\n")
	out.printf("  while it runs (its retry passes); the RT thread runs after all of them. With the sleepers of SCHED_OTHER\n")
	out.printf("  tasks soft, they are woken from the ktimers thread, which cyclictest (SCHED_FIFO 99) preempts, and what\n")
	out.printf("  is left is the platform's floor: interrupt entry, one expiry, the context switch, interrupts-off sections.\n")
	out.printf("\nCalibration (declared inputs; tmigr sim --platform P --explain prints them all):\n")
	for i, p := range hrPlatforms {
		c := &results[i][0].res.Config.Costs
		out.printf("  %s: cost.wakeup %v (latency-anchors §2.3 ESTIMATEs %s) + cost.hrtimer_expiry %v per hard wakeup;\n",
			p.platform, c.Wakeup, p.estimate, c.HrtimerExpiry)
		out.printf("  %s  cost.irqoff_max %v (share %.2f) calibrated so that soft sleepers give the post's %d µs;\n",
			strings.Repeat(" ", len(p.platform)), time.Duration(c.IRQOffMax), c.IRQOffShare, p.after)
	}
	out.printf("  the hard-sleeper maxima are then the model's prediction, with %d stress threads (a declared input).\n", HrtimerStress)
	if o.Full {
		for i, p := range hrPlatforms {
			for _, r := range results[i] {
				out.printf("\n--- %s, sleepers %s: cyclictest's output and the migration summary ---\n", p.platform, r.rule)
				if err := r.res.WriteText(&out.text); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// maxLine is cyclictest's "# Max Latencies:" row.
func maxLine(r *report.Cyclictest) string {
	var b strings.Builder
	b.WriteString("# Max Latencies:")
	for i := range r.Threads {
		fmt.Fprintf(&b, " %05d", r.Threads[i].Max)
	}
	return b.String()
}

func maxInt(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
