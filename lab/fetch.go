package lab

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a recording needs from the host, and where it comes from:
//
//	QEMU       qemu-system-x86_64 on PATH, else "apt-get install -y
//	           --no-install-recommends qemu-system-x86" (root only)
//	kernel     Debian's linux-image-6.12.*-{cloud,rt}-amd64-unsigned,
//	           fetched with "apt-get download" and unpacked (its /boot
//	           only) into the cache
//	busybox    a static busybox on PATH, else Debian's busybox-static,
//	           fetched and unpacked into the cache
//	guest      cmd/tmigr-guest, built from this module's source into the
//	           cache, keyed by a hash of that source
//
// The kernels of 6.12 are in bookworm-backports and trixie, which a
// bookworm host's apt does not list. Rather than add a source to the
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

// debianSuites are the suites of the private apt state: 6.12 kernels are in
// bookworm-backports and in trixie (with its security updates), busybox-
// static in trixie.
var debianSuites = []struct{ archive, suite string }{
	{"debian", "bookworm-backports"},
	{"debian", "trixie"},
	{"debian-security", "trixie-security"},
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
	HZ            int
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

// kernelPackage matches the Debian packages of a flavour's 6.12 kernels:
// linux-image-6.12.117+deb13-cloud-amd64-unsigned, with the patch level and
// the ABI suffix ("deb13", "deb13.1", "deb12") as groups.
func kernelPackage(f Flavour) *regexp.Regexp {
	name := "cloud"
	if f == RT {
		name = "rt"
	}
	return regexp.MustCompile(`^linux-image-` + regexp.QuoteMeta(kernelSeries) + `\.(\d+)\+([a-z0-9.~]+)-` + name + `-amd64-unsigned$`)
}

// pickKernel returns the newest package among names of flavour f, or the
// newest of version when it is set ("6.12.117").
func pickKernel(names []string, f Flavour, version string) (string, error) {
	re := kernelPackage(f)
	best, bestPatch, bestSuffix := "", -1, ""
	for _, n := range names {
		m := re.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		patch, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		if version != "" && kernelSeries+"."+m[1] != version {
			continue
		}
		if patch > bestPatch || patch == bestPatch && naturalLess(bestSuffix, m[2]) {
			best, bestPatch, bestSuffix = n, patch, m[2]
		}
	}
	if best == "" {
		want := "a " + kernelSeries + " kernel"
		if version != "" {
			want = "kernel " + version
		}
		name := "cloud"
		if f == RT {
			name = "rt"
		}
		return "", fmt.Errorf("no package of %s in the %s flavour (linux-image-%s.N+debNN-%s-amd64-unsigned)", want, f, kernelSeries, name)
	}
	return best, nil
}

// naturalLess orders strings with their digit runs compared as numbers:
// "deb13" < "deb13.1" < "deb13.2" < "deb13.10".
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, _ := strconv.Atoi(a[:da])
			y, _ := strconv.Atoi(b[:db])
			if x != y {
				return x < y
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
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
	dir := filepath.Join(f.host.CacheDir, "kernels")
	var cached []string
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "vmlinuz")); err == nil {
				cached = append(cached, e.Name())
			}
		}
	}
	name, err := pickKernel(cached, s.Kernel, s.KernelVersion)
	if err != nil {
		f.log("no %s kernel%s in the cache; fetching one", s.Kernel, pinned(s.KernelVersion))
		if err := f.aptUpdate(ctx); err != nil {
			return kernel{}, err
		}
		names, err := f.aptNames(ctx, "linux-image-"+kernelSeries+".")
		if err != nil {
			return kernel{}, err
		}
		if name, err = pickKernel(names, s.Kernel, s.KernelVersion); err != nil {
			return kernel{}, fmt.Errorf("the Debian archive (%s) has %v", f.suites(), err)
		}
		if err := f.fetchKernel(ctx, name, filepath.Join(dir, name)); err != nil {
			return kernel{}, err
		}
	}
	k := kernel{
		Image:   filepath.Join(dir, name, "vmlinuz"),
		Config:  filepath.Join(dir, name, "config"),
		Package: name,
	}
	if v, err := os.ReadFile(filepath.Join(dir, name, "version")); err == nil {
		k.Version = strings.TrimSpace(string(v))
	}
	if k.HZ, err = readConfig(k.Config, s.Kernel); err != nil {
		return kernel{}, err
	}
	return k, nil
}

func pinned(v string) string {
	if v == "" {
		return ""
	}
	return " " + v
}

// fetchKernel downloads package name and unpacks its /boot/vmlinuz-* and
// /boot/config-* into dst, atomically: dst exists only when complete.
func (f *fetcher) fetchKernel(ctx context.Context, name, dst string) error {
	deb, version, cleanup, err := f.download(ctx, name)
	if err != nil {
		return err
	}
	defer cleanup()
	f.log("unpacking %s %s", name, version)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	got, err := debExtract(ctx, deb, map[string]string{
		"./boot/vmlinuz-": filepath.Join(tmp, "vmlinuz"),
		"./boot/config-":  filepath.Join(tmp, "config"),
	})
	if err != nil {
		return fmt.Errorf("unpacking %s: %v", name, err)
	}
	if len(got) != 2 {
		return fmt.Errorf("unpacking %s: no /boot/vmlinuz-* and /boot/config-* in the package", name)
	}
	if err := os.WriteFile(filepath.Join(tmp, "version"), []byte(version+"\n"), 0o644); err != nil {
		return err
	}
	os.RemoveAll(dst)
	return os.Rename(tmp, dst)
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
	got, err := debExtract(ctx, deb, map[string]string{"./bin/busybox": tmp, "./usr/bin/busybox": tmp})
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
		return fmt.Errorf("apt-get update of %s from %s failed (no network?): %v", f.suites(), f.host.Mirror, err)
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

// debExtract unpacks files of a .deb: for each prefix of want, the first
// regular file whose path starts with it goes to the destination. It reads
// the package's file system tree from "dpkg-deb --fsys-tarfile" (dpkg-deb
// knows every compression Debian uses) instead of unpacking it all with
// "dpkg-deb -x": a kernel package is mostly modules the guest never loads.
// It returns the prefixes it found.
func debExtract(ctx context.Context, deb string, want map[string]string) ([]string, error) {
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
	for {
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
		for prefix, dst := range want {
			if !strings.HasPrefix(h.Name, prefix) || slices.Contains(found, prefix) {
				continue
			}
			if terr = writeFileFrom(dst, tr); terr != nil {
				break
			}
			found = append(found, prefix)
		}
		if terr != nil {
			break
		}
	}
	io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
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
