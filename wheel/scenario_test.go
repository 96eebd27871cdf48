package wheel

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestScenarios replays the files in testdata/ (the worked
// examples of docs/wheel.md, step by step). Commands, each on a base named cpu=N (default 0):
//
//	init    [cpu=N] (depth=D | hz=HZ) clk=V
//	add     [cpu=N] t=NAME expires=V [now=J] [pinned]
//	                forward to J first if now= is given (as __mod_timer
//	                does); a pending timer is detached first (a re-arm)
//	del     t=NAME
//	forward [cpu=N] to=J
//	run     [cpu=N] jiffies=J [rearm=(NAME:DELTA,...)]
//	                the __run_timers loop; a timer named in rearm arms
//	                itself again at J+DELTA when it runs
//	next    [cpu=N] basej=J        next_timer_interrupt
//	recalc  [cpu=N]
//	state   [cpu=N]
//	migrate from=N to=M [now=J]    timers_dead_cpu: forward M to J, move
//	index   depth=D clk=V expires=V
//
// Tick values are decimal, or 2^K, 2^K-N, 2^K+N (so 2^64-10 is ten ticks
// before the 64-bit wrap); values within 2^32 of the wrap print that way.
//
// Regenerate with -rewrite after a deliberate change, then read the diff:
// every number in these files was checked by hand against docs/wheel.md.
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return
		}
		s := &scenario{bases: map[int]*Base{}, timers: map[string]*Timer{}, bucket: map[*Timer]uint64{}}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := s.do(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

type scenario struct {
	bases  map[int]*Base
	timers map[string]*Timer
	order  []string          // timer names in creation order
	bucket map[*Timer]uint64 // bucket expiry reported when last enqueued
}

func (s *scenario) do(d *datadriven.TestData) (string, error) {
	args := map[string][]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = a.Vals
	}
	cpu := 0
	if v, ok := args["cpu"]; ok {
		n, err := strconv.Atoi(first(v))
		if err != nil {
			return "", fmt.Errorf("cpu: %v", err)
		}
		cpu = n
	}
	if d.Cmd == "init" {
		depth := 0
		switch {
		case args["depth"] != nil:
			n, err := strconv.Atoi(first(args["depth"]))
			if err != nil || (n != 8 && n != 9) {
				return "", fmt.Errorf("depth must be 8 or 9, got %q", first(args["depth"]))
			}
			depth = n
		case args["hz"] != nil:
			n, err := strconv.Atoi(first(args["hz"]))
			if err != nil || n <= 0 {
				return "", fmt.Errorf("bad hz %q", first(args["hz"]))
			}
			depth = DepthForHZ(n)
		default:
			return "", fmt.Errorf("init needs depth= or hz=")
		}
		clk, err := tick(args, "clk")
		if err != nil {
			return "", err
		}
		// A new base on this CPU: forget the timers of the one it replaces.
		s.order = slices.DeleteFunc(s.order, func(name string) bool {
			if s.timers[name].CPU() == cpu {
				delete(s.timers, name)
				return true
			}
			return false
		})
		b := new(Base)
		b.Init(depth, clk)
		s.bases[cpu] = b
		return s.state(cpu), nil
	}
	if d.Cmd == "index" {
		depth, err := strconv.Atoi(first(args["depth"]))
		if err != nil || (depth != 8 && depth != 9) {
			return "", fmt.Errorf("depth must be 8 or 9")
		}
		clk, err := tick(args, "clk")
		if err != nil {
			return "", err
		}
		expires, err := tick(args, "expires")
		if err != nil {
			return "", err
		}
		idx, bucket := Index(expires, clk, depth)
		return fmt.Sprintf("delta %s: %s\n", delta(expires-clk), placement(idx, bucket, expires)), nil
	}
	if d.Cmd == "del" {
		name := first(args["t"])
		tm := s.timers[name]
		if tm == nil {
			return "", fmt.Errorf("no timer %q", name)
		}
		b := s.bases[tm.CPU()]
		idx := tm.Index()
		if !b.Detach(tm) {
			return fmt.Sprintf("%s: not pending\n", name), nil
		}
		out := fmt.Sprintf("%s: detached from bucket %d", name, idx)
		if !b.PendingBit(idx) {
			out += " (now empty)"
		}
		return out + fmt.Sprintf("; next_expiry %s, recalc %s\n", num(b.NextExpiry()), yes(b.NeedsRecalc())), nil
	}
	if d.Cmd == "migrate" {
		from, err1 := strconv.Atoi(first(args["from"]))
		to, err2 := strconv.Atoi(first(args["to"]))
		src, dst := s.bases[from], s.bases[to]
		if err1 != nil || err2 != nil || src == nil || dst == nil || from == to {
			return "", fmt.Errorf("migrate needs from= and to= naming two bases")
		}
		var out strings.Builder
		if args["now"] != nil {
			now, err := tick(args, "now")
			if err != nil {
				return "", err
			}
			out.WriteString(s.forward(dst, now))
		}
		n, firstEv := src.MigrateTo(dst, to)
		for _, name := range s.order {
			if tm := s.timers[name]; tm.Pending() && tm.CPU() == to {
				_, s.bucket[tm] = Index(tm.Expires(), dst.Clk(), dst.Depth())
			}
		}
		fmt.Fprintf(&out, "moved %d timers from cpu%d to cpu%d%s\n", n, from, to, cond(firstEv, ", a new first event", ""))
		for _, name := range s.order {
			if tm := s.timers[name]; tm.Pending() && tm.CPU() == to {
				fmt.Fprintf(&out, "  %s: cpu %d%s\n", name, tm.CPU(), cond(tm.Flags()&FlagPinned != 0, ", pinned", ""))
			}
		}
		out.WriteString(s.state(from))
		out.WriteString(s.state(to))
		return out.String(), nil
	}

	b := s.bases[cpu]
	if b == nil {
		return "", fmt.Errorf("no base cpu%d: init it first", cpu)
	}
	switch d.Cmd {
	case "add":
		name := first(args["t"])
		if name == "" {
			return "", fmt.Errorf("add needs t=NAME")
		}
		expires, err := tick(args, "expires")
		if err != nil {
			return "", err
		}
		var out strings.Builder
		if args["now"] != nil {
			now, err := tick(args, "now")
			if err != nil {
				return "", err
			}
			out.WriteString(s.forward(b, now))
		}
		tm := s.timers[name]
		if tm == nil {
			tm = new(Timer)
			s.timers[name] = tm
			s.order = append(s.order, name)
		} else if tm.Pending() {
			s.bases[tm.CPU()].Detach(tm)
			out.WriteString(name + ": re-armed\n")
		}
		flags := uint32(cpu)
		if _, ok := args["pinned"]; ok {
			flags |= FlagPinned
		}
		tm.SetFlags(flags)
		clk := b.Clk()
		idx, bucket, firstEv := b.Add(tm, expires)
		s.bucket[tm] = bucket
		fmt.Fprintf(&out, "%s: clk %s, delta %s: %s%s\n", name, num(clk), delta(expires-clk), placement(idx, bucket, expires),
			cond(firstEv, "; first", ""))
		return out.String(), nil
	case "forward":
		to, err := tick(args, "to")
		if err != nil {
			return "", err
		}
		return s.forward(b, to), nil
	case "run":
		j, err := tick(args, "jiffies")
		if err != nil {
			return "", err
		}
		rearm := map[string]uint64{}
		for _, v := range args["rearm"] {
			name, dv, ok := strings.Cut(v, ":")
			n, err := strconv.ParseUint(dv, 10, 64)
			if !ok || err != nil {
				return "", fmt.Errorf("rearm wants NAME:DELTA, got %q", v)
			}
			rearm[name] = n
		}
		return s.run(b, j, rearm), nil
	case "next":
		basej, err := tick(args, "basej")
		if err != nil {
			return "", err
		}
		stale := b.NeedsRecalc()
		n := b.NextTimerInterrupt(basej)
		return fmt.Sprintf("next_timer_interrupt(%s) = %s (basej%s)%s; timers_pending %s\n", num(basej), num(n), delta(n-basej),
			cond(stale, ", recalculated", ""), yes(b.TimersPending())), nil
	case "prepare":
		clk, err := tick(args, "clk")
		if err != nil {
			return "", err
		}
		b.Prepare(clk)
		return s.state(cpu), nil
	case "recalc":
		b.Recalc()
		return s.state(cpu), nil
	case "state":
		return s.state(cpu), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func (s *scenario) forward(b *Base, to uint64) string {
	old := b.Clk()
	b.Forward(to)
	switch {
	case b.Clk() == old:
		return fmt.Sprintf("forward to %s: clk stays %s\n", num(to), num(old))
	case b.Clk() != to:
		return fmt.Sprintf("forward to %s: clk %s -> %s (capped at next_expiry)\n", num(to), num(old), num(b.Clk()))
	}
	return fmt.Sprintf("forward to %s: clk %s -> %s\n", num(to), num(old), num(b.Clk()))
}

// run is the __run_timers loop, printing one line per round: the clock
// value processed and the timers in the order they are handed out.
func (s *scenario) run(b *Base, j uint64, rearm map[string]uint64) string {
	var out strings.Builder
	rounds := 0
	for b.Collect(j) {
		rounds++
		c := b.Clk() - 1
		fmt.Fprintf(&out, "clk %s:", num(c))
		var again []*Timer
		n := 0
		for tm := b.NextExpired(); tm != nil; tm = b.NextExpired() {
			n++
			fmt.Fprintf(&out, " %s(lvl %d", s.name(tm), Level(tm.Index()))
			if e := tm.Expires(); e != c-1 {
				fmt.Fprintf(&out, ", expires %s", num(e))
			}
			out.WriteString(")")
			if _, ok := rearm[s.name(tm)]; ok {
				again = append(again, tm)
			}
		}
		if n == 0 {
			out.WriteString(" nothing (next_expiry was stale)")
		}
		out.WriteString("\n")
		// The callbacks re-arm after the round is printed, in run order.
		for _, tm := range again {
			s.forward(b, j)
			clk := b.Clk()
			expires := j + rearm[s.name(tm)]
			idx, bucket, _ := b.Add(tm, expires)
			s.bucket[tm] = bucket
			fmt.Fprintf(&out, "  %s re-arms at clk %s: %s\n", s.name(tm), num(clk), placement(idx, bucket, expires))
		}
	}
	if rounds == 0 {
		out.WriteString("nothing due\n")
	}
	fmt.Fprintf(&out, "clk=%s next_expiry=%s recalc=%s\n", num(b.Clk()), num(b.NextExpiry()), yes(b.NeedsRecalc()))
	return out.String()
}

func (s *scenario) name(t *Timer) string {
	for n, tm := range s.timers {
		if tm == t {
			return n
		}
	}
	return "?"
}

// state draws the base: one row of 64 slots per level with a pending bit
// ('x'), then each bucket's timers, head (next to run) first; a marked
// bucket without timers is one MigrateTo left behind.
func (s *scenario) state(cpu int) string {
	b := s.bases[cpu]
	var out strings.Builder
	fmt.Fprintf(&out, "cpu%d: clk=%s next_expiry=%s recalc=%s timers_pending=%s\n",
		cpu, num(b.Clk()), num(b.NextExpiry()), yes(b.NeedsRecalc()), yes(b.TimersPending()))
	for lvl := range b.Depth() {
		var row [LvlSize]byte
		var lines []string
		marked := false
		for slot := range LvlSize {
			idx := lvl*LvlSize + slot
			row[slot] = '.'
			if b.PendingBit(idx) {
				row[slot] = 'x'
				marked = true
			}
			var names []string
			var bucket uint64
			b.Each(idx, func(t *Timer) {
				if names == nil {
					bucket = s.bucket[t]
				}
				names = append(names, s.name(t))
			})
			if names != nil {
				lines = append(lines, fmt.Sprintf("    %3d @%s: %s", idx, num(bucket), strings.Join(names, " ")))
			}
		}
		if !marked && lines == nil {
			continue
		}
		fmt.Fprintf(&out, "  lvl %d gran %-8d |%s|\n", lvl, LvlGran(lvl), row[:])
		for _, l := range lines {
			out.WriteString(l + "\n")
		}
	}
	return out.String()
}

func placement(idx int, bucket, expires uint64) string {
	lvl := Level(idx)
	// Relative to time_after(clk, expires), the first clock value at
	// which the timer may run: expires+1.
	late := fmt.Sprintf(" (%d late)", bucket-expires)
	if !After(bucket, expires) {
		late = fmt.Sprintf(" (%d early)", expires-bucket+1)
	}
	return fmt.Sprintf("bucket %d (lvl %d slot %d) expiry %s%s", idx, lvl, idx%LvlSize, num(bucket), late)
}

// num prints a tick; values within 2^32 of the 64-bit wrap as 2^64-N.
func num(v uint64) string {
	if v >= 1<<63 && -v <= 1<<32 {
		return fmt.Sprintf("2^64-%d", -v)
	}
	return strconv.FormatUint(v, 10)
}

// delta prints a tick difference as a signed number.
func delta(d uint64) string {
	if int64(d) < 0 {
		return strconv.FormatInt(int64(d), 10)
	}
	return "+" + strconv.FormatUint(d, 10)
}

func yes(b bool) string { return cond(b, "yes", "no") }

func cond(b bool, t, f string) string {
	if b {
		return t
	}
	return f
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// tick parses a tick value: decimal, or 2^K with an optional +N or -N.
func tick(args map[string][]string, key string) (uint64, error) {
	v := first(args[key])
	if v == "" {
		return 0, fmt.Errorf("missing %s=", key)
	}
	p, err := parseTick(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%s: %v", key, v, err)
	}
	return p, nil
}

func parseTick(v string) (uint64, error) {
	if !strings.HasPrefix(v, "2^") {
		return strconv.ParseUint(v, 10, 64)
	}
	rest := v[2:]
	i := strings.IndexAny(rest, "+-")
	expS, offS := rest, ""
	if i >= 0 {
		expS, offS = rest[:i], rest[i:]
	}
	k, err := strconv.Atoi(expS)
	if err != nil || k < 0 || k > 64 {
		return 0, fmt.Errorf("bad power of two %q", expS)
	}
	base := uint64(0) // 2^64 wraps to 0
	if k < 64 {
		base = 1 << k
	}
	if offS == "" {
		if k == 64 {
			return 0, fmt.Errorf("2^64 does not fit")
		}
		return base, nil
	}
	off, err := strconv.ParseUint(offS[1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad offset %q", offS)
	}
	if offS[0] == '-' {
		if k < 64 && off > base || k == 64 && off == 0 {
			return 0, fmt.Errorf("%s is out of range", v)
		}
		return base - off, nil
	}
	sum, carry := bits.Add64(base, off, 0)
	if k == 64 || carry != 0 {
		return 0, fmt.Errorf("%s is out of range", v)
	}
	return sum, nil
}

func TestParseTick(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1000", 1000, true},
		{"2^64-10", 1<<64 - 10, true},
		{"2^32-300000", 1<<32 - 300000, true},
		{"2^30", 1 << 30, true},
		{"2^30+5", 1<<30 + 5, true},
		{"2^64", 0, false},
		{"2^64+1", 0, false},
		{"2^63+2^2", 0, false},
		{"2^3-9", 0, false},
		{"x", 0, false},
	} {
		got, err := parseTick(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseTick(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if got := num(1<<64 - 10); got != "2^64-10" {
		t.Errorf("num(2^64-10) = %q", got)
	}
}
