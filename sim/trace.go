package sim

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/wheel"
)

// tracer receives the hierarchy's tracepoints. It charges the cost of
// each remote CPU handled to the CPU handling it, and, with Config.Trace,
// records every tracepoint (and every timer expiry) as an ftrace event.
type tracer struct {
	m    *Machine
	text *hier.TextTracer
	log  *traceLog
}

// traceLog collects the events of a traced run; they are written with
// ftrace's Writer at the end, since the header counts them.
type traceLog struct {
	m       *Machine
	events  []ftrace.Event
	pending []byte
	ids     map[*wheel.Timer]*Timer
}

// Write receives the TextTracer's lines ("tmigr_cpu_idle: cpu=3 ...") and
// turns each into an event of the CPU and time the code runs at.
func (l *traceLog) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	for {
		i := strings.IndexByte(string(l.pending), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(l.pending[:i])
		l.pending = l.pending[i+1:]
		name, payload, _ := strings.Cut(line, ": ")
		l.add(ftrace.Event{Name: name, Payload: groupPtrs.ReplaceAllStringFunc(payload, groupPtr)})
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

var groupPtrs = regexp.MustCompile(`GRP[0-9]+:[0-9]+`)

// groupPtr turns a group's name ("GRP1:0") into the stable pointer a
// trace prints for it: ffff8880 0000LLII with level and index in hex, so
// the trace reads back like a kernel's.
func groupPtr(name string) string {
	var lvl, idx int
	fmt.Sscanf(name, "GRP%d:%d", &lvl, &idx)
	return fmt.Sprintf("ffff8880%04x%04x", lvl, idx)
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
	st := l.ids[t]
	name, id := "timer", uint64(0)
	if st != nil {
		name, id = st.Name, st.id
	}
	j, _ := l.m.snap(l.m.x.Now)
	l.add(ftrace.Event{Data: ftrace.TimerExpireEntry{Timer: id, Function: name, Now: j, BaseClk: j}})
	_ = handler
}

// write writes the collected trace.
func (l *traceLog) write(w io.Writer) error {
	m := l.m
	// The release names the kernel generation the policy models.
	kernel := map[cpu.Policy]string{cpu.PullIsolated: "6.19.0", cpu.Pull: "6.18.0", cpu.Push: "6.8.0", cpu.None: "6.19.0"}[m.cfg.Policy]
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

func (tr *tracer) GroupSet(g hier.GroupID, node int) {
	if tr.text != nil {
		tr.text.GroupSet(g, node)
	}
}

func (tr *tracer) ConnectChildParent(child, parent hier.GroupID, node, numChildren int, groupmask uint8) {
	if tr.text != nil {
		tr.text.ConnectChildParent(child, parent, node, numChildren, groupmask)
	}
}

func (tr *tracer) ConnectCPUParent(cpu int, parent hier.GroupID, node, numChildren int, groupmask uint8) {
	if tr.text != nil {
		tr.text.ConnectCPUParent(cpu, parent, node, numChildren, groupmask)
	}
}

func (tr *tracer) GroupSetCPUActive(g, parent hier.GroupID, node int, active, migrator, childmask uint8) {
	if tr.text != nil {
		tr.text.GroupSetCPUActive(g, parent, node, active, migrator, childmask)
	}
}

func (tr *tracer) GroupSetCPUInactive(g, parent hier.GroupID, node int, active, migrator, childmask uint8) {
	if tr.text != nil {
		tr.text.GroupSetCPUInactive(g, parent, node, active, migrator, childmask)
	}
}

func (tr *tracer) CPUActive(cpu int, parent hier.GroupID, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUActive(cpu, parent, wakeup)
	}
}

func (tr *tracer) CPUNewTimer(cpu int, parent hier.GroupID, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUNewTimer(cpu, parent, wakeup)
	}
}

func (tr *tracer) CPUAvailable(cpu int, parent hier.GroupID, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUAvailable(cpu, parent, wakeup)
	}
}

func (tr *tracer) CPUUnavailable(cpu int, parent hier.GroupID, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUUnavailable(cpu, parent, wakeup)
	}
}

// HandleRemoteCPU is where a CPU starts expiring another CPU's timers: it
// pays the cost of the remote handling.
func (tr *tracer) HandleRemoteCPU(cpu int, parent hier.GroupID, wakeup int64) {
	if x := tr.m.x; x != nil {
		x.Spend(tr.m.draw(tr.m.costs.RemotePull))
	}
	if tr.text != nil {
		tr.text.HandleRemoteCPU(cpu, parent, wakeup)
	}
}

func (tr *tracer) CPUIdle(cpu int, parent hier.GroupID, nextevt, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUIdle(cpu, parent, nextevt, wakeup)
	}
}

func (tr *tracer) CPUNewTimerIdle(cpu int, parent hier.GroupID, nextevt, wakeup int64) {
	if tr.text != nil {
		tr.text.CPUNewTimerIdle(cpu, parent, nextevt, wakeup)
	}
}

func (tr *tracer) UpdateEvents(child, g hier.GroupID, childActive, groupActive uint8, nextevt, nextExpiry, childEvtExpiry int64, childEvtCPU int) {
	if tr.text != nil {
		tr.text.UpdateEvents(child, g, childActive, groupActive, nextevt, nextExpiry, childEvtExpiry, childEvtCPU)
	}
}

func (tr *tracer) HandleRemote(g hier.GroupID) {
	if tr.text != nil {
		tr.text.HandleRemote(g)
	}
}
