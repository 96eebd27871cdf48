package lab

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a recording needs from the host, and where it comes from:
//
//	QEMU       qemu-system-x86_64 on PATH, else "apt-get install -y
//	           --no-install-recommends qemu-system-x86" (root only)
//	kernel     Debian's image and config packages of the release asked
//	           for (debian.go: linux-image-* up to 6.18, linux-binary-*
//	           and linux-base-* from 6.19), fetched with "apt-get
//	           download" and unpacked (the image and the config only)
//	           into the cache
//	busybox    a static busybox on PATH, else Debian's busybox-static,
//	           fetched and unpacked into the cache
//	guest      cmd/tmigr-guest, built from this module's source into the
//	           cache, keyed by a hash of that source; built first, so that
//	           a recorder run outside a checkout fails before it fetches
//
// Most of these kernels are in suites a bookworm host's apt does not list
// (bookworm-backports, trixie, trixie-backports, sid). Rather than add a source to the
// system's apt configuration, the recorder keeps an apt state of its own in
// the cache (its own sources.list and package lists, the system's keyring):
// "apt-get update" there changes nothing the system's apt sees, needs no
// root, and running it again only refreshes the same lists. busybox-static
// comes the same way, not through "apt-get install", because it conflicts
// with the dynamically linked busybox package that initramfs-tools uses.
//
// Debian's cloud-amd64 flavour is the generic kernel: it is the plain
// amd64 configuration trimmed of hardware drivers, and keeps everything a
// diskless q35 guest needs built in (ACPI and its NUMA tables, the 8250
// serial console, PCI and virtio-pci, initramfs with gzip, devtmpfs,
// tracing); requiredConfig checks that before every boot.

// debianSuites are the suites of the private apt state: 6.1 kernels are in
// bookworm (with its security updates), 6.12 in bookworm-backports and
// trixie (with its security updates), 6.16 to 7.3 in trixie-backports and
// the newest in sid; busybox-static comes from trixie.
var debianSuites = []struct{ archive, suite string }{
	{"debian", "bookworm"},
	{"debian-security", "bookworm-security"},
	{"debian", "bookworm-backports"},
	{"debian", "trixie"},
	{"debian-security", "trixie-security"},
	{"debian", "trixie-backports"},
	{"debian", "sid"},
}

const debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// fetcher finds or fetches the recorder's tools for one recording.
// Everything it learns goes into the cache directory.
type fetcher struct {
	host    Host // CacheDir and Mirror set
	log     func(format string, args ...any)
	updated bool // the private package lists were refreshed by this fetcher
}

func newFetcher(h Host, log func(string, ...any)) (*fetcher, error) {
	if h.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory (%v): set $XDG_CACHE_HOME or $HOME, or give one", err)
		}
		h.CacheDir = filepath.Join(d, "tmigr", "lab")
	}
	abs, err := filepath.Abs(h.CacheDir)
	if err != nil {
		return nil, err
	}
	h.CacheDir = abs
	if err := os.MkdirAll(h.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: %v", err)
	}
	if h.Mirror == "" {
		h.Mirror = defaultMirror
	}
	return &fetcher{host: h, log: log}, nil
}

// kernel is an unpacked kernel.
type kernel struct {
	Image, Config string
	Package       string // the Debian package it came from; "" for a given image
	Version       string // the package's version, "6.12.117-1"
	Upstream      string // the upstream release, "6.12.117"; "" for a given image
	// ConfigFrom is the release whose config Config is, when the archive
	// has none of this release's own; "" otherwise.
	ConfigFrom string
	HZ         int
}

// requiredConfig are the options a diskless guest needs built in.
var requiredConfig = []string{
	"CONFIG_SMP", "CONFIG_NUMA", "CONFIG_ACPI", "CONFIG_ACPI_NUMA",
	"CONFIG_SERIAL_8250_CONSOLE", "CONFIG_BLK_DEV_INITRD", "CONFIG_RD_GZIP",
	"CONFIG_BINFMT_SCRIPT", "CONFIG_DEVTMPFS", "CONFIG_PROC_FS", "CONFIG_SYSFS",
	"CONFIG_FTRACE", "CONFIG_EVENT_TRACING", "CONFIG_NO_HZ_COMMON",
}

// readConfig reads a kernel config, checks the options the guest needs and
// returns its HZ.
func readConfig(path string, flavour Flavour) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("kernel config: %v", err)
	}
	set := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "CONFIG_") {
			set[k] = v
		}
	}
	need := requiredConfig
	if flavour == RT {
		need = append(slices.Clip(need), "CONFIG_PREEMPT_RT")
	}
	var missing []string
	for _, k := range need {
		if set[k] != "y" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("kernel config %s: %s not built in (=y); the guest would not boot or record", path, strings.Join(missing, ", "))
	}
	hz, err := strconv.Atoi(set["CONFIG_HZ"])
	if err != nil || hz <= 0 {
		return 0, fmt.Errorf("kernel config %s: no valid CONFIG_HZ (%q)", path, set["CONFIG_HZ"])
	}
	return hz, nil
}

// naturalLess orders strings with their digit runs compared as numbers:
// "deb13" < "deb13.1" < "deb13.2" < "deb13.10".
func naturalLess(a, b string) bool { return compareRuns(a, b, false) < 0 }

// compareRuns compares a and b with their digit runs as numbers; with
// tilde, '~' sorts before anything, the end of the string included (as in
// Debian versions: 7.3.4-1~bpo13+1 < 7.3.4-1).
func compareRuns(a, b string, tilde bool) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, _ := strconv.Atoi(a[:da])
			y, _ := strconv.Atoi(b[:db])
			if x != y {
				return cmp.Compare(x, y)
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			switch {
			case tilde && a[0] == '~':
				return -1
			case tilde && b[0] == '~':
				return 1
			}
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	switch {
	case tilde && a != "" && a[0] == '~':
		return -1
	case tilde && b != "" && b[0] == '~':
		return 1
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && n < 9 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// kernel returns the kernel of spec s: a given image, one in the cache, or
// one fetched now.
func (f *fetcher) kernel(ctx context.Context, s *Spec) (kernel, error) {
	if f.host.KernelImage != "" {
		hz, err := readConfig(f.host.KernelConfig, s.Kernel)
		if err != nil {
			return kernel{}, err
		}
		if _, err := os.Stat(f.host.KernelImage); err != nil {
			return kernel{}, fmt.Errorf("kernel image: %v", err)
		}
		return kernel{Image: f.host.KernelImage, Config: f.host.KernelConfig, HZ: hz}, nil
	}
	want := s.kernelWant()
	dir := filepath.Join(f.host.CacheDir, "kernels")
	k, ok := cachedKernel(dir, s.Kernel, want)
	if !ok {
		f.log("no %s kernel %s in the cache; fetching one", s.Kernel, want)
		var err error
		if k, err = f.fetchRelease(ctx, dir, s.Kernel, want); err != nil {
			return kernel{}, err
		}
	}
	var err error
	if k.HZ, err = readConfig(k.Config, s.Kernel); err != nil {
		return kernel{}, err
	}
	return k, nil
}

// kernelWant is the release or series the spec asks for.
func (s *Spec) kernelWant() string {
	if s.KernelVersion == "" {
		return defaultSeries
	}
	return s.KernelVersion
}

// The files of a kernel in the cache, kernels/<package>/: the image, its
// config, the Debian version of the image package, and, when the config is
// another release's, that release.
const (
	cacheImage      = "vmlinuz"
	cacheConfig     = "config"
	cacheVersion    = "version"
	cacheConfigFrom = "config-from"
)

// cachedKernel returns the newest kernel in the cache of flavour f that
// matches want (a series or a release).
func cachedKernel(dir string, f Flavour, want string) (kernel, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return kernel{}, false
	}
	var best kernel
	found := false
	for _, e := range ents {
		m := debianPackage.FindStringSubmatch(e.Name())
		if m == nil || m[3] != flavourName(f) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		v, err := os.ReadFile(filepath.Join(p, cacheVersion))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(p, cacheImage)); err != nil {
			continue
		}
		k := kernel{
			Image:   filepath.Join(p, cacheImage),
			Config:  filepath.Join(p, cacheConfig),
			Package: e.Name(),
			Version: strings.TrimSpace(string(v)),
		}
		k.Upstream, _, _ = strings.Cut(k.Version, "-")
		if from, err := os.ReadFile(filepath.Join(p, cacheConfigFrom)); err == nil {
			k.ConfigFrom = strings.TrimSpace(string(from))
		}
		if k.Upstream != want && !(strings.Count(want, ".") == 1 && seriesOf(k.Upstream) == want) {
			continue
		}
		if !found || compareVersions(best.Upstream, k.Upstream) < 0 ||
			compareVersions(best.Upstream, k.Upstream) == 0 && naturalLess(best.Package, k.Package) {
			best, found = k, true
		}
	}
	return best, found
}

// fetchRelease finds the release of flavour f that want names in the
// private apt state, downloads its image (and its config, or the nearest
// release's) and unpacks them into the cache.
func (f *fetcher) fetchRelease(ctx context.Context, dir string, fl Flavour, want string) (kernel, error) {
	if err := f.aptUpdate(ctx); err != nil {
		return kernel{}, err
	}
	names, err := f.aptNames(ctx, "linux-")
	if err != nil {
		return kernel{}, err
	}
	// The versions of every kernel package of the flavour: the nearest
	// config may be of another series.
	versions, err := f.aptVersions(ctx, kernelCandidates(names, fl, ""))
	if err != nil {
		return kernel{}, err
	}
	rels := debianReleases(versions, fl)
	r, err := pickRelease(rels, fl, want)
	if err != nil {
		return kernel{}, fmt.Errorf("the Debian archive (%s) has %v", f.suites(), err)
	}
	cfgPkg, from := r.Config, ""
	if !r.hasConfig() {
		n, ok := nearestConfig(rels, r)
		if !ok {
			return kernel{}, fmt.Errorf("the Debian archive has no config for %s (no linux-base-%s-%s-amd64) and none of a release near it", r.Upstream, r.ABI, flavourName(fl))
		}
		cfgPkg, from = n.Config, n.Upstream
		f.log("the archive has no config of %s (no linux-base-%s-%s-amd64); taking the config of %s, the nearest release that has one (%s)",
			r.Upstream, r.ABI, flavourName(fl), n.Upstream, n.Config)
	}
	dst := filepath.Join(dir, r.Image)
	if err := f.fetchKernel(ctx, r, cfgPkg, from, dst); err != nil {
		return kernel{}, err
	}
	return kernel{
		Image:      filepath.Join(dst, cacheImage),
		Config:     filepath.Join(dst, cacheConfig),
		Package:    r.Image,
		Version:    r.Version,
		Upstream:   r.Upstream,
		ConfigFrom: from,
	}, nil
}

// aptVersions returns the candidate version of each package.
func (f *fetcher) aptVersions(ctx context.Context, names []string) (map[string]string, error) {
	if len(names) == 0 {
		return map[string]string{}, nil
	}
	args := append(aptOptions(f.aptDir()), "show", "--no-all-versions")
	cmd := exec.CommandContext(ctx, "apt-cache", append(args, names...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, interrupted("looking up the kernel packages' versions", ctx)
		}
		return nil, fmt.Errorf("apt-cache show: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseAptShow(string(out)), nil
}

// Where the files are in a kernel's packages: the image is /boot/vmlinuz-*
// (6.1 to 6.18, and signed linux-binary-*) or
// /usr/lib/modules/*/vmlinuz.unsigned (linux-binary-unsigned-*), the
// config /boot/config-* or /usr/lib/modules/*/config (linux-base-*).
func imageFile(name string) bool {
	return strings.HasPrefix(name, "./boot/vmlinuz-") ||
		strings.HasPrefix(name, "./usr/lib/modules/") && (strings.HasSuffix(name, "/vmlinuz") || strings.HasSuffix(name, "/vmlinuz.unsigned"))
}

func configFile(name string) bool {
	return strings.HasPrefix(name, "./boot/config-") ||
		strings.HasPrefix(name, "./usr/lib/modules/") && strings.HasSuffix(name, "/config") && strings.Count(name, "/") == 5
}

// fetchKernel downloads release r's image package (and cfgPkg, when the
// config is in another package) and unpacks the image and the config into
// dst, atomically: dst exists only when complete. from names the release
// whose config cfgPkg is, when not r's.
func (f *fetcher) fetchKernel(ctx context.Context, r debianRelease, cfgPkg, from, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	want := map[string]func(string) bool{cacheImage: imageFile}
	if cfgPkg == "" {
		want[cacheConfig] = configFile
	}
	version, err := f.unpack(ctx, r.Image, tmp, want)
	if err != nil {
		return err
	}
	if cfgPkg != "" {
		if _, err := f.unpack(ctx, cfgPkg, tmp, map[string]func(string) bool{cacheConfig: configFile}); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, cacheVersion), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	if from != "" {
		if err := os.WriteFile(filepath.Join(tmp, cacheConfigFrom), []byte(from+"\n"), 0o644); err != nil {
			return err
		}
	}
	os.RemoveAll(dst)
	return os.Rename(tmp, dst)
}

// unpack downloads package name and writes the files want names into dir
// (each key a file name there, each value which member of the package it
// is); it returns the package's version.
func (f *fetcher) unpack(ctx context.Context, name, dir string, want map[string]func(string) bool) (string, error) {
	deb, version, cleanup, err := f.download(ctx, name)
	if err != nil {
		return "", err
	}
	defer cleanup()
	f.log("unpacking %s %s", name, version)
	dsts := map[string]func(string) bool{}
	for file, match := range want {
		dsts[filepath.Join(dir, file)] = match
	}
	got, err := debExtract(ctx, deb, dsts)
	if err != nil {
		return "", fmt.Errorf("unpacking %s: %v", name, err)
	}
	for file := range want {
		if !slices.Contains(got, filepath.Join(dir, file)) {
			return "", fmt.Errorf("unpacking %s: it holds no kernel %s", name, map[string]string{cacheImage: "image", cacheConfig: "config"}[file])
		}
	}
	return version, nil
}

// busybox returns a static busybox: the given one, one on PATH, the
// cached one, or Debian's busybox-static fetched now.
func (f *fetcher) busybox(ctx context.Context) (string, error) {
	if p := f.host.Busybox; p != "" {
		if err := checkStatic(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if p, err := exec.LookPath("busybox"); err == nil && checkStatic(p) == nil {
		return p, nil
	}
	dst := filepath.Join(f.host.CacheDir, "busybox", "busybox")
	if checkStatic(dst) == nil {
		return dst, nil
	}
	f.log("no static busybox on PATH or in the cache; fetching busybox-static")
	if err := f.aptUpdate(ctx); err != nil {
		return "", err
	}
	deb, version, cleanup, err := f.download(ctx, "busybox-static")
	if err != nil {
		return "", err
	}
	defer cleanup()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp := dst + ".tmp"
	got, err := debExtract(ctx, deb, map[string]func(string) bool{tmp: func(n string) bool {
		return n == "./bin/busybox" || n == "./usr/bin/busybox"
	}})
	if err != nil || len(got) == 0 {
		os.Remove(tmp)
		return "", fmt.Errorf("unpacking busybox-static %s: no busybox in it (%v)", version, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := checkStatic(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(filepath.Dir(dst), "version"), []byte(version+"\n"), 0o644)
	return dst, nil
}

// checkStatic verifies that path is an x86-64 executable that needs no
// dynamic loader: the initramfs has no libraries.
func checkStatic(path string) error {
	ef, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	defer ef.Close()
	if ef.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s: a %v binary, the guest is x86-64", path, ef.Machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the guest needs a static binary", path)
		}
	}
	return nil
}

// qemu returns qemu-system-x86_64: the given one, the one on PATH, or the
// one "apt-get install" puts there.
func (f *fetcher) qemu(ctx context.Context) (string, error) {
	if p := f.host.QEMU; p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("qemu: %v", err)
		}
		return p, nil
	}
	const bin, pkg = "qemu-system-x86_64", "qemu-system-x86"
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	why := ""
	switch _, aptErr := exec.LookPath("apt-get"); {
	case f.host.NoInstall:
		why = "installing packages is switched off"
	case aptErr != nil:
		why = "there is no apt-get on this system"
	case os.Geteuid() != 0:
		why = "installing it needs root"
	}
	if why != "" {
		return "", fmt.Errorf("%s is not on PATH and %s: install the %s package (apt-get install %s) or give its path", bin, why, pkg, pkg)
	}
	install := func() error {
		f.log("installing %s with apt-get (a system package; --no-install-recommends)", pkg)
		return f.runLogged(ctx, systemApt(ctx, "install", "-y", "--no-install-recommends", pkg))
	}
	if err := install(); err != nil {
		// The system's package lists may be stale.
		f.log("apt-get install failed (%v); refreshing the system's package lists and trying again", err)
		if err := f.runLogged(ctx, systemApt(ctx, "update")); err != nil {
			return "", fmt.Errorf("installing %s: apt-get update: %v", pkg, err)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("installing %s: %v", pkg, err)
		}
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%s installed, but %s is still not on PATH", pkg, bin)
	}
	return p, nil
}

func systemApt(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	return cmd
}

// aptDir is the private apt state.
func (f *fetcher) aptDir() string { return filepath.Join(f.host.CacheDir, "apt") }

func (f *fetcher) suites() string {
	var s []string
	for _, d := range debianSuites {
		s = append(s, d.suite)
	}
	return strings.Join(s, ", ")
}

// sourcesList is the private apt state's sources.list.
func sourcesList(mirror string) string {
	var b strings.Builder
	b.WriteString("# tmigr lab's own apt sources: read only by the apt commands of \"tmigr lab\",\n")
	b.WriteString("# never by the system's apt.\n")
	for _, d := range debianSuites {
		fmt.Fprintf(&b, "deb [signed-by=%s] %s/%s %s main\n", debianKeyring, strings.TrimSuffix(mirror, "/"), d.archive, d.suite)
	}
	return b.String()
}

// aptOptions point apt at the private state. The system's apt.conf.d still
// applies (proxies), its sources and lists do not.
func aptOptions(dir string) []string {
	return []string{
		"-o", "Dir::Etc::SourceList=" + filepath.Join(dir, "sources.list"),
		"-o", "Dir::Etc::SourceParts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "Acquire::Languages=none",
		// apt drops to the _apt user to download, who cannot write
		// into a root's home: download as the caller.
		"-o", "APT::Sandbox::User=root",
	}
}

// aptUpdate writes the private sources.list and refreshes its lists, once
// per fetcher.
func (f *fetcher) aptUpdate(ctx context.Context) error {
	if f.updated {
		return nil
	}
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("fetching Debian packages needs %s (a Debian or Ubuntu host); give the kernel, busybox and QEMU paths instead", tool)
		}
	}
	if _, err := os.Stat(debianKeyring); err != nil {
		return fmt.Errorf("Debian's archive keyring %s is missing (package debian-archive-keyring): apt could not check what it fetches", debianKeyring)
	}
	dir := f.aptDir()
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "sources.list"), []byte(sourcesList(f.host.Mirror)), 0o644); err != nil {
		return err
	}
	f.log("refreshing the package lists of %s from %s into %s (a private apt state; the system's apt sources are not changed)", f.suites(), f.host.Mirror, dir)
	// Without --error-on=any, apt-get update only warns about a source it
	// could not fetch and exits 0.
	cmd := exec.CommandContext(ctx, "apt-get", append(aptOptions(dir), "update", "--error-on=any")...)
	if err := f.runLogged(ctx, cmd); err != nil {
		if ctx.Err() != nil {
			return interrupted("refreshing the package lists", ctx)
		}
		// apt's own last lines (quoted in err) say what went wrong: a
		// name that did not resolve, a refused connection, a bad
		// signature, a missing suite.
		return fmt.Errorf("refreshing the package lists of %s from %s: %v", f.suites(), f.host.Mirror, err)
	}
	f.updated = true
	return nil
}

// aptNames lists the package names with prefix in the private state.
func (f *fetcher) aptNames(ctx context.Context, prefix string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "apt-cache", append(aptOptions(f.aptDir()), "pkgnames", prefix)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, interrupted("listing the packages", ctx)
		}
		return nil, fmt.Errorf("apt-cache pkgnames: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(string(out)), nil
}

// download fetches package name from the private state into a temporary
// directory; cleanup removes it.
func (f *fetcher) download(ctx context.Context, name string) (deb, version string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp(f.host.CacheDir, ".download-")
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	f.log("downloading %s", name)
	cmd := exec.CommandContext(ctx, "apt-get", append(aptOptions(f.aptDir()), "download", name)...)
	cmd.Dir = tmp
	if err := f.runLogged(ctx, cmd); err != nil {
		cleanup()
		if ctx.Err() != nil {
			return "", "", nil, interrupted("downloading "+name, ctx)
		}
		return "", "", nil, fmt.Errorf("apt-get download %s: %v", name, err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		cleanup()
		return "", "", nil, fmt.Errorf("apt-get download %s left %d .deb files", name, len(debs))
	}
	out, err := exec.CommandContext(ctx, "dpkg-deb", "-f", debs[0], "Version").Output()
	if err != nil {
		cleanup()
		return "", "", nil, fmt.Errorf("dpkg-deb -f %s: %v", debs[0], err)
	}
	return debs[0], strings.TrimSpace(string(out)), cleanup, nil
}

// debExtract unpacks files of a .deb: for each destination of want, the
// first regular file of the package that its function accepts (given the
// member's path, "./boot/vmlinuz-6.1.0-56-cloud-amd64") goes there. It
// reads the package's file system tree from "dpkg-deb --fsys-tarfile"
// (dpkg-deb knows every compression Debian uses) instead of unpacking it
// all with "dpkg-deb -x": a kernel package is mostly modules the guest
// never loads. It returns the destinations it wrote.
func debExtract(ctx context.Context, deb string, want map[string]func(string) bool) ([]string, error) {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var found []string
	tr := tar.NewReader(bufio.NewReaderSize(pipe, 1<<20))
	var terr error
	for terr == nil && len(found) < len(want) {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			terr = err
			break
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		for dst, match := range want {
			if slices.Contains(found, dst) || !match(h.Name) {
				continue
			}
			if terr = writeFileFrom(dst, tr); terr == nil {
				found = append(found, dst)
			}
			break
		}
	}
	io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return nil, interrupted("unpacking "+filepath.Base(deb), ctx)
		}
		return nil, fmt.Errorf("dpkg-deb --fsys-tarfile: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return found, terr
}

func writeFileFrom(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// interrupted is the error of a step that stopped because ctx ended: the
// user's Ctrl-C (or the caller's deadline), said as such, not as a failure
// of the network or of apt.
func interrupted(step string, ctx context.Context) error {
	why := "interrupted"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "stopped at the deadline"
	}
	return fmt.Errorf("%s while %s: %w", why, step, ctx.Err())
}

// runLogged runs cmd (made with exec.CommandContext) and returns an error
// that quotes the end of its output.
func (f *fetcher) runLogged(ctx context.Context, cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lines := tail(strings.Split(strings.TrimSpace(out.String()), "\n"), 5)
		return fmt.Errorf("%s %s: %v:\n\t%s", filepath.Base(cmd.Path), strings.Join(cmd.Args[1:], " "), err, strings.Join(lines, "\n\t"))
	}
	return nil
}
