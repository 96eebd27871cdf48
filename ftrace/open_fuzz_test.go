package ftrace

import (
	"bytes"
	"compress/gzip"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzOpen: any bytes given to OpenReader, in whatever form they look
// like (text, trace-cmd report, trace.dat, gzip), give events in time order
// or an error, never a panic.
func FuzzOpen(f *testing.F) {
	dir := filepath.Join(tracecmdDir, "lost")
	for _, name := range []string{"report.txt.gz", "report-l.txt.gz", "report-Nt.txt.gz", "tracefs.txt", "cpu1.txt.gz"} {
		b := gunzip(f, filepath.Join(dir, name))
		// The head of each form: its header and first events.
		lines := strings.SplitAfter(string(b), "\n")
		f.Add([]byte(strings.Join(lines[:min(len(lines), 40)], "")))
	}
	f.Add(gunzip(f, filepath.Join(dir, "trace.dat")))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("cpus=1\n          <idle>-0     [000]  1.000001: timer_cancel:         timer=0x1\n"))
	w.Close()
	f.Add(gz.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		r, c, err := OpenReader(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		defer c.Close()
		last := map[int]int64{}
		for range 100000 {
			ev, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				return
			}
			if ev.Name != "" {
				if ev.TS < last[ev.CPU] {
					t.Fatalf("CPU %d: %d after %d", ev.CPU, ev.TS, last[ev.CPU])
				}
				last[ev.CPU] = ev.TS
			}
		}
	})
}
