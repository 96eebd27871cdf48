package kernel

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a kernel version: VERSION.PATCHLEVEL.SUBLEVEL of the
// kernel's Makefile, "6.12.118".
type Version struct {
	Major, Minor, Patch int
}

// V returns the version major.minor.patch.
func V(major, minor, patch int) Version { return Version{major, minor, patch} }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or +1 as v is older than, the same as or newer
// than w.
func (v Version) Compare(w Version) int {
	for _, d := range [...]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// AtLeast reports whether v is w or newer.
func (v Version) AtLeast(w Version) bool { return v.Compare(w) >= 0 }

// Series returns the version's major.minor series as "6.12".
func (v Version) Series() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Release is a kernel release string (uname -r, /proc/sys/kernel/osrelease)
// taken apart.
type Release struct {
	// Raw is the release as given, surrounding blanks removed.
	Raw string
	Version
	// Local is what follows the numbers: the EXTRAVERSION and
	// LOCALVERSION ("-1-rt-amd64", "-rc3+", ".el9.x86_64"), "" for none.
	Local string
	// RC is the release candidate number of a mainline "-rcN" release, 0
	// for a release. An rc of 6.19 already holds 6.19's merge window, so
	// the model treats it as 6.19.
	RC int
	// PatchUnknown is set when the release names a distribution ABI
	// instead of the stable patch level: Debian's "6.1.0-18-amd64" and
	// Ubuntu's "6.8.0-45-generic" run 6.1.N and 6.8.N with N not in the
	// string (/proc/version has it). Version.Patch is then 0, and switches
	// that came to the series by a stable backport are unknown (see
	// Switch.Backport).
	PatchUnknown bool
	// RT is set when Local names a PREEMPT_RT flavour ("-rt", "realtime",
	// ".rt7", "+rt"). It is a hint: the kernel's config or
	// /sys/kernel/realtime say for sure.
	RT bool
}

// ParseRelease reads a kernel release string: two or three numbers
// separated by dots, then anything ("6.12.118", "7.3.0-1-rt-amd64",
// "6.19.0-tmigr-sim", "7.0.13-200.fc44.x86_64", "6.19-rc1").
func ParseRelease(s string) (Release, error) {
	raw := strings.TrimSpace(s)
	r := Release{Raw: raw}
	if raw == "" {
		return Release{}, fmt.Errorf("kernel release: empty")
	}
	if strings.ContainsAny(raw, " \t\n\r") {
		return Release{}, fmt.Errorf("kernel release %q: holds a blank", clip(raw))
	}
	rest := raw
	nums := [3]*int{&r.Major, &r.Minor, &r.Patch}
	n := 0
	for n < 3 {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 6 {
			break
		}
		v, _ := strconv.Atoi(rest[:i])
		*nums[n] = v
		n++
		rest = rest[i:]
		if n == 3 || !strings.HasPrefix(rest, ".") || len(rest) < 2 || rest[1] < '0' || rest[1] > '9' {
			break
		}
		rest = rest[1:]
	}
	if n < 2 {
		return Release{}, fmt.Errorf("kernel release %q: want MAJOR.MINOR[.PATCH] at the start", clip(raw))
	}
	if r.Major < 1 || r.Major > 99 || r.Minor > 999 {
		return Release{}, fmt.Errorf("kernel release %q: version %d.%d is out of range", clip(raw), r.Major, r.Minor)
	}
	r.Local = rest
	if after, ok := strings.CutPrefix(rest, "-rc"); ok {
		i := 0
		for i < len(after) && i < 6 && after[i] >= '0' && after[i] <= '9' {
			i++
		}
		if i > 0 {
			r.RC, _ = strconv.Atoi(after[:i])
		}
	}
	if r.Patch == 0 && r.RC == 0 && abiNumber(rest) {
		r.PatchUnknown = true
	}
	low := strings.ToLower(rest)
	r.RT = strings.Contains(low, "-rt") || strings.Contains(low, ".rt") || strings.Contains(low, "+rt") || strings.Contains(low, "realtime") ||
		strings.Contains(low, "preempt_rt")
	return r, nil
}

// abiNumber reports whether local starts with "-N-" or "-N." with N a
// number: a distribution's ABI name after x.y.0.
func abiNumber(local string) bool {
	s, ok := strings.CutPrefix(local, "-")
	if !ok {
		return false
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i < len(s) && (s[i] == '-' || s[i] == '.')
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
