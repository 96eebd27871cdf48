package viz

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
)

// gen turns fuzz bytes into events.
type gen struct {
	b []byte
	i int
}

func (g *gen) u8() byte {
	if g.i >= len(g.b) {
		return 0
	}
	v := g.b[g.i]
	g.i++
	return v
}

func (g *gen) ptr() uint64 {
	if v := g.u8() % 7; v > 0 {
		return 0xffff888000000000 + uint64(v)<<4
	}
	return 0
}

func (g *gen) bit() uint8 { return 1 << (g.u8() % 8) }

// events returns a random but tracepoint-shaped event sequence: CPUs
// beyond the machine, pointers that name two groups, masks of several
// bits, exits without entries, time going backwards now and then.
func (g *gen) events() []ftrace.Event {
	var out []ftrace.Event
	ts := int64(1_000_000)
	for n := 0; g.i < len(g.b) && n < 400; n++ {
		cpu := int(g.u8() % 10)
		c2 := int(g.u8() % 10)
		switch d := g.u8(); {
		case d == 255:
			ts -= 5000
		default:
			ts += int64(d%4) * 500
		}
		var p ftrace.Payload
		gp := ftrace.TmigrGroupAndCPU{Group: g.ptr(), Lvl: int(g.u8() % 4), Numa: int(g.u8()%3) - 1, Active: g.u8(),
			Migrator: g.bit(), Parent: g.ptr(), Childmask: uint32(g.bit())}
		if gp.Migrator == 0x80 && g.u8()%2 == 0 {
			gp.Migrator = 0xff
		}
		switch g.u8() % 17 {
		case 0:
			p = ftrace.TmigrCPUActive{CPU: c2, Parent: g.ptr()}
		case 1:
			p = ftrace.TmigrCPUIdle{CPU: c2, Parent: g.ptr()}
		case 2:
			p = ftrace.TmigrCPUNewTimerIdle{CPU: c2, Parent: g.ptr()}
		case 3:
			p = ftrace.TmigrCPUAvailable{CPU: c2, Parent: g.ptr()}
		case 4:
			p = ftrace.TmigrCPUUnavailable{CPU: c2, Parent: g.ptr()}
		case 5:
			p = ftrace.TmigrHandleRemoteCPU{CPU: c2, Parent: g.ptr()}
		case 6:
			p = ftrace.TmigrGroupSetCPUActive(gp)
		case 7:
			p = ftrace.TmigrGroupSetCPUInactive(gp)
		case 8:
			p = ftrace.TmigrHandleRemote{Group: g.ptr(), Lvl: int(g.u8() % 4)}
		case 9:
			p = ftrace.TimerStart{Timer: uint64(g.u8() % 4), Function: "f", Expires: uint64(g.u8()), CPU: c2}
		case 10:
			p = ftrace.TimerExpireEntry{Timer: uint64(g.u8() % 4), Function: "f", Now: uint64(g.u8())}
		case 11:
			p = ftrace.TimerExpireExit{Timer: uint64(g.u8() % 4)}
		case 12:
			p = ftrace.HrtimerStart{Hrtimer: uint64(g.u8() % 4), Function: "h", Expires: int64(g.u8()) * 1000}
		case 13:
			p = ftrace.HrtimerExpireEntry{Hrtimer: uint64(g.u8() % 4), Function: "h", Now: int64(g.u8()) * 1000}
		case 14:
			p = ftrace.HrtimerExpireExit{Hrtimer: uint64(g.u8() % 4)}
		case 15:
			if g.u8()%2 == 0 {
				p = ftrace.Lost{Count: int64(g.u8()) - 1}
			} else {
				p = ftrace.BufferStarted{}
			}
		case 16:
			if g.u8()%2 == 0 {
				p = ftrace.TmigrConnectCPUParent{CPU: c2, Groupmask: uint32(g.bit()), Parent: g.ptr(), Lvl: int(g.u8() % 3)}
			} else {
				p = ftrace.TmigrConnectChildParent{Group: g.ptr(), Groupmask: uint32(g.bit()), Parent: g.ptr(), Lvl: int(g.u8() % 3)}
			}
		}
		out = append(out, ftrace.Event{Line: n + 1, CPU: cpu, TS: ts, Name: p.Name(), Data: p})
	}
	return out
}

func fuzzHeader(kind byte) ftrace.Header {
	switch kind % 3 {
	case 0:
		return ftrace.Header{} // no machine line
	case 1:
		return ftrace.Header{CPUs: 8}
	}
	m := &ftrace.Machine{CPUs: 8, Nodes: 2, NodeCPUs: []cpumask.Mask{cpumask.Range(0, 3), cpumask.Range(4, 7)},
		Kernel: "6.19.0", HZ: 250, Cmdline: "isolcpus=1-3,5-7 nohz_full=7"}
	return ftrace.Header{CPUs: 8, Machine: m}
}

// checkPictures writes both pictures of a timeline and checks them as
// the tests of real recordings do.
// On a large machine (a fuzzed machine line can say 8192 CPUs) it only
// checks that the JSON is valid, to keep the fuzzer fast.
func checkPictures(t *testing.T, tl *Timeline) {
	var b bytes.Buffer
	if err := WritePerfetto(&b, tl); err != nil {
		t.Fatal(err)
	}
	if len(tl.CPUs) > 64 {
		if !json.Valid(b.Bytes()) {
			t.Fatal("invalid JSON")
		}
		b.Reset()
		if err := WriteHTML(&b, tl, Extras{Title: "fuzz"}); err != nil {
			t.Fatal(err)
		}
		parsePage(t, b.Bytes())
		return
	}
	im := importJSON(t, b.Bytes(), llround)
	remote := 0
	for i := range tl.Expiries {
		if tl.Expiries[i].Remote() {
			remote++
		}
	}
	if len(im.flowFrom) != remote {
		t.Fatalf("%d arrows for %d remote expiries", len(im.flowFrom), remote)
	}
	b.Reset()
	if err := WriteHTML(&b, tl, Extras{Title: "fuzz"}); err != nil {
		t.Fatal(err)
	}
	checkPage(t, tl, Extras{}, b.Bytes())
}

// Whatever the events, building never panics, spans never overlap, and
// what it builds pictures well.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{2, 0, 1, 1, 6, 0x10, 0, 2, 1, 3, 0xfe, 1, 0, 5, 1, 0, 1, 1, 5, 2, 0, 3, 1, 1, 10, 1, 1})
	f.Add([]byte{1, 3, 3, 255, 4, 9, 9, 9, 9, 9, 9, 9, 9, 9, 10})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		g := &gen{b: data[1:]}
		hdr := fuzzHeader(data[0])
		evs := g.events()
		tl, err := Build(hdr, slices.Values(evs))
		if err == nil {
			checkTimeline(t, tl)
			checkPictures(t, tl)
		}
		tl, err = FromEvents(hdr, evs)
		if err != nil {
			if !strings.Contains(err.Error(), "names CPU") {
				t.Fatalf("FromEvents: %v", err)
			}
			return
		}
		checkTimeline(t, tl)
		checkPictures(t, tl)
	})
}

// checkTimeline checks what every timeline holds to.
func checkTimeline(t *testing.T, tl *Timeline) {
	for c := range tl.CPUs {
		st := tl.CPUs[c].States
		for i, s := range st {
			if s.End <= s.Start || s.Start < tl.Start || s.End > tl.End || i > 0 && s.Start < st[i-1].End {
				t.Fatalf("CPU %d: state spans %+v", c, st)
			}
		}
		rs := tl.CPUs[c].Roles
		for i, r := range rs {
			if r.End <= r.Start || len(r.Groups) == 0 || i > 0 && r.Start < rs[i-1].End {
				t.Fatalf("CPU %d: role spans %+v", c, rs)
			}
		}
	}
	for g := range tl.Groups {
		ms := tl.Groups[g].Migrators
		for i, m := range ms {
			if m.End <= m.Start || i > 0 && m.Start < ms[i-1].End {
				t.Fatalf("%s: migrator spans %+v", tl.Groups[g].Name, ms)
			}
		}
	}
	for _, e := range tl.Expiries {
		if e.Handler < 0 || e.Handler >= len(tl.CPUs) || e.Owner < 0 || e.Owner >= len(tl.CPUs) {
			t.Fatalf("expiry %+v outside the %d CPUs", e, len(tl.CPUs))
		}
	}
}

// Whatever the text, reading it never panics, and a trace it reads
// pictures well.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"vm16-2node-isol-busy-sleepers.txt", "vm8-1node-rt-fifo-other-sleepers.txt", "cpu0-busy-3s.txt"} {
		b, err := os.ReadFile(tracePath(name))
		if err != nil {
			f.Fatal(err)
		}
		lines := strings.SplitAfter(string(b), "\n")
		var head []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "# entries-in-buffer") { // the count would not match a cut
				head = append(head, l)
			}
			if len(head) == 70 {
				break
			}
		}
		f.Add(strings.Join(head, ""))
	}
	f.Add("# machine: cpus=2 nodes=1 node-cpus=0-1 kernel=6.19.0 hz=250 cmdline=\"isolcpus=1\"\n" +
		"          <idle>-0       [001] d..2.     1.000000: tmigr_cpu_unavailable: cpu=1 parent=0000000000000010 wakeup=9223372036854775807\n" +
		"CPU:0 [LOST 3 EVENTS]\n" +
		"          <idle>-0       [000] d..2.     0.500000: timer_expire_entry: timer=0000000000000040 function=f now=1 baseclk=1\n")
	f.Fuzz(func(t *testing.T, text string) {
		tl, err := Read(strings.NewReader(text))
		if err != nil {
			return
		}
		checkTimeline(t, tl)
		checkPictures(t, tl)
	})
}
