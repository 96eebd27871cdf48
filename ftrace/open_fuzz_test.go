package ftrace

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
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

// FuzzReadAll checks that a keeping Reader, which copies what events keep
// of their lines and shares equal payloads, keeps what a streaming one
// returns: the input read by ReadAll and ReadAllData and event by event.
// (TestReadAllKeeps reads recordings long enough for the keeping Reader
// to read its buffers into each other.)
func FuzzReadAll(f *testing.F) {
	for _, name := range []string{"cpu0-busy-3s.txt", "vm18-2node-mixed.txt"} {
		data, err := os.ReadFile(filepath.Join(tracesDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(firstLines(data, 60))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		var want []Event
		var wantErr error
		for {
			ev, err := r.Next()
			if err != nil {
				if err != io.EOF {
					wantErr = err
				}
				break
			}
			want = append(want, ev)
		}
		for k, all := range []func(*Reader) ([]Event, error){ReadAll, ReadAllData} {
			got, err := all(NewReader(bytes.NewReader(data)))
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("error %v, event by event %v", err, wantErr)
			}
			if err != nil {
				continue // ReadAll stops at the first error; Next may have gone on
			}
			if len(got) != len(want) {
				t.Fatalf("%d events, event by event %d", len(got), len(want))
			}
			for i, w := range want {
				if k == 1 {
					w.Payload = "" // ReadAllData keeps none
				}
				if got[i] != w {
					t.Fatalf("event %d: %+v, event by event %+v", i, got[i], w)
				}
			}
		}
	})
}
