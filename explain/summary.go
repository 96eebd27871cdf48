package explain

import (
	"cmp"
	"maps"
	"slices"
)

// tally is the summary of the expiries listed so far: the report's
// Pulls and CPUSummaries as they grow, in the order the expiries came.
type tally struct {
	pulls map[pullKey]int     // index in Report.Pulls
	byCPU map[int]*CPUSummary // by handler
	own   map[pullKey]int     // index in the handler's OwnByFunc
}

type pullKey struct {
	h, o int
	fn   string
}

// counted is where an expiry awaiting its exit was counted: its index in
// Report.Events (-1 when not kept), its handler's summary, and its pull or
// its function among the handler's own (-1 none).
type counted struct {
	event, pull, own int
	cs               *CPUSummary
	ts               int64 // its entry's time
}

// count adds an expiry to the summary.
func (b *builder) count(x *Expiry) counted {
	t, rep := &b.sum, b.rep
	if t.byCPU == nil {
		t.pulls, t.byCPU, t.own = map[pullKey]int{}, map[int]*CPUSummary{}, map[pullKey]int{}
	}
	cs := t.byCPU[x.Handler]
	if cs == nil {
		cs = &CPUSummary{CPU: x.Handler, Role: b.cpuRole(x.Handler)}
		t.byCPU[x.Handler] = cs
	}
	at := counted{event: -1, pull: -1, own: -1, cs: cs}
	switch x.Kind {
	case Foreign:
		cs.Foreign++
		j := indexOf(t.pulls, pullKey{x.Handler, x.Owner, x.Function}, func() int {
			rep.Pulls = append(rep.Pulls, Pull{Handler: x.Handler, Owner: x.Owner, Function: x.Function, First: x.TS, Why: x.Why})
			return len(rep.Pulls) - 1
		})
		p := &rep.Pulls[j]
		p.Count++
		p.Last = x.TS
		at.pull = j
	case Own:
		cs.Own++
		j := indexOf(t.own, pullKey{x.Handler, x.Handler, x.Function}, func() int {
			cs.OwnByFunc = append(cs.OwnByFunc, FuncCount{Function: x.Function})
			return len(cs.OwnByFunc) - 1
		})
		cs.OwnByFunc[j].Count++
		at.own = j
	default:
		cs.Unknown++
	}
	return at
}

// exited adds the time an expiry took, from its entry to its exit, d ns.
func (b *builder) exited(at counted, d int64) {
	if at.event >= 0 {
		b.rep.Events[at.event].Duration = d
	}
	d = max(d, 0)
	switch {
	case at.pull >= 0:
		at.cs.Time += d
		b.rep.Pulls[at.pull].Time += d
	case at.own >= 0:
		at.cs.OwnByFunc[at.own].Time += d
	}
}

// summarise orders the summary: the pulls by handler, then the most
// frequent first; the CPUs' own timers likewise.
func (b *builder) summarise() {
	rep, t := b.rep, &b.sum
	slices.SortStableFunc(rep.Pulls, func(a, b Pull) int {
		return cmp.Or(cmp.Compare(a.Handler, b.Handler), cmp.Compare(b.Count, a.Count))
	})
	for _, p := range rep.Pulls {
		cs := t.byCPU[p.Handler]
		cs.Pulls = append(cs.Pulls, p)
	}
	for _, c := range slices.Sorted(maps.Keys(t.byCPU)) {
		cs := t.byCPU[c]
		slices.SortStableFunc(cs.OwnByFunc, func(a, b FuncCount) int { return cmp.Compare(b.Count, a.Count) })
		rep.CPUSummaries = append(rep.CPUSummaries, *cs)
	}
}

// role names a CPU's isolation.
func (b *builder) cpuRole(c int) string {
	iso, nohz := b.rep.Isolated.Test(c), b.rep.NohzFull.Test(c)
	switch {
	case iso && nohz:
		return "isolated (isolcpus domain and nohz_full)"
	case iso:
		return "isolated (isolcpus domain)"
	case nohz:
		return "nohz_full"
	case c == b.rep.Timekeeper:
		return "housekeeping, the nohz timekeeper"
	}
	return "housekeeping"
}

// indexOf returns k's index in m; the first time k is seen, add appends
// its entry and returns the index it stands at.
func indexOf[K comparable](m map[K]int, k K, add func() int) int {
	j, ok := m[k]
	if !ok {
		j = add()
		m[k] = j
	}
	return j
}
