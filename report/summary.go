package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
)

// Summary is the answer a run or a recording gives first, before any
// tool's report: who ran whose timers, which isolated CPUs ran timers of
// other CPUs, and the worst latency and where it was.
type Summary struct {
	// Pulls lists every pair of CPUs where Handler ran timers queued on
	// Owner's base (Handler != Owner), most timers first, then by handler
	// and owner.
	Pulls []Pull `json:"pulls"`
	// Remote is the number of timers that ran on a CPU other than their
	// owner: the sum of the Pulls' counts.
	Remote uint64 `json:"remote"`
	// Isolated lists the isolated and nohz_full CPUs that ran timers of
	// other CPUs, in CPU order; empty when none did.
	Isolated []Foreign `json:"isolated_foreign"`
	// IsolatedCPUs and NohzFullCPUs are the CPU sets the classes come
	// from, as cpulists ("" for none).
	IsolatedCPUs string `json:"isolated_cpus"`
	NohzFullCPUs string `json:"nohz_full_cpus"`
	// Worst is the highest latency any CPU measured; nil when nothing
	// measured latency.
	Worst *Worst `json:"worst_latency,omitempty"`
}

// Pull is the count of one CPU's timers that another CPU ran.
type Pull struct {
	Handler int    `json:"handler"`
	Owner   int    `json:"owner"`
	Count   uint64 `json:"count"`
}

// Foreign is an isolated or nohz_full CPU that ran other CPUs' timers.
type Foreign struct {
	CPU    int    `json:"cpu"`
	Class  string `json:"class"`  // see Class
	Timers uint64 `json:"timers"` // other CPUs' timers it ran
	Owners string `json:"owners"` // their CPUs, a cpulist
}

// Worst is the highest latency measured, and where.
type Worst struct {
	CPU   int     `json:"cpu"`
	MaxUS float64 `json:"max_us"`
	Class string  `json:"class"`
}

// Class names a CPU's isolation: "isolated" (isolcpus= domain list or an
// isolated cpuset partition), "nohz_full", both joined by "+", or
// "housekeeping".
func Class(cpu int, isolated, nohzFull *cpumask.Mask) string {
	return ClassOf(isolated.Test(cpu), nohzFull.Test(cpu))
}

// ClassOf names the class of a CPU that is isolated, nohz_full, both or
// neither.
func ClassOf(isolated, nohzFull bool) string {
	switch {
	case isolated && nohzFull:
		return "isolated+nohz_full"
	case isolated:
		return "isolated"
	case nohzFull:
		return "nohz_full"
	}
	return "housekeeping"
}

// NewSummary builds the summary of pull counts (pairs with Handler ==
// Owner and zero counts are ignored; a pair given twice is added up),
// the CPU classes and the per-CPU maximum latencies in µs (nil when
// nothing measured).
func NewSummary(pulls []Pull, isolated, nohzFull cpumask.Mask, maxUS map[int]float64) *Summary {
	s := &Summary{Pulls: []Pull{}, Isolated: []Foreign{},
		IsolatedCPUs: isolated.String(), NohzFullCPUs: nohzFull.String()}
	type pair struct{ h, o int }
	sum := map[pair]uint64{}
	for _, p := range pulls {
		if p.Handler != p.Owner && p.Count > 0 {
			sum[pair{p.Handler, p.Owner}] += p.Count
		}
	}
	foreign := map[int]*Foreign{}
	owners := map[int]*cpumask.Mask{}
	for k, n := range sum {
		s.Pulls = append(s.Pulls, Pull{Handler: k.h, Owner: k.o, Count: n})
		s.Remote += n
		if !isolated.Test(k.h) && !nohzFull.Test(k.h) {
			continue
		}
		f := foreign[k.h]
		if f == nil {
			f = &Foreign{CPU: k.h, Class: Class(k.h, &isolated, &nohzFull)}
			foreign[k.h] = f
			owners[k.h] = &cpumask.Mask{}
		}
		f.Timers += n
		if k.o >= 0 && k.o < cpumask.MaxCPUs {
			owners[k.h].Set(k.o)
		}
	}
	sort.Slice(s.Pulls, func(i, j int) bool {
		a, b := s.Pulls[i], s.Pulls[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.Handler != b.Handler {
			return a.Handler < b.Handler
		}
		return a.Owner < b.Owner
	})
	for cpu, f := range foreign {
		f.Owners = owners[cpu].String()
		s.Isolated = append(s.Isolated, *f)
	}
	sort.Slice(s.Isolated, func(i, j int) bool { return s.Isolated[i].CPU < s.Isolated[j].CPU })
	for cpu, v := range maxUS {
		if s.Worst == nil || v > s.Worst.MaxUS || v == s.Worst.MaxUS && cpu < s.Worst.CPU {
			s.Worst = &Worst{CPU: cpu, MaxUS: v}
		}
	}
	if s.Worst != nil {
		s.Worst.Class = Class(s.Worst.CPU, &isolated, &nohzFull)
	}
	return s
}

// Summarize returns the summary of a simulation run: its per-CPU remote
// counts, the isolation of its machine (isolcpus and the isolated
// partition count as isolated) and the maximum latency of each measuring
// CPU.
func Summarize(r *Run) (*Summary, error) {
	var iso, nohz cpumask.Mask
	for _, l := range []struct {
		name, list string
		dst        *cpumask.Mask
	}{{"isolcpus", r.Machine.Isolcpus, &iso}, {"isolated partition", r.Machine.IsolatedPartition, &iso}, {"nohz_full", r.Machine.NohzFull, &nohz}} {
		m, err := cpumask.Parse(l.list)
		if err != nil {
			return nil, fmt.Errorf("summary: %s %q: %v", l.name, l.list, err)
		}
		*l.dst = l.dst.Or(m)
	}
	var pulls []Pull
	var lat map[int]float64
	for _, c := range r.CPUs {
		for _, f := range c.RemoteFrom {
			pulls = append(pulls, Pull{Handler: c.CPU, Owner: f.CPU, Count: f.Count})
		}
		if c.LatencyUS != nil {
			if lat == nil {
				lat = map[int]float64{}
			}
			lat[c.CPU] = c.LatencyUS.Max
		}
	}
	return NewSummary(pulls, iso, nohz, lat), nil
}

// SummaryPairs is how many pairs WriteSummary lists before it counts the
// rest.
const SummaryPairs = 8

// WriteSummary prints the summary as comment lines, so that a reader of
// the tool's report that follows skips them:
//
//	# who ran whose timers:
//	#   CPU 1 ran CPU 0's timers 26 times
//	#   CPU 9 ran CPU 8's timers 26 times
//	# isolated CPUs that ran other CPUs' timers: CPU 1 (26 of CPU 0), CPU 9 (26 of CPU 8)
//	# worst latency: 18 µs on CPU 1 (isolated)
func WriteSummary(w io.Writer, s *Summary) error {
	bw := bufio.NewWriter(w)
	if len(s.Pulls) == 0 {
		fmt.Fprintln(bw, "# who ran whose timers: every CPU ran only its own timers")
	} else {
		fmt.Fprintf(bw, "# who ran whose timers (%d on another CPU than their own):\n", s.Remote)
		for i, p := range s.Pulls {
			if i == SummaryPairs {
				var rest uint64
				for _, q := range s.Pulls[i:] {
					rest += q.Count
				}
				fmt.Fprintf(bw, "#   ... and %d more pairs, %s\n", len(s.Pulls)-i, plural(rest, "timer"))
				break
			}
			fmt.Fprintf(bw, "#   CPU %d ran CPU %d's timers %s\n", p.Handler, p.Owner, times(p.Count))
		}
	}
	if s.IsolatedCPUs != "" || s.NohzFullCPUs != "" {
		fmt.Fprint(bw, "# isolated CPUs that ran other CPUs' timers: ")
		if len(s.Isolated) == 0 {
			fmt.Fprint(bw, "none")
		}
		for i, f := range s.Isolated {
			if i == SummaryPairs {
				fmt.Fprintf(bw, " and %d more", len(s.Isolated)-i)
				break
			}
			if i > 0 {
				fmt.Fprint(bw, ", ")
			}
			fmt.Fprintf(bw, "CPU %d (%d of %s)", f.CPU, f.Timers, cpuList(f.Owners))
		}
		fmt.Fprintln(bw)
	}
	if s.Worst != nil {
		fmt.Fprintf(bw, "# worst latency: %s µs on CPU %d (%s)\n",
			strconv.FormatFloat(s.Worst.MaxUS, 'f', -1, 64), s.Worst.CPU, s.Worst.Class)
	}
	return bw.Flush()
}

// cpuList names a cpulist: "CPU 0", "CPUs 0,8".
func cpuList(l string) string {
	if strings.ContainsAny(l, ",-") {
		return "CPUs " + l
	}
	return "CPU " + l
}

func times(n uint64) string {
	if n == 1 {
		return "once"
	}
	return strconv.FormatUint(n, 10) + " times"
}

func plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatUint(n, 10) + " " + noun + "s"
}
