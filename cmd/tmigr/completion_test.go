package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func script(t *testing.T, shell string) string {
	t.Helper()
	code, out, errs := runCmd("completion", shell)
	if code != 0 || errs != "" {
		t.Fatalf("completion %s: exit %d, %q", shell, code, errs)
	}
	return out
}

// helpFlags lists the flags a command's help prints (PrintDefaults'
// "  -name" lines), read from the help itself rather than the describer.
func helpFlags(t *testing.T, path []string) []string {
	_, out, errs := runCmd(append(slices.Clone(path), "-h")...)
	var names []string
	for _, l := range strings.Split(out+errs, "\n") {
		if m := defaultsLine.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// Every script parses, and names every command, subcommand and flag.
func TestCompletionScriptsNameEverything(t *testing.T) {
	tree := commandTree()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		s := script(t, shell)
		if bin, err := exec.LookPath(shell); err != nil {
			t.Logf("%s not installed: its script's syntax is not checked", shell)
		} else if out, err := exec.Command(bin, "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
		flags := 0
		tree.walk(func(n *cmdNode) {
			if n.name != "" && !strings.Contains(s, "'"+n.name+"'") && !strings.Contains(s, "'"+n.name+"\t") && !strings.Contains(s, "'"+n.name+":") {
				t.Errorf("%s: no command %q", shell, n.path)
			}
			if n.path == "" || len(n.subs) > 0 || n.name == "help" {
				return
			}
			want := helpFlags(t, strings.Fields(n.path))
			if len(want) == 0 {
				if n.name != "version" && n.name != "completion" {
					t.Errorf("tmigr %s -h lists no flags", n.path)
				}
			}
			for _, f := range want {
				flags++
				if !strings.Contains(s, "'"+flagToken(f)) || !strings.Contains(s, n.path+"/"+f+"'") && hasValue(n, f) {
					t.Errorf("%s: tmigr %s: flag %s missing", shell, n.path, f)
				}
			}
		})
		if flags < 100 {
			t.Errorf("%s: only %d flags checked", shell, flags)
		}
	}
	// The describer sees the converted commands' own flag sets.
	for _, path := range converted {
		if n := find(tree, path); n == nil || len(n.subs) > 0 {
			t.Errorf("%s: not a command of the tree", path)
		}
	}
	for _, path := range converted {
		cmd := strings.Fields(path)
		var c command
		if len(cmd) == 1 {
			c = commands.table[cmd[0]]
		} else {
			c = describe(commands.table[cmd[0]].run).set.table[cmd[1]]
		}
		if describe(c.run).flags == nil {
			t.Errorf("%s does not parse with a flagSet", path)
		}
	}
}

func hasValue(n *cmdNode, name string) bool {
	for _, f := range n.flags {
		if f.name == name {
			return f.value
		}
	}
	return false
}

func find(n *cmdNode, path string) *cmdNode {
	var found *cmdNode
	n.walk(func(c *cmdNode) {
		if c.path == path {
			found = c
		}
	})
	return found
}

// completionCases are command lines (the cursor at the end) and some of
// what they must complete to, in every shell. FILES stands for the files
// of the working directory.
var completionCases = []struct {
	line string
	want []string
	not  []string
}{
	{"tmigr ", []string{"sim", "replay", "repro", "topo", "lab", "live", "help", "version", "completion"}, nil},
	{"tmigr lab re", []string{"record"}, nil},
	{"tmigr live la", []string{"lateness"}, nil},
	{"tmigr sim --pol", []string{"--policy"}, nil},
	{"tmigr sim --cpus 4 --policy p", []string{"pull", "pull-isolated", "push"}, []string{"none"}},
	{"tmigr sim --platform ", []string{"server", "zynq-7020"}, nil},
	{"tmigr sim --trace ", []string{"FILES"}, nil},
	{"tmigr replay --json ", []string{"FILES"}, nil},
	{"tmigr replay a.txt -", []string{"--json", "--cpus"}, []string{"--policy"}},
	{"tmigr replay a.txt -- ", []string{"FILES"}, nil},
	{"tmigr repro ", []string{"isolation", "panic", "hrtimer-soft", "kernbench"}, nil},
	{"tmigr help ", []string{"sim", "lab"}, nil},
	{"tmigr help lab ", []string{"record", "compare", "matrix"}, nil},
	{"tmigr lab record --cpus 4 --rt", []string{"--rt-sleepers"}, nil},
	{"tmigr live lateness --idle h", []string{"halt", "haltpoll"}, nil},
	{"tmigr completion ", []string{"bash", "zsh", "fish"}, nil},
	{"tmigr -", []string{"--help", "--version"}, nil},
}

// files are the working directory's files in completionCases.
var files = []string{"a.txt", "b.trace"}

func completionDir(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func checkCompletions(t *testing.T, shell, line string, got []string, want, not []string) {
	t.Helper()
	for i, g := range got {
		g, _, _ = strings.Cut(g, "\t") // fish's description
		g, _, _ = strings.Cut(g, ":")  // zsh's
		got[i] = strings.TrimSpace(g)
	}
	for _, w := range want {
		ws := []string{w}
		if w == "FILES" {
			ws = files
		}
		for _, w := range ws {
			if !slices.Contains(got, w) {
				t.Errorf("%s: %q: %q not offered (got %q)", shell, line, w, got)
			}
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%s: %q: %q offered", shell, line, n)
		}
	}
}

// The bash script completes: its function is run with COMP_WORDS set as
// bash sets them.
func TestBashCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := completionDir(t)
	sc := filepath.Join(dir, "tmigr.bash")
	if err := os.WriteFile(sc, []byte(script(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	const driver = `source "$1"; read -ra COMP_WORDS <<< "$2"; [[ $2 == *' ' ]] && COMP_WORDS+=('')
COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tmigr; printf '%s\n' "${COMPREPLY[@]}"`
	cases := append(slices.Clone(completionCases), struct {
		line string
		want []string
		not  []string
	}{"tmigr sim --trace=", []string{"FILES"}, nil})
	for _, tc := range cases {
		line := tc.line
		if strings.HasSuffix(line, "=") {
			// bash splits "--trace=" into "--trace" and "=".
			line = strings.TrimSuffix(line, "=") + " ="
		}
		cmd := exec.Command(bash, "--norc", "-c", driver, "bash", sc, line)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		checkCompletions(t, "bash", tc.line, strings.Fields(string(out)), tc.want, tc.not)
	}
}

// The fish script completes, as fish's own "complete -C" reports.
func TestFishCompletes(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("no fish")
	}
	dir := completionDir(t)
	sc := filepath.Join(dir, "tmigr.fish")
	if err := os.WriteFile(sc, []byte(script(t, "fish")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range completionCases {
		cmd := exec.Command(fish, "--no-config", "-c", "source $argv[1]; complete -C $argv[2]", sc, tc.line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		checkCompletions(t, "fish", tc.line, strings.Split(strings.TrimSpace(string(out)), "\n"), tc.want, tc.not)
	}
	// --flag=value completes the value after the '='.
	cmd := exec.Command(fish, "--no-config", "-c", "source $argv[1]; complete -C 'tmigr live lateness --idle=h'", sc)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--idle=haltpoll") {
		t.Errorf("--idle=h: %v %q", err, out)
	}
}

// The zsh script's function is run with zsh's completion builtins stubbed
// to print what they are offered (zsh itself filters by the prefix).
func TestZshCompletes(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh")
	}
	dir := completionDir(t)
	sc := filepath.Join(dir, "_tmigr")
	if err := os.WriteFile(sc, []byte(script(t, "zsh")), 0o644); err != nil {
		t.Fatal(err)
	}
	const driver = `compdef() {}
_describe() { shift 2; print -rl -- ${(P)2} }
compadd() { print -rl -- ${(P)2} }
_files() { print -rl -- *(N) }
compset() {}
source $1
words=(${=2}); [[ $2 == *' ' ]] && words+=('')
CURRENT=${#words}
_tmigr`
	for _, tc := range completionCases {
		cmd := exec.Command(zsh, "-f", "-c", driver, "zsh", sc, tc.line)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%q: %v\n%s", tc.line, err, out)
			continue
		}
		cur := tc.line[strings.LastIndex(tc.line, " ")+1:]
		var got []string
		for _, g := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(g, cur) {
				got = append(got, g)
			}
		}
		checkCompletions(t, "zsh", tc.line, got, tc.want, tc.not)
	}
}
