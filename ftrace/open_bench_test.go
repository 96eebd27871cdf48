package ftrace

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpen reads one recording (testdata/tracecmd/host2, 2078
// events) whole through Open in each of its forms, side by side: the
// kernel's text, trace-cmd report's text (plain and -l), the same text
// gzip-compressed, and the trace.dat in versions 6, 7 uncompressed and 7
// with zstd.
func BenchmarkOpen(b *testing.B) {
	dir := filepath.Join(tracecmdDir, "host2")
	tmp := b.TempDir()
	plain := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, gunzip(b, filepath.Join(dir, name+".gz")), 0o644); err != nil {
			b.Fatal(err)
		}
		return p
	}
	for _, c := range []struct{ name, path string }{
		{"tracefs", filepath.Join(tracesDir, "kvm2-1node-sleepers.txt")},
		{"report", plain("report.txt")},
		{"report-l", plain("report-l.txt")},
		{"report.gz", filepath.Join(dir, "report.txt.gz")},
		{"dat-v6", plain("v6.dat")},
		{"dat-v7", plain("v7none.dat")},
		{"dat-v7-zstd", filepath.Join(dir, "trace.dat")},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, err := os.Stat(c.path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				evs, _ := openAll(b, c.path)
				if len(evs) != 2078 {
					b.Fatalf("%d events", len(evs))
				}
			}
		})
	}
}
