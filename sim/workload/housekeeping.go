package workload

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/sim"
)

// Scope says how many instances of a timer class a machine has and where
// they are armed.
type Scope uint8

const (
	// PerCPU: one per housekeeping CPU, armed there.
	PerCPU Scope = iota
	// PerNode: one per NUMA node (a device attached to it), armed on the
	// node's first housekeeping CPU, where the device's interrupts go.
	PerNode
	// PerMachine: one, armed on the first housekeeping CPU.
	PerMachine
	// PerNohzFull: one per nohz_full CPU, armed there (the kernel threads
	// and RCU callbacks that still run on a nohz_full CPU).
	PerNohzFull
	// Hop: one, armed on the first CPU and re-armed on the next online CPU
	// at every expiry (add_timer_on), visiting every CPU in turn.
	Hop
)

var scopeNames = [...]string{"per-cpu", "per-node", "per-machine", "per-nohz_full-cpu", "hop"}

func (s Scope) String() string { return scopeNames[s] }

// Class is one kind of periodic kernel timer of the housekeeping mix.
type Class struct {
	Name  string
	Scope Scope
	// Pinned timers are queued on a CPU (add_timer_on,
	// queue_delayed_work_on) and never migrate; the others are global.
	Pinned bool
	// Deferrable timers never wake an idle CPU.
	Deferrable bool
	// DelayedWork timers are armed by __queue_delayed_work: global unless
	// nohz_full is in use (HK_TYPE_TIMER housekeeping enabled), in which
	// case they are pinned to a housekeeping CPU.
	DelayedWork bool
	// Period between expiries, rounded to a whole second by round_jiffies
	// when Round.
	Period time.Duration
	Round  bool
	// RX timers are armed by a device's interrupts instead of by their own
	// callback: an interrupt arrives on the home CPU every Period on
	// average (uniformly jittered by ±50%) and (re)arms the timer Delay
	// ahead from interrupt context, as a received packet arms TCP's
	// delayed-ACK timer. Arming from an idle CPU's interrupt is what the
	// 2009 push policy moves to a busy CPU.
	RX    bool
	Delay time.Duration
	// Cost is the callback's cost; with probability HeavyProb an expiry
	// takes HeavyCost instead (driver work that sometimes does a lot).
	// CostPerCPU adds that much per online CPU (vmstat_shepherd scans
	// every CPU).
	Cost       sim.Dist
	CostPerCPU time.Duration
	HeavyProb  float64
	HeavyCost  sim.Dist
	// Enabled switches the class on.
	Enabled bool
	Doc     string
}

// DefaultMix is the housekeeping timer mix of latency-anchors.md §6: the
// timers a quiet server arms, with the kernel's periods and placement, and
// ESTIMATEd costs.
func DefaultMix() []Class {
	us := time.Microsecond
	return []Class{
		{Name: "vmstat", Scope: PerCPU, Pinned: true, Deferrable: true, DelayedWork: true,
			Period: time.Second, Round: true, Cost: sim.LN(3*us, 0.4), Enabled: true,
			Doc: "vmstat_update: per-CPU counter fold, queue_delayed_work_on, deferrable (mm/vmstat.c)"},
		{Name: "vmstat_shepherd", Scope: PerMachine, Deferrable: true, DelayedWork: true,
			Period: time.Second, Round: true, Cost: sim.C(1 * us), CostPerCPU: 100 * time.Nanosecond, Enabled: true,
			Doc: "vmstat_shepherd: scans every online CPU, schedule_delayed_work, deferrable"},
		{Name: "memcg_flush", Scope: PerMachine, Deferrable: true, DelayedWork: true,
			Period: 2 * time.Second, Cost: sim.LN(5*us, 0.5), Enabled: true,
			Doc: "memcg stats flush: FLUSH_TIME 2 s, unbound workqueue, deferrable (mm/memcontrol.c)"},
		{Name: "psi_avgs", Scope: PerMachine, DelayedWork: true,
			Period: 2*time.Second + 4*time.Millisecond, Cost: sim.LN(3*us, 0.4), Enabled: true,
			Doc: "psi_avgs_work: PSI_FREQ 2 s + 1 jiffy (kernel/sched/psi.c)"},
		{Name: "writeback", Scope: PerNode, DelayedWork: true,
			Period: 5 * time.Second, Cost: sim.LN(15*us, 0.5), Enabled: true,
			Doc: "writeback flusher (wb_workfn kupdate): dirty_writeback_interval 5 s, one disk per node"},
		{Name: "dev_watchdog", Scope: PerNode, Period: 5 * time.Second, Round: true,
			Cost: sim.LN(2*us, 0.3), Enabled: true,
			Doc: "netdev TX watchdog: mod_timer(round_jiffies(jiffies + 5 s)), one NIC per node (net/sched/sch_generic.c)"},
		{Name: "jbd2", Scope: PerNode, Period: 5 * time.Second, Cost: sim.LN(8*us, 0.5), Enabled: true,
			Doc: "jbd2 commit timer: 5 s commit age, one journaled file system per node"},
		{Name: "neigh", Scope: PerMachine, DelayedWork: true, Period: 15 * time.Second,
			Cost: sim.LN(10*us, 0.5), Enabled: true,
			Doc: "neigh_periodic_work: ~15 s (net/core/neighbour.c)"},
		{Name: "tcp", Scope: PerNode, Period: 100 * time.Millisecond, RX: true, Delay: 40 * time.Millisecond,
			Cost: sim.LN(2*us, 0.5), Enabled: true,
			Doc: "TCP delayed-ACK timer of the node's management traffic: a packet every 100 ms on average arms it\n" +
				"40 ms ahead from the NIC's receive interrupt (include/net/tcp.h TCP_DELACK_MIN)"},
		{Name: "kthread", Scope: PerCPU, Period: 132 * time.Millisecond,
			Cost: sim.LN(1500*time.Nanosecond, 0.4), Enabled: true,
			Doc: "process_timeout of the kernel threads that sleep in schedule_timeout on a housekeeping CPU\n" +
				"(rcu_preempt's force-quiescent-state waits, kcompactd's 500 ms wait): a global timer on every\n" +
				"housekeeping CPU, 7.6 arms/s per CPU (the median of the isolcpus recordings, mix_test.go)"},
		{Name: "nohz_timers", Scope: PerNohzFull, Period: 5 * time.Second,
			Cost: sim.LN(1500*time.Nanosecond, 0.4), Enabled: true,
			Doc: "the global timers a nohz_full CPU still arms: kcompactd's process_timeout, RCU's deferred\n" +
				"nocb wake-up (do_nocb_deferred_wakeup_timer); 0.2 arms/s per nohz_full CPU (the median of the\n" +
				"nohz_full recordings, mix_test.go), pulled by the housekeeping CPUs while the tick is stopped"},
		{Name: "clocksource_watchdog", Scope: Hop, Pinned: true, Period: 500 * time.Millisecond,
			Cost: sim.LN(4*time.Microsecond, 0.3), Enabled: false,
			Doc: "clocksource_watchdog: WATCHDOG_INTERVAL 0.5 s, re-armed with add_timer_on on the next online\n" +
				"CPU, so it visits every CPU, isolated and nohz_full ones included; only for a clocksource that\n" +
				"must be verified (one recording of seven shows it: off by default)"},
		{Name: "driver", Scope: PerNode, Period: time.Second, Round: true,
			Cost: sim.LN(5*us, 0.3), HeavyProb: 0.02, HeavyCost: sim.U(1150*us, 1220*us), Enabled: true,
			Doc: "a device driver's service timer (NIC/storage) whose callback now and then does ~1.2 ms of work:\n" +
				"the heavy driver work behind the 1203 µs oslat spike of seed 000 (ESTIMATE: 2% of runs)"},
	}
}

// Housekeeping is the background workload: the housekeeping timer mix,
// armed on the machine's housekeeping CPUs at boot and re-armed by each
// callback, as the kernel's periodic timers are.
type Housekeeping struct {
	Classes []Class

	m      *sim.Machine
	timers []*hkTimer
	// stats by handler, then (owner, class), in the order first counted.
	stats [][]*HKStat
}

// HKStat counts the expiries of one class's timers owned by Owner that
// Handler ran.
type HKStat struct {
	Handler, Owner int
	Class          string
	Count, Heavy   uint64
	MaxCost        int64
}

type hkTimer struct {
	c    *Class
	home int
	t    *sim.Timer
	// rng is the timer's own stream: its n-th expiry costs the same
	// whichever CPU runs it, so runs that differ only in policy see the
	// same work.
	rng *rand.Rand
	// The timer and its stream live here, where the callback reads them.
	tm  sim.Timer
	rv  rand.Rand
	pcg rand.PCG
	// stat is the counter of the timer's last counted expiry: the next
	// one is almost always run by the same CPU for the same owner, and a
	// map look-up per expiry is a good part of a large machine's run.
	stat *HKStat
}

// NewHousekeeping returns the default mix.
func NewHousekeeping() *Housekeeping { return &Housekeeping{Classes: DefaultMix()} }

// Register adds the mix's parameters (hk.CLASS.enabled, .period, .cost,
// .heavy_prob, .heavy_cost) to ps.
func (h *Housekeeping) Register(ps *sim.Params) {
	for i := range h.Classes {
		c := &h.Classes[i]
		place := "global"
		if c.Pinned {
			place = "pinned"
		}
		if c.Deferrable {
			place += ", deferrable"
		}
		if c.DelayedWork {
			place += ", delayed work"
		}
		doc := fmt.Sprintf("%s\n[%s, %s]", c.Doc, c.Scope, place)
		p := "hk." + c.Name + "."
		ps.Bool(p+"enabled", doc, &c.Enabled)
		ps.Duration(p+"period", "period of "+c.Name, (*int64)(&c.Period))
		ps.Dist(p+"cost", "callback cost of "+c.Name, &c.Cost)
		if c.RX {
			ps.Duration(p+"delay", "timeout "+c.Name+"'s timer is armed with by each interrupt", (*int64)(&c.Delay))
		}
		if c.HeavyProb > 0 || c.Name == "driver" {
			ps.Float(p+"heavy_prob", "probability that an expiry of "+c.Name+" does its heavy work", &c.HeavyProb)
			ps.Dist(p+"heavy_cost", "cost of "+c.Name+"'s heavy work", &c.HeavyCost)
		}
	}
}

// Name implements sim.Workload.
func (h *Housekeeping) Name() string { return "housekeeping" }

// Start arms every instance with a random phase.
func (h *Housekeeping) Start(m *sim.Machine) error {
	h.m = m
	h.stats = make([][]*HKStat, m.NumCPUs())
	hk := m.Housekeeping()
	if hk.Empty() {
		return fmt.Errorf("no housekeeping CPU")
	}
	first := hk.First()
	nodeFirst := make([]int, m.Nodes())
	for i := range nodeFirst {
		nodeFirst[i] = -1
	}
	for c := hk.First(); c >= 0; c = hk.Next(c) {
		if n := m.NodeOf(c); n < len(nodeFirst) && nodeFirst[n] < 0 {
			nodeFirst[n] = c
		}
	}
	for i := range h.Classes {
		cl := &h.Classes[i]
		if !cl.Enabled {
			continue
		}
		if cl.Period <= 0 {
			return fmt.Errorf("housekeeping class %s: period must be positive", cl.Name)
		}
		var homes []int
		switch cl.Scope {
		case PerCPU:
			homes = hk.CPUs()
		case PerNode:
			for _, c := range nodeFirst {
				if c < 0 {
					c = first
				}
				homes = append(homes, c)
			}
		case PerMachine:
			homes = []int{first}
		case PerNohzFull:
			homes = m.Config().NohzFull.CPUs()
		case Hop:
			homes = []int{0}
		}
		for _, home := range homes {
			ht := &hkTimer{c: cl, home: home}
			ht.pcg = *m.PCG(fmt.Sprintf("hk/%s/%d", cl.Name, home))
			ht.rv = *rand.New(&ht.pcg)
			ht.rng = &ht.rv
			flags := uint32(0)
			if cl.Pinned || (cl.DelayedWork && h.pinDelayedWork()) {
				flags |= cpu.Pinned
			}
			if cl.Deferrable {
				flags |= cpu.Deferrable
			}
			ht.t = &ht.tm
			m.InitTimer(ht.t, cl.Name, flags, h.fire)
			ht.t.Data = ht
			h.timers = append(h.timers, ht)
			if cl.RX {
				h.nextRX(ht, m.Now())
				continue
			}
			// A random first expiry within one period.
			ticks := max(uint64(ht.rng.Int64N(int64(cl.Period)))/uint64(m.TickNs()), 1)
			h.arm(nil, ht, m.Jiffies()+ticks)
		}
	}
	return nil
}

// nextRX schedules the next device interrupt of an RX class after t.
func (h *Housekeeping) nextRX(ht *hkTimer, t int64) {
	p := int64(ht.c.Period)
	at := t + p/2 + ht.rng.Int64N(p+1)
	h.m.DeviceIRQ(ht.home, at, func(x *sim.Exec) {
		x.Mod(ht.t, x.Jiffies()+max(uint64(int64(ht.c.Delay)/h.m.TickNs()), 1))
		h.nextRX(ht, at)
	})
}

// pinDelayedWork is housekeeping_enabled(HK_TYPE_TIMER): with nohz_full in
// use, delayed work timers are queued with add_timer_on on a housekeeping
// CPU instead of add_timer_global.
func (h *Housekeeping) pinDelayedWork() bool { return !h.m.Config().NohzFull.Empty() }

func (h *Housekeeping) arm(x *sim.Exec, ht *hkTimer, expires uint64) {
	cl := ht.c
	if cl.Round {
		expires = RoundJiffies(expires, ht.home, h.m.HZ(), h.jiffies(x))
	}
	pinned := cl.Pinned || (cl.DelayedWork && h.pinDelayedWork())
	switch {
	case x != nil:
		// Re-armed from its own callback, on whichever CPU expired it:
		// a running timer stays on its base (__mod_timer), pinned or not.
		x.Mod(ht.t, expires)
	case pinned:
		h.m.AddOn(ht.t, ht.home, expires)
	default:
		h.m.Mod(ht.home, ht.t, expires)
	}
}

// nextOnline is cpumask_next_wrap over the online CPUs.
func (h *Housekeeping) nextOnline(cpu int) int {
	n := h.m.NumCPUs()
	for i := 1; i <= n; i++ {
		if c := (cpu + i) % n; h.m.Online(c) {
			return c
		}
	}
	return cpu
}

func (h *Housekeeping) jiffies(x *sim.Exec) uint64 {
	if x != nil {
		return x.Jiffies()
	}
	return h.m.Jiffies()
}

// fire is every class's callback: spend the cost, count, re-arm.
func (h *Housekeeping) fire(x *sim.Exec, t *sim.Timer) {
	ht := t.Data.(*hkTimer)
	cl := ht.c
	cost := cl.Cost.Sample(ht.rng) + int64(cl.CostPerCPU)*int64(h.m.NumCPUs())
	heavy := cl.HeavyProb > 0 && ht.rng.Float64() < cl.HeavyProb
	if heavy {
		cost = cl.HeavyCost.Sample(ht.rng)
	}
	start := x.Now
	x.Spend(cost)
	if start >= h.m.MeasureStart() && start < h.m.MeasureEnd() {
		s := ht.stat
		if s == nil || s.Handler != x.CPU || s.Owner != t.CPU() {
			s = h.stat(x.CPU, t.CPU(), cl.Name)
			ht.stat = s
		}
		s.Count++
		if heavy {
			s.Heavy++
		}
		s.MaxCost = max(s.MaxCost, cost)
	}
	if cl.RX {
		return
	}
	period := uint64(int64(cl.Period) / h.m.TickNs())
	if cl.Scope == Hop {
		// clocksource_watchdog: add_timer_on the next online CPU.
		ht.home = h.nextOnline(x.CPU)
		x.AddOn(ht.t, ht.home, x.Jiffies()+max(period, 1))
		return
	}
	h.arm(x, ht, x.Jiffies()+max(period, 1))
}

// stat returns the counter of (handler, owner, class), new if need be.
func (h *Housekeeping) stat(handler, owner int, class string) *HKStat {
	for _, s := range h.stats[handler] {
		if s.Owner == owner && s.Class == class {
			return s
		}
	}
	s := &HKStat{Handler: handler, Owner: owner, Class: class}
	h.stats[handler] = append(h.stats[handler], s)
	return s
}

// RoundJiffies is round_jiffies: round j to a whole second (HZ ticks),
// down if less than a quarter second past it, else up, with a per-CPU skew
// of 3 ticks per CPU so that all CPUs do not fire at once; a result
// already in the past (relative to now) gives j back.
func RoundJiffies(j uint64, cpu, hz int, now uint64) uint64 {
	orig := j
	skew := uint64(cpu * 3)
	j += skew
	rem := j % uint64(hz)
	if rem < uint64(hz/4) {
		j -= rem
	} else {
		j = j - rem + uint64(hz)
	}
	j -= skew
	if int64(j-now) <= 0 {
		return orig
	}
	return j
}

// Stats returns the per-(handler, owner, class) expiry counts within the
// measurement window, sorted by handler, owner and class.
func (h *Housekeeping) Stats() []HKStat {
	var out []HKStat
	for _, ss := range h.stats {
		for _, s := range ss {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Handler != b.Handler {
			return a.Handler < b.Handler
		}
		if a.Owner != b.Owner {
			return a.Owner < b.Owner
		}
		return a.Class < b.Class
	})
	return out
}

// Result implements sim.Workload.
func (h *Housekeeping) Result(*sim.Machine) sim.WorkloadResult { return hkResult{h.Stats()} }

type hkResult struct{ stats []HKStat }

func (hkResult) WriteText(io.Writer) error   { return nil }
func (hkResult) Latency() map[int][3]float64 { return nil }

// JSON lists the expiries by class, with how many ran on a CPU other than
// the timer's.
func (r hkResult) JSON() any {
	type cls struct {
		Class   string `json:"class"`
		Expired uint64 `json:"expired"`
		Remote  uint64 `json:"remote"`
		Heavy   uint64 `json:"heavy"`
	}
	var out []cls
	idx := map[string]int{}
	for _, s := range r.stats {
		i, ok := idx[s.Class]
		if !ok {
			i = len(out)
			idx[s.Class] = i
			out = append(out, cls{Class: s.Class})
		}
		out[i].Expired += s.Count
		out[i].Heavy += s.Heavy
		if s.Handler != s.Owner {
			out[i].Remote += s.Count
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return map[string]any{"classes": out}
}
