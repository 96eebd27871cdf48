package ftrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readWith reads text whole with OpenReaderWith.
func readWith(t testing.TB, text []byte, o OpenOptions) ([]Event, error) {
	t.Helper()
	r, c, err := OpenReaderWith(bytes.NewReader(text), "test", o)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return ReadAll(r)
}

// wholeSort is the order the window gives when it holds the whole input,
// put in one event at a time as the time order note says: an event that
// came in order after every one before it; a late one before every one
// of a later time and, among those of its time, after its own CPU's and
// the lower CPUs' and before the first of a higher CPU. A marker goes just
// before the next event of its CPU (last, by CPU, when there is none) and
// takes the time of the event before it.
func wholeSort(evs []Event) []Event {
	type item struct {
		key int64
		ev  Event
	}
	var list []item
	insert := func(key int64, late bool, ev Event) {
		start, end := len(list), len(list)
		for i := len(list) - 1; i >= 0 && list[i].key >= key; i-- {
			if list[i].key == key {
				start = i
			} else {
				start, end = i, i
			}
		}
		p := end
		if late {
			p = start
			for i := start; i < end; i++ {
				if list[i].ev.CPU == ev.CPU {
					p = i + 1
				}
			}
			for p < end && list[p].ev.CPU < ev.CPU {
				p++
			}
		}
		list = slices.Insert(list, p, item{key, ev})
	}
	markers := map[int][]Event{}
	var maxKey int64
	placed := false
	for _, ev := range evs {
		if ev.Name == "" {
			markers[ev.CPU] = append(markers[ev.CPU], ev)
			continue
		}
		late := placed && ev.TS < maxKey
		if !placed || ev.TS > maxKey {
			maxKey, placed = ev.TS, true
		}
		for _, m := range markers[ev.CPU] {
			insert(ev.TS, late, m)
		}
		delete(markers, ev.CPU)
		insert(ev.TS, late, ev)
	}
	cpus := slices.Sorted(maps.Keys(markers))
	for _, c := range cpus {
		for _, m := range markers[c] {
			list = append(list, item{1<<63 - 1, m})
		}
	}
	out := make([]Event, len(list))
	var last int64
	for j, it := range list {
		ev := it.ev
		if ev.Name == "" {
			ev.TS = last
		} else {
			last = ev.TS
		}
		out[j] = ev
	}
	return out
}

// shuffled returns a trace of cpus CPUs, each CPU's events in time order,
// the CPUs' lines interleaved at random with up to lag of disorder in
// time between them, and Lost markers here and there.
func shuffled(rng *rand.Rand, cpus, n int, lag int64) []byte {
	var b bytes.Buffer
	b.WriteString("# tracer: nop\n")
	ts := make([]int64, cpus)
	for i := range ts {
		ts[i] = 100_000_000 + rng.Int64N(lag+1)
	}
	for i := 0; i < n; i++ {
		// The CPU furthest behind goes next, but not always.
		c := rng.IntN(cpus)
		for j := range ts {
			if ts[j] < ts[c] && rng.IntN(2) == 0 {
				c = j
			}
		}
		if rng.IntN(50) == 0 {
			fmt.Fprintf(&b, "CPU:%d [LOST %d EVENTS]\n", c, rng.IntN(9)+1)
		}
		fmt.Fprintf(&b, "          <idle>-0       [%03d] d..2.   %d.%06d: timer_cancel: timer=%016x\n",
			c, ts[c]/1e9, ts[c]%1e9/1e3, i)
		ts[c] += 1000 * rng.Int64N(20)
	}
	return b.Bytes()
}

// TestWindowSorts: with a window that holds the input, events out of
// order come out in the order of a sort of the whole input; with a
// smaller one that still spans the disorder, in the same order.
func TestWindowSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		text := shuffled(rng, 1+rng.IntN(6), 300, 200_000)
		asRead, err := readWith(t, text, OpenOptions{Order: Sort, Window: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		// asRead is sorted already; the whole sort of the lines as
		// written is what it must equal.
		plain := NewLiveReader(bytes.NewReader(text))
		var written []Event
		for {
			ev, err := plain.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			written = append(written, ev)
		}
		want := wholeSort(written)
		if !slices.EqualFunc(asRead, want, func(a, b Event) bool { return describeEvent(a) == describeEvent(b) }) {
			t.Fatalf("round %d: the window's order differs from the whole sort", round)
		}
		for _, size := range []int{64, 200} {
			got, err := readWith(t, text, OpenOptions{Window: size})
			if err != nil {
				// Disorder wider than the window: the error names it.
				if !strings.Contains(err.Error(), fmt.Sprintf("more than the %d events held", size)) {
					t.Fatalf("window %d: %v", size, err)
				}
				continue
			}
			if len(got) != len(want) {
				t.Fatalf("window %d: %d events, want %d", size, len(got), len(want))
			}
			for i := 1; i < len(got); i++ {
				if got[i].Name != "" && got[i].TS < got[i-1].TS {
					t.Fatalf("window %d: event %d (line %d) earlier than the one before", size, i, got[i].Line)
				}
			}
		}
	}
}

// TestWindowInOrder: input in time order comes out as it was read, ties
// of different CPUs included, whatever the window.
func TestWindowInOrder(t *testing.T) {
	text := []byte(`# tracer: nop
          <idle>-0       [003] d..2.   100.000010: timer_cancel: timer=0000000000000001
          <idle>-0       [001] d..2.   100.000010: timer_cancel: timer=0000000000000002
CPU:1 [LOST 5 EVENTS]
          <idle>-0       [002] d..2.   100.000011: timer_cancel: timer=0000000000000003
          <idle>-0       [001] d..2.   100.000011: timer_cancel: timer=0000000000000004
`)
	for _, o := range []OpenOptions{{}, {Window: 1}, {Order: Refuse}} {
		evs, err := readWith(t, text, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		var lines []int
		for _, ev := range evs {
			lines = append(lines, ev.Line)
		}
		if !slices.Equal(lines, []int{2, 3, 4, 5, 6}) {
			t.Errorf("%+v: lines %v, want them as written", o, lines)
		}
	}
}

// TestWindowKeepsInOrderTies: once an event came late, the events of one
// microsecond that came in order keep that order (trace_pipe's, the
// kernel's nanosecond merge), and the late one goes among those of its
// microsecond after its own CPU's and lower CPUs', before higher CPUs'.
func TestWindowKeepsInOrderTies(t *testing.T) {
	text := []byte(`# tracer: nop
          <idle>-0       [001] d..2.   100.000010: timer_cancel: timer=0000000000000001
          <idle>-0       [000] d..2.   100.000010: timer_cancel: timer=0000000000000002
          <idle>-0       [002] d..2.   100.000012: timer_cancel: timer=0000000000000003
          <idle>-0       [001] d..2.   100.000013: timer_cancel: timer=0000000000000004
          <idle>-0       [000] d..2.   100.000012: timer_cancel: timer=0000000000000005
          <idle>-0       [003] d..2.   100.000010: timer_cancel: timer=0000000000000006
`)
	evs, err := readWith(t, text, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, ev := range evs {
		lines = append(lines, ev.Line)
	}
	// Lines 6 and 7 came late: 6 goes before CPU 2's line 4 of its
	// microsecond, 7 after the two of its microsecond that came in order.
	if want := []int{2, 3, 7, 6, 4, 5}; !slices.Equal(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
}

// TestRefuse: Refuse ends the reading at the first event earlier than
// another CPU's latest, naming both lines.
func TestRefuse(t *testing.T) {
	dir := filepath.Join(tracecmdDir, "host2")
	cpu0, cpu1 := gunzip(t, filepath.Join(dir, "cpu0.txt.gz")), gunzip(t, filepath.Join(dir, "cpu1.txt.gz"))
	text := append(bytes.Clone(cpu1), cpu0...)
	_, err := readWith(t, text, OpenOptions{Order: Refuse})
	var le *LineError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "out of time order") || !strings.Contains(err.Error(), "on CPU 1 (line ") {
		t.Fatalf("Refuse: %v", err)
	}
	if le.Line != bytes.Count(cpu1, []byte("\n"))+13 {
		t.Errorf("error at line %d, want the first line of CPU 0's events", le.Line)
	}
	// The same files sort with a window that holds them, and not with
	// one that does not: that error names the line too.
	if _, err := readWith(t, text, OpenOptions{}); err != nil {
		t.Errorf("Sort: %v", err)
	}
	_, err = readWith(t, text, OpenOptions{Window: 100})
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "more than the 100 events held to sort") {
		t.Errorf("a window of 100: %v", err)
	}
}

// FuzzWindow: whatever the input, a Reader that sorts in a small window or
// refuses gives events in time order across CPUs (the simulator's traces,
// read as written, aside) or an error; when the small window succeeds it
// gives the events the default one gives.
func FuzzWindow(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		f.Add(shuffled(rng, 3, 40, 30_000))
	}
	f.Add([]byte(`# tracer: nop
          <idle>-0       [001] d..2.   100.000020: timer_cancel: timer=0000000000000001
CPU:1 [LOST 5 EVENTS]
          <idle>-0       [000] d..2.   100.000010: timer_cancel: timer=0000000000000003
`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		all, errAll := readWith(t, data, OpenOptions{})
		for _, o := range []OpenOptions{{Window: 4}, {Order: Refuse}} {
			r, c, err := OpenReaderWith(bytes.NewReader(data), "fuzz", o)
			if err != nil {
				continue
			}
			evs, err := ReadAll(r)
			c.Close()
			if err != nil {
				if err.Error() == "" {
					t.Fatal("an error without a message")
				}
				continue
			}
			if len(r.Source().Warnings) > 0 && strings.Contains(strings.Join(r.Source().Warnings, " "), "simulator") {
				continue
			}
			var last int64 = -1 << 63
			for _, ev := range evs {
				if ev.Name != "" {
					if ev.TS < last {
						t.Fatalf("%+v: line %d at %d after %d", o, ev.Line, ev.TS, last)
					}
					last = ev.TS
				}
			}
			if errAll != nil || len(evs) != len(all) {
				t.Fatalf("%+v: %d events; the default window: %d events, %v", o, len(evs), len(all), errAll)
			}
		}
	})
}
