package migrators

import (
	"fmt"
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
// taken offline or brought back. kernel.timer_migration changes nothing
// from 6.9 (it only keeps hrtimers local); before 6.9 there is no
// hierarchy either way.
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
		Present: all, Online: all, Busy: m.Busy, Timekeeper: kernel.Timekeeper(iso.NohzFull)}, m.At)
}

// Over predicts the setup, then each configuration the changes make, in
// order (at= of a machine line, --at of tmigr sim): a partition made,
// changed or removed, a CPU taken offline or brought back. A change of
// kernel.timer_migration starts no phase: from 6.9 it leaves the
// hierarchy as it is.
func Over(s Setup, changes []ftrace.Change) (*Timeline, error) {
	all := cpumask.Range(0, len(s.NodeOf)-1)
	if s.Present.Empty() {
		s.Present = all
	}
	if s.Online.Empty() {
		s.Online = s.Present
	}
	t := &Timeline{}
	add := func(at time.Duration, change string) error {
		p, err := Predict(s)
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
	for _, ch := range changes {
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
