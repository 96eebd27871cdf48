package migrators

import (
	"fmt"

	"github.com/tmigr/tmigr/cpumask"
)

// Describe says the prediction in a few lines: one per group whose
// migrator may pull, a count of the others, then the CPUs that may run
// other CPUs' timers and those that never do. isolated marks the isolated
// CPUs among the candidates; timekeeper is the nohz timekeeper while
// nohz_full is in use, else -1.
//
//	GRP0:0 (CPUs 0-7): always has a migrator, one of isolated CPUs 1-7 (busy; whichever became active first): the timers of CPU 0
//	(15 other groups have nothing to pull from)
//	CPUs that may run other CPUs' timers: 1-7,33-39,65-71,97-103
//	never: 0,8-32,40-64,72-96,104-127
func (p *Prediction) Describe(isolated cpumask.Mask, timekeeper int) []string {
	var out []string
	if !p.Hierarchy {
		out = append(out, p.Why)
	}
	quiet := 0
	for i := range p.Groups {
		g := &p.Groups[i]
		if !g.Pulls() {
			quiet++
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", g.Name, cpus(g.CPUs), g.phrase(isolated, timekeeper)))
	}
	if quiet > 0 {
		out = append(out, fmt.Sprintf("(%d other group%s %s nothing to pull from)", quiet, plural(quiet, "", "s"), plural(quiet, "has", "have")))
	}
	return append(out, "CPUs that may run other CPUs' timers: "+list(p.Handlers), "never: "+list(p.Never))
}

// phrase says who a group's migrator may be and whose timers it runs.
func (g *Group) phrase(isolated cpumask.Mask, timekeeper int) string {
	from := "the timers of " + cpus(g.From)
	if !g.Always {
		return fmt.Sprintf("no migrator while all idle; any of them when awake, or the last to go idle, woken: %s, each other's", from)
	}
	why := "busy"
	tk := timekeeper >= 0 && g.Candidates.Test(timekeeper)
	switch {
	case tk && g.Candidates.Weight() == 1:
		why = "the timekeeper, whose tick never stops under nohz_full"
	case tk:
		why = "busy, or the timekeeper"
	}
	if g.Candidates.Weight() > 1 {
		why += "; whichever became active first"
	}
	mark := ""
	if g.Candidates.Intersects(&isolated) {
		mark = " isolated"
	}
	if g.Candidates.Weight() == 1 {
		return fmt.Sprintf("always has a migrator,%s %s (%s): %s", mark, cpus(g.Candidates), why, from)
	}
	return fmt.Sprintf("always has a migrator, one of%s %s (%s): %s", mark, cpus(g.Candidates), why, from)
}

// cpus names a CPU set in a sentence: "CPU 3", "CPUs 4-7".
func cpus(m cpumask.Mask) string {
	if m.Weight() == 1 {
		return "CPU " + m.String()
	}
	return "CPUs " + m.String()
}

func list(m cpumask.Mask) string {
	if m.Empty() {
		return "none"
	}
	return m.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
