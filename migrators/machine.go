package migrators

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/kernel"
)

// Phase is the prediction for the configuration in effect from At on (0:
// the configuration at the start; else after the machine line's change
// Change).
type Phase struct {
	At     time.Duration `json:"at_ns"`
	Change string        `json:"change,omitempty"`
	// Partition and Online are the isolated cpuset partition's CPUs and
	// the online CPUs in effect.
	Partition  cpumask.Mask `json:"partition"`
	Online     cpumask.Mask `json:"online"`
	Prediction *Prediction  `json:"prediction"`
}

// Timeline is the prediction over a recording whose machine changed while
// it ran (the machine line's at=): one phase per configuration.
type Timeline struct {
	Phases []Phase `json:"phases"`
	// Handlers are the CPUs that may run other CPUs' timers in some phase;
	// Never the others.
	Handlers cpumask.Mask `json:"handlers"`
	Never    cpumask.Mask `json:"never"`
}

// Start is the prediction for the configuration at the start.
func (t *Timeline) Start() *Prediction { return t.Phases[0].Prediction }

// ForMachine predicts the steady state of a recording's machine (its "#
// machine:" line): its shape, its kernel's model, the isolation of its
// command line, its busy CPUs (busy= lists the CPUs that ran a busy loop;
// the sleepers come and go), the timekeeper (CPU 0, the boot CPU, under
// nohz_full), and every run-time change of at=, each starting a phase:
// an isolated cpuset partition made or changed (excluded from 6.19), a CPU
// taken offline or brought back, and an offline the kernel refused
// (refused=). kernel.timer_migration changes nothing from 6.9 (it only
// keeps hrtimers local); before 6.9 there is no hierarchy either way.
func ForMachine(m *ftrace.Machine, model kernel.Model) (*Timeline, error) {
	iso, err := m.Isolation()
	if err != nil {
		return nil, fmt.Errorf("machine: command line: %v", err)
	}
	nodeOf := make([]int, m.CPUs)
	for c := range nodeOf {
		nodeOf[c] = max(m.Node(c), 0)
	}
	all := cpumask.Range(0, m.CPUs-1)
	return Over(Setup{NodeOf: nodeOf, Nodes: m.Nodes, Model: model, Domain: iso.Domain, NohzFull: iso.NohzFull,
		Present: all, Online: all, Busy: m.Busy, Timekeeper: kernel.Timekeeper(iso.NohzFull)}, m.At, m.Refused...)
}

// Over predicts the setup, then each configuration the changes make, in
// order (at= of a machine line, --at of tmigr sim): a partition made,
// changed or removed, a CPU taken offline or brought back. A change of
// kernel.timer_migration starts no phase: from 6.9 it leaves the
// hierarchy as it is. Refused are offlines tried that the kernel refused
// (a machine line's refused=), each starting a phase of its own.
//
// An offline, made or refused, of a busy CPU moves its busy loop: the
// kernel pushes the CPU's tasks away as it goes down (balance_push, from
// sched_cpu_deactivate) and breaks the affinity of one pinned there
// (select_fallback_rq, kernel/sched/core.c), and a failure later in the
// offline (a refused one) rolls the CPU back without moving the task
// back. Where the loop runs afterwards is history: the scheduler places
// it on some online CPU (never back on a domain-isolated one, which load
// balancing leaves alone, but the rules here do not count on that). The
// phases after such an offline are the union over the loop's places
// (see predictMoved).
func Over(s Setup, changes []ftrace.Change, refused ...ftrace.Change) (*Timeline, error) {
	all := cpumask.Range(0, len(s.NodeOf)-1)
	if s.Present.Empty() {
		s.Present = all
	}
	if s.Online.Empty() {
		s.Online = s.Present
	}
	t := &Timeline{}
	moved := 0 // busy loops an offline moved off their CPU
	add := func(at time.Duration, change string) error {
		p, err := predictMoved(s, moved)
		if err != nil {
			return err
		}
		t.Phases = append(t.Phases, Phase{At: at, Change: change, Partition: s.Partition, Online: s.Online, Prediction: p})
		t.Handlers = t.Handlers.Or(p.Handlers)
		return nil
	}
	if err := add(0, ""); err != nil {
		return nil, err
	}
	type step struct {
		ftrace.Change
		refused bool
	}
	steps := make([]step, 0, len(changes)+len(refused))
	for _, ch := range changes {
		steps = append(steps, step{Change: ch})
	}
	for _, ch := range refused {
		if ch.Kind == ftrace.ChangeOffline {
			steps = append(steps, step{Change: ch, refused: true})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.At, b.At) })
	for _, st := range steps {
		ch := st.Change
		if ch.Kind == ftrace.ChangeOffline && s.Busy.Test(ch.CPU) {
			s.Busy.Clear(ch.CPU)
			moved++
		}
		if st.refused {
			if err := add(ch.At, ch.String()+" (refused)"); err != nil {
				return nil, fmt.Errorf("%s (refused): %v", ch, err)
			}
			continue
		}
		switch ch.Kind {
		case ftrace.ChangePartition:
			s.Partition = ch.CPUs
		case ftrace.ChangeOffline:
			s.Online.Clear(ch.CPU)
		case ftrace.ChangeOnline:
			s.Online.Set(ch.CPU)
		default:
			continue // timer_migration: the same hierarchy
		}
		if err := add(ch.At, ch.String()); err != nil {
			return nil, fmt.Errorf("%s: %v", ch, err)
		}
	}
	t.Never = all.AndNot(t.Handlers)
	return t, nil
}

// maxPlaces bounds the places predictMoved tries for the moved busy
// loops; beyond it the prediction says only what no place can change.
const maxPlaces = 4096

// predictMoved predicts the setup with moved busy loops besides s.Busy,
// each on some online CPU, which history decides: the union over their
// places of the predictions (a CPU may run other CPUs' timers, or be a
// group's candidate migrator, where it may for some place; a group
// always has a migrator where it does for every place). Beyond maxPlaces
// places, every available CPU may be a candidate of its groups and pull.
func predictMoved(s Setup, moved int) (*Prediction, error) {
	if moved == 0 {
		return Predict(s)
	}
	h, err := Build(s)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return Predict(s)
	}
	online := s.Online
	if online.Empty() {
		online = s.Present
	}
	if online.Empty() {
		online = cpumask.Range(0, len(s.NodeOf)-1)
	}
	cpus := online.CPUs()
	places, n := 0, 1
	for k := 1; k <= moved && k <= len(cpus); k++ {
		n = n * (len(cpus) - k + 1) / k // C(len(cpus), k)
		places += n
	}
	if places > maxPlaces {
		return anyPlace(Of(h, AlwaysActive(s.Busy, s.NohzFull, h.Available(), s.Timekeeper))), nil
	}
	var acc *Prediction
	// Each set of 1 to moved online CPUs that the loops occupy.
	var place func(from, left int, busy cpumask.Mask)
	place = func(from, left int, busy cpumask.Mask) {
		for i := from; i < len(cpus); i++ {
			b := busy
			b.Set(cpus[i])
			p := Of(h, AlwaysActive(b, s.NohzFull, h.Available(), s.Timekeeper))
			if acc == nil {
				acc = p
			} else {
				acc.merge(p)
			}
			if left > 1 {
				place(i+1, left-1, b)
			}
		}
	}
	place(0, moved, s.Busy)
	return acc, nil
}

// merge makes p the union of p and q, predictions of one hierarchy.
func (p *Prediction) merge(q *Prediction) {
	p.Always = p.Always.And(q.Always)
	p.Handlers = p.Handlers.Or(q.Handlers)
	p.Never = p.Never.And(q.Never)
	for i := range p.Groups {
		g, o := &p.Groups[i], &q.Groups[i]
		g.Always = g.Always && o.Always
		g.Candidates = g.Candidates.Or(o.Candidates)
		g.From = g.From.Or(o.From)
		for j := range g.Children {
			c, d := &g.Children[j], &o.Children[j]
			c.Always = c.Always && d.Always
			c.Candidates = c.Candidates.Or(d.Candidates)
		}
	}
}

// anyPlace widens p to what no place of the moved loops can change: every
// available CPU below a group may be its migrator and pull from the
// others.
func anyPlace(p *Prediction) *Prediction {
	p.Always = cpumask.Mask{}
	for i := range p.Groups {
		g := &p.Groups[i]
		g.Always, g.Candidates, g.From = false, g.CPUs, g.CPUs
		for j := range g.Children {
			c := &g.Children[j]
			c.Always, c.Candidates = false, c.CPUs
		}
	}
	p.Handlers = p.Available
	p.Never = cpumask.Range(0, p.CPUs-1).AndNot(p.Available)
	return p
}
