package tracedat

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// pageLayout is the ring buffer's page header, from header_page:
//
//	field: u64 timestamp;	offset:0;	size:8;	signed:0;
//	field: local_t commit;	offset:8;	size:8;	signed:1;
//	field: int overwrite;	offset:8;	size:1;	signed:1;
//	field: char data;	offset:16;	size:4080;	signed:0;
type pageLayout struct {
	tsOff, commitOff, commitSize, dataOff int
}

func parsePageLayout(text string) (pageLayout, error) {
	var p pageLayout
	seen := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "field:") {
			continue
		}
		fl, err := parseField(t)
		if err != nil {
			return p, err
		}
		switch fl.Name {
		case "timestamp":
			if fl.Size != 8 {
				return p, fmt.Errorf("timestamp of %d bytes, not 8", fl.Size)
			}
			p.tsOff = fl.Offset
		case "commit":
			if fl.Size != 4 && fl.Size != 8 {
				return p, fmt.Errorf("commit of %d bytes, not 4 or 8", fl.Size)
			}
			p.commitOff, p.commitSize = fl.Offset, fl.Size
		case "data":
			p.dataOff = fl.Offset
		default:
			continue
		}
		seen[fl.Name] = true
	}
	if !seen["timestamp"] || !seen["commit"] || !seen["data"] {
		return p, errors.New("lacks the timestamp, commit or data field")
	}
	if p.tsOff+8 > p.dataOff || p.commitOff+p.commitSize > p.dataOff || p.dataOff > 4096 {
		return p, fmt.Errorf("fields overlap the data at %d", p.dataOff)
	}
	return p, nil
}

// symtab is the kernel's symbol table, sorted by address.
type symtab []ksym

type ksym struct {
	addr   uint64
	name   string
	module string
}

// parseKallsyms reads /proc/kallsyms: "ffffffff81000000 T _stext" with
// "\t[module]" after a module's symbols. Lines it cannot read and symbols
// at address 0 (kptr_restrict hides the addresses) are dropped.
func parseKallsyms(b []byte) symtab {
	var t symtab
	for line := range strings.SplitSeq(string(b), "\n") {
		a, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		addr, err := strconv.ParseUint(a, 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		_, rest, ok = strings.Cut(rest, " ")
		if !ok {
			continue
		}
		name, mod, _ := strings.Cut(rest, "\t")
		mod = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(mod), "["), "]")
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		t = append(t, ksym{addr: addr, name: name, module: mod})
	}
	slices.SortStableFunc(t, func(a, b ksym) int { return cmp.Compare(a.addr, b.addr) })
	return t
}

func symAt(s ksym, addr uint64) int { return cmp.Compare(s.addr, addr) }

// lookup finds the symbol addr lies in: the last one at or below addr, and
// below the next symbol's address. An address past the last symbol has
// none.
func (t symtab) lookup(addr uint64) (name, module string, off uint64, ok bool) {
	i, found := slices.BinarySearchFunc(t, addr, symAt)
	if !found {
		if i == 0 || i == len(t) {
			return "", "", 0, false
		}
		i--
	}
	// Several names at one address: the kernel's kallsyms_lookup picks
	// the first listed one; so does this (SortStable keeps file order).
	for i > 0 && t[i-1].addr == t[i].addr {
		i--
	}
	return t[i].name, t[i].module, addr - t[i].addr, true
}

// parseCmdlines reads saved_cmdlines: "1234 bash" a line.
func parseCmdlines(b []byte) map[int32]string {
	m := map[int32]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		p, comm, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		pid, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			continue
		}
		m[int32(pid)] = comm
	}
	return m
}
