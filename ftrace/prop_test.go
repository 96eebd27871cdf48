package ftrace

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"pgregory.net/rapid"
)

// Property tests: any payload or event the kernel could print reads back as
// itself.

var (
	genSym = rapid.OneOf(
		rapid.StringMatching(`[a-z_][a-z0-9_.]{0,24}`),
		rapid.StringMatching(`[a-z_][a-z0-9_]{0,16} \[[a-z_][a-z0-9_]{0,12}\]`),
		rapid.StringMatching(`0x[0-9a-f]{1,16}`),
	)
	genU64 = rapid.OneOf(
		rapid.Uint64(),
		rapid.Uint64Range(0, 1<<20),
		rapid.SampledFrom([]uint64{0, 1, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1<<63 - 1, 1 << 63, 1<<64 - 1}),
	)
	genTask = rapid.OneOf(
		rapid.SampledFrom([]string{"<idle>", "<...>", "kworker/u32:1", "rcu_preempt", "sh", "Web Content", "x-1", "kworker/0:1H-kblockd"}),
		rapid.StringMatching(`[!-~]([ !-~]{0,30}[!-~])?`),
	)
	genFlags = rapid.OneOf(
		rapid.SampledFrom([]Flags{"", "d..2.", ".Ns1.", "dNs2.", "D.H1f", "d..2", "...."}),
		rapid.Custom(func(t *rapid.T) Flags {
			return Flags(rapid.StringMatching(`[.dDbX][.NnpBLbl][.ZzHhs][.0-9a-f][.0-9a-f]?`).Draw(t, "flags"))
		}),
	)
)

func genPayload(t *rapid.T) Payload {
	kind := rapid.IntRange(0, 30).Draw(t, "kind")
	var v [5]uint64
	for i := range v {
		v[i] = genU64.Draw(t, "v")
	}
	return buildPayload(kind, v, genSym.Draw(t, "sym"), true)
}

func TestPayloadRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPayload(t)
		if !checkPayloadRoundTrip(t, p) {
			t.Fatalf("a valid payload was refused: %+v", p)
		}
	})
}

func TestEventLineRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nano := rapid.Bool().Draw(t, "nano")
		ts := rapid.Int64Range(0, 1<<62).Draw(t, "ts")
		if !nano {
			ts -= ts % 1000
		}
		ev := Event{
			Task:  genTask.Draw(t, "task"),
			PID:   rapid.IntRange(0, 1<<31-1).Draw(t, "pid"),
			CPU:   rapid.IntRange(0, cpumask.MaxCPUs-1).Draw(t, "cpu"),
			Flags: genFlags.Draw(t, "flags"),
			TS:    ts,
			Data:  genPayload(t),
		}
		if sep, _, _, _ := findSep(ev.Task); sep >= 0 {
			t.Skip("task holds -PID [CPU]")
		}
		line, err := AppendEvent(nil, ev, nano)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseLine(strings.TrimSuffix(string(line), "\n"))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ev.Name, ev.Payload = ev.Data.Name(), got.Payload
		if got != ev {
			t.Fatalf("%q\nread as %+v\nwant    %+v", line, got, ev)
		}
	})
}

func TestMachineRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cpus := rapid.IntRange(1, 300).Draw(t, "cpus")
		nodes := rapid.IntRange(1, 8).Draw(t, "nodes")
		m := Machine{CPUs: cpus, Nodes: nodes, NodeCPUs: make([]cpumask.Mask, nodes),
			Kernel:  rapid.StringMatching(`[0-9]\.[0-9]{1,2}(\.[0-9]{1,3})?(-rc[0-9])?`).Draw(t, "kernel"),
			HZ:      rapid.SampledFrom([]int{100, 250, 300, 1000}).Draw(t, "hz"),
			Cmdline: rapid.StringMatching(`(isolcpus=[0-9,-]{0,10}|nohz_full=[0-9]{0,3}|quiet| |"a b"|\\|é){0,4}`).Draw(t, "cmdline"),
			Note:    rapid.StringMatching(`([!-~][ !-~]{0,20})?`).Draw(t, "note"),
		}
		for c := range cpus {
			m.NodeCPUs[rapid.IntRange(0, nodes-1).Draw(t, "node")].Set(c)
			if rapid.Bool().Draw(t, "busy") {
				m.Busy.Set(c)
			}
			if rapid.Bool().Draw(t, "sleeper") {
				m.Sleepers.Set(c)
			}
		}
		if rapid.Bool().Draw(t, "refused") {
			// An offline the kernel refused.
			m.Refused = []Change{{At: time.Duration(rapid.IntRange(0, 5000).Draw(t, "refused at")) * time.Millisecond,
				Kind: ChangeOffline, CPU: rapid.IntRange(0, cpus-1).Draw(t, "refused cpu")}}
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		got, err := ParseMachine(m.String())
		if err != nil || !machinesEqual(got, m) {
			t.Fatalf("%q reads as %q (%v)", m.String(), got.String(), err)
		}
	})
}

// TestNumberFastPaths: parseUint and parseHex, which test the bound once
// for a string too short to overflow, say what their digit-by-digit forms
// say of any string and bound, the error's words included.
func TestNumberFastPaths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("0123456789abcdefgx-")), 0, 22, -1).Draw(t, "s")
		hi := rapid.OneOf(rapid.Uint64(), rapid.SampledFrom([]uint64{0, 9, 255, math.MaxInt32, math.MaxUint32, math.MaxUint64})).Draw(t, "hi")
		n, why := parseUint(s, hi)
		if m, whyS := parseUintSlow(s, hi); n != m || why != whyS {
			t.Fatalf("parseUint(%q, %d) = %d, %q; digit by digit %d, %q", s, hi, n, why, m, whyS)
		}
		n, why = parseHex(s, hi)
		if m, whyS := parseHexSlow(s, hi); n != m || why != whyS {
			t.Fatalf("parseHex(%q, %#x) = %#x, %q; digit by digit %#x, %q", s, hi, n, why, m, whyS)
		}
	})
}
