package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/ftrace"
)

// The tests read the JSON back the way Perfetto's JSON importer does
// (src/trace_processor/importers/json, read to understand, not copied):
// events sorted by timestamp (stably), one slice stack per (pid, tid), a
// slice closed when an event at or past its end arrives, "s" and "f" with
// bp "e" bound to the slice on top of their track's stack. They check that
// the file is what the Trace Event Format allows, that slices nest, and
// that every flow binds where it should.

type jsonEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	TS   *float64        `json:"ts"`
	Dur  *float64        `json:"dur"`
	PID  *int            `json:"pid"`
	TID  *int            `json:"tid"`
	ID   *int            `json:"id"`
	BP   string          `json:"bp"`
	S    string          `json:"s"`
	Args json.RawMessage `json:"args"`

	idx int // file order
}

type imported struct {
	events  []jsonEvent
	other   map[string]any
	procs   map[int]string    // pid -> process_name
	threads map[[2]int]string // (pid, tid) -> thread_name
	slices  map[[2]int][]slice
	// flows by id: the slices "s" and "f" bound to.
	flowFrom, flowTo map[int]*slice
}

type slice struct {
	start, end int64
	ev         *jsonEvent
}

type track = [2]int

// importJSON reads a trace as Perfetto would; round converts a µs
// timestamp to ns (llround in current Perfetto, truncation in older ones).
func importJSON(t *testing.T, data []byte, round func(float64) int64) *imported {
	t.Helper()
	var top struct {
		TraceEvents []jsonEvent    `json:"traceEvents"`
		OtherData   map[string]any `json:"otherData"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("not a trace-event JSON object: %v", err)
	}
	im := &imported{events: top.TraceEvents, other: top.OtherData, procs: map[int]string{}, threads: map[track]string{},
		slices: map[track][]slice{}, flowFrom: map[int]*slice{}, flowTo: map[int]*slice{}}
	for i := range im.events {
		e := &im.events[i]
		e.idx = i
		if e.PID == nil {
			t.Fatalf("event %d has no pid: %+v", i, e)
		}
		switch e.Ph {
		case "M":
			var a struct {
				Name      *string `json:"name"`
				SortIndex *int    `json:"sort_index"`
			}
			if err := json.Unmarshal(e.Args, &a); err != nil {
				t.Fatalf("metadata %d args: %v", i, err)
			}
			switch e.Name {
			case "process_name":
				im.procs[*e.PID] = *a.Name
			case "thread_name":
				im.threads[track{*e.PID, *e.TID}] = *a.Name
			case "process_sort_index", "thread_sort_index":
				if a.SortIndex == nil {
					t.Fatalf("metadata %d: %s without sort_index", i, e.Name)
				}
			default:
				t.Fatalf("metadata %d: unknown %q", i, e.Name)
			}
		case "X":
			if e.TS == nil || e.Dur == nil || e.TID == nil || *e.Dur < 0 || e.Name == "" {
				t.Fatalf("complete event %d lacks ts, dur, tid or name: %+v", i, e)
			}
		case "s", "f":
			if e.TS == nil || e.TID == nil || e.ID == nil || e.Cat == "" || e.Name == "" {
				t.Fatalf("flow event %d lacks ts, tid, id, cat or name: %+v", i, e)
			}
			if e.Ph == "f" && e.BP != "e" {
				t.Fatalf("flow end %d binds to the next slice (bp %q), not the enclosing one", i, e.BP)
			}
		case "i":
			if e.TS == nil || e.TID == nil || e.S != "t" {
				t.Fatalf("instant event %d: %+v", i, e)
			}
		default:
			t.Fatalf("event %d: phase %q", i, e.Ph)
		}
	}
	order := make([]*jsonEvent, 0, len(im.events))
	for i := range im.events {
		if im.events[i].Ph != "M" {
			order = append(order, &im.events[i])
		}
	}
	ts := func(e *jsonEvent) int64 { return round(*e.TS) }
	sort.SliceStable(order, func(i, j int) bool { return ts(order[i]) < ts(order[j]) })
	stacks := map[track][]*slice{}
	for _, e := range order {
		tr := track{*e.PID, *e.TID}
		st := stacks[tr]
		now := ts(e)
		switch e.Ph {
		case "X":
			for len(st) > 0 && st[len(st)-1].end <= now {
				st = st[:len(st)-1]
			}
			s := &slice{start: now, end: now + round(*e.Dur), ev: e}
			if len(st) > 0 && s.end > st[len(st)-1].end {
				t.Fatalf("slice %q at %d..%d overlaps %q at %d..%d on track %v without nesting",
					e.Name, s.start, s.end, st[len(st)-1].ev.Name, st[len(st)-1].start, st[len(st)-1].end, tr)
			}
			st = append(st, s)
			im.slices[tr] = append(im.slices[tr], *s)
		case "s", "f":
			if len(st) == 0 {
				t.Fatalf("flow %s %d at %d on track %v: no slice open", e.Ph, *e.ID, now, tr)
			}
			top := st[len(st)-1]
			if now < top.start || now >= top.end {
				t.Fatalf("flow %s %d at %d binds to %q at %d..%d, which does not enclose it", e.Ph, *e.ID, now, top.ev.Name, top.start, top.end)
			}
			m := im.flowFrom
			if e.Ph == "f" {
				m = im.flowTo
				if im.flowFrom[*e.ID] == nil {
					t.Fatalf("flow %d ends before it starts", *e.ID)
				}
			}
			if m[*e.ID] != nil {
				t.Fatalf("flow %d has two %q events", *e.ID, e.Ph)
			}
			m[*e.ID] = top
		}
		stacks[tr] = st
	}
	for id := range im.flowFrom {
		if im.flowTo[id] == nil {
			t.Fatalf("flow %d never ends", id)
		}
	}
	return im
}

func llround(us float64) int64 { return int64(math.Round(us * 1000)) }
func trunc(us float64) int64   { return int64(us * 1000) }

// remoteByHand counts the timers that ran on another CPU than their owner,
// the way one reads a trace by eye: a timer_expire_entry that follows a
// tmigr_handle_remote_cpu of another CPU on the same CPU, with no other
// tmigr line of that CPU between, is that CPU's timer.
func remoteByHand(events []ftrace.Event) (n int, pairs map[[2]int]int) {
	pairs = map[[2]int]int{}
	ctx := map[int]int{}
	for _, ev := range events {
		switch {
		case ev.Name == "tmigr_handle_remote_cpu":
			var cpu int
			fmt.Sscanf(ev.Payload, "cpu=%d", &cpu)
			ctx[ev.CPU] = cpu + 1
		case strings.HasPrefix(ev.Name, "tmigr_"):
			delete(ctx, ev.CPU)
		case ev.Name == "timer_expire_entry":
			if o := ctx[ev.CPU] - 1; o >= 0 && o != ev.CPU {
				n++
				pairs[[2]int{ev.CPU, o}]++
			}
		}
	}
	return n, pairs
}

func TestPerfettoRecordings(t *testing.T) {
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			hdr, events := readTrace(t, name)
			tl, err := FromEvents(hdr, events)
			if err != nil {
				t.Fatal(err)
			}
			checkPerfetto(t, tl, events)
		})
	}
	t.Run("simulated", func(t *testing.T) {
		sr := simulated(t)
		tl, err := Read(bytes.NewReader(sr.trace))
		if err != nil {
			t.Fatal(err)
		}
		r := ftrace.NewReader(bytes.NewReader(sr.trace))
		var events []ftrace.Event
		for {
			ev, err := r.Next()
			if err != nil {
				break
			}
			events = append(events, ev)
		}
		if n, _ := remoteByHand(events); n == 0 {
			t.Fatal("the simulated isolated migrators ran no housekeeping timer")
		}
		checkPerfetto(t, tl, events)
	})
}

// checkPerfetto writes tl and checks it against the trace's events.
func checkPerfetto(t *testing.T, tl *Timeline, events []ftrace.Event) {
	t.Helper()
	var b bytes.Buffer
	if err := WritePerfetto(&b, tl); err != nil {
		t.Fatal(err)
	}
	want, pairs := remoteByHand(events)
	for _, round := range []func(float64) int64{llround, trunc} {
		im := importJSON(t, b.Bytes(), round)
		if len(im.flowFrom) != want {
			t.Fatalf("%d flow arrows, the trace holds %d remote expiries", len(im.flowFrom), want)
		}
		got := map[[2]int]int{}
		for id, to := range im.flowTo {
			from := im.flowFrom[id]
			var a timerArgs
			if err := json.Unmarshal(to.ev.Args, &a); err != nil {
				t.Fatal(err)
			}
			var h, o int
			fmt.Sscanf(a.Handler, "CPU %d", &h)
			fmt.Sscanf(a.Owner, "CPU %d", &o)
			// From the owner's state track to the handler's timers track.
			if *from.ev.PID != cpuPID(o) || *from.ev.TID != cpuTID(o, tidState) || from.ev.Cat != "state" {
				t.Errorf("flow %d starts on pid %d tid %d (%s), not on CPU %d's state", id, *from.ev.PID, *from.ev.TID, from.ev.Cat, o)
			}
			if *to.ev.PID != cpuPID(h) || *to.ev.TID != cpuTID(h, tidTimers) || to.ev.Cat != "timer,remote" {
				t.Errorf("flow %d ends on pid %d tid %d (%s), not on CPU %d's timers", id, *to.ev.PID, *to.ev.TID, to.ev.Cat, h)
			}
			got[[2]int{h, o}]++
		}
		if fmt.Sprint(got) != fmt.Sprint(pairs) {
			t.Errorf("arrows by (handler, owner) %v, the trace %v", got, pairs)
		}
		// A track per CPU, named with its class.
		for c := range tl.CPUs {
			if name := im.procs[cpuPID(c)]; name != CPUTitle(&tl.CPUs[c]) || !strings.HasPrefix(name, fmt.Sprintf("CPU %d (", c)) {
				t.Errorf("CPU %d's process is named %q", c, name)
			}
			if im.threads[track{cpuPID(c), cpuTID(c, tidState)}] != "hierarchy state" {
				t.Errorf("CPU %d has no state track", c)
			}
			// Its state slices cover the trace without a gap.
			st := im.slices[track{cpuPID(c), cpuTID(c, tidState)}]
			for i := 1; i < len(st); i++ {
				if st[i].start != st[i-1].end {
					t.Fatalf("CPU %d: state slice %q ends at %d, the next starts at %d", c, st[i-1].ev.Name, st[i-1].end, st[i].start)
				}
			}
		}
		// One timer slice per expiry, named by function.
		nTimers := 0
		for tr, sl := range im.slices {
			if strings.HasPrefix(im.threads[tr], "timers") || strings.HasPrefix(im.threads[tr], "hrtimers") {
				nTimers += len(sl)
			}
		}
		if nTimers != len(tl.Expiries) {
			t.Errorf("%d timer slices for %d expiries", nTimers, len(tl.Expiries))
		}
		if im.other["remote_expiries"] != float64(want) {
			t.Errorf("otherData says %v remote expiries", im.other["remote_expiries"])
		}
	}
}

// The migrator a recording shows is the one the kernel printed: on
// vm16-2node-isol-busy-sleepers CPU 0 going idle hands GRP0:0 to CPU 1, the
// lowest active CPU (isolated, since 6.12 does not exclude it).
func TestPerfettoMigrators(t *testing.T) {
	tl, err := ReadFile(tracePath("vm16-2node-isol-busy-sleepers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WritePerfetto(&b, tl); err != nil {
		t.Fatal(err)
	}
	im := importJSON(t, b.Bytes(), llround)
	lane := im.slices[track{hierPID, groupTID + 0}]
	if im.threads[track{hierPID, groupTID}] != "GRP0:0 (CPUs 0-7)" || len(lane) == 0 || lane[0].ev.Name != "CPU 1" {
		t.Fatalf("GRP0:0's lane: %q, %d slices, first %+v", im.threads[track{hierPID, groupTID}], len(lane), lane)
	}
	// The first line of the trace: "tmigr_group_set_cpu_inactive: ...
	// lvl=0 ... migrator=2" at 9.852044.
	if lane[0].start != 9852044000 {
		t.Errorf("GRP0:0's first migrator slice starts at %d", lane[0].start)
	}
	roles := im.slices[track{cpuPID(1), cpuTID(1, tidRoles)}]
	if len(roles) == 0 || !strings.HasPrefix(roles[0].ev.Name, "migrator of GRP0:0") {
		t.Errorf("CPU 1's migrator track: %+v", roles)
	}
}
