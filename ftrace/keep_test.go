package ftrace

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// readEach reads path event by event, as a stream.
func readEach(t *testing.T, path string) ([]Event, *Reader) {
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
			return evs, r
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

func readAllOf(t *testing.T, path string, all func(*Reader) ([]Event, error)) ([]Event, *Reader) {
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
	return evs, r
}

// withSkippedAndSwapped writes a copy of a recording, many of the Reader's buffers
// long, with what a keeping Reader must copy before it reads into a
// buffer again: every 97th event line followed by a line of a tracepoint
// the Reader skips (Stats.Skipped keeps its name), and every 89th swapped
// with the line after it where their CPUs differ (the sorting window holds
// the later one back). It drops the header's count of entries.
func withSkippedAndSwapped(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "# entries-in-buffer") {
			continue // the count would not hold
		}
		var ev Event
		_, _, err := parseLine(l, &ev)
		if err != nil || strings.HasPrefix(l, "#") {
			out = append(out, l)
			continue
		}
		if i%89 == 0 && i+1 < len(lines) {
			var next Event
			if _, _, err := parseLine(lines[i+1], &next); err == nil && next.CPU != ev.CPU && next.TS-ev.TS < 1000 {
				out = append(out, lines[i+1], l)
				i++
				continue
			}
		}
		out = append(out, l)
		if i%97 == 0 {
			out = append(out, strings.Replace(l, ev.Name+": ", "sched_waking_x"+strconv.Itoa(i%3)+": ", 1))
		}
	}
	p := filepath.Join(t.TempDir(), "shuffled.txt")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadAllKeeps checks that the events ReadAll keeps, copies of the
// text read, are the events the Reader returns, strings and all; that
// ReadAllData's differ only in their empty Payload; and that a string
// that repeats is one copy.
func TestReadAllKeeps(t *testing.T) {
	big := filepath.Join(tracesDir, "vm16-1node-partition-busy-sleepers-6.12.txt")
	for name, path := range map[string]string{
		"tracing_mark_write": big, // 797 kB: the Reader's buffers are read into again
		"small":              filepath.Join(tracesDir, "cpu0-busy-3s.txt"),
		"skipped-and-sorted": withSkippedAndSwapped(t, big),
	} {
		t.Run(name, func(t *testing.T) {
			want, wr := readEach(t, path)
			all, ar := readAllOf(t, path, ReadAll)
			data, dr := readAllOf(t, path, ReadAllData)
			if len(all) != len(want) || len(data) != len(want) || len(want) == 0 {
				t.Fatalf("ReadAll %d events, ReadAllData %d, Next %d", len(all), len(data), len(want))
			}
			// What the header and the counts keep of the text outlives
			// the buffers it was read in.
			for _, r := range []*Reader{ar, dr} {
				if !reflect.DeepEqual(r.Header(), wr.Header()) || !reflect.DeepEqual(r.Stats(), wr.Stats()) {
					t.Fatalf("header %+v and stats %+v, want %+v and %+v", r.Header(), r.Stats(), wr.Header(), wr.Stats())
				}
			}
			if name == "skipped-and-sorted" && (len(wr.Stats().Skipped) != 3 || wr.Header().Machine == nil) {
				t.Fatalf("skipped %v, machine %v: the copy holds no skipped tracepoints or no machine line", wr.Stats().Skipped, wr.Header().Machine)
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
			if name != "small" && marks == 0 {
				t.Error("no tracing_mark_write event read")
			}
		})
	}
}

// dataPtr is where an event's payload lies: events that share a copy
// hold the same.
func dataPtr(p Payload) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(&p))[1] }

// TestReadAllShares checks that ReadAll gives the repeated values of a
// tracepoint one copy, and stops looking up those of a tracepoint whose
// values do not repeat.
func TestReadAllShares(t *testing.T) {
	// 766 transitions of 4 values (a 2-CPU machine).
	path := filepath.Join(tracesDir, "kvm2-6.18-window-begins-inside-tie.txt")
	evs, _ := readAllOf(t, path, ReadAllData)
	values := map[TmigrGroupSetCPUInactive]bool{}
	copies := map[unsafe.Pointer]bool{}
	n := 0
	for _, ev := range evs {
		if p, ok := ev.Data.(TmigrGroupSetCPUInactive); ok {
			n++
			values[p] = true
			copies[dataPtr(ev.Data)] = true
		}
	}
	// A value whose slot another took since is copied again: a few
	// more copies than values.
	if n < 500 || len(values) > n/4 || len(copies) > 2*len(values) {
		t.Fatalf("%d tmigr_group_set_cpu_inactive events, %d values, %d copies", n, len(values), len(copies))
	}

	// A tracepoint's texts that never repeat: looked up no more after
	// shareProbe of them.
	d := dec{share: new(sharing)}
	row := byName["timer_expire_entry"]
	for i := range 2 * shareProbe {
		text := "timer=ffff888000000000 function=f now=" + strconv.Itoa(i) + " baseclk=1"
		p, known := decode(&d, row.name, text)
		if want := (TimerExpireEntry{Timer: 0xffff888000000000, Function: "f", Now: uint64(i), BaseClk: 1}); !known || d.err != nil || p != want {
			t.Fatalf("%q decoded as %+v (%v), want %+v", text, p, d.err, want)
		}
	}
	s := d.share.rows[row.id]
	if !s.off || s.looks != shareProbe || s.slots != nil {
		t.Fatalf("after %d distinct texts: off %v, %d looked up, table %v", 2*shareProbe, s.off, s.looks, s.slots != nil)
	}
	// And a repeated one is decoded once, its value shared; a payload
	// refused is not kept, and what follows it is read afresh.
	d = dec{share: new(sharing)}
	good := "timer=ffff888000000000 function=f now=7 baseclk=1"
	a, _ := decode(&d, row.name, good)
	if _, _ = decode(&d, row.name, "timer=ffff888000000000 function=f now=x baseclk=1"); d.err == nil {
		t.Fatal("a bad payload decoded")
	}
	b, _ := decode(&d, row.name, good)
	if d.err != nil || dataPtr(a) != dataPtr(b) || d.share.rows[row.id].hits != 1 {
		t.Fatalf("a repeated text: %v, copies %p and %p", d.err, dataPtr(a), dataPtr(b))
	}
}

// TestReadAllSized: a recording whose header counts its entries is read
// into one array of that size, which grows for no event (Keeping.Read
// reads the next one aside when the array is full: at the end there is
// none).
func TestReadAllSized(t *testing.T) {
	files, _ := filepath.Glob("../testdata/traces/*.txt")
	sized := 0
	for _, f := range files {
		rd, c, err := Open(f)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ReadAllData(rd)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if h := rd.Header(); !h.HasEntries || h.Entries != int64(len(evs)) || len(evs) < 64 {
			continue
		}
		sized++
		if cap(evs) != len(evs) {
			t.Errorf("%s: %d events in an array of %d", f, len(evs), cap(evs))
		}
	}
	if sized == 0 {
		t.Fatal("no recording whose header counts its events")
	}
}
