package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

func init() {
	register("completion", "print a shell completion script: bash, zsh or fish", runCompletion)
}

const completionUsage = `usage: tmigr completion bash|zsh|fish

Prints a completion script for the shell, generated from the commands'
own flag tables: commands and subcommands, every flag (with its values
where they are a fixed set, file names where they are files), and the
operands (files for replay, experiment names for repro).

  bash  source <(tmigr completion bash)
        or save it as ~/.local/share/bash-completion/completions/tmigr
  zsh   source <(tmigr completion zsh)        (after compinit)
        or save it as _tmigr in a directory of $fpath
  fish  tmigr completion fish | source
        or save it as ~/.config/fish/completions/tmigr.fish
`

func runCompletion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("tmigr completion", completionUsage, stdout, stderr)
	fs.operands("the shell (bash, zsh or fish)", 1, 1, completion{kind: completeWords, words: []string{"bash", "zsh", "fish"}})
	if rc, ok := fs.parse(args); !ok {
		return rc
	}
	t := commandTree()
	var script string
	switch fs.Arg(0) {
	case "bash":
		script = bashCompletion(t)
	case "zsh":
		script = zshCompletion(t)
	case "fish":
		script = fishCompletion(t)
	default:
		return fs.usageError(fmt.Sprintf("unknown shell %q (want bash, zsh or fish)", fs.Arg(0)))
	}
	io.WriteString(stdout, script)
	return 0
}

// cmdNode is a command as completion sees it: its subcommands (a group)
// or its flags and operands.
type cmdNode struct {
	path     string // "lab record"; "" for tmigr itself
	name     string
	summary  string
	flags    []flagInfo
	operands completion
	subs     []*cmdNode
}

// commandTree describes every command, asking each what it is (see
// describer).
func commandTree() *cmdNode {
	root := &cmdNode{flags: []flagInfo{
		{name: "help", usage: "print the commands"},
		{name: "version", usage: "print the build"},
	}}
	addCommands(root, commands)
	help := &cmdNode{path: "help", name: "help", summary: "print a command's help"}
	root.subs = append(root.subs, help)
	sort.Slice(root.subs, func(i, j int) bool { return root.subs[i].name < root.subs[j].name })
	return root
}

func addCommands(n *cmdNode, s *commandSet) {
	for _, name := range s.names() {
		c := &cmdNode{path: strings.TrimSpace(n.path + " " + name), name: name, summary: s.table[name].summary}
		d := describe(s.table[name].run)
		switch {
		case d.set != nil:
			addCommands(c, d.set)
		default:
			c.flags = d.flagInfos()
			if d.flags != nil {
				c.operands = d.flags.ops.complete
			}
		}
		c.flags = append(c.flags, flagInfo{name: "help", usage: "print the help"})
		n.subs = append(n.subs, c)
	}
}

// walk calls f on n and every command under it.
func (n *cmdNode) walk(f func(*cmdNode)) {
	f(n)
	for _, s := range n.subs {
		s.walk(f)
	}
}

// helpPaths lists the paths "help ..." completes, with the subcommands
// each offers: "help" offers tmigr's commands, "help lab" lab's.
func (n *cmdNode) helpPaths() map[string][]*cmdNode {
	out := map[string][]*cmdNode{}
	n.walk(func(c *cmdNode) {
		if len(c.subs) == 0 || c.name == "help" {
			return
		}
		var subs []*cmdNode
		for _, s := range c.subs {
			if s.name != "help" {
				subs = append(subs, s)
			}
		}
		out[strings.TrimSpace("help "+c.path)] = subs
	})
	return out
}

// flagToken is how completion offers a flag: -o for one letter, --name
// otherwise (Go's flag package takes one dash or two alike).
func flagToken(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// kindWord is a value's or operand's completion as the scripts' tables
// hold it: "any", "file", "dir" or "words W1 W2 ...".
func (c completion) kindWord(value bool) string {
	switch c.kind {
	case completeFile:
		return "file"
	case completeDir:
		return "dir"
	case completeWords:
		return "words " + strings.Join(c.words, " ")
	}
	if value {
		return "any"
	}
	return ""
}

// oneLine makes a description fit a completion menu.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// shQuote quotes s for bash and zsh.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fishQuote quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// tables writes the four lookup functions every script uses, in the
// shell's syntax: prefix_subs PATH, prefix_flags PATH, prefix_value PATH
// NAME and prefix_operands PATH. item formats one entry of a list
// (name, description); caseOf formats a case arm.
type shellSyntax struct {
	quote    func(string) string
	item     func(name, desc string) string // one line of a list
	fnStart  func(name, expr string) string
	arm      func(patterns []string, body string) string
	fnEnd    string
	printf   string // the command that prints its arguments one a line
	joinPath string // how PATH and NAME are joined for prefix_value
}

func writeTables(b *strings.Builder, t *cmdNode, sx shellSyntax, prefix string) {
	list := func(items []string) string {
		q := make([]string, len(items))
		for i, it := range items {
			q[i] = sx.quote(it)
		}
		return sx.printf + " " + strings.Join(q, " ")
	}
	subsOf := func(nodes []*cmdNode) []string {
		var items []string
		for _, s := range nodes {
			items = append(items, sx.item(s.name, oneLine(s.summary)))
		}
		return items
	}

	b.WriteString(sx.fnStart(prefix+"_subs", "$1"))
	t.walk(func(n *cmdNode) {
		if len(n.subs) > 0 {
			b.WriteString(sx.arm([]string{n.path}, list(subsOf(n.subs))))
		}
	})
	hp := t.helpPaths()
	paths := make([]string, 0, len(hp))
	for p := range hp {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b.WriteString(sx.arm([]string{p}, list(subsOf(hp[p]))))
	}
	b.WriteString(sx.fnEnd)

	b.WriteString(sx.fnStart(prefix+"_flags", "$1"))
	t.walk(func(n *cmdNode) {
		if len(n.flags) == 0 {
			return
		}
		var items []string
		for _, f := range n.flags {
			items = append(items, sx.item(flagToken(f.name), oneLine(f.usage)))
		}
		b.WriteString(sx.arm([]string{n.path}, list(items)))
	})
	b.WriteString(sx.fnEnd)

	// Flags that take a value, grouped by what the value completes to.
	b.WriteString(sx.fnStart(prefix+"_value", "$1"+sx.joinPath+"$2"))
	byKind := map[string][]string{}
	var kinds []string
	t.walk(func(n *cmdNode) {
		for _, f := range n.flags {
			if !f.value {
				continue
			}
			k := f.complete.kindWord(true)
			if _, ok := byKind[k]; !ok {
				kinds = append(kinds, k)
			}
			byKind[k] = append(byKind[k], n.path+sx.joinPath+f.name)
		}
	})
	for _, k := range kinds {
		b.WriteString(sx.arm(byKind[k], sx.printf+" "+sx.quote(k)))
	}
	b.WriteString(sx.fnEnd)

	b.WriteString(sx.fnStart(prefix+"_operands", "$1"))
	t.walk(func(n *cmdNode) {
		if k := n.operands.kindWord(false); k != "" {
			b.WriteString(sx.arm([]string{n.path}, sx.printf+" "+sx.quote(k)))
		}
	})
	b.WriteString(sx.fnEnd)
}

func shSyntax(item func(name, desc string) string) shellSyntax {
	return shellSyntax{
		quote:   shQuote,
		item:    item,
		fnStart: func(name, expr string) string { return name + "() {\n\tcase \"" + expr + "\" in\n" },
		arm: func(patterns []string, body string) string {
			q := make([]string, len(patterns))
			for i, p := range patterns {
				q[i] = shQuote(p)
			}
			return "\t" + strings.Join(q, "|") + ") " + body + " ;;\n"
		},
		fnEnd:    "\tesac\n}\n\n",
		printf:   "printf '%s\\n'",
		joinPath: "/",
	}
}

func bashCompletion(t *cmdNode) string {
	var b strings.Builder
	b.WriteString(`# bash completion for tmigr, generated by 'tmigr completion bash'.
#   source <(tmigr completion bash)
# or save it as ~/.local/share/bash-completion/completions/tmigr

`)
	writeTables(&b, t, shSyntax(func(name, _ string) string { return name }), "_tmigr")
	b.WriteString(`# _tmigr_reply WHAT WORD sets COMPREPLY to WORD's completions as WHAT
# ("file", "dir", "words W...") says.
_tmigr_reply() {
	local l
	case $1 in
	file) compopt -o filenames 2>/dev/null; while IFS= read -r l; do COMPREPLY+=("$l"); done < <(compgen -f -- "$2") ;;
	dir) compopt -o filenames 2>/dev/null; while IFS= read -r l; do COMPREPLY+=("$l"); done < <(compgen -d -- "$2") ;;
	words\ *) while IFS= read -r l; do COMPREPLY+=("$l"); done < <(compgen -W "${1#words }" -- "$2") ;;
	esac
}

_tmigr() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev= cmdpath= ended= w v i=1
	COMPREPLY=()
	# The command path: the words that name subcommands, skipping the
	# flags and their values, up to "--".
	while ((i < COMP_CWORD)); do
		w=${COMP_WORDS[i]}
		if [[ -n $ended ]]; then
			:
		elif [[ $w == -- ]]; then
			ended=1
		elif [[ $w == -?* ]]; then
			if [[ $w != *=* ]]; then
				v=${w#-}; v=${v#-}
				if [[ -n $(_tmigr_value "$cmdpath" "$v") ]]; then
					((i++))
					if [[ ${COMP_WORDS[i]} == = ]]; then ((i++)); fi
				fi
			fi
		elif [[ $'\n'$(_tmigr_subs "$cmdpath")$'\n' == *$'\n'"$w"$'\n'* ]]; then
			cmdpath=${cmdpath:+$cmdpath }$w
		fi
		((i++))
	done
	if ((COMP_CWORD > 0)); then prev=${COMP_WORDS[COMP_CWORD-1]}; fi
	# A flag's value: "--flag value", or "--flag=value", which bash splits
	# at the '='.
	local flag=
	if [[ -z $ended ]]; then
		if [[ $cur == = && $prev == -?* ]]; then
			flag=$prev cur=
		elif [[ $prev == = ]] && ((COMP_CWORD > 1)) && [[ ${COMP_WORDS[COMP_CWORD-2]} == -?* ]]; then
			flag=${COMP_WORDS[COMP_CWORD-2]}
		elif [[ $prev == -?* && $prev != *=* ]]; then
			flag=$prev
		fi
	fi
	if [[ -n $flag ]]; then
		flag=${flag#-}; flag=${flag#-}
		v=$(_tmigr_value "$cmdpath" "$flag")
		if [[ -n $v ]]; then
			_tmigr_reply "$v" "$cur"
			return 0
		fi
	fi
	if [[ -z $ended && $cur == -* ]]; then
		_tmigr_reply "words $(_tmigr_flags "$cmdpath")" "$cur"
		return 0
	fi
	v=$(_tmigr_subs "$cmdpath")
	if [[ -z $ended && -n $v ]]; then
		_tmigr_reply "words $v" "$cur"
		return 0
	fi
	v=$(_tmigr_operands "$cmdpath")
	if [[ -n $v ]]; then _tmigr_reply "$v" "$cur"; fi
	return 0
}

complete -F _tmigr tmigr
`)
	return b.String()
}

func zshCompletion(t *cmdNode) string {
	var b strings.Builder
	b.WriteString(`#compdef tmigr
# zsh completion for tmigr, generated by 'tmigr completion zsh'.
#   source <(tmigr completion zsh)      (after compinit)
# or save it as _tmigr in a directory of $fpath

`)
	writeTables(&b, t, shSyntax(func(name, desc string) string {
		return strings.ReplaceAll(name, ":", `\:`) + ":" + desc
	}), "_tmigr")
	b.WriteString(`# _tmigr_offer WHAT completes the current word as WHAT ("file", "dir",
# "words W...") says.
_tmigr_offer() {
	local -a w
	case $1 in
	(file) _files ;;
	(dir) _files -/ ;;
	('words '*) w=(${=${1#words }}); compadd -a w ;;
	(*) return 1 ;;
	esac
}

_tmigr() {
	local cmdpath= ended= w v i=2
	local -a list
	# The command path: the words that name subcommands, skipping the
	# flags and their values, up to "--".
	while (( i < CURRENT )); do
		w=${words[i]}
		if [[ -n $ended ]]; then
			:
		elif [[ $w == -- ]]; then
			ended=1
		elif [[ $w == -?* ]]; then
			if [[ $w != *=* ]]; then
				v=${w#-}; v=${v#-}
				if [[ -n $(_tmigr_value "$cmdpath" "$v") ]]; then (( i++ )); fi
			fi
		else
			list=(${(f)"$(_tmigr_subs "$cmdpath")"})
			list=(${list%%:*})
			if (( ${list[(Ie)$w]} )); then cmdpath=${cmdpath:+$cmdpath }$w; fi
		fi
		(( i++ ))
	done
	local cur=${words[CURRENT]} prev=${words[CURRENT-1]}
	if [[ -z $ended && $cur == -?*=* ]]; then
		v=${cur%%=*}; v=${v#-}; v=${v#-}
		v=$(_tmigr_value "$cmdpath" "$v")
		compset -P '*='
		_tmigr_offer "$v"
		return
	fi
	if [[ -z $ended && $prev == -?* && $prev != *=* ]]; then
		w=${prev#-}; w=${w#-}
		v=$(_tmigr_value "$cmdpath" "$w")
		if [[ -n $v ]]; then
			_tmigr_offer "$v"
			return
		fi
	fi
	if [[ -z $ended && $cur == -* ]]; then
		list=(${(f)"$(_tmigr_flags "$cmdpath")"})
		_describe -t flags flag list
		return
	fi
	list=(${(f)"$(_tmigr_subs "$cmdpath")"})
	if [[ -z $ended && ${#list} -gt 0 ]]; then
		_describe -t commands command list
		return
	fi
	v=$(_tmigr_operands "$cmdpath")
	if [[ -n $v ]]; then _tmigr_offer "$v"; fi
}

if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then
	_tmigr "$@"
else
	compdef _tmigr tmigr
fi
`)
	return b.String()
}

func fishCompletion(t *cmdNode) string {
	var b strings.Builder
	b.WriteString(`# fish completion for tmigr, generated by 'tmigr completion fish'.
#   tmigr completion fish | source
# or save it as ~/.config/fish/completions/tmigr.fish

`)
	fish := shellSyntax{
		quote: fishQuote,
		item:  func(name, desc string) string { return name + "\t" + desc },
		fnStart: func(name, expr string) string {
			return "function " + name + "\n    switch \"" + strings.NewReplacer("$1", "$argv[1]", "$2", "$argv[2]").Replace(expr) + "\"\n"
		},
		arm: func(patterns []string, body string) string {
			q := make([]string, len(patterns))
			for i, p := range patterns {
				q[i] = fishQuote(p)
			}
			return "        case " + strings.Join(q, " ") + "\n            " + body + "\n"
		},
		fnEnd:    "    end\nend\n\n",
		printf:   "printf '%s\\n'",
		joinPath: "/",
	}
	writeTables(&b, t, fish, "__tmigr")
	b.WriteString(`# __tmigr_offer WHAT WORD PREFIX prints WORD's completions as WHAT ("file",
# "dir", "words W...") says, each after PREFIX.
function __tmigr_offer --argument-names what word prefix
    switch $what
        case file
            for p in (__fish_complete_path $word)
                echo $prefix$p
            end
        case dir
            for p in (__fish_complete_directories $word)
                echo $prefix$p
            end
        case 'words *'
            for w in (string split ' ' -- (string replace 'words ' '' -- $what))
                echo $prefix$w
            end
    end
end

function __tmigr_complete
    set -l toks (commandline -opc)
    set -l cur (commandline -ct)
    set -e toks[1]
    set -l cmdpath ''
    set -l ended 0
    set -l i 1
    # The command path: the words that name subcommands, skipping the
    # flags and their values, up to "--".
    while test $i -le (count $toks)
        set -l w $toks[$i]
        if test $ended = 1
        else if test "x$w" = x--
            set ended 1
        else if string match -q -- '-?*' $w
            if not string match -q -- '*=*' $w
                set -l v (__tmigr_value "$cmdpath" (string replace -r -- '^--?' '' $w))
                if test -n "$v"
                    set i (math $i + 1)
                end
            end
        else if contains -- $w (__tmigr_subs "$cmdpath" | string replace -r '\t.*' '')
            set cmdpath (string trim -- "$cmdpath $w")
        end
        set i (math $i + 1)
    end
    if test $ended = 0; and string match -q -- '-?*=*' $cur
        set -l parts (string split -m 1 = -- $cur)
        set -l v (__tmigr_value "$cmdpath" (string replace -r -- '^--?' '' $parts[1]))
        __tmigr_offer "$v" "$parts[2]" "$parts[1]="
        return
    end
    if test $ended = 0; and test (count $toks) -gt 0; and string match -q -- '-?*' $toks[-1]; and not string match -q -- '*=*' $toks[-1]
        set -l v (__tmigr_value "$cmdpath" (string replace -r -- '^--?' '' $toks[-1]))
        if test -n "$v"
            __tmigr_offer "$v" "$cur" ''
            return
        end
    end
    if test $ended = 0; and string match -q -- '-*' $cur
        __tmigr_flags "$cmdpath"
        return
    end
    set -l subs (__tmigr_subs "$cmdpath")
    if test $ended = 0; and test (count $subs) -gt 0
        printf '%s\n' $subs
        return
    end
    set -l v (__tmigr_operands "$cmdpath")
    if test -n "$v"
        __tmigr_offer "$v" "$cur" ''
    end
end

complete -c tmigr -f -a '(__tmigr_complete)'
`)
	return b.String()
}
