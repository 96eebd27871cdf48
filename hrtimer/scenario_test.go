package hrtimer

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// The scenario files under testdata/ drive one machine of CPU bases with a
// virtual clock. Commands:
//
//	new cpus=N [rt] [lowres hz=HZ] [timelowres hz=HZ] [sleepers=all-hard|by-policy]
//	timer name=T cpu=C [clock=MONOTONIC] [mode=ABS|SOFT] [sleeper=SCHED_FIFO]
//	start name=T on=C [target=C] at=TIME [slack=TIME|task] [mode=M] [now=TIME]
//	cancel name=T on=C
//	forward name=T now=TIME interval=TIME
//	interrupt|tick|softirq cpu=C now=TIME [cost=TIME] [costs=T:TIME,...]
//	    [periodic=T:TIME,...] [ret=T:RESTART,...] [then=T:start:U:TIME[:C[:D]],...]
//	    [cancels=T:U:V...,...] [rt=T]
//	state cpu=C
//	next cpu=C
//	offsets cpu=C realtime=TIME boottime=TIME tai=TIME
//	retrigger cpu=C
//	dying cpu=C to=C
//	starting cpu=C
//
// TIME is ns, or a number with a suffix ns, us, ms or s, or a sum of
// such (1000s+10ms). A pass runs every
// callback at the virtual clock, which starts at now and advances by the
// callback's cost; End gets the clock after the last callback. A sleeper's
// start uses SleeperStartMode and slack=task uses SleeperSlack with the
// default 50 µs timer slack.

type scenario struct {
	cpus    []*CPUBase
	timers  map[string]*Timer
	names   []string
	sleeper map[string]Policy
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) { runScenario(t, path) })
	}
}

func runScenario(t *testing.T, path string) {
	{
		var s *scenario
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				s = &scenario{timers: map[string]*Timer{}, sleeper: map[string]Policy{}}
			} else if s == nil {
				d.Fatalf(t, "first command must be new")
			}
			out, err := s.run(d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	}
}

type args map[string]string

func (a args) str(k, def string) string {
	if v, ok := a[k]; ok {
		return v
	}
	return def
}

func (a args) must(k string) (string, error) {
	v, ok := a[k]
	if !ok {
		return "", fmt.Errorf("missing %s=", k)
	}
	return v, nil
}

func (a args) num(k string, def int64) (int64, error) {
	v, ok := a[k]
	if !ok {
		return def, nil
	}
	return parseTime(v)
}

// list parses "a:x,b:y" into pairs.
func (a args) list(k string) [][]string {
	v, ok := a[k]
	if !ok || v == "" {
		return nil
	}
	var out [][]string
	for _, e := range strings.Split(v, ",") {
		out = append(out, strings.Split(e, ":"))
	}
	return out
}

func parseTime(s string) (int64, error) {
	if s == "never" {
		return Never, nil
	}
	if i := strings.LastIndexByte(s, '+'); i > 0 {
		a, err := parseTime(s[:i])
		if err != nil {
			return 0, err
		}
		b, err := parseTime(s[i+1:])
		return a + b, err
	}
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"ns", 1}, {"us", 1000}, {"ms", 1_000_000}, {"s", 1_000_000_000}} {
		if strings.HasSuffix(s, u.suf) {
			s, mult = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad time %q", s)
	}
	return v * mult, nil
}

func fmtTime(v int64) string {
	switch {
	case v == Never:
		return "never"
	case v == SatMax:
		return "satmax"
	case v%1000 == 0:
		return strconv.FormatInt(v/1000, 10) + "us"
	}
	return strconv.FormatInt(v, 10) + "ns"
}

func (s *scenario) cpu(a args, k string) (*CPUBase, error) {
	v, err := a.must(k)
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n >= len(s.cpus) {
		return nil, fmt.Errorf("bad CPU %q", v)
	}
	return s.cpus[n], nil
}

func (s *scenario) timer(a args, k string) (*Timer, string, error) {
	n, err := a.must(k)
	if err != nil {
		return nil, "", err
	}
	t, ok := s.timers[n]
	if !ok {
		return nil, "", fmt.Errorf("no timer %q", n)
	}
	return t, n, nil
}

func name(t *Timer) string {
	if t == nil {
		return "-"
	}
	return t.Data.(string)
}

func (s *scenario) run(d *datadriven.TestData) (string, error) {
	a := args{}
	for _, c := range d.CmdArgs {
		a[c.Key] = strings.Join(c.Vals, ",")
	}
	var w strings.Builder
	switch d.Cmd {
	case "new":
		n, err := a.num("cpus", 1)
		if err != nil {
			return "", err
		}
		cfg := Config{PreemptRT: a.has("rt"), LowRes: a.has("lowres"), TimeLowRes: a.has("timelowres")}
		hz, err := a.num("hz", 0)
		if err != nil {
			return "", err
		}
		cfg.HZ = int(hz)
		switch a.str("sleepers", "by-policy") {
		case "by-policy":
		case "all-hard":
			cfg.Sleepers = SleepersAllHard
		default:
			return "", fmt.Errorf("bad sleepers=")
		}
		for i := range int(n) {
			b, err := NewCPUBase(i, cfg)
			if err != nil {
				return "", err
			}
			s.cpus = append(s.cpus, b)
		}
		return "", nil

	case "timer":
		n, err := a.must("name")
		if err != nil {
			return "", err
		}
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		clock, err := ParseClock(a.str("clock", "CLOCK_MONOTONIC"))
		if err != nil {
			return "", err
		}
		mode, err := ParseMode(a.str("mode", "ABS"))
		if err != nil {
			return "", err
		}
		t := s.timers[n]
		if t == nil {
			t = &Timer{Data: n}
			s.timers[n] = t
			s.names = append(s.names, n)
		}
		if pol, ok := a["sleeper"]; ok {
			p := slices.Index(policyNames[:], pol)
			if p < 0 {
				return "", fmt.Errorf("bad policy %q", pol)
			}
			s.sleeper[n] = Policy(p)
			err = b.SetupSleeper(t, clock, mode, Policy(p))
		} else {
			err = b.Setup(t, clock, mode)
		}
		if err != nil {
			return "", err
		}
		ctx := "hard"
		if t.IsSoft() {
			ctx = "soft"
		}
		fmt.Fprintf(&w, "%s: cpu%d %v %s\n", n, t.CPU(), t.Clock(), ctx)

	case "start":
		t, n, err := s.timer(a, "name")
		if err != nil {
			return "", err
		}
		b, err := s.cpu(a, "on")
		if err != nil {
			return "", err
		}
		target := b
		if _, ok := a["target"]; ok {
			if target, err = s.cpu(a, "target"); err != nil {
				return "", err
			}
		}
		at, err := a.num("at", 0)
		if err != nil {
			return "", err
		}
		now, err := a.num("now", 0)
		if err != nil {
			return "", err
		}
		mode, err := ParseMode(a.str("mode", "ABS"))
		if err != nil {
			return "", err
		}
		var slack int64
		pol, isSleeper := s.sleeper[n]
		if a.str("slack", "") == "task" {
			slack = SleeperSlack(pol, DefaultTimerSlack)
		} else if slack, err = a.num("slack", 0); err != nil {
			return "", err
		}
		if isSleeper {
			mode = t.SleeperStartMode(mode)
		}
		eff, err := b.StartOn(t, target, now, at, slack, mode)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&w, "%s: mode=%v soft=%s hard=%s on cpu%d%s\n", n, mode,
			fmtTime(t.SoftExpires()), fmtTime(t.Expires()), t.CPU(), fmtEffect(b, eff))

	case "cancel":
		t, n, err := s.timer(a, "name")
		if err != nil {
			return "", err
		}
		b, err := s.cpu(a, "on")
		if err != nil {
			return "", err
		}
		r, eff := b.TryCancel(t)
		fmt.Fprintf(&w, "%s: try_to_cancel=%d%s\n", n, r, fmtEffect(b, eff))

	case "forward":
		t, n, err := s.timer(a, "name")
		if err != nil {
			return "", err
		}
		now, err := a.num("now", 0)
		if err != nil {
			return "", err
		}
		iv, err := a.num("interval", 0)
		if err != nil {
			return "", err
		}
		k := t.Forward(now, iv)
		fmt.Fprintf(&w, "%s: overruns=%d soft=%s hard=%s\n", n, k, fmtTime(t.SoftExpires()), fmtTime(t.Expires()))

	case "interrupt", "tick", "softirq":
		return s.pass(d.Cmd, a)

	case "state":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		s.state(&w, b)

	case "next":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&w, "hard=%s soft=%s get_next_event=%s queued=%d\n", fmtTime(b.NextHardExpiry()),
			fmtTime(b.NextSoftExpiry()), fmtTime(b.GetNextEvent()), b.Len())

	case "offsets":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		var o [3]int64
		for i, k := range []string{"realtime", "boottime", "tai"} {
			if o[i], err = a.num(k, 0); err != nil {
				return "", err
			}
		}
		fmt.Fprintf(&w, "needs ipi: %v\n", b.SetOffsets(o[0], o[1], o[2]))

	case "retrigger":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&w, "retrigger cpu%d%s\n", b.cpu, fmtEffect(b, b.Retrigger()))

	case "dying":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		to, err := s.cpu(a, "to")
		if err != nil {
			return "", err
		}
		eff, err := b.Dying(to)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&w, "cpu%d offline, timers on cpu%d%s\n", b.cpu, to.cpu, fmtEffect(b, eff))

	case "starting":
		b, err := s.cpu(a, "cpu")
		if err != nil {
			return "", err
		}
		b.Starting()
		fmt.Fprintf(&w, "cpu%d online\n", b.cpu)

	default:
		return "", fmt.Errorf("unknown command %q", d.Cmd)
	}
	return w.String(), nil
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func fmtEffect(b *CPUBase, e Effect) string {
	var s string
	if e.Program {
		s += fmt.Sprintf("; program cpu%d at %s", b.cpu, fmtTime(e.At))
	}
	if e.IPI != nil {
		s += fmt.Sprintf("; ipi cpu%d", e.IPI.cpu)
	}
	return s
}

// pass runs one pass with its callbacks on the virtual clock.
func (s *scenario) pass(kind string, a args) (string, error) {
	b, err := s.cpu(a, "cpu")
	if err != nil {
		return "", err
	}
	now, err := a.num("now", 0)
	if err != nil {
		return "", err
	}
	cost, err := a.num("cost", 0)
	if err != nil {
		return "", err
	}
	costs := map[string]int64{}
	for _, e := range a.list("costs") {
		if costs[e[0]], err = parseTime(e[1]); err != nil {
			return "", err
		}
	}
	periodic := map[string]int64{}
	for _, e := range a.list("periodic") {
		if periodic[e[0]], err = parseTime(e[1]); err != nil {
			return "", err
		}
	}
	ret := map[string]Action{}
	for _, e := range a.list("ret") {
		ret[e[0]] = NoRestart
		if e[1] == "RESTART" {
			ret[e[0]] = Restart
		}
	}
	then := map[string][]string{}
	for _, e := range a.list("then") {
		then[e[0]] = e[1:]
	}
	cancels := map[string][]string{}
	for _, e := range a.list("cancels") {
		cancels[e[0]] = e[1:]
	}
	rt := a.str("rt", "")

	var w strings.Builder
	var p *Pass
	switch kind {
	case "interrupt":
		p, err = b.Interrupt(now)
	case "tick":
		p, err = b.Tick(now)
	default:
		p, err = b.Softirq(now)
	}
	if err != nil {
		return "", err
	}
	label := map[string]string{"interrupt": "hardirq", "tick": "tick", "softirq": "softirq"}[kind]
	raised := ""
	if p.Raised() {
		raised = " (softirq raised)"
	}
	fmt.Fprintf(&w, "%s cpu%d at %s%s\n", label, b.cpu, fmtTime(now), raised)
	clock := now
	rtRan := int64(-1)
	for {
		for t := p.Next(); t != nil; t = p.Next() {
			n := name(t)
			soft, hard, _ := p.Armed()
			fmt.Fprintf(&w, "  %-9s run %-8s soft=%s hard=%s", fmtTime(clock), n, fmtTime(soft), fmtTime(hard))
			if r, _ := b.TryCancel(t); r != -1 {
				return "", fmt.Errorf("running timer %s: try_to_cancel=%d, want -1", n, r)
			}
			c := cost
			if v, ok := costs[n]; ok {
				c = v
			}
			act := ret[n]
			if iv, ok := periodic[n]; ok {
				k := t.Forward(clock, iv)
				fmt.Fprintf(&w, " forward=%d", k)
				act = Restart
			}
			if e, ok := then[n]; ok {
				// start:U:TIME[:C[:D]]: start U at TIME (ABS, no slack)
				// on behalf of CPU C (default: this one), target D
				// (default: C).
				if len(e) < 3 || len(e) > 5 || e[0] != "start" {
					return "", fmt.Errorf("bad then= for %s", n)
				}
				u := s.timers[e[1]]
				tim, err := parseTime(e[2])
				if u == nil || err != nil {
					return "", fmt.Errorf("bad then= for %s", n)
				}
				by := b
				if len(e) >= 4 {
					if by, err = s.cpu(args{"c": e[3]}, "c"); err != nil {
						return "", err
					}
				}
				target := by
				if len(e) == 5 {
					if target, err = s.cpu(args{"c": e[4]}, "c"); err != nil {
						return "", err
					}
				}
				eff, err := by.StartOn(u, target, clock, tim, 0, ModeAbs)
				if err != nil {
					return "", err
				}
				fmt.Fprintf(&w, " cpu%d starts %s at %s (on cpu%d)%s", by.cpu, e[1], fmtTime(tim), u.CPU(), fmtEffect(by, eff))
			}
			for _, u := range cancels[n] {
				r, eff := b.TryCancel(s.timers[u])
				fmt.Fprintf(&w, " cancel %s=%d%s", u, r, fmtEffect(b, eff))
			}
			fmt.Fprintf(&w, " -> %v\n", act)
			clock += c
			if n == rt {
				rtRan = soft
			}
			p.Done(t, act)
		}
		out, err := p.End(clock)
		if err != nil {
			return "", err
		}
		switch {
		case out.Retry:
			r := ""
			if out.Raised {
				r = " (softirq raised)"
			}
			fmt.Fprintf(&w, "  %-9s next event already past: retry%s\n", fmtTime(clock), r)
			continue
		case out.Hang:
			fmt.Fprintf(&w, "  %-9s hang: took %s, program at %s\n", fmtTime(clock), fmtTime(out.HangDelta), fmtTime(out.At))
		case out.Program:
			fmt.Fprintf(&w, "  %-9s exit, program at %s\n", fmtTime(clock), fmtTime(out.At))
		default:
			fmt.Fprintf(&w, "  %-9s exit\n", fmtTime(clock))
		}
		break
	}
	if rtRan >= 0 {
		fmt.Fprintf(&w, "%s's task runs at %s: latency %s\n", rt, fmtTime(clock), fmtTime(clock-rtRan))
	}
	return w.String(), nil
}

// state prints the bookkeeping and the queues, leftmost first.
func (s *scenario) state(w *strings.Builder, b *CPUBase) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(w, "cpu%d online=%v expires_next=%s next_timer=%s softirq_expires_next=%s softirq_next_timer=%s\n",
		b.cpu, b.online.Load(), fmtTime(b.expiresNext), name(b.nextTimer), fmtTime(b.softirqExpiresNext), name(b.softirqNextTimer))
	fmt.Fprintf(w, "  softirq_activated=%v hang_detected=%v device=%s events=%d retries=%d hangs=%d max_hang_time=%s\n",
		b.softirqActivated, b.hangDetected, fmtTime(b.device), b.nrEvents, b.nrRetries, b.nrHangs, fmtTime(int64(b.maxHangTime)))
	for i := range b.clock {
		cb := &b.clock[i]
		if len(cb.q) == 0 {
			continue
		}
		q := slices.Clone(cb.q)
		slices.SortFunc(q, func(x, y qent) int {
			if less(&x, &y) {
				return -1
			}
			return 1
		})
		ctx := "hard"
		if i >= softShift {
			ctx = "soft"
		}
		fmt.Fprintf(w, "  %s %s:", cb.clock, ctx)
		for _, e := range q {
			t := e.t
			fmt.Fprintf(w, " %s[%s,%s]", name(t), fmtTime(t.softexpires), fmtTime(t.expires))
		}
		w.WriteString("\n")
	}
}
