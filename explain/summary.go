package explain

import (
	"cmp"
	"maps"
	"slices"
)

// summarise groups the explained expiries by handler, owner and function.
func (b *builder) summarise() {
	rep := b.rep
	type key struct {
		h, o int
		fn   string
	}
	pulls := map[key]int{} // index in rep.Pulls
	byCPU := map[int]*CPUSummary{}
	own := map[key]int{} // index in the CPU's OwnByFunc
	for i := range rep.Events {
		x := &rep.Events[i]
		cs := byCPU[x.Handler]
		if cs == nil {
			cs = &CPUSummary{CPU: x.Handler, Role: b.cpuRole(x.Handler)}
			byCPU[x.Handler] = cs
		}
		d := max(x.Duration, 0)
		switch x.Kind {
		case Foreign:
			cs.Foreign++
			cs.Time += d
			k := key{x.Handler, x.Owner, x.Function}
			j, ok := pulls[k]
			if !ok {
				j = len(rep.Pulls)
				pulls[k] = j
				rep.Pulls = append(rep.Pulls, Pull{Handler: x.Handler, Owner: x.Owner, Function: x.Function, First: x.TS, Why: x.Why})
			}
			p := &rep.Pulls[j]
			p.Count++
			p.Time += d
			p.Last = x.TS
		case Own:
			cs.Own++
			k := key{x.Handler, x.Handler, x.Function}
			j, ok := own[k]
			if !ok {
				j = len(cs.OwnByFunc)
				own[k] = j
				cs.OwnByFunc = append(cs.OwnByFunc, FuncCount{Function: x.Function})
			}
			cs.OwnByFunc[j].Count++
			cs.OwnByFunc[j].Time += d
		default:
			cs.Unknown++
		}
	}
	slices.SortStableFunc(rep.Pulls, func(a, b Pull) int {
		return cmp.Or(cmp.Compare(a.Handler, b.Handler), cmp.Compare(b.Count, a.Count))
	})
	for _, p := range rep.Pulls {
		cs := byCPU[p.Handler]
		cs.Pulls = append(cs.Pulls, p)
	}
	for _, c := range slices.Sorted(maps.Keys(byCPU)) {
		cs := byCPU[c]
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
