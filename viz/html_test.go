package viz

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// node is an element of the page, read with encoding/xml: the page is
// written as well-formed XML (void elements closed, text escaped) apart
// from its script, which the tests cut out.
type node struct {
	Name  string
	Attr  map[string]string
	Text  string
	Kids  []*node
	Depth int
}

var scriptRE = regexp.MustCompile(`(?s)<script>.*?</script>`)

func parsePage(t *testing.T, page []byte) *node {
	t.Helper()
	if n := bytes.Count(page, []byte("<script")); n != 1 {
		t.Fatalf("%d scripts, want 1", n)
	}
	doc := scriptRE.ReplaceAll(page, nil)
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	root := &node{Name: "#document"}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{Name: tk.Name.Local, Attr: map[string]string{}, Depth: len(stack)}
			for _, a := range tk.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.Kids = append(top.Kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].Text += string(tk)
		}
	}
	if len(stack) != 1 {
		t.Fatalf("%d elements left open", len(stack)-1)
	}
	return root
}

// find returns the elements below n for which ok holds.
func (n *node) find(ok func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(m *node) {
		for _, k := range m.Kids {
			if ok(k) {
				out = append(out, k)
			}
			walk(k)
		}
	}
	walk(n)
	return out
}

func (n *node) byID(id string) *node {
	l := n.find(func(m *node) bool { return m.Attr["id"] == id })
	if len(l) != 1 {
		return nil
	}
	return l[0]
}

func hasClass(n *node, c string) bool { return slices.Contains(strings.Fields(n.Attr["class"]), c) }

// checkPage checks a page against its timeline.
func checkPage(t *testing.T, tl *Timeline, x Extras, page []byte) *node {
	t.Helper()
	doc := parsePage(t, page)
	// Self-contained: nothing to fetch.
	for _, n := range doc.find(func(*node) bool { return true }) {
		for k, v := range n.Attr {
			if k == "src" || k == "href" || (strings.Contains(v, "//") && !(k == "xmlns" && v == "http://www.w3.org/2000/svg")) {
				t.Errorf("<%s %s=%q> refers outside the page", n.Name, k, v)
			}
		}
	}
	if strings.Contains(string(page), "@import") || strings.Contains(string(page), "url(http") {
		t.Error("the style fetches something")
	}
	// The hierarchy: a box per CPU (runs of CPUs on a large machine) and
	// one per group wide enough to draw.
	tree := doc.byID("tree")
	if tree == nil {
		t.Fatal("no hierarchy picture")
	}
	cpus := tree.find(func(n *node) bool { return n.Name == "rect" && hasClass(n, "cpu") })
	if len(tl.CPUs) <= LargeMachine {
		if len(cpus) != len(tl.CPUs) {
			t.Errorf("%d CPU boxes for %d CPUs", len(cpus), len(tl.CPUs))
		}
		for _, r := range cpus {
			title := r.Kids[0].Text
			var c int
			fmt.Sscanf(title, "CPU %d", &c)
			if !hasClass(r, classKey(&tl.CPUs[c])) || !strings.HasPrefix(title, CPUTitle(&tl.CPUs[c])) {
				t.Errorf("CPU %d's box: class %q, title %q", c, r.Attr["class"], title)
			}
		}
		placed := 0 // a group pieced together from a trace may have no known CPU
		for i := range tl.Groups {
			if len(tl.Groups[i].CPUs) > 0 {
				placed++
			}
		}
		if n := len(tree.find(func(n *node) bool { return n.Name == "rect" && hasClass(n, "grp") })); n != placed {
			t.Errorf("%d group boxes for %d groups with CPUs", n, placed)
		}
	}
	excl := 0
	for i := range tl.CPUs {
		if tl.CPUs[i].Excluded {
			excl++
		}
	}
	if got := len(tree.find(func(n *node) bool { return hasClass(n, "excl") })); len(tl.CPUs) <= LargeMachine && got != excl {
		t.Errorf("%d CPUs marked excluded, the timeline has %d", got, excl)
	}
	// A lane per group.
	lanes := doc.byID("lanes")
	labels := lanes.find(func(n *node) bool { return n.Name == "text" && hasClass(n, "llabel") })
	if len(tl.Groups) <= MaxLanes && len(labels) != len(tl.Groups) {
		t.Errorf("%d lanes for %d groups", len(labels), len(tl.Groups))
	}
	// A mark on the owner's lane for the remote expiries (one per pixel
	// and handler at most).
	withLane := 0
	for i := range tl.Expiries {
		if e := &tl.Expiries[i]; e.Remote() && tl.CPUs[e.Owner].Group >= 0 {
			withLane++
		}
	}
	marks := len(lanes.find(func(n *node) bool { return hasClass(n, "pullmark") }))
	if len(tl.Groups) <= MaxLanes && (withLane == 0) != (marks == 0) || marks > withLane {
		t.Errorf("%d pull marks for %d remote expiries of CPUs in a group", marks, withLane)
	}
	// The matrix: one cell per (handler, owner) pair, with its count.
	w := x.Window
	if w == (Window{}) {
		w = All
	}
	pulls := tl.Pulls(w)
	cells := doc.find(func(n *node) bool { return n.Name == "td" && hasClass(n, "pull") })
	if len(pulls) == 0 && (len(cells) != 0 || !strings.Contains(string(page), "No CPU ran another CPU's timers.")) {
		t.Errorf("no pulls, but %d cells", len(cells))
	}
	if len(pulls) > 0 {
		want := map[[2]int]uint64{}
		for _, p := range pulls {
			want[[2]int{p.Handler, p.Owner}] = p.Count
		}
		if len(cells) != len(want) {
			t.Errorf("%d matrix cells for %d pairs", len(cells), len(want))
		}
		for _, c := range cells {
			h, _ := strconv.Atoi(c.Attr["data-handler"])
			o, _ := strconv.Atoi(c.Attr["data-owner"])
			n, _ := strconv.ParseUint(c.Text, 10, 64)
			if want[[2]int{h, o}] != n || n == 0 {
				t.Errorf("cell CPU %d <- CPU %d says %q, the timeline %d", h, o, c.Text, want[[2]int{h, o}])
			}
		}
		// The rows of isolated CPUs stand out.
		for _, row := range doc.find(func(n *node) bool {
			return n.Name == "tr" && len(n.Kids) > 0 && strings.HasPrefix(n.Kids[0].Text, "CPU ")
		}) {
			var c int
			fmt.Sscanf(row.Kids[0].Text, "CPU %d", &c)
			if hasClass(row, "iso") != (tl.CPUs[c].Isolated && !tl.CPUs[c].NohzFull) {
				t.Errorf("row of CPU %d: class %q", c, row.Attr["class"])
			}
		}
	}
	// The latency, when there is one: a bar per non-empty bucket.
	if l := x.Latency; l != nil {
		hist := doc.byID("hist")
		sum, _ := l.bucketsTotal()
		nonzero := 0
		for _, n := range sum {
			if n > 0 {
				nonzero++
			}
		}
		if got := len(hist.find(func(n *node) bool { return n.Name == "rect" && hasClass(n, "bar") })); got != nonzero {
			t.Errorf("%d histogram bars for %d non-empty buckets", got, nonzero)
		}
	} else if doc.byID("latency") != nil {
		t.Error("a latency section without latency")
	}
	return doc
}

func TestHTMLRecordings(t *testing.T) {
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			tl, err := ReadFile(tracePath(name))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			x := Extras{Title: name}
			if err := WriteHTML(&b, tl, x); err != nil {
				t.Fatal(err)
			}
			doc := checkPage(t, tl, x, b.Bytes())
			if name == "vm16-2node-isol-busy-sleepers.txt" {
				// The answer first: isolated CPU 1 ran CPU 0's timers.
				ans := doc.byID("answer").find(func(n *node) bool { return n.Name == "li" })
				if len(ans) == 0 || ans[0].Text != "CPU 1 ran CPU 0's timers 6 times." {
					t.Errorf("answer %+v", ans)
				}
			}
		})
	}
	t.Run("simulated", func(t *testing.T) {
		sr := simulated(t)
		tl, err := read(bytes.NewReader(sr.trace), false)
		if err != nil {
			t.Fatal(err)
		}
		x := SimExtras(sr.res, "simulated")
		if x.Latency == nil || x.Latency.Tool != "oslat" || len(x.Latency.Threads) != 14 {
			t.Fatalf("latency %+v", x.Latency)
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, tl, x); err != nil {
			t.Fatal(err)
		}
		checkPage(t, tl, x, b.Bytes())
		if !strings.Contains(b.String(), "Worst latency: ") {
			t.Error("no worst latency in the answer")
		}
	})
}

// Machines of 2 and 8192 CPUs: the page stays small and says how it
// drew the large one.
func TestHTMLSizes(t *testing.T) {
	for _, n := range []int{2, 16, 300, cpumask.MaxCPUs} {
		nodes := max(1, n/1024)
		m := &ftrace.Machine{CPUs: n, Nodes: nodes, Kernel: "6.19.0", HZ: 1000, Cmdline: "isolcpus=1-" + strconv.Itoa(n-1)}
		for i := 0; i < nodes; i++ {
			m.NodeCPUs = append(m.NodeCPUs, cpumask.Range(i*n/nodes, (i+1)*n/nodes-1))
		}
		if n == 2 {
			m.Cmdline = "nohz_full=1"
		}
		s := &script{}
		s.add(1, 1000, ftrace.TmigrHandleRemoteCPU{CPU: 0, Parent: grp0})
		s.add(1, 1000, ftrace.TimerExpireEntry{Timer: 0x40, Function: "vmstat_update"})
		s.add(0, 2000, ftrace.TimerExpireEntry{Timer: 0x80, Function: "own"})
		tl, err := Build(ftrace.Header{Machine: m}, slices.Values(s.events))
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteHTML(&b, tl, Extras{}); err != nil {
			t.Fatal(err)
		}
		checkPage(t, tl, Extras{}, b.Bytes())
		if b.Len() > 400<<10 {
			t.Errorf("%d CPUs: the page has %d KiB", n, b.Len()>>10)
		}
		if large := strings.Contains(b.String(), "drawn in runs of one class"); large != (n > LargeMachine) {
			t.Errorf("%d CPUs: the large-machine note is there: %v", n, large)
		}
		t.Logf("%d CPUs: %d KiB", n, b.Len()>>10)
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct{ a, b int64 }{{0, 1}, {9852044000, 12870372000}, {0, 1<<63 - 1}, {1<<63 - 10, 1<<63 - 1}, {-5, 5}, {7, 7}, {1e9, 1e9 + 3}} {
		ts := ticks(c.a, c.b)
		if c.b > c.a && len(ts) == 0 || len(ts) > 21 {
			t.Errorf("ticks(%d, %d) = %v", c.a, c.b, ts)
		}
		for i, x := range ts {
			if x < c.a || x > c.b || i > 0 && x <= ts[i-1] {
				t.Errorf("ticks(%d, %d) = %v", c.a, c.b, ts)
			}
		}
	}
}

// A migrator's duty shorter than a pixel still shows over "none".
func TestRasterLanes(t *testing.T) {
	px := func(ns int64) float64 { return float64(ns) / 1000 } // a pixel per µs
	spans := []MigratorSpan{
		{Start: 0, End: 50_000, Child: -1, CPU: -1},
		{Start: 50_000, End: 50_020, Child: 0, CPU: 8}, // 20 ns
		{Start: 50_020, End: 90_000, Child: -1, CPU: -1},
		{Start: 90_000, End: 95_000, Child: 1, CPU: 9},
		{Start: 95_000, End: 95_300, Child: -1, CPU: -1}, // shorter than a pixel, between two duties
		{Start: 95_300, End: 99_000, Child: 1, CPU: 9},
	}
	segs := rasterLanes(spans, px)
	var got []string
	for _, s := range segs {
		got = append(got, fmt.Sprintf("%g-%g:%d", s.x0, s.x1, s.m.CPU))
	}
	want := "[0-50:-1 50-51:8 51-90:-1 90-99:9]"
	if fmt.Sprint(got) != want {
		t.Errorf("segments %v, want %s", got, want)
	}
}
