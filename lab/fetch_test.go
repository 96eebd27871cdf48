package lab

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// archive is part of what the Debian archive listed (bookworm, its
// security updates and backports, trixie, its security updates and
// backports, sid), package by package with its candidate version.
var archive = map[string]string{
	"linux-image-6.1.0-50-cloud-amd64":                    "6.1.164-1",
	"linux-image-6.1.0-50-cloud-amd64-unsigned":           "6.1.164-1",
	"linux-image-6.1.0-56-cloud-amd64":                    "6.1.192-2",
	"linux-image-6.1.0-56-cloud-amd64-unsigned":           "6.1.192-2",
	"linux-image-6.1.0-56-rt-amd64":                       "6.1.192-2",
	"linux-image-6.12.95+deb12-cloud-amd64-unsigned":      "6.12.95-1~bpo12+1",
	"linux-image-6.12.115+deb13.1-rt-amd64-unsigned":      "6.12.115-1",
	"linux-image-6.12.115+deb13-rt-amd64-unsigned":        "6.12.115-1",
	"linux-image-6.12.116+deb13-amd64-unsigned":           "6.12.116-1",
	"linux-image-6.12.117+deb13-cloud-amd64-unsigned":     "6.12.117-1",
	"linux-image-6.12.118+deb13-cloud-amd64":              "6.12.118-1",
	"linux-image-6.12.118+deb13-cloud-amd64-unsigned":     "6.12.118-1",
	"linux-image-6.12.118+deb13-cloud-arm64-unsigned":     "6.12.118-1",
	"linux-image-6.12.9+deb13-cloud-amd64-unsigned":       "6.12.9-1",
	"linux-image-6.16.12+deb13-cloud-amd64":               "6.16.12-1~bpo13+1",
	"linux-image-6.18.15+deb13-cloud-amd64":               "6.18.15-1~bpo13+1",
	"linux-image-6.19.14+deb13-cloud-amd64":               "6.19.14-1~bpo13+1",
	"linux-binary-6.19.14+deb13-cloud-amd64":              "6.19.14-1~bpo13+1",
	"linux-image-6.19.8+deb13-cloud-amd64":                "6.19.8-1~bpo13+1",
	"linux-binary-6.19.8+deb13-cloud-amd64":               "6.19.8-1~bpo13+1",
	"linux-binary-7.0.13+deb13-cloud-amd64":               "7.0.13-1~bpo13+1",
	"linux-binary-7.2.6+deb13-cloud-amd64":                "7.2.6-1~bpo13+1",
	"linux-binary-unsigned-7.2.6+deb13-cloud-amd64":       "7.2.6-1~bpo13+1",
	"linux-base-7.2.6+deb13-cloud-amd64":                  "7.2.6-1~bpo13+1",
	"linux-binary-7.2.13+deb14-cloud-amd64":               "7.2.13-1",
	"linux-binary-unsigned-7.2.13+deb14-cloud-amd64":      "7.2.13-1",
	"linux-base-7.2.13+deb14-cloud-amd64":                 "7.2.13-1",
	"linux-image-7.3.4+deb13-cloud-amd64":                 "7.3.4-1~bpo13+1",
	"linux-binary-7.3.4+deb13-cloud-amd64":                "7.3.4-1~bpo13+1",
	"linux-binary-unsigned-7.3.4+deb13-cloud-amd64":       "7.3.4-1~bpo13+1",
	"linux-base-7.3.4+deb13-cloud-amd64":                  "7.3.4-1~bpo13+1",
	"linux-modules-7.3.4+deb13-cloud-amd64":               "7.3.4-1~bpo13+1",
	"linux-binary-7.3.4+deb13-rt-amd64":                   "7.3.4-1~bpo13+1",
	"linux-base-7.3.4+deb13-rt-amd64":                     "7.3.4-1~bpo13+1",
	"linux-image-6.12.118+deb13-cloud-amd64-unsigned-dbg": "6.12.118-1",
}

func TestPickRelease(t *testing.T) {
	var names []string
	for n := range archive {
		names = append(names, n)
	}
	for _, tc := range []struct {
		flavour              Flavour
		want                 string
		upstream, image, cfg string // upstream "" for an error, cfg "-" for none
		errHas               string
	}{
		// 6.1: the ABI (6.1.0-56) does not name the release; the
		// version does.
		{Generic, "6.1", "6.1.192", "linux-image-6.1.0-56-cloud-amd64-unsigned", "", ""},
		{Generic, "6.1.164", "6.1.164", "linux-image-6.1.0-50-cloud-amd64-unsigned", "", ""},
		{RT, "6.1", "6.1.192", "linux-image-6.1.0-56-rt-amd64", "", ""},
		// Numeric order, not "9" > "118"; unsigned over signed.
		{Generic, "6.12", "6.12.118", "linux-image-6.12.118+deb13-cloud-amd64-unsigned", "", ""},
		{Generic, "6.12.95", "6.12.95", "linux-image-6.12.95+deb12-cloud-amd64-unsigned", "", ""},
		// The newer ABI of one release.
		{RT, "6.12.115", "6.12.115", "linux-image-6.12.115+deb13.1-rt-amd64-unsigned", "", ""},
		// From 6.19 the image is in linux-binary-*, linux-image-* is a
		// meta package; the config is in linux-base-*, which 6.19 lacks.
		{Generic, "6.19", "6.19.14", "linux-binary-6.19.14+deb13-cloud-amd64", "-", ""},
		{Generic, "6.19.8", "6.19.8", "linux-binary-6.19.8+deb13-cloud-amd64", "-", ""},
		{Generic, "7.0", "7.0.13", "linux-binary-7.0.13+deb13-cloud-amd64", "-", ""},
		{Generic, "7.2", "7.2.13", "linux-binary-unsigned-7.2.13+deb14-cloud-amd64", "linux-base-7.2.13+deb14-cloud-amd64", ""},
		{Generic, "7.3", "7.3.4", "linux-binary-unsigned-7.3.4+deb13-cloud-amd64", "linux-base-7.3.4+deb13-cloud-amd64", ""},
		{RT, "7.3.4", "7.3.4", "linux-binary-7.3.4+deb13-rt-amd64", "linux-base-7.3.4+deb13-rt-amd64", ""},
		// 6.18's image package holds no config, and its linux-base is gone.
		{Generic, "6.18", "6.18.15", "linux-image-6.18.15+deb13-cloud-amd64", "-", ""},
		{Generic, "6.12.11", "", "", "", "its series has 6.12.9, 6.12.95, 6.12.117, 6.12.118"},
		{Generic, "7.1", "", "", "", "the archive has the series 6.1, 6.12, 6.16, 6.18, 6.19, 7.0, 7.2, 7.3"},
		{RT, "6.19", "", "", "", "rt flavour"},
	} {
		rels := debianReleases(pick(archive, kernelCandidates(names, tc.flavour, "")), tc.flavour)
		r, err := pickRelease(rels, tc.flavour, tc.want)
		switch {
		case tc.upstream == "":
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s %s: %+v, %v; want an error with %q", tc.flavour, tc.want, r, err, tc.errHas)
			}
			continue
		case err != nil:
			t.Errorf("%s %s: %v", tc.flavour, tc.want, err)
			continue
		}
		cfg := r.Config
		if !r.hasConfig() {
			cfg = "-"
		}
		if r.Upstream != tc.upstream || r.Image != tc.image || cfg != tc.cfg {
			t.Errorf("%s %s: %s in %s, config %q; want %s in %s, config %q", tc.flavour, tc.want, r.Upstream, r.Image, cfg, tc.upstream, tc.image, tc.cfg)
		}
	}
}

func pick(versions map[string]string, names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = versions[n]
	}
	return out
}

func TestNearestConfig(t *testing.T) {
	rels := debianReleases(archive, Generic)
	for _, tc := range []struct{ release, want string }{
		// 6.19 and 7.0 have no linux-base; the nearest that has one is
		// 7.2.6 (6.16 and 6.12 hold their config in the 50 MB image
		// package, which is not fetched for a config).
		{"6.19.14", "7.2.6"},
		{"7.0.13", "7.2.6"},
		{"6.18.15", "7.2.6"},
	} {
		r, err := pickRelease(rels, Generic, tc.release)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := nearestConfig(rels, r)
		if !ok || n.Upstream != tc.want {
			t.Errorf("nearest config of %s: %s (%v), want %s", tc.release, n.Upstream, ok, tc.want)
		}
	}
	if _, ok := nearestConfig(nil, debianRelease{Upstream: "6.19.1"}); ok {
		t.Error("a config found among no releases")
	}
	for _, tc := range []struct {
		a, b string
		want [2]int
	}{
		{"6.19.14", "7.2.6", [2]int{3, 6}},
		{"6.19.14", "7.2.13", [2]int{3, 13}},
		{"6.19.14", "6.16.12", [2]int{3, 988}},
		{"7.0.1", "7.0.9", [2]int{0, 8}},
		{"6.1.1", "7.3.1", [2]int{22, 1}},
	} {
		if got := versionDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("versionDistance(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParseAptShow(t *testing.T) {
	got := parseAptShow("Package: linux-binary-7.3.4+deb13-cloud-amd64\nVersion: 7.3.4-1~bpo13+1\nSize: 1\n\n" +
		"Package: linux-image-6.1.0-56-cloud-amd64\nSource: linux-signed-amd64 (6.1.192+2)\nVersion: 6.1.192-2\n\n" +
		"Package: linux-image-6.1.0-56-cloud-amd64\nVersion: 6.1.192-1\n")
	want := map[string]string{"linux-binary-7.3.4+deb13-cloud-amd64": "7.3.4-1~bpo13+1", "linux-image-6.1.0-56-cloud-amd64": "6.1.192-2"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"7.3.4-1~bpo13+1", "7.3.4-1", true},
		{"7.3.4-1", "7.3.4-1~bpo13+1", false},
		{"6.1.192-1", "6.1.192-2", true},
		{"6.1.9-1", "6.1.10-1", true},
	} {
		if got := debVersionLess(tc.a, tc.b); got != tc.less {
			t.Errorf("debVersionLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestCachedKernel(t *testing.T) {
	dir := t.TempDir()
	add := func(pkg, version, from string) {
		p := filepath.Join(dir, pkg)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, cacheImage), []byte("k"), 0o644)
		os.WriteFile(filepath.Join(p, cacheConfig), []byte("c"), 0o644)
		os.WriteFile(filepath.Join(p, cacheVersion), []byte(version+"\n"), 0o644)
		if from != "" {
			os.WriteFile(filepath.Join(p, cacheConfigFrom), []byte(from+"\n"), 0o644)
		}
	}
	add("linux-image-6.12.118+deb13-cloud-amd64-unsigned", "6.12.118-1", "")
	add("linux-image-6.12.9+deb13-cloud-amd64-unsigned", "6.12.9-1", "")
	add("linux-image-6.1.0-56-cloud-amd64-unsigned", "6.1.192-2", "")
	add("linux-binary-6.19.14+deb13-cloud-amd64", "6.19.14-1~bpo13+1", "7.2.6")
	add("linux-binary-7.3.4+deb13-rt-amd64", "7.3.4-1~bpo13+1", "")
	os.MkdirAll(filepath.Join(dir, "linux-binary-7.3.4+deb13-cloud-amd64"), 0o755) // incomplete
	for _, tc := range []struct {
		f         Flavour
		want      string
		pkg, from string
	}{
		{Generic, "6.12", "linux-image-6.12.118+deb13-cloud-amd64-unsigned", ""},
		{Generic, "6.12.9", "linux-image-6.12.9+deb13-cloud-amd64-unsigned", ""},
		{Generic, "6.1", "linux-image-6.1.0-56-cloud-amd64-unsigned", ""},
		{Generic, "6.1.192", "linux-image-6.1.0-56-cloud-amd64-unsigned", ""},
		{Generic, "6.19", "linux-binary-6.19.14+deb13-cloud-amd64", "7.2.6"},
		{Generic, "7.3", "", ""},
		{RT, "7.3", "linux-binary-7.3.4+deb13-rt-amd64", ""},
		{RT, "6.12", "", ""},
	} {
		k, ok := cachedKernel(dir, tc.f, tc.want)
		if ok != (tc.pkg != "") || k.Package != tc.pkg || k.ConfigFrom != tc.from {
			t.Errorf("%s %s: %q from %q (%v), want %q from %q", tc.f, tc.want, k.Package, k.ConfigFrom, ok, tc.pkg, tc.from)
		}
	}
}

func TestDefaultTimeout(t *testing.T) {
	for _, tc := range []struct {
		cpus int
		d    time.Duration
		h    HostLoad
		want time.Duration
	}{
		{2, 3 * time.Second, HostLoad{CPUs: 2, Load: 2}, 70 * time.Second},
		{20, 3 * time.Second, HostLoad{CPUs: 2, Load: 2}, 466 * time.Second},
		{20, 3 * time.Second, HostLoad{CPUs: 2}, 266 * time.Second},
		{20, 3 * time.Second, HostLoad{CPUs: 16}, 91 * time.Second},
		{64, 3 * time.Second, HostLoad{CPUs: 2, Load: 9}, 45 * time.Minute},
	} {
		if got := DefaultTimeout(tc.cpus, tc.d, tc.h); got != tc.want {
			t.Errorf("DefaultTimeout(%d, %v, %+v) = %v, want %v", tc.cpus, tc.d, tc.h, got, tc.want)
		}
	}
	// More vCPUs or more load never shortens it.
	for c := 1; c < 100; c++ {
		for l := 0.0; l < 8; l += 0.5 {
			h := HostLoad{CPUs: 2, Load: l}
			if DefaultTimeout(c+1, time.Second, h) < DefaultTimeout(c, time.Second, h) ||
				DefaultTimeout(c, time.Second, HostLoad{CPUs: 2, Load: l + 0.5}) < DefaultTimeout(c, time.Second, h) {
				t.Fatalf("not monotonic at %d vCPUs, load %v", c, l)
			}
		}
	}
}

// TestDumpTime: the dump's allowance grows with the buffers, and a spec's
// default limit includes it, within the bound on one run.
func TestDumpTime(t *testing.T) {
	if got := DumpTime(4, 2048); got != 128*time.Second {
		t.Errorf("DumpTime(4, 2048) = %v, want 2m8s", got)
	}
	if DumpTime(8, 2048) <= DumpTime(4, 2048) || DumpTime(4, 4096) <= DumpTime(4, 2048) {
		t.Error("more vCPUs or larger buffers do not lengthen the dump's allowance")
	}
	s := Spec{CPUs: 4, Duration: 2 * time.Second}.withDefaults()
	if s.Timeout < DumpTime(4, s.BufferKB)+time.Minute || s.Timeout > maxTimeout {
		t.Errorf("default limit %v: want the dump's %v and a minute at least, %v at most", s.Timeout, DumpTime(4, s.BufferKB), maxTimeout)
	}
	e := &TimeoutError{Timeout: time.Minute, Stage: "dumping", Console: "c.log"}
	if !strings.Contains(e.Error(), "dump") {
		t.Errorf("a timeout while dumping says %q", e.Error())
	}
}

func TestNaturalLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"deb13", "deb13.1", true},
		{"deb13.2", "deb13.10", true},
		{"deb13.10", "deb13.2", false},
		{"deb12", "deb13", true},
		{"deb13", "deb13", false},
		{"", "deb13", true},
		{"bpo", "deb12", true},
	} {
		if got := naturalLess(tc.a, tc.b); got != tc.less {
			t.Errorf("naturalLess(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestSourcesList(t *testing.T) {
	got := sourcesList("http://mirror.example/")
	for _, want := range []string{
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian bookworm-backports main\n",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian trixie main\n",
		"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian-security trixie-security main\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sources.list lacks %q:\n%s", want, got)
		}
	}
	opts := strings.Join(aptOptions("/c/apt"), " ")
	for _, want := range []string{"Dir::Etc::SourceList=/c/apt/sources.list", "Dir::Etc::SourceParts=-", "Dir::State::Lists=/c/apt/lists", "Dir::Cache=/c/apt/cache"} {
		if !strings.Contains(opts, want) {
			t.Errorf("apt options lack %q: the system's apt state would be used", want)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "config")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var full strings.Builder
	full.WriteString("# comment\n")
	for _, k := range requiredConfig {
		full.WriteString(k + "=y\n")
	}
	full.WriteString("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
	if hz, err := readConfig(write(full.String()), Generic); err != nil || hz != 250 {
		t.Errorf("a good config: %d, %v", hz, err)
	}
	if _, err := readConfig(write(full.String()), RT); err == nil || !strings.Contains(err.Error(), "CONFIG_PREEMPT_RT") {
		t.Errorf("an rt kernel without PREEMPT_RT: %v", err)
	}
	if hz, err := readConfig(write(full.String()+"CONFIG_PREEMPT_RT=y\n"), RT); err != nil || hz != 250 {
		t.Errorf("an rt config: %d, %v", hz, err)
	}
	noInitrd := strings.Replace(full.String(), "CONFIG_BLK_DEV_INITRD=y", "# CONFIG_BLK_DEV_INITRD is not set", 1)
	if _, err := readConfig(write(noInitrd), Generic); err == nil || !strings.Contains(err.Error(), "CONFIG_BLK_DEV_INITRD") {
		t.Errorf("a config without initrd: %v", err)
	}
	modular := strings.Replace(full.String(), "CONFIG_SERIAL_8250_CONSOLE=y", "CONFIG_SERIAL_8250_CONSOLE=m", 1)
	if _, err := readConfig(write(modular), Generic); err == nil || !strings.Contains(err.Error(), "CONFIG_SERIAL_8250_CONSOLE") {
		t.Errorf("a modular console: %v", err)
	}
	noHZ := strings.Replace(full.String(), "CONFIG_HZ=250", "", 1)
	if _, err := readConfig(write(noHZ), Generic); err == nil || !strings.Contains(err.Error(), "CONFIG_HZ") {
		t.Errorf("a config without HZ: %v", err)
	}
	if _, err := readConfig(filepath.Join(dir, "missing"), Generic); err == nil {
		t.Error("a missing config read")
	}
}

func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755)
	if err := checkStatic(text); err == nil {
		t.Error("a script passed as a static binary")
	}
	if err := checkStatic(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file passed")
	}
	// The host's shell is dynamically linked on every distribution this
	// runs on; skip where it is not.
	if sh := "/bin/sh"; fileExists(sh) {
		if p, _ := filepath.EvalSymlinks(sh); p != "" {
			if err := checkStatic(p); err == nil {
				t.Skipf("%s is static here", p)
			} else if !strings.Contains(err.Error(), "dynamically linked") {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fakeTools puts apt-get, apt-cache and dpkg-deb scripts on PATH that run
// body (with "$@" their arguments) and log each call to the returned file.
func fakeTools(t *testing.T, body string) (log string) {
	dir := t.TempDir()
	log = filepath.Join(dir, "calls.log")
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		script := "#!/bin/sh\necho \"" + tool + " $*\" >> " + log + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// TestInterruptedFetch: a fetch stopped by Ctrl-C says so; it used to say
// "failed (no network?)".
func TestInterruptedFetch(t *testing.T) {
	if _, err := os.Stat(debianKeyring); err != nil {
		t.Skipf("skipped: %v", err)
	}
	fakeTools(t, "exec sleep 30")
	f, err := newFetcher(Host{CacheDir: t.TempDir()}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = f.aptUpdate(ctx)
	if err == nil || !strings.Contains(err.Error(), "while refreshing the package lists") || strings.Contains(err.Error(), "no network") {
		t.Errorf("interrupted update: %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := f.download(ctx, "busybox-static"); err == nil || !strings.Contains(err.Error(), "interrupted while downloading busybox-static") {
		t.Errorf("interrupted download: %v", err)
	}
}

// TestFailedFetchSaysWhy: apt's own words reach the error, not a guess.
func TestFailedFetchSaysWhy(t *testing.T) {
	if _, err := os.Stat(debianKeyring); err != nil {
		t.Skipf("skipped: %v", err)
	}
	fakeTools(t, "echo \"Err:1 http://deb.debian.org/debian bookworm InRelease\"; echo \"  Temporary failure resolving 'deb.debian.org'\"; exit 100")
	f, err := newFetcher(Host{CacheDir: t.TempDir()}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	err = f.aptUpdate(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Temporary failure resolving 'deb.debian.org'") || strings.Contains(err.Error(), "no network?") {
		t.Errorf("failed update: %v", err)
	}
}

// TestRecordOutsideCheckoutFetchesNothing: a recording that cannot build
// its guest program fails before any package list or kernel is fetched
// (it used to download 43 MB first).
func TestRecordOutsideCheckoutFetchesNothing(t *testing.T) {
	log := fakeTools(t, "exit 1")
	cache := t.TempDir()
	t.Chdir(t.TempDir()) // outside any Go module
	t.Setenv("GOFLAGS", "")
	t.Setenv("GO111MODULE", "")
	err := Record(context.Background(), Spec{CPUs: 2, Host: Host{CacheDir: cache, NoInstall: true}}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "outside any Go module") {
		t.Fatalf("error %v; want the guest program's", err)
	}
	if calls, _ := os.ReadFile(log); len(calls) > 0 {
		t.Errorf("apt ran before the guest program was built:\n%s", calls)
	}
	if _, err := os.Stat(filepath.Join(cache, "apt")); err == nil {
		t.Error("the private apt state was set up")
	}
}
