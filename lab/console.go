package lab

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// guestReport is what the guest printed between its markers.
type guestReport struct {
	Sections map[string]string // name → text, each line ending in "\n"
	Done     bool              // the guest printed its last marker
}

// ConsoleError is a console log that does not hold a complete recording.
// Tail holds its last lines, which usually tell why (a panic, a timeout).
type ConsoleError struct {
	Reason string
	Tail   []string
}

func (e *ConsoleError) Error() string {
	if len(e.Tail) == 0 {
		return e.Reason
	}
	return e.Reason + "; the console's last lines:\n\t" + strings.Join(e.Tail, "\n\t")
}

const tailLines = 15

// parseConsole reads the guest's serial console log. Lines may end in
// "\r\n" (the tty adds the "\r"); text outside the sections (boot messages,
// QEMU's own) is ignored.
func parseConsole(log []byte, nonce string) (*guestReport, error) {
	marker := markerPrefix + " " + nonce + " "
	lines := strings.Split(string(log), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	fail := func(format string, args ...any) error {
		return &ConsoleError{Reason: fmt.Sprintf(format, args...), Tail: tail(lines, tailLines)}
	}
	rep := &guestReport{Sections: map[string]string{}}
	open, openLine := "", 0
	var body strings.Builder
	sawMarker := false
	for i, l := range lines {
		j := strings.Index(l, marker)
		if j < 0 {
			if open != "" {
				body.WriteString(l)
				body.WriteByte('\n')
			}
			continue
		}
		sawMarker = true
		if rep.Done {
			return nil, fail("console line %d: %q after the guest's last marker", i+1, l[j:])
		}
		verb, arg, _ := strings.Cut(l[j+len(marker):], " ")
		switch verb {
		case "begin":
			if open != "" {
				return nil, fail("console line %d: section %q begins inside section %q (begun at line %d)", i+1, arg, open, openLine)
			}
			if arg == "" {
				return nil, fail("console line %d: a section without a name", i+1)
			}
			if _, dup := rep.Sections[arg]; dup {
				return nil, fail("console line %d: section %q a second time", i+1, arg)
			}
			if j > 0 {
				return nil, fail("console line %d: %q before the marker of section %q", i+1, l[:j], arg)
			}
			open, openLine = arg, i+1
			body.Reset()
		case "end":
			if arg != open {
				return nil, fail("console line %d: end of section %q, but the open section is %q", i+1, arg, open)
			}
			// A kernel message cut into the section's last line
			// would be glued to the marker.
			if j > 0 {
				return nil, fail("console line %d: %q before the end marker of section %q", i+1, l[:j], arg)
			}
			rep.Sections[open] = body.String()
			open = ""
		case "done":
			if open != "" {
				return nil, fail("console line %d: done inside section %q", i+1, open)
			}
			rep.Done = true
		case "stage":
			if open != "" {
				return nil, fail("console line %d: a stage line inside section %q", i+1, open)
			}
		case "error":
			return nil, fail("the guest failed: %s", arg)
		default:
			return nil, fail("console line %d: unknown marker %q", i+1, verb)
		}
	}
	switch {
	case open != "":
		return nil, fail("the console log ends inside section %q (begun at line %d): the guest was cut off before it finished (timeout, crash, or QEMU killed)", open, openLine)
	case !sawMarker:
		return nil, fail("the guest printed nothing of the recording: its /init did not run or ended at once (a kernel that did not boot?)")
	case !rep.Done:
		return nil, fail("the console log stops after %d sections without the guest's last marker (cut off?)", len(rep.Sections))
	}
	return rep, nil
}

func tail(lines []string, n int) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// section returns a section that must be present.
func (r *guestReport) section(name string) (string, error) {
	s, ok := r.Sections[name]
	if !ok {
		return "", fmt.Errorf("the guest's report lacks its %q section", name)
	}
	return s, nil
}

// trace decodes the trace section: base64 lines of gzip-compressed text.
func (r *guestReport) trace() ([]byte, error) {
	s, err := r.section(secTrace)
	if err != nil {
		return nil, err
	}
	text, err := decodeFile(s)
	if err != nil {
		return nil, fmt.Errorf("trace: %v", err)
	}
	if len(text) == 0 {
		return nil, errors.New("trace: the guest sent an empty trace")
	}
	return text, nil
}

// decodeFile decodes a section in which the guest printed a file (gzip -c
// FILE | base64): the base64 lines, the kernel's messages that cut into
// them removed, of the gzip-compressed bytes.
func decodeFile(s string) ([]byte, error) {
	var raw bytes.Buffer
	for i, l := range dropKernelMessages(strings.Split(strings.TrimSuffix(s, "\n"), "\n")) {
		b, err := base64.StdEncoding.DecodeString(l)
		if err != nil {
			return nil, fmt.Errorf("line %d of the encoded file is not base64 (%v): the console mangled it", i+1, err)
		}
		raw.Write(b)
	}
	if raw.Len() == 0 {
		return nil, errors.New("the guest sent nothing")
	}
	zr, err := gzip.NewReader(&raw)
	if err != nil {
		return nil, fmt.Errorf("not gzip data: %v", err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%v (the file was cut short or damaged on the console)", err)
	}
	return text, nil
}

// kernelMessage matches a kernel message on the console ("[   12.764791]
// Disabling IRQ #4"): printk writes a message of high enough level to the
// serial console whatever the guest's program is writing there, so it can
// land inside a base64 line, which it ends, the line's rest following on
// the next. Neither '[' nor ' ' is a base64 character.
var kernelMessage = regexp.MustCompile(`\[ *[0-9]+\.[0-9]+\] .*$`)

// dropKernelMessages takes the kernel's messages out of the encoded
// trace's lines: a message alone on its line goes, and one that cut a line
// goes with the line break it brought, the line's two halves joined again.
// What else the console damaged, gzip's checksum still finds.
func dropKernelMessages(lines []string) []string {
	out := make([]string, 0, len(lines))
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		loc := kernelMessage.FindStringIndex(l)
		if loc == nil {
			out = append(out, l)
			continue
		}
		l = l[:loc[0]]
		if l == "" {
			continue
		}
		if i+1 < len(lines) {
			i++
			l += lines[i]
		}
		out = append(out, l)
	}
	return out
}

// release returns the kernel's upstream release ("6.12.117") from the
// uname section ("6.12.117+deb13-cloud-amd64"), or, when the version
// section names a Debian package version of the same series, from that:
// Debian's 6.1 kernels are "6.1.0-56-cloud-amd64" to uname and "... Debian
// 6.1.192-2 (2026-...)" in /proc/version.
func (r *guestReport) release() (string, error) {
	s, err := r.section(secUname)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	m := releaseRE.FindString(s)
	if m == "" {
		return "", fmt.Errorf("uname -r %q does not start with a kernel version", s)
	}
	if v, err := r.section(secVersion); err == nil {
		// "(gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0, ...) ... Debian
		// 6.1.192-3": the compiler's version comes first.
		for _, d := range debianVersionRE.FindAllStringSubmatch(v, -1) {
			if seriesOf(d[1]) == seriesOf(m) {
				return d[1], nil
			}
		}
	}
	return m, nil
}

var (
	releaseRE       = regexp.MustCompile(`^\d+\.\d+(\.\d+)?`)
	debianVersionRE = regexp.MustCompile(`Debian (\d+\.\d+\.\d+)-`)
)

// hierarchy returns the kernel's "Timer migration:" boot message from the
// dmesg section, or nil when it logged none (a kernel of one CPU).
func (r *guestReport) hierarchy() (*ftrace.Hierarchy, error) {
	s, err := r.section(secDmesg)
	if err != nil {
		return nil, err
	}
	var found *ftrace.Hierarchy
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, "Timer migration: ") {
			continue
		}
		h, err := ftrace.ParseHierarchy(l)
		if err != nil {
			return nil, fmt.Errorf("dmesg: %v", err)
		}
		if found != nil && *found != h {
			return nil, fmt.Errorf("dmesg: two different %q lines", "Timer migration:")
		}
		found = &h
	}
	return found, nil
}

// checkShape compares the guest's view of its CPUs and nodes with the spec:
// a recording of another machine than the one asked for must not pass.
func (r *guestReport) checkShape(s *Spec) error {
	on, err := r.section(secOnline)
	if err != nil {
		return err
	}
	online, err := cpumask.Parse(strings.TrimSpace(on))
	if err != nil {
		return fmt.Errorf("the guest's online CPUs: %v", err)
	}
	want := s.finalOnline()
	if !online.Equal(want) {
		all := cpumask.Range(0, s.CPUs-1)
		if off := all.AndNot(want); !off.Empty() {
			return fmt.Errorf("the guest has CPUs %s online, not %s (%s offline by the run-time changes)", online, want, off)
		}
		return fmt.Errorf("the guest has CPUs %s online, not %s", online, want)
	}
	nodes, err := r.section(secNodes)
	if err != nil {
		return err
	}
	got := map[int]cpumask.Mask{}
	for _, l := range strings.Split(strings.TrimSpace(nodes), "\n") {
		var id int
		idText, list, _ := strings.Cut(l, " ")
		if _, err := fmt.Sscanf(idText, "%d", &id); err != nil {
			return fmt.Errorf("the guest's node list: line %q", l)
		}
		m, err := cpumask.Parse(strings.TrimSpace(list))
		if err != nil {
			return fmt.Errorf("the guest's node %d: %v", id, err)
		}
		got[id] = m
	}
	if len(got) != s.Nodes {
		return fmt.Errorf("the guest has %d NUMA nodes, not %d", len(got), s.Nodes)
	}
	// A node's cpulist in sysfs holds its online CPUs only: x86 takes
	// an offline CPU out of its node's mask (numa_remove_cpu).
	for i, n := range s.NodeCPUs {
		nodeWant := n.And(want)
		if m, ok := got[i]; !ok || !m.Equal(nodeWant) {
			return fmt.Errorf("the guest's node %d holds CPUs %q, not %s", i, m.String(), nodeWant)
		}
	}
	return nil
}

// finalOnline returns the CPUs online at the end of the recording: all of
// them, less those the run-time changes (At) took offline and did not
// bring back.
func (s *Spec) finalOnline() cpumask.Mask {
	on := cpumask.Range(0, s.CPUs-1)
	for _, c := range s.At {
		switch c.Kind {
		case ftrace.ChangeOffline:
			on.Clear(c.CPU)
		case ftrace.ChangeOnline:
			on.Set(c.CPU)
		}
	}
	return on
}
