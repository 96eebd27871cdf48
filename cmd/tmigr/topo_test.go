package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// topoJSON mirrors the JSON the command prints.
type topoJSON struct {
	CPUs           int    `json:"cpus"`
	Nodes          int    `json:"nodes"`
	Levels         int    `json:"levels"`
	CrossnodeLevel int    `json:"crossnode_level"`
	Root           string `json:"root"`
	Groups         []struct {
		Name     string   `json:"name"`
		Level    int      `json:"level"`
		Node     int      `json:"node"`
		Parent   string   `json:"parent"`
		Children []string `json:"children"`
		CPUs     []int    `json:"cpus"`
	} `json:"groups"`
}

func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// formula is tmigr_init's sizing, computed here with floating point,
// independently of package hier.
func formula(cpus, nodes int) (levels, crossnode int) {
	if cpus == 1 {
		return 0, 0
	}
	log2up := func(x int) float64 { return math.Ceil(math.Log2(float64(x)) - 1e-9) }
	cpulvl := int(math.Ceil(log2up(int(math.Ceil(float64(cpus)/float64(nodes)))) / 3))
	nodelvl := int(math.Ceil(log2up(nodes) / 3))
	return cpulvl + nodelvl, cpulvl
}

func TestTopoMachines(t *testing.T) {
	for _, tc := range []struct{ cpus, nodes int }{
		{1, 1}, {2, 1}, {8, 1}, {9, 1}, {48, 2}, {128, 2}, {128, 4}, {4096, 8},
	} {
		t.Run(fmt.Sprintf("%d/%d", tc.cpus, tc.nodes), func(t *testing.T) {
			code, out, errs := runCmd("topo", "--cpus", fmt.Sprint(tc.cpus), "--nodes", fmt.Sprint(tc.nodes), "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			checkSchema(t, "topo", out)
			var top topoJSON
			if err := json.Unmarshal([]byte(out), &top); err != nil {
				t.Fatalf("bad JSON: %v\n%s", err, out)
			}
			levels, cross := formula(tc.cpus, tc.nodes)
			if top.Levels != levels || top.CrossnodeLevel != cross || top.CPUs != tc.cpus || top.Nodes != tc.nodes {
				t.Fatalf("cpus %d nodes %d levels %d crossnode %d; want %d %d %d %d",
					top.CPUs, top.Nodes, top.Levels, top.CrossnodeLevel, tc.cpus, tc.nodes, levels, cross)
			}
			checkStructure(t, tc.cpus, tc.nodes, &top)

			code, out, _ = runCmd("topo", "--cpus", fmt.Sprint(tc.cpus), "--nodes", fmt.Sprint(tc.nodes))
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if tc.cpus == 1 {
				if !strings.Contains(out, "uniprocessor") {
					t.Errorf("output for 1 CPU: %q", out)
				}
				return
			}
			want := fmt.Sprintf("Timer migration: %d hierarchy levels; 8 children per group; %d crossnode level\n", levels, cross)
			if !strings.HasPrefix(out, want) {
				t.Errorf("first line %q, want %q", strings.SplitN(out, "\n", 2)[0], want)
			}
			if !strings.Contains(out, "\nLVL 0 ") {
				// Too wide to draw: the outline names every group of
				// level 1 and above on a line of its own, and the root
				// first.
				if !strings.Contains(out, fmt.Sprintf("\nGRP%d:0 ", levels-1)) {
					t.Errorf("outline does not start at the root:\n%s", out)
				}
				return
			}
			for l := 0; l < levels; l++ {
				if !strings.Contains(out, fmt.Sprintf("\nLVL %d ", l)) {
					t.Errorf("drawing has no line for level %d", l)
				}
			}
		})
	}
}

// checkStructure verifies the JSON view: one root, parents one level up,
// at most 8 children, every CPU in exactly one level-0 group, node-pure
// groups below the crossnode level, CPUs on the node of contiguous blocks.
func checkStructure(t *testing.T, cpus, nodes int, top *topoJSON) {
	t.Helper()
	if cpus == 1 {
		if len(top.Groups) != 0 {
			t.Fatalf("a uniprocessor has %d groups", len(top.Groups))
		}
		return
	}
	byName := map[string]int{}
	for i, g := range top.Groups {
		byName[g.Name] = i
	}
	roots := 0
	seen := make([]int, cpus)
	for _, g := range top.Groups {
		if g.Parent == "" {
			roots++
			if g.Name != top.Root {
				t.Errorf("%s has no parent but the root is %s", g.Name, top.Root)
			}
		} else if p := top.Groups[byName[g.Parent]]; p.Level != g.Level+1 {
			t.Errorf("%s (level %d) has parent %s at level %d", g.Name, g.Level, p.Name, p.Level)
		}
		if len(g.Children)+len(g.CPUs) > 8 || len(g.Children)+len(g.CPUs) == 0 {
			t.Errorf("%s has %d members", g.Name, len(g.Children)+len(g.CPUs))
		}
		if (g.Level < top.CrossnodeLevel) != (g.Node >= 0) {
			t.Errorf("%s at level %d has node %d (crossnode level %d)", g.Name, g.Level, g.Node, top.CrossnodeLevel)
		}
		for _, c := range g.CPUs {
			seen[c]++
			if g.Level != 0 {
				t.Errorf("CPU%d in %s at level %d", c, g.Name, g.Level)
			}
			if node := c * nodes / cpus; g.Node >= 0 && g.Node != node {
				t.Errorf("CPU%d (node %d) in %s of node %d", c, node, g.Name, g.Node)
			}
		}
		for _, ch := range g.Children {
			child := top.Groups[byName[ch]]
			if child.Parent != g.Name {
				t.Errorf("%s lists child %s, whose parent is %s", g.Name, ch, child.Parent)
			}
			if g.Node >= 0 && child.Node != g.Node {
				t.Errorf("%s (node %d) holds %s of node %d", g.Name, g.Node, ch, child.Node)
			}
		}
	}
	if roots != 1 {
		t.Errorf("%d roots", roots)
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("CPU%d is in %d level-0 groups", c, n)
		}
	}
}

// The kernel comment's machine, drawn.
const golden48x2 = `Timer migration: 3 hierarchy levels; 8 children per group; 2 crossnode level
LVL 2                            [GRP2:0]
                             GRP1:0 - GRP1:1

LVL 1             [GRP1:0]                      [GRP1:1]
              GRP0:0 - GRP0:2               GRP0:3 - GRP0:5

LVL 0   [GRP0:0]  [GRP0:1]  [GRP0:2]  [GRP0:3]  [GRP0:4]  [GRP0:5]
CPUS      0-7       8-15     16-23     24-31     32-39     40-47
NODE       0         0         0         1         1         1
`

func TestTopoGolden(t *testing.T) {
	for _, args := range [][]string{
		{"topo", "--cpus", "48", "--nodes", "2"},
		{"topo", "--cpus=48", "--node-cpus", "0-23;24-47"},
	} {
		code, out, errs := runCmd(args...)
		if code != 0 || out != golden48x2 {
			t.Errorf("%v: exit %d, stderr %q, output:\n%s\nwant:\n%s", args, code, errs, out, golden48x2)
		}
	}
}

func TestTopoNodeCPUs(t *testing.T) {
	// Interleaved nodes: node-pure groups below the crossnode level.
	code, out, errs := runCmd("topo", "--cpus", "16", "--node-cpus", "0-14:1/2;1-15:1/2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkSchema(t, "topo", out)
	var top topoJSON
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	for _, g := range top.Groups {
		for _, c := range g.CPUs {
			if g.Node >= 0 && g.Node != c%2 {
				t.Errorf("CPU%d (node %d) in %s of node %d", c, c%2, g.Name, g.Node)
			}
		}
	}
}

func TestTopoErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"topo"}, 2, "--cpus must be at least 1 (got 0)"},
		{[]string{"topo", "--cpus", "0"}, 2, "--cpus must be at least 1"},
		{[]string{"topo", "--cpus", "9000"}, 2, "at most 8192"},
		{[]string{"topo", "--cpus", "4", "--nodes", "5"}, 2, "more nodes than the 4 CPUs"},
		{[]string{"topo", "--cpus", "4", "--nodes", "-1"}, 2, "--nodes must be at least 1"},
		{[]string{"topo", "--cpus", "4", "--nodes", "2", "--node-cpus", "0-1;2-3"}, 2, "either --nodes or --node-cpus"},
		{[]string{"topo", "--cpus", "4", "--node-cpus", "0-1;1-3"}, 2, "CPUs 1 are listed on more than one node"},
		{[]string{"topo", "--cpus", "4", "--node-cpus", "0-1;3"}, 2, "CPUs 2 are on no node"},
		{[]string{"topo", "--cpus", "4", "--node-cpus", "0-1;2-7"}, 2, "node 1"},
		{[]string{"topo", "--cpus", "4", "--node-cpus", "0-1;;2-3"}, 2, "node 1 has no CPUs"},
		{[]string{"topo", "--cpus", "4", "--node-cpus", "0-x"}, 2, `bad region "0-x"`},
		{[]string{"topo", "--cpus", "4", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"topo", "--bogus"}, 2, "flag provided but not defined"},
		// A distribution tmigr_init's even-spread sizing cannot hold.
		{[]string{"topo", "--cpus", "64", "--node-cpus", "0-56;57;58;59;60;61;62;63"}, 1, "CPU 57 (node 1) needs more than the 2 hierarchy levels"},
	} {
		code, out, errs := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
		if out != "" {
			t.Errorf("%v: printed %q on stdout", tc.args, out)
		}
	}
	if code, out, errs := runCmd("topo", "-h"); code != 0 || !strings.Contains(out, "usage: tmigr topo") || errs != "" {
		t.Errorf("topo -h: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// FuzzTopoNodes: the flag parser never panics, and whatever it accepts is
// a valid node assignment.
func FuzzTopoNodes(f *testing.F) {
	f.Add(48, 2, "")
	f.Add(16, 0, "0-14:1/2;1-15:1/2")
	f.Add(4, 0, "0-1;;2-3")
	f.Add(4, 0, "N;0-2")
	f.Add(8192, 64, "")
	f.Add(-3, 0, "all")
	f.Fuzz(func(t *testing.T, cpus, nodes int, lists string) {
		if cpus > 10000 {
			cpus %= 10000
		}
		nodeOf, err := topoNodes(cpus, nodes, lists)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if len(nodeOf) != cpus {
			t.Fatalf("%d nodes for %d CPUs", len(nodeOf), cpus)
		}
		for c, n := range nodeOf {
			if n < 0 || n >= 64 {
				t.Fatalf("CPU%d on node %d", c, n)
			}
		}
	})
}
