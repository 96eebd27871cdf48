package sim

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/hrtimer"
	"pgregory.net/rapid"
)

// The event queue pops in (time, insertion) order, like a stable sort.
func TestEventHeapOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var h eventHeap
		var ref []event
		seq := uint64(0)
		for _, op := range rapid.SliceOfN(rapid.IntRange(-1, 50), 1, 200).Draw(t, "ops") {
			if op < 0 {
				if len(ref) == 0 {
					continue
				}
				got := h.pop()
				want := ref[0]
				ref = ref[1:]
				if got.t != want.t || got.seq != want.seq {
					t.Fatalf("popped (%d,%d), want (%d,%d)", got.t, got.seq, want.t, want.seq)
				}
				continue
			}
			seq++
			e := event{t: int64(op), seq: seq}
			h.push(e)
			ref = append(ref, e)
			sort.SliceStable(ref, func(i, j int) bool { return ref[i].t < ref[j].t })
		}
	})
}

// A run queue keeps real-time priorities first, FIFO within one, and a
// preempted task (front) ahead of its equals.
func TestRunqueue(t *testing.T) {
	mk := func(name string, prio int) *Task {
		p := hrtimer.SchedOther
		if prio > 0 {
			p = hrtimer.SchedFIFO
		}
		return &Task{Name: name, Policy: p, Prio: prio}
	}
	var r runqueue
	a, b, c, d, e := mk("a", 0), mk("b", 0), mk("rt50", 50), mk("rt99", 99), mk("front", 0)
	r.push(a, false)
	r.push(b, false)
	r.push(c, false)
	r.push(d, false)
	r.push(e, true)
	var order []string
	for r.len() > 0 {
		order = append(order, r.pop().Name)
	}
	if got := strings.Join(order, " "); got != "rt99 rt50 front a b" {
		t.Errorf("order %q", got)
	}
	r.push(a, false)
	if !r.remove(a) || r.remove(a) || r.len() != 0 {
		t.Error("remove")
	}
}

func TestValidate(t *testing.T) {
	p, _ := PlatformByName("server")
	base := Config{CPUs: 8, HZ: 250, Duration: time.Second, Costs: p.Costs}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.CPUs = 0 }, "--cpus must be at least 1"},
		{func(c *Config) { c.CPUs = 9000 }, "at most 8192"},
		{func(c *Config) { c.Nodes = 9 }, "more nodes than the 8 CPUs"},
		{func(c *Config) { c.Nodes = -1 }, "--nodes must be at least 1"},
		{func(c *Config) { c.HZ = 5 }, "--hz 5"},
		{func(c *Config) { c.Duration = 0 }, "--duration must be positive"},
		{func(c *Config) { c.Isolcpus = cpumask.MustParse("0-7") }, "isolate every CPU"},
		{func(c *Config) { c.Isolcpus, c.NohzFull = cpumask.MustParse("0-3"), cpumask.MustParse("4-7") }, "isolate every CPU"},
		{func(c *Config) { c.Isolcpus = cpumask.MustParse("1-3"); c.Partition = cpumask.MustParse("0,4-7") }, "no housekeeping CPU"},
		{func(c *Config) { c.NohzFull = cpumask.MustParse("7-9") }, "--nohz-full names CPUs 8-9"},
		{func(c *Config) { c.Policy = cpu.Policy(7) }, "unknown policy"},
		{func(c *Config) { c.Costs.OslatLoop = 0 }, "cost.oslat_loop"},
		{func(c *Config) { c.Costs.IRQOffShare = 2 }, "probability"},
		{func(c *Config) { c.Actions = []Action{{At: time.Second, Kind: Offline, CPU: 8}} }, "out of range"},
		{func(c *Config) { c.Actions = []Action{{Kind: SetPartition, Mask: cpumask.MustParse("0-7")}} }, "no housekeeping CPU"},
		{func(c *Config) { c.Actions = []Action{{At: time.Second, Kind: Online, CPU: 1}} }, `action "1s online 1": at or after the run's end at 1s`},
	} {
		cfg := base
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate = %v, want an error with %q", err, c.want)
		}
	}
	if err := base.Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestSnapOnTickGrid(t *testing.T) {
	m, err := New(Config{CPUs: 2, HZ: 250, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j0 := cpu.InitialJiffies(250)
	for _, c := range []struct {
		t     int64
		j     uint64
		basem int64
	}{{0, j0, 0}, {3_999_999, j0, 0}, {4_000_000, j0 + 1, 4_000_000}, {62_000_000_001, j0 + 15500, 62_000_000_000}} {
		if s := m.tg.Snapshot(c.t); s.J != c.j || s.M != c.basem {
			t.Errorf("Snapshot(%d) = %d, %d; want %d, %d", c.t, s.J, s.M, c.j, c.basem)
		}
	}
}

// A machine of 1024 busy CPUs shares its quiet passes with a helper on
// two goroutines and with none on one, and the two runs agree.
func TestQuietPassesShared(t *testing.T) {
	run := func(threads int) (*Machine, *Result) {
		c := Config{CPUs: 1024, Nodes: 8, HZ: 250, Policy: cpu.PullIsolated, Platform: "server",
			Warmup: 10 * time.Millisecond, Duration: 100 * time.Millisecond, Seed: 5, Threads: threads}
		p, _ := PlatformByName("server")
		c.Costs = p.Costs
		m, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		w := spinAll{}
		res, err := m.Run(w)
		if err != nil {
			t.Fatal(err)
		}
		return m, res
	}
	m1, r1 := run(1)
	m2, r2 := run(2)
	if m1.sharedPasses != 0 || m2.sharedPasses == 0 {
		t.Errorf("shared quiet passes: %d on one goroutine, %d on two", m1.sharedPasses, m2.sharedPasses)
	}
	if r1.Events != r2.Events {
		t.Errorf("events: %d on one goroutine, %d on two", r1.Events, r2.Events)
	}
	for i := range r1.CPUs {
		if a, b := r1.CPUs[i], r2.CPUs[i]; a.Ticks != b.Ticks || a.BusyNs != b.BusyNs || a.Wakeups != b.Wakeups {
			t.Fatalf("CPU %d: %+v on one goroutine, %+v on two", i, a, b)
		}
	}
}

// spinAll pins a busy loop to every CPU but the first.
type spinAll struct{}

func (spinAll) Name() string { return "spin" }
func (spinAll) Start(m *Machine) error {
	for c := 1; c < len(m.cpus); c++ {
		t, err := m.NewTask(TaskSpec{Name: "spin", CPU: c, Pinned: true,
			Behavior: BehaviorFunc(func(*Exec, *Task) Step { return Step{Run: Forever} })})
		if err != nil {
			return err
		}
		m.Wake(t)
	}
	return nil
}
func (spinAll) Result(*Machine) WorkloadResult { return nil }
