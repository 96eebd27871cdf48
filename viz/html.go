package viz

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/report"
)

// Extras is what a page shows beside the timeline.
type Extras struct {
	// Title heads the page ("tmigr sim --cpus 16 ...", a file's name).
	Title string
	// Window is the stretch the summary and the matrix count (the
	// simulator's measured window); the zero Window is the whole trace.
	// WindowNote says what it is.
	Window     Window
	WindowNote string
	// Latency is what a measuring tool recorded; nil for none.
	Latency *Latency
}

// Sizes of the page. Above LargeMachine CPUs the hierarchy's CPUs are
// drawn as runs of one class without labels and the page scrolls
// sideways; at most MaxLanes groups get a migrator lane (the groups of the
// upper levels first, then the level-0 groups whose migrator changed most);
// a matrix of more than MaxMatrix handlers or owners becomes a list of the
// MaxPairs largest pairs; above LargeMachine measuring CPUs the latency
// bars show the worst MaxBars.
const (
	LargeMachine = 256
	MaxLanes     = 96
	MaxMatrix    = 48
	MaxPairs     = 100
	MaxBars      = 64
)

//go:embed page.html
var pageHTML string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"n": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}).Parse(pageHTML))

// WriteHTML writes one self-contained page (inline CSS, SVG and a few
// lines of script; nothing fetched) that shows the hierarchy with its CPUs
// coloured by isolation, each group's migrator over time, who ran whose
// timers as a matrix, and the latency histogram when x has one.
func WriteHTML(w io.Writer, tl *Timeline, x Extras) error {
	if x.Window == (Window{}) {
		x.Window = All
	}
	v := buildPage(tl, x)
	return pageTmpl.Execute(w, v)
}

// page is what the template draws.
type page struct {
	Title    string
	Facts    []string
	Answer   []string
	Window   string
	Legend   []legendItem
	Tree     svgPic
	TreeNote string
	Lanes    svgPic
	LaneNote string
	Matrix   *matrix
	Pairs    []pairItem
	PairNote string
	Hist     *svgPic
	Bars     *svgPic
	LatNote  string
	Worst    []latRow
	// WorstNote says which measuring CPUs the table of Worst shows.
	WorstNote string
	Warnings  []string
}

type legendItem struct{ Class, Text string }

type svgPic struct {
	ID    string // the element's id
	W, H  float64
	Rects []rect
	Texts []text
	Lines []line
}

type rect struct {
	X, Y, W, H float64
	Class      string
	Title      string
}

type text struct {
	X, Y   float64
	Class  string
	Anchor string
	S      string
}

type line struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

type matrix struct {
	Owners []int
	Rows   []matrixRow
}

type matrixRow struct {
	CPU   int
	Class string
	Total uint64
	Cells []cell
}

type cell struct {
	Count uint64
	Owner int
	Heat  int // 1..5, 0 for an empty cell
	Title string
}

type pairItem struct {
	Handler, Owner int
	Count          uint64
	Class          string
}

type latRow struct {
	CPU                 int
	Class               string
	Min, Avg, Max       string
	Samples             uint64
	HandledForeignTimer uint64
}

// classKeys are the page's CSS classes of the CPU classes.
var classKeys = map[string]string{"housekeeping": "hk", "isolated": "iso", "nohz_full": "nohz", "isolated+nohz_full": "both"}

func classKey(c *CPU) string { return classKeys[c.Class()] }

func buildPage(tl *Timeline, x Extras) *page {
	p := &page{Title: x.Title}
	if p.Title == "" {
		p.Title = "tmigr: who runs whose timers"
	}
	p.Facts = facts(tl)
	if x.Window != All {
		p.Window = fmt.Sprintf("%s to %s s", ftrace.FormatTS(x.Window.From), ftrace.FormatTS(x.Window.To))
		if x.WindowNote != "" {
			p.Window += ": " + x.WindowNote
		}
	}
	sum := tl.Summary(x.Window, x.Latency.MaxUS())
	p.Answer = answer(sum)
	p.Legend = []legendItem{{"hk", "housekeeping"}, {"iso", "isolated"}, {"nohz", "nohz_full"}, {"both", "isolated and nohz_full"},
		{"excl", "excluded from the hierarchy"}, {"unk", "not shown by the trace"}}
	p.Tree, p.TreeNote = drawTree(tl, x.Window)
	p.Lanes, p.LaneNote = drawLanes(tl)
	p.Matrix, p.Pairs, p.PairNote = pullMatrix(tl, sum)
	if x.Latency != nil && len(x.Latency.Threads) > 0 {
		p.Hist, p.Bars, p.Worst, p.LatNote = drawLatency(tl, x.Latency, sum)
		p.WorstNote = worstNote(len(p.Worst), len(x.Latency.Threads))
	}
	p.Warnings = tl.Warnings
	return p
}

func facts(tl *Timeline) []string {
	var f []string
	if m := tl.Machine; m != nil {
		s := fmt.Sprintf("%d CPUs on %d node(s), kernel %s, HZ=%d", m.CPUs, m.Nodes, m.Kernel, m.HZ)
		if m.Cmdline != "" {
			s += ", " + m.Cmdline
		}
		if m.Note != "" {
			s += " (" + m.Note + ")"
		}
		f = append(f, s)
	} else {
		f = append(f, fmt.Sprintf("%d CPUs (the trace has no \"# machine:\" line)", len(tl.CPUs)))
	}
	f = append(f, fmt.Sprintf("trace from %s to %s s (%s s), %d events, %d timer expiries",
		ftrace.FormatTS(tl.Start), ftrace.FormatTS(tl.End), ftrace.FormatTS(tl.End-tl.Start), tl.Events, len(tl.Expiries)))
	if tl.FromMachine {
		f = append(f, "hierarchy: the groups the kernel builds for this machine")
	} else if len(tl.Groups) > 0 {
		f = append(f, "hierarchy: the groups the trace shows, pieced together from its group pointers")
	}
	return f
}

// answer puts the summary in sentences.
func answer(s *report.Summary) []string {
	var out []string
	if len(s.Pulls) == 0 {
		out = append(out, "Every CPU ran only its own timers.")
	}
	for i, p := range s.Pulls {
		if i == report.SummaryPairs {
			var rest uint64
			for _, q := range s.Pulls[i:] {
				rest += q.Count
			}
			out = append(out, fmt.Sprintf("... and %d more pairs, %d timers (the matrix has them all).", len(s.Pulls)-i, rest))
			break
		}
		t := "times"
		if p.Count == 1 {
			t = "time"
		}
		out = append(out, fmt.Sprintf("CPU %d ran CPU %d's timers %d %s.", p.Handler, p.Owner, p.Count, t))
	}
	if s.IsolatedCPUs != "" || s.NohzFullCPUs != "" {
		if len(s.Isolated) == 0 {
			out = append(out, "No isolated or nohz_full CPU ran another CPU's timers.")
		}
		for i, f := range s.Isolated {
			if i == report.SummaryPairs {
				out = append(out, fmt.Sprintf("... and %d more isolated CPUs (the matrix has them all).", len(s.Isolated)-i))
				break
			}
			who := map[string]string{"isolated": "Isolated", "nohz_full": "nohz_full", "isolated+nohz_full": "Isolated nohz_full"}[f.Class]
			out = append(out, fmt.Sprintf("%s CPU %d ran %d timers of %s.", who, f.CPU, f.Timers, cpusText(maskCPUs(f.Owners))))
		}
	}
	if w := s.Worst; w != nil {
		out = append(out, fmt.Sprintf("Worst latency: %s µs on CPU %d (%s).", strconv.FormatFloat(w.MaxUS, 'f', -1, 64), w.CPU, w.Class))
	}
	return out
}

func maskCPUs(list string) []int {
	var out []int
	for _, part := range strings.Split(list, ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= b && c-a < 1<<14; c++ {
			out = append(out, c)
		}
	}
	return out
}

// treeOrder returns the CPUs in the tree's order: the top groups' CPUs
// depth first, then the CPUs in no group.
func treeOrder(tl *Timeline) []int {
	var order []int
	seen := make([]bool, len(tl.CPUs))
	for i := range tl.Groups {
		if tl.Groups[i].Parent >= 0 {
			continue
		}
		for _, c := range tl.Groups[i].CPUs {
			if c >= 0 && c < len(seen) && !seen[c] {
				seen[c] = true
				order = append(order, c)
			}
		}
	}
	for c := range tl.CPUs {
		if !seen[c] {
			order = append(order, c)
		}
	}
	return order
}

const (
	treeWidth = 1100.0
	rowH      = 24.0
	cpuH      = 30.0
	margin    = 4.0
)

// drawTree draws the hierarchy as an icicle: the top group at the top, a
// row per level, the CPUs at the bottom, each group as wide as its CPUs.
func drawTree(tl *Timeline, w Window) (svgPic, string) {
	order := treeOrder(tl)
	col := make([]int, len(tl.CPUs))
	for i, c := range order {
		col[c] = i
	}
	n := len(order)
	large := n > LargeMachine
	cw := min(treeWidth/float64(max(n, 1)), 48)
	levels := 0
	for _, g := range tl.Groups {
		levels = max(levels, g.Level+1)
	}
	pic := svgPic{ID: "tree", W: float64(n)*cw + 2*margin}
	y := margin
	// Who ran foreign timers, and whose ran elsewhere.
	ran := make([]uint64, len(tl.CPUs))
	lost := make([]uint64, len(tl.CPUs))
	for i := range tl.Expiries {
		if e := &tl.Expiries[i]; e.Remote() && w.Contains(e.Start) {
			ran[e.Handler]++
			if e.Owner >= 0 && e.Owner < len(lost) {
				lost[e.Owner]++
			}
		}
	}
	everIso := groupsPulledByIsolated(tl)
	hidden := map[int]bool{}
	for lvl := levels - 1; lvl >= 0; lvl-- {
		drawn := false
		for gi := range tl.Groups {
			g := &tl.Groups[gi]
			if g.Level != lvl || len(g.CPUs) == 0 {
				continue
			}
			lo, hi := n, -1
			for _, c := range g.CPUs {
				if c >= 0 && c < len(col) {
					lo, hi = min(lo, col[c]), max(hi, col[c])
				}
			}
			if hi < 0 {
				continue
			}
			x, wd := margin+float64(lo)*cw, float64(hi-lo+1)*cw
			if wd < 2 {
				hidden[lvl] = true
				continue
			}
			cls := "grp"
			if everIso[gi] {
				cls += " grp-iso"
			}
			title := g.Describe()
			if g.Node >= 0 {
				title += fmt.Sprintf(", node %d", g.Node)
			}
			if m := lastMigrator(tl, gi); m != "" {
				title += "; migrator at the end: " + m
			}
			if everIso[gi] {
				title += "; an isolated or nohz_full CPU was its migrator"
			}
			drawn = true
			pic.Rects = append(pic.Rects, rect{X: x + 0.5, Y: y, W: max(wd-1, 0.5), H: rowH - 3, Class: cls, Title: title})
			if wd >= 52 {
				pic.Texts = append(pic.Texts, text{X: x + wd/2, Y: y + rowH/2 + 1, Anchor: "middle", Class: "glabel", S: g.Name})
			}
		}
		if drawn {
			y += rowH
		}
	}
	// The CPUs: one box each, or runs of one class on a large machine.
	type run struct{ from, to int }
	var runs []run
	for i := 0; i < n; {
		j := i
		if large {
			a := &tl.CPUs[order[i]]
			for j+1 < n && classKey(&tl.CPUs[order[j+1]]) == classKey(a) && tl.CPUs[order[j+1]].Excluded == a.Excluded {
				j++
			}
		}
		runs = append(runs, run{i, j})
		i = j + 1
	}
	// Short runs go last, at least 2 px wide, so that they show on top of
	// the long ones around them.
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].to-runs[i].from > runs[j].to-runs[j].from })
	for _, r := range runs {
		c := &tl.CPUs[order[r.from]]
		x, wd := margin+float64(r.from)*cw, max(float64(r.to-r.from+1)*cw, 2)
		var title string
		if r.from == r.to {
			title = CPUTitle(c)
			if ran[c.CPU] > 0 {
				title += fmt.Sprintf("; ran %d timers of other CPUs", ran[c.CPU])
			}
			if lost[c.CPU] > 0 {
				title += fmt.Sprintf("; %d of its timers ran on other CPUs", lost[c.CPU])
			}
		} else {
			cpus := make([]int, 0, r.to-r.from+1)
			for k := r.from; k <= r.to; k++ {
				cpus = append(cpus, order[k])
			}
			title = cpusText(cpus) + ": " + c.Class()
			if c.Excluded {
				title += ", excluded"
			}
		}
		gap := 1.0
		if cw < 4 {
			gap = 0
		}
		pic.Rects = append(pic.Rects, rect{X: x, Y: y, W: max(wd-gap, 0.5), H: cpuH - 4, Class: "cpu " + classKey(c), Title: title})
		if c.Excluded {
			pic.Rects = append(pic.Rects, rect{X: x, Y: y, W: max(wd-gap, 0.5), H: cpuH - 4, Class: "excl"})
		}
		if label := strconv.Itoa(c.CPU); !large && cw >= 6.5*float64(len(label))+4 {
			pic.Texts = append(pic.Texts, text{X: x + wd/2, Y: y + cpuH/2 + 1, Anchor: "middle", Class: "clabel", S: label})
		} else if !large && cw >= 5*float64(len(label))+2 {
			pic.Texts = append(pic.Texts, text{X: x + wd/2, Y: y + cpuH/2 + 1, Anchor: "middle", Class: "clabel small", S: label})
		}
	}
	y += cpuH
	// A strip under each CPU that ran other CPUs' timers.
	{
		var top uint64
		for _, v := range ran {
			top = max(top, v)
		}
		for i, c := range order {
			if ran[c] == 0 {
				continue
			}
			hgt := 3 + 9*float64(ran[c])/float64(top)
			pic.Rects = append(pic.Rects, rect{X: margin + float64(i)*cw, Y: y, W: max(cw-1, 1.5), H: hgt, Class: "ran " + classKey(&tl.CPUs[c]),
				Title: fmt.Sprintf("CPU %d ran %d timers of other CPUs", c, ran[c])})
		}
		y += 14
	}
	pic.H = y + margin
	note := ""
	if large {
		note = fmt.Sprintf("%d CPUs, %.2f px each: drawn in runs of one class (at least 2 px wide), without labels", n, cw)
		var lv []string
		for l := range levels {
			if hidden[l] {
				lv = append(lv, strconv.Itoa(l))
			}
		}
		if len(lv) > 0 {
			note += "; the groups of level " + strings.Join(lv, ", ") + " are narrower than 2 px and not drawn"
		}
		note += "."
	}
	if len(tl.Groups) == 0 {
		note = strings.TrimSpace(note + " The trace shows no group of the hierarchy.")
	}
	return pic, note
}

// groupsPulledByIsolated marks the groups whose migrator duty an isolated
// or nohz_full CPU carried at some time.
func groupsPulledByIsolated(tl *Timeline) []bool {
	out := make([]bool, len(tl.Groups))
	for gi := range tl.Groups {
		for _, m := range tl.Groups[gi].Migrators {
			if m.CPU >= 0 && m.CPU < len(tl.CPUs) && (tl.CPUs[m.CPU].Isolated || tl.CPUs[m.CPU].NohzFull) {
				out[gi] = true
				break
			}
		}
	}
	return out
}

func lastMigrator(tl *Timeline, g int) string {
	ms := tl.Groups[g].Migrators
	if len(ms) == 0 || ms[len(ms)-1].End != tl.End {
		return ""
	}
	return tl.MigratorText(g, ms[len(ms)-1])
}

const (
	laneLabelW = 150.0
	laneW      = 900.0
	laneH      = 24.0 // a bar of barH, the marks below it
	barH       = 16.0
	axisH      = 22.0
)

// pickLanes chooses the groups that get a lane.
func pickLanes(tl *Timeline) (lanes []int, left int) {
	for gi := range tl.Groups {
		lanes = append(lanes, gi)
	}
	sort.SliceStable(lanes, func(i, j int) bool {
		a, b := &tl.Groups[lanes[i]], &tl.Groups[lanes[j]]
		if a.Level != b.Level {
			return a.Level > b.Level
		}
		return false
	})
	if len(lanes) <= MaxLanes {
		return lanes, 0
	}
	// Keep the upper levels, then the level-0 groups that changed most;
	// leave out the groups the trace does not show.
	keep := lanes[:0:0]
	var low []int
	for _, g := range lanes {
		if len(tl.Groups[g].Migrators) == 0 {
			left++
			continue
		}
		if tl.Groups[g].Level > 0 {
			keep = append(keep, g)
		} else {
			low = append(low, g)
		}
	}
	sort.SliceStable(low, func(i, j int) bool { return len(tl.Groups[low[i]].Migrators) > len(tl.Groups[low[j]].Migrators) })
	room := max(MaxLanes-len(keep), 0)
	if room < len(low) {
		left += len(low) - room
		low = low[:room]
	}
	sort.Ints(low)
	if len(keep) > MaxLanes {
		left += len(keep) - MaxLanes
		keep = keep[:MaxLanes]
	}
	return append(keep, low...), left
}

// drawLanes draws a lane per group: which child was its migrator when,
// coloured by the class of the CPU that carried the duty.
func drawLanes(tl *Timeline) (svgPic, string) {
	lanes, left := pickLanes(tl)
	span := float64(max(tl.End-tl.Start, 1))
	px := func(t int64) float64 { return laneLabelW + laneW*float64(t-tl.Start)/span }
	pic := svgPic{ID: "lanes", W: laneLabelW + laneW + 10, H: axisH + float64(len(lanes))*laneH + margin}
	for i, gi := range lanes {
		g := &tl.Groups[gi]
		y := axisH + float64(i)*laneH
		pic.Texts = append(pic.Texts, text{X: laneLabelW - 6, Y: y + barH/2 + 5, Anchor: "end", Class: "llabel", S: g.Name})
		if len(g.CPUs) > 0 {
			pic.Texts = append(pic.Texts, text{X: 4, Y: y + barH/2 + 5, Anchor: "start", Class: "lcpus", S: strings.TrimPrefix(strings.TrimPrefix(cpusText(g.CPUs), "CPUs "), "CPU ")})
		}
		pic.Rects = append(pic.Rects, rect{X: laneLabelW, Y: y + 1, W: laneW, H: barH, Class: "unk",
			Title: g.Describe() + ": not shown by the trace here"})
		segs := rasterLanes(g.Migrators, px)
		for k, s := range segs {
			cls := "mig none"
			label := tl.MigratorText(gi, s.m)
			title := fmt.Sprintf("%s: migrator %s from %s to %s s", g.Name, label, ftrace.FormatTS(s.m.Start), ftrace.FormatTS(s.m.End))
			if s.m.Child >= 0 {
				cls = "mig"
				if s.m.CPU >= 0 && s.m.CPU < len(tl.CPUs) {
					cls += " " + classKey(&tl.CPUs[s.m.CPU])
					title += " (" + tl.CPUs[s.m.CPU].Class() + ")"
				} else {
					cls += " unres"
				}
				if k%2 == 1 {
					cls += " alt"
				}
			} else {
				title = fmt.Sprintf("%s: no migrator (no active child) from %s to %s s", g.Name, ftrace.FormatTS(s.m.Start), ftrace.FormatTS(s.m.End))
			}
			wd := max(s.x1-s.x0, 0.6)
			pic.Rects = append(pic.Rects, rect{X: s.x0, Y: y + 1, W: wd, H: barH, Class: cls, Title: title})
			if wd >= 44 && s.m.Child >= 0 {
				short := label
				if s.m.CPU >= 0 {
					short = "CPU " + strconv.Itoa(s.m.CPU)
				}
				pic.Texts = append(pic.Texts, text{X: s.x0 + wd/2, Y: y + barH/2 + 5, Anchor: "middle", Class: "mlabel", S: short})
			}
		}
	}
	// Marks where another CPU ran timers of the group's CPUs: an idle CPU
	// does that too, as the group's last resort, with no migrator set.
	laneOf := map[int]int{}
	for i, gi := range lanes {
		laneOf[gi] = i
	}
	type mark struct{ lane, col, handler int }
	marks := map[mark]int{}
	var markOrder []mark
	for i := range tl.Expiries {
		e := &tl.Expiries[i]
		if !e.Remote() || e.Owner < 0 || e.Owner >= len(tl.CPUs) {
			continue
		}
		lane, ok := laneOf[tl.CPUs[e.Owner].Group]
		if !ok {
			continue
		}
		k := mark{lane, int(px(e.Start)), e.Handler}
		if marks[k] == 0 {
			markOrder = append(markOrder, k)
		}
		marks[k]++
	}
	for _, k := range markOrder {
		y := axisH + float64(k.lane)*laneH
		cls := "pullmark " + classKey(&tl.CPUs[k.handler])
		pic.Rects = append(pic.Rects, rect{X: float64(k.col) - 0.5, Y: y + barH + 2, W: 2, H: laneH - barH - 3, Class: cls,
			Title: fmt.Sprintf("CPU %d ran %d timers of %s's CPUs here", k.handler, marks[k], tl.Groups[lanes[k.lane]].Name)})
	}
	// The time axis.
	for _, t := range ticks(tl.Start, tl.End) {
		x := px(t)
		pic.Lines = append(pic.Lines, line{X1: x, Y1: axisH - 4, X2: x, Y2: pic.H - margin, Class: "tick"})
		pic.Texts = append(pic.Texts, text{X: x, Y: axisH - 8, Anchor: "middle", Class: "tlabel", S: tickLabel(t)})
	}
	note := ""
	if left > 0 {
		note = fmt.Sprintf("%d groups are not drawn (at most %d lanes: the groups the trace shows, the upper levels first, then the level-0 groups whose migrator changed most); the Perfetto export has them all.", left, MaxLanes)
	}
	if len(lanes) == 0 {
		note = "The trace shows no group of the hierarchy."
	}
	return pic, note
}

// laneSeg is a run of pixel columns of a lane showing one migrator; m
// spans the times of the spans drawn in it.
type laneSeg struct {
	x0, x1 float64
	m      MigratorSpan
}

// rasterLanes lays a group's migrator spans onto pixel columns: each
// column shows the span that covers most of it, except that a migrator
// shows over "none" however short its duty (a CPU that woke for 20 µs and
// pulled the timers of the group's idle CPUs in it is what the lane is
// for); runs of columns that show one migrator become one segment.
func rasterLanes(spans []MigratorSpan, px func(int64) float64) []laneSeg {
	type colPick struct {
		i     int // index in spans, -1 for none
		cover float64
	}
	cols := map[int]*colPick{}
	var order []int
	for i, m := range spans {
		x0, x1 := px(m.Start), px(m.End)
		for c := int(math.Floor(x0)); float64(c) < x1 && c-int(math.Floor(x0)) < 1<<16; c++ {
			cover := math.Min(x1, float64(c+1)) - math.Max(x0, float64(c))
			p := cols[c]
			if p == nil {
				p = &colPick{i: -1}
				cols[c] = p
				order = append(order, c)
			}
			better := p.i < 0
			if !better {
				cur := spans[p.i]
				switch {
				case cur.Child < 0 && m.Child >= 0:
					better = true
				case (cur.Child < 0) == (m.Child < 0):
					better = cover > p.cover
				}
			}
			if better {
				p.i, p.cover = i, cover
			}
		}
	}
	var segs []laneSeg
	last := math.MinInt
	for _, c := range order {
		m := spans[cols[c].i]
		x0, x1 := math.Max(float64(c), px(m.Start)), math.Min(float64(c+1), px(m.End))
		if n := len(segs); n > 0 && segs[n-1].m.Child == m.Child && segs[n-1].m.CPU == m.CPU && c <= last+1 {
			segs[n-1].x1 = math.Max(segs[n-1].x1, x1)
			segs[n-1].m.End = max(segs[n-1].m.End, m.End)
			last = c
			continue
		}
		last = c
		if x1-x0 < 1 {
			x0, x1 = float64(c), float64(c+1) // a short duty still takes its pixel
		}
		segs = append(segs, laneSeg{x0, x1, m})
	}
	return segs
}

// ticks returns round times between a and b, at most about ten.
func ticks(a, b int64) []int64 {
	if b <= a {
		return nil
	}
	step := int64(1)
	for (b-a)/step > 10 && step < 1e18 {
		switch {
		case (b-a)/(step*2) <= 10:
			step *= 2
		case (b-a)/(step*5) <= 10:
			step *= 5
		default:
			step *= 10
		}
	}
	var out []int64
	t := a / step * step
	if t < a {
		t += step
	}
	for ; t <= b && len(out) <= 20; t += step {
		out = append(out, t)
		if t > b-step { // the next would pass b, or overflow
			break
		}
	}
	return out
}

func tickLabel(t int64) string {
	s := strconv.FormatFloat(float64(t)/1e9, 'f', 6, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + " s"
}

// pullMatrix lays out who ran whose timers.
func pullMatrix(tl *Timeline, s *report.Summary) (*matrix, []pairItem, string) {
	if len(s.Pulls) == 0 {
		return nil, nil, ""
	}
	hs, os := map[int]bool{}, map[int]bool{}
	for _, p := range s.Pulls {
		hs[p.Handler], os[p.Owner] = true, true
	}
	class := func(c int) string {
		if c >= 0 && c < len(tl.CPUs) {
			return classKey(&tl.CPUs[c])
		}
		return "hk"
	}
	if len(hs) > MaxMatrix || len(os) > MaxMatrix {
		var out []pairItem
		for i, p := range s.Pulls {
			if i == MaxPairs {
				break
			}
			out = append(out, pairItem{Handler: p.Handler, Owner: p.Owner, Count: p.Count, Class: class(p.Handler)})
		}
		return nil, out, fmt.Sprintf("%d pairs, %d CPUs that ran other CPUs' timers and %d whose timers ran elsewhere: too many for a matrix, so the %d largest pairs.",
			len(s.Pulls), len(hs), len(os), len(out))
	}
	m := &matrix{Owners: sortedKeys(os)}
	col := map[int]int{}
	for i, o := range m.Owners {
		col[o] = i
	}
	var top uint64
	for _, p := range s.Pulls {
		top = max(top, p.Count)
	}
	rows := map[int]*matrixRow{}
	for _, h := range sortedKeys(hs) {
		r := &matrixRow{CPU: h, Class: class(h), Cells: make([]cell, len(m.Owners))}
		for i, o := range m.Owners {
			r.Cells[i].Owner = o
		}
		rows[h] = r
	}
	for _, p := range s.Pulls {
		r := rows[p.Handler]
		c := &r.Cells[col[p.Owner]]
		c.Count = p.Count
		c.Heat = 1 + int(4*log10p1(p.Count)/log10p1(top)+0.5)
		c.Heat = min(max(c.Heat, 1), 5)
		c.Title = fmt.Sprintf("CPU %d ran CPU %d's timers %d times", p.Handler, p.Owner, p.Count)
		r.Total += p.Count
	}
	for _, h := range sortedKeys(hs) {
		m.Rows = append(m.Rows, *rows[h])
	}
	return m, nil, ""
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

const (
	histW = 900.0
	histH = 180.0
	histL = 56.0
	histB = 30.0
)

// worstNote says what the table of the worst CPUs holds: shown rows of
// the n measuring CPUs, so that a reader does not take the table for
// every CPU.
func worstNote(shown, n int) string {
	if shown < n {
		return fmt.Sprintf("The %d worst of the %d measuring CPUs, by maximum latency.", shown, n)
	}
	return fmt.Sprintf("All %d measuring CPUs, worst first.", n)
}

// drawLatency draws the histogram of every thread's samples together (log
// scale) and each CPU's maximum.
func drawLatency(tl *Timeline, l *Latency, s *report.Summary) (*svgPic, *svgPic, []latRow, string) {
	class := func(c int) string {
		if c >= 0 && c < len(tl.CPUs) {
			return classKey(&tl.CPUs[c])
		}
		return "hk"
	}
	var hist *svgPic
	sum, overflow := l.bucketsTotal()
	if len(sum) > 0 {
		hist = &svgPic{ID: "hist", W: histL + histW + 20, H: histH + histB + 10}
		var top float64
		for _, n := range sum {
			top = max(top, log10p1(n))
		}
		top = math.Max(math.Ceil(top), 1)
		bw := histW / float64(len(sum))
		for i, n := range sum {
			if n == 0 {
				continue
			}
			h := histH * log10p1(n) / top
			label := strconv.Itoa(i + l.FirstUS)
			if overflow && i == len(sum)-1 {
				label = "≥ " + label
			}
			hist.Rects = append(hist.Rects, rect{X: histL + float64(i)*bw + 0.5, Y: 10 + histH - h, W: max(bw-1, 0.5), H: h, Class: "bar",
				Title: fmt.Sprintf("%s µs: %d samples", label, n)})
		}
		every := max(1, int(math.Ceil(float64(len(sum))/16)))
		for i := 0; i < len(sum); i += every {
			label := strconv.Itoa(i + l.FirstUS)
			if overflow && i == len(sum)-1 {
				label = "≥" + label
			}
			hist.Texts = append(hist.Texts, text{X: histL + (float64(i)+0.5)*bw, Y: 10 + histH + 14, Anchor: "middle", Class: "tlabel", S: label})
		}
		hist.Texts = append(hist.Texts, text{X: histL + histW/2, Y: 10 + histH + 27, Anchor: "middle", Class: "tlabel", S: "latency, µs (" + l.Tool + "'s buckets, every measuring CPU together)"})
		for k := 0; k <= int(top); k++ {
			y := 10 + histH - histH*float64(k)/top
			hist.Lines = append(hist.Lines, line{X1: histL - 4, Y1: y, X2: histL + histW, Y2: y, Class: "tick"})
			hist.Texts = append(hist.Texts, text{X: histL - 6, Y: y + 4, Anchor: "end", Class: "tlabel", S: "1e" + strconv.Itoa(k)})
		}
	}
	// Each CPU's maximum.
	threads := append([]LatencyThread(nil), l.Threads...)
	note := ""
	if len(threads) > LargeMachine {
		sort.SliceStable(threads, func(i, j int) bool { return threads[i].MaxUS > threads[j].MaxUS })
		note = fmt.Sprintf("%d measuring CPUs: the %d worst maxima are drawn.", len(threads), MaxBars)
		threads = threads[:MaxBars]
	}
	bars := &svgPic{ID: "bars", W: histL + histW + 20, H: histH + histB + 10}
	var top float64
	for _, t := range threads {
		top = max(top, t.MaxUS)
	}
	top = math.Max(top, 1)
	bw := histW / float64(max(len(threads), 1))
	for i, t := range threads {
		h := histH * t.MaxUS / top
		bars.Rects = append(bars.Rects, rect{X: histL + float64(i)*bw + 0.5, Y: 10 + histH - h, W: max(bw-1, 0.5), H: math.Max(h, 0.5),
			Class: "lbar " + class(t.CPU), Title: fmt.Sprintf("CPU %d: max %s µs", t.CPU, strconv.FormatFloat(t.MaxUS, 'f', -1, 64))})
		if bw >= 14 || i%max(1, int(math.Ceil(14/bw))) == 0 {
			bars.Texts = append(bars.Texts, text{X: histL + (float64(i)+0.5)*bw, Y: 10 + histH + 14, Anchor: "middle", Class: "tlabel", S: strconv.Itoa(t.CPU)})
		}
	}
	for _, f := range []float64{0, 0.5, 1} {
		y := 10 + histH - histH*f
		bars.Lines = append(bars.Lines, line{X1: histL - 4, Y1: y, X2: histL + histW, Y2: y, Class: "tick"})
		bars.Texts = append(bars.Texts, text{X: histL - 6, Y: y + 4, Anchor: "end", Class: "tlabel", S: strconv.FormatFloat(top*f, 'f', -1, 64)})
	}
	bars.Texts = append(bars.Texts, text{X: histL + histW/2, Y: 10 + histH + 27, Anchor: "middle", Class: "tlabel", S: "maximum latency, µs, by CPU"})
	// The worst ten.
	ran := map[int]uint64{}
	for _, p := range s.Pulls {
		ran[p.Handler] += p.Count
	}
	worst := append([]LatencyThread(nil), l.Threads...)
	sort.SliceStable(worst, func(i, j int) bool { return worst[i].MaxUS > worst[j].MaxUS })
	var rows []latRow
	for i, t := range worst {
		if i == 10 {
			break
		}
		cls := "housekeeping"
		if t.CPU >= 0 && t.CPU < len(tl.CPUs) {
			cls = tl.CPUs[t.CPU].Class()
		}
		f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
		rows = append(rows, latRow{CPU: t.CPU, Class: cls, Min: f(t.MinUS), Avg: strconv.FormatFloat(t.AvgUS, 'f', 3, 64), Max: f(t.MaxUS),
			Samples: t.Samples, HandledForeignTimer: ran[t.CPU]})
	}
	return hist, bars, rows, note
}
