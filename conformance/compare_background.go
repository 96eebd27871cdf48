package conformance

import (
	"fmt"

	"github.com/tmigr/tmigr/cpu"
	"github.com/tmigr/tmigr/cpumask"
	"github.com/tmigr/tmigr/ftrace"
	"github.com/tmigr/tmigr/replay"
	"github.com/tmigr/tmigr/sim"
)

// recordedBackground is a simulator workload that gives the simulated
// machine the recording's background, what the guest did besides its load:
// its wheel timers, and when its CPUs without a load were active. It
// replays both open loop: the kernel's re-arms happen when the kernel made
// them, whoever expired the timer in the simulation.
//
// Timers: each is armed on the same CPU, with the same flags and timeout,
// at the same moment of the recording's span (shifted to begin after the
// warm-up).
//
//	timer_start (cpu=B flags=F timeout=T)  ->  on CPU B: mod_timer (F global)
//	                                           or add_timer_on (F pinned), T ahead
//	timer_cancel not followed by the        ->  del_timer on the CPU that ran it
//	timer's expiry
//	timer_expire_entry of a timer the       ->  armed on its base 50 ticks before,
//	recording never started                    to expire then
//
// Each arming runs as an interrupt on the timer's base CPU: the guest ran
// code there to arm it (a task, the timer's own callback), and a CPU must
// be awake to queue a timer on its own base; an idle CPU then goes idle
// again with its new next event, as the guest's did. The base of a timer
// armed before the recording is the CPU a remote round expired it for, or
// else the CPU that expired it; its flags are those of the timer's later
// starts if the recording has any, else global if a round pulled it and
// pinned if not (a timer of unknown placement cannot be pulled in the
// simulation unless the kernel showed it can be).
//
// Activity: a CPU without a load is active in the hierarchy from its
// tmigr_cpu_active line to its tmigr_cpu_idle line (from the recording's
// start if its first line is tmigr_cpu_idle). The guest's CPUs are not as
// idle as the simulator's: kernel threads, the guest program's runtime
// threads and the init script run on them, and an idle CPU may keep its
// tick (and so stay active) for reasons the simulator does not model (RCU
// needing the CPU, for one). An active CPU is the migrator of its group,
// which decides who pulls whom, so the simulation runs a task on each such
// CPU over each of its active spans. A CPU whose transitions the recording
// does not show is left to the simulator.
type recordedBackground struct {
	events []ftrace.Event
	t0, t1 int64        // the recording's first and last timestamps
	at0    int64        // the simulated time t0 maps to
	loaded cpumask.Mask // CPUs with a load: the simulator runs their activity

	m      *sim.Machine
	timers map[uint64]*sim.Timer
	names  map[uint64]string // the timers' functions
}

// earlyTicks is how long before its expiry a timer armed before the
// recording is armed in the simulation: within the wheel's first level, so
// that it expires on the jiffy it did in the kernel.
const earlyTicks = 50

func newRecordedBackground(events []ftrace.Event, t0, t1, at0 int64, loaded cpumask.Mask) *recordedBackground {
	return &recordedBackground{events: events, t0: t0, t1: t1, at0: at0, loaded: loaded}
}

// Name implements sim.Workload.
func (r *recordedBackground) Name() string { return "recorded-background" }

// Result implements sim.Workload.
func (r *recordedBackground) Result(*sim.Machine) sim.WorkloadResult { return nil }

func (r *recordedBackground) at(ts int64) int64 { return r.at0 + ts - r.t0 }

// Start implements sim.Workload: it schedules every arming and deletion,
// and the activity of the CPUs without a load.
func (r *recordedBackground) Start(m *sim.Machine) error {
	if err := r.startActivity(m); err != nil {
		return err
	}
	r.m = m
	r.timers = map[uint64]*sim.Timer{}
	r.names = map[uint64]string{}
	n := m.NumCPUs()
	// What the recording tells of each timer: the flags of its first
	// start, whether a start precedes its first expiry, and for every
	// cancel whether the timer's next line is its expiry (the kernel
	// traces the removal of an expiring timer as a cancel too).
	flags := map[uint64]ftrace.TimerFlags{}
	started := map[uint64]bool{}
	expiryCancel := map[int]bool{} // event index of a cancel that is an expiry's
	lastCancel := map[uint64]int{}
	remote := replay.NewRemoteExpiry(r.events) // whose timers each expiry runs
	type early struct {
		ts         int64
		base       int
		fromRemote bool
	}
	var before []struct {
		ptr uint64
		early
	}
	for i := range r.events {
		ev := &r.events[i]
		if ev.CPU < 0 || ev.CPU >= n {
			continue
		}
		owner, fromRemote := remote.Observe(ev)
		switch d := ev.Data.(type) {
		case ftrace.TimerStart:
			if _, ok := flags[d.Timer]; !ok {
				flags[d.Timer] = d.Flags
			}
			if _, ok := r.names[d.Timer]; !ok {
				r.names[d.Timer] = d.Function
			}
			started[d.Timer] = true
			delete(lastCancel, d.Timer)
		case ftrace.TimerCancel:
			lastCancel[d.Timer] = i
		case ftrace.TimerExpireEntry:
			if _, ok := r.names[d.Timer]; !ok {
				r.names[d.Timer] = d.Function
			}
			if j, ok := lastCancel[d.Timer]; ok {
				expiryCancel[j] = true
				delete(lastCancel, d.Timer)
			}
			if !started[d.Timer] {
				started[d.Timer] = true // armed once, below
				if owner < 0 || owner >= n {
					owner, fromRemote = ev.CPU, false
				}
				before = append(before, struct {
					ptr uint64
					early
				}{d.Timer, early{ev.TS, owner, fromRemote}})
			}
		}
	}

	tick := m.TickNs()
	for _, b := range before {
		f, known := flags[b.ptr]
		if !known && !b.fromRemote {
			f = ftrace.TimerPinned
		}
		tm := r.timer(b.ptr, f)
		exp := r.at(b.ts)
		armAt := max(exp-earlyTicks*tick, 0)
		base, pinned := b.base, f&ftrace.TimerPinned != 0
		m.DeviceIRQ(base, armAt, func(x *sim.Exec) {
			ahead := uint64(max((exp-x.Now+tick-1)/tick, 1))
			if pinned {
				x.AddOn(tm, base, x.Jiffies()+ahead)
			} else {
				x.Mod(tm, x.Jiffies()+ahead)
			}
		})
	}
	for i := range r.events {
		ev := &r.events[i]
		if ev.CPU < 0 || ev.CPU >= n {
			continue
		}
		switch d := ev.Data.(type) {
		case ftrace.TimerStart:
			if d.CPU < 0 || d.CPU >= n {
				continue
			}
			tm := r.timer(d.Timer, flags[d.Timer])
			base, pinned, timeout := d.CPU, d.Flags&ftrace.TimerPinned != 0, uint64(max(d.Timeout, 0))
			m.DeviceIRQ(base, r.at(ev.TS), func(x *sim.Exec) {
				if pinned {
					x.AddOn(tm, base, x.Jiffies()+timeout)
				} else {
					x.Mod(tm, x.Jiffies()+timeout)
				}
			})
		case ftrace.TimerCancel:
			if expiryCancel[i] {
				continue
			}
			tm := r.timers[d.Timer]
			if tm == nil {
				continue // never armed here: nothing to delete
			}
			m.DeviceIRQ(ev.CPU, r.at(ev.TS), func(x *sim.Exec) { x.Del(tm) })
		}
	}
	return nil
}

// timer returns the simulated timer of a recorded one, set up with its
// flags the first time.
func (r *recordedBackground) timer(ptr uint64, f ftrace.TimerFlags) *sim.Timer {
	if tm := r.timers[ptr]; tm != nil {
		return tm
	}
	var flags uint32
	if f&ftrace.TimerPinned != 0 {
		flags |= cpu.Pinned
	}
	if f&ftrace.TimerDeferrable != 0 {
		flags |= cpu.Deferrable
	}
	tm := r.m.NewTimer(r.names[ptr], flags, func(x *sim.Exec, _ *sim.Timer) { x.Spend(1000) })
	r.timers[ptr] = tm
	return tm
}

// span is a stretch of time, in the recording's clock.
type span struct{ from, to int64 }

// activeSpans returns, for each CPU, when the recording shows it active in
// the hierarchy.
func (r *recordedBackground) activeSpans(n int) [][]span {
	const (
		unknown = iota
		active
		idle
	)
	state := make([]int, n)
	since := make([]int64, n)
	spans := make([][]span, n)
	for i := range r.events {
		ev := &r.events[i]
		switch d := ev.Data.(type) {
		case ftrace.TmigrCPUActive:
			if c := d.CPU; c >= 0 && c < n && state[c] != active {
				state[c], since[c] = active, ev.TS
			}
		case ftrace.TmigrCPUIdle:
			c := d.CPU
			if c < 0 || c >= n {
				continue
			}
			switch state[c] {
			case unknown:
				spans[c] = append(spans[c], span{r.t0, ev.TS})
			case active:
				spans[c] = append(spans[c], span{since[c], ev.TS})
			}
			state[c] = idle
		}
	}
	for c := range state {
		if state[c] == active {
			spans[c] = append(spans[c], span{since[c], r.t1})
		}
	}
	return spans
}

// startActivity runs a task on every CPU without a load over each of its
// active spans.
func (r *recordedBackground) startActivity(m *sim.Machine) error {
	for c, spans := range r.activeSpans(m.NumCPUs()) {
		if r.loaded.Test(c) || len(spans) == 0 {
			continue
		}
		k := 0 // the span the task runs for
		ends := make([]int64, len(spans))
		for i, s := range spans {
			ends[i] = r.at(s.to)
		}
		task, err := m.NewTask(sim.TaskSpec{Name: fmt.Sprintf("background-%d", c), CPU: c, Pinned: true,
			Behavior: sim.BehaviorFunc(func(x *sim.Exec, _ *sim.Task) sim.Step {
				for k < len(ends) && ends[k] <= x.Now {
					k++
				}
				if k == len(ends) {
					return sim.Step{Run: 1000, Then: sim.Park}
				}
				return sim.Step{Run: ends[k] - x.Now, Then: sim.Park}
			})})
		if err != nil {
			return err
		}
		for _, s := range spans {
			m.At(r.at(s.from), func() { m.Wake(task) })
		}
	}
	return nil
}
