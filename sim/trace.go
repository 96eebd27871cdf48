package sim

import (
	"io"
	"strings"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// tracer receives the hierarchy's tracepoints, the typed event stream of
// package hier. It charges the cost of each remote CPU handled to the CPU
// handling it, and, with Config.Trace, records every tracepoint (and every
// timer expiry) as an ftrace event, as values: the ftrace writer formats
// them at the end.
type tracer struct {
	m    *Machine
	log  *traceLog
	seen func(hier.Event) // tests: every event, as it happens
}

// traceLog collects the events of a traced run; they are written with
// ftrace's Writer at the end, since the header counts them.
type traceLog struct {
	m      *Machine
	events []ftrace.Event
	timers uint64 // timers set up so far, which number their "pointers"
}

// Trace implements hier.Tracer. A remote CPU handled (the start of its
// timers' expiry) pays the cost of the remote handling first.
func (tr *tracer) Trace(e hier.Event) {
	if e.Kind == hier.EvHandleRemoteCPU {
		if x := tr.m.x; x != nil {
			x.Spend(tr.m.cpus[x.CPU].draw(&tr.m.samp.RemotePull))
		}
	}
	if l := tr.log; l != nil {
		l.add(ftrace.Event{Data: ftrace.TmigrPayload(e)})
	}
	if tr.seen != nil {
		tr.seen(e)
	}
}

func (l *traceLog) add(ev ftrace.Event) {
	m := l.m
	ev.CPU, ev.TS, ev.Task, ev.Flags = m.ctx, m.now, "<idle>", "d..2."
	if x := m.x; x != nil {
		ev.CPU, ev.TS = x.CPU, x.Now
		switch {
		case x.Task != nil:
			ev.Task, ev.PID = taskComm(x.Task), 1
		case x.irq:
			ev.Flags = "d.h2."
		}
	}
	l.events = append(l.events, ev)
}

// taskComm is a task's name as a comm: at most 15 bytes, no spaces.
func taskComm(t *Task) string {
	s := strings.ReplaceAll(t.Name, " ", "_")
	if len(s) > 15 {
		s = s[:15]
	}
	return s
}

// expire records timer_expire_entry for a wheel timer run on handler.
func (l *traceLog) expire(handler int, t *wheel.Timer) {
	name, id := "timer", uint64(0)
	if st, ok := t.Data.(*Timer); ok {
		name, id = st.Name, st.id
	}
	j := l.m.tg.Jiffies(l.m.x.Now)
	l.add(ftrace.Event{Data: ftrace.TimerExpireEntry{Timer: id, Function: name, Now: j, BaseClk: j}})
	_ = handler
}

// write writes the collected trace.
func (l *traceLog) write(w io.Writer) error {
	m := l.m
	// The release is the one modelled or, without one, a release of the
	// kernel generation the policy models.
	kernel := m.cfg.Release
	if kernel == "" {
		kernel = map[cpu.Policy]string{cpu.PullIsolated: "6.19.0", cpu.Pull: "6.18.0", cpu.Push: "6.8.0", cpu.None: "6.19.0"}[m.cfg.Policy]
	}
	mach := &ftrace.Machine{CPUs: len(m.cpus), Nodes: m.Nodes(), HZ: m.cfg.HZ, Kernel: kernel + "-tmigr-sim",
		Note: "tmigr sim, policy " + m.cfg.Policy.String()}
	mach.NodeCPUs = make([]cpumask.Mask, mach.Nodes)
	var cmd []string
	for i := range m.cpus {
		mach.NodeCPUs[m.cpus[i].node].Set(i)
		if m.cpus[i].meas != nil {
			mach.Busy.Set(i)
		}
	}
	if !m.cfg.Isolcpus.Empty() {
		cmd = append(cmd, "isolcpus="+m.cfg.Isolcpus.String())
	}
	if !m.cfg.NohzFull.Empty() {
		cmd = append(cmd, "nohz_full="+m.cfg.NohzFull.String())
	}
	mach.Cmdline = strings.Join(cmd, " ")
	h := ftrace.Header{CPUs: len(m.cpus), Machine: mach}
	if m.h != nil && m.h.BootLine() != "" {
		if hy, err := ftrace.ParseHierarchy(m.h.BootLine()); err == nil {
			h.Hierarchy = &hy
		}
	}
	return ftrace.WriteTrace(w, h, l.events)
}
