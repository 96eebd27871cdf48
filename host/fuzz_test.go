package host

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

func FuzzParsePartition(f *testing.F) {
	for _, s := range []string{"member\n", "root", "isolated\n", "isolated invalid", "root invalid (Parent is not a partition root)\n", "isolated invalid (", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePartition(s)
		if err != nil {
			return
		}
		back, err := ParsePartition(p.String() + "\n")
		if err != nil || back != p {
			t.Fatalf("%q: %+v printed as %q reads back as %+v, %v", s, p, p.String(), back, err)
		}
		if p.IsolatedValid() != (p.Kind == "isolated" && !p.Invalid) {
			t.Fatalf("%q: IsolatedValid", s)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("#\n# comment\nCONFIG_HZ=250\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_SMP=y\n"), false)
	f.Add([]byte("CONFIG_X=\"a=b\"\r\nCONFIG_X=y\n"), false)
	f.Add([]byte("CONFIG_HZ=1000\n"), true)
	f.Add([]byte("\x1f\x8b garbage"), true)
	f.Fuzz(func(t *testing.T, b []byte, gz bool) {
		var c *Config
		var err error
		if gz {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(b)
			zw.Close()
			c, err = ParseConfigGz(buf.Bytes())
			if _, err2 := ParseConfigGz(b); err2 == nil && len(b) < 2 {
				t.Fatalf("%q parsed as gzip", b)
			}
		} else {
			c, err = ParseConfig(b)
		}
		if err != nil {
			return
		}
		// Every line that names an option sets it as written.
		for line := range strings.SplitSeq(string(b), "\n") {
			line = strings.TrimRight(line, "\r")
			name, value, ok := strings.Cut(line, "=")
			if !ok || strings.HasPrefix(line, "#") || !validConfigName(name) {
				continue
			}
			if got, _ := c.Value(strings.TrimPrefix(name, "CONFIG_")); got != value {
				t.Fatalf("%s: value %q, want %q", name, got, value)
			}
		}
		if hz, ok := c.Int("HZ"); ok && hz < 0 && c.Enabled("HZ") {
			t.Fatal("a number is enabled")
		}
	})
}

// FuzzAnalyze feeds whole machines made of fuzzed files through Parse and
// Analyze (without the simulation): bad files must be errors naming them,
// never a panic, and a report must be self-consistent.
func FuzzAnalyze(f *testing.F) {
	f.Add("6.12.118", "isolcpus=1-3 nohz_full=2", "0-3", "0-3", "1-3", "2", "isolated", "2-3", "1")
	f.Add("6.19.0", "isolcpus=nohz,domain,1-3 irqaffinity=0", "0-7", "0-5", "", "(null)", "root invalid (x)", "4", "0")
	f.Add("5.15.0-1-generic", "nohz=off", "0", "0", "", "", "member", "", "")
	f.Add("7.3.0", "isolcpus=managed_irq,all nohz_full=N", "0-63", "0-63:2/4", "x", "1-", "isolated", "0-63", "1")
	f.Fuzz(func(t *testing.T, rel, cmdline, possible, online, isolated, nohzFull, partition, effective, tm string) {
		files := map[string]string{
			fileRelease: rel, fileCmdline: cmdline, dirCPU + "/possible": possible, dirCPU + "/online": online,
			dirCPU + "/isolated": isolated, dirCPU + "/nohz_full": nohzFull, fileTimerMigration: tm,
			dirCgroup + "/cgroup.controllers": "cpuset\n", dirCgroup + "/p/cpuset.cpus.partition": partition,
			dirCgroup + "/p/cpuset.cpus.effective": effective,
		}
		s := newSnapshot()
		for p, v := range files {
			s.Files[p] = []byte(v)
		}
		h, err := Parse(s)
		if err != nil {
			return
		}
		r, err := Analyze(h, Options{NoPredict: true})
		if err != nil {
			return
		}
		ex := r.Excludes()
		if !ex.Subset(&r.Possible) {
			t.Fatalf("excluded %s beyond the possible CPUs %s", ex, r.Possible)
		}
		for _, k := range r.Kept {
			if k.CPUs.Intersects(&ex) {
				t.Fatalf("CPUs %s both kept and excluded", k.CPUs.And(ex))
			}
		}
		if err := r.Machine.Validate(); err != nil {
			t.Fatalf("machine line: %v", err)
		}
		if _, err := ftrace.ParseMachine(r.Machine.String()); err != nil {
			t.Fatalf("machine line %q does not parse: %v", r.Machine.String(), err)
		}
		var b strings.Builder
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadTar(f *testing.F) {
	s := newSnapshot()
	s.Files[fileCmdline] = []byte("quiet\n")
	s.Files[fileRelease] = []byte("6.12.0\n")
	var buf bytes.Buffer
	_ = s.SaveTar(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ReadTar(bytes.NewReader(b))
		if err != nil {
			return
		}
		for p := range s.Files {
			if !Wanted(p) {
				t.Fatalf("unwanted %q kept", p)
			}
		}
		if _, err := Parse(s); err != nil {
			return
		}
	})
}
