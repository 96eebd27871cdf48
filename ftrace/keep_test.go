package ftrace

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// readEach reads path event by event, as a stream.
func readEach(t *testing.T, path string) []Event {
	t.Helper()
	r, c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var evs []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

func readAllOf(t *testing.T, path string, all func(*Reader) ([]Event, error)) []Event {
	t.Helper()
	r, c, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	evs, err := all(r)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestReadAllKeeps checks that the events ReadAll keeps, copies of the
// text read, are the events the Reader returns, strings and all; that
// ReadAllData's differ only in their empty Payload; and that a string
// that repeats is one copy.
func TestReadAllKeeps(t *testing.T) {
	for _, name := range []string{
		"vm16-1node-partition-busy-sleepers-6.12.txt", // tracing_mark_write lines
		"cpu0-busy-3s.txt",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(tracesDir, name)
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			want := readEach(t, path)
			all := readAllOf(t, path, ReadAll)
			data := readAllOf(t, path, ReadAllData)
			if len(all) != len(want) || len(data) != len(want) || len(want) == 0 {
				t.Fatalf("ReadAll %d events, ReadAllData %d, Next %d", len(all), len(data), len(want))
			}
			tasks := map[string]*byte{}
			marks := 0
			for i, w := range want {
				if all[i] != w {
					t.Fatalf("ReadAll event %d: %+v, want %+v", i, all[i], w)
				}
				d := w
				d.Payload = ""
				if data[i] != d {
					t.Fatalf("ReadAllData event %d: %+v, want %+v", i, data[i], d)
				}
				if _, ok := w.Data.(TracingMark); ok {
					marks++
				}
				p := unsafe.StringData(all[i].Task)
				if q, ok := tasks[w.Task]; ok && q != p {
					t.Fatalf("event %d: task %q is a copy of its own", i, w.Task)
				}
				tasks[w.Task] = p
			}
			if name == "vm16-1node-partition-busy-sleepers-6.12.txt" && marks == 0 {
				t.Error("no tracing_mark_write event read")
			}
		})
	}
}
