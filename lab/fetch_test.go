package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// names are package names as the Debian archive listed them: trixie,
// trixie-security and bookworm-backports together.
var names = []string{
	"linux-image-6.12.95+deb12-cloud-amd64-unsigned",
	"linux-image-6.12.115+deb13.1-rt-amd64",
	"linux-image-6.12.115+deb13.1-rt-amd64-unsigned",
	"linux-image-6.12.116+deb13-amd64-unsigned",
	"linux-image-6.12.116+deb13-cloud-amd64",
	"linux-image-6.12.116+deb13-cloud-amd64-unsigned",
	"linux-image-6.12.117+deb13-cloud-amd64-unsigned",
	"linux-image-6.12.117+deb13-cloud-amd64-unsigned-dbg",
	"linux-image-6.12.117+deb13-rt-amd64-unsigned",
	"linux-image-6.12.118+deb13-amd64-unsigned",
	"linux-image-6.12.118+deb13-cloud-arm64-unsigned",
	"linux-image-6.12.118+deb13-cloud-amd64",
	"linux-image-6.12.118+deb13-rt-amd64-unsigned",
	"linux-image-6.12.9+deb13-cloud-amd64-unsigned",
	"linux-image-6.18.1+deb14-cloud-amd64-unsigned",
}

func TestPickKernel(t *testing.T) {
	for _, tc := range []struct {
		flavour Flavour
		version string
		want    string // "" for an error
	}{
		// .118 has no cloud-amd64-unsigned; numeric order, not "9" > "117".
		{Generic, "", "linux-image-6.12.117+deb13-cloud-amd64-unsigned"},
		{RT, "", "linux-image-6.12.118+deb13-rt-amd64-unsigned"},
		{Generic, "6.12.95", "linux-image-6.12.95+deb12-cloud-amd64-unsigned"},
		{RT, "6.12.115", "linux-image-6.12.115+deb13.1-rt-amd64-unsigned"},
		{Generic, "6.12.118", ""},
		{Generic, "6.12.11", ""},
	} {
		got, err := pickKernel(names, tc.flavour, tc.version)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s %q: picked %s, want an error", tc.flavour, tc.version, got)
		case tc.want == "" && !strings.Contains(err.Error(), "kernel "+tc.version):
			t.Errorf("%s %q: error %q does not name the version", tc.flavour, tc.version, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("%s %q: %s, %v; want %s", tc.flavour, tc.version, got, err, tc.want)
		}
	}
	// A newer ABI of the same version wins.
	got, err := pickKernel([]string{
		"linux-image-6.12.115+deb13-rt-amd64-unsigned",
		"linux-image-6.12.115+deb13.2-rt-amd64-unsigned",
		"linux-image-6.12.115+deb13.10-rt-amd64-unsigned",
	}, RT, "")
	if err != nil || got != "linux-image-6.12.115+deb13.10-rt-amd64-unsigned" {
		t.Errorf("ABI order: %s, %v", got, err)
	}
	if _, err := pickKernel(nil, Generic, ""); err == nil || !strings.Contains(err.Error(), "cloud-amd64-unsigned") {
		t.Errorf("no names: %v", err)
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
