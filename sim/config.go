package sim

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/hier"
	"github.com/tmigr/tmigr/hrtimer"
)

// Config describes one simulation run: the machine, the kernel, the cost
// model and the run's length.
type Config struct {
	// CPUs is the number of possible CPUs, all brought online at boot.
	CPUs int
	// Nodes spreads the CPUs over NUMA nodes in contiguous blocks
	// (node i holds CPUs i*CPUs/Nodes to (i+1)*CPUs/Nodes-1); 0 means 1.
	// NodeOf, if set, gives each CPU's node instead.
	Nodes  int
	NodeOf []int
	// HZ is the tick rate (default 250).
	HZ int

	// Isolcpus is the isolcpus= (domain) list, NohzFull the nohz_full=
	// list, Partition the CPUs of isolated cpuset partitions created after
	// boot.
	Isolcpus, NohzFull, Partition cpumask.Mask

	// Policy is the timer-migration model (default pull-isolated); package
	// kernel gives a release's (tmigr sim --kernel).
	Policy cpu.Policy
	// Release is the kernel release the trace's machine line names
	// ("6.12.0"; tmigr sim --kernel), for readers of the trace that pick
	// their model by it. Empty: a release of Policy's generation. It must
	// agree with Policy and ImbalancedNUMA, which the simulator follows.
	Release string
	// ImbalancedNUMA builds the hierarchy as kernels before 5eb579dfd46b
	// did (6.9 to 6.18; hier.Options.ImbalancedNUMA).
	ImbalancedNUMA bool
	// TimerMigrationOff is kernel.timer_migration=0 from boot (see
	// cpu.Set.SetTimerMigration: since 6.9 it keeps hrtimers local and
	// leaves the pull hierarchy alone).
	TimerMigrationOff bool
	// PreemptRT models a PREEMPT_RT kernel: softirqs run in the ktimers
	// thread, which real-time tasks preempt.
	PreemptRT bool
	// Sleepers is the PREEMPT_RT sleeper rule (hard for all, or by
	// policy as since the 2017 change).
	Sleepers hrtimer.SleeperRule

	// Platform names the cost model; Costs is its values (possibly
	// overridden).
	Platform string
	Costs    Costs

	// Warmup is simulated before the measurement starts (oslat's 1 s
	// pre-heat); Duration is the measured part.
	Warmup, Duration time.Duration
	// Seed seeds every random stream of the run.
	Seed uint64

	// Actions change the machine while it runs (hotplug, cpuset).
	Actions []Action

	// Threads is the number of goroutines that run the quiet ticks of a
	// tick instant side by side (see sweep): 0 for the CPUs available
	// (GOMAXPROCS, at most 4), 1 for the caller's goroutine only; at most
	// one per 256 CPUs, and an instant with fewer than 512 ticks runs on
	// the caller's goroutine. It changes the speed only: a seed's output
	// is the same for any value. With Check or Trace, everything runs on
	// the caller's goroutine.
	Threads int

	// Check runs the hierarchy's invariant checker after every step.
	Check bool
	// Progress, if not nil, receives a progress line every second of wall
	// time for runs longer than a second.
	Progress io.Writer
	// Trace, if not nil, receives the hierarchy's tracepoints as text,
	// each line prefixed with the time and CPU.
	Trace io.Writer
}

// ActionKind is what an Action does.
type ActionKind uint8

const (
	// Offline takes CPU down (its timers move to another CPU).
	Offline ActionKind = iota
	// Online brings CPU back up.
	Online
	// SetPartition replaces the isolated cpuset partition with Mask.
	SetPartition
	// TimerMigration writes kernel.timer_migration (On).
	TimerMigration
)

// Action is a change made at a time of the run (counted from boot, so
// warmup included).
type Action struct {
	At   time.Duration
	Kind ActionKind
	CPU  int
	Mask cpumask.Mask
	On   bool // TimerMigration: the value written
}

// ActionOf is the action that makes a recording's run-time change (an
// element of the machine line's at=; ftrace.Change) at time at of the run.
func ActionOf(c ftrace.Change, at time.Duration) (Action, error) {
	a := Action{At: at, CPU: c.CPU}
	switch c.Kind {
	case ftrace.ChangeOffline:
		a.Kind = Offline
	case ftrace.ChangeOnline:
		a.Kind = Online
	case ftrace.ChangePartition:
		a.Kind, a.Mask = SetPartition, c.CPUs
	case ftrace.ChangeTimerMigration:
		a.Kind, a.On = TimerMigration, c.On
	default:
		return Action{}, fmt.Errorf("unknown change %q", c)
	}
	return a, nil
}

func (a Action) String() string {
	switch a.Kind {
	case Offline:
		return fmt.Sprintf("%v offline %d", a.At, a.CPU)
	case Online:
		return fmt.Sprintf("%v online %d", a.At, a.CPU)
	case TimerMigration:
		v := 0
		if a.On {
			v = 1
		}
		return fmt.Sprintf("%v timer_migration=%d", a.At, v)
	}
	if a.Mask.Empty() {
		return fmt.Sprintf("%v partition none", a.At)
	}
	return fmt.Sprintf("%v partition %s", a.At, a.Mask)
}

// nodes returns each CPU's node.
func (c *Config) nodes() []int {
	if c.NodeOf != nil {
		return c.NodeOf
	}
	k := max(c.Nodes, 1)
	out := make([]int, c.CPUs)
	for i := range out {
		out[i] = i * k / c.CPUs
	}
	return out
}

// Validate checks the configuration and names the first problem.
func (c *Config) Validate() error {
	switch {
	case c.CPUs < 1:
		return fmt.Errorf("--cpus must be at least 1 (got %d)", c.CPUs)
	case c.CPUs > cpumask.MaxCPUs:
		return fmt.Errorf("--cpus %d: at most %d CPUs are supported", c.CPUs, cpumask.MaxCPUs)
	case c.Nodes < 0:
		return fmt.Errorf("--nodes must be at least 1 (got %d)", c.Nodes)
	case c.Nodes > c.CPUs:
		return fmt.Errorf("--nodes %d: more nodes than the %d CPUs", c.Nodes, c.CPUs)
	case c.Nodes > hier.MaxNodes:
		return fmt.Errorf("--nodes %d: at most %d nodes are supported", c.Nodes, hier.MaxNodes)
	case c.NodeOf != nil && len(c.NodeOf) != c.CPUs:
		return fmt.Errorf("node map names %d CPUs, want %d", len(c.NodeOf), c.CPUs)
	case c.HZ < 24 || c.HZ > 10000:
		return fmt.Errorf("--hz %d: want 24 to 10000 (the kernel offers 100, 250, 300, 1000)", c.HZ)
	case c.Duration <= 0:
		return fmt.Errorf("--duration must be positive (got %v)", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("warm-up must not be negative (got %v)", c.Warmup)
	}
	all := cpumask.Range(0, c.CPUs-1)
	for _, m := range []struct {
		flag string
		mask cpumask.Mask
	}{{"--isolcpus", c.Isolcpus}, {"--nohz-full", c.NohzFull}, {"--isolated-partition", c.Partition}} {
		if extra := m.mask.AndNot(all); !extra.Empty() {
			return fmt.Errorf("%s names CPUs %s beyond the %d CPUs (0-%d)", m.flag, extra, c.CPUs, c.CPUs-1)
		}
	}
	hk := all.AndNot(c.Isolcpus).AndNot(c.NohzFull)
	if hk.Empty() && !(c.Isolcpus.Empty() && c.NohzFull.Empty()) {
		return errors.New("--isolcpus and --nohz-full together isolate every CPU: the kernel needs one housekeeping CPU in neither")
	}
	if rest := hk.AndNot(c.Partition); rest.Empty() && !c.Partition.Empty() {
		return errors.New("--isolated-partition would leave no housekeeping CPU: cpuset refuses a partition that isolates every remaining CPU")
	}
	if c.NohzFull.Test(0) && c.CPUs == 1 {
		return errors.New("--nohz-full cannot include the only CPU")
	}
	if c.Policy < cpu.PullIsolated || c.Policy > cpu.None {
		return fmt.Errorf("unknown policy %d", int(c.Policy))
	}
	if c.Sleepers > hrtimer.SleepersAllHard {
		return fmt.Errorf("unknown sleeper rule %d", int(c.Sleepers))
	}
	if err := c.Costs.validate(); err != nil {
		return err
	}
	for _, a := range c.Actions {
		if a.At < 0 {
			return fmt.Errorf("action %q: negative time", a)
		}
		switch a.Kind {
		case Offline, Online:
			if a.CPU < 0 || a.CPU >= c.CPUs {
				return fmt.Errorf("action %q: CPU %d out of range 0-%d", a, a.CPU, c.CPUs-1)
			}
		case SetPartition:
			if extra := a.Mask.AndNot(all); !extra.Empty() {
				return fmt.Errorf("action %q: CPUs %s beyond the %d CPUs", a, extra, c.CPUs)
			}
			if rest := hk.AndNot(a.Mask); rest.Empty() {
				return fmt.Errorf("action %q would leave no housekeeping CPU", a)
			}
		case TimerMigration:
		default:
			return fmt.Errorf("unknown action kind %d", a.Kind)
		}
		if end := c.Warmup + c.Duration; a.At >= end {
			// The run stops at its end: a later action would never happen.
			return fmt.Errorf("action %q: at or after the run's end at %v (warm-up %v + duration %v)", a, end, c.Warmup, c.Duration)
		}
	}
	return nil
}

func (c *Costs) validate() error {
	switch {
	case c.OslatLoop <= 0:
		return fmt.Errorf("cost.oslat_loop must be positive (got %v)", time.Duration(c.OslatLoop))
	case c.CounterMHz <= 0:
		return fmt.Errorf("cost.counter_mhz must be positive (got %d)", c.CounterMHz)
	case c.IRQOffShare > 1:
		return fmt.Errorf("cost.irqoff_share is a probability (got %g)", c.IRQOffShare)
	}
	return nil
}

// timekeeper is tick_do_timer_cpu: the boot CPU, or the first CPU that is
// not nohz_full.
func (c *Config) timekeeper() int {
	for i := 0; i < c.CPUs; i++ {
		if !c.NohzFull.Test(i) {
			return i
		}
	}
	return 0
}

// NodeMap returns each CPU's node: NodeOf, or Nodes contiguous blocks.
func (c *Config) NodeMap() []int { return c.nodes() }

// Timekeeper returns the nohz timekeeper the machine boots with: the
// first CPU that is not nohz_full.
func (c *Config) Timekeeper() int { return c.timekeeper() }
