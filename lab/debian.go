package lab

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// How Debian packages a kernel, series by series (amd64; FLAV is cloud or
// rt; ABI is the kernel's ABI name, the part of "uname -r" before the
// flavour):
//
//	series     suites                         ABI            image in                          config in
//	6.1        bookworm, bookworm-security    6.1.0-56       linux-image-ABI-FLAV-amd64[-unsigned]   the same, /boot/config-*
//	6.12       bookworm-backports, trixie,    6.12.118+deb13 linux-image-ABI-FLAV-amd64[-unsigned]   the same, /boot/config-*
//	           trixie-security
//	6.16-6.18  trixie-backports               6.18.15+deb13  linux-image-ABI-FLAV-amd64             linux-base-ABI-FLAV-amd64 (6.18)
//	6.19-7.3   trixie-backports, sid          7.3.4+deb13    linux-binary[-unsigned]-ABI-FLAV-amd64 linux-base-ABI-FLAV-amd64
//
// From 6.19 on linux-image-ABI-FLAV-amd64 is a package of 2 KB that only
// depends on linux-binary-* (the image: /boot/vmlinuz-* when signed,
// /usr/lib/modules/*/vmlinuz.unsigned when not), linux-base-* (config,
// System.map) and linux-modules-*. The archive no longer holds the
// linux-base packages of 6.18, 6.19, 7.0 and 7.1 (their linux-image
// packages still depend on them), so those releases have no config; the
// recorder then takes the config of the nearest release that has one and
// says so in the recording's note. Debian's configuration of a flavour
// changes little from one release to the next, and the recorder reads only
// HZ and the options a diskless guest needs (requiredConfig) from it; the
// booted kernel's own release is what the recording names.
//
// The ABI of 6.1 does not carry the upstream release (6.1.0-56 is 6.1.192);
// every release's upstream version is taken from its package's Debian
// version ("6.1.192-2", "7.3.4-1~bpo13+1").

// debianPackage matches the kernel packages of amd64: its kind, the ABI, the
// flavour and whether it is the unsigned image.
var debianPackage = regexp.MustCompile(`^linux-(image|binary|binary-unsigned|base)-(\d+\.\d+\.\d+(?:-\d+)?(?:\+[a-z0-9.~]+)?)-(cloud|rt)-amd64(-unsigned)?$`)

// debianRelease is one kernel release of one flavour as the archive has it.
type debianRelease struct {
	ABI      string // "7.3.4+deb13", "6.1.0-56"
	Upstream string // "7.3.4", "6.1.192": from the Debian version
	Version  string // the Debian version of the image package, "7.3.4-1~bpo13+1"
	// Image is the package that holds the kernel image, in order of
	// preference: linux-binary-unsigned-*, linux-binary-*,
	// linux-image-*-unsigned, linux-image-* (a signed image boots as
	// well with -kernel).
	Image string
	// Config is the package that holds the config when it is not Image:
	// linux-base-*; "" when Image holds it (6.1, 6.12) or none exists.
	Config string
	// Split is set for the releases whose linux-image-* package holds
	// no config (6.16 on): the config is in Config, if anywhere.
	Split bool
}

// hasConfig reports whether the archive has the release's config.
func (r *debianRelease) hasConfig() bool { return !r.Split || r.Config != "" }

// flavourName is the Debian flavour's name.
func flavourName(f Flavour) string {
	if f == RT {
		return "rt"
	}
	return "cloud"
}

// kernelCandidates returns, of the package names, those that may belong to
// a kernel of flavour f in series (""= any), for a look-up of their
// versions.
func kernelCandidates(names []string, f Flavour, series string) []string {
	var out []string
	for _, n := range names {
		m := debianPackage.FindStringSubmatch(n)
		if m == nil || m[3] != flavourName(f) {
			continue
		}
		if series != "" && seriesOf(m[2]) != series {
			continue
		}
		out = append(out, n)
	}
	return out
}

// seriesOf returns "A.B" of a version or ABI "A.B.C...".
func seriesOf(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
}

// debianReleases groups the packages of flavour f (names with their
// candidate Debian versions) into releases. A release without an image
// package is left out.
func debianReleases(versions map[string]string, f Flavour) []debianRelease {
	type parts struct {
		image, imageUnsigned, binary, binaryUnsigned, base string
	}
	byABI := map[string]*parts{}
	for n := range versions {
		m := debianPackage.FindStringSubmatch(n)
		if m == nil || m[3] != flavourName(f) {
			continue
		}
		p := byABI[m[2]]
		if p == nil {
			p = &parts{}
			byABI[m[2]] = p
		}
		switch {
		case m[1] == "image" && m[4] != "":
			p.imageUnsigned = n
		case m[1] == "image":
			p.image = n
		case m[1] == "binary" && m[4] == "":
			p.binary = n
		case m[1] == "binary-unsigned" && m[4] == "":
			p.binaryUnsigned = n
		case m[1] == "base" && m[4] == "":
			p.base = n
		}
	}
	var out []debianRelease
	for abi, p := range byABI {
		r := debianRelease{ABI: abi, Config: p.base}
		switch {
		case p.binaryUnsigned != "":
			r.Image, r.Split = p.binaryUnsigned, true
		case p.binary != "":
			r.Image, r.Split = p.binary, true
		case p.imageUnsigned != "":
			r.Image = p.imageUnsigned
		case p.image != "":
			r.Image = p.image
		default:
			continue
		}
		r.Version = versions[r.Image]
		// 6.16 to 6.18: the image package holds the image and modules,
		// the config went to linux-base.
		if !r.Split && compareVersions(seriesOf(abi), "6.16") >= 0 {
			r.Split = true
		}
		up, _, _ := strings.Cut(r.Version, "-")
		if !isUpstreamVersion(up) || strings.Count(up, ".") != 2 || seriesOf(up) != seriesOf(abi) {
			continue // not a version we can name
		}
		r.Upstream = up
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b debianRelease) int {
		if c := compareVersions(a.Upstream, b.Upstream); c != 0 {
			return c
		}
		if naturalLess(a.ABI, b.ABI) {
			return -1
		}
		if naturalLess(b.ABI, a.ABI) {
			return 1
		}
		return 0
	})
	return out
}

// pickRelease returns the newest release matching want: a series ("7.3")
// or an exact upstream release ("7.3.4"). Among releases of one upstream
// version the newest ABI wins (deb13.1 over deb13 over deb12).
func pickRelease(rels []debianRelease, f Flavour, want string) (debianRelease, error) {
	var best *debianRelease
	for i := range rels {
		r := &rels[i]
		if r.Upstream == want || seriesOf(r.Upstream) == want && strings.Count(want, ".") == 1 {
			best = r // sorted: the last match is the newest
		}
	}
	if best != nil {
		return *best, nil
	}
	var have []string
	for _, r := range rels {
		if !slices.Contains(have, seriesOf(r.Upstream)) {
			have = append(have, seriesOf(r.Upstream))
		}
	}
	what := "kernel " + want
	if strings.Count(want, ".") == 1 {
		what = "a " + want + " kernel"
	} else {
		var near []string
		for _, r := range rels {
			if seriesOf(r.Upstream) == seriesOf(want) {
				near = append(near, r.Upstream)
			}
		}
		if len(near) > 0 {
			return debianRelease{}, fmt.Errorf("no %s in the %s flavour (linux-*-%s-amd64): its series has %s", what, f, flavourName(f), strings.Join(near, ", "))
		}
	}
	return debianRelease{}, fmt.Errorf("no package of %s in the %s flavour (linux-*-%s-amd64); the archive has the series %s", what, f, flavourName(f), strings.Join(have, ", "))
}

// nearestConfig returns the release nearest to r that has a config of its
// own: the one whose version is closest (by series, then by patch level),
// the newer of two equally near.
func nearestConfig(rels []debianRelease, r debianRelease) (debianRelease, bool) {
	var best *debianRelease
	var bestD [2]int
	for i := range rels {
		c := &rels[i]
		if !c.hasConfig() || !c.Split || c.Config == "" {
			// Only linux-base packages (1 MB); an old image package
			// would mean 50 MB for a config.
			continue
		}
		d := versionDistance(r.Upstream, c.Upstream)
		if best == nil || d[0] < bestD[0] || d[0] == bestD[0] && d[1] <= bestD[1] {
			best, bestD = c, d
		}
	}
	if best == nil {
		return debianRelease{}, false
	}
	return *best, true
}

// versionDistance is how far apart release b is from release a: the
// number of series between them (a major version holding 20), then, within
// one series, the difference of their patch levels, and across series how
// far b is from the boundary with a's series (the first releases of a
// newer series and the last of an older one are the nearest).
func versionDistance(a, b string) [2]int {
	na, nb := versionNumbers(a), versionNumbers(b)
	lo, hi := na, nb
	if compareVersions(a, b) > 0 {
		lo, hi = nb, na
	}
	steps := hi[1] - lo[1]
	if lo[0] != hi[0] {
		steps = (hi[0]-lo[0]-1)*20 + (20 - lo[1]) + hi[1]
	}
	var d int
	switch c := compareVersions(seriesOf(b), seriesOf(a)); {
	case c == 0:
		d = max(na[2]-nb[2], nb[2]-na[2])
	case c > 0:
		d = nb[2]
	default:
		d = 1000 - nb[2]
	}
	return [2]int{steps, d}
}

// versionNumbers reads up to three numbers of "A.B.C".
func versionNumbers(v string) [3]int {
	var n [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		n[i], _ = strconv.Atoi(p)
	}
	return n
}

// compareVersions orders "A.B[.C]" numerically.
func compareVersions(a, b string) int {
	na, nb := versionNumbers(a), versionNumbers(b)
	for i := range na {
		if na[i] != nb[i] {
			if na[i] < nb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// parseAptShow reads "apt-cache show" output: each stanza's Package and
// Version.
func parseAptShow(out string) map[string]string {
	m := map[string]string{}
	var pkg string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Package: "):
			pkg = strings.TrimSpace(strings.TrimPrefix(l, "Package: "))
		case strings.HasPrefix(l, "Version: ") && pkg != "":
			v := strings.TrimSpace(strings.TrimPrefix(l, "Version: "))
			if old, ok := m[pkg]; !ok || debVersionLess(old, v) {
				m[pkg] = v
			}
		case l == "":
			pkg = ""
		}
	}
	return m
}

// debVersionLess orders Debian versions well enough for kernel packages:
// digit runs as numbers, '~' before anything.
func debVersionLess(a, b string) bool { return compareRuns(a, b, true) < 0 }
